// SPDX-License-Identifier: GPL-2.0-only
//! The per-mount sysfs directory `/sys/fs/<fstype>/<disk>/`, as the C driver's
//! `/sys/fs/erofs/<disk>/`, with the files the filesystem declares ([`Sysfs::SB_ATTRS`]);
//! removed in `put_super`. The directory is named as C names it (`super_set_sysfs_name_id()`):
//! the superblock's `s_id`, which is the disk of a block-device mount and `major:minor` of a
//! file-backed one. The kobject type of filesystem `T` ([`SbKobjType<T>`](SbKobjType)) and its
//! attribute group are built at compile time; the kernel's `kobj_sysfs_ops` dispatches to the
//! group's trampolines (`sysfs.rs`), which reach `T`'s [`Sysfs::show`] and [`Sysfs::store`]
//! through [`SbFiles<T>`](SbFiles). C counterpart: fs/erofs/sysfs.c (`erofs_register_sysfs`,
//! `erofs_unregister_sysfs`, `erofs_sb_ktype`).

use super::{
    fs::FileSystem,
    sysfs::{
        self,
        FileTable,
        Files,
        ShowBuf,
        Sysfs, //
    },
    SuperBlock, //
};
use core::{
    marker::PhantomData,
    ptr,
    sync::atomic::{
        AtomicPtr,
        Ordering, //
    },
};
use kernel::{
    bindings,
    prelude::*,
    types::Opaque, //
};

/// The kobject type of the mounts' directories of filesystem `T` (`erofs_sb_ktype`), built
/// at compile time.
struct SbKobjType<T>(PhantomData<T>);

impl<T: FileSystem + Sysfs> SbKobjType<T> {
    /// Its one group, the files of [`Sysfs::SB_ATTRS`] (`erofs_sb_groups`).
    const GROUPS: [*const bindings::attribute_group; 2] = {
        let group: &'static bindings::attribute_group = &FileTable::<SbFiles<T>>::GROUP;
        [group, ptr::null()]
    };

    /// The type.
    const KTYPE: bindings::kobj_type = {
        let groups: &'static [*const bindings::attribute_group; 2] = &Self::GROUPS;
        bindings::kobj_type {
            release: Some(release),
            sysfs_ops: &raw const bindings::kobj_sysfs_ops,
            default_groups: groups.as_ptr().cast_mut().cast(),
            ..pin_init::zeroed()
        }
    };
}

/// One mount's kobject, `/sys/fs/<fstype>/<disk>`.
///
/// # Invariants
///
/// `sb` is the superblock whose [`SbSysfs`] holds this kobject, and its state is attached for
/// as long as the kobject is in sysfs (it is deleted in `put_super`, see [`SbSysfs`]). A
/// kobject of type [`SbKobjType<T>`](SbKobjType) is the `kobj` of an `SbKobj` whose `sb` is a
/// superblock of `T`.
#[repr(C)]
struct SbKobj {
    kobj: Opaque<bindings::kobject>,
    sb: *mut bindings::super_block,
}

/// The directories of mounts of filesystem `T`: kobjects of type
/// [`SbKobjType<T>`](SbKobjType), whose group is [`FileTable<SbFiles<T>>`](FileTable)'s.
struct SbFiles<T>(PhantomData<T>);

impl<T: FileSystem + Sysfs> SbFiles<T> {
    /// The superblock of `kobj`, for one `show` or `store`.
    ///
    /// # Safety
    ///
    /// `kobj` is a kobject of this kind (`SbKobjType<T>`'s group is the only one with its
    /// files), in a `show` or `store` of one of its files.
    unsafe fn sb<'a>(kobj: *mut bindings::kobject) -> SuperBlock<'a, T> {
        // SAFETY: an `SbKobj` (contract, type invariant), live during the call.
        let sb = unsafe { (*container(kobj)).sb };
        // SAFETY: the kobject is in sysfs, so its superblock, one of `T` (type invariant of
        // `SbKobj`), is live and its state attached; `kobject_del` in `put_super` waits for
        // this call to return, and `'a` ends with it.
        unsafe { SuperBlock::from_raw(sb) }
    }
}

impl<T: FileSystem + Sysfs> Files for SbFiles<T> {
    type Id = T::SbAttr;

    const ATTRS: &'static [sysfs::Attr<T::SbAttr>] = T::SB_ATTRS;

    unsafe fn show(kobj: *mut bindings::kobject, id: Self::Id, out: &mut ShowBuf<'_>) -> Result {
        // SAFETY: by this function's contract.
        T::show(unsafe { Self::sb(kobj) }, id, out)
    }

    unsafe fn store(kobj: *mut bindings::kobject, id: Self::Id, input: &CStr) -> Result {
        // SAFETY: by this function's contract.
        T::store(unsafe { Self::sb(kobj) }, id, input)
    }
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

/// A mount's sysfs directory (the `s_kobj` of `struct erofs_sb_info`).
///
/// # Invariants
///
/// `kobj` is null or an [`SbKobj`] leaked by [`SbSysfs::register`], added to sysfs, whose one
/// reference this value owns, for the superblock whose state holds this value, which had a root
/// then: `put_super` (so [`SbSysfs::unregister`]) runs for it before its state goes.
pub(crate) struct SbSysfs {
    kobj: AtomicPtr<SbKobj>,
}

impl SbSysfs {
    /// No directory yet.
    pub(crate) const fn new() -> Self {
        SbSysfs {
            kobj: AtomicPtr::new(ptr::null_mut()),
        }
    }

    /// Creates `/sys/fs/<fstype>/<s_id>/` for `sb`, whose state must hold `self` and which must
    /// have its root (`EINVAL` otherwise), as the last step of `fill_super`
    /// (`erofs_register_sysfs`). Without `/sys/fs/<fstype>` (sysfs is optional, see
    /// [`sysfs::init`]) there is nothing to do.
    pub(super) fn register<T: FileSystem + Sysfs>(&self, sb: SuperBlock<'_, T>) -> Result {
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
            },
            GFP_KERNEL,
        )?;
        let p = KBox::into_raw(b);
        let ktype: &'static bindings::kobj_type = &SbKobjType::<T>::KTYPE;
        // SAFETY: `p` is a fresh zeroed kobject; the type is in static storage (a promoted
        // constant); `parent` is live while the module is (`sysfs::root`), and the kobject core
        // takes a reference on it; the name is `s_id`, NUL-terminated, passed through "%s".
        let ret = unsafe {
            bindings::kobject_init_and_add(
                Opaque::cast_into(&raw const (*p).kobj),
                ktype,
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
        // INVARIANT: added, ours, for `sb`, which has a root; of type `SbKobjType<T>` for `sb`,
        // a superblock of `T`.
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
    pub(super) fn unregister(&self) {
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
