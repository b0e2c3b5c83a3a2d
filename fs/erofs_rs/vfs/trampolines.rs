// SPDX-License-Identifier: GPL-2.0-only
//! The `extern "C"` entry points of the superblock, directory and address-space tables that
//! `tables.rs` builds for a [`FileSystem`] (and `fs::aops` for an [`AddressSpace`]): each turns
//! its raw arguments into the safe types of `vfs/`, calls the trait, and turns `Result` into an
//! errno.

use super::{
    fs::{
        AddressSpace,
        FileSystem,
        ReadTarget, //
    },
    pagecache::Readahead,
    DirContext,
    Inode,
    SuperBlock, //
};
use core::marker::PhantomData;
use kernel::{
    bindings,
    error::{
        code::EINVAL,
        from_result, //
    },
    ffi::c_int, //
};

/// `put_super`: gives back what the superblock holds ([`FileSystem::put_super`]), before the
/// VFS checks that no inode is left.
///
/// # Safety
///
/// `sb` is a live superblock of `T` being shut down.
pub(super) unsafe extern "C" fn put_super<T: FileSystem>(sb: *mut bindings::super_block) {
    // SAFETY: `sb` is a live superblock of `T` (contract); `put_super` only runs for
    // superblocks that got a root, which `set_root` gives only after `attach`, so its state is
    // attached, until `kill_sb` after this returns.
    let sb = unsafe { SuperBlock::<T>::from_raw(sb) };
    // First, whatever `T` does (`erofs_put_super` unregisters first too): from here no sysfs
    // `show` or `store` runs on the superblock (removal waits for those in progress), so none
    // outlives the state `kill_sb` frees.
    sb.unregister_sysfs();
    T::put_super(sb);
}

/// `read_folio` of [`AddressSpace`] `A`.
///
/// # Safety
///
/// `folio` is locked, not uptodate, and belongs to a page cache whose operations are `A`'s.
unsafe extern "C" fn read_folio<A: AddressSpace>(
    _file: *mut bindings::file,
    folio: *mut bindings::folio,
) -> c_int {
    // SAFETY: by this function's contract, a locked, not uptodate folio of a page cache with
    // this layer's aops (`A`'s), whose host lives during the call; the kernel's rule for
    // `read_folio` keeps everyone else from writing or mapping it until it is unlocked, which
    // passes to the value (as `read_folio` must unlock it).
    let folio = unsafe { <A::Folio<'_> as ReadTarget>::from_locked(folio) };
    from_result(|| {
        A::read_folio(folio)?;
        Ok(0)
    })
}

/// `readahead` of [`AddressSpace`] `A`.
///
/// # Safety
///
/// `rac` is the live argument of `readahead` for a page cache whose operations are `A`'s.
unsafe extern "C" fn readahead<A: AddressSpace>(rac: *mut bindings::readahead_control) {
    // SAFETY: by this function's contract.
    A::readahead(unsafe { Readahead::from_raw(rac) });
}

/// The `address_space_operations` of [`AddressSpace`] `A`.
pub(super) struct AopsTable<A>(PhantomData<A>);

impl<A: AddressSpace> AopsTable<A> {
    const AOPS: bindings::address_space_operations = bindings::address_space_operations {
        read_folio: Some(read_folio::<A>),
        readahead: Some(readahead::<A>),
        ..pin_init::zeroed()
    };

    /// The table.
    pub(super) const fn get() -> &'static bindings::address_space_operations {
        &Self::AOPS
    }
}

/// `iterate_shared`.
///
/// # Safety
///
/// `file` and `ctx` are the live arguments of `iterate_shared` on a directory of `T`.
pub(super) unsafe extern "C" fn readdir<T: FileSystem>(
    file: *mut bindings::file,
    ctx: *mut bindings::dir_context,
) -> c_int {
    // SAFETY: the arguments of an `iterate_shared` call on a directory of `T` (contract), live
    // for the call, which the context's lifetime does not outlast.
    let ctx = unsafe { DirContext::from_raw(file, ctx) };
    from_result(|| {
        T::readdir(ctx)?;
        Ok(0)
    })
}

/// `lookup`: a dentry from `d_splice_alias`, or an `ERR_PTR`.
///
/// # Safety
///
/// `dir` and `dentry` are the live arguments of `inode_operations::lookup` on a directory of
/// `T`.
pub(super) unsafe extern "C" fn lookup<T: FileSystem>(
    dir: *mut bindings::inode,
    dentry: *mut bindings::dentry,
    flags: u32,
) -> *mut bindings::dentry {
    // SAFETY: a directory of `T` (contract) being looked up in is live and filled (an inode
    // gets a dentry only once it is unlocked, after it is filled).
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
    // SAFETY: a live inode's superblock does not change.
    let sb = unsafe { (*dir.ptr).i_sb };
    match T::lookup(dir, name) {
        // An inode of another superblock of `T` must not get a dentry of this one.
        Ok(Some(inode)) if !inode.is_of_sb(sb) => EINVAL.to_ptr(),
        // SAFETY: `d_splice_alias` consumes the inode reference (or takes NULL for a miss);
        // the inode is one of `dentry`'s superblock (checked above).
        Ok(inode) => unsafe {
            bindings::d_splice_alias(
                inode.map_or(core::ptr::null_mut(), |i| i.into_raw()),
                dentry,
            )
        },
        Err(e) => e.to_ptr(),
    }
}
