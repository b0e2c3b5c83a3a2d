// SPDX-License-Identifier: GPL-2.0-only
//! iomap (`include/linux/iomap.h`): the mapping a filesystem hands iomap, and the entry points
//! that go through it. Block-device mounts read uncompressed data with iomap's bios
//! (`read_folio`, `readahead`, `O_DIRECT`); every mount reports extents through it (FIEMAP,
//! `bmap`, SEEK_DATA/SEEK_HOLE). Also `getattr`, which reports the `O_DIRECT` alignment.
//! C counterpart: fs/erofs/data.c, and `erofs_getattr` in fs/erofs/inode.c.
//!
//! The iomap operations (`IomapOps<T>`) are here; the regular files' `file_operations` and the
//! block-device mounts' `address_space_operations`, which name the other trampolines of this
//! file, are in `tables.rs`.

use super::{
    ffi,
    fs::{
        FileSystem,
        StatAttrs, //
    },
    sys,
    ExtraDevice,
    Inode,
    RealInode, //
};
use core::ptr::{
    self,
    NonNull, //
};
use kernel::{
    bindings,
    error::from_result,
    ffi::{
        c_int,
        c_uint,
        c_void, //
    },
    iov::IovIterDest,
    page::PAGE_SIZE,
    prelude::*,
    types::Opaque, //
};

/// What an extent holds.
#[derive(Clone, Copy, PartialEq, Eq)]
pub(crate) enum ExtentKind {
    /// Nothing: reads as zeroes (`IOMAP_HOLE`).
    Hole,
    /// Data at `pa` on a device (`IOMAP_MAPPED`).
    Mapped,
    /// Data inline in the metadata at `pa` (`EROFS_MAP_META`, `IOMAP_INLINE`).
    Meta,
}

/// One extent of a file, as the driver maps it for iomap (`struct erofs_map_blocks` and the
/// device `erofs_map_dev` finds for it).
#[derive(Clone, Copy)]
pub(crate) struct Extent<'a> {
    /// Where the extent starts in the file.
    pub(crate) la: u64,
    /// Its length in the file.
    pub(crate) llen: u64,
    /// Its byte address on its device, or `u64::MAX` for none (`IOMAP_NULL_ADDR`).
    pub(crate) pa: u64,
    /// What it holds.
    pub(crate) kind: ExtentKind,
    /// The extra device (`device=`) that holds `pa`, or `None` for the primary device.
    pub(crate) dev: Option<&'a ExtraDevice>,
}

/// The mapping of one range of a file, which `iomap_begin` fills (`struct iomap`).
///
/// # Invariants
///
/// The wrapped `iomap` is the one an `iomap_begin` callback was given to fill; an `Iomap` is
/// only reached through a `&mut` that lasts no longer than that callback.
#[repr(transparent)]
pub(crate) struct Iomap(Opaque<sys::iomap>);

impl Iomap {
    /// # Safety
    ///
    /// `ptr` is the `iomap` argument of a running `iomap_begin` call, accessed only through the
    /// returned reference while it lives, and `'a` ends before that call returns.
    unsafe fn from_raw<'a>(ptr: *mut sys::iomap) -> &'a mut Self {
        // INVARIANT: by the caller's contract.
        // SAFETY: `Iomap` is `repr(transparent)` over `struct iomap`; the reference is unique
        // for `'a` by the caller's contract.
        unsafe { &mut *ptr.cast::<Self>() }
    }

    /// Sets the range, type and address of the mapping, with no flags and no device.
    fn set(&mut self, offset: u64, length: u64, ty: u32, addr: u64) {
        let m = self.0.get();
        // SAFETY: `m` is the mapping being filled, which this callback may write (type
        // invariant).
        unsafe {
            // CAST: as C's `loff_t = u64`: offsets the core maps are below `i64::MAX`.
            (*m).offset = offset as i64;
            (*m).length = length;
            (*m).flags = 0;
            // CAST: the `IOMAP_*` types are below 8.
            (*m).type_ = ty as u16;
            (*m).addr = addr;
        }
    }

    /// A hole: `length` bytes at `offset` that read as zeroes.
    fn set_hole(&mut self, offset: u64, length: u64) {
        // CAST: `IOMAP_NULL_ADDR` is `-1ULL`.
        self.set(offset, length, sys::IOMAP_HOLE, sys::IOMAP_NULL_ADDR as u64);
    }

    /// `length` bytes at `offset` stored at byte `addr` of `bdev`.
    ///
    /// # Safety
    ///
    /// `bdev` is a block device that stays open until the I/O of the iteration completes, or
    /// null for an iteration that only reports extents (no bio is built from it).
    unsafe fn set_mapped(
        &mut self,
        offset: u64,
        length: u64,
        bdev: *mut bindings::block_device,
        addr: u64,
    ) {
        self.set(offset, length, sys::IOMAP_MAPPED, addr);
        // SAFETY: as in `set`.
        unsafe { (*self.0.get()).bdev = bdev };
    }

    /// `length` bytes at `offset` stored inline at `addr` in the metadata; `data` is null
    /// (reports) or a copy of them for iomap to read.
    ///
    /// # Safety
    ///
    /// `data` holds the `length` bytes and stays valid and unchanged until the next
    /// `iomap_begin` of this iteration or its end; or it is null and the iteration only
    /// reports extents (nothing reads the inline data).
    unsafe fn set_inline(&mut self, offset: u64, length: u64, addr: u64, data: *mut c_void) {
        self.set(offset, length, sys::IOMAP_INLINE, addr);
        // SAFETY: as in `set`.
        unsafe { (*self.0.get()).inline_data = data };
    }
}

/// A page for the inline data of one iteration (`kmalloc(PAGE_SIZE, GFP_NOFS)`), zeroed.
///
/// # Invariants
///
/// `ptr` is a kmalloc'd, initialised buffer of `PAGE_SIZE` bytes that this value owns.
struct InlineBuf {
    ptr: NonNull<u8>,
}

impl InlineBuf {
    /// Allocates one; `GFP_NOFS` as for any allocation in a read path.
    fn new() -> Result<Self> {
        // SAFETY: no preconditions; `__GFP_ZERO` initialises the buffer.
        let p = unsafe {
            bindings::__kmalloc_noprof(PAGE_SIZE, sys::EROFS_RS_GFP_NOFS | bindings::__GFP_ZERO)
        };
        // INVARIANT: a non-null result is a zeroed PAGE_SIZE buffer, now ours.
        NonNull::new(p.cast::<u8>())
            .map(|ptr| InlineBuf { ptr })
            .ok_or(ENOMEM)
    }

    /// The buffer.
    fn as_mut_slice(&mut self) -> &mut [u8] {
        // SAFETY: `ptr` is an initialised buffer of PAGE_SIZE bytes that we own (type
        // invariant), borrowed mutably with `self`.
        unsafe { core::slice::from_raw_parts_mut(self.ptr.as_ptr(), PAGE_SIZE) }
    }
}

impl Drop for InlineBuf {
    fn drop(&mut self) {
        // SAFETY: we own this kmalloc'd buffer (type invariant), freed once.
        unsafe { bindings::kfree(self.ptr.as_ptr().cast()) };
    }
}

/// An iteration's inline buffer, allocated when a mapping first needs it: most iterations map
/// no inline tail (a kzalloc'd page per cold random 4 KiB read cost 6% of its instructions).
pub(crate) struct InlineSlot<'a>(&'a mut Option<InlineBuf>);

impl InlineSlot<'_> {
    /// The buffer, allocated on first use.
    pub(crate) fn buf(&mut self) -> Result<&mut [u8]> {
        if self.0.is_none() {
            *self.0 = Some(InlineBuf::new()?);
        }
        Ok(self.0.as_mut().map_or(&mut [][..], InlineBuf::as_mut_slice))
    }
}

/// What one reading iteration carries to `iomap_begin` in `iomap_iter::private`
/// (`struct erofs_iomap_iter_ctx`). Iterations without one (`private` null) only report
/// extents.
struct IterCtx<T: FileSystem> {
    /// Where inline tails are copied for iomap to read, allocated by the first mapping of one.
    inline: Option<InlineBuf>,
    /// The inode to map when it is not the iteration's: a real inode of a shared one.
    real: Option<RealInode<T>>,
}

impl<T: FileSystem> IterCtx<T> {
    fn new(real: Option<RealInode<T>>) -> Self {
        IterCtx { inline: None, real }
    }

    /// The pointer iomap passes back to `iomap_begin` as `iomap_iter::private`.
    fn as_private(&mut self) -> *mut c_void {
        ptr::from_mut(self).cast()
    }
}

/// The operations every iteration on the inodes of filesystem `T` runs with
/// (`erofs_iomap_ops`).
struct IomapOps<T>(core::marker::PhantomData<T>);

impl<T: FileSystem> IomapOps<T> {
    const OPS: sys::iomap_ops = sys::iomap_ops {
        iomap_begin: Some(erofs_rs_iomap_begin::<T>),
        ..pin_init::zeroed()
    };
}

/// [`IomapOps`] of `T`, for iomap's entry points.
fn ops<T: FileSystem>() -> *const sys::iomap_ops {
    &IomapOps::<T>::OPS
}

/// Maps the range at `offset` of `inode` into `map` (`erofs_iomap_begin`).
fn begin<T: FileSystem>(
    inode: Inode<'_, T>,
    offset: u64,
    length: u64,
    mut inline: Option<InlineSlot<'_>>,
    map: &mut Iomap,
) -> Result {
    let ext = T::iomap_map(inode, offset, length, inline.as_mut())?;
    match ext.kind {
        ExtentKind::Hole => map.set_hole(ext.la, ext.llen),
        ExtentKind::Mapped => {
            let bdev = match ext.dev {
                Some(d) => d.bdev(),
                // SAFETY: a live inode's superblock is live; `s_bdev` is set before any inode.
                None => unsafe { (*inode.sb().as_ptr()).s_bdev },
            };
            // A reading iteration (it has an inline slot) builds bios on `bdev`: a regular
            // file's extra device has none to read with.
            if inline.is_some() && bdev.is_null() {
                return Err(EIO);
            }
            // SAFETY: `bdev` is null only for a reporting iteration (checked above). Else it is
            // the superblock's `s_bdev`, open until `kill_sb`, or that of an `ExtraDevice`
            // that `iomap_map` lends for the inode's lifetime, whatever that is: one of the
            // superblock's data, which only `kill_sb` drops, or one never dropped. `kill_sb`
            // runs after every inode is evicted, and eviction waits for the folios a read holds
            // locked until its bios complete; an `O_DIRECT` read's file keeps the superblock
            // mounted until its bios complete.
            unsafe { map.set_mapped(ext.la, ext.llen, bdev, ext.pa) };
        }
        ExtentKind::Meta => {
            let data = match inline.as_mut() {
                // iomap reads up to `llen` bytes of the tail from the buffer, a page.
                // CAST: PAGE_SIZE fits in u64.
                Some(_) if ext.llen > PAGE_SIZE as u64 => return Err(EIO),
                // Allocated (zeroed) here if `iomap_map` did not fill it.
                Some(slot) => slot.buf()?.as_mut_ptr().cast(),
                None => ptr::null_mut(),
            };
            // SAFETY: `data` is null for a reporting iteration (no inline slot), else the
            // iteration's buffer of a page, which holds the `llen <= PAGE_SIZE` bytes (checked
            // above) that `iomap_map` copied there (or zeroes), and which only the next mapping
            // of this iteration overwrites; the iteration's starter frees it after the
            // iteration.
            unsafe { map.set_inline(ext.la, ext.llen, ext.pa, data) };
        }
    }
    Ok(())
}

/// `iomap_ops::iomap_begin`.
///
/// # Safety
///
/// Called by iomap for an iteration with [`IomapOps`] of `T`, which only this file starts:
/// `inode` is the iteration's, `iomap` its mapping to fill, and its `private` is null or an
/// [`IterCtx`] that outlives the iteration and that only the iteration uses meanwhile.
pub(super) unsafe extern "C" fn erofs_rs_iomap_begin<T: FileSystem>(
    inode: *mut bindings::inode,
    offset: i64,
    length: i64,
    _flags: c_uint,
    iomap: *mut sys::iomap,
    _srcmap: *mut sys::iomap,
) -> c_int {
    // SAFETY: `iomap` is the `iomap` field of the running `struct iomap_iter` (iomap_iter()
    // passes `&iter->iomap`).
    let iter = unsafe { kernel::container_of!(iomap, sys::iomap_iter, iomap) };
    // SAFETY: `private` is null or our `IterCtx`, used by nobody else during the callback
    // (contract).
    let ctx = unsafe { (*iter).private.cast::<IterCtx<T>>().as_mut() };
    // SAFETY: `iomap` is this call's mapping, used only through `map` until we return.
    let map = unsafe { Iomap::from_raw(iomap) };
    from_result(|| {
        // CAST: as C's `loff_t` to `u64`: iomap never asks for negative positions or lengths.
        let (offset, length) = (offset as u64, length as u64);
        let Some(ctx) = ctx else {
            // SAFETY: reporting iterations (no context) with `T`'s ops run from `T`'s
            // `fiemap`, `bmap` and `llseek`, on filled inodes of `T` (a shared inode's backing
            // file has none of them), live for the callback.
            begin::<T>(unsafe { Inode::from_raw(inode) }, offset, length, None, map)?;
            return Ok(0);
        };
        let inode = match &ctx.real {
            Some(real) => real.inode(),
            // SAFETY: without a real inode, the iteration is an `O_DIRECT` read of
            // `erofs_rs_file_read_iter::<T>`, which only `T`'s regular files have (files whose
            // reads go through a shared inode have another `read_iter`), of a filled inode of
            // `T`, live for the callback.
            None => unsafe { Inode::from_raw(inode) },
        };
        begin::<T>(
            inode,
            offset,
            length,
            Some(InlineSlot(&mut ctx.inline)),
            map,
        )?;
        Ok(0)
    })
}

/// `read_folio` of block-device mounts (`erofs_read_folio`): iomap's bios, or the inline copy.
///
/// # Safety
///
/// `folio` is locked, not uptodate, and in the page cache of an inode whose aops are `T`'s
/// iomap aops: an inode of `T` on a block-device mount, or a shared inode of some.
pub(super) unsafe extern "C" fn erofs_rs_iomap_read_folio<T: FileSystem>(
    _file: *mut bindings::file,
    folio: *mut bindings::folio,
) -> c_int {
    // SAFETY: `read_folio` is given a locked folio in its page cache (contract), which keeps
    // its host, allocated by `erofs_rs_alloc_inode` (`T`'s or a shared inode), alive.
    let Some(real) = (unsafe { RealInode::<T>::of(super::folio::host(folio)) }) else {
        // SAFETY: `read_folio` unlocks the folio it was given, here without reading it.
        unsafe { bindings::folio_unlock(folio) };
        return EIO.to_errno();
    };
    // SAFETY: `folio` is a live, locked page-cache folio (contract).
    let (pos, size) = unsafe {
        (
            ffi::erofs_rs_glue_folio_pos(folio),
            ffi::erofs_rs_glue_folio_size(folio),
        )
    };
    super::trace::read_folio(&real.inode(), pos, size, true);
    let mut ctx = IterCtx::new(Some(real));
    let mut read_ctx = sys::iomap_read_folio_ctx {
        ops: &raw const sys::iomap_bio_read_ops,
        cur_folio: folio,
        ..Default::default()
    };
    // SAFETY: `folio` is locked for reading (contract), which `iomap_read_folio` finishes;
    // `ctx` outlives the iteration, which alone uses it.
    unsafe { sys::iomap_read_folio(ops::<T>(), &mut read_ctx, ctx.as_private()) };
    0
}

/// `readahead` of block-device mounts (`erofs_readahead`).
///
/// # Safety
///
/// `rac` is the live argument of `readahead` for a page cache whose aops are `T`'s iomap aops
/// (as for [`erofs_rs_iomap_read_folio`]).
pub(super) unsafe extern "C" fn erofs_rs_iomap_readahead<T: FileSystem>(
    rac: *mut bindings::readahead_control,
) {
    // SAFETY: the host of a readahead is live during it, and so is `rac`'s mapping.
    let Some(real) = (unsafe { RealInode::<T>::of((*(*rac).mapping).host) }) else {
        return;
    };
    // SAFETY: `rac` is live (contract).
    let (pos, len) = unsafe {
        (
            ffi::erofs_rs_glue_readahead_pos(rac),
            ffi::erofs_rs_glue_readahead_length(rac),
        )
    };
    super::trace::readahead(&real.inode(), pos, len, true);
    let mut ctx = IterCtx::new(Some(real));
    let mut read_ctx = sys::iomap_read_folio_ctx {
        ops: &raw const sys::iomap_bio_read_ops,
        rac,
        ..Default::default()
    };
    // SAFETY: `rac` is live (contract); `ctx` outlives the iteration, which alone uses it.
    unsafe { sys::iomap_readahead(ops::<T>(), &mut read_ctx, ctx.as_private()) };
}

/// `bmap` (`erofs_bmap`).
///
/// # Safety
///
/// `mapping` is the page cache of an inode of `T` (`T`'s iomap aops), during `bmap`.
pub(super) unsafe extern "C" fn erofs_rs_bmap<T: FileSystem>(
    mapping: *mut bindings::address_space,
    block: u64,
) -> u64 {
    // SAFETY: `mapping` is live (contract); reporting iterations carry no context.
    unsafe { sys::iomap_bmap(mapping, block, ops::<T>()) }
}

/// `fiemap` (`erofs_fiemap`).
///
/// # Safety
///
/// The arguments are those of `inode_operations::fiemap` on an inode of `T`.
pub(super) unsafe extern "C" fn erofs_rs_fiemap<T: FileSystem>(
    inode: *mut bindings::inode,
    fieinfo: *mut bindings::fiemap_extent_info,
    start: u64,
    len: u64,
) -> c_int {
    // SAFETY: the arguments are live (contract); reporting iterations carry no context.
    unsafe { sys::iomap_fiemap(inode, fieinfo, start, len, ops::<T>()) }
}

/// `llseek` of regular files (`erofs_file_llseek`): SEEK_HOLE and SEEK_DATA by the extents.
///
/// # Safety
///
/// `file` is an open regular file of `T` (whose reads may go through a shared inode: its
/// mapping is still its own inode's).
pub(super) unsafe extern "C" fn erofs_rs_file_llseek<T: FileSystem>(
    file: *mut bindings::file,
    offset: i64,
    whence: c_int,
) -> i64 {
    // SAFETY: an open file has a mapping with a live host, a filled inode of `T` (contract).
    let inode = unsafe { (*(*file).f_mapping).host };
    // CAST: `SEEK_*` are small constants.
    let pos = match whence {
        // SAFETY: `inode` is live; reporting iterations carry no context.
        w if w == bindings::SEEK_HOLE as c_int => unsafe {
            sys::iomap_seek_hole(inode, offset, ops::<T>())
        },
        // SAFETY: as above.
        w if w == bindings::SEEK_DATA as c_int => unsafe {
            sys::iomap_seek_data(inode, offset, ops::<T>())
        },
        // SAFETY: `file` is live (contract).
        _ => return unsafe { bindings::generic_file_llseek(file, offset, whence) },
    };
    if pos < 0 {
        return pos;
    }
    // SAFETY: `file` is live; its superblock outlives it.
    unsafe { bindings::vfs_setpos(file, pos, (*(*inode).i_sb).s_maxbytes) }
}

/// `read_iter` of regular files (`erofs_file_read_iter`): `O_DIRECT` reads of block-device
/// mounts go through iomap, the rest through the page cache. (No inode gets `S_DAX`, so the C
/// driver's DAX branch has no counterpart.)
///
/// # Safety
///
/// `iocb` and `to` are the live arguments of `read_iter` on a regular file of `T`.
pub(super) unsafe extern "C" fn erofs_rs_file_read_iter<T: FileSystem>(
    iocb: *mut bindings::kiocb,
    to: *mut bindings::iov_iter,
) -> isize {
    // SAFETY: `to` is a live destination iterator that only this call uses meanwhile.
    if unsafe { IovIterDest::from_raw(to) }.is_empty() {
        return 0;
    }
    // SAFETY: `iocb` is live; its file's inode and superblock too.
    let (flags, bdev) = unsafe {
        let inode = (*(*iocb).ki_filp).f_inode;
        ((*iocb).ki_flags, (*(*inode).i_sb).s_bdev)
    };
    // CAST: `IOCB_DIRECT` is a flag of the `int` `ki_flags`.
    if flags & bindings::IOCB_DIRECT as c_int != 0 && !bdev.is_null() {
        let mut ctx = IterCtx::<T>::new(None);
        // SAFETY: the arguments are live (contract); the iteration, which alone uses `ctx`,
        // ends before `iomap_dio_rw` returns, even when the bios complete later.
        return unsafe {
            sys::iomap_dio_rw(iocb, to, ops::<T>(), ptr::null(), 0, ctx.as_private(), 0)
        };
    }
    // SAFETY: the arguments are live (contract).
    unsafe { bindings::filemap_read(iocb, to, 0) }
}

/// `getattr` (`erofs_getattr`): immutable, compressed if `T` says so ([`FileSystem::stat`]),
/// and the `O_DIRECT` alignment of the block device where `T` reads the file with direct I/O.
///
/// # Safety
///
/// The arguments are those of `inode_operations::getattr` on an inode of `T`.
pub(crate) unsafe extern "C" fn erofs_rs_getattr<T: FileSystem>(
    idmap: *mut bindings::mnt_idmap,
    path: *const bindings::path,
    stat: *mut bindings::kstat,
    request_mask: u32,
    _query_flags: c_uint,
) -> c_int {
    // SAFETY: `path` is a live path to a positive dentry of `T` (contract).
    let inode = unsafe { (*(*path).dentry).d_inode };
    // SAFETY: a positive dentry of `T` holds a filled inode of `T`.
    let StatAttrs { compressed, direct } = T::stat(unsafe { Inode::<T>::from_raw(inode) });
    // SAFETY: `inode` and its superblock are live; `stat` is writable (contract).
    unsafe {
        let bdev = (*(*inode).i_sb).s_bdev;
        let stat = &mut *stat;
        if compressed {
            stat.attributes |= u64::from(bindings::STATX_ATTR_COMPRESSED);
        }
        stat.attributes |= u64::from(bindings::STATX_ATTR_IMMUTABLE);
        stat.attributes_mask |=
            u64::from(bindings::STATX_ATTR_COMPRESSED | bindings::STATX_ATTR_IMMUTABLE);
        // Direct I/O's alignment where the filesystem reads the file with it from the block
        // device; other regular files report STATX_DIOALIGN with no alignment.
        if request_mask & bindings::STATX_DIOALIGN != 0
            && u32::from((*inode).i_mode) & bindings::S_IFMT == bindings::S_IFREG
        {
            stat.result_mask |= bindings::STATX_DIOALIGN;
            if !bdev.is_null() && direct {
                // OVERFLOW: a DMA alignment mask is below `u32::MAX`.
                stat.dio_mem_align = ffi::erofs_rs_glue_bdev_dma_alignment(bdev) + 1;
                stat.dio_offset_align = ffi::erofs_rs_glue_bdev_logical_block_size(bdev);
            }
        }
        bindings::generic_fillattr(idmap, request_mask, inode, stat);
    }
    0
}

impl ExtraDevice {
    /// The block device, or null for a regular file (the extra devices of file-backed mounts,
    /// whose extents are only reported).
    fn bdev(&self) -> *mut bindings::block_device {
        // SAFETY: `file` is a referenced file we own (type invariant), so its inode is live.
        let mode = unsafe { (*(*self.file).f_inode).i_mode };
        if u32::from(mode) & bindings::S_IFMT != bindings::S_IFBLK {
            return ptr::null_mut();
        }
        // SAFETY: `file` is an open block device.
        unsafe { bindings::file_bdev(self.file) }
    }
}
