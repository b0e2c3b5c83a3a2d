// SPDX-License-Identifier: GPL-2.0-only
//! `/sys/fs/<fstype>` (`/sys/fs/erofs` by default, as the C driver's), its `accel` file (the
//! attribute is [`ACCEL_ATTR`], its callbacks are in `acomp.rs`) and its `features/` directory
//! ([`FEATURE_GROUP`]). C counterpart: fs/erofs/sysfs.c (`erofs_init_sysfs`,
//! `erofs_exit_sysfs`, `erofs_feat_group`).

use super::{
    acomp,
    ffi,
    tables::Table, //
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

/// A sysfs file `name` with permissions `mode` (`__ATTR()`), read by `show`, written by `store`.
pub(super) const fn attr(
    name: &'static CStr,
    mode: u16,
    show: Option<
        unsafe extern "C" fn(
            *mut bindings::kobject,
            *mut bindings::kobj_attribute,
            *mut c_char,
        ) -> isize,
    >,
    store: Option<
        unsafe extern "C" fn(
            *mut bindings::kobject,
            *mut bindings::kobj_attribute,
            *const c_char,
            usize,
        ) -> isize,
    >,
) -> bindings::kobj_attribute {
    let mut a: bindings::kobj_attribute = pin_init::zeroed();
    a.attr.name = kernel::str::as_char_ptr_in_const_context(name);
    a.attr.mode = mode;
    // `show` and `store` are each a union with their `_const` variant, or under CFI a struct
    // with it: assigned, not initialised, so that both build.
    a.__bindgen_anon_1.show = show;
    a.__bindgen_anon_2.store = store;
    a
}

/// `/sys/fs/<fstype>/accel`, as the C driver's `/sys/fs/erofs/accel`: the acomp drivers (one
/// per line; only the first is used) that mounts without `decomp_accel=` take; empty disables.
static ACCEL_ATTR: Table<bindings::kobj_attribute> = Table::new(attr(
    c"accel",
    0o644,
    Some(acomp::erofs_rs_accel_attr_show),
    Some(acomp::erofs_rs_accel_attr_store),
));

/// A file of `features/`: an on-disk feature erofs_rs reads (`EROFS_ATTR_FEATURE()`).
const fn feature(name: &'static CStr) -> bindings::kobj_attribute {
    attr(name, 0o444, Some(erofs_rs_feature_show), None)
}

/// The files of `features/`, as fs/erofs/sysfs.c's.
static FEATURE_ATTRS: Table<[bindings::kobj_attribute; 12]> = Table::new([
    feature(c"compr_cfgs"),
    feature(c"big_pcluster"),
    feature(c"chunked_file"),
    feature(c"device_table"),
    feature(c"compr_head2"),
    feature(c"sb_chksum"),
    feature(c"ztailpacking"),
    feature(c"fragments"),
    feature(c"dedupe"),
    feature(c"xattr_prefixes"),
    feature(c"48bit"),
    feature(c"metabox"),
]);

/// The attributes of `attrs`, and a null pointer after them (`struct attribute *[]`); `M` is
/// one more than `N`.
const fn attr_list<const N: usize, const M: usize>(
    attrs: &'static [bindings::kobj_attribute; N],
) -> [*const bindings::attribute; M] {
    // PANIC: fails the same way for every call with the same `N` and `M`; the one caller is
    // a static's initialiser, so a wrong `M` fails the build. With it, `i < N < M` below.
    assert!(M == N + 1);
    let mut list = [ptr::null(); M];
    let mut i = 0;
    while i < N {
        list[i] = &attrs[i].attr;
        i += 1;
    }
    list
}

/// [`FEATURE_ATTRS`], as the NULL-terminated list of a group (`erofs_feat_attrs`).
static FEATURE_LIST: Table<[*const bindings::attribute; 13]> =
    Table::new(attr_list(FEATURE_ATTRS.get()));

/// The attribute group of `features/` (`erofs_feat_group`); sysfs only reads the attributes,
/// so the list is given as `attrs_const`.
static FEATURE_GROUP: Table<bindings::attribute_group> = Table::new(bindings::attribute_group {
    __bindgen_anon_2: bindings::attribute_group__bindgen_ty_2 {
        attrs_const: FEATURE_LIST.as_ptr().cast::<*const bindings::attribute>(),
    },
    ..pin_init::zeroed()
});

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
    // SAFETY: `kobj` is live; the attribute is static.
    let ret = unsafe { bindings::sysfs_create_file_ns(kobj, &ACCEL_ATTR.get().attr, ptr::null()) };
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
    // SAFETY: `feat` is live; the group is static, and so are its attributes.
    if unsafe { bindings::sysfs_create_group(feat, FEATURE_GROUP.as_ptr()) } != 0 {
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

/// `/sys/fs/<fstype>`, the parent of the mounts' directories (`vfs/sb_sysfs.rs`), if it was
/// made: it stays until module exit, after the last superblock.
pub(super) fn root() -> Option<*mut bindings::kobject> {
    // ORDERING: pairs with the store in init.
    let kobj = KOBJ.load(Ordering::Acquire);
    (!kobj.is_null()).then_some(kobj)
}
