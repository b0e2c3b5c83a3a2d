// SPDX-License-Identifier: GPL-2.0-only
//! Extended attribute handlers and ACLs (`struct xattr_handler`, `get_inode_acl`): the
//! handlers a superblock of ours lists (`s_xattr`) and their functions, which prefixes
//! `listxattr` shows, and the POSIX ACLs read from the `system.posix_acl_*` xattrs. C
//! counterpart: fs/erofs/xattr.c. The lookups themselves are the filesystem's
//! ([`FileSystem::getxattr`], [`FileSystem::listxattr`]), by [`Namespace`].

use super::{
    fs::FileSystem,
    sys,
    Dentry,
    Inode,
    SuperBlock, //
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

/// The namespaces of extended attributes a filesystem of this layer serves: one handler each
/// for the first three (`s_xattr`), and the POSIX ACLs, which `get_inode_acl` reads.
#[derive(Clone, Copy, PartialEq, Eq, Debug)]
pub(crate) enum Namespace {
    /// `user.*`, listed while [`FileSystem::user_xattrs`] says so.
    User = 1,
    /// `trusted.*`, listed to `CAP_SYS_ADMIN`.
    Trusted = 2,
    /// `security.*`, always listed.
    Security = 3,
    /// `system.posix_acl_access`.
    AclAccess = 4,
    /// `system.posix_acl_default`.
    AclDefault = 5,
}

impl Namespace {
    /// The namespace a handler serves, from its `flags` (as [`handler`] set them).
    fn from_flags(flags: c_int) -> Option<Self> {
        [Self::User, Self::Trusted, Self::Security]
            .into_iter()
            // CAST: the discriminants are small.
            .find(|ns| *ns as c_int == flags)
    }
}

/// A handler of the xattrs under `prefix` of namespace `ns` (in `.flags`), for filesystem `T`.
const fn handler<T: FileSystem>(
    prefix: &'static [u8],
    ns: Namespace,
    list: Option<unsafe extern "C" fn(*mut bindings::dentry) -> bool>,
) -> bindings::xattr_handler {
    bindings::xattr_handler {
        prefix: prefix.as_ptr(),
        // CAST: the discriminants are small.
        flags: ns as c_int,
        list,
        get: Some(erofs_rs_xattr_get::<T>),
        ..pin_init::zeroed()
    }
}

/// The xattr handlers of filesystem `T`.
pub(crate) struct Handlers<T>(core::marker::PhantomData<T>);

impl<T: FileSystem> Handlers<T> {
    /// `user.*` (`erofs_xattr_user_handler`).
    const USER: bindings::xattr_handler = handler::<T>(
        bindings::XATTR_USER_PREFIX,
        Namespace::User,
        Some(erofs_rs_xattr_user_list::<T>),
    );

    /// `trusted.*` (`erofs_xattr_trusted_handler`).
    const TRUSTED: bindings::xattr_handler = handler::<T>(
        bindings::XATTR_TRUSTED_PREFIX,
        Namespace::Trusted,
        Some(erofs_rs_xattr_trusted_list),
    );

    /// `security.*` (`erofs_xattr_security_handler`).
    const SECURITY: bindings::xattr_handler =
        handler::<T>(bindings::XATTR_SECURITY_PREFIX, Namespace::Security, None);

    /// The handlers of a superblock (`erofs_xattr_handlers`, `s_xattr`), NULL-terminated. The
    /// ACLs are not among them: `get_inode_acl` reads those.
    const LIST: [*const bindings::xattr_handler; 4] =
        [&Self::USER, &Self::TRUSTED, &Self::SECURITY, ptr::null()];

    /// [`Handlers::LIST`], for `s_xattr`.
    pub(super) const fn list() -> &'static [*const bindings::xattr_handler; 4] {
        &Self::LIST
    }
}

/// `list` of the `user.` handler: whether the mount shows `user.*` (`user_xattr`).
///
/// # Safety
///
/// `dentry` is a live dentry of a mounted superblock of filesystem `T`.
unsafe extern "C" fn erofs_rs_xattr_user_list<T: FileSystem>(
    dentry: *mut bindings::dentry,
) -> bool {
    // SAFETY: a live dentry's superblock is live, and one of `T`, mounted, so attached
    // (contract), for the call.
    T::user_xattrs(unsafe { SuperBlock::from_raw((*dentry).d_sb) })
}

/// `list` of the `trusted.` handler: whether the caller has `CAP_SYS_ADMIN`.
pub(crate) extern "C" fn erofs_rs_xattr_trusted_list(_dentry: *mut bindings::dentry) -> bool {
    // CAST: capabilities are small constants.
    // SAFETY: no preconditions.
    unsafe { bindings::capable(bindings::CAP_SYS_ADMIN as c_int) }
}

/// `get` of every handler (`erofs_xattr_generic_get`): the value of xattr `name` in the
/// handler's namespace (its `flags`), copied into `buffer` unless it is null.
///
/// # Safety
///
/// The arguments are those of `xattr_handler::get` for one of `T`'s handlers ([`Handlers`]),
/// on a live, filled inode of `T`: `name` is NUL-terminated, `buffer` null or writable for
/// `size` bytes.
unsafe extern "C" fn erofs_rs_xattr_get<T: FileSystem>(
    handler: *const bindings::xattr_handler,
    _dentry: *mut bindings::dentry,
    inode: *mut bindings::inode,
    name: *const c_char,
    buffer: *mut c_void,
    size: usize,
) -> c_int {
    // SAFETY: `handler` is one of `T`'s handlers, static (contract).
    let ns = Namespace::from_flags(unsafe { (*handler).flags });
    // SAFETY: `inode` is a live, filled inode of `T` (contract), for the call.
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
        let n = T::getxattr(inode, ns.ok_or(EINVAL)?, name, buf)?;
        // With a buffer, the VFS copies `n` bytes of it to user space (`getxattr`): no more
        // than it holds.
        if !buffer.is_null() && n > size {
            return Err(ERANGE);
        }
        c_int::try_from(n).map_err(|_| ERANGE)
    })
}

/// `listxattr`: the size of the name list, written into `buffer` unless it is null.
///
/// # Safety
///
/// `dentry` is a live, positive dentry of a superblock of `T` (`T`'s `listxattr`); `buffer` is
/// null or writable for `size` bytes.
pub(crate) unsafe extern "C" fn erofs_rs_listxattr<T: FileSystem>(
    dentry: *mut bindings::dentry,
    buffer: *mut u8,
    size: usize,
) -> isize {
    // SAFETY: a live, positive dentry of `T` (contract), for the call.
    let dentry = unsafe { Dentry::from_raw(dentry) };
    let buf = if buffer.is_null() {
        None
    } else {
        // SAFETY: `buffer` is writable for `size` bytes and nothing else uses it meanwhile.
        Some(unsafe { core::slice::from_raw_parts_mut(buffer, size) })
    };
    from_result(|| {
        let n = T::listxattr(dentry, buf)?;
        // As in `erofs_rs_xattr_get`: the VFS copies `n` bytes of the buffer (`listxattr`).
        if !buffer.is_null() && n > size {
            return Err(ERANGE);
        }
        isize::try_from(n).map_err(|_| ERANGE)
    })
}

/// The prefix `listxattr` shows for namespace `ns`, or `None` if the caller may not see it
/// (`erofs_xattr_prefix`, with `xattr_handler_can_list`): the handler is looked up among the
/// superblock's own (`s_xattr`), as `xattr_resolve_name` does.
pub(crate) fn prefix<T: FileSystem>(dentry: Dentry<'_, T>, ns: Namespace) -> Option<&'static [u8]> {
    let h: *const bindings::xattr_handler = match ns {
        Namespace::AclAccess => &raw const sys::nop_posix_acl_access,
        Namespace::AclDefault => &raw const sys::nop_posix_acl_default,
        // SAFETY: a live dentry's superblock is live (type invariant), and its `s_xattr` is set
        // before it is mounted (`SuperBlock::prepare`: `T`'s `Handlers::list`) and never
        // changed: a NULL-terminated array of static handlers.
        _ => unsafe {
            let mut p = (*(*dentry.ptr).d_sb).s_xattr;
            // CAST: the discriminants are small.
            while !p.is_null() && !(*p).is_null() && (**p).flags != ns as c_int {
                p = p.add(1);
            }
            if p.is_null() || (*p).is_null() {
                return None;
            }
            *p
        },
    };
    // `xattr_handler_can_list()`.
    // SAFETY: `h` is a static handler, never changed; its `list` is `T`'s (the superblock's
    // handlers are `T`'s) or the kernel's, which take a live dentry of a mounted superblock
    // of `T`, as `dentry` is (type invariant: a filesystem call's dentry).
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

/// Reads the ACL stored in namespace `ns` of `inode`: `None` if it has none.
fn read_acl<T: FileSystem>(inode: Inode<'_, T>, ns: Namespace) -> Result<*mut bindings::posix_acl> {
    let none = |e: Error| {
        if e == ENODATA {
            Ok(core::ptr::null_mut())
        } else {
            Err(e)
        }
    };
    let n = match T::getxattr(inode, ns, b"", None) {
        Ok(n) => n,
        Err(e) => return none(e),
    };
    let mut value = KVec::new();
    let mut len = n;
    if n > 0 {
        value = KVec::from_elem(0u8, n, GFP_KERNEL)?;
        len = match T::getxattr(inode, ns, b"", Some(&mut value)) {
            Ok(len) => len,
            Err(e) => return none(e),
        };
        // The value is read from `value`: no more than it holds.
        if len > n {
            return Err(ERANGE);
        }
    }
    let data = if n > 0 {
        value.as_ptr()
    } else {
        core::ptr::null()
    };
    // SAFETY: `data` is null for an empty value (`len == n == 0`) or `value`'s, readable for
    // its `len <= n` bytes (checked above); the user namespace is the static initial one.
    Ok(unsafe { sys::posix_acl_from_xattr(&raw mut bindings::init_user_ns, data.cast(), len) })
}

/// `get_inode_acl` (`erofs_get_acl`): an ACL, null for none, or an `ERR_PTR`.
///
/// # Safety
///
/// `inode` is a live, filled inode of `T` (`T`'s `get_inode_acl`).
pub(crate) unsafe extern "C" fn erofs_rs_get_acl<T: FileSystem>(
    inode: *mut bindings::inode,
    ty: c_int,
    rcu: bool,
) -> *mut bindings::posix_acl {
    if rcu {
        return ECHILD.to_ptr();
    }
    // CAST: `ACL_TYPE_*` are small constants.
    let ns = match ty {
        t if t == sys::ACL_TYPE_ACCESS as c_int => Namespace::AclAccess,
        t if t == sys::ACL_TYPE_DEFAULT as c_int => Namespace::AclDefault,
        _ => return EINVAL.to_ptr(),
    };
    // SAFETY: a live, filled inode of `T` (contract), for the call.
    match read_acl::<T>(unsafe { Inode::from_raw(inode) }, ns) {
        Ok(acl) => acl,
        Err(e) => e.to_ptr(),
    }
}
