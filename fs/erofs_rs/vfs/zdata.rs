// SPDX-License-Identifier: GPL-2.0-only
//! Compressed reads' runtime (C: the scheduling half of `fs/erofs/zdata.c`): readahead
//! batches, the locked page-cache folios being filled, referenced folios of compressed data,
//! decompression queues and their bios, where their work runs (a bound high-priority
//! workqueue, or per-CPU SCHED_FIFO kthread workers that mounts with `decomp_pcpu_kthreads`
//! share, kept per online CPU across hotplug), and per-mount latency statistics in
//! debugfs. The kernel's decoders are in `decompressor.rs`.

use super::{
    bio::{
        Completed,
        ReadBio, //
    },
    cpuhp::{
        CpuhpState,
        Hotplug, //
    },
    ffi,
    folio,
    fs::FileSystem,
    kthread::{
        KthreadWork,
        KthreadWorker, //
    },
    smallvec::SmallVec,
    sys,
    trace,
    workqueue::OwnedQueue,
    New,
    RealInode,
    SuperBlock, //
};
use core::{
    cell::Cell,
    fmt,
    marker::PhantomData,
    ptr::NonNull,
    sync::atomic::{
        AtomicBool,
        AtomicI32,
        AtomicI64,
        AtomicPtr,
        AtomicU32,
        AtomicU64,
        AtomicUsize,
        Ordering, //
    },
};
use kernel::{
    bindings,
    debugfs::{
        Dir,
        File, //
    },
    new_mutex, new_spinlock, new_work,
    page::PAGE_SIZE,
    prelude::*,
    sync::{
        aref::ARef,
        rcu,
        Arc,
        Completion,
        Mutex,
        SpinLock,
        UniqueArc, //
    },
    types::Opaque,
    uaccess::UserSliceReader,
    workqueue::{
        impl_has_work,
        Work,
        WorkItem, //
    },
};

/// A folio of one of our inodes (or of a shared inode, `inode_share`), locked for reading by
/// readahead or a compressed inode's `read_folio`; dropping it unlocks it, not uptodate, so no
/// error path can leave a folio locked.
///
/// A folio two reads fill, each some of its bytes (a pcluster one read decodes for another,
/// as the C driver's `z_erofs_onlinefolio_split`), is held by several values, its parts
/// ([`OutFolio::split_off`]): each writes only its own bytes, and the last one to end unlocks
/// the folio, uptodate if none failed.
///
/// # Invariants
///
/// `ptr` is a locked, not yet uptodate page-cache folio of a live, filled inode of ours or of
/// a shared inode, and this value is the one that will unlock it; or, for a part, the last of
/// the live values sharing `part`'s count will, the count being how many of them are live.
/// A part writes bytes `from..to` of the folio only, and the parts' ranges do not overlap.
/// While `mapped`, a [`PageMap<Output>`] or [`PageRuns<Output>`] of the folio exists (or was
/// forgotten), and no other one does; a part is never mapped.
pub(crate) struct OutFolio {
    ptr: *mut bindings::folio,
    /// Whether a [`PageMap<Output>`] or [`PageRuns<Output>`] holds the folio (set and cleared
    /// by it only).
    mapped: Cell<bool>,
    /// For a part: the count of parts, and the bytes it writes; `None` for the whole folio.
    part: Option<Part>,
}

/// What one part of a folio holds (see [`OutFolio`]).
struct Part {
    count: Arc<Parts>,
    from: u32,
    to: u32,
}

/// The live parts of one folio, and [`PARTS_FAILED`] once one of them ended not uptodate
/// (C keeps the same in `folio->private`).
pub(crate) struct Parts(AtomicU32);

/// In [`Parts`]: a part failed.
const PARTS_FAILED: u32 = 1 << 31;

impl Parts {
    /// A count for [`OutFolio::split_off`], allocated with `flags`: unique, so that no two
    /// folios can be split with one count.
    pub(crate) fn new(flags: kernel::alloc::Flags) -> Result<UniqueArc<Parts>> {
        Ok(UniqueArc::new(Parts(AtomicU32::new(0)), flags)?)
    }
}

// SAFETY: a locked folio may be filled and unlocked from any thread (bio completions do).
unsafe impl Send for OutFolio {}

impl OutFolio {
    /// # Safety
    ///
    /// `ptr` is a locked, not uptodate folio of one of our filled inodes or of a shared inode
    /// (`inode_share`), whose unlocking passes to the returned value.
    pub(crate) unsafe fn from_raw(ptr: *mut bindings::folio) -> Self {
        // INVARIANT: by the caller's contract; no map of it exists yet.
        OutFolio {
            ptr,
            mapped: Cell::new(false),
            part: None,
        }
    }

    /// The bytes this value writes: the whole folio, or a part's.
    pub(crate) fn range(&self) -> (usize, usize) {
        match &self.part {
            // CAST: u32 fits in usize.
            Some(p) => (p.from as usize, p.to as usize),
            None => (0, self.size()),
        }
    }

    /// Whether this value writes `off..off + len` (all of it); `EINVAL` if not.
    pub(super) fn owns(&self, off: usize, len: usize) -> Result {
        let (from, to) = self.range();
        match off.checked_add(len) {
            Some(end) if off >= from && end <= to => Ok(()),
            _ => Err(EINVAL),
        }
    }

    /// Whether a [`PageMap<Output>`] or [`PageRuns<Output>`] holds the folio.
    pub(super) fn is_mapped(&self) -> bool {
        self.mapped.get()
    }

    /// Whether this value is a part of the folio ([`OutFolio::split_off`]).
    pub(crate) fn is_part(&self) -> bool {
        self.part.is_some()
    }

    /// Splits bytes `from..to` of the folio off into a new part, which writes those bytes only
    /// and can go to another thread; this value keeps the rest of its bytes (possibly none),
    /// so `from..to` must start or end where they do. The folio is unlocked once every part
    /// has ended (dropped, or [`OutFolio::end_read`]), uptodate if none failed. `spare` is the
    /// count the parts share, taken if this value is the whole folio (`ENOMEM` if it is
    /// needed and `None`); a [`UniqueArc`], so no other folio shares it. `EINVAL` for a range
    /// that is not such a start or end, `EBUSY` while an output map holds the folio.
    pub(crate) fn split_off(
        &mut self,
        from: usize,
        to: usize,
        spare: &mut Option<UniqueArc<Parts>>,
    ) -> Result<OutFolio> {
        if self.mapped.get() {
            return Err(EBUSY);
        }
        let (a, b) = self.range();
        if from > to || from < a || to > b || (from != a && to != b) {
            return Err(EINVAL);
        }
        let (keep_from, keep_to) = if from == a { (to, b) } else { (a, from) };
        let count = match &self.part {
            Some(p) => {
                // This part is live, so the count is not 0 and stays so while we add one.
                p.count.0.fetch_add(1, Ordering::Relaxed);
                p.count.clone()
            }
            None => {
                let c = spare.take().ok_or(ENOMEM)?;
                // Both values are live from here on; nobody else has the count yet (it is
                // unique until here).
                c.0.store(2, Ordering::Relaxed);
                Arc::from(c)
            }
        };
        // CAST: offsets inside a folio, which is far smaller than 4 GiB.
        self.part = Some(Part {
            count: count.clone(),
            from: keep_from as u32,
            to: keep_to as u32,
        });
        // INVARIANT: the folio stays locked until the last of the parts sharing `count` ends,
        // and `count` says how many are live (one more just above); the two ranges split what
        // this value wrote, which no other part writes.
        Ok(OutFolio {
            ptr: self.ptr,
            mapped: Cell::new(false),
            // CAST: as above.
            part: Some(Part {
                count,
                from: from as u32,
                to: to as u32,
            }),
        })
    }

    /// Takes `other` back into this value, the reverse of [`OutFolio::split_off`]: both must
    /// be parts of one folio, split with one count, whose bytes lie side by side; this value
    /// then writes the bytes of both. If that leaves no other part of the folio, none of
    /// them failed, and the bytes are the whole folio, this value is the whole folio again.
    /// Hands `other` back, unchanged, if it is not such a part, or while an output map holds
    /// either.
    pub(crate) fn merge(&mut self, other: OutFolio) -> Result<(), OutFolio> {
        if self.mapped.get() || other.mapped.get() || self.ptr != other.ptr {
            return Err(other);
        }
        let (Some(a), Some(b)) = (self.part.as_ref(), other.part.as_ref()) else {
            return Err(other);
        };
        if !Arc::ptr_eq(&a.count, &b.count) {
            return Err(other);
        }
        let (from, to) = if a.to == b.from {
            (a.from, b.to)
        } else if b.to == a.from {
            (b.from, a.to)
        } else {
            return Err(other);
        };
        // `other` goes without ending: its bytes are this value's from here on.
        let mut other = core::mem::ManuallyDrop::new(other);
        let gone = other.part.take();
        // Both were live, so the count is at least 2 and stays above 0. AcqRel: if this leaves
        // us the only part, we see the bytes and failure of those that ended (as in `end`).
        let prev = a.count.0.fetch_sub(1, Ordering::AcqRel);
        drop(gone);
        // CAST: u32 fits in usize.
        let whole = prev == 2 && from == 0 && to as usize == self.size();
        // INVARIANT: the count says how many values are live again (one went, unended); this
        // value writes the two adjacent ranges, which no other part writes. Once it is the only
        // live part, none failed, and it writes the whole folio, it is the folio's unlocker
        // and writes all of it: the whole folio's value.
        if whole {
            self.part = None;
        } else if let Some(p) = self.part.as_mut() {
            p.from = from;
            p.to = to;
        }
        Ok(())
    }

    /// The inode to read the folio with: its page cache's inode, or a real one for a shared
    /// inode (`inode_share`); `None` if no real inode is left.
    pub(crate) fn real_inode<T: 'static>(&self) -> Option<RealInode<T>> {
        // SAFETY: the folio is locked in a page cache with our aops, which keeps its host.
        unsafe { RealInode::of(folio::host(self.ptr)) }
    }

    /// The page cache holding the folio, referenced.
    pub(crate) fn cache(&self) -> Option<PageCache> {
        // SAFETY: a locked page-cache folio has a mapping and a live host.
        unsafe { PageCache::grab(folio::host(self.ptr)) }
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

    /// Writes `src` at byte `off` of the folio, page by page. `EINVAL` outside the bytes this
    /// value writes, `EBUSY` while an output map holds the folio.
    pub(crate) fn write(&self, off: usize, src: &[u8]) -> Result {
        self.owns(off, src.len())?;
        if self.mapped.get() {
            return Err(EBUSY);
        }
        // SAFETY: the folio is live (type invariant).
        unsafe {
            folio::for_each_piece(self.ptr, self.size(), off, src.len(), |done, p, n| {
                // SAFETY: `p` maps `n` bytes of a folio that only its locker (us) writes, of
                // the bytes this value writes (checked above; no other part writes them).
                // Nothing else borrows them now: no output map holds the folio (checked
                // above), `with_page_mut` needs `&mut self`, `append_to` copies, and an
                // `OutFolio` is `!Sync`, so this `&self` is not used on another thread.
                let dst = core::slice::from_raw_parts_mut(p, n);
                dst.copy_from_slice(&src[done..done + n]);
            })
        }
    }

    /// Zeroes `off..off + len` of the folio (`folio_zero_segment`: one mapping per page).
    /// `EINVAL` outside the bytes this value writes.
    pub(crate) fn zero(&mut self, off: usize, len: usize) -> Result {
        self.owns(off, len)?;
        // OVERFLOW: checked by `owns`.
        let end = off + len;
        // SAFETY: the folio is live and locked by us, the only writer of `off..end`, which
        // lies inside it (type invariant, `owns`).
        unsafe { ffi::erofs_rs_glue_folio_zero_segment(self.ptr, off, end) };
        Ok(())
    }

    /// Calls `f` with the page at byte `off` of the folio, writable.
    pub(crate) fn with_page_mut<R>(
        &mut self,
        off: usize,
        f: impl FnOnce(&mut [u8]) -> R,
    ) -> Result<R> {
        if self.mapped.get() || self.part.is_some() {
            return Err(EBUSY);
        }
        // SAFETY: a live folio that we locked and alone write (type invariant: not a part,
        // checked above), which no `PageMap` or `PageRuns` holds (checked above; one is made only through `&self` with
        // `mapped` set, which `&mut self` excludes while `f` runs).
        unsafe { super::page_mut(self.ptr, off, f) }
    }

    /// The folio, for a device read into bytes `off..off + len` of it while the caller holds
    /// `&mut self` ([`super::FillFolio::dest`]): `EINVAL` outside the bytes this value writes,
    /// `EBUSY` while an output map holds the folio.
    pub(super) fn dest(&mut self, off: usize, len: usize) -> Result<*mut bindings::folio> {
        self.owns(off, len)?;
        if self.mapped.get() {
            return Err(EBUSY);
        }
        Ok(self.ptr)
    }

    /// Appends `len` bytes from byte `off` of the folio to `dst`: the compressed data a bio
    /// read into it (in-place I/O, [`ZQueue::lend`]), before it is decoded over. Refused while
    /// a [`PageMap<Output>`] or [`PageRuns<Output>`] holds it.
    pub(crate) fn append_to(&self, off: usize, len: usize, dst: &mut KVVec<u8>) -> Result {
        // Only our own bytes: another part's may be being written.
        self.owns(off, len)?;
        if self.mapped.get() {
            return Err(EBUSY);
        }
        // SAFETY: a folio locked in its page cache (type invariant), live while `&self` is.
        // (Only we write it, and we do not while `&self` is borrowed and no output map holds
        // it, checked above; `append_to` copies as `copy_to`, sound even against a writer.)
        unsafe { folio::Folio::from_ptr(self.ptr) }.append_to(off, len, dst)
    }

    /// The raw folio, still locked by this value.
    pub(super) fn as_raw(&self) -> *mut bindings::folio {
        self.ptr
    }

    /// Gives up the folio: its unlocking passes to the caller. `None` for a part, whose
    /// unlocking is the parts' to do.
    pub(super) fn into_raw(self) -> Option<*mut bindings::folio> {
        if self.part.is_some() {
            return None;
        }
        let p = self.ptr;
        core::mem::forget(self);
        Some(p)
    }

    /// Marks the folio uptodate (or not) and unlocks it; for a part, marks its bytes so and
    /// unlocks the folio if it is the last part.
    pub(crate) fn end_read(self, success: bool) {
        let mut me = core::mem::ManuallyDrop::new(self);
        let part = me.part.take();
        // SAFETY: `me`'s folio and part; `me` did not unlock the folio, and is neither used
        // again nor dropped (`ManuallyDrop`).
        unsafe { end(me.ptr, part, success) };
    }
}

/// Ends the read of `ptr` by the value that held `part`, as [`OutFolio::end_read`] says.
///
/// # Safety
///
/// `ptr` and `part` are those of an `OutFolio` that has not unlocked the folio and is not used
/// afterwards (forgotten, or being dropped).
unsafe fn end(ptr: *mut bindings::folio, part: Option<Part>, success: bool) {
    let mut ok = success;
    if let Some(p) = part {
        if !success {
            p.count.0.fetch_or(PARTS_FAILED, Ordering::Release);
        }
        // AcqRel: the last part sees every other part's bytes and failure before it unlocks.
        let prev = p.count.0.fetch_sub(1, Ordering::AcqRel);
        if prev & !PARTS_FAILED != 1 {
            return;
        }
        ok = success && prev & PARTS_FAILED == 0;
    }
    // SAFETY: the folio is locked and that value was its unlocker, or the last live part of
    // it (type invariant; the count just went to 0), and it is not used afterwards (contract).
    unsafe { bindings::folio_end_read(ptr, ok) };
}

impl Drop for OutFolio {
    fn drop(&mut self) {
        let part = self.part.take();
        // SAFETY: as in `end_read`; drop runs at most once and only when `end_read` did not.
        unsafe { end(self.ptr, part, false) };
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
        unsafe { bindings::iput(self.host) };
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
        let host = unsafe { bindings::igrab(host) };
        // INVARIANT: `igrab` gave us a reference.
        (!host.is_null()).then_some(PageCache { host })
    }

    /// Locks page `index` of this page cache for filling on the side, if it is absent or not
    /// uptodate and nobody holds it (`erofs_grab_folio_nowait`); never blocks.
    pub(crate) fn grab_folio_nowait(&self, index: u64) -> Option<OutFolio> {
        let index = usize::try_from(index).ok()?;
        // SAFETY: `host` is live (type invariant), and so is its mapping.
        let mapping = unsafe { (*self.host).i_mapping };
        // `readahead_gfp_mask()`, without direct reclaim: this read must not wait.
        // SAFETY: as above.
        let gfp = (unsafe { ffi::erofs_rs_glue_mapping_gfp_mask(mapping) }
            | sys::EROFS_RS_GFP_NORETRY
            | sys::EROFS_RS_GFP_NOWARN)
            & !sys::EROFS_RS_GFP_RECLAIM;
        let fgp = sys::EROFS_RS_FGP_LOCK
            | sys::EROFS_RS_FGP_CREAT
            | sys::EROFS_RS_FGP_NOFS
            | sys::EROFS_RS_FGP_NOWAIT;
        // SAFETY: `mapping` is live; `__filemap_get_folio` is this with no mempolicy.
        let f = unsafe {
            sys::__filemap_get_folio_mpol(mapping, index, fgp, gfp, core::ptr::null_mut())
        };
        let f = kernel::error::from_err_ptr(f).ok()?;
        // SAFETY: the lookup returned a locked folio and a reference, which is ours.
        let held = unsafe { folio::Folio::from_raw(f) };
        if held.test_uptodate() || held.size() > PAGE_SIZE {
            // SAFETY: we locked it above.
            unsafe { bindings::folio_unlock(f) };
            return None;
        }
        // The page cache's own reference keeps the folio while it is locked.
        drop(held);
        // SAFETY: a locked, not uptodate, order-0 folio of our inode, that we must unlock.
        Some(unsafe { OutFolio::from_raw(f) })
    }
}

/// A readahead batch (`struct readahead_control`), borrowed for one `readahead` call.
///
/// # Invariants
///
/// `ptr` is the live argument of our `readahead`, for a filled inode of ours. `taken` is set
/// once [`Readahead::next_folio`] has taken a folio.
pub(crate) struct Readahead<'a> {
    ptr: *mut bindings::readahead_control,
    taken: bool,
    _p: PhantomData<&'a ()>,
}

impl<'a> Readahead<'a> {
    /// # Safety
    ///
    /// `ptr` is the argument of `readahead` for one of our inodes, live for `'a`.
    pub(crate) unsafe fn from_raw(ptr: *mut bindings::readahead_control) -> Self {
        // INVARIANT: by the caller's contract.
        Readahead {
            ptr,
            taken: false,
            _p: PhantomData,
        }
    }

    /// The inode to read with: the page cache's, or a real one for a shared inode.
    pub(crate) fn real_inode<T: 'static>(&self) -> Option<RealInode<T>> {
        // SAFETY: the host of a readahead is live during it (type invariant).
        unsafe { RealInode::of(self.host()) }
    }

    /// The page cache being read ahead, referenced.
    pub(crate) fn cache(&self) -> Option<PageCache> {
        // SAFETY: the host of a readahead is live during it (type invariant).
        unsafe { PageCache::grab(self.host()) }
    }

    /// The inode whose page cache is read ahead (`rac->mapping->host`).
    fn host(&self) -> *mut bindings::inode {
        // SAFETY: `ptr` is live, and so is its mapping (type invariant).
        unsafe { (*(*self.ptr).mapping).host }
    }

    /// The byte range of the folios still to be taken.
    pub(crate) fn range(&self) -> (u64, u64) {
        // SAFETY: `ptr` is live (type invariant).
        unsafe {
            (
                ffi::erofs_rs_glue_readahead_pos(self.ptr),
                ffi::erofs_rs_glue_readahead_length(self.ptr),
            )
        }
    }

    /// Asks for more folios around the batch (`readahead_expand`); the VFS may add fewer.
    /// Does nothing once a folio has been taken: `readahead_expand` then moves the batch's start
    /// under the folios taken, and the next [`Readahead::next_folio`] would return a folio
    /// already taken (a second owner of its lock) while a folio added before it is never
    /// returned, and stays locked.
    pub(crate) fn expand(&mut self, start: u64, len: u64) {
        // Positions past `loff_t` cannot be in the page cache: nothing to add.
        let (Ok(start), Ok(len)) = (i64::try_from(start), usize::try_from(len)) else {
            return;
        };
        if self.taken {
            return;
        }
        // SAFETY: `ptr` is live, and no folio has been taken from it yet (type invariant).
        unsafe { bindings::readahead_expand(self.ptr, start, len) };
    }

    /// Takes the next folio, locked.
    pub(crate) fn next_folio(&mut self) -> Option<OutFolio> {
        // SAFETY: `ptr` is live.
        let f = unsafe { ffi::erofs_rs_glue_readahead_folio(self.ptr) };
        if f.is_null() {
            return None;
        }
        // INVARIANT: a folio is taken.
        self.taken = true;
        // SAFETY: `readahead_folio` returns folios locked, not uptodate, that the filesystem must
        // unlock; the page cache keeps them while they are locked.
        Some(unsafe { OutFolio::from_raw(f) })
    }
}

/// A referenced folio holding compressed data: of the superblock's managed cache (see
/// `zcache.rs`), or a short-lived one read for one request ([`ZQueue::grab_shortlived`]).
///
/// Both are private to the driver: the managed cache is an inode of the superblock's own, not
/// the block device's page cache, so no other opener of the device (one that writes it
/// included) can reach its folios, and only our bios write them, before they are uptodate.
/// That is what lets [`CFolio::with_bytes`] and [`PageMap<Input>`] lend `&[u8]` of an
/// uptodate folio to the decoders (in-place decoding, no copy).
///
/// # Invariants
///
/// The folio is in the managed cache of a mounted, read-only superblock, or a short-lived
/// folio outside any page cache that only its read writes. The second field is the byte of the
/// device it holds.
pub(crate) struct CFolio(ARef<folio::Folio>, u64);

impl CFolio {
    /// The raw folio, referenced while `self` lives.
    pub(super) fn as_ptr(&self) -> *mut bindings::folio {
        self.0.as_ptr()
    }

    /// Byte position on the device of the data the folio holds.
    pub(crate) fn pos(&self) -> u64 {
        self.1
    }

    /// Size in bytes.
    pub(crate) fn size(&self) -> usize {
        self.0.size()
    }

    /// Whether the folio holds its data: it was cached, or its read completed.
    pub(crate) fn uptodate(&self) -> bool {
        self.0.test_uptodate()
    }

    /// Calls `f` with bytes `off..off + len` of the folio, which must lie in one page; only for
    /// uptodate folios, as [`CFolio::append_to`].
    pub(crate) fn with_bytes<R>(
        &self,
        off: usize,
        len: usize,
        f: impl FnOnce(&[u8]) -> R,
    ) -> Result<R> {
        if !self.0.test_uptodate() {
            return Err(EIO);
        }
        // SAFETY: an uptodate folio, referenced: a short-lived one or one of the managed cache,
        // which nobody writes once it is uptodate (type invariant).
        unsafe { self.0.with_bytes(off, len, f) }
    }

    /// Appends `len` bytes from byte `off` of the folio to `dst`. Only for folios whose read
    /// has completed: uptodate ones (checked here), after their queue ran.
    pub(crate) fn append_to(&self, off: usize, len: usize, dst: &mut KVVec<u8>) -> Result {
        if !self.0.test_uptodate() {
            return Err(EIO);
        }
        self.0.append_to(off, len, dst)
    }
}

/// The work a decompression queue runs once its I/O is done.
pub(crate) trait ZWork: Send + Sized + 'static {
    /// Runs with the first I/O error (0 if none), in a worker or in the submitter, and the
    /// folios lent to the queue's bios with their tags ([`ZQueue::lend`]), back from them;
    /// returns the work's error, which a sync submitter hands to its caller.
    fn run(self: KBox<Self>, err: i32, lent: KVec<(usize, OutFolio)>) -> Result;

    /// The pclusters to decode, and their compressed and decoded bytes (for the
    /// `erofs_rs_decompress` tracepoint).
    fn sizes(&self) -> (u32, u64, u64);
}

/// Runs `f` with the task's allocations kept from starting I/O (`memalloc_noio_save`), as the
/// C driver decompresses: the folios being read are locked, and reclaim must not wait on them.
fn noio<R>(f: impl FnOnce() -> R) -> R {
    // SAFETY: restored below, in the same task.
    let flags = unsafe { ffi::erofs_rs_glue_memalloc_noio_save() };
    let r = f();
    // SAFETY: restores what the save above returned, in the same task, in LIFO order with any
    // save `f` made (each restored before it returned).
    unsafe { ffi::erofs_rs_glue_memalloc_noio_restore(flags) };
    r
}

/// What [`ZQueue::bypass`]'s work decoded: pclusters (of the device or inline), their
/// compressed and decoded bytes, and the folios it handed back.
#[derive(Default)]
pub(crate) struct Bypassed {
    pub(crate) pclusters: u32,
    pub(crate) in_bytes: u64,
    pub(crate) out_bytes: u64,
    pub(crate) folios: u32,
}

/// Where a queue ran, for the statistics (`runs` in `decompress_latency`).
#[derive(Clone, Copy, PartialEq, Eq)]
enum How {
    /// In the submitter: a sync read, or one whose data was all cached.
    Inline = 0,
    /// On the bound high-priority workqueue.
    Workqueue = 1,
    /// On this CPU's kthread worker (`decomp_pcpu_kthreads`).
    Kthread = 2,
    /// On the workqueue because this CPU's kthread worker was gone (hotplug).
    Fallback = 3,
    /// In the context that completed the last bio, which was not atomic (a loop device's
    /// worker, dm-verity's verify workqueue): no hop to a worker.
    Completion = 4,
}

/// The shared part of a decompression queue (`struct z_erofs_decompressqueue`): counts the
/// bios of one read request in flight, and runs its work once the last one completes.
///
/// Ownership passes with `pending`: whoever takes it to zero owns the queue. That is the
/// submitter (I/O done before the commit, or a sync queue after waiting for `done`), or the
/// last bio's completion, which hands it to a worker.
///
/// A queue is counted in its superblock's [`Inflight`] until it is freed (`stats`, a [`Hold`]):
/// the superblock's kill waits for it, so its bios and its work never outlive the superblock,
/// nor the module.
#[pin_data]
struct Zq<W: ZWork> {
    #[pin]
    work: Work<Zq<W>>,
    #[pin]
    kwork: KthreadWork,
    /// Completed by the last bio of a sync queue.
    #[pin]
    done: Opaque<bindings::completion>,
    /// Bios in flight, plus one while the submitter builds them.
    pending: AtomicU32,
    /// The first bio error, 0 if none.
    err: AtomicI32,
    /// The submitter waits and decompresses itself. Set before the submitter's count is given
    /// up (by [`ZQueue::new`], or by the drop of an uncommitted queue), read after.
    sync: AtomicBool,
    /// Run on the per-CPU kthread workers.
    pcpu: bool,
    /// `ktime_get()` when the last bio completed.
    t_ready: AtomicI64,
    rt: &'static Runtime,
    /// The work, set by the commit.
    #[pin]
    req: SpinLock<Option<KBox<W>>>,
    /// The short-lived folios the queue's bios read into, referenced until they complete
    /// (the queue is freed after its last bio); set before the submitter gives up its count.
    #[pin]
    pins: SpinLock<Option<KVec<ARef<folio::Folio>>>>,
    /// The file folios lent to the queue's bios (in-place I/O), tagged; handed to the work, or
    /// dropped (unlocked) with the queue, once no bio is left: set as `pins`.
    #[pin]
    lent: SpinLock<Option<KVec<(usize, OutFolio)>>>,
    /// The managed cache's mapping: the bios end its folios, and those of no page cache; the
    /// lent ones are left to the work. Compared only.
    mc: *const bindings::address_space,
    /// The superblock's statistics, and its count of this queue: the last field, so that it
    /// is given back after everything above is dropped (the work, the folios).
    stats: Hold,
}

// SAFETY: a queue is handed from the submitter to a bio completion and to a worker by design;
// its completion and kthread work are the kernel's, used under their own locks, and the rest is
// atomics, a spinlock, and `Send` data.
unsafe impl<W: ZWork> Send for Zq<W> {}
// SAFETY: as above: every shared access goes through atomics, the spinlock, or the kernel's
// completion.
unsafe impl<W: ZWork> Sync for Zq<W> {}

impl_has_work! {
    impl{W: ZWork} HasWork<Self> for Zq<W> { self.work }
}

impl<W: ZWork> WorkItem for Zq<W> {
    type Pointer = Pin<KBox<Self>>;

    fn run(this: Pin<KBox<Self>>) {
        let how = if this.pcpu {
            How::Fallback
        } else {
            How::Workqueue
        };
        // A worker's errors were reported and left the folios not uptodate.
        let _ = this.run_now(how);
    }
}

impl<W: ZWork> Zq<W> {
    /// Runs the work and frees the queue (`z_erofs_decompressqueue_work`); returns the work's
    /// error.
    fn run_now(self: Pin<KBox<Self>>, how: How) -> Result {
        noio(|| self.run_noio(how))
    }

    /// [`Zq::run_now`], allocations kept from starting I/O.
    fn run_noio(self: Pin<KBox<Self>>, how: How) -> Result {
        let t0 = ktime_ns();
        let mut sched = 0;
        if matches!(how, How::Workqueue | How::Kthread | How::Fallback) {
            sched = t0.saturating_sub(self.t_ready.load(Ordering::Relaxed));
            self.stats.sched[usize::from(how == How::Kthread)].add(sched);
        }
        let work = self.req.lock().take();
        let mut sizes = (0, 0, 0);
        let mut ret = Ok(());
        if let Some(work) = work {
            if trace::decompress_enabled() {
                sizes = work.sizes();
            }
            // No bio is left (we own the queue): the lent folios are back.
            let lent = self.lent.lock().take().unwrap_or_default();
            ret = work.run(self.err.load(Ordering::Relaxed), lent);
        }
        let decode_ns = ktime_ns().saturating_sub(t0);
        self.stats.decomp.add(decode_ns);
        trace::decompress(&trace::DecompressRun {
            dev: self.stats.dev,
            placement: how as u32,
            pclusters: sizes.0,
            in_bytes: sizes.1,
            out_bytes: sizes.2,
            queued_ns: u64::try_from(sched).unwrap_or(0),
            decode_ns: u64::try_from(decode_ns).unwrap_or(0),
        });
        self.stats.runs[how as usize].fetch_add(1, Ordering::Relaxed);
        ret
    }

    /// Takes the queue back from the raw pointer its owner held.
    ///
    /// # Safety
    ///
    /// `q` came from [`ZQueue::new`]'s `into_raw` and the caller owns it (see [`Zq`]); it
    /// is not used through the pointer afterwards.
    unsafe fn from_raw(q: *mut Self) -> Pin<KBox<Self>> {
        // SAFETY: by the contract: a pinned box leaked once, taken back once.
        unsafe { Pin::new_unchecked(KBox::from_raw(q)) }
    }

    /// The last bio completed (`z_erofs_decompress_kickoff`): in atomic context (an
    /// interrupt, softirq) hand the queue to a worker; else decompress here, as the C driver
    /// does, which saves small reads a hop to a worker and back.
    ///
    /// # Safety
    ///
    /// As for [`Zq::from_raw`]: the caller took `pending` to zero.
    unsafe fn kickoff(q: *mut Self) {
        // SAFETY: the queue is live: it is ours.
        // ORDERING: `sync` was stored before the submitter's AcqRel decrement, which the last
        // one synchronises with.
        let (sync, pcpu, rt) = unsafe { ((*q).sync.load(Ordering::Relaxed), (*q).pcpu, (*q).rt) };
        if sync {
            // The submitter waits for `done` and then owns the queue: no touching it after.
            // SAFETY: `done` was initialised with the queue.
            unsafe { bindings::complete((*q).done.get()) };
            return;
        }
        // SAFETY: ours, as above.
        let this = unsafe { Self::from_raw(q) };
        // SAFETY: no preconditions.
        if !unsafe { ffi::erofs_rs_glue_bio_in_atomic() } {
            // Preemptible task context: the work may sleep and allocate here (`run_now` saves
            // `memalloc_noio` around it). Its errors were reported and left the folios not
            // uptodate.
            let _ = this.run_now(How::Completion);
            return;
        }
        // Completions in atomic context cost small reads a worker hop: decode those in the
        // reader from now on.
        let _ =
            this.stats
                .sync_decompress
                .compare_exchange(0, 1, Ordering::Relaxed, Ordering::Relaxed);
        this.t_ready.store(ktime_ns(), Ordering::Relaxed);
        let this = if pcpu {
            match rt.pcpu.queue(this) {
                Ok(()) => return,
                // This CPU's worker is gone (hotplug) or stopping: the workqueue takes it.
                Err(this) => this,
            }
        } else {
            this
        };
        rt.wq.enqueue(this);
    }
}

/// `ktime_get()` in nanoseconds.
fn ktime_ns() -> i64 {
    // SAFETY: no preconditions.
    unsafe { bindings::ktime_get() }
}

/// A kthread worker ran a queue.
///
/// # Safety
///
/// `w` is the `kwork` of a queue [`Pcpu::queue`] queued, which passed it its ownership.
unsafe extern "C" fn zq_kwork<W: ZWork>(w: *mut bindings::kthread_work) {
    // SAFETY: `w` is the `kwork` field of a live `Zq<W>` (`KthreadWork` is transparent).
    let q = unsafe { w.byte_sub(core::mem::offset_of!(Zq<W>, kwork)) }.cast::<Zq<W>>();
    // SAFETY: the queue's ownership passed to this run (the contract).
    // (A worker's errors were reported and left the folios not uptodate.)
    let _ = unsafe { Zq::from_raw(q) }.run_now(How::Kthread);
}

/// A bio of a queue completed (`z_erofs_endio`).
///
/// # Safety
///
/// `bio` is a bio built by [`ZQueue`], whose private pointer is its `Zq<W>`.
unsafe extern "C" fn zq_endio<W: ZWork>(bio: *mut bindings::bio) {
    let Some(bio) = NonNull::new(bio) else { return };
    // SAFETY: by the contract, in its `end_io`, once.
    let bio = unsafe { Completed::from_raw(bio) };
    let q = bio.private().cast::<Zq<W>>();
    let err = bio.errno();
    // SAFETY: the queue lives while this bio is counted in `pending`, until the decrement.
    let qr = unsafe { &*q };
    // Lent folios stay locked: the work ends them.
    bio.end_read_owned(err == 0, qr.mc);
    if err != 0 {
        let _ = qr
            .err
            .compare_exchange(0, err, Ordering::Relaxed, Ordering::Relaxed);
    }
    // ORDERING: AcqRel: the owner-to-be sees every completion's `err` and the commit's work.
    if qr.pending.fetch_sub(1, Ordering::AcqRel) == 1 {
        // SAFETY: we took `pending` to zero: the queue is ours.
        unsafe { Zq::kickoff(q) };
    }
}

/// A decompression queue being filled with bios (`struct z_erofs_decompressqueue`). Dropping
/// it uncommitted still submits and finishes its I/O, with no work to run.
///
/// # Invariants
///
/// `q` is a queue leaked from a pinned box, whose submitter's count in `pending` this value
/// holds; `target` is the live primary device (block device or backing file) of the
/// superblock the queue was made for, which lives for `'a` and, the queue being counted in
/// that superblock's [`Inflight`] until it is freed after its last bio, beyond the queue's
/// I/O; `dev_end` its size in bytes, and `cache` the superblock's managed cache.
pub(crate) struct ZQueue<'a, W: ZWork> {
    q: *mut Zq<W>,
    target: Target,
    dev_end: u64,
    cache: super::zcache::CacheInode,
    /// The bio being built, and the device byte right after its last folio.
    bio: Option<ReadBio>,
    next_pos: u64,
    /// Bios are readahead (`REQ_RAHEAD`).
    rahead: bool,
    /// [`ZQueue::grab`] found a folio of the managed cache uptodate.
    hit: bool,
    /// References to the short-lived folios of the bios, handed to the queue by
    /// [`ZQueue::finish`].
    /// (`None` until the first: an empty vector's drop is not free, see `release`.)
    pins: Option<KVec<ARef<folio::Folio>>>,
    /// The folios lent to the bios ([`ZQueue::lend`]), handed to the queue likewise.
    lent: Option<KVec<(usize, OutFolio)>>,
    /// How many folios the submitter means to pin or lend ([`ZQueue::plan_room`]): the room
    /// `pins` and `lent` take at their first push, rather than growing one at a time.
    room_hint: usize,
    _p: PhantomData<&'a ()>,
}

/// The most entries [`ZQueue::plan_room`] makes room for at once (a page of `lent` entries).
const ROOM_HINT_MAX: usize = 256;

/// What a queue's bios read from.
#[derive(Clone, Copy)]
enum Target {
    /// The block device of a block-device mount.
    Bdev(*mut bindings::block_device),
    /// The backing file of a file-backed mount (fs/erofs/fileio.c), read with `IOCB_DIRECT`
    /// if `direct` (`directio`).
    File {
        file: *mut bindings::file,
        direct: bool,
    },
}

/// How a committed queue goes on.
pub(crate) enum Committed {
    /// The work ran in the caller, with this result (`z_erofs_runqueue`'s, which the C
    /// driver's `read_folio` returns).
    Ran(Result),
    /// A worker runs it when the last bio completes.
    Queued,
}

impl<'a, W: ZWork> ZQueue<'a, W> {
    /// A new queue on the primary device of superblock `sb`: its block device, or its backing
    /// file, read with `IOCB_DIRECT` if `direct`. A `sync` queue runs in the caller of
    /// [`ZQueue::commit`]; else in a worker, the per-CPU kthreads if `pcpu`.
    ///
    /// The queue counts itself in the superblock's [`Inflight`] until its work has run and it is
    /// freed, which its kill path waits for: its bios never outlive the superblock, nor (it
    /// being mounted until then) the module; `EIO` once that drain is done.
    pub(crate) fn new<T: FileSystem>(
        sb: SuperBlock<'a, T>,
        sync: bool,
        pcpu: bool,
        direct: bool,
    ) -> Result<Self> {
        // First: nothing below may outlive a superblock being killed.
        let stats = Hold::new(&sb.zstats().stats)?;
        let dev = sb.device();
        // A superblock has one from `fill_super` to `put_super`.
        let cache = dev.zcache.get().ok_or(EIO)?;
        let (target, dev_end) = if dev.is_file() {
            let file = dev.file;
            // SAFETY: a file-backed superblock holds its referenced backing file for its life.
            let end = unsafe { super::super_block::file_bytes(file) };
            (Target::File { file, direct }, end)
        } else {
            // SAFETY: a block-device superblock has a live `s_bdev` for its life.
            let bdev = unsafe { (*sb.as_ptr()).s_bdev };
            // SAFETY: as above.
            (Target::Bdev(bdev), unsafe {
                ffi::erofs_rs_glue_bdev_nr_bytes(bdev)
            })
        };
        let rt = runtime(&sb)?;
        let mc = cache.mapping();
        let q = KBox::pin_init(
            pin_init!(Zq {
                work <- new_work!("erofs_rs_zq"),
                kwork <- KthreadWork::new(zq_kwork::<W>),
                // SAFETY: initialises the completion in place.
                done <- Opaque::ffi_init(|c| unsafe { bindings::init_completion(c) }),
                pending: AtomicU32::new(1),
                err: AtomicI32::new(0),
                sync: AtomicBool::new(sync),
                pcpu,
                t_ready: AtomicI64::new(0),
                rt,
                req <- new_spinlock!(None, "erofs_rs_zq_req"),
                pins <- new_spinlock!(None, "erofs_rs_zq_pins"),
                lent <- new_spinlock!(None, "erofs_rs_zq_lent"),
                mc,
                stats,
            }),
            GFP_KERNEL,
        )?;
        // SAFETY: the box stays pinned: it is only ever taken back with `Zq::from_raw`.
        let q = KBox::into_raw(unsafe { Pin::into_inner_unchecked(q) });
        // INVARIANT: a fresh queue holding the submitter's count, and a count in `sb`'s
        // `Inflight` until it is freed; `sb`'s device, its size, and its cache.
        Ok(ZQueue {
            q,
            target,
            dev_end,
            cache,
            bio: None,
            next_pos: 0,
            rahead: false,
            hit: false,
            pins: None,
            lent: None,
            room_hint: 1,
            _p: PhantomData,
        })
    }

    /// Says that about `n` folios will be read into short-lived folios or lent
    /// ([`ZQueue::grab_shortlived`], [`ZQueue::lend`]): the queue makes room for them at once.
    pub(crate) fn plan_room(&mut self, n: usize) {
        self.room_hint = n.max(1);
    }

    /// `v`, made on first use, with room for one more entry: for `hint` entries (at most
    /// [`ROOM_HINT_MAX`]) if it has none yet, or just the one if that cannot be had.
    fn room<T>(v: &mut Option<KVec<T>>, hint: usize) -> Result<&mut KVec<T>> {
        let v = v.get_or_insert_with(KVec::new);
        if v.capacity() == 0 && v.reserve(hint.min(ROOM_HINT_MAX), GFP_KERNEL).is_ok() {
            return Ok(v);
        }
        v.reserve(1, GFP_KERNEL)?;
        Ok(v)
    }

    /// Marks the bios of this queue as readahead (`REQ_RAHEAD`), as the C driver's
    /// `z_erofs_submit_queue` does for `z_erofs_readahead`.
    pub(crate) fn set_readahead(&mut self) {
        self.rahead = true;
    }

    /// Whether [`ZQueue::grab`] found a folio cached (uptodate): without that, no pcluster
    /// read into this queue's folios can be whole before its I/O.
    pub(crate) fn hit(&self) -> bool {
        self.hit
    }

    /// Submits the bio being built, then, if any read of the queue is in flight, runs `f` (the
    /// decoding of what needs none of them, `z_erofs_runqueue`'s bypass queue) now, with its
    /// allocations kept from starting I/O as in the queue's own run, and records it as a run in
    /// the reader (the `decompress` statistics and the `erofs_rs_decompress` tracepoint, from the
    /// pclusters, compressed and decoded bytes `f` returns). Without I/O it does nothing: the
    /// commit runs the whole work here at once. A readahead's bios wait in its block plug until
    /// it returns, as the C driver's do.
    pub(crate) fn bypass(&mut self, f: impl FnOnce() -> Bypassed) {
        self.submit();
        // ORDERING: our count keeps `pending` above zero; bios completing meanwhile only lower
        // it, and the queue's work is not run before the commit either way.
        if self.zq().pending.load(Ordering::Relaxed) <= 1 {
            return;
        }
        let t0 = ktime_ns();
        let b = noio(f);
        let decode_ns = ktime_ns().saturating_sub(t0);
        if b.pclusters != 0 {
            let q = self.zq();
            q.stats.decomp.add(decode_ns);
            q.stats
                .bypass
                .fetch_add(u64::from(b.pclusters), Ordering::Relaxed);
            q.stats
                .bypass_folios
                .fetch_add(u64::from(b.folios), Ordering::Relaxed);
            trace::decompress(&trace::DecompressRun {
                dev: q.stats.dev,
                placement: How::Inline as u32,
                pclusters: b.pclusters,
                in_bytes: b.in_bytes,
                out_bytes: b.out_bytes,
                queued_ns: 0,
                decode_ns: u64::try_from(decode_ns).unwrap_or(0),
            });
        }
    }

    fn zq(&self) -> &Zq<W> {
        // SAFETY: the queue lives while we hold the submitter's count (type invariant).
        unsafe { &*self.q }
    }

    /// Submits the bio being built.
    fn submit(&mut self) {
        if let Some(bio) = self.bio.take() {
            // ORDERING: our own count keeps `pending` above zero: no one can own the queue yet.
            self.zq().pending.fetch_add(1, Ordering::Relaxed);
            bio.submit();
        }
    }

    fn fail(&self, err: Error) {
        let _ =
            self.zq()
                .err
                .compare_exchange(0, err.to_errno(), Ordering::Relaxed, Ordering::Relaxed);
    }

    /// Gets the device page-cache folio holding page `index` of the device (the image offset
    /// included), referenced; when it is not uptodate, it is queued for reading too. Before
    /// blocking on a folio lock the bio being built is submitted, so a folio this queue itself
    /// locked can never deadlock it.
    pub(crate) fn grab(&mut self, index: u64) -> Result<CFolio> {
        let mapping = self.cache.mapping();
        let index = usize::try_from(index).map_err(|_| EINVAL)?;
        // One lookup that finds or adds the folio, locked, as the C driver adds a new folio
        // to the managed cache without looking it up first: a lookup before it cost a cold
        // read a second walk of the cache's xarray per page. A cached folio is unlocked at once.
        // SAFETY: `mapping` is live (type invariant).
        let gfp = unsafe { ffi::erofs_rs_glue_mapping_gfp_mask(mapping) } & !sys::EROFS_RS_GFP_FS;
        let lock = sys::EROFS_RS_FGP_LOCK | sys::EROFS_RS_FGP_CREAT;
        // SAFETY: as above.
        let mut f = unsafe {
            sys::__filemap_get_folio_mpol(
                mapping,
                index,
                lock | sys::EROFS_RS_FGP_NOWAIT,
                gfp,
                core::ptr::null_mut(),
            )
        };
        if kernel::error::from_err_ptr(f).is_err() {
            self.submit();
            // SAFETY: as above.
            f = unsafe {
                sys::__filemap_get_folio_mpol(mapping, index, lock, gfp, core::ptr::null_mut())
            };
        }
        let f = kernel::error::from_err_ptr(f)?;
        // SAFETY: `f` is a locked, referenced folio of `mapping`.
        if unsafe { ffi::erofs_rs_glue_folio_test_uptodate(f) } {
            self.hit = true;
            // SAFETY: we locked it above.
            unsafe { bindings::folio_unlock(f) };
        } else {
            // SAFETY: `f` is live, referenced.
            let (pos, size) = unsafe {
                (
                    ffi::erofs_rs_glue_folio_pos(f),
                    ffi::erofs_rs_glue_folio_size(f),
                )
            };
            // SAFETY: the locked, not uptodate folio of the managed cache for device byte `pos`,
            // read whole, whose unlocking passes to the bio.
            unsafe { self.add(f, 0, size, pos, true) };
        }
        // SAFETY: the reference the lookup returned is ours.
        // INVARIANT: a folio of the managed cache.
        let f = unsafe { folio::Folio::from_raw(f) };
        let pos = f.pos();
        Ok(CFolio(f, pos))
    }

    /// Gets page `index` of the device for a pcluster the managed cache does not keep
    /// (`z_erofs_fill_bio_vec` without `tocache`): the device's folio if the page cache has it
    /// (read, or being read: then as [`ZQueue::grab`]), else a short-lived folio outside any
    /// page cache, queued for reading, freed with the last reference (the returned one).
    pub(crate) fn grab_shortlived(&mut self, index: u64) -> Result<CFolio> {
        let pos = index.checked_mul(PAGE_SIZE as u64).ok_or(EINVAL)?;
        if self.cached(index) {
            return self.grab(index);
        }
        // SAFETY: no preconditions; the read may sleep here as in `grab`.
        let page = unsafe { bindings::alloc_pages(sys::EROFS_RS_GFP_NOFS, 0) };
        if page.is_null() {
            return Err(ENOMEM);
        }
        // An order-0 page is its own folio (`page_folio`).
        let f = page.cast::<bindings::folio>();
        // SAFETY: a fresh folio that nobody else can see: its lock is free, and taking it does
        // not sleep.
        unsafe { bindings::__folio_lock(f) };
        // SAFETY: `alloc_pages`'s reference passes to `held`.
        let held = unsafe { folio::Folio::from_raw(f) };
        // The queue keeps a reference until its I/O is done, whenever the caller drops its own.
        let kept = Self::room(&mut self.pins, self.room_hint)
            .and_then(|p| p.push(held.clone(), GFP_KERNEL).map_err(Error::from));
        if let Err(e) = kept {
            // SAFETY: we locked it above, and it is in no bio.
            unsafe { bindings::folio_unlock(f) };
            return Err(e);
        }
        // SAFETY: locked, not uptodate, referenced by the queue until its I/O is done, read
        // whole (one page); its unlocking passes to the bio.
        unsafe { self.add(f, 0, PAGE_SIZE, pos, true) };
        self.zq().stats.shortlived.fetch_add(1, Ordering::Relaxed);
        // INVARIANT: a short-lived folio that only this queue's bio writes, before it is marked
        // uptodate, holding device byte `pos`.
        Ok(CFolio(held, pos))
    }

    /// Whether [`ZQueue::lend`] can read into file folios: on a block device.
    pub(crate) fn lends(&self) -> bool {
        matches!(self.target, Target::Bdev(_))
    }

    /// Whether the managed cache holds page `index` of the device (read or being read).
    pub(crate) fn cached(&self, index: u64) -> bool {
        let Ok(idx) = usize::try_from(index) else {
            return false;
        };
        // SAFETY: `mapping` is live (type invariant).
        let f = unsafe {
            sys::__filemap_get_folio_mpol(self.cache.mapping(), idx, 0, 0, core::ptr::null_mut())
        };
        let Ok(f) = kernel::error::from_err_ptr(f) else {
            return false;
        };
        // SAFETY: the lookup returned a reference, now ours, dropped here.
        drop(unsafe { folio::Folio::from_raw(f) });
        true
    }

    /// Reads page `index` of the device into page `page` of `folio`, a folio of the file being
    /// read, for a pcluster that is decoded over it (in-place I/O: `z_erofs_fill_bio_vec` given
    /// a file page). The queue keeps the folio, tagged `tag`, until its bios are done, and hands
    /// it to the work ([`ZWork::run`]), or unlocks it (not uptodate) if the queue has no work;
    /// no bio ends it. [`ZQueue::lend_more`] reads into its other pages. Only on a block device:
    /// else `folio` comes back, as when there is no memory to keep it or `page` is not one of
    /// its pages.
    pub(crate) fn lend(
        &mut self,
        tag: usize,
        folio: OutFolio,
        page: usize,
        index: u64,
    ) -> core::result::Result<(), OutFolio> {
        let Some(pos) = index.checked_mul(PAGE_SIZE as u64) else {
            return Err(folio);
        };
        // (Not a part: a bio would write all of the page, and another read may hold the
        // folio's other bytes.)
        if !matches!(self.target, Target::Bdev(_))
            || page >= folio.size() / PAGE_SIZE
            || folio.is_part()
        {
            return Err(folio);
        }
        let Ok(lent) = Self::room(&mut self.lent, self.room_hint) else {
            return Err(folio);
        };
        let f = folio.as_raw();
        if let Err(e) = lent.push_within_capacity((tag, folio)) {
            return Err(e.0 .1);
        }
        // SAFETY: a locked folio of a page cache of ours (never the managed cache's mapping,
        // nor none), held by the `OutFolio` just kept in `lent`: it stays locked and referenced
        // by that page cache until `lent` is dropped or handed to the work, which happens only
        // once `pending` is 0, i.e. after every bio naming it has completed (`finish`, and the
        // queue's drop, which finishes). The bio does not end it. `page` is one of its pages
        // (checked above).
        // OVERFLOW: `page` is below the folio's page count.
        unsafe { self.add(f, page * PAGE_SIZE, PAGE_SIZE, pos, false) };
        self.zq().stats.inplace.fetch_add(1, Ordering::Relaxed);
        Ok(())
    }

    /// Reads page `index` of the device into page `page` of the folio lent as `tag`
    /// ([`ZQueue::lend`]); `EINVAL` if there is no such folio or page.
    pub(crate) fn lend_more(&mut self, tag: usize, page: usize, index: u64) -> Result {
        let pos = index.checked_mul(PAGE_SIZE as u64).ok_or(EINVAL)?;
        // From the back: the folio lent last, as a pcluster's pages follow each other.
        let (_, folio) = self
            .lent
            .as_deref()
            .unwrap_or(&[])
            .iter()
            .rev()
            .find(|(t, _)| *t == tag)
            .ok_or(EINVAL)?;
        if page >= folio.size() / PAGE_SIZE {
            return Err(EINVAL);
        }
        let f = folio.as_raw();
        // SAFETY: as in `lend`: a folio of ours kept locked in `lent` until every bio naming it
        // has completed; `page` is one of its pages (checked above).
        // OVERFLOW: `page` is below the folio's page count.
        unsafe { self.add(f, page * PAGE_SIZE, PAGE_SIZE, pos, false) };
        self.zq().stats.inplace.fetch_add(1, Ordering::Relaxed);
        Ok(())
    }

    /// Reads bytes `off..off + size` of the locked folio `f` from byte `pos` of the device, up
    /// to the device's end (the rest of them is zeroed); the bio unlocks the folio if `owned`.
    ///
    /// # Safety
    ///
    /// `f` is a referenced, locked, not uptodate folio, and `off..off + size` lies in it. If
    /// `owned`, it is read whole (`off` 0, `size` its size) and its unlocking passes to this
    /// call: the device's page-cache folio at `pos`, or a short-lived folio nobody else sees,
    /// referenced until the queue's I/O is done. Else it is a folio of another page cache that
    /// its locker keeps locked until the queue's bios are done.
    unsafe fn add(
        &mut self,
        f: *mut bindings::folio,
        off: usize,
        size: usize,
        pos: u64,
        owned: bool,
    ) {
        let dev = self.dev_end;
        let mut len = size;
        if pos.saturating_add(size as u64) > dev {
            // Whole sectors of a device. A file is read a whole folio, as the C driver reads
            // whole pages (a direct read of a length off the file's block size would fail);
            // the read stops at the file's end, and its completion zeroes the rest.
            len = if pos >= dev {
                0
            } else {
                match self.target {
                    // CAST: less than `size` here.
                    Target::Bdev(_) => {
                        (dev - pos).next_multiple_of(bindings::SECTOR_SIZE.into()) as usize
                    }
                    Target::File { .. } => size,
                }
            };
        }
        if len == 0 {
            // Wholly past the device's end: we never ask for that; fail it as I/O would.
            if owned {
                // SAFETY: ours to unlock (the contract).
                unsafe { bindings::folio_unlock(f) };
            }
            self.fail(EIO);
            return;
        }
        if len < size {
            // SAFETY: we hold the folio locked; `off + len..off + size` is inside it (contract).
            // OVERFLOW: as that.
            unsafe { ffi::erofs_rs_glue_folio_zero_segment(f, off + len, off + size) };
        }
        if let Some(bio) = self.bio.as_mut() {
            // SAFETY: the folio follows the bio's last byte when `next_pos == pos`.
            if self.next_pos != pos || !unsafe { bio.add_folio(f, off, len) } {
                self.submit();
            }
        }
        if self.bio.is_none() {
            // SAFETY: the device lives with the superblock, beyond the I/O (type invariant: the
            // queue holds the superblock until its last bio completed), and a file read takes a
            // reference of its own to the file; `pos` is below its size (`len > 0`), so within
            // `loff_t`; the folio as above, of our managed cache or short-lived; the completion
            // takes the bio and finds this queue, which `pending` keeps alive.
            let bio = unsafe {
                match self.target {
                    Target::Bdev(bdev) => ReadBio::new(
                        bdev,
                        pos,
                        f,
                        off,
                        len,
                        zq_endio::<W>,
                        self.q.cast(),
                        self.rahead,
                    ),
                    // (Only owned folios, read whole: `lend` refuses a file.)
                    Target::File { file, direct } => {
                        ReadBio::new_file(file, direct, pos, f, len, zq_endio::<W>, self.q.cast())
                    }
                }
            };
            match bio {
                Ok(bio) => self.bio = Some(bio),
                Err(e) => {
                    if owned {
                        // SAFETY: not in a bio: still ours to unlock.
                        unsafe { bindings::folio_unlock(f) };
                    }
                    self.fail(e);
                    return;
                }
            }
        }
        self.next_pos = pos + len as u64;
        if len < size {
            // The device ends here: nothing can follow.
            self.submit();
        }
    }

    /// Ends submission and hands `work` over: it runs now, here, if no I/O is pending or the
    /// queue is sync (after waiting for it); else in a worker after the last bio.
    pub(crate) fn commit(mut self, work: KBox<W>) -> Committed {
        *self.zq().req.lock() = Some(work);
        self.finish()
    }

    /// Submits what is left and gives up the submitter's count.
    fn finish(&mut self) -> Committed {
        self.submit();
        let q = core::mem::replace(&mut self.q, core::ptr::null_mut());
        if q.is_null() {
            return Committed::Ran(Ok(()));
        }
        let pins = self.pins.take();
        let lent = self.lent.take();
        // SAFETY: we still hold our count (type invariant).
        // (What is replaced is `None`: nothing to free under the lock.)
        *unsafe { &*q }.pins.lock() = pins;
        // SAFETY: as above.
        *unsafe { &*q }.lent.lock() = lent;
        // SAFETY: we still hold our count (type invariant).
        let (sync, last) = unsafe {
            (
                (*q).sync.load(Ordering::Relaxed),
                (*q).pending.fetch_sub(1, Ordering::AcqRel) == 1,
            )
        };
        if !last {
            if !sync {
                // The last bio hands it to a worker, which may already be running and freeing
                // it: `q` must not be touched again.
                return Committed::Queued;
            }
            // SAFETY: a sync queue is not freed by its bios: the last one completes `done`.
            unsafe { bindings::wait_for_completion_io((*q).done.get()) };
        }
        // SAFETY: no I/O is pending and no worker has it: it is ours.
        Committed::Ran(unsafe { Zq::from_raw(q) }.run_now(How::Inline))
    }
}

impl<W: ZWork> Drop for ZQueue<'_, W> {
    fn drop(&mut self) {
        // An uncommitted queue with no work (an error while submitting): wait for its bios
        // here and free it, as a sync queue. A committed one left `q` null.
        if !self.q.is_null() {
            // ORDERING: published by `finish`'s AcqRel decrement of `pending`.
            self.zq().sync.store(true, Ordering::Relaxed);
        }
        let _ = self.finish();
    }
}

/// Latency histogram buckets: a quarter power of two of nanoseconds each.
const BUCKETS: usize = 64 * 4;

/// One latency histogram.
struct Hist {
    count: AtomicU64,
    sum_ns: AtomicU64,
    max_ns: AtomicU64,
    bucket: [AtomicU64; BUCKETS],
}

impl Hist {
    const fn new() -> Self {
        Hist {
            count: AtomicU64::new(0),
            sum_ns: AtomicU64::new(0),
            max_ns: AtomicU64::new(0),
            bucket: [const { AtomicU64::new(0) }; BUCKETS],
        }
    }

    fn bucket_of(ns: u64) -> usize {
        if ns < 4 {
            // CAST: below 4.
            return ns as usize;
        }
        let lg = ns.ilog2();
        // CAST: two bits.
        let frac = ((ns >> (lg - 2)) & 3) as usize;
        // CAST: `lg < 64`.
        (lg as usize * 4 + frac).min(BUCKETS - 1)
    }

    /// The lower edge of bucket `b`, in ns.
    fn bucket_ns(b: usize) -> u64 {
        // Buckets 4 to 7 stay empty (4 ns and up go to 8 and up); their edge is 4 ns, where
        // the quantile of bucket 3 ends.
        if b < 8 {
            return (b as u64).min(4);
        }
        (4 + (b as u64 & 3)) << (b / 4 - 2)
    }

    fn add(&self, ns: i64) {
        // CAST: durations measured forwards are not negative; clamp anyway.
        let ns = ns.max(0) as u64;
        // ORDERING: statistics only.
        self.count.fetch_add(1, Ordering::Relaxed);
        self.sum_ns.fetch_add(ns, Ordering::Relaxed);
        self.bucket[Self::bucket_of(ns)].fetch_add(1, Ordering::Relaxed);
        self.max_ns.fetch_max(ns, Ordering::Relaxed);
    }

    fn reset(&self) {
        for a in Iterator::chain(
            [&self.count, &self.sum_ns, &self.max_ns].into_iter(),
            self.bucket.iter(),
        ) {
            a.store(0, Ordering::Relaxed);
        }
    }

    /// The value at quantile `num/den`, as the upper edge of its bucket.
    fn quantile(&self, count: u64, num: u64, den: u64) -> u64 {
        let want = count.saturating_mul(num).div_ceil(den);
        let mut seen = 0u64;
        for (b, n) in self.bucket.iter().enumerate() {
            seen = seen.saturating_add(n.load(Ordering::Relaxed));
            if seen >= want && seen != 0 {
                return if b + 1 < BUCKETS {
                    Self::bucket_ns(b + 1)
                } else {
                    u64::MAX
                };
            }
        }
        0
    }

    fn show(&self, f: &mut fmt::Formatter<'_>, name: &str) -> fmt::Result {
        let count = self.count.load(Ordering::Relaxed);
        write!(f, "{name} count {count}")?;
        if let Some(mean) = self.sum_ns.load(Ordering::Relaxed).checked_div(count) {
            write!(
                f,
                " mean_ns {} p50_ns {} p90_ns {} p99_ns {} p999_ns {} max_ns {}",
                mean,
                self.quantile(count, 50, 100),
                self.quantile(count, 90, 100),
                self.quantile(count, 99, 100),
                self.quantile(count, 999, 1000),
                self.max_ns.load(Ordering::Relaxed)
            )?;
        }
        writeln!(f)
    }
}

/// A mount's decompression statistics, and its count of live queues.
#[pin_data]
struct Stats {
    /// Bio completion to decompression start: on the workqueue, on the kthreads.
    sched: [Hist; 2],
    /// Decompression time of one queue.
    decomp: Hist,
    /// Queues run, by [`How`].
    runs: [AtomicU64; 5],
    /// As the C driver's `sync_decompress`: 0 = auto (becomes 1 on the first bio completing
    /// in atomic context), 1 = force on (readahead of at most 12 KiB decompresses in the
    /// reader), 2 = force off. In debugfs, writable.
    sync_decompress: AtomicU32,
    /// The mount's `s_dev`, for the `erofs_rs_decompress` tracepoint.
    dev: u32,
    /// Device pages read into the file's own pages (in-place I/O), and into short-lived ones.
    inplace: AtomicU64,
    shortlived: AtomicU64,
    /// LZ4 pclusters decoded over their input, without a copy.
    lz4_inplace: AtomicU64,
    /// MicroLZMA and DEFLATE pclusters read in place and decoded from where they were read,
    /// without a copy of the whole stream; and the bytes of them copied aside
    /// where the output caught up with them.
    stream_inplace: AtomicU64,
    stream_copied: AtomicU64,
    /// Pclusters decoded in the submitter before its read's I/O completed, needing none of it
    /// (`z_erofs_runqueue`'s bypass queue: inline, fragment and cached data, holes).
    bypass: AtomicU64,
    /// Folios those handed back then.
    bypass_folios: AtomicU64,
    /// Pclusters a read left to another that reads them (`Z_EROFS_PCLUSTER_INFLIGHT`), and
    /// the folios it handed that read parts of.
    shared: AtomicU64,
    shared_folios: AtomicU64,
    /// The mount's live queues: here, because each queue holds these statistics already, so
    /// counting it costs no reference more.
    #[pin]
    inflight: Inflight,
}

/// The decompression queues of a superblock that are alive, from [`ZQueue::new`] until each has
/// run its work and is freed; the superblock's kill path waits for them ([`ZStats::drain`])
/// before it closes the devices their bios read and frees what their work ends. The mounted
/// superblock keeps the module loaded until then; what a worker runs of it after the count is
/// given back, module exit waits for (it destroys the workqueue and the kthread workers).
///
/// (The C driver has no such count: there, the locked folios of the read keep umount waiting,
/// as its inode eviction waits for them. Here a [`ZWork`] need hold none, and a queue's bios
/// may read only into short-lived folios and those of the managed cache.)
///
/// # Invariants
///
/// `count` is the number of live [`Hold`]s on this value, plus one while `held` is true. Once
/// it is zero it stays zero (no hold is taken from zero), and `drained` is completed.
#[pin_data]
struct Inflight {
    /// The live holds, and the superblock's own count.
    count: AtomicUsize,
    /// The superblock's own count, given up by its drain.
    held: AtomicBool,
    /// Completed when `count` reaches zero.
    #[pin]
    drained: Completion,
}

impl Inflight {
    /// No queue yet; the superblock's own count.
    fn new() -> impl PinInit<Self> {
        // INVARIANT: no hold; `held`, counted.
        pin_init!(Inflight {
            count: AtomicUsize::new(1),
            held: AtomicBool::new(true),
            drained <- Completion::new(),
        })
    }

    /// Counts one queue more, unless the count was drained (`refcount_inc_not_zero`).
    fn get(&self) -> bool {
        // ORDERING: taking a count orders nothing; giving one back does (`put`).
        let mut c = self.count.load(Ordering::Relaxed);
        loop {
            // (More queues than `usize` counts cannot be allocated; refused all the same.)
            let Some(n) = c.checked_add(1) else {
                return false;
            };
            if c == 0 {
                return false;
            }
            match self
                .count
                .compare_exchange_weak(c, n, Ordering::Relaxed, Ordering::Relaxed)
            {
                Ok(_) => return true,
                Err(now) => c = now,
            }
        }
    }

    /// Gives a count back; the last one completes `drained`.
    ///
    /// # Safety
    ///
    /// The caller holds a count, which it gives up.
    unsafe fn put(&self) {
        // ORDERING: AcqRel: what each holder did before giving its count back happens before
        // the last decrement, which the drain's wait then synchronises with.
        if self.count.fetch_sub(1, Ordering::AcqRel) == 1 {
            self.drained.complete_all();
        }
    }

    /// Gives up the superblock's own count (the first call), then waits until no queue is left.
    fn drain(&self) {
        // ORDERING: the swap only makes sure the count is given up once.
        if self.held.swap(false, Ordering::AcqRel) {
            // SAFETY: `held` was true: the superblock's count, given up once, here.
            unsafe { self.put() };
        }
        self.drained.wait_for_completion();
    }
}

/// A queue's count in its superblock's [`Inflight`], with the statistics that hold it; given
/// back when dropped.
///
/// # Invariants
///
/// This value holds one count of `self.0.inflight`.
struct Hold(Arc<Stats>);

impl Hold {
    /// Counts a queue of the superblock whose statistics are `stats`; `EIO` if its queues were
    /// drained (it is being killed).
    fn new(stats: &Arc<Stats>) -> Result<Self> {
        if !stats.inflight.get() {
            return Err(EIO);
        }
        // INVARIANT: the count just taken.
        Ok(Hold(stats.clone()))
    }
}

impl core::ops::Deref for Hold {
    type Target = Stats;

    fn deref(&self) -> &Stats {
        &self.0
    }
}

impl Drop for Hold {
    fn drop(&mut self) {
        // SAFETY: ours (type invariant), given up once. The statistics, and in them
        // `drained`, live until our reference goes, after this.
        unsafe { self.0.inflight.put() };
    }
}

impl Stats {
    /// Zero statistics, and no queue, of the mount of `s_dev` `dev`.
    fn new(dev: u32) -> impl PinInit<Self> {
        pin_init!(Stats {
            sched: [Hist::new(), Hist::new()],
            decomp: Hist::new(),
            runs: [const { AtomicU64::new(0) }; 5],
            sync_decompress: AtomicU32::new(0),
            dev,
            inplace: AtomicU64::new(0),
            shortlived: AtomicU64::new(0),
            lz4_inplace: AtomicU64::new(0),
            stream_inplace: AtomicU64::new(0),
            stream_copied: AtomicU64::new(0),
            bypass: AtomicU64::new(0),
            bypass_folios: AtomicU64::new(0),
            shared: AtomicU64::new(0),
            shared_folios: AtomicU64::new(0),
            inflight <- Inflight::new(),
        })
    }

    /// `decompress_latency`.
    fn show(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let r = |h: How| self.runs[h as usize].load(Ordering::Relaxed);
        writeln!(
            f,
            "runs inline {} workqueue {} kthread {} kthread_fallback {} completion {}",
            r(How::Inline),
            r(How::Workqueue),
            r(How::Kthread),
            r(How::Fallback),
            r(How::Completion)
        )?;
        writeln!(
            f,
            "pages inplace {} shortlived {} lz4_inplace {} stream_inplace {} stream_copied {}",
            self.inplace.load(Ordering::Relaxed),
            self.shortlived.load(Ordering::Relaxed),
            self.lz4_inplace.load(Ordering::Relaxed),
            self.stream_inplace.load(Ordering::Relaxed),
            self.stream_copied.load(Ordering::Relaxed)
        )?;
        writeln!(
            f,
            "bypass {} folios {}",
            self.bypass.load(Ordering::Relaxed),
            self.bypass_folios.load(Ordering::Relaxed)
        )?;
        writeln!(
            f,
            "shared {} folios {}",
            self.shared.load(Ordering::Relaxed),
            self.shared_folios.load(Ordering::Relaxed)
        )?;
        self.sched[0].show(f, "sched_workqueue")?;
        self.sched[1].show(f, "sched_kthread")?;
        self.decomp.show(f, "decompress")?;
        // Raw buckets, for plotting: name lower_edge_ns count.
        for b in 0..BUCKETS {
            let (w, k, d) = (
                self.sched[0].bucket[b].load(Ordering::Relaxed),
                self.sched[1].bucket[b].load(Ordering::Relaxed),
                self.decomp.bucket[b].load(Ordering::Relaxed),
            );
            if w != 0 || k != 0 || d != 0 {
                writeln!(f, "bucket {} {w} {k} {d}", Hist::bucket_ns(b))?;
            }
        }
        Ok(())
    }

    /// Writing anything to `reset` clears the statistics, not the setting.
    fn reset(&self) {
        self.sched[0].reset();
        self.sched[1].reset();
        self.decomp.reset();
        for r in &self.runs {
            r.store(0, Ordering::Relaxed);
        }
        self.inplace.store(0, Ordering::Relaxed);
        self.shortlived.store(0, Ordering::Relaxed);
        self.lz4_inplace.store(0, Ordering::Relaxed);
        self.stream_inplace.store(0, Ordering::Relaxed);
        self.stream_copied.store(0, Ordering::Relaxed);
        self.bypass.store(0, Ordering::Relaxed);
        self.bypass_folios.store(0, Ordering::Relaxed);
        self.shared.store(0, Ordering::Relaxed);
        self.shared_folios.store(0, Ordering::Relaxed);
    }
}

fn show_latency(s: &Arc<Stats>, f: &mut fmt::Formatter<'_>) -> fmt::Result {
    s.show(f)
}

fn write_reset(s: &Arc<Stats>, r: &mut UserSliceReader) -> Result {
    // The bytes written do not matter; take them all.
    let mut buf = [0u8; 64];
    while !r.is_empty() {
        let n = r.len().min(buf.len());
        r.read_slice(&mut buf[..n])?;
    }
    s.reset();
    Ok(())
}

fn show_sync(s: &Arc<Stats>, f: &mut fmt::Formatter<'_>) -> fmt::Result {
    writeln!(f, "{}", s.sync_decompress.load(Ordering::Relaxed))
}

fn write_sync(s: &Arc<Stats>, r: &mut UserSliceReader) -> Result {
    // As debugfs_create_u32's files: a number, decimal or 0x-prefixed hexadecimal.
    let mut buf = [0u8; 24];
    let n = r.len();
    if n >= buf.len() {
        return Err(EINVAL);
    }
    r.read_slice(&mut buf[..n])?;
    let text = core::str::from_utf8(&buf[..n]).map_err(|_| EINVAL)?.trim();
    let v = match text.strip_prefix("0x").or_else(|| text.strip_prefix("0X")) {
        Some(hex) => u32::from_str_radix(hex, 16),
        None => text.parse::<u32>(),
    }
    .map_err(|_| EINVAL)?;
    // As erofs_attr_store: above EROFS_SYNC_DECOMPRESS_FORCE_OFF (2) is EINVAL.
    if v > 2 {
        return Err(EINVAL);
    }
    s.sync_decompress.store(v, Ordering::Relaxed);
    Ok(())
}

/// Per-mount decompression statistics, in debugfs (`erofs_rs/<disk>/decompress_latency`,
/// `reset`, `sync_decompress`), removed with the mount.
pub(crate) struct ZStats {
    // Declared before `dir`: the files go first.
    _files: KVec<Pin<KBox<File<Arc<Stats>>>>>,
    /// The mount's debugfs directory (empty if debugfs is absent), for the acomp engine's file.
    pub(crate) dir: Dir,
    stats: Arc<Stats>,
}

impl ZStats {
    /// Creates the statistics of `sb`, in a debugfs directory named as the C driver's sysfs
    /// directory: the disk, or `major:minor` of a file-backed mount. Debugfs is optional:
    /// if it is absent or full, the statistics are only kept.
    pub(crate) fn new<T: FileSystem>(sb: &SuperBlock<'_, T, New>) -> Result<Self> {
        let rt = runtime(sb)?;
        // SAFETY: `s_dev` is set before `fill_super` runs and never changes.
        let stats = Arc::pin_init(Stats::new(unsafe { (*sb.as_ptr()).s_dev }), GFP_KERNEL)?;
        let name = sb.debugfs_name()?;
        let dir = rt.debugfs.subdir(&name);
        let mut files = KVec::with_capacity(3, GFP_KERNEL)?;
        files.push(
            KBox::pin_init(
                dir.read_callback_file(c"decompress_latency", stats.clone(), &show_latency),
                GFP_KERNEL,
            )?,
            GFP_KERNEL,
        )?;
        files.push(
            KBox::pin_init(
                dir.write_callback_file(c"reset", stats.clone(), &write_reset),
                GFP_KERNEL,
            )?,
            GFP_KERNEL,
        )?;
        files.push(
            KBox::pin_init(
                dir.read_write_callback_file(
                    c"sync_decompress",
                    stats.clone(),
                    &show_sync,
                    &write_sync,
                ),
                GFP_KERNEL,
            )?,
            GFP_KERNEL,
        )?;
        Ok(ZStats {
            _files: files,
            dir,
            stats,
        })
    }

    /// Whether readahead of at most 12 KiB decompresses in the reader: the mount's
    /// `sync_decompress` (debugfs) is 1, which it becomes on its own once a bio completes in
    /// atomic context, as in the C driver.
    pub(crate) fn sync_small_readahead(&self) -> bool {
        self.stats.sync_decompress.load(Ordering::Relaxed) == 1
    }

    /// Counts an LZ4 pcluster decoded over its input (in `decompress_latency`).
    pub(crate) fn note_lz4_inplace(&self) {
        self.stats.lz4_inplace.fetch_add(1, Ordering::Relaxed);
    }

    /// Counts a stream pcluster decoded from the pages it was read into, of which `copied`
    /// bytes were copied aside (in `decompress_latency`).
    pub(crate) fn note_stream_inplace(&self, copied: usize) {
        self.stats.stream_inplace.fetch_add(1, Ordering::Relaxed);
        // CAST: usize fits in u64.
        self.stats
            .stream_copied
            .fetch_add(copied as u64, Ordering::Relaxed);
    }

    /// Counts a pcluster left to another read, which was handed parts of `folios` folios (in
    /// `decompress_latency`).
    pub(crate) fn note_shared(&self, folios: u32) {
        self.stats.shared.fetch_add(1, Ordering::Relaxed);
        self.stats
            .shared_folios
            .fetch_add(u64::from(folios), Ordering::Relaxed);
    }

    /// The mount's `sync_decompress`, for its sysfs file (`vfs/sb_sysfs.rs`).
    pub(crate) fn sync_decompress(&self) -> &AtomicU32 {
        &self.stats.sync_decompress
    }

    /// Waits until every decompression queue of the superblock has run its work and is freed,
    /// and makes [`ZQueue::new`] fail from then on: for its kill path, before its devices
    /// close. Called with one of those queues alive in the caller, it waits forever.
    pub(crate) fn drain(&self) {
        self.stats.inflight.drain();
    }
}

/// The per-CPU kthread workers (`z_erofs_pcpu_workers`), shared by the mounts with
/// `decomp_pcpu_kthreads`: they start with the first such mount and stop with the last.
#[pin_data]
struct Pcpu {
    /// Mounts using the workers, and the hotplug state that keeps one per online CPU.
    #[pin]
    users: Mutex<(u32, Option<CpuhpState<PcpuHotplug>>)>,
    /// The worker of each CPU, or null: written under the hotplug callbacks' serialisation
    /// (and `users`), read under RCU; a worker is destroyed only after a grace period that
    /// follows clearing its slot.
    slots: KVec<AtomicPtr<bindings::kthread_worker>>,
}

impl Pcpu {
    fn new() -> Result<impl PinInit<Self, Error>> {
        // SAFETY: `nr_cpu_ids` is set before modules load and never changes after.
        let n = unsafe { bindings::nr_cpu_ids } as usize;
        let mut slots = KVec::with_capacity(n, GFP_KERNEL)?;
        for _ in 0..n {
            slots.push(AtomicPtr::new(core::ptr::null_mut()), GFP_KERNEL)?;
        }
        Ok(try_pin_init!(Pcpu {
            users <- new_mutex!((0, None), "erofs_rs_pcpu_users"),
            slots,
        }? Error))
    }

    /// Takes a user; the first starts the workers.
    fn get(&self) -> Result {
        let mut g = self.users.lock();
        if g.0 == 0 {
            g.1 = Some(CpuhpState::setup(c"fs/erofs_rs:online")?);
            pr_info!("per-CPU decompression workers started\n");
        }
        g.0 += 1;
        Ok(())
    }

    /// Drops a user; the last stops the workers (each finishes what it has queued first).
    fn put(&self) {
        let mut g = self.users.lock();
        if g.0 == 0 {
            return;
        }
        g.0 -= 1;
        if g.0 == 0 {
            // Runs `PcpuHotplug::offline` on every online CPU.
            g.1 = None;
            pr_info!("per-CPU decompression workers stopped\n");
        }
    }

    /// Queues `q` on the current CPU's worker, or gives it back if there is none.
    fn queue<W: ZWork>(&self, q: Pin<KBox<Zq<W>>>) -> core::result::Result<(), Pin<KBox<Zq<W>>>> {
        let _rcu = rcu::read_lock();
        // SAFETY: no preconditions.
        let cpu = unsafe { bindings::raw_smp_processor_id() } as usize;
        let w = self
            .slots
            .get(cpu)
            .map_or(core::ptr::null_mut(), |s| s.load(Ordering::Acquire));
        if w.is_null() {
            return Err(q);
        }
        // SAFETY: the worker is live: it is destroyed only a grace period after its slot is
        // cleared, and we read the slot under RCU. The queue's box is leaked to the work,
        // which `zq_kwork` takes back once; the box keeps the work valid until then.
        unsafe {
            let raw = KBox::into_raw(Pin::into_inner_unchecked(q));
            bindings::kthread_queue_work(w, (*raw).kwork.raw());
        }
        Ok(())
    }
}

/// The hotplug callbacks of the per-CPU workers (`erofs_cpu_online`, `erofs_cpu_offline`).
struct PcpuHotplug;

impl Hotplug for PcpuHotplug {
    fn online(cpu: u32) -> Result {
        let rt = runtime_for_hotplug().ok_or(ENODEV)?;
        let slot = rt.pcpu.slots.get(cpu as usize).ok_or(EINVAL)?;
        let w = KthreadWorker::run_on_cpu(cpu)?;
        let raw = w.into_raw();
        if slot
            .compare_exchange(
                core::ptr::null_mut(),
                raw,
                Ordering::AcqRel,
                Ordering::Acquire,
            )
            .is_err()
        {
            // SAFETY: not published: still only ours.
            drop(unsafe { KthreadWorker::from_raw(raw) });
        }
        Ok(())
    }

    fn offline(cpu: u32) {
        let Some(rt) = runtime_for_hotplug() else {
            return;
        };
        let Some(slot) = rt.pcpu.slots.get(cpu as usize) else {
            return;
        };
        let w = slot.swap(core::ptr::null_mut(), Ordering::AcqRel);
        // No new work reaches it after a grace period; what it has queued runs before it goes.
        rcu::synchronize_rcu();
        if !w.is_null() {
            // SAFETY: the slot held the worker's ownership, which the swap took.
            drop(unsafe { KthreadWorker::from_raw(w) });
        }
    }
}

/// A superblock's claim on the per-CPU kthread workers (`decomp_pcpu_kthreads`); dropping it
/// gives it up.
///
/// # Invariants
///
/// While `held` is true, this value holds one user of `rt`'s workers.
pub(crate) struct PcpuClaim {
    rt: &'static Runtime,
    held: AtomicBool,
}

impl PcpuClaim {
    /// No claim yet, for superblock `sb` being filled.
    pub(crate) fn new<T: FileSystem>(sb: &SuperBlock<'_, T, New>) -> Result<Self> {
        Ok(PcpuClaim {
            rt: runtime(sb)?,
            held: AtomicBool::new(false),
        })
    }

    /// Makes or gives up the claim.
    pub(crate) fn set(&self, on: bool) -> Result {
        // ORDERING: the flag only pairs gets with puts; the workers have their own lock.
        if on {
            if !self.held.swap(true, Ordering::AcqRel) {
                if let Err(e) = self.rt.pcpu.get() {
                    self.held.store(false, Ordering::Release);
                    return Err(e);
                }
            }
        } else if self.held.swap(false, Ordering::AcqRel) {
            self.rt.pcpu.put();
        }
        Ok(())
    }
}

impl Drop for PcpuClaim {
    fn drop(&mut self) {
        let _ = self.set(false);
    }
}

/// What compressed reads share module-wide: the workqueue, the per-CPU workers, and the
/// debugfs directory. Made by [`Runtime::start`] before the filesystem is registered, and gone
/// after it is unregistered.
#[pin_data]
pub(crate) struct Runtime {
    wq: OwnedQueue,
    debugfs: Dir,
    #[pin]
    pcpu: Pcpu,
}

/// The runtime while the module is loaded.
static RUNTIME: AtomicPtr<Runtime> = AtomicPtr::new(core::ptr::null_mut());

/// The runtime, for live superblock `sb`: a mounted filesystem pins the module, which owns the
/// runtime, so it outlives `sb`.
fn runtime<T, S>(_sb: &SuperBlock<'_, T, S>) -> Result<&'static Runtime> {
    let rt = RUNTIME.load(Ordering::Acquire);
    // SAFETY: non-null while the module's `RuntimeHandle` lives, which outlasts every
    // superblock and, by draining, every queue they made.
    (!rt.is_null()).then(|| unsafe { &*rt }).ok_or(ENODEV)
}

/// The runtime, in a hotplug callback of the per-CPU workers.
fn runtime_for_hotplug() -> Option<&'static Runtime> {
    let rt = RUNTIME.load(Ordering::Acquire);
    // SAFETY: the workers' hotplug state lives inside the runtime, which is published before it
    // is set up and unpublished only after it is removed (`RuntimeHandle::drop`).
    (!rt.is_null()).then(|| unsafe { &*rt })
}

/// The module's ownership of the [`Runtime`]: dropping it tears the runtime down.
pub(crate) struct RuntimeHandle {
    rt: Pin<KBox<Runtime>>,
}

impl Runtime {
    /// Starts the runtime and publishes it.
    pub(crate) fn start() -> Result<RuntimeHandle> {
        let rt = KBox::pin_init(
            try_pin_init!(Runtime {
                // Bound and high priority: the completing CPU decompresses what it read.
                wq: OwnedQueue::new_percpu_highpri(c"erofs_rs_worker")?,
                debugfs: Dir::new(c"erofs_rs"),
                pcpu <- Pcpu::new()?,
            }? Error),
            GFP_KERNEL,
        )?;
        RUNTIME.store(core::ptr::from_ref(&*rt).cast_mut(), Ordering::Release);
        Ok(RuntimeHandle { rt })
    }
}

impl Drop for RuntimeHandle {
    fn drop(&mut self) {
        // Every superblock is gone, so every claim on the workers too; should one be left (a
        // test that failed half-way), its hotplug state goes now, while the callbacks can
        // still find the runtime. Dropping the runtime then drains the workqueue.
        self.rt.pcpu.users.lock().1 = None;
        RUNTIME.store(core::ptr::null_mut(), Ordering::Release);
    }
}

/// Order-0 folios that decoders may write into when no page-cache folio of the read wants the
/// bytes, reused across the extents of a request.
///
/// # Invariants
///
/// Every pointer of `folios` is an order-0 folio this value owns (one reference), used by
/// nobody else.
pub(crate) struct BouncePool {
    /// In place for the first few (a request mostly needs one or two).
    folios: SmallVec<*mut bindings::folio, BOUNCE_FEW>,
}

/// Bounce folios a [`BouncePool`] keeps without an allocation.
const BOUNCE_FEW: usize = 4;

// SAFETY: the folios are private memory owned by the pool.
unsafe impl Send for BouncePool {}

impl BouncePool {
    /// An empty pool.
    pub(crate) fn new() -> Self {
        BouncePool {
            folios: SmallVec::new(),
        }
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
            if let Err(e) = self.folios.push(f) {
                // SAFETY: we own the only reference.
                unsafe { ffi::erofs_rs_glue_folio_put(f) };
                return Err(e);
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

/// Typestate of a [`PageMap`] of a pcluster's compressed input: folios of the managed cache or
/// short-lived ones ([`CFolio`]), read-only through the map.
pub(crate) struct Input;

/// Typestate of a [`PageMap`] of a decoder's output: folios that only this map writes.
pub(crate) struct Output;

/// A virtually contiguous mapping of whole pages, unmapped on drop: their direct-map address
/// when they lie side by side there (one page, or pages the allocator handed out in a row: the
/// C driver's `z_erofs_lz4_prepare_dstpages` shortcut), else a `vm_map_ram` of them. `K` says
/// what it maps ([`Input`] or [`Output`]), and only output maps are writable.
///
/// # Invariants
///
/// `addr` maps `count` pages that stay allocated while this value lives (the borrows of its
/// constructors pin them), through `vm_map_ram` when `vmapped`, else in the direct map. With
/// `K = Output`, no Rust code but this map reads or writes them: they are folios locked by our
/// read whose `mapped` flag this map set (they are in `_outs`), or bounce folios of a pool this
/// map borrows mutably.
pub(crate) struct PageMap<'a, K> {
    addr: *mut u8,
    count: usize,
    vmapped: bool,
    /// The folios whose `mapped` flag this map set, cleared when it drops.
    _outs: Marked<'a>,
    _p: PhantomData<K>,
}

/// A page of an output folio: the folio, and the page's index in it.
pub(crate) type OutPage<'a> = (&'a OutFolio, usize);

impl<'a> PageMap<'a, Output> {
    /// Maps output pages for a decoder: `pages[i]` is the page of a folio of the read that
    /// wants page `i` of the output, or `None` for a page nobody wants (a bounce folio from `pool`
    /// takes its place). Each folio must be locked by this read (which makes us its only
    /// writer), and not in another output map; its pages come in a row, in order, and only once
    /// (`EBUSY` otherwise: two mappings of one page in one map would alias).
    pub(crate) fn output(
        pages: &'a [Option<OutPage<'a>>],
        pool: &'a mut BouncePool,
    ) -> Result<Self> {
        // Every folio of `pages` is marked now, by us; clears them if we fail below.
        let outs = claim(pages, pool)?;
        let folios = PageIter::Out(pages, pool.folios.as_slice());
        // SAFETY: the folios are live for `'a`: locked folios of our read, now marked mapped
        // by us alone (an `OutFolio` is `!Sync`, so `mapped` is only read and set on this
        // thread), each page of them once (checked by `claim`), or bounce folios of `pool`,
        // borrowed mutably for `'a`, each once; every index is below its folio's page count.
        unsafe { map(folios.each(), pages.len(), outs) }
    }

    /// Bytes `range` of the map, writable; `None` if they do not lie in it.
    ///
    /// Only the range a decoder fills is borrowed: an acomp engine may be writing another
    /// pcluster's bytes into the same page (the last page of one pcluster is often the first
    /// of the next, and requests run while the reader decodes others in software).
    pub(crate) fn bytes_mut(&mut self, range: core::ops::Range<usize>) -> Option<&mut [u8]> {
        if range.start > range.end || range.end > self.count * PAGE_SIZE {
            return None;
        }
        // SAFETY: `addr` maps `count` pages (type invariant), and `range` lies in them. No Rust
        // code but this map touches those pages (type invariant, `K = Output`), and `&mut
        // self` makes this the only slice of them; an engine request writes only the bytes of
        // its own pcluster, which the caller's range excludes.
        Some(unsafe {
            core::slice::from_raw_parts_mut(self.addr.add(range.start), range.end - range.start)
        })
    }
}

/// Makes sure `pool` has a bounce folio for each `None` of output pages `pages`, and marks
/// their folios as mapped (see [`PageMap::output`]): each folio's pages come in a row, in
/// order, and only once, and no other map holds it (`EBUSY`); dropping the result clears the
/// marks.
fn claim<'a>(pages: &'a [Option<OutPage<'a>>], pool: &mut BouncePool) -> Result<Marked<'a>> {
    let bounces = pages.iter().filter(|p| p.is_none()).count();
    pool.reserve(bounces)?;
    // The page before, and its folio's number of pages.
    let mut prev: Option<(OutPage<'a>, usize)> = None;
    for (k, p) in pages.iter().enumerate() {
        let Some((o, idx)) = *p else {
            prev = None;
            continue;
        };
        // The next page of the folio the page before it is from: marked already, by us.
        let run =
            prev.filter(|((po, pi), _)| core::ptr::eq(*po, o) && pi.checked_add(1) == Some(idx));
        let next = run.is_some();
        let npages = run.map_or_else(|| o.size() / PAGE_SIZE, |(_, n)| n);
        prev = Some(((o, idx), npages));
        let err = if idx >= npages {
            EINVAL
        } else if next {
            continue;
        } else if o.mapped.get() || o.is_part() {
            // (A part's folio has bytes another read writes: no mapping of all of it.)
            EBUSY
        } else {
            o.mapped.set(true);
            continue;
        };
        // Those before it were all marked here (a second appearance of one of them not
        // right after its previous page would have stopped us there).
        drop(Marked(pages.get(..k).unwrap_or(&[])));
        return Err(err);
    }
    Ok(Marked(pages))
}

/// Pages for a stream decoder, as the runs of them that lie side by side in the direct map,
/// each a piece of the decoder's buffer: no `vm_map_ram` (C feeds its stream decoders page
/// by page, without mapping the pages together). `K` as for [`PageMap`]. For kernels without
/// highmem: [`PageRuns::pieces_mut`] and [`PageRuns::pieces`] fail on a page the direct map
/// does not hold.
///
/// # Invariants
///
/// `pages` are live folios for `'a` and an index below each one's number of pages, no page
/// twice. With `K = Output`, no
/// Rust code but this value reads or writes them, as for a [`PageMap<Output>`]: they are
/// folios locked by our read whose `mapped` flag this value set (`_outs`), or bounce folios
/// of a pool it borrows mutably.
pub(crate) struct PageRuns<'a, K> {
    pages: PageIter<'a>,
    /// The folios whose `mapped` flag this value set, cleared when it drops.
    _outs: Marked<'a>,
    _p: PhantomData<K>,
}

/// The pages of a [`PageRuns`].
enum PageIter<'a> {
    /// Output pages, and the bounce folios taking the place of the `None`s, in order.
    Out(&'a [Option<OutPage<'a>>], &'a [*mut bindings::folio]),
    /// Order-0 device folios.
    In(&'a [CFolio]),
}

impl PageIter<'_> {
    /// Each page, a folio and the index of the page in it, in order; `None` for a missing
    /// bounce folio.
    fn each(&self) -> impl Iterator<Item = Option<(*mut bindings::folio, usize)>> + Clone + '_ {
        let (out, bounce, input) = match self {
            PageIter::Out(o, b) => (*o, *b, &[][..]),
            PageIter::In(i) => (&[][..], &[][..], *i),
        };
        let mut bounce = bounce.iter();
        let out = out.iter().map(move |p| match p {
            Some((o, idx)) => Some((o.ptr, *idx)),
            None => bounce.next().map(|&f| (f, 0)),
        });
        Iterator::chain(out, input.iter().map(|f| Some((f.as_ptr(), 0))))
    }

    /// Calls `f` with each run of pages that lie side by side in the direct map: its address
    /// and its length in bytes. `EINVAL` if a page is in highmem (then `f` may have seen runs
    /// before it), if there are none or if a bounce folio is missing.
    ///
    /// # Safety
    ///
    /// The folios are live, and each index is below its folio's number of pages.
    unsafe fn runs(&self, mut f: impl FnMut(*mut u8, usize) -> Result) -> Result {
        // The run being gathered, and the folio of the page before with its address.
        let mut run: Option<(*mut u8, usize)> = None;
        let mut last: Option<(*mut bindings::folio, *mut u8)> = None;
        for p in self.each() {
            let (folio, idx) = p.ok_or(EINVAL)?;
            let head = match last {
                Some((lf, a)) if lf == folio => a,
                _ => {
                    // SAFETY: a live folio (contract).
                    let a = unsafe { ffi::erofs_rs_glue_folio_address(folio) }.cast::<u8>();
                    if a.is_null() {
                        return Err(EINVAL);
                    }
                    last = Some((folio, a));
                    a
                }
            };
            // A folio outside highmem lies in a row in the direct map; `idx` is one of its
            // pages (contract), so this stays in it.
            let a = head.wrapping_add(idx.checked_mul(PAGE_SIZE).ok_or(EINVAL)?);
            run = match run {
                // Right after the run before: it grows.
                Some((ra, rl)) if ra.addr().checked_add(rl) == Some(a.addr()) => {
                    Some((ra, rl.checked_add(PAGE_SIZE).ok_or(EINVAL)?))
                }
                Some((ra, rl)) => {
                    f(ra, rl)?;
                    Some((a, PAGE_SIZE))
                }
                None => Some((a, PAGE_SIZE)),
            };
        }
        let (ra, rl) = run.ok_or(EINVAL)?;
        f(ra, rl)
    }
}

impl<'a> PageRuns<'a, Output> {
    /// The output pages `pages` for a decoder, as [`PageMap::output`] takes them.
    pub(crate) fn output(
        pages: &'a [Option<OutPage<'a>>],
        pool: &'a mut BouncePool,
    ) -> Result<Self> {
        let outs = claim(pages, pool)?;
        // INVARIANT: live folios for `'a`: locked by our read (its `OutPage`s borrow them), or
        // the pool's, borrowed for `'a` (mutably, so no one else uses them), each once; every
        // index is below its folio's page count, each output page comes once, and its folio is
        // marked by us (`claim`); a bounce folio's index is 0.
        Ok(PageRuns {
            pages: PageIter::Out(pages, pool.folios.as_slice()),
            _outs: outs,
            _p: PhantomData,
        })
    }

    /// Puts bytes `range` of the runs (counted across them, one after the other), writable,
    /// into `v` (empty): the decoder's output buffer in pieces. `EINVAL` for a page in
    /// highmem, or a range past the pages' end.
    ///
    /// Only the range a decoder fills is borrowed, as [`PageMap::bytes_mut`]: an acomp engine
    /// may be writing another pcluster's bytes into the same page.
    pub(crate) fn pieces_mut<'s, const N: usize>(
        &'s mut self,
        range: core::ops::Range<usize>,
        v: &mut SmallVec<&'s mut [u8], N>,
    ) -> Result {
        if range.start > range.end {
            return Err(EINVAL);
        }
        // Where the next run starts.
        let mut pos = 0usize;
        let push = |addr: *mut u8, len: usize| {
            let end = pos.checked_add(len).ok_or(EINVAL)?;
            // The part of `range` in this run, from `lo` to `hi` in it.
            // OVERFLOW: clamped to `pos..=end`.
            let lo = range.start.clamp(pos, end) - pos;
            let hi = range.end.clamp(pos, end) - pos;
            pos = end;
            if lo == hi {
                return Ok(());
            }
            // SAFETY: bytes `lo..hi` of the `len` bytes of the direct map at `addr`, whole
            // pages of live folios, each in one run only; no other Rust code touches them (type
            // invariant), and `&mut self` makes these the only slices of them.
            v.push(unsafe { core::slice::from_raw_parts_mut(addr.add(lo), hi - lo) })
        };
        // SAFETY: live folios, indexes in them (type invariant).
        unsafe { self.pages.runs(push) }?;
        if range.end > pos {
            return Err(EINVAL);
        }
        Ok(())
    }
}

impl<'a> PageRuns<'a, Input> {
    /// The order-0 device folios holding a pcluster, to read it where it is.
    pub(crate) fn input(folios: &'a [CFolio]) -> Result<Self> {
        if folios
            .iter()
            .any(|f| f.size() != PAGE_SIZE || !f.0.test_uptodate())
        {
            return Err(EINVAL);
        }
        // INVARIANT: live for `'a`: referenced by the `CFolio`s, borrowed for `'a`; order-0
        // (checked above), so page 0 is their one page; read-only, so nothing is marked.
        Ok(PageRuns {
            pages: PageIter::In(folios),
            _outs: Marked(&[]),
            _p: PhantomData,
        })
    }

    /// Puts the runs, read-only, into `v` (empty): the stream in pieces; `EINVAL` for a page in
    /// highmem.
    ///
    /// These are device page-cache folios, which another opener of the device may write while
    /// we decode them (see [`PageMap::bytes`]).
    pub(crate) fn pieces<'s, const N: usize>(&'s self, v: &mut SmallVec<&'s [u8], N>) -> Result {
        let push = |addr: *mut u8, len| {
            // SAFETY: `len` bytes of the direct map at `addr`, whole pages of live folios
            // (type invariant), read-only here.
            v.push(unsafe { core::slice::from_raw_parts(addr.cast_const(), len) })
        };
        // SAFETY: live folios, indexes in them (type invariant).
        unsafe { self.pages.runs(push) }
    }
}

impl<'a> PageMap<'a, Input> {
    /// Maps the order-0 device folios holding a pcluster, to read it in place.
    pub(crate) fn input(folios: &'a [CFolio]) -> Result<Self> {
        if folios
            .iter()
            .any(|f| f.size() != PAGE_SIZE || !f.0.test_uptodate())
        {
            return Err(EINVAL);
        }
        let ptrs = folios.iter().map(|f| Some((f.as_ptr(), 0)));
        // SAFETY: live for `'a`: referenced by the `CFolio`s, borrowed for `'a`; order-0, so
        // page 0 is their one page.
        unsafe { map(ptrs, folios.len(), Marked(&[])) }
    }
}

impl<K> PageMap<'_, K> {
    /// The mapped bytes.
    ///
    /// For an [`Input`] map these are device page-cache folios, which another opener of a
    /// block device (or of a backing file) may write while we decode them, as the C driver's
    /// in-place decoding of the same pages allows (see [`CFolio`]).
    pub(crate) fn bytes(&self) -> &[u8] {
        // SAFETY: `addr` maps `count` pages (type invariant), read-only here.
        unsafe { core::slice::from_raw_parts(self.addr, self.count * PAGE_SIZE) }
    }
}

/// Maps the `count` pages `pages` yields side by side, each a folio and the index of the page in
/// it (a `None` fails the map); the map clears the `mapped` flag of `outs` on drop.
///
/// # Safety
///
/// The folios stay live for `'a`, and each index is below its folio's number of pages. With
/// `K = Output`, no Rust code but the returned map reads or writes those pages for `'a`, and
/// no page comes twice; `outs` are the [`OutFolio`]s among the folios, whose `mapped` flag
/// the caller set.
unsafe fn map<'a, K>(
    pages: impl Iterator<Item = Option<(*mut bindings::folio, usize)>> + Clone,
    count: usize,
    outs: Marked<'a>,
) -> Result<PageMap<'a, K>> {
    let n = u32::try_from(count).map_err(|_| EINVAL)?;
    if n == 0 || pages.clone().count() != count {
        return Err(EINVAL);
    }
    // SAFETY: the folios are live and the indexes in them (contract).
    if let Some(addr) = unsafe { direct(pages.clone()) } {
        // INVARIANT: by this function's contract; `direct` checked the pages lie side by side
        // in the direct map from `addr`.
        return Ok(PageMap {
            addr,
            count,
            vmapped: false,
            _outs: outs,
            _p: PhantomData,
        });
    }
    // The page array `vm_map_ram` takes: on the stack for a few pages (a pcluster's output
    // mostly is), as C's `z_erofs_decompress_pcluster` keeps small ones in `onstack_pages`.
    let mut ptrs = SmallVec::<*mut bindings::page, ONSTACK_PAGES>::new();
    // (One allocation for a big pcluster's pages, not one per doubling.)
    ptrs.reserve(count)?;
    for p in pages {
        let (f, idx) = p.ok_or(EINVAL)?;
        // SAFETY: a live folio (contract); `Folio` is transparent over `struct folio`.
        let f = unsafe { &*f.cast::<folio::Folio>() };
        // `folio_page(folio, idx)`: a folio's `struct page`s follow its first one.
        // SAFETY: `idx` is below the folio's number of pages (contract), so the pointer stays
        // in its array of pages.
        ptrs.push(unsafe { f.first_page().add(idx) })?;
    }
    let ptrs = ptrs.as_mut_slice();
    let no_node = bindings::NUMA_NO_NODE;
    // SAFETY: `ptrs` holds `n` pages of live folios.
    let mut addr = unsafe { sys::vm_map_ram(ptrs.as_mut_ptr(), n, no_node) };
    if addr.is_null() {
        // Lazily unmapped areas may hold the space: flush them and retry once, as
        // decompressor.c's `erofs_vm_map_ram` does.
        // SAFETY: no preconditions.
        unsafe { sys::vm_unmap_aliases() };
        // SAFETY: as above.
        addr = unsafe { sys::vm_map_ram(ptrs.as_mut_ptr(), n, no_node) };
    }
    if addr.is_null() {
        return Err(ENOMEM);
    }
    // INVARIANT: by this function's contract.
    Ok(PageMap {
        addr: addr.cast(),
        count,
        vmapped: true,
        _outs: outs,
        _p: PhantomData,
    })
}

/// Pages of a [`PageMap`] whose page array is kept on the stack (128 bytes).
const ONSTACK_PAGES: usize = 16;

/// The direct-map address of the first of `pages` (a folio and a page index in it, each) when
/// each of the others follows the one before it there: always so for pages in a row of one
/// folio, which the direct map holds in a row (the C driver's shortcut for output pages in
/// one large folio), never for highmem ones; `None` also if one is missing.
///
/// # Safety
///
/// The folios are live, and each index is below its folio's number of pages.
unsafe fn direct(
    pages: impl Iterator<Item = Option<(*mut bindings::folio, usize)>>,
) -> Option<*mut u8> {
    let mut first: Option<*mut u8> = None;
    // The folio of the page before, and its address: a large folio's pages come in a row.
    let mut last: Option<(*mut bindings::folio, *mut u8)> = None;
    for (i, p) in pages.enumerate() {
        let (f, idx) = p?;
        let head = match last {
            Some((lf, a)) if lf == f => a,
            _ => {
                // SAFETY: a live folio (contract).
                let a = unsafe { ffi::erofs_rs_glue_folio_address(f) }.cast::<u8>();
                if a.is_null() {
                    return None;
                }
                last = Some((f, a));
                a
            }
        };
        // A folio outside highmem lies in a row in the direct map; `idx` is one of its pages
        // (contract).
        let a = head.wrapping_add(idx.checked_mul(PAGE_SIZE)?);
        match first {
            None => first = Some(a),
            // Addresses compared as integers: no pointer is formed past the first page.
            Some(b) if a.addr().checked_sub(b.addr()) == i.checked_mul(PAGE_SIZE) => {}
            Some(_) => return None,
        }
    }
    first
}

impl<K> Drop for PageMap<'_, K> {
    fn drop(&mut self) {
        if self.vmapped {
            // CAST: `count` came from a u32 in `map`.
            // SAFETY: unmaps the mapping made in `map`, once.
            unsafe { sys::vm_unmap_ram(self.addr.cast_const().cast(), self.count as u32) };
        }
        // `_outs` clears the flags after this, once the pages are unmapped.
    }
}

/// Output folios (those of the `Some`s of the slice) whose `mapped` flag a
/// [`PageMap<Output>`] or [`PageRuns<Output>`] (being made, or made) set; dropping this clears
/// them.
struct Marked<'a>(&'a [Option<OutPage<'a>>]);

impl Drop for Marked<'_> {
    fn drop(&mut self) {
        for (o, _) in self.0.iter().flatten() {
            // INVARIANT: the map that set the flag is gone (or was never made).
            o.mapped.set(false);
        }
    }
}

#[kunit_tests(erofs_rs_pcpu)]
mod tests {
    use super::*;

    /// Online CPUs, and workers in the slots.
    fn counts(rt: &Runtime) -> (usize, usize) {
        // SAFETY: reads the kernel's count of online CPUs, an atomic.
        let online = unsafe { bindings::__num_online_cpus.counter } as usize;
        let workers = rt
            .pcpu
            .slots
            .iter()
            .filter(|s| !s.load(Ordering::Acquire).is_null())
            .count();
        (online, workers)
    }

    /// The per-CPU workers exist for each online CPU while a mount uses them, and stop with
    /// the last user.
    #[test]
    fn pcpu_workers_follow_users() -> Result {
        let rt = RUNTIME.load(Ordering::Acquire);
        assert!(!rt.is_null());
        // SAFETY: the module is loading and its runtime is up (tests run after `init`).
        let rt = unsafe { &*rt };
        // At load no mount uses them yet.
        assert_eq!(counts(rt).1, 0);
        rt.pcpu.get()?;
        rt.pcpu.get()?;
        let (online, with_two) = counts(rt);
        rt.pcpu.put();
        let with_one = counts(rt).1;
        rt.pcpu.put();
        // Asserted only now: a failed assertion does not return, and would leave the users.
        assert_eq!(with_two, online);
        assert_eq!(with_one, online);
        assert_eq!(counts(rt).1, 0);
        Ok(())
    }
}

#[kunit_tests(erofs_rs_zq)]
mod queue_tests {
    use super::*;
    use kernel::time::{
        delay::fsleep,
        Delta, //
    };

    /// Set by [`Late`] just before it gives its count back.
    static LATE_DONE: AtomicBool = AtomicBool::new(false);

    /// A queue's count, given back from a worker a while after the drain started: a queue
    /// whose work holds no folio, which nothing but its count ties to the superblock.
    #[pin_data]
    struct Late {
        #[pin]
        work: Work<Late>,
        hold: Hold,
    }

    impl_has_work! {
        impl HasWork<Self> for Late { self.work }
    }

    impl WorkItem for Late {
        type Pointer = Pin<KBox<Self>>;

        fn run(this: Pin<KBox<Self>>) {
            fsleep(Delta::from_millis(50));
            LATE_DONE.store(true, Ordering::Relaxed);
            drop(this);
        }
    }

    /// The drain waits for a hold given back later in a worker, then no hold can be taken,
    /// and a second drain returns at once with the count still zero.
    #[test]
    fn drain_waits_for_queues() -> Result {
        LATE_DONE.store(false, Ordering::Relaxed);
        let stats = Arc::pin_init(Stats::new(0), GFP_KERNEL)?;
        // Two holds, one given back at once.
        drop(Hold::new(&stats)?);
        let hold = Hold::new(&stats)?;
        let late = KBox::pin_init(
            pin_init!(Late {
                work <- new_work!("erofs_rs_kunit_late"),
                hold,
            }),
            GFP_KERNEL,
        )?;
        let q = OwnedQueue::new_percpu_highpri(c"erofs_rs_kunit_zq")?;
        q.enqueue(late);
        stats.inflight.drain();
        // ORDERING: the drain synchronised with the hold's release, after the store.
        let waited = LATE_DONE.load(Ordering::Relaxed);
        let refused = Hold::new(&stats).err();
        stats.inflight.drain();
        let count = stats.inflight.count.load(Ordering::Relaxed);
        drop(q);
        assert!(waited);
        assert_eq!(refused, Some(EIO));
        assert_eq!(count, 0);
        Ok(())
    }
}
