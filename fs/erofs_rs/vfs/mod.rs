// SPDX-License-Identifier: GPL-2.0-only
//! Our local stand-in for the missing `rust/kernel/fs`: safe wrappers over the superblock,
//! inodes, folios, dentries and directory contexts, plus the trampolines the C operation tables
//! call. All `unsafe` of the driver lives under this directory.
//!
//! Generic over the filesystem: a [`fs::FileSystem`] names its per-superblock data
//! ([`fs::FileSystem::Data`]) and per-inode data ([`fs::FileSystem::INodeData`]), and
//! [`SuperBlock<T>`](SuperBlock), [`Inode<T>`](Inode), [`InodeRef<T>`](InodeRef) and the other
//! handles carry the filesystem `T` in their type, which is how [`SuperBlock::data`] and
//! [`Inode::data`] know what they hold. Nothing here names the driver or its format.
//!
//! Lifetimes: a [`SuperBlock`], [`Inode`], [`LockedFolio`] or [`DirContext`] borrows a kernel
//! object for the duration of one VFS call, which is what keeps it alive. [`InodeRef`] owns one
//! inode reference. The filesystem's data of a superblock is attached in `fill_super`
//! ([`SuperBlock::attach`]), owned by `s_fs_info` from then on, and freed by `kill_sb` after
//! every inode is gone.

pub(crate) mod acomp;
mod bio;
pub(crate) mod cpu;
mod cpuhp;
pub(crate) mod decompress;
mod dir_ra;
mod export;
pub(crate) mod ffi;
pub(crate) mod fileio;
mod folio;
pub(crate) mod fs;
pub(crate) mod fs_context;
pub(crate) mod global;
mod inode_cache;
pub(crate) mod iomap;
mod ishare;
mod kthread;
mod kunit;
pub(crate) mod pagecache;
pub(crate) mod param;
pub(crate) mod queue;
mod sb_sysfs;
pub(crate) mod smallvec;
mod super_block;
mod sys;
pub(crate) mod sysfs;
mod tables;
pub(crate) mod trace;
mod trampolines;
pub(crate) mod vmap;
pub(crate) mod workers;
mod workqueue;
pub(crate) mod xattr;
mod zcache;

use core::{
    fmt,
    marker::PhantomData,
    ptr, //
};
use kernel::{
    bindings,
    error::code::*,
    ffi::c_void,
    page::{
        PAGE_SHIFT,
        PAGE_SIZE, //
    },
    prelude::*, //
};
pub(crate) use sb_sysfs::SbSysfs;
pub(crate) use super_block::{
    Log,
    New,
    Ready,
    SuperBlock, //
};
pub(crate) use tables::FileSystemType;

/// The module's registration of the filesystem type, with what its inodes need, and the
/// runtime compressed reads share; dropping it unregisters the filesystem and tears the rest
/// down, in the order of the fields.
///
/// Hold it in the module's state, dropped when the module unloads: a mounted superblock of
/// the type pins the module (the type's owner), so none is left then. The type does not stop
/// an earlier drop, which would destroy the inode cache and the pseudo filesystem under a
/// mounted superblock's inodes (an open soundness hole of this layer, issue 40).
pub(crate) struct Registration {
    _fs: FsType,
    /// After the filesystem: real inodes hold shared ones.
    _ishare: ishare::Mount,
    /// After every superblock, the pseudo filesystem's too: their inodes come from it.
    _cache: inode_cache::InodeCache,
    _sysfs: SysfsRoot,
    _rt: workers::RuntimeHandle,
}

/// Creates the inode cache, starts the runtime, mounts the pseudo filesystem of shared inodes
/// and registers the filesystem type `ty` (`erofs_module_init`), made by
/// [`FileSystemType::of`] in static storage.
pub(crate) fn register<T: fs::FileSystem + sysfs::Sysfs>(
    ty: &'static FileSystemType<T>,
) -> Result<Registration> {
    // What the module's threads, workqueue, slab cache and debugfs directory are named after,
    // as `pr_*!` name its log lines.
    let module = CStr::from_bytes_with_nul(crate::__LOG_PREFIX).map_err(|_| EINVAL)?;
    // First: there is one at a time, so a second registration fails here, before any effect.
    // The objects are `ErofsInode<T::INodeData>`: `ty`'s superblocks are `T`'s.
    // SAFETY: dropped with the `Registration`, after `_fs` and `_ishare` (field order), when
    // the module unloads (the type's doc), which no superblock of `ty` outlives: each pins
    // the module, `ty`'s owner (`FileSystemType::of`). Not enforced: see `Registration`.
    let cache = unsafe { inode_cache::InodeCache::new::<T::INodeData>(module) }?;
    // Before the filesystem can be mounted: mounts use it.
    let rt = workers::Runtime::start(module)?;
    let sysfs = SysfsRoot::new::<T>()?;
    // SAFETY: as for `cache`: dropped after `_fs` (field order), when the module unloads,
    // after every superblock of `ty` (and so every real inode) is gone.
    let ishare = unsafe { ishare::Mount::new(T::MAGIC) }?;
    // SAFETY: only this value's `InodeCache` lives (`InodeCache::new` fails while another
    // does), and each registration registers once.
    let fs = unsafe { FsType::register(ty) }?;
    Ok(Registration {
        _fs: fs,
        _ishare: ishare,
        _cache: cache,
        _sysfs: sysfs,
        _rt: rt,
    })
}

/// `/sys/fs/erofs_rs` ([`sysfs`]): made by `new`, removed by drop.
struct SysfsRoot(());

impl SysfsRoot {
    /// Makes the directory, the files of [`sysfs::Sysfs`] `T` and its `features/` (the module
    /// loads without them if that fails).
    fn new<T: sysfs::Sysfs>() -> Result<Self> {
        // SAFETY: module init, before the filesystem is registered; `Registration` holds the
        // only `SysfsRoot`, and dropping it undoes this once.
        to_result(unsafe { sysfs::init::<T>() })?;
        Ok(SysfsRoot(()))
    }
}

impl Drop for SysfsRoot {
    fn drop(&mut self) {
        // SAFETY: undoes `sysfs::init`, once, after the filesystem type is unregistered (field
        // order in `Registration`).
        unsafe { sysfs::exit() };
    }
}

/// A registered filesystem type (`erofs_fs_type`), named by the `fstype` module parameter.
///
/// # Invariants
///
/// The filesystem type `ty` is registered, by this value.
struct FsType {
    ty: *mut bindings::file_system_type,
}

// SAFETY: the pointer is that of a static, which the kernel and this value use under the
// kernel's locks.
unsafe impl Send for FsType {}
// SAFETY: `&FsType` gives no access to it.
unsafe impl Sync for FsType {}

impl FsType {
    /// Names and registers `ty`.
    ///
    /// # Safety
    ///
    /// No other [`FsType`] exists.
    unsafe fn register<T>(ty: &'static tables::FileSystemType<T>) -> Result<Self> {
        let fs_type = ty.as_ptr();
        // SAFETY: not registered (contract: the only `FsType`, and each registers once), so the
        // kernel does not use the struct yet; the parameter's string lives as long as the
        // module.
        unsafe { (*fs_type).name = ffi::erofs_rs_glue_fstype() };
        // SAFETY: a complete `file_system_type` in static storage (its lock class keys must be
        // static objects for lockdep).
        to_result(unsafe { bindings::register_filesystem(fs_type) })?;
        // INVARIANT: registered just above.
        Ok(FsType { ty: fs_type })
    }
}

impl Drop for FsType {
    fn drop(&mut self) {
        // SAFETY: registered by this value (type invariant), unregistered once. The module
        // cannot be unloaded while mounted, and a failed init leaves nothing mounted, so no
        // superblock of this type is left.
        unsafe { bindings::unregister_filesystem(self.ty) };
    }
}

/// The primary device: the page cache of a block device or of a backing file.
///
/// Metadata is read through the device's page cache (`erofs_bread`); file data of block-device
/// mounts with direct bios, as the C driver does (the bdev page cache cannot read the device's
/// last page when the device ends inside it).
///
/// A device holds what it reads through: a reference on the superblock's block-device file (or
/// on the backing file), not the superblock, so it stays sound even if it outlived the
/// superblock (it is an owned value that `fill_super` gets, and `kill_sb` drops after
/// `kill_block_super`, which then closes the device only once we let go of it).
///
/// # Invariants
///
/// Exactly one of `bdev_file` (a block-device superblock's `s_bdev_file`) and `file` (the
/// backing file of a file-backed mount) is not null; this value owns a reference to it.
/// `mapping` is that file's block device's (`bd_mapping`) or that file's address space, live as
/// long as the reference.
pub(crate) struct Device {
    bdev_file: *mut bindings::file,
    mapping: *mut bindings::address_space,
    file: *mut bindings::file,
    /// Bytes of the image: from `fsoff` to the end of the device or file.
    bytes: u64,
    /// Where the image starts in the device or file (`fsoffset=`).
    fsoff: u64,
    /// An inode whose data holds more of the filesystem's metadata (EROFS's metabox inode,
    /// `sbi->metabox_inode`), read through its page cache ([`RawSlot::read`]).
    pub(crate) metabox: RawSlot,
    /// The managed cache of compressed data (`sbi->managed_cache`).
    pub(crate) zcache: zcache::ManagedCache,
}

// SAFETY: the mapping and file are kernel objects usable from any thread; the reference to the
// file is released once, in `drop`.
unsafe impl Send for Device {}
// SAFETY: `read` only reads through the page cache, which has its own locking.
unsafe impl Sync for Device {}

impl Device {
    /// Builds the device of a superblock being filled, taking over `file`'s reference.
    ///
    /// # Safety
    ///
    /// `file` is null for a block-device superblock, else a referenced regular file whose
    /// reference passes to the returned value.
    pub(crate) unsafe fn new<T: fs::FileSystem>(
        sb: &SuperBlock<'_, T, New>,
        file: *mut bindings::file,
        fsoff: u64,
    ) -> Self {
        // SAFETY: per the contract, `sb` has `s_bdev` when `file` is null, else `file` is valid.
        let (mapping, total) = unsafe { sb.primary(file) };
        let bdev_file = if file.is_null() {
            // SAFETY: a block-device superblock (contract) in `fill_super` has the open file of
            // its device in `s_bdev_file` (`setup_bdev_super`), held until `kill_block_super`;
            // `get_file` takes a reference of ours on it.
            unsafe { bindings::get_file((*sb.as_ptr()).s_bdev_file) }
        } else {
            ptr::null_mut()
        };
        // INVARIANT: one of the two files is ours (`file` by the contract, `bdev_file` just
        // above); the mapping is that of the device or of the file, which our reference keeps.
        Device {
            bdev_file,
            mapping,
            file,
            bytes: total.saturating_sub(fsoff),
            fsoff,
            metabox: RawSlot::new(),
            zcache: zcache::ManagedCache::empty(),
        }
    }

    /// Reads `len` bytes at `pos` of the image on a block device into bytes `off..off + len`
    /// of `folio`, with a direct bio; `EINVAL` on a file-backed mount, or unless the position
    /// in the device and `len` are multiples of 512.
    ///
    /// # Safety
    ///
    /// `folio` is live for the call, `off..off + len` lies inside it, and nobody else reads,
    /// writes or maps those bytes until this returns.
    unsafe fn bdev_read(
        &self,
        pos: u64,
        folio: *mut bindings::folio,
        off: usize,
        len: usize,
    ) -> Result {
        let pos = pos.checked_add(self.fsoff).ok_or(EINVAL)?;
        if pos % 512 != 0 || len % 512 != 0 || self.is_file() {
            return Err(EINVAL);
        }
        if len == 0 {
            return Ok(());
        }
        // SAFETY: no backing file, so `bdev_file` is our referenced block-device file (type
        // invariant), whose device stays open while we hold it; the position and length are
        // whole sectors (checked above); the folio's bytes are ours alone by this function's
        // contract.
        unsafe {
            super_block::bdev_read_folio(bindings::file_bdev(self.bdev_file), pos, folio, off, len)
        }
    }

    /// Size of the image's part of the device in bytes.
    pub(crate) fn bytes(&self) -> u64 {
        self.bytes
    }

    /// Where the image starts in its device or file.
    pub(crate) fn fsoff(&self) -> u64 {
        self.fsoff
    }

    /// Whether this is a file-backed mount.
    pub(crate) fn is_file(&self) -> bool {
        !self.file.is_null()
    }

    /// Reads `n` bytes of file data at `pos` into bytes `off..off + n` of `folio`, a locked
    /// page-cache folio the caller fills (`erofs_read_folio` for mapped extents).
    ///
    /// Block devices are read with a bio straight into the folio, rounded up to whole sectors
    /// (which must still lie in the folio); the caller zeroes what lies past EOF.
    ///
    /// With `direct` (the `directio` option), a backing file is read with O_DIRECT when it
    /// allows it, straight into the folio, rounded up to whole sectors; without, the bytes are
    /// copied from its page cache, page by page.
    pub(crate) fn read_data(
        &self,
        pos: u64,
        folio: &mut impl FillFolio,
        off: usize,
        n: usize,
        direct: bool,
    ) -> Result {
        let einval = EINVAL;
        if self.is_file() && !direct {
            let mut done = 0usize;
            while done < n {
                let at = off.checked_add(done).ok_or(einval)?;
                let in_page = at % PAGE_SIZE;
                // OVERFLOW: `in_page < PAGE_SIZE` and `done < n`.
                let k = (PAGE_SIZE - in_page).min(n - done);
                let src = pos.checked_add(done as u64).ok_or(einval)?;
                // OVERFLOW: `in_page + k <= PAGE_SIZE`.
                folio.with_page_mut(at - in_page, |page| {
                    let dst = page.get_mut(in_page..in_page + k).ok_or(einval)?;
                    self.read(src, dst)
                })??;
                // OVERFLOW: `k <= n - done`.
                done += k;
            }
            return Ok(());
        }
        let len = n.checked_next_multiple_of(512).ok_or(einval)?;
        let raw = folio.dest(off, len)?;
        if self.is_file() {
            let abs = pos.checked_add(self.fsoff).ok_or(einval)?;
            // SAFETY: `file` is our referenced backing file (type invariant). `dest` returned
            // the folio with `off..off + len` inside it, and our `&mut` borrow of its holder
            // keeps those bytes ours alone, unmapped, until we return (`FillFolio`'s contract).
            let ret = unsafe { super_block::file_read_direct(self.file, abs, raw, off, len) }?;
            // A short read is fine only past the end of the file (the caller zeroes past EOF).
            if ret < n {
                return Err(EIO);
            }
            return Ok(());
        }
        // SAFETY: as above, for the folio's bytes.
        unsafe { self.bdev_read(pos, raw, off, len) }
    }

    /// Copies the bytes `pos..pos + buf.len()` of the image on a block device into `buf`,
    /// read with direct bios a page at a time into a private folio (the bdev page cache fails
    /// on a page that crosses the device's end).
    fn read_uncached(&self, pos: u64, buf: &mut [u8]) -> Result {
        let end = pos.checked_add(buf.len() as u64).ok_or(EINVAL)?;
        // SAFETY: no preconditions.
        let raw = unsafe { ffi::erofs_rs_glue_bounce_alloc() };
        if raw.is_null() {
            return Err(ENOMEM);
        }
        // SAFETY: a fresh folio, whose one reference passes to `bounce`.
        let bounce = unsafe { folio::Folio::from_raw(raw) };
        let mut at = pos & !511;
        while at < end {
            // CAST: PAGE_SIZE fits in u64.
            // OVERFLOW: `at < end`, the loop condition.
            let len = (end - at)
                .checked_next_multiple_of(512)
                .ok_or(EINVAL)?
                .min(PAGE_SIZE as u64);
            let next = at.checked_add(len).ok_or(EINVAL)?;
            // CAST: at most PAGE_SIZE.
            let len = len as usize;
            // SAFETY: `bounce` is a folio of one page that we allocated above, whose only
            // reference is ours, never shared, so nobody else reads, writes or maps it;
            // `0..len` lies in it.
            unsafe { self.bdev_read(at, bounce.as_ptr(), 0, len) }?;
            // The bytes of the piece that `buf` wants: `from..to`.
            let (from, to) = (at.max(pos), next.min(end));
            // CAST: offsets in `buf` (`pos <= from <= to <= end`), a usize's length, and in
            // the page (`at <= from < next`).
            // OVERFLOW: as just said.
            let dst = buf
                .get_mut((from - pos) as usize..(to - pos) as usize)
                .ok_or(EINVAL)?;
            bounce.copy_to((from - at) as usize, dst)?;
            at = next;
        }
        Ok(())
    }
}

impl Drop for Device {
    fn drop(&mut self) {
        for f in [self.file, self.bdev_file] {
            if !f.is_null() {
                // SAFETY: by the type invariant we own this reference, and drop runs once.
                unsafe { bindings::fput(f) };
            }
        }
    }
}

/// Calls `f(folio, off, done, n)` for each piece of the bytes `pos..pos + len` of `mapping`,
/// read through its page cache (`read_mapping_folio`): `n` bytes at `off` in `folio`, byte
/// `done` of the range. `f` may only copy them (see [`copy_cached`]).
///
/// # Safety
///
/// `mapping` is a live address space for the call, and `file` is null or the open file its
/// `read_folio` expects.
unsafe fn each_cached(
    mapping: *mut bindings::address_space,
    file: *mut bindings::file,
    pos: u64,
    len: usize,
    mut f: impl FnMut(&folio::Folio, usize, usize, usize) -> Result,
) -> Result {
    let mut done = 0usize;
    while done < len {
        let cur = pos.checked_add(done as u64).ok_or(EINVAL)?;
        // CAST: the remainder of a page is below PAGE_SIZE.
        let in_page = (cur & (PAGE_SIZE as u64 - 1)) as usize;
        // OVERFLOW: `in_page < PAGE_SIZE` and `done < len`.
        let n = (PAGE_SIZE - in_page).min(len - done);
        // SAFETY: by this function's contract.
        let folio = unsafe { folio::Folio::read_mapping(mapping, cur >> PAGE_SHIFT, file) }?;
        // CAST: `cur` lies in the folio, whose size fits in usize.
        // OVERFLOW: the folio of index `cur >> PAGE_SHIFT` starts at or before `cur`.
        let off = (cur - folio.pos()) as usize;
        f(&folio, off, done, n)?;
        // OVERFLOW: `n <= len - done`.
        done += n;
    }
    Ok(())
}

/// Copies the bytes `pos..pos + buf.len()` of `mapping`, read through its page cache
/// (`read_mapping_folio`), into `buf`.
///
/// The bytes are copied with [`folio::Folio::copy_to`], never borrowed: the page cache of a
/// block device or of a backing file is shared with its other openers, who may write it while
/// we read (the C driver parses such folios in place, `erofs_bread`; we only copy them).
///
/// # Safety
///
/// `mapping` is a live address space for the call, and `file` is null or the open file its
/// `read_folio` expects.
unsafe fn copy_cached(
    mapping: *mut bindings::address_space,
    file: *mut bindings::file,
    pos: u64,
    buf: &mut [u8],
) -> Result {
    let len = buf.len();
    let copy = |folio: &folio::Folio, off: usize, done: usize, n: usize| {
        // OVERFLOW: `done + n <= len`, the length of `buf` (`each_cached`).
        folio.copy_to(off, buf.get_mut(done..done + n).ok_or(EINVAL)?)
    };
    // SAFETY: by this function's contract.
    unsafe { each_cached(mapping, file, pos, len, copy) }
}

/// Appends the bytes `pos..pos + len` of `mapping`, read through its page cache, to `dst`, as
/// [`copy_cached`] copies them (with [`folio::Folio::append_to`]: no zeroed room first).
///
/// # Safety
///
/// As [`copy_cached`].
unsafe fn append_cached(
    mapping: *mut bindings::address_space,
    file: *mut bindings::file,
    pos: u64,
    len: usize,
    dst: &mut KVVec<u8>,
) -> Result {
    let append =
        |folio: &folio::Folio, off: usize, _: usize, n: usize| folio.append_to(off, n, dst);
    // SAFETY: by this function's contract.
    unsafe { each_cached(mapping, file, pos, len, append) }
}

impl Device {
    /// Where the bytes read through the page cache end, relative to the image: the bdev page
    /// cache fails on a page that crosses the device's end, whose tail is read directly.
    fn cached_end(&self) -> u64 {
        if self.is_file() {
            return u64::MAX;
        }
        // CAST: PAGE_SIZE fits in u64.
        // OVERFLOW: `bytes` is the device size less `fsoff` (saturating), so the sum is at
        // most the larger of the device size and `fsoff`.
        ((self.bytes + self.fsoff) & !(PAGE_SIZE as u64 - 1)).saturating_sub(self.fsoff)
    }

    /// Starts reading the page at `pos` into the block device's page cache, without waiting,
    /// unless it is cached already (`page_cache_ra_unbounded` skips cached pages). Only on a
    /// block device, and within its cached part.
    pub(crate) fn prefetch(&self, pos: u64) {
        if self.is_file() {
            return;
        }
        let page = PAGE_SIZE as u64;
        if pos
            .checked_add(page)
            .is_none_or(|end| end > self.cached_end())
        {
            return;
        }
        let Some(abs) = pos.checked_add(self.fsoff) else {
            return;
        };
        let Ok(index) = kernel::ffi::c_ulong::try_from(abs >> PAGE_SHIFT) else {
            return;
        };
        // `DEFINE_READAHEAD(ractl, NULL, NULL, mapping, index)`.
        // SAFETY: all-zero is a valid `readahead_control`, as C's designated initialiser.
        let mut ractl: bindings::readahead_control = unsafe { core::mem::zeroed() };
        ractl.mapping = self.mapping;
        ractl._index = index;
        // `filemap_invalidate_lock_shared(mapping)`, which `page_cache_ra_unbounded` asserts.
        // SAFETY: `mapping` is the bdev's (not a file-backed mount, checked above), live as
        // long as our reference to its file (type invariant).
        let lock = unsafe { &raw mut (*self.mapping).invalidate_lock };
        // SAFETY: `lock` is the live mapping's invalidate lock; released below.
        unsafe { bindings::down_read(lock) };
        // SAFETY: `mapping` is live (above) and its invalidate lock is held shared; a readahead
        // with no file and no readahead state reads the pages from `_index` that are not
        // cached, as `force_page_cache_ra` does for a bdev.
        unsafe { bindings::page_cache_ra_unbounded(&mut ractl, 1, 0) };
        // SAFETY: taken above, on this task.
        unsafe { bindings::up_read(lock) };
    }

    /// Appends the `len` bytes of the image at `pos` to `dst`, as [`Device::read`] reads them;
    /// from the page cache without zeroing `dst`'s room first. On error, `dst` may have grown.
    pub(crate) fn append(&self, pos: u64, len: usize, dst: &mut KVVec<u8>) -> Result {
        let end = pos.checked_add(len as u64);
        if end.is_some_and(|end| end <= self.bytes && end <= self.cached_end()) {
            let abs = pos.checked_add(self.fsoff).ok_or(EINVAL)?;
            // SAFETY: `mapping` is the bdev's or `file`'s, live as long as our reference to
            // that file (type invariant), and `file` is null or that file.
            return unsafe { append_cached(self.mapping, self.file, abs, len, dst) };
        }
        // The other cases (a device's tail, errors), as `read`.
        let start = dst.len();
        let grown = start.checked_add(len).ok_or(ENOMEM)?;
        dst.resize(grown, 0, GFP_KERNEL).map_err(|_| ENOMEM)?;
        self.read(pos, dst.get_mut(start..).ok_or(EINVAL)?)
    }

    /// Copies the bytes `pos..pos + buf.len()` of the image into `buf`, through the device's
    /// page cache (`erofs_bread`); `EIO` past its end.
    pub(crate) fn read(&self, pos: u64, buf: &mut [u8]) -> Result {
        let end = pos.checked_add(buf.len() as u64);
        if end.is_none_or(|end| end > self.bytes) {
            return Err(EIO);
        }
        // The bdev page cache fails on a page that crosses the device's end: read the tail of
        // such a device directly.
        if end.is_some_and(|end| end > self.cached_end()) {
            return self.read_uncached(pos, buf);
        }
        let abs = pos.checked_add(self.fsoff).ok_or(EINVAL)?;
        // SAFETY: as in `append`.
        unsafe { copy_cached(self.mapping, self.file, abs, buf) }
    }
}

/// An extra device given with `device=` (`struct erofs_device_info`).
///
/// Sound even if it outlived its superblock: a block device opened for `sb` is registered
/// with it (`fs_bdev_file_open_by_path`), and the registration holds a passive reference on
/// `sb` (`s_passive`) until [`super_block::release_device`] unregisters it, so `sb` stays
/// allocated for that call; a regular file needs nothing of `sb`.
///
/// # Invariants
///
/// `file` is a referenced file (a block device, or a regular file for file-backed mounts) that
/// this value owns, opened for `sb` by [`SuperBlock::open_device`]; `mapping` is its address
/// space.
pub(crate) struct ExtraDevice {
    sb: *mut bindings::super_block,
    file: *mut bindings::file,
    mapping: *mut bindings::address_space,
    bytes: u64,
}

// SAFETY: as for `Device`: kernel objects usable from any thread, the reference released once.
unsafe impl Send for ExtraDevice {}
// SAFETY: reads go through the page cache, which has its own locking.
unsafe impl Sync for ExtraDevice {}

impl ExtraDevice {
    /// Opens the `device=` device at `path`, from `fill_super` (a [`SuperBlock<New>`]).
    pub(crate) fn open<T: fs::FileSystem>(
        sb: &SuperBlock<'_, T, New>,
        path: &CStr,
        file_mode: bool,
    ) -> Result<Self> {
        let file = sb.open_device(path, file_mode).inspect_err(|e| {
            sb.err(format_args!("failed to open device {:?}: {:?}", path, e));
        })?;
        // SAFETY: `file` is a referenced file we now own.
        let (mapping, bytes) = unsafe { ((*file).f_mapping, super_block::file_bytes(file)) };
        // INVARIANT: we own the reference `open_device` returned, opened for `sb`.
        Ok(ExtraDevice {
            sb: sb.as_ptr(),
            file,
            mapping,
            bytes,
        })
    }

    /// Drops the clean, unmapped, unlocked pages of the device's page cache (`drop_caches`).
    pub(crate) fn drop_clean_pages(&self) {
        // SAFETY: the mapping lives as long as our reference to the file (type invariant);
        // this drops only pages nobody uses.
        unsafe { bindings::invalidate_mapping_pages(self.mapping, 0, kernel::ffi::c_ulong::MAX) };
    }

    /// Copies `buf.len()` bytes at `pos` of the device through its page cache; `EIO` past its
    /// end.
    pub(crate) fn read(&self, pos: u64, buf: &mut [u8]) -> Result {
        let end = pos.checked_add(buf.len() as u64);
        if end.is_none_or(|end| end > self.bytes) {
            return Err(EIO);
        }
        // SAFETY: `mapping` is the address space of `file`, which we hold (type invariant).
        unsafe { copy_cached(self.mapping, self.file, pos, buf) }
    }
}

impl Drop for ExtraDevice {
    fn drop(&mut self) {
        // SAFETY: by the type invariant we own this reference, opened for `sb`, which its
        // registration keeps allocated until this call; drop runs once.
        unsafe { super_block::release_device(self.file, self.sb) };
    }
}

/// The printk level of a log line.
#[derive(Clone, Copy)]
enum Level {
    /// `KERN_ERR`.
    Err,
    /// `KERN_INFO`.
    Info,
}

/// Prints a log line in the C driver's format, named after the module ("erofs_rs (device vdb):
/// message", or "erofs_rs: message" without a superblock), formatted by printk's `%pA` as the kernel's
/// `pr_*!` macros do, so nothing is cut.
///
/// # Safety
///
/// `sb` is null or a live superblock (whose `s_id` is set, as from `sget_fc` on).
unsafe fn log(sb: *mut bindings::super_block, level: Level, args: fmt::Arguments<'_>) {
    let fmt: &[u8] = match (level, sb.is_null()) {
        (Level::Err, false) => b"\x013%s (device %s): %pA\n\0",
        (Level::Info, false) => b"\x016%s (device %s): %pA\n\0",
        (Level::Err, true) => b"\x013%s: %pA\n\0",
        (Level::Info, true) => b"\x016%s: %pA\n\0",
    };
    // The module's name, as `pr_*!` prefix their lines (NUL-terminated by `module!`).
    let module = crate::__LOG_PREFIX.as_ptr();
    let args: *const c_void = core::ptr::from_ref(&args).cast();
    if sb.is_null() {
        // SAFETY: `fmt` is a NUL-terminated format with one `%s`, the module's NUL-terminated
        // name, and one `%pA`, whose argument must point to a `fmt::Arguments`
        // (`rust_fmt_argument`, rust/kernel/print.rs), which `args` does for the whole call.
        unsafe { bindings::_printk(fmt.as_ptr().cast(), module, args) };
    } else {
        // SAFETY: as above, with a second `%s`: `sb` is a live superblock (contract), whose
        // `s_id` is a NUL-terminated string (`sget_fc` and `bdev`/file names are copied with
        // `strscpy`).
        unsafe { bindings::_printk(fmt.as_ptr().cast(), module, (*sb).s_id.as_ptr(), args) };
    }
}

/// The marker of a kernel object of filesystem `T` borrowed for `'a` (covariant in both, and
/// `Send`/`Sync` whatever `T` is: the object is the kernel's).
pub(crate) type FsBorrow<'a, T> = PhantomData<(&'a (), fn() -> T)>;

/// Turns a C return code into a `Result`.
fn to_result(ret: i32) -> Result {
    if ret < 0 {
        Err(Error::from_errno(ret))
    } else {
        Ok(())
    }
}

/// What `iget5_locked` found.
pub(crate) enum Iget<'a, T: fs::FileSystem> {
    /// A cached, filled inode.
    Cached(InodeRef<T>),
    /// A new inode to fill.
    New(NewInode<'a, T>),
}

/// An owned reference to a filled inode of filesystem `T`.
///
/// # Invariants
///
/// `ptr` is a referenced inode of a superblock of `T` whose `T::INodeData` is written.
pub(crate) struct InodeRef<T: fs::FileSystem> {
    ptr: *mut bindings::inode,
    _t: PhantomData<fn() -> T>,
}

impl<T: fs::FileSystem> InodeRef<T> {
    /// Borrows the inode.
    pub(crate) fn inode(&self) -> Inode<'_, T> {
        // INVARIANT: we hold a reference, so it lives as long as `self` is borrowed.
        Inode {
            ptr: self.ptr,
            _p: PhantomData,
        }
    }

    /// Whether the inode is one of superblock `sb` (a filesystem may hand out an inode of
    /// another of its superblocks, which must not enter this one's dentries).
    fn is_of_sb(&self, sb: *mut bindings::super_block) -> bool {
        // SAFETY: a referenced inode (type invariant), whose `i_sb` never changes.
        unsafe { (*self.ptr).i_sb == sb }
    }

    /// Gives up ownership of the reference.
    pub(crate) fn into_raw(self) -> *mut bindings::inode {
        let p = self.ptr;
        core::mem::forget(self);
        p
    }
}

impl<T: fs::FileSystem> Drop for InodeRef<T> {
    fn drop(&mut self) {
        // SAFETY: we own one reference (type invariant), released once.
        unsafe { bindings::iput(self.ptr) };
    }
}

/// The inode whose metadata a page cache is read with (`erofs_real_inode`): the page cache's
/// own inode or, for a shared inode of `inode_share`, a real inode of the same content,
/// referenced until this value drops.
///
/// # Invariants
///
/// `ptr` is a live, filled inode of a superblock of `T`; when `held`, this value owns a
/// reference to it.
pub(crate) struct RealInode<T> {
    ptr: *mut bindings::inode,
    held: bool,
    _t: PhantomData<fn() -> T>,
}

impl<T: 'static> RealInode<T> {
    /// The real inode for page cache host `host`; `None` when a shared inode has no real inode
    /// left to read with, or when it is not an inode of `T`.
    ///
    /// # Safety
    ///
    /// `host` is live for the returned value's life: the host of a page cache with this
    /// layer's address space operations, during one of them.
    pub(crate) unsafe fn of(host: *mut bindings::inode) -> Option<Self> {
        // SAFETY: `host` is live (contract), one of our inodes or a shared inode, which all
        // come from `erofs_rs_alloc_inode`.
        let (ptr, held) = unsafe { ishare::real_inode(host) };
        if ptr.is_null() {
            return None;
        }
        // INVARIANT: the host itself (a filled inode of an attached superblock of this layer,
        // as only those and shared inodes get this layer's aops) or a real inode `igrab`
        // referenced; one of `T` once `is_of` below says so, else dropped at once (its drop
        // does not depend on `T`).
        let real = RealInode {
            ptr,
            held,
            _t: PhantomData,
        };
        // SAFETY: a filled inode's superblock is attached while the inode lives, which `real`
        // keeps it doing.
        unsafe { super_block::is_of::<T>((*ptr).i_sb) }.then_some(real)
    }

    /// Whether this is the page cache's own inode (not the real inode of a shared one, which
    /// the page cache's folios do not pin).
    pub(crate) fn is_host(&self) -> bool {
        !self.held
    }
}

impl<T: fs::FileSystem> RealInode<T> {
    /// Borrows the inode.
    pub(crate) fn inode(&self) -> Inode<'_, T> {
        // INVARIANT: live while `self` is borrowed (type invariant).
        Inode {
            ptr: self.ptr,
            _p: PhantomData,
        }
    }
}

impl<T> Drop for RealInode<T> {
    fn drop(&mut self) {
        if self.held {
            // SAFETY: we own this reference (type invariant), dropped once.
            unsafe { bindings::iput(self.ptr) };
        }
    }
}

/// An inode reference held for the superblock's life (the packed inode, `sbi->packed_inode`,
/// and the metabox inode, `sbi->metabox_inode`), given back in `put_super`, before the VFS
/// checks that no inode is left, or when `fill_super` fails; whatever filesystem it is of
/// ([`InodeSlot`] is the typed one).
///
/// [`InodeSlot::get`] hands out a reference of its own (`igrab`), so what it returned stays
/// valid whatever happens to the slot: [`RawSlot::release`] and [`RawSlot::set`] may run
/// concurrently with readers (a reader of another mount's shared inode may reach this
/// superblock's metadata through a real inode of it while it unmounts, see `ishare.rs`).
/// A `get` racing a `release` either takes its reference before the slot's is dropped, or
/// finds the slot empty, or finds the inode being freed (`igrab` refuses it): the inode's
/// memory is freed by `free_inode` only after an RCU grace period, and `get` looks at it
/// inside an RCU read-side section that began before the slot let go of it.
///
/// # Invariants
///
/// `ptr` is null or a referenced, filled inode of a superblock of this layer that this value
/// owns one reference to.
pub(crate) struct RawSlot {
    ptr: core::sync::atomic::AtomicPtr<bindings::inode>,
}

impl RawSlot {
    /// An empty slot.
    pub(crate) const fn new() -> Self {
        // INVARIANT: empty.
        RawSlot {
            ptr: core::sync::atomic::AtomicPtr::new(ptr::null_mut()),
        }
    }

    /// Holds `inode`, releasing what the slot held before.
    pub(crate) fn set<T: fs::FileSystem>(&self, inode: InodeRef<T>) {
        // ORDERING: `Release` publishes the filled inode to `grab`'s `Acquire`; `Acquire` pairs
        // with the `Release` of the store that put `old` here, before we drop it.
        let old = self
            .ptr
            .swap(inode.into_raw(), core::sync::atomic::Ordering::AcqRel);
        // INVARIANT: the slot took over `inode`'s reference.
        // SAFETY: `old` was in the slot (type invariant), which no longer holds it: its
        // reference is ours.
        unsafe { Self::put(old) };
    }

    /// A new reference to the inode, or null if the slot is empty (or its inode is being
    /// given back right now).
    fn grab(&self) -> *mut bindings::inode {
        // SAFETY: the slot holds only inodes of ours, which RCU frees, and owns a reference to
        // the one in it until it takes it out (type invariant).
        unsafe { slot_grab(&self.ptr) }
    }

    /// Copies bytes `pos..pos + buf.len()` of the data of the inode in the slot, through its
    /// page cache, into `buf`; `EFSCORRUPTED` for an empty slot or bytes past the inode's size.
    pub(crate) fn read(&self, pos: u64, buf: &mut [u8]) -> Result {
        let p = self.grab();
        if p.is_null() {
            return Err(EFSCORRUPTED);
        }
        // SAFETY: `p` is a referenced inode (the one `grab` took), live until the `put` below.
        let size = unsafe { ffi::erofs_rs_glue_i_size_read(p) };
        let ret = if pos
            .checked_add(buf.len() as u64)
            .is_none_or(|end| i64::try_from(end).map_or(true, |end| end > size))
        {
            Err(EFSCORRUPTED)
        } else {
            // SAFETY: the mapping of a referenced inode lives as long; our `read_folio`s take
            // no file.
            unsafe { copy_cached((*p).i_mapping, ptr::null_mut(), pos, buf) }
        };
        // SAFETY: the reference `grab` took, given back once.
        unsafe { Self::put(p) };
        ret
    }

    /// Drops the slot's reference, leaving it empty; references taken from it stay valid.
    pub(crate) fn release(&self) {
        // ORDERING: see `set`.
        let p = self
            .ptr
            .swap(ptr::null_mut(), core::sync::atomic::Ordering::AcqRel);
        // INVARIANT: the slot is empty.
        // SAFETY: `p` was in the slot (type invariant), which no longer holds it: its
        // reference is ours.
        unsafe { Self::put(p) };
    }

    /// Gives back `p`, a reference taken out of a slot, if not null.
    ///
    /// # Safety
    ///
    /// `p` is null or a referenced inode whose reference the caller owns and passes to this
    /// call.
    unsafe fn put(p: *mut bindings::inode) {
        if !p.is_null() {
            // SAFETY: by this function's contract.
            unsafe { bindings::iput(p) };
        }
    }
}

impl Drop for RawSlot {
    fn drop(&mut self) {
        self.release();
    }
}

/// A [`RawSlot`] of an inode of filesystem `T`.
///
/// # Invariants
///
/// The inode in `raw`, if any, is one of `T`.
pub(crate) struct InodeSlot<T: fs::FileSystem> {
    raw: RawSlot,
    _t: PhantomData<fn() -> T>,
}

impl<T: fs::FileSystem> InodeSlot<T> {
    /// An empty slot.
    pub(crate) const fn new() -> Self {
        InodeSlot {
            raw: RawSlot::new(),
            _t: PhantomData,
        }
    }

    /// Holds `inode`, releasing what the slot held before.
    pub(crate) fn set(&self, inode: InodeRef<T>) {
        // INVARIANT: an inode of `T`.
        self.raw.set(inode);
    }

    /// A reference to the inode, or `None` if the slot is empty (or its inode is being given
    /// back right now).
    pub(crate) fn get(&self) -> Option<InodeRef<T>> {
        let q = self.raw.grab();
        // INVARIANT: a new reference to a filled inode of `T` (type invariant).
        (!q.is_null()).then_some(InodeRef {
            ptr: q,
            _t: PhantomData,
        })
    }

    /// Drops the slot's reference, leaving it empty; references [`InodeSlot::get`] returned
    /// stay valid.
    pub(crate) fn release(&self) {
        self.raw.release();
    }
}

/// A new reference (`igrab`) to the inode in `slot`, or null if it is empty or its inode is
/// being freed. A slot's owner may take the inode out (and give its reference back)
/// concurrently: `slot_grab` either gets its reference before the slot's is dropped, or finds
/// the slot empty, or finds the inode being freed.
///
/// # Safety
///
/// `slot` is null or holds an inode whose memory is freed only after an RCU grace period
/// (`free_inode`, deferred by `destroy_inode`: every inode of our superblocks) and to which the
/// slot's owner holds a reference while it is in the slot, released only after taking it out.
unsafe fn slot_grab(slot: &core::sync::atomic::AtomicPtr<bindings::inode>) -> *mut bindings::inode {
    let _rcu = kernel::sync::rcu::read_lock();
    // ORDERING: pairs with the `Release` of the store that put the inode there: it is set up.
    let p = slot.load(core::sync::atomic::Ordering::Acquire);
    if p.is_null() {
        return p;
    }
    // SAFETY: `p` was in the slot within this RCU read-side section, so its memory stays valid
    // until the section ends: the slot's reference kept it alive until its owner took it out
    // (after our load or not), and it is freed only an RCU grace period after its last
    // reference went (contract). `igrab` takes a reference under `i_lock` unless the inode is
    // being freed (`I_FREEING`, `I_WILL_FREE`), and returns null then.
    unsafe { bindings::igrab(p) }
}

/// A locked `I_NEW` inode; dropping it unfilled calls `iget_failed`.
pub(crate) struct NewInode<'a, T: fs::FileSystem> {
    inode: Option<InodeRef<T>>,
    /// The kind [`NewInode::set_attrs`] set the inode up as (its fields and operation
    /// tables), once it ran.
    kind: Option<fs::InodeKind>,
    _p: PhantomData<&'a ()>,
}

/// The VFS fields of a new inode (`erofs_fill_inode`'s assignments), as the filesystem
/// decoded them.
pub(crate) struct InodeAttrs {
    /// `i_mode`: type and permission bits.
    pub(crate) mode: u16,
    /// Owner and group, in the initial user namespace.
    pub(crate) uid: u32,
    pub(crate) gid: u32,
    pub(crate) nlink: u32,
    /// `i_size`, stored as it is into the `loff_t`, as C does.
    pub(crate) size: u64,
    /// Modification time, also the change and access times.
    pub(crate) mtime: i64,
    pub(crate) mtime_nsec: u32,
    /// `i_blocks`, in 512-byte units.
    pub(crate) blocks: u64,
}

/// The `address_space_operations` a new inode's page cache gets: [`Aops::of`] an
/// [`fs::AddressSpace`], or iomap's for a [`fs::FileSystem`] ([`Aops::iomap`]), which only
/// block-device superblocks take ([`NewInode::set_attrs`]).
///
/// `T` is the filesystem whose inodes may get them: iomap's call `T`'s trampolines.
pub(crate) struct Aops<T> {
    ops: &'static bindings::address_space_operations,
    is_iomap: bool,
    _t: PhantomData<fn() -> T>,
}

impl<T: fs::FileSystem> Aops<T> {
    /// The operations of `A` (which find the inode a folio is read with, and check its type,
    /// themselves).
    pub(crate) fn of<A: fs::AddressSpace>() -> Self {
        Aops {
            ops: fs::aops::<A>(),
            is_iomap: false,
            _t: PhantomData,
        }
    }

    /// iomap's bios, mapped by `T`'s [`fs::FileSystem::iomap_map`].
    pub(crate) fn iomap() -> Self {
        Aops {
            ops: fs::Tables::<T>::iomap_aops(),
            is_iomap: true,
            _t: PhantomData,
        }
    }
}

impl<T: fs::FileSystem> NewInode<'_, T> {
    /// Sets the VFS fields and the operation tables of filesystem `T` for an inode of `kind`,
    /// with page-cache operations `aops` for inodes that have data (`erofs_fill_inode`).
    pub(crate) fn set_attrs(
        &mut self,
        attrs: &InodeAttrs,
        kind: fs::InodeKind,
        aops: Aops<T>,
    ) -> Result {
        let p = self.inode.as_ref().ok_or(EINVAL)?.ptr;
        // iomap reads bios of the superblock's block device: none on a file-backed mount.
        // SAFETY: a live inode's superblock is live; `s_bdev` is set before any inode.
        if aops.is_iomap && unsafe { (*(*p).i_sb).s_bdev }.is_null() {
            return Err(EINVAL);
        }
        let (iops, fops) = fs::Tables::<T>::inode_ops(kind);
        // SAFETY: `p` is a live, locked `I_NEW` inode this value holds: nobody else looks at
        // these fields until it is unlocked; the tables are static.
        unsafe { super_block::set_attrs(p, attrs, iops, fops, kind, aops.ops) };
        self.kind = Some(kind);
        Ok(())
    }

    /// Stores the filesystem's `data` of the inode and unlocks it, whose fields
    /// [`NewInode::set_attrs`] set (`EINVAL` if it did not).
    pub(crate) fn fill(self, data: T::INodeData) -> Result<InodeRef<T>> {
        self.finish(data, |_| None, None)
    }

    /// As [`NewInode::fill`]; then, before the inode is unlocked, `share` may return the
    /// page-cache fingerprint of a regular file (`inode_share`), whose reads then go through
    /// the shared inode of that fingerprint (`erofs_ishare_fill_inode`), with `T`'s file
    /// operations.
    pub(crate) fn fill_with(
        self,
        data: T::INodeData,
        share: impl FnOnce(Inode<'_, T>) -> Option<KVec<u8>>,
    ) -> Result<InodeRef<T>> {
        self.finish(data, share, Some(ishare::fops::<T>()))
    }

    /// Stores the inode's state, shares its page cache if `share` says so (its files then
    /// have `fops`), and unlocks it.
    fn finish(
        mut self,
        data: T::INodeData,
        share: impl FnOnce(Inode<'_, T>) -> Option<KVec<u8>>,
        fops: Option<&'static bindings::file_operations>,
    ) -> Result<InodeRef<T>> {
        let Some(kind) = self.kind else {
            // Dropped unfilled: `iget_failed`.
            return Err(EINVAL);
        };
        let r = self.inode.take().ok_or(EINVAL)?;
        // SAFETY: `r.ptr` is a referenced inode of a superblock of `T` (`InodeRef`'s
        // invariant), so allocated by `erofs_rs_alloc_inode` from the one inode cache, which
        // `register::<T>` made for `T::INodeData`; live while `r` is.
        let container = unsafe { inode_cache::ErofsInode::<T::INodeData>::from_inode(r.ptr) };
        // SAFETY: the inode is `I_NEW` and locked by us (`iget5_locked` made it), and not
        // filled yet: `finish` consumes `self`, and runs once.
        unsafe { container.set_info(data) };
        // SAFETY: `r.ptr` is live; `i_mode` was set by `set_attrs` and is not changed since.
        let mode = u32::from(unsafe { (*r.ptr).i_mode });
        // Only a regular file that got a regular file's tables has a page cache to share
        // (`set_attrs` gives a `Special` inode no aops, whatever its mode).
        let regular = mode & bindings::S_IFMT == bindings::S_IFREG && kind == fs::InodeKind::File;
        if let (true, Some(fops)) = (regular, fops) {
            if let Some(fp) = share(Inode {
                ptr: r.ptr,
                _p: PhantomData,
            }) {
                // SAFETY: `r.ptr` is a filled, locked `I_NEW` regular file of `T`, allocated by
                // `erofs_rs_alloc_inode`, whose VFS fields and aops `set_attrs` set (a `File`,
                // checked above).
                unsafe { ishare::fill(r.ptr, fp, fops) };
            }
        }
        // SAFETY: the inode is fully set up; this ends `I_NEW`.
        unsafe { bindings::unlock_new_inode(r.ptr) };
        Ok(r)
    }
}

impl<T: fs::FileSystem> Drop for NewInode<'_, T> {
    fn drop(&mut self) {
        if let Some(r) = self.inode.take() {
            let p = r.into_raw();
            // SAFETY: an unfilled `I_NEW` inode: `iget_failed` unlocks it and drops our ref.
            unsafe { bindings::iget_failed(p) };
        }
    }
}

/// An inode, borrowed for one VFS call.
///
/// # Invariants
///
/// `ptr` is a live, filled inode of a superblock of filesystem `T` for `'a`.
pub(crate) struct Inode<'a, T> {
    ptr: *mut bindings::inode,
    _p: FsBorrow<'a, T>,
}

impl<T> Clone for Inode<'_, T> {
    fn clone(&self) -> Self {
        *self
    }
}

impl<T> Copy for Inode<'_, T> {}

impl<'a, T: fs::FileSystem> Inode<'a, T> {
    /// # Safety
    ///
    /// `ptr` is a live, filled (not `I_NEW`) inode of a superblock of `T` for `'a`.
    pub(crate) unsafe fn from_raw(ptr: *mut bindings::inode) -> Self {
        // INVARIANT: by the caller's contract.
        Inode {
            ptr,
            _p: PhantomData,
        }
    }

    /// The superblock.
    pub(crate) fn sb(&self) -> SuperBlock<'a, T> {
        // SAFETY: a live inode's superblock outlives it, and that of a filled inode is
        // attached (an inode is filled only after `attach`); it is one of `T` (type invariant).
        unsafe { SuperBlock::from_raw((*self.ptr).i_sb) }
    }

    /// `i_mode`: the file type and permission bits.
    pub(crate) fn mode(&self) -> u32 {
        // SAFETY: a live, filled inode (type invariant): `i_mode` does not change after it is
        // filled.
        u32::from(unsafe { (*self.ptr).i_mode })
    }

    /// The filesystem's data of the inode ([`fs::FileSystem::INodeData`]).
    pub(crate) fn data(&self) -> &'a T::INodeData {
        // SAFETY: a filled inode of a superblock of `T` (type invariant): it comes from
        // `erofs_rs_alloc_inode`, of the one inode cache, which `register::<T>` made for
        // `T::INodeData`; it lives for `'a`, and its data was written before it was unlocked
        // (or, for the `I_NEW` inode `NewInode::fill_with` lends, just before).
        unsafe { inode_cache::ErofsInode::<T::INodeData>::from_inode(self.ptr).info() }
    }

    /// Copies the bytes `pos..pos + buf.len()` of this inode's data, through its own page
    /// cache, into `buf`.
    pub(crate) fn read_cached(&self, pos: u64, buf: &mut [u8]) -> Result {
        // SAFETY: a live inode has a mapping.
        let mapping = unsafe { (*self.ptr).i_mapping };
        // SAFETY: the mapping of a live inode (type invariant) lives as long; the `read_folio`s
        // of this layer's aops take no file (a special inode's has none: `EINVAL`).
        unsafe { copy_cached(mapping, ptr::null_mut(), pos, buf) }
    }

    /// Calls `f` with the bytes `pos..pos + len` of this inode's own page cache (which reads
    /// through our `read_folio`); the range must not cross a page.
    pub(crate) fn with_cached<R>(
        &self,
        pos: u64,
        len: usize,
        f: impl FnOnce(&[u8]) -> Result<R>,
    ) -> Result<R> {
        // CAST: the remainder of a page is below PAGE_SIZE.
        if ((pos & (PAGE_SIZE as u64 - 1)) as usize)
            .checked_add(len)
            .is_none_or(|end| end > PAGE_SIZE)
        {
            return Err(EINVAL);
        }
        // SAFETY: a live inode has a mapping.
        let mapping = unsafe { (*self.ptr).i_mapping };
        // SAFETY: as in `read_cached`.
        let folio =
            unsafe { folio::Folio::read_mapping(mapping, pos >> PAGE_SHIFT, ptr::null_mut()) }?;
        // CAST: `pos` lies in the folio, whose size fits in usize.
        // OVERFLOW: the folio of index `pos >> PAGE_SHIFT` starts at or before `pos`.
        let off = (pos - folio.pos()) as usize;
        // SAFETY: an uptodate folio (`read_mapping`) of this inode's own page cache, whose
        // aops are this layer's (`NewInode::set_attrs`): only their `read_folio`/`readahead`
        // write its folios, before they are uptodate, and the inodes of this layer have no
        // write or shared-writable mmap path; our reference keeps the memory if it is
        // truncated. `off..off + len` lies in one page (checked above).
        unsafe { folio.with_bytes(off, len, f) }?
    }
}

/// A locked folio being read, held for one `read_folio` call; dropping it unlocks it, not
/// uptodate, so no error path can leave it locked.
///
/// # Invariants
///
/// `ptr` is a locked, not uptodate folio, which this value will unlock (once: by
/// [`LockedFolio::end_read`], or on drop); it stays live while it is locked, and nobody but
/// this value's holder writes or maps it meanwhile (its locker fills it). If it is in a page
/// cache, that is the page cache of an inode of this layer whose aops are this layer's: a
/// filesystem's inode, or a shared inode (`inode_share`).
pub(crate) struct LockedFolio<'a> {
    ptr: *mut bindings::folio,
    _p: PhantomData<&'a ()>,
}

impl<'a> LockedFolio<'a> {
    /// # Safety
    ///
    /// `ptr` is a locked, not uptodate folio whose unlocking passes to the returned value, live
    /// while it is locked, and which nobody else writes or maps meanwhile: a folio passed to
    /// the `read_folio` of this layer's aops (of a filesystem's inode, or of a shared inode),
    /// or one outside any page cache that only the caller knows of.
    pub(crate) unsafe fn from_raw(ptr: *mut bindings::folio) -> Self {
        // INVARIANT: by the caller's contract.
        LockedFolio {
            ptr,
            _p: PhantomData,
        }
    }

    /// The inode to read the folio with: its page cache's inode, or a real one for a shared
    /// inode (`inode_share`); `None` if no real inode is left, or the folio is in no page
    /// cache.
    pub(crate) fn real_inode<T: 'static>(&self) -> Option<RealInode<T>> {
        // SAFETY: `ptr` is live (type invariant); a locked folio's `mapping` does not change.
        if unsafe { (*self.ptr).__bindgen_anon_1.__bindgen_anon_1.mapping }.is_null() {
            return None;
        }
        // SAFETY: a locked page-cache folio (type invariant: of an inode with this layer's
        // aops) keeps its host alive while we hold it.
        unsafe { RealInode::of(folio::host(self.ptr)) }
    }

    /// Byte position of the folio in its file.
    pub(crate) fn pos(&self) -> u64 {
        // SAFETY: `ptr` is live.
        unsafe { ffi::erofs_rs_glue_folio_pos(self.ptr) }
    }

    /// Size of the folio in bytes.
    pub(crate) fn size(&self) -> usize {
        // SAFETY: `ptr` is live.
        unsafe { ffi::erofs_rs_glue_folio_size(self.ptr) }
    }

    /// Calls `f` with the page at byte `off` of the folio, writable.
    pub(crate) fn with_page_mut<R>(
        &mut self,
        off: usize,
        f: impl FnOnce(&mut [u8]) -> R,
    ) -> Result<R> {
        // SAFETY: a live folio, locked by the reader that holds `self` (type invariant), which
        // is its only writer; `&mut self` keeps this the only mapping we make of it.
        unsafe { page_mut(self.ptr, off, f) }
    }

    /// Marks the folio uptodate (or not) and unlocks it.
    pub(crate) fn end_read(self, success: bool) {
        let this = core::mem::ManuallyDrop::new(self);
        // SAFETY: the folio is locked and ours to unlock (type invariant); `this` is consumed
        // and never dropped (`ManuallyDrop`), so it is unlocked once.
        unsafe { bindings::folio_end_read(this.ptr, success) };
    }
}

impl Drop for LockedFolio<'_> {
    fn drop(&mut self) {
        // SAFETY: the folio is locked and ours to unlock (type invariant), and `end_read` does
        // not drop its value, so this is the one unlocking.
        unsafe { bindings::folio_end_read(self.ptr, false) };
    }
}

/// Calls `f` with the page at byte `off` of `folio`, writable (`kmap_local_folio`); `EINVAL`
/// if `off` is not a page boundary inside it.
///
/// # Safety
///
/// `folio` is live and locked by the caller, who is its only writer, and makes no other mapping
/// of it while `f` runs.
unsafe fn page_mut<R>(
    folio: *mut bindings::folio,
    off: usize,
    f: impl FnOnce(&mut [u8]) -> R,
) -> Result<R> {
    // SAFETY: `folio` is live (contract).
    if off >= unsafe { ffi::erofs_rs_glue_folio_size(folio) } || off % PAGE_SIZE != 0 {
        return Err(EINVAL);
    }
    // SAFETY: `off` is a page boundary inside the folio.
    let addr = unsafe { ffi::erofs_rs_glue_kmap_local_folio(folio, off) };
    // SAFETY: `addr` maps one whole page of a locked folio that only the caller writes
    // (contract); the slice ends before the unmapping below.
    let page = unsafe { core::slice::from_raw_parts_mut(addr.cast::<u8>(), PAGE_SIZE) };
    let r = f(page);
    // SAFETY: unmaps the mapping made above, once.
    unsafe { bindings::kunmap_local(addr) };
    Ok(r)
}

/// A locked folio that a reader of uncompressed data fills page by page: [`LockedFolio`] in
/// `read_folio`, [`pagecache::OutFolio`] in readahead.
///
/// # Safety
///
/// An implementor holds a live folio locked and is the only writer of the bytes it fills:
/// when [`FillFolio::dest`] returns `Ok(folio)`, `folio` is that folio, `off..off + len` lies
/// inside it and among those bytes, and nothing maps, borrows or writes them except through
/// this value, so a device read into them while the caller keeps the value mutably borrowed
/// has them to itself (and the folio stays locked, and live).
pub(crate) unsafe trait FillFolio {
    /// The inode to read the folio with: its page cache's inode, or a real one for a shared
    /// inode (`inode_share`); `None` if no real inode is left, or it is not one of `T`.
    fn real_inode<T: 'static>(&self) -> Option<RealInode<T>>;
    /// Byte position of the folio in its file.
    fn pos(&self) -> u64;
    /// Size of the folio in bytes.
    fn size(&self) -> usize;
    /// Calls `f` with the page at byte `off` of the folio, writable.
    fn with_page_mut<R>(&mut self, off: usize, f: impl FnOnce(&mut [u8]) -> R) -> Result<R>;
    /// The folio, for a device read into its bytes `off..off + len` ([`Device::read_data`]):
    /// `EINVAL` if they are not all bytes this value fills, `EBUSY` while a mapping holds
    /// them.
    fn dest(&mut self, off: usize, len: usize) -> Result<*mut bindings::folio>;
}

// SAFETY: a `LockedFolio` holds its folio locked until it is consumed or dropped, and its
// reader fills all of it (type invariant); `dest` checks the range, and the only mappings
// are `with_page_mut`'s, which end before it returns and need `&mut self`.
unsafe impl FillFolio for LockedFolio<'_> {
    fn real_inode<T: 'static>(&self) -> Option<RealInode<T>> {
        LockedFolio::real_inode(self)
    }
    fn pos(&self) -> u64 {
        LockedFolio::pos(self)
    }
    fn size(&self) -> usize {
        LockedFolio::size(self)
    }
    fn with_page_mut<R>(&mut self, off: usize, f: impl FnOnce(&mut [u8]) -> R) -> Result<R> {
        LockedFolio::with_page_mut(self, off, f)
    }
    fn dest(&mut self, off: usize, len: usize) -> Result<*mut bindings::folio> {
        if off.checked_add(len).is_none_or(|end| end > self.size()) {
            return Err(EINVAL);
        }
        Ok(self.ptr)
    }
}

// SAFETY: an `OutFolio` holds its folio locked until it ends, and no other part writes its
// bytes (type invariant); its `dest` refuses bytes that are not its own, and any while an
// output map holds the folio (`mapped`); its other accesses to the folio's memory go through
// `&mut self` (`with_page_mut`, `zero`) or `&self` (`write`, `append_to`), which the caller's
// `&mut` borrow excludes while the read runs.
unsafe impl FillFolio for pagecache::OutFolio {
    fn real_inode<T: 'static>(&self) -> Option<RealInode<T>> {
        pagecache::OutFolio::real_inode(self)
    }
    fn pos(&self) -> u64 {
        pagecache::OutFolio::pos(self)
    }
    fn size(&self) -> usize {
        pagecache::OutFolio::size(self)
    }
    fn with_page_mut<R>(&mut self, off: usize, f: impl FnOnce(&mut [u8]) -> R) -> Result<R> {
        pagecache::OutFolio::with_page_mut(self, off, f)
    }
    fn dest(&mut self, off: usize, len: usize) -> Result<*mut bindings::folio> {
        pagecache::OutFolio::dest(self, off, len)
    }
}

/// A directory iteration in progress, borrowed for one `iterate_shared` call.
///
/// # Invariants
///
/// `file` and `ctx` are the live arguments of `iterate_shared`.
pub(crate) struct DirContext<'a, T> {
    file: *mut bindings::file,
    ctx: *mut bindings::dir_context,
    _p: FsBorrow<'a, T>,
}

impl<'a, T: fs::FileSystem> DirContext<'a, T> {
    /// # Safety
    ///
    /// `file` and `ctx` are the arguments of an `iterate_shared` call on a directory of `T`,
    /// live for `'a`.
    pub(crate) unsafe fn from_raw(
        file: *mut bindings::file,
        ctx: *mut bindings::dir_context,
    ) -> Self {
        // INVARIANT: by the caller's contract.
        DirContext {
            file,
            ctx,
            _p: PhantomData,
        }
    }

    /// The directory.
    pub(crate) fn inode(&self) -> Inode<'a, T> {
        // SAFETY: an open directory file holds a filled inode, of `T` (type invariant).
        unsafe { Inode::from_raw((*self.file).f_inode) }
    }

    /// The current position (`ctx->pos`).
    pub(crate) fn pos(&self) -> i64 {
        // SAFETY: `ctx` is live.
        unsafe { (*self.ctx).pos }
    }

    /// Sets `ctx->pos`.
    pub(crate) fn set_pos(&mut self, pos: i64) {
        // SAFETY: `ctx` is live.
        unsafe { (*self.ctx).pos = pos };
    }

    /// Emits one entry; false when the caller's buffer is full.
    pub(crate) fn emit(&mut self, name: &[u8], ino: u64, ftype: u8) -> bool {
        // CAST: names are at most 255 bytes (checked by the core).
        // SAFETY: `name` is readable for its length; `ctx` is live.
        unsafe {
            ffi::erofs_rs_glue_dir_emit(self.ctx, name.as_ptr(), name.len() as u32, ino, ftype)
        }
    }

    /// Emits "." (for directories that omit it on disk); false when the buffer is full.
    pub(crate) fn emit_dot(&mut self) -> bool {
        // `dir_emit_dot()`: the directory's own inode number, as a directory.
        // SAFETY: an open directory file holds its inode.
        let ino = unsafe { (*(*self.file).f_inode).i_ino };
        // CAST: `FT_DIR` is 2.
        self.emit(b".", ino, bindings::FT_DIR as u8)
    }
}

/// A dentry, borrowed for one VFS call.
///
/// # Invariants
///
/// `ptr` is a live, positive dentry of a superblock of filesystem `T` for `'a`.
pub(crate) struct Dentry<'a, T> {
    ptr: *mut bindings::dentry,
    _p: FsBorrow<'a, T>,
}

impl<T> Clone for Dentry<'_, T> {
    fn clone(&self) -> Self {
        *self
    }
}

impl<T> Copy for Dentry<'_, T> {}

impl<'a, T: fs::FileSystem> Dentry<'a, T> {
    /// # Safety
    ///
    /// `ptr` is a live, positive dentry of a superblock of `T` for `'a`.
    pub(crate) unsafe fn from_raw(ptr: *mut bindings::dentry) -> Self {
        // INVARIANT: by the caller's contract.
        Dentry {
            ptr,
            _p: PhantomData,
        }
    }

    /// Its inode.
    pub(crate) fn inode(&self) -> Inode<'a, T> {
        // SAFETY: a positive dentry of `T` has a live, filled inode of `T`.
        unsafe { Inode::from_raw((*self.ptr).d_inode) }
    }

    /// The prefix listxattr shows for namespace `ns`, or `None` when the caller may not list it
    /// (`erofs_xattr_prefix`).
    pub(crate) fn xattr_prefix(&self, ns: xattr::Namespace) -> Option<&'static [u8]> {
        xattr::prefix(*self, ns)
    }
}

/// Whether the current task has a fatal signal pending.
pub(crate) fn fatal_signal_pending() -> bool {
    // SAFETY: no preconditions.
    unsafe { ffi::erofs_rs_glue_fatal_signal_pending() }
}

/// Yields the CPU if needed.
pub(crate) fn cond_resched() {
    // SAFETY: no preconditions: it schedules only where preemption is allowed
    // (`should_resched(0)`). (Calling it in an RCU read-side section of a kernel without
    // preemption counting would be sleeping in atomic context, which Rust-for-Linux leaves
    // to klint, not to the types.)
    unsafe { ffi::erofs_rs_glue_cond_resched() };
}

/// The kernel's xxHash32 (`xxh32(bytes, len, seed)`), for the xattr name filter.
pub(crate) fn xxh32(bytes: &[u8], seed: u32) -> u32 {
    // SAFETY: `bytes` is readable for its length.
    unsafe { sys::xxh32(bytes.as_ptr().cast::<c_void>(), bytes.len(), seed) }
}

/// The kernel's crc32c (`crc32c(seed, bytes)`, no final inversion), for the superblock check.
pub(crate) fn crc32c(seed: u32, bytes: &[u8]) -> u32 {
    // SAFETY: `bytes` is readable for its length.
    unsafe { sys::crc32c(seed, bytes.as_ptr().cast::<c_void>(), bytes.len()) }
}
