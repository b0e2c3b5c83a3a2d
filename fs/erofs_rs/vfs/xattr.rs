// SPDX-License-Identifier: GPL-2.0-only
//! Extended attribute handlers and ACLs (`struct xattr_handler`, `get_inode_acl`): the
//! handlers a superblock of ours lists (`s_xattr`) and their functions, which prefixes
//! `listxattr` shows, and the POSIX ACLs read from the `system.posix_acl_*` xattrs. C
//! counterpart: fs/erofs/xattr.c. The lookups themselves are the driver's (`xattr.rs`).

use super::{
    sys,
    tables::Table,
    Dentry,
    Inode,
    SuperBlock, //
};
use crate::erofs_core::xattr::{
    EROFS_XATTR_INDEX_POSIX_ACL_ACCESS,
    EROFS_XATTR_INDEX_POSIX_ACL_DEFAULT,
    EROFS_XATTR_INDEX_SECURITY,
    EROFS_XATTR_INDEX_TRUSTED,
    EROFS_XATTR_INDEX_USER, //
};
use core::ptr;
use kernel::{
    bindings,
    error::from_result,
    ffi::{
        c_char,
        c_int,
        c_void, //
    },
    prelude::*,
    str::CStr, //
};

/// A handler of the xattrs under `prefix`, whose short prefix index (`.flags`, as the C
/// driver's) is `index`.
const fn handler(
    prefix: &'static [u8],
    index: u8,
    list: Option<unsafe extern "C" fn(*mut bindings::dentry) -> bool>,
) -> bindings::xattr_handler {
    bindings::xattr_handler {
        prefix: prefix.as_ptr(),
        flags: index as c_int,
        list,
        get: Some(erofs_rs_xattr_get),
        ..pin_init::zeroed()
    }
}

/// `user.*` (`erofs_xattr_user_handler`), listed with `user_xattr`.
static USER_HANDLER: Table<bindings::xattr_handler> = Table::new(handler(
    bindings::XATTR_USER_PREFIX,
    EROFS_XATTR_INDEX_USER,
    Some(erofs_rs_xattr_user_list),
));

/// `trusted.*` (`erofs_xattr_trusted_handler`), listed to `CAP_SYS_ADMIN`.
static TRUSTED_HANDLER: Table<bindings::xattr_handler> = Table::new(handler(
    bindings::XATTR_TRUSTED_PREFIX,
    EROFS_XATTR_INDEX_TRUSTED,
    Some(erofs_rs_xattr_trusted_list),
));

/// `security.*` (`erofs_xattr_security_handler`), always listed.
static SECURITY_HANDLER: Table<bindings::xattr_handler> = Table::new(handler(
    bindings::XATTR_SECURITY_PREFIX,
    EROFS_XATTR_INDEX_SECURITY,
    None,
));

/// The handlers of a superblock of ours (`erofs_xattr_handlers`, `s_xattr`), NULL-terminated.
/// The ACLs are not among them: `get_inode_acl` reads those.
pub(super) static HANDLERS: Table<[*const bindings::xattr_handler; 4]> = Table::new([
    USER_HANDLER.as_ptr(),
    TRUSTED_HANDLER.as_ptr(),
    SECURITY_HANDLER.as_ptr(),
    ptr::null(),
]);

/// `list` of the `user.` handler: whether the mount shows `user.*` (`user_xattr`).
///
/// # Safety
///
/// `dentry` is a live dentry of a mounted superblock of ours.
pub(crate) unsafe extern "C" fn erofs_rs_xattr_user_list(dentry: *mut bindings::dentry) -> bool {
    // SAFETY: a live dentry's superblock is live; ours are attached once mounted (contract).
    let st = unsafe { SuperBlock::from_raw((*dentry).d_sb) }.state();
    st.opt_flags()
        .contains(super::fs_context::MountFlags::USER_XATTR)
}

/// `list` of the `trusted.` handler: whether the caller has `CAP_SYS_ADMIN`.
pub(crate) extern "C" fn erofs_rs_xattr_trusted_list(_dentry: *mut bindings::dentry) -> bool {
    // CAST: capabilities are small constants.
    // SAFETY: no preconditions.
    unsafe { bindings::capable(bindings::CAP_SYS_ADMIN as c_int) }
}

/// `get` of every handler (`erofs_xattr_generic_get`): the value of xattr `name` under the
/// handler's short prefix index (its `flags`), copied into `buffer` unless it is null.
///
/// # Safety
///
/// The arguments are those of `xattr_handler::get` for one of our handlers ([`HANDLERS`]), on
/// a live, filled inode of ours: `name` is NUL-terminated, `buffer` null or writable for
/// `size` bytes.
pub(crate) unsafe extern "C" fn erofs_rs_xattr_get(
    handler: *const bindings::xattr_handler,
    _dentry: *mut bindings::dentry,
    inode: *mut bindings::inode,
    name: *const c_char,
    buffer: *mut c_void,
    size: usize,
) -> c_int {
    // SAFETY: `handler` is one of our handlers, static (contract).
    let index = unsafe { (*handler).flags };
    // SAFETY: `inode` is a live, filled inode of ours (contract).
    let inode = unsafe { Inode::from_raw(inode) };
    // SAFETY: `name` is NUL-terminated and stays so during the call (contract).
    let name = unsafe { CStr::from_char_ptr(name) }.to_bytes();
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

/// The prefix `listxattr` shows for short prefix index `idx`, or `None` if the caller may not
/// see it (`erofs_xattr_prefix`, with `xattr_handler_can_list`).
pub(crate) fn prefix(dentry: Dentry<'_>, idx: u8) -> Option<&'static [u8]> {
    let h: *const bindings::xattr_handler = match idx {
        EROFS_XATTR_INDEX_USER => USER_HANDLER.as_ptr(),
        EROFS_XATTR_INDEX_POSIX_ACL_ACCESS => &raw const sys::nop_posix_acl_access,
        EROFS_XATTR_INDEX_POSIX_ACL_DEFAULT => &raw const sys::nop_posix_acl_default,
        EROFS_XATTR_INDEX_TRUSTED => TRUSTED_HANDLER.as_ptr(),
        EROFS_XATTR_INDEX_SECURITY => SECURITY_HANDLER.as_ptr(),
        _ => return None,
    };
    // `xattr_handler_can_list()`.
    // SAFETY: `h` is a static handler, never changed; a `list` callback takes any live dentry.
    if let Some(list) = unsafe { (*h).list } {
        // SAFETY: `dentry` is live (type invariant).
        if !unsafe { list(dentry.ptr) } {
            return None;
        }
    }
    // `xattr_prefix()`: the prefix, or the whole name for handlers of one name.
    // SAFETY: `h` is a static handler, never changed.
    let p = unsafe {
        if (*h).prefix.is_null() {
            (*h).name
        } else {
            (*h).prefix
        }
    };
    // SAFETY: a listable handler has a static, NUL-terminated prefix or name.
    Some(unsafe { CStr::from_char_ptr(p) }.to_bytes())
}

/// Reads the ACL stored under short prefix index `index` of `inode`: `None` if it has none.
fn read_acl(inode: Inode<'_>, index: u8) -> Result<*mut bindings::posix_acl> {
    let none = |e: Error| {
        if e == ENODATA {
            Ok(core::ptr::null_mut())
        } else {
            Err(e)
        }
    };
    let n = match crate::xattr::getxattr(inode, index, b"", None) {
        Ok(n) => n,
        Err(e) => return none(e),
    };
    let mut value = KVec::new();
    let mut len = n;
    if n > 0 {
        value = KVec::from_elem(0u8, n, GFP_KERNEL)?;
        len = match crate::xattr::getxattr(inode, index, b"", Some(&mut value)) {
            Ok(len) => len,
            Err(e) => return none(e),
        };
    }
    let data = if n > 0 {
        value.as_ptr()
    } else {
        core::ptr::null()
    };
    // SAFETY: `data` is null for an empty value or readable for its `len <= n` bytes; the
    // user namespace is the static initial one.
    Ok(unsafe { sys::posix_acl_from_xattr(&raw mut bindings::init_user_ns, data.cast(), len) })
}

/// `get_inode_acl` (`erofs_get_acl`): an ACL, null for none, or an `ERR_PTR`.
///
/// # Safety
///
/// `inode` is a live, filled inode of ours.
pub(crate) unsafe extern "C" fn erofs_rs_get_acl(
    inode: *mut bindings::inode,
    ty: c_int,
    rcu: bool,
) -> *mut bindings::posix_acl {
    if rcu {
        return ECHILD.to_ptr();
    }
    // CAST: `ACL_TYPE_*` are small constants.
    let index = match ty {
        t if t == sys::ACL_TYPE_ACCESS as c_int => EROFS_XATTR_INDEX_POSIX_ACL_ACCESS,
        t if t == sys::ACL_TYPE_DEFAULT as c_int => EROFS_XATTR_INDEX_POSIX_ACL_DEFAULT,
        _ => return EINVAL.to_ptr(),
    };
    // SAFETY: by this function's contract.
    match read_acl(unsafe { Inode::from_raw(inode) }, index) {
        Ok(acl) => acl,
        Err(e) => e.to_ptr(),
    }
}
