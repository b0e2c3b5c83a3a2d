// SPDX-License-Identifier: GPL-2.0-only
//! Page-cache sharing (`inode_share`): regular files with the same fingerprint, in mounts of
//! the same domain, read through one shared inode on a pseudo filesystem, so their data is
//! cached once. C counterpart: fs/erofs/ishare.c.
//!
//! Locking and lifetimes:
//!
//! - The pseudo filesystem `pseudo_erofs_rs` is mounted ([`Mount`]) before our filesystem type
//!   is registered and unmounted after it is unregistered, so it outlives every real inode.
//! - A shared inode is found by fingerprint with `iget5_locked`. Its `fp` is written by
//!   [`set`] before the inode is hashed, read by [`eq`] while it is, and dropped when the inode
//!   is freed.
//! - A real inode that reads through a shared inode holds a reference to the shared inode's
//!   dentry (`sharedentry`) and sits on the shared inode's `list`, under that list's spinlock,
//!   from [`fill`] (while the real inode is `I_NEW`) to its eviction. So the shared inode
//!   outlives the real inodes on its list, and the list holds only live real inodes (though
//!   perhaps ones being evicted, which `igrab` refuses).
//! - A file opened on a real inode holds a backing file of the shared inode, which holds a
//!   reference to the real inode: a VMA may keep only the backing file, and reads through it
//!   must still find a real inode.

use super::{
    ffi,
    fs::FileSystem,
    inode_cache::{
        self,
        InodeHead, //
    },
    tables::{
        FileSystemType,
        Table, //
    },
};
use core::{
    cell::{
        Cell,
        UnsafeCell, //
    },
    mem::MaybeUninit,
    ptr,
    sync::atomic::{
        AtomicPtr,
        AtomicU32,
        Ordering, //
    },
};
use kernel::{
    bindings,
    error::code::*,
    ffi::{
        c_int,
        c_uint,
        c_void, //
    },
    new_spinlock,
    prelude::*,
    sync::SpinLock,
    types::Opaque, //
};

/// The pseudo filesystem of shared inodes (`erofs_anon_fs_type`): mounted, never registered.
/// The magic number of the pseudo filesystem: its real inodes' filesystem's (the C driver's
/// `EROFS_SUPER_MAGIC_V1`), set before it is mounted.
static ANON_MAGIC: AtomicU32 = AtomicU32::new(0);

static ANON_FS_TYPE: FileSystemType<()> = FileSystemType::new(bindings::file_system_type {
    name: kernel::str::as_char_ptr_in_const_context(c"pseudo_erofs_rs"),
    init_fs_context: Some(erofs_rs_anon_init_fs_context),
    kill_sb: Some(bindings::kill_anon_super),
    ..pin_init::zeroed()
});

/// Its superblock operations (`erofs_anon_sops`): the inodes are ours, dropped at last iput.
static ANON_SOPS: Table<bindings::super_operations> = Table::new(bindings::super_operations {
    alloc_inode: Some(inode_cache::erofs_rs_alloc_inode),
    drop_inode: Some(bindings::inode_just_drop),
    free_inode: Some(inode_cache::erofs_rs_free_inode),
    ..pin_init::zeroed()
});

/// Regular files of filesystem `T` whose reads go through a shared inode
/// (`erofs_ishare_fops`).
struct IshareFops<T>(core::marker::PhantomData<T>);

/// The file operations of `T`'s files whose reads go through a shared inode.
pub(super) const fn fops<T: FileSystem>() -> &'static bindings::file_operations {
    &IshareFops::<T>::FOPS
}

impl<T: FileSystem> IshareFops<T> {
    const FOPS: bindings::file_operations = bindings::file_operations {
        open: Some(erofs_rs_ishare_file_open),
        llseek: Some(super::iomap::erofs_rs_file_llseek::<T>),
        read_iter: Some(erofs_rs_ishare_read_iter),
        mmap: Some(erofs_rs_ishare_mmap),
        release: Some(erofs_rs_ishare_file_release),
        splice_read: Some(erofs_rs_ishare_splice_read),
        fadvise: Some(erofs_rs_ishare_fadvise),
        ..pin_init::zeroed()
    };
}

/// The shared inode's own files, `backing_file_open`'s: each pins one real inode while open.
static ISHARE_BACKING_FOPS: Table<bindings::file_operations> =
    Table::new(bindings::file_operations {
        release: Some(erofs_rs_ishare_backing_release),
        ..pin_init::zeroed()
    });

/// The pseudo filesystem's mount while a [`Mount`] lives (`erofs_ishare_mnt`).
static MNT: AtomicPtr<bindings::vfsmount> = AtomicPtr::new(ptr::null_mut());

/// The mount of the pseudo filesystem of shared inodes; dropping it unmounts it.
///
/// # Invariants
///
/// `mnt` is the mount `MNT` holds; this value owns it.
pub(super) struct Mount {
    mnt: *mut bindings::vfsmount,
}

// SAFETY: a mount may be unmounted from any thread.
unsafe impl Send for Mount {}
// SAFETY: `&Mount` gives no access to the mount.
unsafe impl Sync for Mount {}

impl Mount {
    /// Mounts the pseudo filesystem (`erofs_init_ishare`) and publishes the mount; `EBUSY` if
    /// another [`Mount`] lives.
    ///
    /// # Safety
    ///
    /// The returned value is dropped only after every superblock of the filesystem type whose
    /// inodes may share (`NewInode::fill_with`) has been shut down (so no real inode is left).
    pub(super) unsafe fn new(magic: u32) -> Result<Self> {
        // ORDERING: read by the `init_fs_context` of the mount below, in this task.
        ANON_MAGIC.store(magic, Ordering::Relaxed);
        // SAFETY: the pseudo filesystem type is a complete static struct; `kern_mount` does
        // not need it registered, and takes the locks its superblock list needs.
        let mnt = unsafe { bindings::kern_mount(ANON_FS_TYPE.as_ptr()) };
        let mnt = kernel::error::from_err_ptr(mnt)?;
        // `generic_fadvise()` does nothing on `noop_backing_dev_info`.
        // SAFETY: `mnt` is a fresh mount; its superblock is live and has no inode yet.
        let ret = unsafe { bindings::super_setup_bdi((*mnt).mnt_sb) };
        // ORDERING: `Release` publishes the set-up mount to the users of `MNT`.
        let published = ret == 0
            && MNT
                .compare_exchange(ptr::null_mut(), mnt, Ordering::Release, Ordering::Relaxed)
                .is_ok();
        if !published {
            // SAFETY: our mount, never published.
            unsafe { bindings::kern_unmount(mnt) };
            return Err(if ret < 0 {
                Error::from_errno(ret)
            } else {
                EBUSY
            });
        }
        // INVARIANT: published, and ours.
        Ok(Mount { mnt })
    }
}

impl Drop for Mount {
    fn drop(&mut self) {
        // ORDERING: no real inode is left (constructor's contract), so nobody loads `MNT`.
        MNT.store(ptr::null_mut(), Ordering::Relaxed);
        // SAFETY: we own the mount (type invariant); unmounted once, here. Its shared inodes
        // have no users left: each real inode gave its dentry back at eviction.
        unsafe { bindings::kern_unmount(self.mnt) };
    }
}

/// The mount, for users who hold one of its shared inodes or one of our real inodes.
fn mnt() -> *mut bindings::vfsmount {
    // ORDERING: pairs with the `Release` of `Mount::new`.
    MNT.load(Ordering::Acquire)
}

/// A `list_head` in a list that Rust code links and unlinks.
///
/// # Invariants
///
/// `head` is initialised (`INIT_LIST_HEAD`).
#[pin_data]
struct ListHead {
    #[pin]
    head: Opaque<bindings::list_head>,
}

// SAFETY: the list is only walked and changed under the lock that holds it.
unsafe impl Send for ListHead {}

impl ListHead {
    /// An empty list.
    fn new() -> impl PinInit<Self> {
        // INVARIANT: `INIT_LIST_HEAD` initialises it.
        pin_init!(Self {
            // SAFETY: `slot` is valid for writes, and pinned.
            head <- Opaque::ffi_init(|slot| unsafe { bindings::INIT_LIST_HEAD(slot) }),
        })
    }
}

/// The page-cache sharing state of one inode (`erofs_inode`'s ishare fields): for a real
/// inode, its shared inode and its place on that inode's list; for a shared inode, its
/// fingerprint and the list of its real inodes.
#[pin_data]
pub(crate) struct InodeShare {
    /// For a shared inode: the `link`s of its real inodes.
    #[pin]
    list: SpinLock<ListHead>,
    /// For a real inode: its place on its shared inode's `list`, changed under that list's
    /// lock; self-linked when not on a list.
    #[pin]
    link: Opaque<bindings::list_head>,
    /// For a real inode: a reference to the shared inode's dentry, or null when its reads do
    /// not go through a shared inode. Set while `I_NEW`, cleared at eviction.
    sharedentry: AtomicPtr<bindings::dentry>,
    /// For a shared inode: its fingerprint, written by [`set`] before the inode is hashed.
    fp: UnsafeCell<KVec<u8>>,
}

impl InodeShare {
    /// The state of an inode that shares nothing yet.
    pub(super) fn new() -> impl PinInit<Self> {
        pin_init!(Self {
            list <- new_spinlock!(ListHead::new(), "InodeShare::list"),
            // SAFETY: `slot` is valid for writes, and pinned.
            link <- Opaque::ffi_init(|slot| unsafe { bindings::INIT_LIST_HEAD(slot) }),
            sharedentry: AtomicPtr::new(ptr::null_mut()),
            fp: UnsafeCell::new(KVec::new()),
        })
    }

    /// Leaves the shared inode, if any (`erofs_ishare_free_inode`).
    ///
    /// # Safety
    ///
    /// `self` belongs to a real inode being evicted.
    pub(super) unsafe fn evict(&self) {
        // ORDERING: the inode is being evicted; `fill` ran before it was first unlocked.
        let sd = self.sharedentry.swap(ptr::null_mut(), Ordering::Acquire);
        if sd.is_null() {
            return;
        }
        // SAFETY: we hold a reference to `sd`, so its inode, a shared inode allocated by
        // `erofs_rs_alloc_inode`, lives.
        let svi = unsafe { InodeHead::from_inode((*sd).d_inode) };
        {
            let _guard = svi.share.list.lock();
            // SAFETY: `link` is on `svi`'s list (`fill` put it there with `sharedentry`),
            // whose lock we hold.
            unsafe { ffi::erofs_rs_glue_list_del(self.link.get()) };
        }
        // SAFETY: gives back the reference `fill` took.
        unsafe { bindings::dput(sd) };
    }
}

/// The `data` of `iget5_locked`: the fingerprint, which a new shared inode takes over.
struct Key {
    fp: Cell<Option<KVec<u8>>>,
}

/// `iget5_locked`'s `test` (`erofs_ishare_iget5_eq`): whether shared inode `inode` has the
/// fingerprint of `data`.
///
/// # Safety
///
/// `inode` is a hashed inode of the pseudo filesystem; `data` is the [`Key`] that
/// [`fill`] passes, in the thread that passed it.
unsafe extern "C" fn eq(inode: *mut bindings::inode, data: *mut c_void) -> c_int {
    // SAFETY: `data` is a live `Key` of this thread (contract).
    let key = unsafe { &*data.cast::<Key>() };
    // SAFETY: the pseudo filesystem's inodes come from `erofs_rs_alloc_inode`; a hashed one is
    // not freed while `iget5_locked` looks at it.
    let svi = unsafe { InodeHead::from_inode(inode) };
    // SAFETY: a hashed shared inode's `fp` was written by `set` before it was hashed, and is
    // not written again.
    let fp = unsafe { &*svi.share.fp.get() };
    let mine = key.fp.take();
    let same = mine.as_deref() == Some(&fp[..]);
    key.fp.set(mine);
    c_int::from(same)
}

/// `iget5_locked`'s `set` (`erofs_ishare_iget5_set`): hands the fingerprint to the new shared
/// inode `inode`.
///
/// # Safety
///
/// `inode` is a new inode of the pseudo filesystem, not yet hashed; `data` is as for [`eq`].
unsafe extern "C" fn set(inode: *mut bindings::inode, data: *mut c_void) -> c_int {
    // SAFETY: as in `eq`.
    let key = unsafe { &*data.cast::<Key>() };
    // SAFETY: as in `eq`.
    let svi = unsafe { InodeHead::from_inode(inode) };
    let Some(fp) = key.fp.take() else {
        return EINVAL.to_errno();
    };
    // SAFETY: nobody else sees an inode that is not hashed yet.
    unsafe { *svi.share.fp.get() = fp };
    0
}

/// Makes the reads of `inode` go through the shared inode of fingerprint `fp` (the domain id,
/// a NUL and the fingerprint xattr), made on first use (`erofs_ishare_fill_inode`). Returns
/// whether it does.
///
/// # Safety
///
/// `inode` is a regular file of a superblock of this layer, allocated by
/// `erofs_rs_alloc_inode`, `I_NEW` and locked by the caller, with its VFS fields and its
/// address space operations (with a `read_folio`) set.
pub(super) unsafe fn fill(
    inode: *mut bindings::inode,
    fp: KVec<u8>,
    fops: &'static bindings::file_operations,
) -> bool {
    let mnt = mnt();
    if mnt.is_null() {
        return false;
    }
    let hash = super::xxh32(&fp, 0);
    let key = Key {
        fp: Cell::new(Some(fp)),
    };
    // SAFETY: the mount lives while the superblocks of this layer do (`Mount::new`'s
    // contract), and `inode` holds one alive; `eq` and `set` get `key`, which lives across the
    // call, in this thread.
    let si = unsafe {
        bindings::iget5_locked(
            (*mnt).mnt_sb,
            u64::from(hash),
            Some(eq),
            Some(set),
            (&raw const key).cast_mut().cast(),
        )
    };
    // A new shared inode took the fingerprint over; otherwise it is dropped here.
    drop(key);
    if si.is_null() {
        return false;
    }
    // SAFETY: `inode` is live and locked (contract).
    let (aops, size, mapping) = unsafe {
        let m = (*inode).i_mapping;
        ((*m).a_ops, (*inode).i_size, m)
    };
    // SAFETY: `si` is a referenced inode.
    if unsafe { ffi::erofs_rs_glue_inode_is_new(si) } {
        // SAFETY: `si` is new and locked by `iget5_locked` for us to fill.
        unsafe {
            (*si).__bindgen_anon_3.i_fop = ISHARE_BACKING_FOPS.as_ptr();
            (*(*si).i_mapping).a_ops = aops;
            // CAST: the mode bits fit in `umode_t`.
            (*si).i_mode = (0o444 | bindings::S_IFREG) as u16;
            (*si).i_size = size;
            if ffi::erofs_rs_glue_mapping_large_folio_support(mapping) {
                ffi::erofs_rs_glue_mapping_set_large_folios((*si).i_mapping);
            }
            bindings::unlock_new_inode(si);
        }
    } else {
        // SAFETY: `si` is a referenced, filled shared inode.
        let (saops, ssize) = unsafe { ((*(*si).i_mapping).a_ops, (*si).i_size) };
        // Mounts of different kinds (file, block device) or layouts do not share.
        if saops != aops || ssize != size {
            if saops == aops {
                // SAFETY: the format takes a string and two `long long`s, as passed; `s_id`
                // is NUL-terminated.
                unsafe {
                    bindings::_printk(
                        c"\x014erofs_rs (device %s): i_size mismatch (%lld != %lld) for the same fingerprint\n"
                            .as_char_ptr(),
                        (*(*inode).i_sb).s_id.as_ptr(),
                        size,
                        ssize,
                    )
                };
            }
            // SAFETY: drops the reference `iget5_locked` returned.
            unsafe { bindings::iput(si) };
            return false;
        }
    }
    // A disconnected dentry; it takes over the inode reference, also on failure.
    // SAFETY: `si` is a referenced, filled inode.
    let sd = unsafe { bindings::d_obtain_alias(si) };
    if kernel::error::from_err_ptr(sd).is_err() {
        return false;
    }
    // SAFETY: `inode` is allocated by `erofs_rs_alloc_inode`, live (contract).
    let vi = unsafe { InodeHead::from_inode(inode) };
    // SAFETY: `sd` holds `si`, a shared inode allocated by `erofs_rs_alloc_inode`.
    let svi = unsafe { InodeHead::from_inode(si) };
    // ORDERING: published to `open` by `unlock_new_inode`; `Release` for `evict`.
    vi.share.sharedentry.store(sd, Ordering::Release);
    {
        let guard = svi.share.list.lock();
        // SAFETY: `link` is on no list (a new inode); the list's lock is held.
        unsafe { bindings::list_add_tail(vi.share.link.get(), guard.head.get()) };
    }
    // SAFETY: `inode` is `I_NEW` and locked (contract).
    unsafe { (*inode).__bindgen_anon_3.i_fop = fops };
    true
}

/// The inode to read a folio of `inode`'s page cache with (`erofs_real_inode`): `inode`
/// itself, or for a shared inode a real one with the reference the caller must drop (`true`),
/// or null if none is left.
///
/// # Safety
///
/// `inode` was allocated by [`erofs_rs_alloc_inode`](super::inode_cache::erofs_rs_alloc_inode)
/// and is live during the call.
pub(super) unsafe fn real_inode(inode: *mut bindings::inode) -> (*mut bindings::inode, bool) {
    let mnt = mnt();
    // SAFETY: `inode` is live (contract); the mount is, while any inode of it or of a
    // superblock of this layer is (`Mount::new`'s contract).
    if mnt.is_null() || unsafe { (*inode).i_sb != (*mnt).mnt_sb } {
        return (inode, false);
    }
    // SAFETY: `inode` is a live shared inode (contract).
    let svi = unsafe { InodeHead::from_inode(inode) };
    let guard = svi.share.list.lock();
    let head = guard.head.get();
    // SAFETY: the list is initialised and we hold its lock.
    let mut pos = unsafe { (*head).next };
    while pos != head {
        // SAFETY: every entry is the `share.link` of a live real inode (module comment); it
        // cannot leave the list while we hold its lock.
        let vi = unsafe {
            &*kernel::container_of!(
                pos.cast::<Opaque<bindings::list_head>>(),
                InodeHead,
                share.link
            )
        };
        // SAFETY: `vi` is live; `igrab` refuses an inode being freed.
        let real = unsafe { bindings::igrab(vi.inode()) };
        if !real.is_null() {
            return (real, true);
        }
        // SAFETY: as above.
        pos = unsafe { (*pos).next };
    }
    (ptr::null_mut(), false)
}

/// `init_fs_context` of the pseudo filesystem (`erofs_anon_init_fs_context`).
///
/// # Safety
///
/// `fc` is a live filesystem context of the pseudo filesystem being set up.
pub(crate) unsafe extern "C" fn erofs_rs_anon_init_fs_context(
    fc: *mut bindings::fs_context,
) -> c_int {
    // CAST: the same C struct, which kernel::bindings has only as an opaque type.
    let fc = fc.cast::<ffi::fs_context>();
    // ORDERING: stored before the mount that calls this (`Mount::new`).
    // CAST: a `u32` fits in an `unsigned long`.
    let magic = ANON_MAGIC.load(Ordering::Relaxed) as kernel::ffi::c_ulong;
    // SAFETY: `fc` is live (contract).
    let ctx = unsafe { ffi::init_pseudo(fc, magic) };
    if ctx.is_null() {
        return ENOMEM.to_errno();
    }
    // SAFETY: `ctx` is the context `init_pseudo` made; the table is static.
    unsafe { (*ctx).ops = ANON_SOPS.as_ptr() };
    0
}

/// `release` of a shared inode's backing file (`erofs_ishare_backing_release`): drops the real
/// inode `open` pinned.
///
/// # Safety
///
/// `file` is a backing file that [`erofs_rs_ishare_file_open`] made, being released.
pub(crate) unsafe extern "C" fn erofs_rs_ishare_backing_release(
    _inode: *mut bindings::inode,
    file: *mut bindings::file,
) -> c_int {
    // SAFETY: `private_data` holds the real inode reference `open` took (contract); released
    // once, as the file is.
    unsafe {
        bindings::iput((*file).private_data.cast());
        (*file).private_data = ptr::null_mut();
    }
    0
}

/// `open` of a regular file that reads through a shared inode (`erofs_ishare_file_open`):
/// opens a backing file of the shared inode.
///
/// # Safety
///
/// `inode` and `file` are the live arguments of `open`, for a real inode that [`fill`] shared.
pub(crate) unsafe extern "C" fn erofs_rs_ishare_file_open(
    inode: *mut bindings::inode,
    file: *mut bindings::file,
) -> c_int {
    // SAFETY: `file` is live (contract).
    let flags = unsafe { (*file).f_flags };
    if flags & bindings::O_DIRECT != 0 {
        return EINVAL.to_errno();
    }
    // SAFETY: `inode` is a real inode `fill` shared (contract), so allocated by
    // `erofs_rs_alloc_inode`; an inode being opened is live.
    let vi = unsafe { InodeHead::from_inode(inode) };
    let path = bindings::path {
        mnt: mnt(),
        // ORDERING: set before the inode was unlocked; cleared only at eviction.
        dentry: vi.share.sharedentry.load(Ordering::Acquire),
    };
    // CAST: open flags fit in an `int`.
    let flags = (flags | bindings::O_NOATIME) as c_int;
    // SAFETY: `file` is live; `path` names the shared inode's dentry on the live mount, both
    // referenced while `inode` lives; `current_cred` is the opener's.
    let sf =
        unsafe { ffi::backing_file_open(file, flags, &path, ffi::erofs_rs_glue_current_cred()) };
    let sf = match kernel::error::from_err_ptr(sf) {
        Ok(sf) => sf,
        Err(e) => return e.to_errno(),
    };
    // A VMA may outlive this file and keep only the shared one: pin a real inode there.
    // SAFETY: `inode` is live and referenced by `file`; `sf` is ours until handed over.
    unsafe {
        bindings::ihold(inode);
        (*sf).private_data = inode.cast();
        (*file).private_data = sf.cast();
    }
    0
}

/// `release` of a regular file that reads through a shared inode (`erofs_ishare_file_release`).
///
/// # Safety
///
/// `file` is a file that [`erofs_rs_ishare_file_open`] opened, being released.
pub(crate) unsafe extern "C" fn erofs_rs_ishare_file_release(
    _inode: *mut bindings::inode,
    file: *mut bindings::file,
) -> c_int {
    // SAFETY: `private_data` holds the backing file `open` made (contract); put once, here.
    unsafe {
        bindings::fput((*file).private_data.cast());
        (*file).private_data = ptr::null_mut();
    }
    0
}

/// The backing file of a file that [`erofs_rs_ishare_file_open`] opened.
///
/// # Safety
///
/// `file` is such a file, open.
unsafe fn backing(file: *mut bindings::file) -> *mut bindings::file {
    // SAFETY: set by `open`, cleared only by `release` (contract).
    unsafe { (*file).private_data.cast() }
}

/// `read_iter` (`erofs_ishare_file_read_iter`): reads the shared inode's page cache.
///
/// # Safety
///
/// `iocb` and `to` are the live arguments of `read_iter` on a file that
/// [`erofs_rs_ishare_file_open`] opened.
pub(crate) unsafe extern "C" fn erofs_rs_ishare_read_iter(
    iocb: *mut bindings::kiocb,
    to: *mut bindings::iov_iter,
) -> isize {
    // SAFETY: `to` is live; its `count` is plain data (`iov_iter_count`).
    if unsafe { (*to).__bindgen_anon_1.__bindgen_anon_1.as_ref().count } == 0 {
        return 0;
    }
    // SAFETY: `iocb` is live, on such a file (contract).
    let sf = unsafe { backing((*iocb).ki_filp) };
    let mut shared = MaybeUninit::<bindings::kiocb>::zeroed();
    // SAFETY: `shared` is writable; `iocb` is live; `sf` is a referenced file.
    unsafe { ffi::erofs_rs_glue_kiocb_clone(shared.as_mut_ptr(), iocb, sf) };
    // SAFETY: `shared` is a kiocb on `sf` (just set up); `to` is live.
    let nread = unsafe { bindings::filemap_read(shared.as_mut_ptr(), to, 0) };
    // SAFETY: `iocb` is live; `shared` is initialised.
    unsafe { (*iocb).ki_pos = (*shared.as_ptr()).ki_pos };
    nread
}

/// `mmap` (`erofs_ishare_mmap`): maps the shared inode's page cache.
///
/// # Safety
///
/// `file` and `vma` are the live arguments of `mmap` on a file that
/// [`erofs_rs_ishare_file_open`] opened.
pub(crate) unsafe extern "C" fn erofs_rs_ishare_mmap(
    file: *mut bindings::file,
    vma: *mut bindings::vm_area_struct,
) -> c_int {
    // SAFETY: by this function's contract.
    let sf = unsafe { backing(file) };
    // SAFETY: `vma` is being set up by `mmap`; `sf` is a referenced file.
    unsafe { bindings::vma_set_file(vma, sf) };
    // SAFETY: as above.
    let err = unsafe { ffi::erofs_rs_glue_security_mmap_backing_file(vma, sf, file) };
    if err != 0 {
        return err;
    }
    // SAFETY: the live arguments of `mmap`.
    unsafe { bindings::generic_file_readonly_mmap(file, vma) }
}

/// `splice_read` (`erofs_ishare_splice_read`), from the shared inode's page cache.
///
/// # Safety
///
/// The live arguments of `splice_read` on a file that [`erofs_rs_ishare_file_open`] opened.
pub(crate) unsafe extern "C" fn erofs_rs_ishare_splice_read(
    file: *mut bindings::file,
    ppos: *mut bindings::loff_t,
    pipe: *mut bindings::pipe_inode_info,
    len: usize,
    flags: c_uint,
) -> isize {
    // SAFETY: by this function's contract, with the backing file in place of `file`.
    unsafe { bindings::filemap_splice_read(backing(file), ppos, pipe, len, flags) }
}

/// `fadvise` (`erofs_ishare_fadvise`), on the shared inode's page cache.
///
/// # Safety
///
/// The live arguments of `fadvise` on a file that [`erofs_rs_ishare_file_open`] opened.
pub(crate) unsafe extern "C" fn erofs_rs_ishare_fadvise(
    file: *mut bindings::file,
    offset: bindings::loff_t,
    len: bindings::loff_t,
    advice: c_int,
) -> c_int {
    // SAFETY: by this function's contract, with the backing file in place of `file`.
    unsafe { bindings::vfs_fadvise(backing(file), offset, len, advice) }
}
