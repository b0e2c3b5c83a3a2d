// SPDX-License-Identifier: GPL-2.0-only
//! The operation tables the kernel calls the driver through, built in Rust the way rust/kernel
//! builds its own (`miscdevice.rs`, `block/mq/operations.rs`): a `bindings` struct whose entries
//! are our `extern "C"` trampolines or the kernel's generic helpers, the rest
//! `..pin_init::zeroed()`. This file has the two wrappers that let such tables be statics
//! ([`Table`] for the ones nobody writes, [`FileSystemType`] for the one the kernel writes to),
//! and the tables of a [`FileSystem`] that gather the trampolines of several files
//! ([`Tables<T>`](Tables), associated constants built from `T`'s impl, as
//! `OperationsVTable<T>`): the superblock's, the inodes' and their page caches', and the
//! filesystem type. The tables of one abstraction live beside
//! it: `xattr.rs` (the handlers), `iomap.rs`, `export.rs`, `ishare.rs` (the pseudo filesystem
//! and the shared files), `fs_context.rs` (the context operations and the option table),
//! `sysfs.rs` (the attributes). C counterpart: the tables of fs/erofs/super.c, inode.c, dir.c,
//! namei.c, data.c and zdata.c.

use super::{
    fs::{
        FileSystem,
        InodeKind,
        Tables, //
    },
    fs_context::{
        self,
        MountOptions, //
    },
    inode_cache,
    iomap,
    super_block,
    sys,
    trampolines,
    xattr, //
};
use core::marker::PhantomData;
use kernel::{
    bindings,
    ffi::c_int,
    types::Opaque, //
};

/// A C type made of plain values only: integers, raw and function pointers, and arrays and
/// unions of them, as bindgen generates an operation table.
///
/// # Safety
///
/// The type has no references and no interior mutability: a shared reference to a value of it
/// allows nothing but reading plain values, and what its pointers point to is reached only by
/// unsafe code, which has to justify that access itself.
pub(crate) unsafe trait PlainC {}

/// An operation table in static storage: built at compile time, never written, read by C from
/// any thread, as C's `static const struct ..._operations`.
#[repr(transparent)]
pub(crate) struct Table<T: PlainC>(T);

// SAFETY: a `Table` is never written (it gives out only shared references, and `T: PlainC` has
// no interior mutability), and reading plain values from several threads at once is no race.
unsafe impl<T: PlainC> Sync for Table<T> {}

impl<T: PlainC> Table<T> {
    /// A table with the entries of `t`.
    pub(crate) const fn new(t: T) -> Self {
        Table(t)
    }

    /// The table, as a `const struct ... *` of C.
    pub(crate) const fn as_ptr(&'static self) -> *const T {
        &self.0
    }
}

// SAFETY: each of these is a bindgen struct or union of integers, raw pointers and optional
// function pointers (and arrays, unions and bitfields of them): no references, no cells.
unsafe impl PlainC for bindings::super_operations {}
// SAFETY: as above.
unsafe impl PlainC for bindings::inode_operations {}
// SAFETY: as above.
unsafe impl PlainC for bindings::file_operations {}
// SAFETY: as above.
unsafe impl PlainC for bindings::address_space_operations {}
// SAFETY: as above.
unsafe impl PlainC for bindings::xattr_handler {}
// SAFETY: as above.
unsafe impl PlainC for bindings::kobj_attribute {}
// SAFETY: as above.
unsafe impl PlainC for bindings::attribute_group {}
// SAFETY: as above.
unsafe impl PlainC for bindings::kobj_type {}
// SAFETY: as above.
unsafe impl PlainC for sys::export_operations {}
// SAFETY: as above.
unsafe impl PlainC for sys::iomap_ops {}
// SAFETY: as above.
unsafe impl PlainC for sys::fs_context_operations {}
// SAFETY: as above.
unsafe impl PlainC for sys::fs_parameter_spec {}
// SAFETY: as above.
unsafe impl PlainC for sys::constant_table {}
// SAFETY: a raw pointer is a plain value; only unsafe code may follow it.
unsafe impl<T> PlainC for *const T {}
// SAFETY: as above.
unsafe impl<T> PlainC for *mut T {}
// SAFETY: an array of plain values is made of plain values.
unsafe impl<T: PlainC, const N: usize> PlainC for [T; N] {}

/// A filesystem type (`struct file_system_type`) in static storage. Unlike the operation
/// tables, the kernel writes to it: its link on the list of filesystem types while it is
/// registered, the list of its superblocks (`fs_supers`) while any exists.
///
/// # Invariants
///
/// The struct is reached only through [`FileSystemType::as_ptr`]: by the kernel under its own
/// locks (`file_systems_lock`, `sb_lock`), and by unsafe code of ours that says why the kernel
/// does not use it meanwhile (`FsType::register` names it before registering it).
///
/// `T` is the filesystem whose operations the struct holds: [`FileSystem`] `T`'s when it is
/// made by [`FileSystemType::of`]; this layer's own pseudo filesystems make theirs with
/// [`FileSystemType::new`] and `T = ()`.
#[repr(transparent)]
pub(crate) struct FileSystemType<T>(Opaque<bindings::file_system_type>, PhantomData<fn() -> T>);

// SAFETY: no shared reference to the struct is ever given out (type invariant): every access
// is through the raw pointer, under the kernel's locks or before the kernel knows of it.
unsafe impl<T> Sync for FileSystemType<T> {}

impl FileSystemType<()> {
    /// A filesystem type with the fields of `t`, for a pseudo filesystem of this layer.
    pub(super) const fn new(t: bindings::file_system_type) -> Self {
        // INVARIANT: not reachable by anyone yet.
        FileSystemType(Opaque::new(t), PhantomData)
    }
}

impl<T: FileSystem> FileSystemType<T> {
    /// The filesystem type of `T`, owned by `module`, for a `static` of the filesystem's (the
    /// lock class keys in it must be static objects for lockdep); named and registered by
    /// [`register`](super::register).
    pub(crate) const fn of(module: &'static kernel::ThisModule) -> Self {
        // INVARIANT: not reachable by anyone yet; `T`'s operations.
        FileSystemType(
            Opaque::new(bindings::file_system_type {
                owner: module.as_ptr(),
                ..Tables::<T>::FS_TYPE
            }),
            PhantomData,
        )
    }
}

impl<T> FileSystemType<T> {
    /// The struct, for `register_filesystem`, `kern_mount` and the like.
    pub(crate) const fn as_ptr(&'static self) -> *mut bindings::file_system_type {
        self.0.get()
    }
}

impl<T: FileSystem> Tables<T> {
    /// The filesystem type of `T` (`erofs_fs_type`) but its owner, for
    /// [`FileSystemType::of`].
    const FS_TYPE: bindings::file_system_type = bindings::file_system_type {
        init_fs_context: Some(fs_context::erofs_rs_init_fs_context::<T>),
        kill_sb: Some(super_block::erofs_rs_kill_sb::<T>),
        // CAST: two small flag bits, into the `int` field.
        fs_flags: (bindings::FS_REQUIRES_DEV | bindings::FS_ALLOW_IDMAP) as c_int,
        parameters: <T::Options as MountOptions>::PARAMS
            .as_ptr()
            .cast::<bindings::fs_parameter_spec>(),
        ..pin_init::zeroed()
    };

    /// The superblock operations (`erofs_sops`).
    const SOPS: bindings::super_operations = bindings::super_operations {
        put_super: Some(trampolines::put_super::<T>),
        alloc_inode: Some(inode_cache::erofs_rs_alloc_inode),
        free_inode: Some(inode_cache::erofs_rs_free_inode),
        evict_inode: Some(inode_cache::erofs_rs_evict_inode),
        statfs: Some(super_block::erofs_rs_statfs::<T>),
        show_options: Some(fs_context::erofs_rs_show_options::<T>),
        ..pin_init::zeroed()
    };

    /// Directories (`erofs_dir_iops`).
    const DIR_IOPS: bindings::inode_operations = bindings::inode_operations {
        lookup: Some(trampolines::lookup::<T>),
        getattr: Some(iomap::erofs_rs_getattr::<T>),
        listxattr: Some(xattr::erofs_rs_listxattr::<T>),
        get_inode_acl: Some(xattr::erofs_rs_get_acl::<T>),
        ..pin_init::zeroed()
    };

    /// Regular files and special files (`erofs_generic_iops`).
    const GENERIC_IOPS: bindings::inode_operations = bindings::inode_operations {
        getattr: Some(iomap::erofs_rs_getattr::<T>),
        listxattr: Some(xattr::erofs_rs_listxattr::<T>),
        get_inode_acl: Some(xattr::erofs_rs_get_acl::<T>),
        fiemap: Some(iomap::erofs_rs_fiemap::<T>),
        ..pin_init::zeroed()
    };

    /// Symbolic links (`erofs_symlink_iops`): the target is read from the page cache.
    const SYMLINK_IOPS: bindings::inode_operations = bindings::inode_operations {
        get_link: Some(bindings::page_get_link),
        getattr: Some(iomap::erofs_rs_getattr::<T>),
        listxattr: Some(xattr::erofs_rs_listxattr::<T>),
        get_inode_acl: Some(xattr::erofs_rs_get_acl::<T>),
        ..pin_init::zeroed()
    };

    /// Regular files (`erofs_file_fops`).
    const FILE_FOPS: bindings::file_operations = bindings::file_operations {
        llseek: Some(iomap::erofs_rs_file_llseek::<T>),
        read_iter: Some(iomap::erofs_rs_file_read_iter::<T>),
        mmap_prepare: Some(bindings::generic_file_readonly_mmap_prepare),
        splice_read: Some(bindings::filemap_splice_read),
        ..pin_init::zeroed()
    };

    /// Directories (`erofs_dir_fops`).
    const DIR_FOPS: bindings::file_operations = bindings::file_operations {
        llseek: Some(bindings::generic_file_llseek),
        read: Some(bindings::generic_read_dir),
        iterate_shared: Some(trampolines::readdir::<T>),
        ..pin_init::zeroed()
    };

    /// Files read through iomap's bios (fs/erofs/data.c's `erofs_aops`), which maps them with
    /// [`FileSystem::iomap_map`].
    const IOMAP_AOPS: bindings::address_space_operations = bindings::address_space_operations {
        read_folio: Some(iomap::erofs_rs_iomap_read_folio::<T>),
        readahead: Some(iomap::erofs_rs_iomap_readahead::<T>),
        bmap: Some(iomap::erofs_rs_bmap::<T>),
        direct_IO: Some(bindings::noop_direct_IO),
        release_folio: Some(sys::iomap_release_folio),
        invalidate_folio: Some(sys::iomap_invalidate_folio),
        ..pin_init::zeroed()
    };

    /// The superblock operations.
    pub(super) const fn sops() -> &'static bindings::super_operations {
        &Self::SOPS
    }

    /// The inode and file operations of an inode of kind `kind`.
    pub(super) const fn inode_ops(
        kind: InodeKind,
    ) -> (
        &'static bindings::inode_operations,
        Option<&'static bindings::file_operations>,
    ) {
        match kind {
            InodeKind::File => (&Self::GENERIC_IOPS, Some(&Self::FILE_FOPS)),
            InodeKind::Dir => (&Self::DIR_IOPS, Some(&Self::DIR_FOPS)),
            InodeKind::Symlink => (&Self::SYMLINK_IOPS, None),
            InodeKind::Special(_) => (&Self::GENERIC_IOPS, None),
        }
    }

    /// The address space operations of files read through iomap.
    pub(super) const fn iomap_aops() -> &'static bindings::address_space_operations {
        &Self::IOMAP_AOPS
    }
}
