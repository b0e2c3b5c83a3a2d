// SPDX-License-Identifier: GPL-2.0-only
//! sysfs directories whose files a filesystem declares ([`Sysfs`]): `/sys/fs/<fstype>/` with
//! the module's files and its `features/` directory (made here), and each mount's
//! `/sys/fs/<fstype>/<s_id>/` (`sb_sysfs.rs`). The filesystem names its files, their modes and
//! what reading and writing them does; this layer builds the `kobj_attribute` tables and
//! attribute groups at compile time for each implementing type, and its trampolines turn
//! sysfs's raw calls into the trait's safe ones. Also the safe parsing helpers a `store` uses
//! ([`kstrtoul`], [`kstrtouint`], [`skip_spaces`]). C counterpart: the plumbing of
//! fs/erofs/sysfs.c (`erofs_init_sysfs`, `erofs_exit_sysfs`, `erofs_attr_show`,
//! `erofs_attr_store`, `erofs_feat_group`), include/linux/sysfs.h (`__ATTR()`).

use super::{
    ffi,
    SuperBlock, //
};
use core::{
    fmt,
    marker::PhantomData,
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
        c_int,
        c_uint,
        c_ulong, //
    },
    page::PAGE_SIZE,
    prelude::*,
    str::CStrExt, //
};

/// One file of a sysfs directory, as a filesystem declares it (`__ATTR()`): the filesystem's
/// name for it (`id`), its file name and its permission bits. A file is read (`show`) if a
/// read bit is set in `mode`, and written (`store`) if a write bit is; else the kernel answers
/// `EIO`, as for a `kobj_attribute` without that callback.
#[derive(Clone, Copy)]
pub(crate) struct Attr<A> {
    /// What the filesystem's `show` and `store` are told the file is.
    pub(crate) id: A,
    /// The file name.
    pub(crate) name: &'static CStr,
    /// The permission bits (`0644`, `0200`...).
    pub(crate) mode: u16,
}

impl<A> Attr<A> {
    /// File `name` with permissions `mode`, which the filesystem calls `id`.
    pub(crate) const fn new(id: A, name: &'static CStr, mode: u16) -> Self {
        Attr { id, name, mode }
    }
}

/// The sysfs files of a filesystem: those of each mount's directory
/// (`/sys/fs/<fstype>/<s_id>/`, made by [`SuperBlock::register_sysfs`]), those of the module's
/// directory (`/sys/fs/<fstype>/`) and the names in its `features/` directory, each of which
/// reads "supported". The lists are in the order of the files in their directory; each holds
/// at most [`MAX_FILES`] (the build fails otherwise).
pub(crate) trait Sysfs: Sized + 'static {
    /// What the filesystem calls the files of a mount's directory.
    type SbAttr: Copy + 'static;

    /// The files of a mount's directory.
    const SB_ATTRS: &'static [Attr<Self::SbAttr>];

    /// Reads file `attr` of `sb`'s directory into `out` (`show`); only called for files with a
    /// read bit.
    fn show(sb: SuperBlock<'_, Self>, attr: Self::SbAttr, out: &mut ShowBuf<'_>) -> Result;

    /// Writes `input` (what was written, up to its first NUL) to file `attr` of `sb`'s
    /// directory (`store`): the whole write is taken unless this fails; only called for files
    /// with a write bit.
    fn store(sb: SuperBlock<'_, Self>, attr: Self::SbAttr, input: &CStr) -> Result;

    /// What the filesystem calls the files of the module's directory.
    type ModuleAttr: Copy + 'static;

    /// The files of the module's directory.
    const MODULE_ATTRS: &'static [Attr<Self::ModuleAttr>];

    /// Reads file `attr` of the module's directory, as [`Sysfs::show`].
    fn show_module(attr: Self::ModuleAttr, out: &mut ShowBuf<'_>) -> Result;

    /// Writes `input` to file `attr` of the module's directory, as [`Sysfs::store`].
    fn store_module(attr: Self::ModuleAttr, input: &CStr) -> Result;

    /// The files of `features/`: the features the filesystem supports.
    const FEATURES: &'static [&'static CStr];
}

/// The most files one list of a [`Sysfs`] holds: the tables are arrays of this many, built at
/// compile time, where their length cannot depend on the list's.
pub(crate) const MAX_FILES: usize = 32;

/// The text a `show` returns: written into sysfs's page, cut as `sysfs_emit()` cuts it (at
/// `PAGE_SIZE - 1` bytes).
pub(crate) struct ShowBuf<'a> {
    page: &'a mut [u8],
    len: usize,
}

impl<'a> ShowBuf<'a> {
    /// An empty text, to be written into `page`.
    pub(crate) fn new(page: &'a mut [u8]) -> Self {
        ShowBuf { page, len: 0 }
    }

    /// Appends `bytes`, as many of them as fit.
    pub(crate) fn push(&mut self, bytes: &[u8]) {
        let room = self.page.len().saturating_sub(1);
        let Some(free) = self.page.get_mut(self.len..room) else {
            return;
        };
        for (d, &s) in free.iter_mut().zip(bytes) {
            *d = s;
            // OVERFLOW: at most `room` bytes are written.
            self.len += 1;
        }
    }
}

impl fmt::Write for ShowBuf<'_> {
    fn write_str(&mut self, s: &str) -> fmt::Result {
        self.push(s.as_bytes());
        Ok(())
    }
}

/// `skip_spaces()`: `s` from its first character that is not white space (the kernel's
/// `isspace()`).
pub(crate) fn skip_spaces(s: &CStr) -> &CStr {
    // SAFETY: `s` is NUL-terminated; `skip_spaces` returns a pointer into it, at or before its
    // NUL, so a NUL-terminated string borrowed as `s` is.
    unsafe { CStr::from_char_ptr(bindings::skip_spaces(s.as_char_ptr())) }
}

/// `kstrtoul()`: `s` as a number in `base` (0: decimal, `0x` hexadecimal or `0` octal), with
/// an optional `+` before it and one newline after it. `EINVAL` if it is not such a number,
/// `ERANGE` if it does not fit.
pub(crate) fn kstrtoul(s: &CStr, base: u32) -> Result<c_ulong> {
    let mut t: c_ulong = 0;
    // SAFETY: `s` is NUL-terminated; `t` is writable.
    let ret = unsafe { bindings::_kstrtoul(s.as_char_ptr(), base, &mut t) };
    if ret != 0 {
        return Err(Error::from_errno(ret));
    }
    Ok(t)
}

/// `kstrtouint()`: as [`kstrtoul`], into an `unsigned int` (`ERANGE` if it does not fit).
pub(crate) fn kstrtouint(s: &CStr, base: u32) -> Result<u32> {
    let mut t: c_uint = 0;
    // SAFETY: `s` is NUL-terminated; `t` is writable.
    let ret = unsafe { bindings::kstrtouint(s.as_char_ptr(), base, &mut t) };
    if ret != 0 {
        return Err(Error::from_errno(ret));
    }
    Ok(t)
}

/// A kind of sysfs directory whose files a [`Sysfs`] filesystem declares: the list, and how a
/// `show` or `store` on a kobject of the kind reaches the filesystem. The files of a kind are
/// the entries of its [`FileTable`]; a kobject is "of the kind" when the table's group is one
/// of its groups.
pub(super) trait Files: 'static {
    /// What the filesystem calls the files.
    type Id: Copy + 'static;

    /// The files, in the order of their directory.
    const ATTRS: &'static [Attr<Self::Id>];

    /// Reads file `id` of `kobj` into `out`.
    ///
    /// # Safety
    ///
    /// `kobj` is a kobject of this kind, in a `show` of one of its files.
    unsafe fn show(kobj: *mut bindings::kobject, id: Self::Id, out: &mut ShowBuf<'_>) -> Result;

    /// Writes `input` to file `id` of `kobj`.
    ///
    /// # Safety
    ///
    /// `kobj` is a kobject of this kind, in a `store` of one of its files.
    unsafe fn store(kobj: *mut bindings::kobject, id: Self::Id, input: &CStr) -> Result;
}

/// The module's directory of [`Sysfs`] `T`: its files do not depend on the kobject.
pub(super) struct ModuleFiles<T>(PhantomData<T>);

impl<T: Sysfs> Files for ModuleFiles<T> {
    type Id = T::ModuleAttr;

    const ATTRS: &'static [Attr<T::ModuleAttr>] = T::MODULE_ATTRS;

    unsafe fn show(_kobj: *mut bindings::kobject, id: Self::Id, out: &mut ShowBuf<'_>) -> Result {
        T::show_module(id, out)
    }

    unsafe fn store(_kobj: *mut bindings::kobject, id: Self::Id, input: &CStr) -> Result {
        T::store_module(id, input)
    }
}

/// A `kobj_attribute` of a [`FileTable`], and the index of its file in the kind's list, which
/// the trampolines find it by (`container_of`).
#[repr(C)]
pub(super) struct KAttr {
    kattr: bindings::kobj_attribute,
    index: usize,
}

/// An unused entry of a table.
const NO_ATTR: KAttr = KAttr {
    kattr: pin_init::zeroed(),
    index: 0,
};

/// The `show` of a `kobj_attribute`.
type ShowFn = unsafe extern "C" fn(
    *mut bindings::kobject,
    *mut bindings::kobj_attribute,
    *mut c_char,
) -> isize;

/// The `store` of a `kobj_attribute`.
type StoreFn = unsafe extern "C" fn(
    *mut bindings::kobject,
    *mut bindings::kobj_attribute,
    *const c_char,
    usize,
) -> isize;

/// A sysfs file `name` with permissions `mode` (`__ATTR()`), read by `show`, written by `store`.
const fn kobj_attr(
    name: &'static CStr,
    mode: u16,
    show: Option<ShowFn>,
    store: Option<StoreFn>,
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

/// The attributes of `attrs` but the `n` first, and a null pointer after them (`struct
/// attribute *[]`).
const fn attr_list(
    attrs: &'static [KAttr; MAX_FILES],
    n: usize,
) -> [*const bindings::attribute; MAX_FILES + 1] {
    let mut list = [ptr::null(); MAX_FILES + 1];
    let mut i = 0;
    while i < n && i < MAX_FILES {
        list[i] = &attrs[i].kattr.attr;
        i += 1;
    }
    list
}

/// The unnamed attribute group of `list`; sysfs only reads the attributes, so the list is
/// given as `attrs_const`.
const fn group(
    list: &'static [*const bindings::attribute; MAX_FILES + 1],
) -> bindings::attribute_group {
    bindings::attribute_group {
        __bindgen_anon_2: bindings::attribute_group__bindgen_ty_2 {
            attrs_const: list.as_ptr(),
        },
        ..pin_init::zeroed()
    }
}

/// The `kobj_attribute`s and attribute group of the files of kind `F`, built at compile time.
pub(super) struct FileTable<F>(PhantomData<F>);

impl<F: Files> FileTable<F> {
    /// The attributes, one per file of `F::ATTRS` then unused ones, each with its trampolines.
    pub(super) const ATTRS: [KAttr; MAX_FILES] = {
        let n = F::ATTRS.len();
        // PANIC: fails the build of the table, the same way for every build.
        assert!(n <= MAX_FILES, "more sysfs files than MAX_FILES");
        let mut t = [NO_ATTR; MAX_FILES];
        let mut i = 0;
        while i < n {
            let a = &F::ATTRS[i];
            let show: Option<ShowFn> = if a.mode & 0o444 != 0 {
                Some(show::<F>)
            } else {
                None
            };
            let store: Option<StoreFn> = if a.mode & 0o222 != 0 {
                Some(store::<F>)
            } else {
                None
            };
            t[i] = KAttr {
                kattr: kobj_attr(a.name, a.mode, show, store),
                index: i,
            };
            i += 1;
        }
        t
    };

    /// [`FileTable::ATTRS`]' files, as the NULL-terminated list of a group.
    const LIST: [*const bindings::attribute; MAX_FILES + 1] = {
        let attrs: &'static [KAttr; MAX_FILES] = &Self::ATTRS;
        attr_list(attrs, F::ATTRS.len())
    };

    /// The group of the files (the `default_groups` entry or `sysfs_create_group` argument).
    pub(super) const GROUP: bindings::attribute_group = {
        let list: &'static [*const bindings::attribute; MAX_FILES + 1] = &Self::LIST;
        group(list)
    };
}

/// The `features/` files of [`Sysfs`] `T`, read-only, each reading "supported"
/// (`EROFS_ATTR_FEATURE()`), built at compile time.
pub(super) struct FeatureTable<T>(PhantomData<T>);

impl<T: Sysfs> FeatureTable<T> {
    /// The attributes, one per name of `T::FEATURES` then unused ones.
    pub(super) const ATTRS: [KAttr; MAX_FILES] = {
        let n = T::FEATURES.len();
        // PANIC: fails the build of the table, the same way for every build.
        assert!(n <= MAX_FILES, "more sysfs features than MAX_FILES");
        let mut t = [NO_ATTR; MAX_FILES];
        let mut i = 0;
        while i < n {
            t[i] = KAttr {
                kattr: kobj_attr(T::FEATURES[i], 0o444, Some(feature_show), None),
                index: i,
            };
            i += 1;
        }
        t
    };

    /// [`FeatureTable::ATTRS`]' files, as the NULL-terminated list of a group
    /// (`erofs_feat_attrs`).
    const LIST: [*const bindings::attribute; MAX_FILES + 1] = {
        let attrs: &'static [KAttr; MAX_FILES] = &Self::ATTRS;
        attr_list(attrs, T::FEATURES.len())
    };

    /// The group of `features/` (`erofs_feat_group`).
    pub(super) const GROUP: bindings::attribute_group = {
        let list: &'static [*const bindings::attribute; MAX_FILES + 1] = &Self::LIST;
        group(list)
    };
}

/// The file of `kattr`, an attribute of [`FileTable<F>`](FileTable).
///
/// # Safety
///
/// `kattr` is the `kattr` field of an entry of `FileTable::<F>::ATTRS`.
unsafe fn file_of<F: Files>(kattr: *mut bindings::kobj_attribute) -> Option<&'static Attr<F::Id>> {
    // SAFETY: the field of a `KAttr` (contract), which is never written.
    let index = unsafe { (*kernel::container_of!(kattr, KAttr, kattr)).index };
    F::ATTRS.get(index)
}

/// The value a `show` or `store` returns: `len` (the bytes shown or taken) or the negative
/// errno.
fn sysfs_ret(r: Result, len: usize) -> isize {
    match r {
        // CAST: at most a page.
        Ok(()) => len as isize,
        // CAST: errnos are small negative numbers.
        Err(e) => e.to_errno() as isize,
    }
}

/// `show` of the files of kind `F`: [`Files::show`] with the file's [`Attr::id`].
///
/// # Safety
///
/// Called by sysfs (`kobj_attr_show`) for an attribute of [`FileTable<F>`](FileTable), the only
/// table with this function, on a kobject with that table's group (so of kind `F`), with its
/// page.
unsafe extern "C" fn show<F: Files>(
    kobj: *mut bindings::kobject,
    kattr: *mut bindings::kobj_attribute,
    buf: *mut c_char,
) -> isize {
    // SAFETY: an attribute of `FileTable<F>` (contract).
    let Some(a) = (unsafe { file_of::<F>(kattr) }) else {
        return sysfs_ret(Err(EIO), 0);
    };
    // SAFETY: sysfs's page (`sysfs_kf_seq_show`): `PAGE_SIZE` bytes, zeroed before the call,
    // ours until it returns.
    let page = unsafe { core::slice::from_raw_parts_mut(buf.cast::<u8>(), PAGE_SIZE) };
    let mut out = ShowBuf::new(page);
    // SAFETY: `kobj` is of kind `F`, in a `show` (contract).
    let r = unsafe { F::show(kobj, a.id, &mut out) };
    sysfs_ret(r, out.len)
}

/// `store` of the files of kind `F`: [`Files::store`] with the file's [`Attr::id`].
///
/// # Safety
///
/// As for [`show`], in a `store`, with sysfs's buffer of `len` bytes and a NUL after them.
unsafe extern "C" fn store<F: Files>(
    kobj: *mut bindings::kobject,
    kattr: *mut bindings::kobj_attribute,
    buf: *const c_char,
    len: usize,
) -> isize {
    // SAFETY: an attribute of `FileTable<F>` (contract).
    let Some(a) = (unsafe { file_of::<F>(kattr) }) else {
        return sysfs_ret(Err(EIO), 0);
    };
    // SAFETY: kernfs NUL-terminates the buffer at `len` (`kernfs_fop_write_iter`), and does not
    // change it during the call.
    let input = unsafe { CStr::from_char_ptr(buf) };
    // SAFETY: `kobj` is of kind `F`, in a `store` (contract).
    let r = unsafe { F::store(kobj, a.id, input) };
    sysfs_ret(r, len)
}

/// `show` of every `features/` file: as the C driver's, "supported".
///
/// # Safety
///
/// `buf` is the page sysfs gives `show`.
unsafe extern "C" fn feature_show(
    _kobj: *mut bindings::kobject,
    _attr: *mut bindings::kobj_attribute,
    buf: *mut c_char,
) -> isize {
    // SAFETY: `buf` is sysfs's page (contract); the format and its argument are NUL-terminated.
    let n = unsafe { bindings::sysfs_emit(buf, c"%s".as_char_ptr(), c"supported\n".as_char_ptr()) };
    // CAST: a byte count of at most a page, from `c_int` to `ssize_t`.
    n as isize
}

/// The module's kobject, `/sys/fs/<fstype>`, or null when there is none.
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

/// Creates `/sys/fs/<fstype>`, its files ([`Sysfs::MODULE_ATTRS`]) and `features/`
/// (`erofs_init_sysfs`). sysfs is optional: without it the module's settings cannot be
/// changed and mounts have no directory, nothing else changes, so this always returns 0.
///
/// # Safety
///
/// Called once at module init, before any mount; [`exit`] undoes it.
pub(super) unsafe fn init<T: Sysfs>() -> c_int {
    // SAFETY: `fs_kobj` is the kernel's `/sys/fs`, alive while the kernel runs; the name is
    // the `fstype` module parameter, a NUL-terminated string that lives as long as the module.
    let kobj =
        unsafe { bindings::kobject_create_and_add(ffi::erofs_rs_glue_fstype(), bindings::fs_kobj) };
    if kobj.is_null() {
        return 0;
    }
    let files: &'static bindings::attribute_group = &FileTable::<ModuleFiles<T>>::GROUP;
    // SAFETY: `kobj` is live; the group is in static storage, and so are its attributes (a
    // lock class key of each is used by address); it makes `kobj` of kind `ModuleFiles<T>`.
    if unsafe { bindings::sysfs_create_group(kobj, files) } != 0 {
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
    let features: &'static bindings::attribute_group = &FeatureTable::<T>::GROUP;
    // SAFETY: `feat` is live; the group is in static storage, and so are its attributes.
    if unsafe { bindings::sysfs_create_group(feat, features) } != 0 {
        // SAFETY: the reference `kobject_create_and_add` gave us, dropped once.
        unsafe { bindings::kobject_put(feat) };
        return 0;
    }
    // INVARIANT: we own the reference.
    FEATURES.store(feat, Ordering::Release);
    0
}

/// Removes `/sys/fs/<fstype>` (`erofs_exit_sysfs`).
///
/// # Safety
///
/// Called once at module exit, when no mount is left.
pub(super) unsafe fn exit() {
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

#[kernel::macros::kunit_tests(erofs_rs_sysfs)]
mod tests {
    use super::*;
    use core::sync::atomic::AtomicU32;

    /// The last `store` [`TestFs`] got: 100 times the file's number plus the value.
    static STORED: AtomicU32 = AtomicU32::new(0);

    /// The files of the test filesystem, with their number.
    #[derive(Clone, Copy)]
    enum TestAttr {
        One = 1,
        Two = 2,
        Three = 3,
    }

    /// A filesystem whose module directory has three files: read-write, write-only and
    /// read-only; each `show` and `store` says which file it was called for.
    struct TestFs;

    impl Sysfs for TestFs {
        type SbAttr = TestAttr;
        const SB_ATTRS: &'static [Attr<TestAttr>] = &[];

        fn show(_sb: SuperBlock<'_, Self>, _attr: TestAttr, _out: &mut ShowBuf<'_>) -> Result {
            Err(EINVAL)
        }

        fn store(_sb: SuperBlock<'_, Self>, _attr: TestAttr, _input: &CStr) -> Result {
            Err(EINVAL)
        }

        type ModuleAttr = TestAttr;
        const MODULE_ATTRS: &'static [Attr<TestAttr>] = &[
            Attr::new(TestAttr::One, c"one", 0o644),
            Attr::new(TestAttr::Two, c"two", 0o200),
            Attr::new(TestAttr::Three, c"three", 0o444),
        ];

        fn show_module(attr: TestAttr, out: &mut ShowBuf<'_>) -> Result {
            writeln!(out, "file {}", attr as u32).map_err(|_| EINVAL)
        }

        fn store_module(attr: TestAttr, input: &CStr) -> Result {
            let t = kstrtouint(skip_spaces(input), 0)?;
            STORED.store(attr as u32 * 100 + t, Ordering::Relaxed);
            Ok(())
        }

        const FEATURES: &'static [&'static CStr] = &[c"alpha", c"beta"];
    }

    use core::fmt::Write;

    /// Calls the `show` of `a` with a zeroed page: what it returns, and the text.
    fn call_show(a: &'static KAttr) -> Result<(isize, KVec<u8>)> {
        let mut page = KVec::from_elem(0u8, PAGE_SIZE, GFP_KERNEL)?;
        // SAFETY: `kobj_attr` assigned `show`.
        let show = unsafe { a.kattr.__bindgen_anon_1.show }.ok_or(ENOENT)?;
        // SAFETY: an attribute of its table; the module files' `show` does not use the
        // kobject; a zeroed page.
        let n = unsafe {
            show(
                ptr::null_mut(),
                ptr::from_ref(&a.kattr).cast_mut(),
                page.as_mut_ptr().cast(),
            )
        };
        page.truncate(usize::try_from(n).unwrap_or(0));
        Ok((n, page))
    }

    /// Calls the `store` of `a` with `input`: what it returns.
    fn call_store(a: &'static KAttr, input: &CStr) -> Result<isize> {
        // SAFETY: `kobj_attr` assigned `store`.
        let store = unsafe { a.kattr.__bindgen_anon_2.store }.ok_or(ENOENT)?;
        let len = input.to_bytes().len();
        // SAFETY: an attribute of its table; the module files' `store` does not use the
        // kobject; `input` is NUL-terminated at `len`, as sysfs's buffer.
        Ok(unsafe {
            store(
                ptr::null_mut(),
                ptr::from_ref(&a.kattr).cast_mut(),
                input.as_char_ptr(),
                len,
            )
        })
    }

    /// The tables built from a [`Sysfs`] impl name its files with their modes, in order, give
    /// `show` only to readable ones and `store` only to writable ones, and dispatch each call
    /// to the impl with the file it was made for; errors become errnos.
    #[test]
    fn table_dispatches_to_its_files() -> Result {
        let attrs: &'static [KAttr; MAX_FILES] = &FileTable::<ModuleFiles<TestFs>>::ATTRS;
        let group: &'static bindings::attribute_group = &FileTable::<ModuleFiles<TestFs>>::GROUP;
        // SAFETY: `group` assigned `attrs_const`, a list of `MAX_FILES + 1` entries.
        let list = unsafe { group.__bindgen_anon_2.attrs_const };
        for (i, (name, mode)) in [(c"one", 0o644), (c"two", 0o200), (c"three", 0o444)]
            .into_iter()
            .enumerate()
        {
            // SAFETY: `i` is within the list, whose entries point to `attrs`' attributes.
            let a = unsafe { &**list.add(i) };
            // SAFETY: a file name of the table, NUL-terminated.
            assert_eq!(unsafe { CStr::from_char_ptr(a.name) }, name);
            assert_eq!(a.mode, mode);
        }
        // SAFETY: as above; the entry after the files ends the list.
        assert!(unsafe { *list.add(3) }.is_null());

        let (n, text) = call_show(&attrs[0])?;
        assert_eq!((n, &text[..]), (7, &b"file 1\n"[..]));
        assert_eq!(call_show(&attrs[2])?.1, *b"file 3\n");
        assert_eq!(call_show(&attrs[1]).err(), Some(ENOENT));
        assert_eq!(call_store(&attrs[1], c" 0x10\n")?, 6);
        assert_eq!(STORED.load(Ordering::Relaxed), 216);
        assert_eq!(call_store(&attrs[0], c"7")?, 1);
        assert_eq!(STORED.load(Ordering::Relaxed), 107);
        assert_eq!(call_store(&attrs[0], c"x")?, EINVAL.to_errno() as isize);
        assert_eq!(
            call_store(&attrs[0], c"4294967296")?,
            ERANGE.to_errno() as isize
        );
        assert_eq!(STORED.load(Ordering::Relaxed), 107);
        assert_eq!(call_store(&attrs[2], c"1").err(), Some(ENOENT));
        Ok(())
    }

    /// The `features/` table names the impl's features, read-only, each reading "supported".
    #[test]
    fn feature_table_reads_supported() -> Result {
        let attrs: &'static [KAttr; MAX_FILES] = &FeatureTable::<TestFs>::ATTRS;
        for (a, name) in attrs.iter().zip([c"alpha", c"beta"]) {
            // SAFETY: a file name of the table, NUL-terminated.
            assert_eq!(unsafe { CStr::from_char_ptr(a.kattr.attr.name) }, name);
            assert_eq!(a.kattr.attr.mode, 0o444);
            assert_eq!(call_show(a)?.1, *b"supported\n");
            assert_eq!(call_store(a, c"1").err(), Some(ENOENT));
        }
        assert!(attrs[2].kattr.attr.name.is_null());
        Ok(())
    }

    /// A `show` longer than its page is cut one byte short of it, as `sysfs_emit()` cuts it.
    #[test]
    fn show_buf_is_cut_at_the_page() {
        let mut page = [0u8; 8];
        let mut out = ShowBuf::new(&mut page);
        out.push(b"abcd");
        let _ = write!(out, "{}", 12345);
        assert_eq!(out.len, 7);
        assert_eq!(page, *b"abcd123\0");
    }
}
