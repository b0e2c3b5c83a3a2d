// SPDX-License-Identifier: GPL-2.0-only
//! Safe wrappers for compressed reads (`zglue.c`): readahead batches, the locked page-cache
//! folios being filled, referenced folios of compressed data, decompression queues, the per-CPU
//! worker pool, per-mount latency statistics, and the kernel's LZ4.

use super::{
    ffi,
    RealInode,
    SuperBlock, //
};
use core::{
    marker::PhantomData,
    sync::atomic::{
        AtomicBool,
        Ordering, //
    },
};
use kernel::{
    bindings,
    ffi::{
        c_int,
        c_void, //
    },
    page::PAGE_SIZE,
    prelude::*, //
};

/// A folio of one of our compressed inodes (or of a shared inode, `inode_share`), locked for
/// reading; dropping it unlocks it, not uptodate, so no error path can leave a folio locked.
///
/// # Invariants
///
/// `ptr` is a locked, not yet uptodate page-cache folio of a live, filled inode of ours or of
/// a shared inode, and this value is the one that will unlock it.
pub(crate) struct OutFolio {
    ptr: *mut bindings::folio,
}

// SAFETY: a locked folio may be filled and unlocked from any thread (bio completions do).
unsafe impl Send for OutFolio {}

impl OutFolio {
    /// # Safety
    ///
    /// `ptr` is a locked, not uptodate folio of one of our filled inodes or of a shared inode
    /// (`inode_share`), whose unlocking passes to the returned value.
    pub(crate) unsafe fn from_raw(ptr: *mut bindings::folio) -> Self {
        // INVARIANT: by the caller's contract.
        OutFolio { ptr }
    }

    /// The inode to read the folio with: its page cache's inode, or a real one for a shared
    /// inode (`inode_share`); `None` if no real inode is left.
    pub(crate) fn real_inode(&self) -> Option<RealInode> {
        // SAFETY: the folio is locked in a page cache with our aops, which keeps its host.
        unsafe { RealInode::of(ffi::erofs_rs_glue_folio_inode(self.ptr)) }
    }

    /// The page cache holding the folio, referenced.
    pub(crate) fn cache(&self) -> Option<PageCache> {
        // SAFETY: a locked page-cache folio has a mapping and a live host.
        unsafe { PageCache::grab(ffi::erofs_rs_glue_folio_inode(self.ptr)) }
    }

    /// Byte position of the folio in its file.
    pub(crate) fn pos(&self) -> u64 {
        // SAFETY: `ptr` is live (type invariant).
        unsafe { ffi::erofs_rs_glue_folio_pos(self.ptr) }
    }

    /// Size in bytes.
    pub(crate) fn size(&self) -> usize {
        // SAFETY: `ptr` is live (type invariant).
        unsafe { ffi::erofs_rs_glue_folio_size(self.ptr) }
    }

    /// Writes `src` at byte `off` of the folio, page by page.
    pub(crate) fn write(&mut self, off: usize, src: &[u8]) -> Result {
        // SAFETY: the folio is live (type invariant).
        unsafe {
            for_each_piece(self.ptr, self.size(), off, src.len(), |done, p, n| {
                // SAFETY: `p` maps `n` bytes of a folio that only its locker (us) writes.
                let dst = core::slice::from_raw_parts_mut(p, n);
                dst.copy_from_slice(&src[done..done + n]);
            })
        }
    }

    /// Zeroes `off..off + len` of the folio.
    pub(crate) fn zero(&mut self, off: usize, len: usize) -> Result {
        const ZEROES: [u8; 256] = [0u8; 256];
        let mut done = 0usize;
        while done < len {
            let n = (len - done).min(ZEROES.len());
            self.write(off + done, &ZEROES[..n])?;
            done += n;
        }
        Ok(())
    }

    /// Marks the folio uptodate (or not) and unlocks it.
    pub(crate) fn end_read(self, success: bool) {
        let p = self.ptr;
        core::mem::forget(self);
        // SAFETY: the folio is locked and we are its unlocker (type invariant); `self` is gone.
        unsafe { ffi::erofs_rs_glue_folio_end_read(p, success) };
    }
}

impl Drop for OutFolio {
    fn drop(&mut self) {
        // SAFETY: as in `end_read`; drop runs at most once and only when `end_read` did not.
        unsafe { ffi::erofs_rs_glue_folio_end_read(self.ptr, false) };
    }
}

/// The page cache a read fills: that of one of our inodes, or of a shared inode of
/// `inode_share` (whose metadata is read through a [`RealInode`]).
///
/// # Invariants
///
/// `host` is the host inode of a page cache with our address space operations, and this
/// value owns a reference to it.
pub(crate) struct PageCache {
    host: *mut bindings::inode,
}

impl Drop for PageCache {
    fn drop(&mut self) {
        // SAFETY: we own this reference (type invariant), dropped once.
        unsafe { ffi::erofs_rs_glue_iput(self.host) };
    }
}

impl PageCache {
    /// References the page cache of `host`; `None` if the inode is being freed.
    ///
    /// # Safety
    ///
    /// `host` is live: the host of a page cache with our aops, during one of them.
    unsafe fn grab(host: *mut bindings::inode) -> Option<Self> {
        // SAFETY: `host` is live (contract).
        let host = unsafe { ffi::erofs_rs_glue_igrab(host) };
        // INVARIANT: `igrab` gave us a reference.
        (!host.is_null()).then_some(PageCache { host })
    }

    /// Locks page `index` of this page cache for filling on the side, if it is absent or not
    /// uptodate and nobody holds it (`erofs_grab_folio_nowait`); never blocks.
    pub(crate) fn grab_folio_nowait(&self, index: u64) -> Option<OutFolio> {
        // SAFETY: `host` is live (type invariant).
        let f = unsafe { ffi::erofs_rs_glue_grab_folio_nowait(self.host, index) };
        // SAFETY: a locked, not uptodate, order-0 folio of our inode, that we must unlock.
        (!f.is_null()).then(|| unsafe { OutFolio::from_raw(f) })
    }
}

/// Calls `f(done, p, n)` for each page-sized piece of bytes `off..off + len` of a folio of
/// `size` bytes: `p` maps the `n` bytes at `off + done`, through `kmap_local`, for the call.
///
/// # Safety
///
/// `folio` is live for the call; `f` may dereference `p` only as the caller's rights to the
/// folio allow (reads of uptodate data, or writes by the folio's locker).
unsafe fn for_each_piece(
    folio: *mut bindings::folio,
    size: usize,
    off: usize,
    len: usize,
    mut f: impl FnMut(usize, *mut u8, usize),
) -> Result {
    if off.checked_add(len).is_none_or(|end| end > size) {
        return Err(EINVAL);
    }
    let mut done = 0usize;
    while done < len {
        let cur = off + done;
        let in_page = cur % PAGE_SIZE;
        let n = (PAGE_SIZE - in_page).min(len - done);
        // SAFETY: `cur - in_page` is a page boundary inside the live folio.
        let addr = unsafe { ffi::erofs_rs_glue_kmap_local_folio(folio, cur - in_page) };
        // SAFETY: `in_page < PAGE_SIZE`, inside the page `addr` maps.
        f(done, unsafe { addr.cast::<u8>().add(in_page) }, n);
        // SAFETY: unmaps the mapping made above, once.
        unsafe { ffi::erofs_rs_glue_kunmap(addr) };
        done += n;
    }
    Ok(())
}

/// A readahead batch (`struct readahead_control`), borrowed for one `readahead` call.
///
/// # Invariants
///
/// `ptr` is the live argument of our `readahead`, for a filled inode of ours.
pub(crate) struct Readahead<'a> {
    ptr: *mut bindings::readahead_control,
    _p: PhantomData<&'a ()>,
}

impl<'a> Readahead<'a> {
    /// # Safety
    ///
    /// `ptr` is the argument of `readahead` for one of our inodes, live for `'a`.
    pub(crate) unsafe fn from_raw(ptr: *mut bindings::readahead_control) -> Self {
        // INVARIANT: by the caller's contract.
        Readahead { ptr, _p: PhantomData }
    }

    /// The inode to read with: the page cache's, or a real one for a shared inode.
    pub(crate) fn real_inode(&self) -> Option<RealInode> {
        // SAFETY: the host of a readahead is live during it (type invariant).
        unsafe { RealInode::of(ffi::erofs_rs_glue_readahead_inode(self.ptr)) }
    }

    /// The page cache being read ahead, referenced.
    pub(crate) fn cache(&self) -> Option<PageCache> {
        // SAFETY: the host of a readahead is live during it (type invariant).
        unsafe { PageCache::grab(ffi::erofs_rs_glue_readahead_inode(self.ptr)) }
    }

    /// The byte range of the folios still to be taken.
    pub(crate) fn range(&self) -> (u64, u64) {
        // SAFETY: `ptr` is live (type invariant).
        unsafe { (ffi::erofs_rs_glue_readahead_pos(self.ptr), ffi::erofs_rs_glue_readahead_length(self.ptr)) }
    }

    /// Asks for more folios around the batch (`readahead_expand`); the VFS may add fewer.
    pub(crate) fn expand(&mut self, start: u64, len: u64) {
        // SAFETY: `ptr` is live and no folio has been taken yet... or some have: readahead_expand
        // copes with both.
        unsafe { ffi::erofs_rs_glue_readahead_expand(self.ptr, start, len) };
    }

    /// Takes the next folio, locked.
    pub(crate) fn next_folio(&mut self) -> Option<OutFolio> {
        // SAFETY: `ptr` is live.
        let f = unsafe { ffi::erofs_rs_glue_readahead_folio(self.ptr) };
        if f.is_null() {
            return None;
        }
        // SAFETY: `readahead_folio` returns folios locked, not uptodate, that the filesystem must
        // unlock; the page cache keeps them while they are locked.
        Some(unsafe { OutFolio::from_raw(f) })
    }
}

/// A referenced folio of the primary device's page cache holding compressed data.
///
/// # Invariants
///
/// `ptr` holds a reference that this value owns.
pub(crate) struct CFolio {
    ptr: *mut bindings::folio,
}

// SAFETY: a folio reference can be used and dropped from any thread.
unsafe impl Send for CFolio {}

impl CFolio {
    /// Byte position of the folio in the device's mapping.
    pub(crate) fn pos(&self) -> u64 {
        // SAFETY: we hold a reference (type invariant).
        unsafe { ffi::erofs_rs_glue_folio_pos(self.ptr) }
    }

    /// Size in bytes.
    pub(crate) fn size(&self) -> usize {
        // SAFETY: we hold a reference (type invariant).
        unsafe { ffi::erofs_rs_glue_folio_size(self.ptr) }
    }

    /// Calls `f` with bytes `off..off + len` of the folio, which must lie in one page; only for
    /// uptodate folios, as [`CFolio::read`].
    pub(crate) fn with_bytes<R>(&self, off: usize, len: usize, f: impl FnOnce(&[u8]) -> R) -> Result<R> {
        // SAFETY: we hold a reference.
        if !unsafe { ffi::erofs_rs_glue_folio_test_uptodate(self.ptr) } {
            return Err(EIO);
        }
        let in_page = off % PAGE_SIZE;
        if off.checked_add(len).is_none_or(|e| e > self.size()) || in_page + len > PAGE_SIZE {
            return Err(EINVAL);
        }
        // SAFETY: `off - in_page` is a page boundary inside the referenced folio.
        let addr = unsafe { ffi::erofs_rs_glue_kmap_local_folio(self.ptr, off - in_page) };
        // SAFETY: as in `read`: an uptodate page nobody writes; `in_page + len <= PAGE_SIZE`.
        let bytes = unsafe { core::slice::from_raw_parts(addr.cast::<u8>().add(in_page), len) };
        let r = f(bytes);
        // SAFETY: unmaps the mapping made above, once.
        unsafe { ffi::erofs_rs_glue_kunmap(addr) };
        Ok(r)
    }

    /// Copies `dst.len()` bytes from byte `off` of the folio. Only for folios whose read has
    /// completed: uptodate ones (checked here), after their queue ran.
    pub(crate) fn read(&self, off: usize, dst: &mut [u8]) -> Result {
        // SAFETY: we hold a reference.
        if !unsafe { ffi::erofs_rs_glue_folio_test_uptodate(self.ptr) } {
            return Err(EIO);
        }
        let len = dst.len();
        // SAFETY: we hold a reference (type invariant).
        unsafe {
            for_each_piece(self.ptr, self.size(), off, len, |done, p, n| {
                // SAFETY: `p` maps `n` bytes of an uptodate page of a read-only device mapping:
                // nobody writes it while we hold a reference.
                let src = core::slice::from_raw_parts(p.cast_const(), n);
                dst[done..done + n].copy_from_slice(src);
            })
        }
    }
}

impl Drop for CFolio {
    fn drop(&mut self) {
        // SAFETY: we own one reference (type invariant), released once.
        unsafe { ffi::erofs_rs_glue_folio_put(self.ptr) };
    }
}

/// The work a decompression queue runs once its I/O is done.
pub(crate) trait ZWork: Send + Sized {
    /// Runs with the first I/O error (0 if none), in a worker or in the submitter.
    fn run(self: KBox<Self>, err: i32);
}

/// A decompression queue being filled with bios (`struct z_erofs_decompressqueue`). Dropping
/// it uncommitted still submits and finishes its I/O, with no work to run.
///
/// # Invariants
///
/// `ptr` is a queue from `erofs_rs_glue_zq_alloc` that has not been committed, of a
/// block-device superblock whose primary device's page cache is `mapping`.
pub(crate) struct ZQueue<'a> {
    ptr: *mut ffi::ZqRaw,
    mapping: *mut bindings::address_space,
    /// Whether the queue runs in the committer (kept here: once committed, an async queue may
    /// already be freed by the worker its last bio woke).
    sync: bool,
    _p: PhantomData<&'a ()>,
}

/// How a committed queue goes on.
pub(crate) enum Committed {
    /// The work ran in the caller.
    Ran,
    /// A worker runs it when the last bio completes.
    Queued,
}

impl<'a> ZQueue<'a> {
    /// A new queue on the primary device of block-device superblock `sb`. A `sync` queue runs in
    /// the caller of [`ZQueue::commit`]; else in a worker, the per-CPU kthreads if `pcpu`.
    pub(crate) fn new(sb: SuperBlock<'a>, stats: &ZStats, sync: bool, pcpu: bool) -> Result<Self> {
        if sb.state().dev.is_file() {
            return Err(EINVAL);
        }
        // SAFETY: `sb` is a live block-device superblock; `stats` lives as long as it.
        let ptr = unsafe { ffi::erofs_rs_glue_zq_alloc(sb.ptr, stats.ptr, sync, pcpu) };
        if ptr.is_null() {
            return Err(ENOMEM);
        }
        // INVARIANT: a fresh queue of `sb`, whose device is a block device (checked above).
        Ok(ZQueue { ptr, mapping: sb.state().dev.mapping, sync, _p: PhantomData })
    }

    /// Gets the device page-cache folio holding page `index` of the device (the image offset
    /// included), referenced; when it is not uptodate, it is queued for reading too.
    pub(crate) fn grab(&mut self, index: u64) -> Result<CFolio> {
        let mut need_io = false;
        // SAFETY: `ptr` is an uncommitted queue; `mapping` is its device's page cache.
        let f = unsafe { ffi::erofs_rs_glue_zq_grab(self.ptr, self.mapping, index, &mut need_io) };
        let f = kernel::error::from_err_ptr(f)?;
        if need_io {
            // SAFETY: `f` is the locked, not uptodate folio `grab` returned for reading; the
            // bio unlocks it when it completes, and our reference keeps it meanwhile.
            unsafe { ffi::erofs_rs_glue_zq_add(self.ptr, f) };
        }
        // INVARIANT: we own the reference `grab` returned.
        Ok(CFolio { ptr: f })
    }

    /// Ends submission and hands `work` over: it runs now, here, if no I/O is pending or the
    /// queue is sync (after waiting for it); else in a worker after the last bio.
    pub(crate) fn commit<W: ZWork>(self, work: KBox<W>) -> Committed {
        let raw = KBox::into_raw(work);
        // SAFETY: `raw` is a leaked box that `zq_run` will take back exactly once, when the
        // queue runs.
        unsafe { ffi::erofs_rs_glue_zq_set_req(self.ptr, raw.cast(), Some(zq_run::<W>)) };
        let (ptr, sync) = (self.ptr, self.sync);
        core::mem::forget(self);
        // SAFETY: `ptr` is an uncommitted queue, committed once here (`self` is gone), and
        // `sync` is how it was allocated.
        unsafe { finish(ptr, sync) }
    }
}

impl Drop for ZQueue<'_> {
    fn drop(&mut self) {
        // SAFETY: an uncommitted queue with no work: its I/O completes and it is freed.
        unsafe { finish(self.ptr, self.sync) };
    }
}

/// Commits queue `ptr`, and runs it here if its I/O is done or it is sync.
///
/// # Safety
///
/// `ptr` is an uncommitted queue, allocated sync if and only if `sync`; it must not be used
/// afterwards.
unsafe fn finish(ptr: *mut ffi::ZqRaw, sync: bool) -> Committed {
    // SAFETY: by the contract, `ptr` is uncommitted; this is its commit.
    let idle = unsafe { ffi::erofs_rs_glue_zq_commit(ptr) };
    if !idle && !sync {
        // The last bio hands it to a worker, which may already be running and freeing it:
        // `ptr` must not be touched again (nor was it read above after the commit).
        return Committed::Queued;
    }
    if !idle {
        // SAFETY: a sync queue with I/O pending: its last bio completes `done`, not more.
        unsafe { ffi::erofs_rs_glue_zq_wait(ptr) };
    }
    // SAFETY: no I/O is pending and no worker has it: it runs here and is freed.
    unsafe { ffi::erofs_rs_glue_zq_run_inline(ptr) };
    Committed::Ran
}

/// Runs a queue's work: called once per queue by `zglue.c`.
///
/// # Safety
///
/// `req` is the box leaked by [`ZQueue::commit`] for a `W`, passed once.
unsafe extern "C" fn zq_run<W: ZWork>(req: *mut c_void, err: c_int) {
    // SAFETY: by this function's contract.
    let work = unsafe { KBox::from_raw(req.cast::<W>()) };
    work.run(err);
}

/// Per-mount decompression statistics, in debugfs (`erofs_rs/<disk>/decompress_latency`).
///
/// # Invariants
///
/// `ptr` is null or owned by this value.
pub(crate) struct ZStats {
    ptr: *mut ffi::ZStatsRaw,
}

// SAFETY: the statistics are atomics updated from any thread.
unsafe impl Send for ZStats {}
// SAFETY: as above.
unsafe impl Sync for ZStats {}

impl ZStats {
    /// Creates the statistics of `sb` (none if memory is short: they are optional).
    pub(crate) fn new(sb: SuperBlock<'_>) -> Self {
        // SAFETY: `sb` is live.
        ZStats { ptr: unsafe { ffi::erofs_rs_glue_zstats_create(sb.ptr) } }
    }

    /// Whether readahead of at most 12 KiB decompresses in the reader: the mount's
    /// `sync_decompress` (debugfs) is 1, which it becomes on its own once a bio completes in
    /// atomic context, as in the C driver.
    pub(crate) fn sync_small_readahead(&self) -> bool {
        // SAFETY: `ptr` is null or ours (type invariant); the callee checks for null.
        unsafe { ffi::erofs_rs_glue_zstats_sync_small(self.ptr) }
    }
}

impl Drop for ZStats {
    fn drop(&mut self) {
        // SAFETY: we own `ptr` (type invariant); no queue of this superblock is left.
        unsafe { ffi::erofs_rs_glue_zstats_destroy(self.ptr) };
    }
}

/// A superblock's claim on the per-CPU kthread workers (`decomp_pcpu_kthreads`), which start
/// with their first claim and stop with their last; dropping it gives it up.
pub(crate) struct PcpuClaim {
    held: AtomicBool,
}

impl PcpuClaim {
    /// No claim yet.
    pub(crate) fn new() -> Self {
        PcpuClaim { held: AtomicBool::new(false) }
    }

    /// Makes or gives up the claim.
    pub(crate) fn set(&self, on: bool) -> Result {
        // ORDERING: the flag only pairs gets with puts; the pool has its own lock.
        if on {
            if !self.held.swap(true, Ordering::AcqRel) {
                // SAFETY: no preconditions; balanced by the put below.
                let ret = unsafe { ffi::erofs_rs_glue_pcpu_get() };
                if ret < 0 {
                    self.held.store(false, Ordering::Release);
                    return Err(Error::from_errno(ret));
                }
            }
        } else if self.held.swap(false, Ordering::AcqRel) {
            // SAFETY: we made one get, which this balances.
            unsafe { ffi::erofs_rs_glue_pcpu_put() };
        }
        Ok(())
    }
}

impl Drop for PcpuClaim {
    fn drop(&mut self) {
        let _ = self.set(false);
    }
}

/// Decodes LZ4 `src` into all of `dst` with the kernel's decoder; `partial` lets the stream go
/// on past `dst` (`LZ4_decompress_safe_partial`). Returns the bytes produced (`dst.len()` on
/// success) or a negative value for a corrupt stream.
pub(crate) fn lz4_decompress(src: &[u8], dst: &mut [u8], partial: bool) -> i32 {
    let (Ok(srclen), Ok(dstlen)) = (i32::try_from(src.len()), i32::try_from(dst.len())) else {
        return -1;
    };
    // SAFETY: the decoder reads at most `srclen` bytes of `src` and writes at most `dstlen`
    // bytes to `dst`, both valid for those lengths.
    unsafe { ffi::erofs_rs_glue_lz4_decompress(src.as_ptr().cast(), dst.as_mut_ptr().cast(), srclen, dstlen, partial) }
}

/// Order-0 folios that decoders may write into when no page-cache folio of the read wants the
/// bytes, reused across the extents of a request.
///
/// # Invariants
///
/// Every pointer is an order-0 folio this value owns (one reference), used by nobody else.
pub(crate) struct BouncePool {
    folios: KVec<*mut bindings::folio>,
}

// SAFETY: the folios are private memory owned by the pool.
unsafe impl Send for BouncePool {}

impl BouncePool {
    /// An empty pool.
    pub(crate) fn new() -> Self {
        BouncePool { folios: KVec::new() }
    }

    /// Makes sure the pool holds at least `n` folios.
    fn reserve(&mut self, n: usize) -> Result {
        while self.folios.len() < n {
            // SAFETY: no preconditions.
            let f = unsafe { ffi::erofs_rs_glue_bounce_alloc() };
            if f.is_null() {
                return Err(ENOMEM);
            }
            // INVARIANT: a fresh folio, ours; freed below if the push fails.
            if let Err(e) = self.folios.push(f, GFP_KERNEL) {
                // SAFETY: we own the only reference.
                unsafe { ffi::erofs_rs_glue_folio_put(f) };
                return Err(e.into());
            }
        }
        Ok(())
    }
}

impl Drop for BouncePool {
    fn drop(&mut self) {
        for &f in self.folios.iter() {
            // SAFETY: we own one reference to each (type invariant).
            unsafe { ffi::erofs_rs_glue_folio_put(f) };
        }
    }
}

/// A virtually contiguous mapping of whole pages (`vm_map_ram`), unmapped on drop.
///
/// # Invariants
///
/// `addr` maps `count` pages that stay allocated, and are not written by anyone else, while
/// this value lives (the borrows of its constructors pin them); `writable` tells whether the
/// pages may be written through it.
pub(crate) struct PageMap<'a> {
    addr: *mut u8,
    count: usize,
    _p: PhantomData<&'a ()>,
}

impl<'a> PageMap<'a> {
    /// Maps output pages for a decoder: `pages[i]` is the folio of the read that wants page
    /// `i`, or `None` for a page nobody wants (a bounce folio from `pool` takes its place).
    /// Each folio must be order-0 and locked by this read (which makes us its only writer).
    pub(crate) fn output(pages: &[Option<&'a OutFolio>], pool: &'a mut BouncePool) -> Result<Self> {
        let bounces = pages.iter().filter(|p| p.is_none()).count();
        pool.reserve(bounces)?;
        let mut raw = KVec::with_capacity(pages.len(), GFP_KERNEL)?;
        let mut next = 0usize;
        for p in pages {
            let f = match p {
                Some(o) => {
                    if o.size() != PAGE_SIZE {
                        return Err(EINVAL);
                    }
                    o.ptr
                }
                None => {
                    let f = *pool.folios.get(next).ok_or(EINVAL)?;
                    next += 1;
                    f
                }
            };
            raw.push(f, GFP_KERNEL)?;
        }
        Self::map(&mut raw)
    }

    /// Maps the order-0 device folios holding a pcluster, to read it in place.
    pub(crate) fn input(folios: &'a [CFolio]) -> Result<Self> {
        let mut raw = KVec::with_capacity(folios.len(), GFP_KERNEL)?;
        for f in folios {
            // SAFETY: we hold a reference.
            if f.size() != PAGE_SIZE || !unsafe { ffi::erofs_rs_glue_folio_test_uptodate(f.ptr) } {
                return Err(EINVAL);
            }
            raw.push(f.ptr, GFP_KERNEL)?;
        }
        Self::map(&mut raw)
    }

    fn map(raw: &mut KVec<*mut bindings::folio>) -> Result<Self> {
        let count = u32::try_from(raw.len()).map_err(|_| EINVAL)?;
        if count == 0 {
            return Err(EINVAL);
        }
        // SAFETY: `raw` holds `count` live order-0 folios (checked by the constructors).
        let addr = unsafe { ffi::erofs_rs_glue_vmap_folios(raw.as_mut_ptr(), count) };
        if addr.is_null() {
            return Err(ENOMEM);
        }
        // INVARIANT: the constructors' borrows keep the folios for `'a`.
        Ok(PageMap { addr: addr.cast(), count: raw.len(), _p: PhantomData })
    }

    /// The mapped bytes.
    pub(crate) fn bytes(&self) -> &[u8] {
        // SAFETY: `addr` maps `count` pages (type invariant).
        unsafe { core::slice::from_raw_parts(self.addr, self.count * PAGE_SIZE) }
    }

    /// The mapped bytes, writable; only for output maps.
    pub(crate) fn bytes_mut(&mut self) -> &mut [u8] {
        // SAFETY: `addr` maps `count` pages that only this mapping writes (type invariant:
        // output pages are locked by our read, or bounce folios of our pool).
        unsafe { core::slice::from_raw_parts_mut(self.addr, self.count * PAGE_SIZE) }
    }
}

impl Drop for PageMap<'_> {
    fn drop(&mut self) {
        // CAST: `count` came from a u32 in `map`.
        // SAFETY: unmaps the mapping made in `map`, once.
        unsafe { ffi::erofs_rs_glue_vunmap(self.addr.cast(), self.count as u32) };
    }
}

/// The stream decoders of `zglue.c`, by on-disk algorithm number: MicroLZMA, DEFLATE, Zstandard.
fn zalg(algorithmformat: u8) -> Option<c_int> {
    match algorithmformat {
        1..=3 => Some(c_int::from(algorithmformat) - 1),
        _ => None,
    }
}

/// Prepares the decoder pool of algorithm `algorithmformat` (LZMA, DEFLATE or ZSTD) for
/// dictionaries or windows of `dictsize` bytes (`z_erofs_load_*_config`).
pub(crate) fn stream_config(algorithmformat: u8, dictsize: u32) -> Result {
    let alg = zalg(algorithmformat).ok_or(EINVAL)?;
    // SAFETY: no preconditions.
    let ret = unsafe { ffi::erofs_rs_glue_zalg_config(alg, dictsize) };
    if ret < 0 {
        return Err(Error::from_errno(ret));
    }
    Ok(())
}

/// Decodes stream `src` of algorithm `algorithmformat` into all of `dst` with the kernel's
/// decoder (xz_dec_microlzma, zlib inflate, zstd); `partial` lets the stream go on past `dst`.
/// On failure, the errno and, for bad data, the decoder's reason.
pub(crate) fn stream_decompress(
    algorithmformat: u8,
    src: &[u8],
    dst: &mut [u8],
    partial: bool,
) -> core::result::Result<(), (Error, &'static str)> {
    let alg = zalg(algorithmformat).ok_or((EINVAL, "unknown algorithm"))?;
    let (Ok(inlen), Ok(outlen)) = (u32::try_from(src.len()), u32::try_from(dst.len())) else {
        return Err((EINVAL, "buffers too large"));
    };
    let mut reason: *const u8 = core::ptr::null();
    // SAFETY: the decoder reads at most `inlen` bytes of `src` and writes at most `outlen`
    // bytes of `dst`, both valid for those lengths; `reason` is written with a static string
    // or left null.
    let ret = unsafe {
        ffi::erofs_rs_glue_zalg_decompress(
            alg,
            src.as_ptr().cast(),
            inlen,
            dst.as_mut_ptr().cast(),
            outlen,
            partial,
            &mut reason,
        )
    };
    if ret == 0 {
        return Ok(());
    }
    let why = if reason.is_null() {
        "decoder error"
    } else {
        // SAFETY: the decoders set static NUL-terminated strings.
        unsafe { kernel::str::CStr::from_char_ptr(reason.cast()) }.to_str().unwrap_or("decoder error")
    };
    Err((Error::from_errno(ret), why))
}

/// A mount's crypto-API (acomp) engine for DEFLATE pclusters (`decomp_accel=`), closed on drop.
///
/// # Invariants
///
/// `ptr` is an engine from `erofs_rs_glue_accel_open`, owned by this value; no request of it
/// is in flight when it drops (every [`AccelReq`] borrows it and waits on drop).
pub(crate) struct Accel {
    ptr: *mut ffi::AccelRaw,
}

// SAFETY: the engine's slots are handed out under its own lock; counters are atomics.
unsafe impl Send for Accel {}
// SAFETY: as above.
unsafe impl Sync for Accel {}

impl Accel {
    /// Opens acomp driver `name` (NUL-terminated) for a mount whose DEFLATE streams use
    /// `windowbits`, or `None` if it is missing or cannot serve such windows (the glue says so
    /// in the log) or memory is short: the mount then decodes in software.
    pub(crate) fn open(stats: &ZStats, name: &[u8], windowbits: u8) -> Option<Self> {
        if name.last() != Some(&0) {
            return None;
        }
        // SAFETY: `name` is NUL-terminated (checked); `stats` lives as long as the mount.
        let ptr = unsafe { ffi::erofs_rs_glue_accel_open(stats.ptr, name.as_ptr(), u32::from(windowbits)) };
        // INVARIANT: a fresh engine, ours.
        (!ptr.is_null()).then_some(Accel { ptr })
    }

    /// The name of the global accelerator (`/sys/fs/erofs_rs/accel`), NUL-terminated, if set.
    pub(crate) fn global_default() -> Option<[u8; 128]> {
        let mut buf = [0u8; 128];
        // SAFETY: `buf` is writable for its length; the glue NUL-terminates within it.
        unsafe { ffi::erofs_rs_glue_accel_default(buf.as_mut_ptr(), buf.len()) };
        (buf[0] != 0).then_some(buf)
    }

    /// Starts decoding `inlen` bytes of `input` (from byte `in_off` of the first folio) into
    /// `outlen` bytes of `out` (from byte `out_off` of the first). `None` if no request slot is
    /// free or the engine cannot take it: decode in software then.
    pub(crate) fn submit(
        &self,
        input: &[CFolio],
        in_off: usize,
        inlen: usize,
        out: &[&OutFolio],
        out_off: usize,
        outlen: usize,
    ) -> Option<AccelReq<'_>> {
        let mut ins = KVec::with_capacity(input.len(), GFP_KERNEL).ok()?;
        for f in input {
            if f.size() != PAGE_SIZE {
                return None;
            }
            ins.push(f.ptr, GFP_KERNEL).ok()?;
        }
        let mut outs = KVec::with_capacity(out.len(), GFP_KERNEL).ok()?;
        for f in out {
            if f.size() != PAGE_SIZE {
                return None;
            }
            outs.push(f.ptr, GFP_KERNEL).ok()?;
        }
        let c = |v: usize| u32::try_from(v).ok();
        // The caller keeps `out` locked until the request is waited for (it hands folios back
        // only behind the requests that write them).
        // SAFETY: live order-0 folios (`input` referenced, `out` locked by the caller's read);
        // the glue references all of them until the request is waited for.
        let sl = unsafe {
            ffi::erofs_rs_glue_accel_submit(
                self.ptr,
                ins.as_mut_ptr(),
                c(ins.len())?,
                c(in_off)?,
                c(inlen)?,
                outs.as_mut_ptr(),
                c(outs.len())?,
                c(out_off)?,
                c(outlen)?,
            )
        };
        (!sl.is_null()).then_some(AccelReq { sl, outlen: c(outlen)?, _p: PhantomData })
    }

    /// Counts a pcluster meant for the engine that was decoded in software.
    pub(crate) fn note_fallback(&self) {
        // SAFETY: `ptr` is our live engine.
        unsafe { ffi::erofs_rs_glue_accel_fallback(self.ptr) };
    }
}

impl Drop for Accel {
    fn drop(&mut self) {
        // SAFETY: we own the engine and nothing is in flight (type invariant).
        unsafe { ffi::erofs_rs_glue_accel_close(self.ptr) };
    }
}

/// An offload request in flight; dropping it waits for it. The glue holds references on its
/// folios until then, so the engine never writes freed memory.
///
/// # Invariants
///
/// `sl` is null, or a submitted, not yet waited slot of an engine borrowed for `'a`.
pub(crate) struct AccelReq<'a> {
    sl: *mut ffi::AslotRaw,
    outlen: u32,
    _p: PhantomData<&'a ()>,
}

impl AccelReq<'_> {
    /// A placeholder that is no request (waiting for it does nothing).
    pub(crate) fn none() -> Self {
        AccelReq { sl: core::ptr::null_mut(), outlen: 0, _p: PhantomData }
    }

    /// Waits for the request: `Ok` if the engine produced exactly the output asked for.
    pub(crate) fn wait(self) -> Result {
        let (sl, outlen) = (self.sl, self.outlen);
        core::mem::forget(self);
        if sl.is_null() {
            return Err(EINVAL);
        }
        // SAFETY: a submitted slot, waited once (`self` is gone).
        let ret = unsafe { ffi::erofs_rs_glue_accel_wait(sl, outlen) };
        if ret < 0 {
            return Err(Error::from_errno(ret));
        }
        Ok(())
    }
}

impl Drop for AccelReq<'_> {
    fn drop(&mut self) {
        if !self.sl.is_null() {
            // SAFETY: as in `wait`; drop runs only when `wait` did not.
            unsafe { ffi::erofs_rs_glue_accel_wait(self.sl, self.outlen) };
        }
    }
}
