// SPDX-License-Identifier: GPL-2.0-only
//! The per-mount sysfs directory `/sys/fs/<fstype>/<disk>/`, as the C driver's
//! `/sys/fs/erofs/<disk>/`: `sync_decompress` (0644), `drop_caches` (0200) and `dir_ra_bytes`
//! (0644), with C's values, accepted inputs and errors; removed in `put_super`. The directory is
//! named as C names it (`super_set_sysfs_name_id()`): the superblock's `s_id`, which is the disk
//! of a block-device mount and `major:minor` of a file-backed one. The kobject, its type and the
//! attribute tables are Rust statics here; the kernel's `kobj_sysfs_ops` dispatches to them.
//! C counterpart: fs/erofs/sysfs.c (`erofs_register_sysfs`, `erofs_unregister_sysfs`,
//! `erofs_attr_show`, `erofs_attr_store`, `erofs_sb_attrs`).

use super::{
    fs::FileSystem,
    super_block::{
        header,
        Header, //
    },
    sysfs::{
        self,
        attr, //
    },
    tables::Table,
    SuperBlock, //
};
use core::{
    ptr,
    sync::atomic::{
        AtomicPtr,
        AtomicU32,
        Ordering, //
    },
};
use kernel::{
    bindings,
    ffi::{
        c_char,
        c_ulong, //
    },
    prelude::*,
    types::Opaque, //
};

/// `EROFS_DIR_RA_BYTES`: the default of `dir_ra_bytes`, directory readahead per step.
const DIR_RA_BYTES: u32 = 16384;

/// `EROFS_SYNC_DECOMPRESS_FORCE_OFF`: the largest value `sync_decompress` takes.
const SYNC_DECOMPRESS_FORCE_OFF: u32 = 2;

static ATTR_SYNC_DECOMPRESS: Table<bindings::kobj_attribute> = Table::new(attr(
    c"sync_decompress",
    0o644,
    Some(sync_decompress_show),
    Some(sync_decompress_store),
));
static ATTR_DROP_CACHES: Table<bindings::kobj_attribute> =
    Table::new(attr(c"drop_caches", 0o200, None, Some(drop_caches_store)));
static ATTR_DIR_RA_BYTES: Table<bindings::kobj_attribute> = Table::new(attr(
    c"dir_ra_bytes",
    0o644,
    Some(dir_ra_bytes_show),
    Some(dir_ra_bytes_store),
));

/// `erofs_sb_attrs`, in C's order.
static SB_ATTRS: Table<[*const bindings::attribute; 4]> = Table::new([
    &ATTR_SYNC_DECOMPRESS.get().attr,
    &ATTR_DROP_CACHES.get().attr,
    &ATTR_DIR_RA_BYTES.get().attr,
    ptr::null(),
]);

/// `erofs_sb_group`; sysfs only reads the attributes, so the list is given as `attrs_const`.
static SB_GROUP: Table<bindings::attribute_group> = Table::new(bindings::attribute_group {
    __bindgen_anon_2: bindings::attribute_group__bindgen_ty_2 {
        attrs_const: SB_ATTRS.as_ptr().cast::<*const bindings::attribute>(),
    },
    ..pin_init::zeroed()
});

/// `erofs_sb_groups`.
static SB_GROUPS: Table<[*const bindings::attribute_group; 2]> =
    Table::new([SB_GROUP.as_ptr(), ptr::null()]);

/// `erofs_sb_ktype`.
static SB_KTYPE: Table<bindings::kobj_type> = Table::new(bindings::kobj_type {
    release: Some(release),
    sysfs_ops: &raw const bindings::kobj_sysfs_ops,
    default_groups: SB_GROUPS.as_ptr().cast_mut().cast(),
    ..pin_init::zeroed()
});

/// One mount's kobject, `/sys/fs/<fstype>/<disk>`.
///
/// # Invariants
///
/// `sb` is the superblock whose [`SbSysfs`] holds this kobject, and its state is attached for
/// as long as the kobject is in sysfs (it is deleted in `put_super`, see [`SbSysfs`]);
/// `drop_caches` is [`drop_caches_of`] and `sync_decompress` [`sync_decompress_of`] for its
/// filesystem.
#[repr(C)]
struct SbKobj {
    kobj: Opaque<bindings::kobject>,
    sb: *mut bindings::super_block,
    drop_caches: unsafe fn(*mut bindings::super_block),
    sync_decompress: WithSetting,
}

/// Calls the closure with a setting of the live, attached superblock given
/// ([`sync_decompress_of`]).
type WithSetting = unsafe fn(*mut bindings::super_block, &mut dyn FnMut(&AtomicU32));

/// Drops the caches of `sb` ([`FileSystem::drop_caches`]).
///
/// # Safety
///
/// `sb` is a live, attached superblock of `T` during the call.
unsafe fn drop_caches_of<T: FileSystem>(sb: *mut bindings::super_block) {
    // SAFETY: by this function's contract.
    T::drop_caches(unsafe { SuperBlock::<T>::from_raw(sb) });
}

/// Calls `f` with the `sync_decompress` setting of `sb` ([`FileSystem::sync_decompress`]).
///
/// # Safety
///
/// `sb` is a live, attached superblock of `T` during the call.
unsafe fn sync_decompress_of<T: FileSystem>(
    sb: *mut bindings::super_block,
    f: &mut dyn FnMut(&AtomicU32),
) {
    // SAFETY: by this function's contract.
    f(T::sync_decompress(unsafe { SuperBlock::<T>::from_raw(sb) }));
}

/// `kobj_type::release`: frees the container once the last reference is gone.
///
/// # Safety
///
/// `kobj` is the `kobj` field of an [`SbKobj`] leaked by [`SbSysfs::register`], whose last
/// reference was just dropped.
unsafe extern "C" fn release(kobj: *mut bindings::kobject) {
    // SAFETY: the container of `kobj` (contract), a leaked `KBox`, freed once, here.
    drop(unsafe { KBox::from_raw(container(kobj)) });
}

/// The [`SbKobj`] of `kobj`.
///
/// # Safety
///
/// `kobj` is the `kobj` field of an [`SbKobj`].
unsafe fn container(kobj: *mut bindings::kobject) -> *mut SbKobj {
    // SAFETY: `Opaque<kobject>` has the layout of `kobject`; the field is inside the container
    // (contract).
    unsafe { kernel::container_of!(kobj.cast::<Opaque<bindings::kobject>>(), SbKobj, kobj) }
}

/// What this layer keeps of the superblock of one of our kobjects, during a `show` or `store`
/// on it.
///
/// # Safety
///
/// `kobj` is the kobject of a `show` or `store` of the attributes above, which sysfs calls
/// only for kobjects of [`SB_KTYPE`] (`SbKobj`s) still in sysfs.
unsafe fn sb_of<'a>(kobj: *mut bindings::kobject) -> &'a Header {
    // SAFETY: an `SbKobj` (contract), live during the call.
    let sb = unsafe { (*container(kobj)).sb };
    // SAFETY: the kobject is in sysfs, so its superblock's state is attached (type invariant
    // of `SbKobj`); `kobject_del` in `put_super` waits for this call to return.
    unsafe { header(sb) }
}

/// Writes `v` and a newline to sysfs's page (`sysfs_emit(buf, "%u\n", v)`).
///
/// # Safety
///
/// `buf` is the page sysfs gives `show`.
unsafe fn emit_u32(buf: *mut c_char, v: u32) -> isize {
    // SAFETY: `buf` is sysfs's page (contract); the format takes one `unsigned int`.
    let n = unsafe { bindings::sysfs_emit(buf, c"%u\n".as_char_ptr(), v) };
    // CAST: a byte count of at most a page, or a negative errno.
    n as isize
}

/// Parses a number as `erofs_attr_store` does: `kstrtoul(skip_spaces(buf), 0, &t)` (decimal,
/// 0x-hexadecimal or 0-octal, one trailing newline allowed).
///
/// # Safety
///
/// `buf` is the NUL-terminated buffer sysfs gives `store`.
unsafe fn parse(buf: *const c_char) -> Result<c_ulong> {
    let mut t: c_ulong = 0;
    // SAFETY: `buf` is NUL-terminated (contract), and so is what `skip_spaces` returns, a
    // pointer into it.
    let ret = unsafe { bindings::_kstrtoul(bindings::skip_spaces(buf), 0, &mut t) };
    if ret != 0 {
        return Err(Error::from_errno(ret));
    }
    Ok(t)
}

/// The `store` result: `len` (all taken) or the negative errno.
fn stored(r: Result, len: usize) -> isize {
    match r {
        // CAST: sysfs writes are at most a page.
        Ok(()) => len as isize,
        // CAST: errnos are small negative numbers.
        Err(e) => e.to_errno() as isize,
    }
}

/// An `attr_pointer_ui` store: a number that fits in `unsigned int` (else `ERANGE`).
///
/// # Safety
///
/// As for [`parse`].
unsafe fn parse_ui(buf: *const c_char) -> Result<u32> {
    // SAFETY: by the contract.
    let t = unsafe { parse(buf) }?;
    u32::try_from(t).map_err(|_| ERANGE)
}

/// `show` of `sync_decompress`.
///
/// # Safety
///
/// Called by sysfs for the attribute of one of our kobjects, with its page.
unsafe extern "C" fn sync_decompress_show(
    kobj: *mut bindings::kobject,
    _attr: *mut bindings::kobj_attribute,
    buf: *mut c_char,
) -> isize {
    // SAFETY: an `SbKobj` (contract), live during the call.
    let (sb, setting) = unsafe { ((*container(kobj)).sb, (*container(kobj)).sync_decompress) };
    let mut v = 0;
    // SAFETY: the kobject is in sysfs, so its superblock is live and attached, and `setting`
    // is its filesystem's (type invariant of `SbKobj`).
    unsafe { setting(sb, &mut |s| v = s.load(Ordering::Relaxed)) };
    // SAFETY: `buf` is sysfs's page (contract).
    unsafe { emit_u32(buf, v) }
}

/// `store` of `sync_decompress`: 0 (auto), 1 (force on) or 2 (force off), else `EINVAL`; the
/// same setting as debugfs' `sync_decompress`.
///
/// # Safety
///
/// Called by sysfs for the attribute of one of our kobjects, with a NUL-terminated buffer.
unsafe extern "C" fn sync_decompress_store(
    kobj: *mut bindings::kobject,
    _attr: *mut bindings::kobj_attribute,
    buf: *const c_char,
    len: usize,
) -> isize {
    // SAFETY: an `SbKobj` (contract), live during the call.
    let (sb, setting) = unsafe { ((*container(kobj)).sb, (*container(kobj)).sync_decompress) };
    // SAFETY: by the contract.
    let r = unsafe { parse_ui(buf) }.and_then(|t| {
        if t > SYNC_DECOMPRESS_FORCE_OFF {
            return Err(EINVAL);
        }
        // SAFETY: the kobject is in sysfs, so its superblock is live and attached, and
        // `setting` is its filesystem's (type invariant of `SbKobj`).
        unsafe { setting(sb, &mut |s| s.store(t, Ordering::Relaxed)) };
        Ok(())
    });
    stored(r, len)
}

/// `show` of `dir_ra_bytes`.
///
/// # Safety
///
/// As for [`sync_decompress_show`].
unsafe extern "C" fn dir_ra_bytes_show(
    kobj: *mut bindings::kobject,
    _attr: *mut bindings::kobj_attribute,
    buf: *mut c_char,
) -> isize {
    // SAFETY: by the contract.
    let sb = unsafe { sb_of(kobj) };
    // SAFETY: `buf` is sysfs's page (contract).
    unsafe { emit_u32(buf, sb.sysfs.dir_ra_bytes()) }
}

/// `store` of `dir_ra_bytes`: any `unsigned int`, 0 turning directory readahead off.
///
/// # Safety
///
/// As for [`sync_decompress_store`].
unsafe extern "C" fn dir_ra_bytes_store(
    kobj: *mut bindings::kobject,
    _attr: *mut bindings::kobj_attribute,
    buf: *const c_char,
    len: usize,
) -> isize {
    // SAFETY: by the contract.
    let sb = unsafe { sb_of(kobj) };
    // SAFETY: by the contract.
    let r = unsafe { parse_ui(buf) }.map(|t| {
        sb.sysfs.dir_ra_bytes.store(t, Ordering::Relaxed);
    });
    stored(r, len)
}

/// `store` of `drop_caches`: 1 to 3, else `EINVAL`. Bit 0 drops the cached compressed data
/// (C: `invalidate_mapping_pages()` of the managed cache), which erofs_rs keeps in the page
/// caches of the devices: their clean, unused pages go. Bit 1 frees unused pclusters in C
/// (`z_erofs_shrink_scan()`); erofs_rs keeps no pcluster objects between reads, so there is
/// nothing to free.
///
/// # Safety
///
/// As for [`sync_decompress_store`].
unsafe extern "C" fn drop_caches_store(
    kobj: *mut bindings::kobject,
    _attr: *mut bindings::kobj_attribute,
    buf: *const c_char,
    len: usize,
) -> isize {
    // SAFETY: an `SbKobj` (contract), live during the call.
    let (sb, drop_caches) = unsafe { ((*container(kobj)).sb, (*container(kobj)).drop_caches) };
    // SAFETY: by the contract.
    let r = unsafe { parse(buf) }.and_then(|t| {
        if !(1..=3).contains(&t) {
            return Err(EINVAL);
        }
        if t & 1 != 0 {
            // SAFETY: the kobject is in sysfs, so its superblock is live and attached, and
            // `drop_caches` is its filesystem's (type invariant of `SbKobj`).
            unsafe { drop_caches(sb) };
        }
        Ok(())
    });
    stored(r, len)
}

/// A mount's sysfs directory and the settings it shows (the `s_kobj` and `dir_ra_bytes` of
/// `struct erofs_sb_info`).
///
/// # Invariants
///
/// `kobj` is null or an [`SbKobj`] leaked by [`SbSysfs::register`], added to sysfs, whose one
/// reference this value owns, for the superblock whose state holds this value, which had a root
/// then: `put_super` (so [`SbSysfs::unregister`]) runs for it before its state goes.
pub(crate) struct SbSysfs {
    kobj: AtomicPtr<SbKobj>,
    /// `dir_ra_bytes`: bytes of directory readahead per step, 0 for none.
    dir_ra_bytes: AtomicU32,
}

impl SbSysfs {
    /// No directory yet; `dir_ra_bytes` at its default.
    pub(crate) const fn new() -> Self {
        SbSysfs {
            kobj: AtomicPtr::new(ptr::null_mut()),
            dir_ra_bytes: AtomicU32::new(DIR_RA_BYTES),
        }
    }

    /// `dir_ra_bytes`.
    pub(crate) fn dir_ra_bytes(&self) -> u32 {
        self.dir_ra_bytes.load(Ordering::Relaxed)
    }

    /// Creates `/sys/fs/<fstype>/<s_id>/` for `sb`, whose state must hold `self` and which must
    /// have its root (`EINVAL` otherwise), as the last step of `fill_super`
    /// (`erofs_register_sysfs`). Without `/sys/fs/<fstype>` (sysfs is optional, see
    /// [`sysfs::init`]) there is nothing to do.
    pub(crate) fn register<T: FileSystem>(&self, sb: SuperBlock<'_, T>) -> Result {
        // The directory goes in `put_super`, which runs only for superblocks with a root.
        // SAFETY: `sb` is live; `s_root` is only set by `fill_super`, which runs this.
        if !ptr::eq(sb.sysfs(), self) || unsafe { (*sb.as_ptr()).s_root }.is_null() {
            return Err(EINVAL);
        }
        let Some(parent) = sysfs::root() else {
            return Ok(());
        };
        let b = KBox::new(
            SbKobj {
                // SAFETY: `kobject_init_and_add` initialises it.
                kobj: Opaque::zeroed(),
                sb: sb.as_ptr(),
                drop_caches: drop_caches_of::<T>,
                sync_decompress: sync_decompress_of::<T>,
            },
            GFP_KERNEL,
        )?;
        let p = KBox::into_raw(b);
        // SAFETY: `p` is a fresh zeroed kobject; the type is static; `parent` is live while
        // the module is (`sysfs::root`), and the kobject core takes a reference on it; the
        // name is `s_id`, NUL-terminated, passed through "%s".
        let ret = unsafe {
            bindings::kobject_init_and_add(
                Opaque::cast_into(&raw const (*p).kobj),
                SB_KTYPE.as_ptr(),
                parent,
                c"%s".as_char_ptr(),
                (*sb.as_ptr()).s_id.as_ptr(),
            )
        };
        if ret != 0 {
            // SAFETY: after `kobject_init_and_add`, even a failed one, the container goes by
            // `kobject_put`, which calls `release`.
            unsafe { bindings::kobject_put(Opaque::cast_into(&raw const (*p).kobj)) };
            return Err(Error::from_errno(ret));
        }
        // INVARIANT: added, ours, for `sb`, which has a root.
        if self
            .kobj
            .compare_exchange(ptr::null_mut(), p, Ordering::AcqRel, Ordering::Relaxed)
            .is_err()
        {
            // Registered already: keep that one.
            // SAFETY: ours, not published.
            unsafe { remove(p) };
            return Err(EBUSY);
        }
        Ok(())
    }

    /// Removes the directory, waiting for the `show` and `store` calls in progress
    /// (`erofs_unregister_sysfs`).
    pub(crate) fn unregister(&self) {
        let p = self.kobj.swap(ptr::null_mut(), Ordering::AcqRel);
        if !p.is_null() {
            // SAFETY: our reference to an added kobject (type invariant), taken out of `self`.
            unsafe { remove(p) };
        }
    }
}

impl Drop for SbSysfs {
    fn drop(&mut self) {
        // `put_super` did it already (type invariant); this only keeps the reference from
        // leaking should that ever change.
        self.unregister();
    }
}

/// Deletes `p` from sysfs and drops our reference.
///
/// # Safety
///
/// `p` is an added [`SbKobj`] whose one reference the caller owns and gives up.
unsafe fn remove(p: *mut SbKobj) {
    // SAFETY: `p` is live and added (contract); `kobject_del` waits for `show` and `store`
    // calls to return, then `kobject_put` drops our reference, once.
    unsafe {
        let kobj = Opaque::cast_into(&raw const (*p).kobj);
        bindings::kobject_del(kobj);
        bindings::kobject_put(kobj);
    }
}
