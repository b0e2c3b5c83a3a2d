// SPDX-License-Identifier: GPL-2.0-only
//! The page-cache folios a read fills and the folios it reads from: a locked folio being filled
//! ([`OutFolio`], split in parts when two reads fill it, as C's `z_erofs_onlinefolio_split`),
//! a readahead batch ([`Readahead`]), a page cache being read ([`PageCache`]) and a referenced
//! folio of compressed data ([`CFolio`]). C counterpart: the folio handling of
//! fs/erofs/zdata.c, over include/linux/pagemap.h.

use super::{
    ffi,
    folio,
    sys,
    RealInode, //
};
use core::{
    cell::Cell,
    marker::PhantomData,
    sync::atomic::{
        AtomicU32,
        Ordering, //
    },
};
use kernel::{
    bindings,
    page::PAGE_SIZE,
    prelude::*,
    sync::{
        aref::ARef,
        Arc,
        UniqueArc, //
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
    pub(super) ptr: *mut bindings::folio,
    /// Whether a [`PageMap<Output>`] or [`PageRuns<Output>`] holds the folio (set and cleared
    /// by it only).
    pub(super) mapped: Cell<bool>,
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
    pub(crate) fn cache(&self) -> Option<PageCache<'static>> {
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
/// `host` is the host inode of a page cache with our address space operations; this value
/// owns a reference to it if `held`, else it is live for `'a`.
pub(crate) struct PageCache<'a> {
    host: *mut bindings::inode,
    held: bool,
    _p: PhantomData<&'a ()>,
}

impl Drop for PageCache<'_> {
    fn drop(&mut self) {
        if self.held {
            // SAFETY: we own this reference (type invariant), dropped once.
            unsafe { bindings::iput(self.host) };
        }
    }
}

impl PageCache<'_> {
    /// References the page cache of `host`; `None` if the inode is being freed.
    ///
    /// # Safety
    ///
    /// `host` is live: the host of a page cache with our aops, during one of them.
    unsafe fn grab(host: *mut bindings::inode) -> Option<Self> {
        // SAFETY: `host` is live (contract).
        let host = unsafe { bindings::igrab(host) };
        // INVARIANT: `igrab` gave us a reference.
        (!host.is_null()).then_some(PageCache {
            host,
            held: true,
            _p: PhantomData,
        })
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

    /// The page cache being read ahead, for the readahead call: its host is live during it,
    /// so no reference is taken (an `igrab` and an `iput` cost a cold random read about 50
    /// instructions).
    pub(crate) fn cache(&self) -> PageCache<'a> {
        // INVARIANT: the host of a readahead is live during it, for `'a` (type invariant), with
        // our aops.
        PageCache {
            host: self.host(),
            held: false,
            _p: PhantomData,
        }
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
pub(crate) struct CFolio(pub(super) ARef<folio::Folio>, pub(super) u64);

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
