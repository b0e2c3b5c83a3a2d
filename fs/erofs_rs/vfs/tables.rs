// SPDX-License-Identifier: GPL-2.0-only
//! The operation tables the kernel calls the driver through, built in Rust the way rust/kernel
//! builds its own (`miscdevice.rs`, `block/mq/operations.rs`): a `bindings` struct whose entries
//! are our `extern "C"` trampolines or the kernel's generic helpers, the rest
//! `..pin_init::zeroed()`. This file has the two wrappers that let such tables be statics
//! ([`Table`] for the ones nobody writes, [`FileSystemType`] for the one the kernel writes to),
//! and the tables that gather the trampolines of several files: the superblock's, the inodes'
//! and their page caches', and the filesystem type. The tables of one abstraction live beside
//! it: `xattr.rs` (the handlers), `iomap.rs`, `export.rs`, `ishare.rs` (the pseudo filesystem
//! and the shared files), `fs_context.rs` (the context operations and the option table),
//! `sysfs.rs` (the attributes). C counterpart: the tables of fs/erofs/super.c, inode.c, dir.c,
//! namei.c, data.c and zdata.c.

use super::{
    fs_context,
    inode_cache,
    iomap,
    super_block,
    sys,
    trampolines,
    xattr, //
};
use kernel::{
    bindings,
    ffi::c_int,
    types::Opaque,
    ModuleMetadata, //
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

    /// The table, for building other tables.
    pub(crate) const fn get(&'static self) -> &'static T {
        &self.0
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
#[repr(transparent)]
pub(crate) struct FileSystemType(Opaque<bindings::file_system_type>);

// SAFETY: no shared reference to the struct is ever given out (type invariant): every access
// is through the raw pointer, under the kernel's locks or before the kernel knows of it.
unsafe impl Sync for FileSystemType {}

impl FileSystemType {
    /// A filesystem type with the fields of `t`.
    pub(crate) const fn new(t: bindings::file_system_type) -> Self {
        // INVARIANT: not reachable by anyone yet.
        FileSystemType(Opaque::new(t))
    }

    /// The struct, for `register_filesystem`, `kern_mount` and the like.
    pub(crate) const fn as_ptr(&'static self) -> *mut bindings::file_system_type {
        self.0.get()
    }
}

/// Our filesystem type (`erofs_fs_type`); `FsType::register` gives it its name, the `fstype`
/// module parameter.
pub(super) static FS_TYPE: FileSystemType = FileSystemType::new(bindings::file_system_type {
    owner: <crate::LocalModule as ModuleMetadata>::THIS_MODULE.as_ptr(),
    init_fs_context: Some(fs_context::erofs_rs_init_fs_context),
    kill_sb: Some(super_block::erofs_rs_kill_sb),
    // CAST: two small flag bits, into the `int` field.
    fs_flags: (bindings::FS_REQUIRES_DEV | bindings::FS_ALLOW_IDMAP) as c_int,
    parameters: fs_context::PARAMETERS
        .as_ptr()
        .cast::<bindings::fs_parameter_spec>(),
    ..pin_init::zeroed()
});

/// The superblock operations (`erofs_sops`).
pub(super) static SOPS: Table<bindings::super_operations> =
    Table::new(bindings::super_operations {
        put_super: Some(trampolines::erofs_rs_put_inodes),
        alloc_inode: Some(inode_cache::erofs_rs_alloc_inode),
        free_inode: Some(inode_cache::erofs_rs_free_inode),
        evict_inode: Some(inode_cache::erofs_rs_evict_inode),
        statfs: Some(super_block::erofs_rs_statfs),
        show_options: Some(fs_context::erofs_rs_show_options),
        ..pin_init::zeroed()
    });

/// Directories (`erofs_dir_iops`).
pub(super) static DIR_IOPS: Table<bindings::inode_operations> =
    Table::new(bindings::inode_operations {
        lookup: Some(trampolines::erofs_rs_lookup),
        getattr: Some(iomap::erofs_rs_getattr),
        listxattr: Some(xattr::erofs_rs_listxattr),
        get_inode_acl: Some(xattr::erofs_rs_get_acl),
        ..pin_init::zeroed()
    });

/// Regular files and special files (`erofs_generic_iops`).
pub(super) static GENERIC_IOPS: Table<bindings::inode_operations> =
    Table::new(bindings::inode_operations {
        getattr: Some(iomap::erofs_rs_getattr),
        listxattr: Some(xattr::erofs_rs_listxattr),
        get_inode_acl: Some(xattr::erofs_rs_get_acl),
        fiemap: Some(iomap::erofs_rs_fiemap),
        ..pin_init::zeroed()
    });

/// Symbolic links (`erofs_symlink_iops`): the target is read from the page cache.
pub(super) static SYMLINK_IOPS: Table<bindings::inode_operations> =
    Table::new(bindings::inode_operations {
        get_link: Some(bindings::page_get_link),
        getattr: Some(iomap::erofs_rs_getattr),
        listxattr: Some(xattr::erofs_rs_listxattr),
        get_inode_acl: Some(xattr::erofs_rs_get_acl),
        ..pin_init::zeroed()
    });

/// Regular files (`erofs_file_fops`).
pub(super) static FILE_FOPS: Table<bindings::file_operations> =
    Table::new(bindings::file_operations {
        llseek: Some(iomap::erofs_rs_file_llseek),
        read_iter: Some(iomap::erofs_rs_file_read_iter),
        mmap_prepare: Some(bindings::generic_file_readonly_mmap_prepare),
        splice_read: Some(bindings::filemap_splice_read),
        ..pin_init::zeroed()
    });

/// Directories (`erofs_dir_fops`).
pub(super) static DIR_FOPS: Table<bindings::file_operations> =
    Table::new(bindings::file_operations {
        llseek: Some(bindings::generic_file_llseek),
        read: Some(bindings::generic_read_dir),
        iterate_shared: Some(trampolines::erofs_rs_readdir),
        ..pin_init::zeroed()
    });

/// Uncompressed files of file-backed mounts (fs/erofs/fileio.c's `erofs_fileio_aops`):
/// `read_folio` copies from the backing file's page cache, `readahead` reads the backing file
/// into the folios with kiocbs.
pub(super) static AOPS: Table<bindings::address_space_operations> =
    Table::new(bindings::address_space_operations {
        read_folio: Some(trampolines::erofs_rs_read_folio),
        readahead: Some(trampolines::erofs_rs_readahead),
        ..pin_init::zeroed()
    });

/// Uncompressed files of block-device mounts: iomap's bios (fs/erofs/data.c's `erofs_aops`).
pub(super) static IOMAP_AOPS: Table<bindings::address_space_operations> =
    Table::new(bindings::address_space_operations {
        read_folio: Some(iomap::erofs_rs_iomap_read_folio),
        readahead: Some(iomap::erofs_rs_iomap_readahead),
        bmap: Some(iomap::erofs_rs_bmap),
        direct_IO: Some(bindings::noop_direct_IO),
        release_folio: Some(sys::iomap_release_folio),
        invalidate_folio: Some(sys::iomap_invalidate_folio),
        ..pin_init::zeroed()
    });

/// Compressed files, of both kinds of mounts (fs/erofs/zdata.c's `z_erofs_aops`).
pub(super) static Z_AOPS: Table<bindings::address_space_operations> =
    Table::new(bindings::address_space_operations {
        read_folio: Some(trampolines::erofs_rs_z_read_folio),
        readahead: Some(trampolines::erofs_rs_z_readahead),
        ..pin_init::zeroed()
    });
