// SPDX-License-Identifier: GPL-2.0-only
//! Superblocks (`struct super_block`) in two typestates, as the Rust VFS series writes them:
//! [`SuperBlock<New>`] while `fill_super` sets one up, [`SuperBlock<Ready>`] once the driver
//! state is attached (`s_fs_info`). Also what fill_super and kill_sb do to the kernel object,
//! the devices a superblock reads, statfs, and the filling of new VFS inodes. C counterpart:
//! fs/erofs/super.c (`erofs_fc_fill_super`, `erofs_kill_sb`, `erofs_statfs`,
//! `erofs_init_device`), inode.c (`erofs_fill_inode`), fileio.c (direct reads).
//!
//! Lifetimes: `s_fs_info` is null until [`SuperBlock::attach`], which hands it a leaked
//! `KBox<Attached<T::Data>>`: the filesystem's data ([`FileSystem::Data`]) behind what this
//! layer keeps of every superblock (its primary device, its decompression queues, its sysfs
//! directory). [`erofs_rs_kill_sb`] frees it after the VFS has shut the superblock down, when
//! no VFS call on it can run any more. Before that, it waits for the compressed reads the
//! superblock still has in flight (`Inflight::drain`), which outlive the VFS calls that started
//! them. A [`SuperBlock`] value borrows the kernel object for one VFS call (`'a`), which is
//! what keeps it alive.

use super::{
    export,
    ffi,
    folio,
    fs::{
        FileSystem,
        InodeKind,
        Tables, //
    },
    queue::Inflight,
    sys,
    sysfs::Sysfs,
    to_result,
    xattr,
    Device,
    FsBorrow,
    Iget,
    InodeAttrs,
    InodeRef,
    NewInode,
    SbSysfs, //
};
use core::{
    any::TypeId,
    fmt,
    marker::PhantomData,
    ptr, //
};
use kernel::{
    bindings,
    ffi::{
        c_int,
        c_ulong,
        c_void, //
    },
    page::PAGE_SIZE,
    prelude::*,
    sync::Arc,
};

/// Typestate of a [`SuperBlock`] that `fill_super` is setting up: `s_fs_info` is not set yet.
pub(crate) struct New;

/// Typestate of a [`SuperBlock`] whose state is attached (`s_fs_info` holds an [`Attached`]),
/// from the end of `fill_super` until `kill_sb`.
#[derive(Clone, Copy)]
pub(crate) struct Ready;

/// What this layer keeps of every attached superblock, whatever its filesystem: the first
/// part of `s_fs_info`, which layer code that does not know the filesystem's type reads
/// ([`header`]).
#[repr(C)]
pub(super) struct Header {
    /// The filesystem type whose [`FileSystem::Data`] follows (`TypeId::of::<T>()`).
    fs: TypeId,
    /// `/sys/fs/<fstype>/<disk>/` and its settings, removed by the `put_super` trampoline
    /// before the filesystem's `put_super` (and again, then a no-op, in [`Attached::drop`]).
    pub(super) sysfs: SbSysfs,
    /// The primary device.
    pub(super) dev: Device,
    /// The count of decompression queues in flight, which `kill_sb` drains; last, as it is
    /// the last to be used.
    pub(super) inflight: Arc<Inflight>,
}

/// `s_fs_info` of an attached superblock of filesystem type `T` (with `D = T::Data`).
#[repr(C)]
struct Attached<D> {
    /// At offset 0 (`repr(C)`), whatever `D` is.
    header: Header,
    /// Dropped after the header's sysfs directory and before its device (field order of
    /// [`Attached::drop`]).
    data: core::mem::ManuallyDrop<D>,
}

impl<D> Drop for Attached<D> {
    fn drop(&mut self) {
        // Order: the sysfs directory, then the filesystem's data (which may hold inodes), then
        // the device and the count of queues (drained already).
        self.header.sysfs.unregister();
        // SAFETY: dropped once, here; never used again.
        unsafe { core::mem::ManuallyDrop::drop(&mut self.data) };
    }
}

/// A superblock of filesystem `T`, borrowed for `'a`, in state `S` ([`New`] or [`Ready`]).
///
/// A `SuperBlock<New>` is not `Copy`: [`SuperBlock::attach`] consumes it, so no handle of the
/// unattached state is left once the state is attached.
///
/// # Invariants
///
/// `ptr` is a live superblock of filesystem `T` for `'a`. With `S = New`, it is inside `T`'s
/// `fill_super` and `s_fs_info` is null; with `S = Ready`, `s_fs_info` holds an
/// `Attached<T::Data>` leaked by [`SuperBlock::attach`], freed only by `kill_sb`, after `'a`.
pub(crate) struct SuperBlock<'a, T, S = Ready> {
    ptr: *mut bindings::super_block,
    _p: FsBorrow<'a, T>,
    _s: PhantomData<S>,
}

impl<T> Clone for SuperBlock<'_, T, Ready> {
    fn clone(&self) -> Self {
        *self
    }
}

impl<T> Copy for SuperBlock<'_, T, Ready> {}

/// The [`Header`] of attached superblock `sb`.
///
/// # Safety
///
/// `sb` is a live superblock whose state is attached, of some filesystem of this layer, which
/// stays attached during `'a`.
pub(super) unsafe fn header<'a>(sb: *mut bindings::super_block) -> &'a Header {
    // SAFETY: `s_fs_info` holds an `Attached<_>` (contract), whose header is at offset 0
    // (`repr(C)`), live for `'a` (contract).
    unsafe { &*(*sb).s_fs_info.cast::<Header>() }
}

/// Whether `sb`, a live attached superblock of this layer, is one of filesystem `T`.
///
/// # Safety
///
/// As for [`header`].
pub(super) unsafe fn is_of<T: 'static>(sb: *mut bindings::super_block) -> bool {
    // SAFETY: by this function's contract.
    unsafe { header(sb) }.fs == TypeId::of::<T>()
}

/// What can log errors in the C driver's format, naming the device: superblocks in either
/// state.
pub(crate) trait Log {
    /// Logs `args` as an error (`KERN_ERR`, C's `erofs_err`).
    fn err(&self, args: fmt::Arguments<'_>);
}

impl<T, S> Log for SuperBlock<'_, T, S> {
    fn err(&self, args: fmt::Arguments<'_>) {
        SuperBlock::err(self, args);
    }
}

impl<T, S> Log for &SuperBlock<'_, T, S> {
    fn err(&self, args: fmt::Arguments<'_>) {
        SuperBlock::err(*self, args);
    }
}

/// `MAJOR()` of a kernel `dev_t` (MINORBITS = 20).
fn major(dev: u32) -> u32 {
    dev >> 20
}

/// `MINOR()` of a kernel `dev_t`.
fn minor(dev: u32) -> u32 {
    dev & 0xfffff
}

impl<'a, T, S> SuperBlock<'a, T, S> {
    /// The raw superblock.
    pub(crate) fn as_ptr(&self) -> *mut bindings::super_block {
        self.ptr
    }

    /// Logs an error in the C driver's format, naming the device (`erofs_err`).
    pub(crate) fn err(&self, args: fmt::Arguments<'_>) {
        // SAFETY: `ptr` is a live superblock (type invariant), set up by `sget_fc`.
        unsafe { super::log(self.ptr, super::Level::Err, args) };
    }

    /// Logs information in the C driver's format, naming the device (`erofs_info`).
    pub(crate) fn info(&self, args: fmt::Arguments<'_>) {
        // SAFETY: `ptr` is a live superblock (type invariant), set up by `sget_fc`.
        unsafe { super::log(self.ptr, super::Level::Info, args) };
    }

    /// Whether this is a block-device superblock (`s_bdev` set), else a file-backed one.
    fn has_bdev(&self) -> bool {
        // SAFETY: `ptr` is live (type invariant); `s_bdev` is set before `fill_super` runs
        // and stays constant.
        !unsafe { (*self.ptr).s_bdev }.is_null()
    }

    /// The name of the mount's debugfs directory, as the C driver names its sysfs one: the
    /// disk (`s_id`) of a block-device mount, else `major:minor` of the anonymous device.
    pub(crate) fn debugfs_name(&self) -> Result<kernel::str::CString> {
        // SAFETY: `ptr` is live for `'a`; `s_dev` and `s_id` are set by the time `fill_super`
        // runs and stay constant afterwards.
        let (dev, id) = unsafe { ((*self.ptr).s_dev, &(*self.ptr).s_id) };
        if !self.has_bdev() {
            return kernel::str::CString::try_from_fmt(fmt!("{}:{}", major(dev), minor(dev)));
        }
        let id = CStr::from_bytes_until_nul(&id[..]).map_err(|_| EINVAL)?;
        kernel::str::CString::try_from_fmt(fmt!("{}", id.to_str().map_err(|_| EINVAL)?))
    }
}

impl<'a, T: FileSystem> SuperBlock<'a, T, New> {
    /// # Safety
    ///
    /// `ptr` is a superblock of `T` inside `T`'s `fill_super`, live for `'a`, whose `s_fs_info`
    /// is null; no other `SuperBlock<New>` of it exists.
    pub(crate) unsafe fn from_raw_new(ptr: *mut bindings::super_block) -> Self {
        // INVARIANT: by the caller's contract.
        SuperBlock {
            ptr,
            _p: PhantomData,
            _s: PhantomData,
        }
    }

    /// Sets the superblock's constant fields (and a file-backed one's name and bdi), before
    /// anything is read: once, by `fill_super`'s trampoline.
    pub(super) fn prepare(&self) -> Result {
        let sb = self.ptr;
        // SAFETY: `sb` is being set up in `fill_super` and not yet visible to anyone else
        // (type invariant); the tables are static.
        unsafe {
            // CAST: `unsigned long` is at least 32 bits wide.
            (*sb).s_magic = T::MAGIC as c_ulong;
            // CAST: as above.
            (*sb).s_flags |= (sys::EROFS_RS_SB_RDONLY | sys::EROFS_RS_SB_NOATIME) as c_ulong;
            (*sb).s_maxbytes = sys::EROFS_RS_MAX_LFS_FILESIZE;
            (*sb).s_op = Tables::<T>::sops();
            (*sb).s_xattr = xattr::Handlers::<T>::list().as_ptr().cast();
            (*sb).s_export_op = ptr::from_ref(export::ExportOps::<T>::get()).cast();
            (*sb).s_time_gran = 1;
        }
        if self.has_bdev() {
            return Ok(());
        }
        // A file-backed superblock has an anonymous device: it is named after it.
        // SAFETY: as above.
        let (dev, id) = unsafe { ((*sb).s_dev, &mut (*sb).s_id) };
        let name = kernel::str::CString::try_from_fmt(fmt!("{}:{}", major(dev), minor(dev)))?;
        let bytes = name.to_bytes();
        // OVERFLOW: `s_id` is 32 bytes; the name is cut to 31, and NUL-terminated, as snprintf.
        let n = bytes.len().min(id.len() - 1);
        for (d, &s) in id.iter_mut().zip(&bytes[..n]) {
            // CAST: a byte, as `char`.
            *d = s as kernel::ffi::c_char;
        }
        id[n] = 0;
        // SAFETY: `sb` is in `fill_super`, without a bdi yet.
        to_result(unsafe { bindings::super_setup_bdi(sb) })
    }

    /// Sets the block size the image declares; `EINVAL` if the device cannot have it.
    pub(crate) fn set_blocksize(&self, bits: u8) -> Result {
        let size = 1u32.checked_shl(u32::from(bits)).ok_or(EINVAL)?;
        if !self.has_bdev() {
            // SAFETY: `ptr` is in `fill_super`, not visible to anyone else yet.
            unsafe {
                // CAST: `unsigned long` is at least 32 bits wide.
                (*self.ptr).s_blocksize = size as c_ulong;
                (*self.ptr).s_blocksize_bits = bits;
            }
            return Ok(());
        }
        let size = c_int::try_from(size).map_err(|_| EINVAL)?;
        // SAFETY: a block-device superblock in `fill_super`.
        if unsafe { bindings::sb_set_blocksize(self.ptr, size) } == 0 {
            return Err(EINVAL);
        }
        Ok(())
    }

    /// Sets the volume uuid (`super_set_uuid`).
    pub(crate) fn set_uuid(&self, uuid: &[u8; 16]) {
        // SAFETY: `ptr` is in `fill_super`, not visible to anyone else yet; `s_uuid` is 16
        // bytes.
        unsafe {
            (*self.ptr).s_uuid.b = *uuid;
            (*self.ptr).s_uuid_len = 16;
        }
    }

    /// The page cache and size in bytes of the primary device: the block device's, or those
    /// of `file` for a file-backed mount.
    ///
    /// # Safety
    ///
    /// `file` is null for a block-device superblock, else a referenced regular file.
    pub(super) unsafe fn primary(
        &self,
        file: *mut bindings::file,
    ) -> (*mut bindings::address_space, u64) {
        if file.is_null() {
            // SAFETY: a block-device superblock (contract) has `s_bdev` for its life.
            let bdev = unsafe { (*self.ptr).s_bdev };
            // SAFETY: as above.
            return unsafe { ((*bdev).bd_mapping, ffi::erofs_rs_glue_bdev_nr_bytes(bdev)) };
        }
        // SAFETY: `file` is a referenced regular file (contract).
        unsafe { ((*file).f_mapping, file_bytes(file)) }
    }

    /// Opens an extra device (`device=`): a block device, held for this superblock, or a
    /// regular file for file-backed mounts (`erofs_init_device`). A referenced file.
    pub(super) fn open_device(&self, path: &CStr, file_mode: bool) -> Result<*mut bindings::file> {
        if file_mode {
            // CAST: `O_*` flags fit in `int`.
            let flags = (bindings::O_RDONLY | bindings::O_LARGEFILE) as c_int;
            // SAFETY: `path` is NUL-terminated.
            let file = unsafe { bindings::filp_open(path.as_char_ptr(), flags, 0) };
            let file = kernel::error::from_err_ptr(file)?;
            // SAFETY: an open file has its inode.
            let mode = u32::from(unsafe { (*(*file).f_inode).i_mode });
            if mode & bindings::S_IFMT != bindings::S_IFREG {
                // SAFETY: the reference `filp_open` gave us, dropped once.
                unsafe { bindings::fput(file) };
                return Err(EINVAL);
            }
            return Ok(file);
        }
        // SAFETY: `path` is NUL-terminated; `ptr` is in `fill_super`, whose `s_type` is the
        // holder of its devices, as for `get_tree_bdev`.
        let file = unsafe {
            bindings::fs_bdev_file_open_by_path(
                path.as_char_ptr(),
                sys::EROFS_RS_BLK_OPEN_READ,
                (*self.ptr).s_type.cast::<c_void>(),
                self.ptr,
            )
        };
        kernel::error::from_err_ptr(file).map_err(|e| if e == ENOTBLK { EINVAL } else { e })
    }

    /// Hands the filesystem's `data` and the primary device `dev` to the superblock
    /// (`s_fs_info`): `kill_sb` frees them from now on, whatever happens next. On failure (out
    /// of memory), they are dropped.
    pub(crate) fn attach(self, dev: Device, data: T::Data) -> Result<SuperBlock<'a, T, Ready>> {
        let inflight = Arc::pin_init(Inflight::new(), GFP_KERNEL)?;
        let attached = KBox::new(
            Attached {
                header: Header {
                    fs: TypeId::of::<T>(),
                    sysfs: SbSysfs::new(),
                    dev,
                    inflight,
                },
                data: core::mem::ManuallyDrop::new(data),
            },
            GFP_KERNEL,
        )?;
        // SAFETY: `ptr` is in `fill_super` and `s_fs_info` is null (type invariant).
        unsafe { (*self.ptr).s_fs_info = KBox::into_raw(attached).cast() };
        // INVARIANT: `s_fs_info` now holds the leaked box, which only `kill_sb` frees; `self`,
        // the only `New` handle, is consumed.
        Ok(SuperBlock {
            ptr: self.ptr,
            _p: PhantomData,
            _s: PhantomData,
        })
    }
}

impl<'a, T: FileSystem> SuperBlock<'a, T, Ready> {
    /// # Safety
    ///
    /// `ptr` is a live superblock of `T` for `'a` whose state is attached (a mounted one, or
    /// one whose `fill_super` got past [`SuperBlock::attach`]).
    pub(crate) unsafe fn from_raw(ptr: *mut bindings::super_block) -> Self {
        // INVARIANT: by the caller's contract.
        SuperBlock {
            ptr,
            _p: PhantomData,
            _s: PhantomData,
        }
    }

    /// The filesystem's data ([`FileSystem::Data`]).
    pub(crate) fn data(&self) -> &'a T::Data {
        // SAFETY: `s_fs_info` holds the `Attached<T::Data>` `attach` leaked, freed only by
        // `kill_sb`, after `'a` (type invariant).
        unsafe { &(*(*self.ptr).s_fs_info.cast::<Attached<T::Data>>()).data }
    }

    /// What this layer keeps of the superblock.
    fn header(&self) -> &'a Header {
        // SAFETY: attached for `'a` (type invariant).
        unsafe { header(self.ptr) }
    }

    /// The primary device.
    pub(crate) fn device(&self) -> &'a Device {
        &self.header().dev
    }

    /// The count of the superblock's decompression queues in flight.
    pub(super) fn inflight(&self) -> &'a Arc<Inflight> {
        &self.header().inflight
    }

    /// The sysfs directory.
    pub(super) fn sysfs(&self) -> &'a SbSysfs {
        &self.header().sysfs
    }

    /// Creates `/sys/fs/<fstype>/<s_id>/` with the files of [`Sysfs::SB_ATTRS`], as the last
    /// step of `fill_super` (`erofs_register_sysfs`); `EINVAL` before the superblock has its
    /// root.
    pub(crate) fn register_sysfs(&self) -> Result
    where
        T: Sysfs,
    {
        self.sysfs().register(*self)
    }

    /// Removes the sysfs directory, waiting for the reads and writes of its files in progress
    /// (`erofs_unregister_sysfs`): the `put_super` trampoline does, before the filesystem's.
    pub(super) fn unregister_sysfs(&self) {
        self.sysfs().unregister();
    }

    /// Makes `root` the root dentry, consuming the reference; `EBUSY` if there is one already,
    /// `EINVAL` if `root` is an inode of another superblock.
    pub(crate) fn set_root(&self, root: InodeRef<T>) -> Result {
        // SAFETY: `ptr` is live (type invariant). `s_root` is written only here, while it is
        // null, in `fill_super` (a mounted superblock has a root), where the superblock is not
        // visible to anyone else yet, and a `SuperBlock` is not `Send`; and by the VFS's
        // shutdown, after the last VFS call.
        if !unsafe { (*self.ptr).s_root }.is_null() {
            return Err(EBUSY);
        }
        if !root.is_of_sb(self.ptr) {
            return Err(EINVAL);
        }
        let inode = root.into_raw();
        // SAFETY: `d_make_root` consumes the inode reference, even on failure.
        let dentry = unsafe { bindings::d_make_root(inode) };
        if dentry.is_null() {
            return Err(ENOMEM);
        }
        // SAFETY: as above.
        unsafe { (*self.ptr).s_root = dentry };
        Ok(())
    }

    /// Looks up or creates the VFS inode of `nid`, inode number `ino` (`erofs_iget`: keyed by
    /// the nid, so that two nids never share an inode, even with a 32-bit `ino_t`).
    pub(crate) fn iget5_locked(&self, nid: u64, ino: u64) -> Result<Iget<'a, T>> {
        // SAFETY: `ptr` is a live superblock of `T` (type invariant), whose `alloc_inode` is
        // `erofs_rs_alloc_inode` (`Tables::<T>::sops`, installed by `prepare`).
        let inode = unsafe { super::inode_cache::iget5_locked(self.ptr, nid, ino) };
        if inode.is_null() {
            return Err(ENOMEM);
        }
        // SAFETY: `inode` is a referenced inode of this superblock.
        let is_new = unsafe { ffi::erofs_rs_glue_inode_is_new(inode) };
        // INVARIANT: `iget5_locked` returned a referenced inode of this superblock (of `T`),
        // filled unless it is `I_NEW`: an inode is unlocked only by `NewInode::finish`, after
        // its data is written, and one that fails is unhashed (`iget_failed`).
        let r = InodeRef {
            ptr: inode,
            _t: PhantomData,
        };
        Ok(if is_new {
            Iget::New(NewInode {
                inode: Some(r),
                kind: None,
                _p: PhantomData,
            })
        } else {
            Iget::Cached(r)
        })
    }
}

/// Size in bytes of an open block device or regular file.
///
/// # Safety
///
/// `file` is a referenced file.
pub(super) unsafe fn file_bytes(file: *mut bindings::file) -> u64 {
    // SAFETY: an open file has its inode (contract).
    let inode = unsafe { (*file).f_inode };
    // SAFETY: as above.
    let mode = u32::from(unsafe { (*inode).i_mode });
    if mode & bindings::S_IFMT == bindings::S_IFBLK {
        // SAFETY: an open block device file has its bdev.
        unsafe { ffi::erofs_rs_glue_bdev_nr_bytes(bindings::file_bdev(file)) }
    } else {
        // SAFETY: a live inode.
        let n = unsafe { ffi::erofs_rs_glue_i_size_read(inode) };
        u64::try_from(n).unwrap_or(0)
    }
}

/// Closes an extra device opened by [`SuperBlock::open_device`]: block devices are released
/// from the superblock that holds them.
///
/// # Safety
///
/// `file` is a reference the caller owns, which passes to this call, from
/// [`SuperBlock::open_device`] on `sb` (whose registration of a block device keeps `sb`
/// allocated until this call unregisters it).
pub(super) unsafe fn release_device(file: *mut bindings::file, sb: *mut bindings::super_block) {
    // SAFETY: an open file has its inode (contract).
    let mode = u32::from(unsafe { (*(*file).f_inode).i_mode });
    if mode & bindings::S_IFMT == bindings::S_IFBLK {
        // SAFETY: a block device opened for `sb` with `fs_bdev_file_open_by_path`.
        unsafe { bindings::fs_bdev_file_release(file, sb) };
    } else {
        // SAFETY: our reference, dropped once.
        unsafe { bindings::fput(file) };
    }
}

/// Reads `len` bytes at byte `pos` of block device `bdev` straight into bytes `off..off + len`
/// of `folio`, with one synchronous bio on the stack (`bdev_rw_virt`, over a folio rather than
/// an address). Unlike the bdev page cache, this reads the device's last partial page.
///
/// # Safety
///
/// `bdev` is an open block device for the call; `pos` and `len` are multiples of 512. `folio`
/// is live for the call, `off..off + len` lies inside it, and nobody else reads, writes or
/// maps those bytes until this returns (a folio the caller holds locked and alone writes, or a
/// private one).
pub(super) unsafe fn bdev_read_folio(
    bdev: *mut bindings::block_device,
    pos: u64,
    folio: *mut bindings::folio,
    off: usize,
    len: usize,
) -> Result {
    let mut bv = core::mem::MaybeUninit::<bindings::bio_vec>::zeroed();
    let mut bio = core::mem::MaybeUninit::<bindings::bio>::zeroed();
    let b = bio.as_mut_ptr();
    // SAFETY: `b` and the one vector `bv` are ours, on this stack until the bio is uninitialised
    // below; `bio_init` sets up every field of the bio over `bv`, as for `bdev_rw_virt`'s bio
    // on the stack (the zeroes are only so that no Rust value is ever uninitialised). `bdev`
    // is open (contract). An empty bio of one vector has room for one folio range, which lies
    // in the live folio (contract).
    unsafe {
        bindings::bio_init(b, bdev, bv.as_mut_ptr(), 1, bindings::req_op_REQ_OP_READ);
        (*b).bi_iter.bi_sector = pos >> bindings::SECTOR_SHIFT;
        bindings::bio_add_folio_nofail(b, folio, len, off);
    }
    // SAFETY: a bio set up above, submitted once; it writes only `off..off + len` of the folio,
    // which nobody else touches until we return (contract), and is over when this returns.
    let ret = unsafe { bindings::submit_bio_wait(b) };
    // SAFETY: the bio initialised above, over and no longer used.
    unsafe { bindings::bio_uninit(b) };
    to_result(ret)
}

/// Reads `len` bytes at `pos` of a backing file into bytes `off..off + len` of `folio` with
/// `IOCB_DIRECT` when the file allows it, as fs/erofs/fileio.c does with `directio`, with the
/// file's credentials. The bytes read, or an error.
///
/// # Safety
///
/// `file` is a referenced regular file. `folio` is live for the call, `off..off + len` lies
/// inside it, and nobody else reads, writes or maps those bytes until this returns (a folio
/// the caller holds locked and alone writes).
pub(super) unsafe fn file_read_direct(
    file: *mut bindings::file,
    pos: u64,
    folio: *mut bindings::folio,
    off: usize,
    len: usize,
) -> Result<usize> {
    let mut kiocb = core::mem::MaybeUninit::<bindings::kiocb>::uninit();
    // SAFETY: `init_sync_kiocb` initialises all of `kiocb`; `file` is live (contract).
    unsafe { ffi::erofs_rs_glue_init_sync_kiocb(kiocb.as_mut_ptr(), file) };
    // SAFETY: initialised just above.
    let kiocb = unsafe { kiocb.assume_init_mut() };
    kiocb.ki_pos = i64::try_from(pos).map_err(|_| EINVAL)?;
    // SAFETY: `file` is live.
    if unsafe { (*file).f_mode } & sys::EROFS_RS_FMODE_CAN_ODIRECT != 0 {
        kiocb.ki_flags |= bindings::IOCB_DIRECT as c_int;
    }
    let bv_len = u32::try_from(len).map_err(|_| EINVAL)?;
    // `bvec_set_folio`: the page of the folio that holds byte `off`, and the offset in it.
    // SAFETY: `folio` is live (contract); a folio's `struct page`s follow its head page
    // (`folio_page`), and `off` lies inside the folio, so its page is one of them.
    let page = unsafe {
        folio::Folio::from_ptr(folio)
            .first_page()
            .add(off / PAGE_SIZE)
    };
    // CAST: an offset in a page, below PAGE_SIZE.
    let bv = bindings::bio_vec {
        bv_page: page,
        bv_len,
        bv_offset: (off % PAGE_SIZE) as u32,
    };
    let mut iter = core::mem::MaybeUninit::<bindings::iov_iter>::uninit();
    // SAFETY: `iov_iter_bvec` initialises `iter` over `bv`, which outlives the read below.
    unsafe { bindings::iov_iter_bvec(iter.as_mut_ptr(), bindings::ITER_DEST, &bv, 1, len) };
    // SAFETY: `f_cred` lives with the file; the old credentials are restored below, in this
    // task.
    let old = unsafe { ffi::erofs_rs_glue_override_creds((*file).f_cred) };
    // SAFETY: `file`, `kiocb` and `iter` are valid; the bvec covers `off..off + len` of the
    // live folio, bytes nobody else touches until we return (contract), and a synchronous
    // kiocb is over when the read returns.
    let ret = unsafe { bindings::vfs_iocb_iter_read(file, kiocb, iter.as_mut_ptr()) };
    // SAFETY: restores what `override_creds` returned, once.
    unsafe { ffi::erofs_rs_glue_revert_creds(old) };
    if ret < 0 {
        // CAST: errnos fit in i32.
        return Err(Error::from_errno(ret as c_int));
    }
    // CAST: non-negative and at most `len`.
    Ok(ret as usize)
}

/// Sets the VFS fields of a new inode and installs its operation tables (`erofs_fill_inode`'s
/// assignments).
///
/// # Safety
///
/// `inode` is a live, locked `I_NEW` inode that the caller holds, not yet unlocked; the
/// tables are those of its superblock's filesystem.
pub(super) unsafe fn set_attrs(
    inode: *mut bindings::inode,
    vi: &InodeAttrs,
    iops: &'static bindings::inode_operations,
    fops: Option<&'static bindings::file_operations>,
    kind: InodeKind,
    aops: &'static bindings::address_space_operations,
) {
    // SAFETY: `inode` is `I_NEW` and locked (contract): nobody else looks at these fields.
    unsafe {
        (*inode).i_mode = vi.mode;
        ffi::erofs_rs_glue_i_uid_write(inode, vi.uid);
        ffi::erofs_rs_glue_i_gid_write(inode, vi.gid);
        bindings::set_nlink(inode, vi.nlink);
        // CAST: as C, which stores the on-disk `u64` size into the `loff_t` as it is.
        (*inode).i_size = vi.size as i64;
        (*inode).i_mtime_sec = vi.mtime;
        (*inode).i_mtime_nsec = vi.mtime_nsec;
        let ts = bindings::timespec64 {
            tv_sec: vi.mtime,
            // CAST: nanoseconds below one second fit in `long`.
            tv_nsec: vi.mtime_nsec as kernel::ffi::c_long,
        };
        let ts = bindings::inode_set_ctime_to_ts(inode, ts);
        (*inode).i_atime_sec = ts.tv_sec;
        // CAST: nanoseconds below one second fit in u32.
        (*inode).i_atime_nsec = ts.tv_nsec as u32;
        (*inode).i_blocks = vi.blocks;
        (*inode).i_op = iops;
        if let Some(fops) = fops {
            (*inode).__bindgen_anon_3.i_fop = fops;
        }
        match kind {
            InodeKind::Special(rdev) => {
                bindings::init_special_inode(inode, vi.mode, new_decode_dev(rdev));
                return;
            }
            InodeKind::Dir | InodeKind::Symlink => bindings::inode_nohighmem(inode),
            InodeKind::File => (),
        }
        let mapping = (*inode).i_mapping;
        // Every inode that has a page cache, compressed ones included, as the C driver
        // (`erofs_fill_inode`, since 6.11 for compressed inodes).
        ffi::erofs_rs_glue_mapping_set_large_folios(mapping);
        (*mapping).a_ops = aops;
    }
}

/// `new_decode_dev()`: the kernel `dev_t` of an on-disk (new-style, 32-bit) device number.
fn new_decode_dev(dev: u32) -> u32 {
    let major = (dev & 0xfff00) >> 8;
    let minor = (dev & 0xff) | ((dev >> 12) & 0xfff00);
    (major << 20) | minor
}

/// `new_encode_dev()` (and `huge_encode_dev()`): the user-space encoding of a kernel `dev_t`.
fn new_encode_dev(dev: u32) -> u64 {
    let (major, minor) = (u64::from(major(dev)), u64::from(minor(dev)));
    (minor & 0xff) | (major << 8) | ((minor & !0xff) << 12)
}

/// `u64_to_fsid()`.
fn u64_to_fsid(v: u64) -> bindings::__kernel_fsid_t {
    // CAST: the low and high halves, as C's `(u32)` casts, stored in `int`s.
    bindings::__kernel_fsid_t {
        val: [v as u32 as c_int, (v >> 32) as u32 as c_int],
    }
}

/// `kill_sb`: shuts the superblock down, then frees its state (`erofs_kill_sb`).
///
/// # Safety
///
/// `sb` is a superblock of `T` being killed by the VFS (`T`'s `kill_sb`): its `s_fs_info` is
/// null or what `SuperBlock::<T>::attach` leaked.
pub(crate) unsafe extern "C" fn erofs_rs_kill_sb<T: FileSystem>(sb: *mut bindings::super_block) {
    // SAFETY: `sb` is live until this returns (contract).
    let (sbi, dev) = unsafe { ((*sb).s_fs_info, (*sb).s_dev) };
    if !sbi.is_null() {
        // SAFETY: `sbi` is the `Attached<T::Data>` `attach` leaked (contract), freed only at the
        // end of this function.
        let header = unsafe { header(sb) };
        // Before anything goes: the bios of compressed reads in flight read the device, and
        // their work ends folios of our inodes; with none left, nothing of ours runs for this
        // superblock after it is gone (a mount with no open file starts no read).
        header.inflight.drain();
    }
    // File-backed superblocks have an anonymous dev_t (major 0); block-device ones have the
    // device's, even when opening the device failed and `s_bdev` is still null.
    if major(dev) != 0 {
        // SAFETY: a block-device superblock of `get_tree_bdev`, killed once.
        unsafe { bindings::kill_block_super(sb) };
    } else {
        // SAFETY: an anonymous superblock of `get_tree_nodev`, killed once.
        unsafe { bindings::kill_anon_super(sb) };
    }
    // SAFETY: `sb` is still live; no VFS call on it runs any more.
    unsafe { (*sb).s_fs_info = ptr::null_mut() };
    if !sbi.is_null() {
        // SAFETY: `sbi` came from `KBox::into_raw` in `attach`, and is freed once, here, after
        // the last use of the superblock's inodes and files.
        drop(unsafe { KBox::from_raw(sbi.cast::<Attached<T::Data>>()) });
    }
}

/// `statfs` (`erofs_statfs`).
///
/// # Safety
///
/// `dentry` and `buf` are the live arguments of `super_operations::statfs` on a superblock
/// of `T`.
pub(crate) unsafe extern "C" fn erofs_rs_statfs<T: FileSystem>(
    dentry: *mut bindings::dentry,
    buf: *mut bindings::kstatfs,
) -> c_int {
    // CAST: the same C struct, which kernel::bindings has only as an opaque type.
    let buf = buf.cast::<sys::kstatfs>();
    // SAFETY: a live dentry's superblock is live, of `T` (contract), and attached: `statfs`
    // runs on mounted superblocks, which got past `attach`.
    let sb = unsafe { SuperBlock::<T>::from_raw((*dentry).d_sb) };
    let st = T::statfs(sb);
    let p = sb.ptr;
    // SAFETY: `p` is live; `buf` is writable (contract); `s_uuid` and `s_bdev` are constant
    // after mount.
    unsafe {
        let buf = &mut *buf;
        // CAST: the magic and the block size fit in `long`, as C assigns them.
        buf.f_type = (*p).s_magic as kernel::ffi::c_long;
        // CAST: as above.
        buf.f_bsize = (*p).s_blocksize as kernel::ffi::c_long;
        buf.f_blocks = st.blocks;
        buf.f_bfree = 0;
        buf.f_bavail = 0;
        buf.f_files = u64::MAX;
        buf.f_ffree = st.ffree;
        buf.f_namelen = 255;
        let uuid = (*p).s_uuid.b;
        buf.f_fsid = if uuid.iter().all(|&b| b == 0) {
            let bdev = (*p).s_bdev;
            u64_to_fsid(if bdev.is_null() {
                0
            } else {
                new_encode_dev((*bdev).bd_dev)
            })
        } else {
            // `uuid_to_fsid()`: the two little-endian halves folded.
            let (lo, hi) = uuid.split_at(8);
            let lo = u64::from_le_bytes(lo.try_into().unwrap_or([0; 8]));
            let hi = u64::from_le_bytes(hi.try_into().unwrap_or([0; 8]));
            u64_to_fsid(lo ^ hi)
        };
    }
    0
}
