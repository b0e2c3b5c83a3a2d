// SPDX-License-Identifier: GPL-2.0-only
//! The `extern "C"` entry points that the operation tables of `tables.rs` call: each turns its
//! raw arguments into the safe types of `vfs/`, calls the driver, and turns `Result` into an errno.

use super::{
    DirContext,
    Inode,
    LockedFolio,
    SuperBlock, //
};
use kernel::{
    bindings,
    error::from_result,
    ffi::c_int, //
};

/// `put_super`: gives back the inodes the superblock holds (the packed, metabox and
/// managed-cache inodes), before the VFS checks that none is left.
///
/// # Safety
///
/// `sb` is a live superblock of ours being shut down.
pub(crate) unsafe extern "C" fn erofs_rs_put_inodes(sb: *mut bindings::super_block) {
    // SAFETY: `put_super` only runs for superblocks that got a root, so the state is attached.
    let st = unsafe { SuperBlock::from_raw(sb) }.state();
    st.sysfs.unregister();
    st.packed.release();
    st.dev.metabox.release();
    st.dev.zcache.release();
}

/// `read_folio` of compressed inodes.
///
/// # Safety
///
/// `folio` is locked, not uptodate, and belongs to one of our compressed inodes (or to the
/// shared inode of some, with `inode_share`).
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
pub(crate) unsafe extern "C" fn erofs_rs_z_readahead(rac: *mut bindings::readahead_control) {
    // SAFETY: by this function's contract.
    crate::zdata::readahead(unsafe { super::zdata::Readahead::from_raw(rac) });
}

/// `readahead` of uncompressed files of file-backed mounts (`erofs_fileio_readahead`).
///
/// # Safety
///
/// `rac` is the live argument of `readahead` for one of our uncompressed inodes (or a shared
/// inode of some) on a file-backed mount.
pub(crate) unsafe extern "C" fn erofs_rs_readahead(rac: *mut bindings::readahead_control) {
    // SAFETY: by this function's contract.
    crate::data::readahead(unsafe { super::zdata::Readahead::from_raw(rac) });
}

/// `read_folio`: fills a locked folio and unlocks it.
///
/// # Safety
///
/// `folio` is locked and belongs to one of our inodes' page caches.
pub(crate) unsafe extern "C" fn erofs_rs_read_folio(
    _file: *mut bindings::file,
    folio: *mut bindings::folio,
) -> c_int {
    // SAFETY: the folio `read_folio` gets, locked and not uptodate, of one of our inodes'
    // page caches (this function's contract), live while it is locked there; `read_folio`
    // fills it, nobody maps it before it is uptodate, and must unlock it, which passes to the
    // value.
    let folio = unsafe { LockedFolio::from_raw(folio) };
    from_result(|| {
        crate::data::read_folio(folio)?;
        Ok(0)
    })
}

/// `iterate_shared`.
///
/// # Safety
///
/// `file` and `ctx` are the live arguments of `iterate_shared` on one of our directories.
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
pub(crate) unsafe extern "C" fn erofs_rs_lookup(
    dir: *mut bindings::inode,
    dentry: *mut bindings::dentry,
    flags: u32,
) -> *mut bindings::dentry {
    // SAFETY: a directory being looked up in is live and filled.
    let dir = unsafe { Inode::from_raw(dir) };
    // SAFETY: `dentry` is the live dentry being looked up.
    unsafe { super::trace::lookup(&dir, dentry, flags) };
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
