// SPDX-License-Identifier: GPL-2.0-only
//! NFS export (`struct export_operations`, `include/linux/exportfs.h`): file handles carry the
//! nid and the generation (`FILEID_INO64_GEN`, and the parent's with `_PARENT`), not `i_ino`,
//! which differs with a metabox. C counterpart: `erofs_export_ops` in fs/erofs/super.c.

use super::{
    fs::FileSystem,
    sys,
    Inode,
    InodeRef,
    SuperBlock, //
};
use kernel::{
    bindings,
    ffi::c_int,
    prelude::*, //
};

/// The export operations of filesystem `T` (`erofs_export_ops`, `s_export_op`).
pub(crate) struct ExportOps<T>(core::marker::PhantomData<T>);

impl<T: FileSystem> ExportOps<T> {
    const OPS: sys::export_operations = sys::export_operations {
        encode_fh: Some(erofs_rs_encode_fh::<T>),
        fh_to_dentry: Some(erofs_rs_fh_to_dentry::<T>),
        fh_to_parent: Some(erofs_rs_fh_to_parent::<T>),
        get_parent: Some(erofs_rs_get_parent::<T>),
        ..pin_init::zeroed()
    };

    /// The table, for `s_export_op`.
    pub(super) const fn get() -> &'static sys::export_operations {
        &Self::OPS
    }
}

/// The words of a handle of `inode`: its id ([`FileSystem::handle_id`]), high word first, and
/// the generation.
fn words<T: FileSystem>(inode: Inode<'_, T>) -> [u32; 3] {
    let id = T::handle_id(inode);
    // SAFETY: `ptr` is live (type invariant); `i_generation` is not written once the inode
    // is filled (this layer never writes it).
    let generation = unsafe { (*inode.ptr).i_generation };
    // CAST: the two halves of the id.
    [(id >> 32) as u32, id as u32, generation]
}

/// The id in the two handle words at `w` (`fid->raw[w]`, `fid->raw[w + 1]`).
///
/// # Safety
///
/// `fid` holds at least `w + 2` words.
unsafe fn id_at(fid: *const sys::fid, w: usize) -> u64 {
    // `fid->raw` is the start of the handle: the union is `struct fid` itself, and `raw`
    // follows an empty struct in its member.
    const _: () = assert!(core::mem::offset_of!(sys::fid__bindgen_ty_1__bindgen_ty_4, raw) == 0);
    const _: () = assert!(core::mem::offset_of!(sys::fid, __bindgen_anon_1) == 0);
    let raw = fid.cast::<u32>();
    // SAFETY: `raw` is the handle's words, of which there are at least `w + 2` (contract).
    let (hi, lo) = unsafe { (raw.add(w).read(), raw.add(w + 1).read()) };
    (u64::from(hi) << 32) | u64::from(lo)
}

/// A disconnected dentry for an inode of superblock `sb` (or an `ERR_PTR`), as
/// `d_obtain_alias(erofs_iget())`; `EINVAL` for an inode of another superblock of `T`.
fn obtain<T: FileSystem>(
    sb: *mut bindings::super_block,
    r: Result<InodeRef<T>>,
) -> *mut bindings::dentry {
    match r {
        Ok(inode) if !inode.is_of_sb(sb) => EINVAL.to_ptr(),
        // SAFETY: `d_obtain_alias` takes over the inode reference, of an inode of `sb`
        // (checked above).
        Ok(inode) => unsafe { bindings::d_obtain_alias(inode.into_raw()) },
        Err(e) => e.to_ptr(),
    }
}

/// `encode_fh` (`erofs_encode_fh`).
///
/// # Safety
///
/// `inode` and `parent` (or null) are live, filled inodes of a superblock of `T` (`T`'s
/// `encode_fh`); `fh` is writable for `*max_len` words.
unsafe extern "C" fn erofs_rs_encode_fh<T: FileSystem>(
    inode: *mut bindings::inode,
    fh: *mut u32,
    max_len: *mut c_int,
    parent: *mut bindings::inode,
) -> c_int {
    let len: c_int = if parent.is_null() { 3 } else { 6 };
    // SAFETY: `max_len` is live and only ours during the call (contract).
    let room = unsafe { &mut *max_len };
    if *room < len {
        *room = len;
        // CAST: `fid_type` values fit in `int`.
        return sys::fid_type_FILEID_INVALID as c_int;
    }
    // CAST: `len` is 3 or 6.
    // SAFETY: `fh` has room for `len` words, checked above.
    let fh = unsafe { core::slice::from_raw_parts_mut(fh, len as usize) };
    // SAFETY: `inode` is a live, filled inode of `T` (contract), live for the call.
    fh[..3].copy_from_slice(&words::<T>(unsafe { Inode::from_raw(inode) }));
    if !parent.is_null() {
        // SAFETY: as for `inode`.
        fh[3..].copy_from_slice(&words::<T>(unsafe { Inode::from_raw(parent) }));
    }
    *room = len;
    // CAST: as above.
    if parent.is_null() {
        sys::fid_type_FILEID_INO64_GEN as c_int
    } else {
        sys::fid_type_FILEID_INO64_GEN_PARENT as c_int
    }
}

/// `fh_to_dentry` (`erofs_fh_to_dentry`).
///
/// # Safety
///
/// `sb` is a mounted superblock of `T` (`T`'s `fh_to_dentry`); `fid` holds `fh_len` words.
unsafe extern "C" fn erofs_rs_fh_to_dentry<T: FileSystem>(
    sb: *mut bindings::super_block,
    fid: *mut sys::fid,
    fh_len: c_int,
    fh_type: c_int,
) -> *mut bindings::dentry {
    // CAST: `fid_type` values fit in `int`.
    let ok_type = fh_type == sys::fid_type_FILEID_INO64_GEN as c_int
        || fh_type == sys::fid_type_FILEID_INO64_GEN_PARENT as c_int;
    if !ok_type || fh_len < 3 {
        return core::ptr::null_mut();
    }
    // SAFETY: `fid` holds at least 3 words, checked above.
    let id = unsafe { id_at(fid, 0) };
    // SAFETY: `sb` is a mounted, so attached, superblock of `T` (contract), live for the call.
    let r = T::inode_by_handle(unsafe { SuperBlock::from_raw(sb) }, id);
    obtain(sb, r)
}

/// `fh_to_parent` (`erofs_fh_to_parent`).
///
/// # Safety
///
/// As for [`erofs_rs_fh_to_dentry`].
unsafe extern "C" fn erofs_rs_fh_to_parent<T: FileSystem>(
    sb: *mut bindings::super_block,
    fid: *mut sys::fid,
    fh_len: c_int,
    fh_type: c_int,
) -> *mut bindings::dentry {
    // CAST: as above.
    if fh_type != sys::fid_type_FILEID_INO64_GEN_PARENT as c_int || fh_len < 6 {
        return core::ptr::null_mut();
    }
    // SAFETY: `fid` holds at least 6 words, checked above.
    let id = unsafe { id_at(fid, 3) };
    // SAFETY: as in `erofs_rs_fh_to_dentry`.
    let r = T::inode_by_handle(unsafe { SuperBlock::from_raw(sb) }, id);
    obtain(sb, r)
}

/// `get_parent` (`erofs_get_parent`): the directory's ".." entry.
///
/// # Safety
///
/// `child` is a positive dentry of a directory of `T` (`T`'s `get_parent`).
unsafe extern "C" fn erofs_rs_get_parent<T: FileSystem>(
    child: *mut bindings::dentry,
) -> *mut bindings::dentry {
    // SAFETY: a positive dentry of `T` has a live, filled inode of `T` (contract), which
    // the dentry keeps for the call.
    let dir = unsafe { Inode::from_raw((*child).d_inode) };
    // SAFETY: a live dentry's superblock does not change.
    let sb = unsafe { (*child).d_sb };
    obtain(sb, T::lookup(dir, b"..").and_then(|i| i.ok_or(ENOENT)))
}
