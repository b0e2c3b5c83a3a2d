// SPDX-License-Identifier: GPL-2.0-only
//! The `extern "C"` entry points that `glue.c`'s operation tables call: each turns its raw
//! arguments into the safe types of `vfs/`, calls the driver, and turns `Result` into an errno.

use super::{
    ffi,
    Dentry,
    DirContext,
    Inode,
    LockedFolio,
    SuperBlock, //
};
use kernel::{
    bindings,
    error::from_result,
    ffi::{
        c_int,
        c_void, //
    },
    prelude::*, //
};

/// Whether `user.*` xattrs are listed and read (`user_xattr`), for the xattr handler.
///
/// # Safety
///
/// `sb` is a live, mounted superblock of ours.
#[no_mangle]
pub(crate) unsafe extern "C" fn erofs_rs_sb_user_xattr(sb: *mut bindings::super_block) -> bool {
    // SAFETY: by this function's contract, the state is attached.
    let st = unsafe { SuperBlock::from_raw(sb) }.state();
    st.opt_flags()
        .contains(super::fs_context::MountFlags::USER_XATTR)
}

/// `getxattr` for short name index `index` (a handler's `get`, or the ACL lookup): the value's
/// size, copied into `buffer` unless it is null.
///
/// # Safety
///
/// `inode` is a live, filled inode of ours; `name` is readable for `len` bytes; `buffer` is null
/// or writable for `size` bytes.
#[no_mangle]
pub(crate) unsafe extern "C" fn erofs_rs_getxattr(
    inode: *mut bindings::inode,
    index: c_int,
    name: *const u8,
    len: usize,
    buffer: *mut c_void,
    size: usize,
) -> c_int {
    // SAFETY: by this function's contract.
    let inode = unsafe { Inode::from_raw(inode) };
    // SAFETY: `name` is readable for `len` bytes.
    let name = unsafe { core::slice::from_raw_parts(name, len) };
    let buf = if buffer.is_null() {
        None
    } else {
        // SAFETY: `buffer` is writable for `size` bytes and nothing else uses it meanwhile.
        Some(unsafe { core::slice::from_raw_parts_mut(buffer.cast::<u8>(), size) })
    };
    from_result(|| {
        let index = u8::try_from(index).map_err(|_| EINVAL)?;
        let n = crate::xattr::getxattr(inode, index, name, buf)?;
        c_int::try_from(n).map_err(|_| ERANGE)
    })
}

/// `listxattr`: the size of the name list, written into `buffer` unless it is null.
///
/// # Safety
///
/// `dentry` is a live, positive dentry of ours; `buffer` is null or writable for `size` bytes.
#[no_mangle]
pub(crate) unsafe extern "C" fn erofs_rs_listxattr(
    dentry: *mut bindings::dentry,
    buffer: *mut u8,
    size: usize,
) -> isize {
    // SAFETY: by this function's contract.
    let dentry = unsafe { Dentry::from_raw(dentry) };
    let buf = if buffer.is_null() {
        None
    } else {
        // SAFETY: `buffer` is writable for `size` bytes and nothing else uses it meanwhile.
        Some(unsafe { core::slice::from_raw_parts_mut(buffer, size) })
    };
    from_result(|| {
        let n = crate::xattr::listxattr(dentry, buf)?;
        isize::try_from(n).map_err(|_| ERANGE)
    })
}

/// `put_super`: gives back the inodes the superblock holds (the packed inode), before the VFS
/// checks that none is left.
///
/// # Safety
///
/// `sb` is a live superblock of ours being shut down.
#[no_mangle]
pub(crate) unsafe extern "C" fn erofs_rs_put_inodes(sb: *mut bindings::super_block) {
    // SAFETY: `put_super` only runs for superblocks that got a root, so the state is attached.
    let st = unsafe { SuperBlock::from_raw(sb) }.state();
    st.packed.release();
    st.dev.metabox.release();
}

/// `read_folio` of compressed inodes.
///
/// # Safety
///
/// `folio` is locked, not uptodate, and belongs to one of our compressed inodes (or to the
/// shared inode of some, with `inode_share`).
#[no_mangle]
pub(crate) unsafe extern "C" fn erofs_rs_z_read_folio(
    _file: *mut bindings::file,
    folio: *mut bindings::folio,
) -> c_int {
    // SAFETY: by this function's contract; `read_folio` must unlock it, which `OutFolio` does.
    let folio = unsafe { super::zdata::OutFolio::from_raw(folio) };
    from_result(|| {
        crate::zdata::read_folio(folio)?;
        Ok(0)
    })
}

/// `readahead` of compressed inodes.
///
/// # Safety
///
/// `rac` is the live argument of `readahead` for one of our compressed inodes (or for the
/// shared inode of some, with `inode_share`).
#[no_mangle]
pub(crate) unsafe extern "C" fn erofs_rs_z_readahead(rac: *mut bindings::readahead_control) {
    // SAFETY: by this function's contract.
    crate::zdata::readahead(unsafe { super::zdata::Readahead::from_raw(rac) });
}

/// `read_folio`: fills a locked folio and unlocks it.
///
/// # Safety
///
/// `folio` is locked and belongs to one of our inodes' page caches.
#[no_mangle]
pub(crate) unsafe extern "C" fn erofs_rs_read_folio(
    _file: *mut bindings::file,
    folio: *mut bindings::folio,
) -> c_int {
    // SAFETY: by this function's contract.
    let folio = unsafe { LockedFolio::from_raw(folio) };
    from_result(|| {
        crate::data::read_folio(folio)?;
        Ok(0)
    })
}

/// Maps `offset` of `inode` for iomap; copies inline data into `inline_buf` (PAGE_SIZE bytes)
/// when it is not null.
///
/// # Safety
///
/// `inode` is a live, filled inode of ours; `ext` is writable; `inline_buf` is null or
/// writable for PAGE_SIZE bytes.
#[no_mangle]
pub(crate) unsafe extern "C" fn erofs_rs_iomap_map(
    inode: *mut bindings::inode,
    offset: u64,
    length: u64,
    ext: *mut ffi::Extent,
    inline_buf: *mut c_void,
) -> c_int {
    // SAFETY: by this function's contract.
    let inode = unsafe { Inode::from_raw(inode) };
    let buf = if inline_buf.is_null() {
        None
    } else {
        // SAFETY: `inline_buf` is writable for PAGE_SIZE bytes, owned by this iomap iteration.
        Some(unsafe {
            core::slice::from_raw_parts_mut(inline_buf.cast::<u8>(), kernel::page::PAGE_SIZE)
        })
    };
    from_result(|| {
        let e = crate::data::iomap_map(inode, offset, length, buf)?;
        // SAFETY: `ext` is writable (contract).
        unsafe { ext.write(e) };
        Ok(0)
    })
}

/// The nid of one of our inodes, for NFS file handles (`EROFS_I(inode)->nid`).
///
/// # Safety
///
/// `inode` is a live, filled inode of ours.
#[no_mangle]
pub(crate) unsafe extern "C" fn erofs_rs_inode_nid(inode: *mut bindings::inode) -> u64 {
    // SAFETY: by this function's contract.
    unsafe { Inode::from_raw(inode) }.info().nid.0
}

/// The inode `nid` (for NFS file handles): a new reference or an `ERR_PTR`.
///
/// # Safety
///
/// `sb` is a live, mounted superblock of ours.
#[no_mangle]
pub(crate) unsafe extern "C" fn erofs_rs_iget(
    sb: *mut bindings::super_block,
    nid: u64,
) -> *mut bindings::inode {
    // SAFETY: by this function's contract.
    let sb = unsafe { SuperBlock::from_raw(sb) };
    match crate::inode::iget(sb, crate::erofs_core::Nid(nid)) {
        Ok(inode) => inode.into_raw(),
        Err(e) => e.to_ptr(),
    }
}

/// The parent of directory `dir` (its ".." entry), for NFS: a new reference or an `ERR_PTR`.
///
/// # Safety
///
/// `dir` is a live, filled directory inode of ours.
#[no_mangle]
pub(crate) unsafe extern "C" fn erofs_rs_iget_parent(
    dir: *mut bindings::inode,
) -> *mut bindings::inode {
    // SAFETY: by this function's contract.
    let dir = unsafe { Inode::from_raw(dir) };
    match crate::namei::lookup(dir, b"..") {
        Ok(Some(inode)) => inode.into_raw(),
        Ok(None) => ENOENT.to_ptr(),
        Err(e) => e.to_ptr(),
    }
}

/// `iterate_shared`.
///
/// # Safety
///
/// `file` and `ctx` are the live arguments of `iterate_shared` on one of our directories.
#[no_mangle]
pub(crate) unsafe extern "C" fn erofs_rs_readdir(
    file: *mut bindings::file,
    ctx: *mut bindings::dir_context,
) -> c_int {
    // SAFETY: by this function's contract.
    let ctx = unsafe { DirContext::from_raw(file, ctx) };
    from_result(|| {
        crate::dir::readdir(ctx)?;
        Ok(0)
    })
}

/// `lookup`: a dentry from `d_splice_alias`, or an `ERR_PTR`.
///
/// # Safety
///
/// `dir` and `dentry` are the live arguments of `inode_operations::lookup` on our directory.
#[no_mangle]
pub(crate) unsafe extern "C" fn erofs_rs_lookup(
    dir: *mut bindings::inode,
    dentry: *mut bindings::dentry,
    _flags: u32,
) -> *mut bindings::dentry {
    // SAFETY: a directory being looked up in is live and filled.
    let dir = unsafe { Inode::from_raw(dir) };
    // SAFETY: `dentry` is live and its name is stable during lookup.
    let (name, len) = unsafe {
        let q = &(*dentry).__bindgen_anon_1.d_name;
        (q.name, q.__bindgen_anon_1.__bindgen_anon_1.len)
    };
    // SAFETY: `d_name` points to `len` readable bytes while the dentry is being looked up.
    let name = unsafe { core::slice::from_raw_parts(name, len as usize) };
    match crate::namei::lookup(dir, name) {
        // SAFETY: `d_splice_alias` consumes the inode reference (or takes NULL for a miss).
        Ok(inode) => unsafe {
            bindings::d_splice_alias(
                inode.map_or(core::ptr::null_mut(), |i| i.into_raw()),
                dentry,
            )
        },
        Err(e) => e.to_ptr(),
    }
}
