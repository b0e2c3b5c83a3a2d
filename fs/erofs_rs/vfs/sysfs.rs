// SPDX-License-Identifier: GPL-2.0-only
//! `/sys/fs/<fstype>` (`/sys/fs/erofs` by default, as the C driver's), its `accel` file (the
//! table is `erofs_rs_accel_attr` in zglue.c, the file's callbacks are in `acomp.rs`) and its
//! `features/` directory (the table is `erofs_rs_feat_group` in zglue.c). C counterpart:
//! fs/erofs/sysfs.c (`erofs_init_sysfs`, `erofs_exit_sysfs`).

use super::{
    ffi,
    sys, //
};
use core::{
    ptr,
    sync::atomic::{
        AtomicPtr,
        Ordering, //
    },
};
use kernel::{
    bindings,
    ffi::{
        c_char,
        c_int, //
    },
    prelude::*, //
};

/// The module's kobject, `/sys/fs/erofs_rs`, or null when there is none.
///
/// # Invariants
///
/// Null, or a kobject reference owned by this variable.
static KOBJ: AtomicPtr<bindings::kobject> = AtomicPtr::new(ptr::null_mut());

/// `/sys/fs/<fstype>/features`, or null when there is none.
///
/// # Invariants
///
/// Null, or a kobject reference owned by this variable, a child of [`KOBJ`]'s.
static FEATURES: AtomicPtr<bindings::kobject> = AtomicPtr::new(ptr::null_mut());

/// Creates `/sys/fs/<fstype>/accel` and `features/`. sysfs is optional: without it the default
/// offload driver cannot be set, nothing else changes, so this always returns 0.
///
/// # Safety
///
/// Called once at module init, before any mount; [`exit`] undoes it.
pub(crate) unsafe fn init() -> c_int {
    // SAFETY: `fs_kobj` is the kernel's `/sys/fs`, alive while the kernel runs; the name is
    // the `fstype` module parameter, a NUL-terminated string that lives as long as the module.
    let kobj =
        unsafe { bindings::kobject_create_and_add(ffi::erofs_rs_glue_fstype(), bindings::fs_kobj) };
    if kobj.is_null() {
        return 0;
    }
    // SAFETY: `kobj` is live; the attribute is a static table.
    let ret = unsafe {
        bindings::sysfs_create_file_ns(
            kobj,
            ptr::addr_of!(sys::erofs_rs_accel_attr.attr),
            ptr::null(),
        )
    };
    if ret != 0 {
        // SAFETY: the reference `kobject_create_and_add` gave us, dropped once.
        unsafe { bindings::kobject_put(kobj) };
        return 0;
    }
    // INVARIANT: we own the reference. ORDERING: init runs before anything reads it.
    KOBJ.store(kobj, Ordering::Release);
    // SAFETY: `kobj` is live; the name is NUL-terminated.
    let feat = unsafe { bindings::kobject_create_and_add(c"features".as_char_ptr(), kobj) };
    if feat.is_null() {
        return 0;
    }
    // SAFETY: `feat` is live; the group is a static table whose attributes are static too.
    if unsafe { bindings::sysfs_create_group(feat, ptr::addr_of!(sys::erofs_rs_feat_group)) } != 0 {
        // SAFETY: the reference `kobject_create_and_add` gave us, dropped once.
        unsafe { bindings::kobject_put(feat) };
        return 0;
    }
    // INVARIANT: we own the reference.
    FEATURES.store(feat, Ordering::Release);
    0
}

/// `show` of every `features/` file: as the C driver's, "supported".
///
/// # Safety
///
/// `buf` is the page sysfs gives `show`.
#[no_mangle]
pub(crate) unsafe extern "C" fn erofs_rs_feature_show(
    _kobj: *mut bindings::kobject,
    _attr: *mut bindings::kobj_attribute,
    buf: *mut c_char,
) -> isize {
    // SAFETY: `buf` is sysfs's page (contract); the format and its argument are NUL-terminated.
    let n = unsafe { bindings::sysfs_emit(buf, c"%s".as_char_ptr(), c"supported\n".as_char_ptr()) };
    // CAST: a byte count of at most a page, from `c_int` to `ssize_t`.
    n as isize
}

/// Removes `/sys/fs/erofs_rs`.
///
/// # Safety
///
/// Called once at module exit, when no mount is left.
pub(crate) unsafe fn exit() {
    // ORDERING: pairs with the store in init.
    let feat = FEATURES.swap(ptr::null_mut(), Ordering::AcqRel);
    if !feat.is_null() {
        // SAFETY: our reference (type invariant), taken out of the variable, dropped once,
        // before its parent's.
        unsafe { bindings::kobject_put(feat) };
    }
    // ORDERING: pairs with the store in init.
    let kobj = KOBJ.swap(ptr::null_mut(), Ordering::AcqRel);
    if !kobj.is_null() {
        // SAFETY: our reference (type invariant), taken out of the variable, dropped once.
        unsafe { bindings::kobject_put(kobj) };
    }
}
