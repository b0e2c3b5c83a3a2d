// SPDX-License-Identifier: GPL-2.0-only
//! `/sys/fs/erofs_rs` and its `accel` file (the table is `erofs_rs_accel_attr` in zglue.c,
//! the file's callbacks are in `acomp.rs`). C counterpart: fs/erofs/sysfs.c
//! (`erofs_init_sysfs`, `erofs_exit_sysfs`).

use super::sys;
use core::{
    ptr,
    sync::atomic::{
        AtomicPtr,
        Ordering, //
    },
};
use kernel::{
    bindings,
    ffi::c_int,
    prelude::*, //
};

/// The module's kobject, `/sys/fs/erofs_rs`, or null when there is none.
///
/// # Invariants
///
/// Null, or a kobject reference owned by this variable.
static KOBJ: AtomicPtr<bindings::kobject> = AtomicPtr::new(ptr::null_mut());

/// Creates `/sys/fs/erofs_rs/accel`. sysfs is optional: without it the default offload driver
/// cannot be set, nothing else changes, so this always returns 0.
///
/// # Safety
///
/// Called once at module init, before any mount; [`exit`] undoes it.
pub(crate) unsafe fn init() -> c_int {
    // SAFETY: `fs_kobj` is the kernel's `/sys/fs`, alive while the kernel runs; the name is
    // NUL-terminated.
    let kobj =
        unsafe { bindings::kobject_create_and_add(c"erofs_rs".as_char_ptr(), bindings::fs_kobj) };
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
    0
}

/// Removes `/sys/fs/erofs_rs`.
///
/// # Safety
///
/// Called once at module exit, when no mount is left.
pub(crate) unsafe fn exit() {
    // ORDERING: pairs with the store in init.
    let kobj = KOBJ.swap(ptr::null_mut(), Ordering::AcqRel);
    if !kobj.is_null() {
        // SAFETY: our reference (type invariant), taken out of the variable, dropped once.
        unsafe { bindings::kobject_put(kobj) };
    }
}
