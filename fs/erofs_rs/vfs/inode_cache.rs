// SPDX-License-Identifier: GPL-2.0-only
//! The inode container (the VFS inode with the driver's per-inode state around it) and its
//! slab cache, with the `super_operations` that allocate, evict and free inodes. C
//! counterpart: `struct erofs_inode`, `erofs_inode_cachep`, `erofs_alloc_inode()`,
//! `erofs_free_inode()` and `erofs_evict_inode()` in fs/erofs/internal.h and super.c.
//!
//! Lifetimes: the VFS allocates every inode of our superblocks, and of the pseudo filesystem of
//! shared inodes (`vfs/ishare.rs`), with [`erofs_rs_alloc_inode`], and gives it back to
//! [`erofs_rs_free_inode`] from an RCU callback after eviction. The cache is published by
//! [`InodeCache::new`] before the first superblock can exist, and destroyed by its drop after
//! the last superblock is gone and, through `rcu_barrier()`, the last inode freed.

use super::{
    ffi,
    ishare::InodeShare, //
};
use core::{
    cell::UnsafeCell,
    mem::MaybeUninit,
    ptr,
    sync::atomic::{
        AtomicPtr,
        AtomicU64,
        Ordering, //
    },
};
use kernel::{
    bindings,
    ffi::{
        c_int,
        c_ulong,
        c_void, //
    },
    prelude::*,
    types::Opaque, //
};

/// What every inode of this layer has besides the VFS inode, whatever its filesystem's
/// [`INodeData`](super::fs::FileSystem::INodeData): the first part of an [`ErofsInode`].
///
/// # Invariants
///
/// - `vfs_inode` was set up by `inode_init_once` (the cache's constructor), and is the inode
///   the VFS knows from [`erofs_rs_alloc_inode`] to [`erofs_rs_free_inode`].
/// - `share` and `nid` are initialised over the same span; `nid` changes only before the
///   inode is hashed.
#[repr(C)]
pub(crate) struct InodeHead {
    /// The VFS inode; at offset 0.
    vfs_inode: Opaque<bindings::inode>,
    /// Page-cache sharing (`inode_share`): the links between real and shared inodes.
    pub(super) share: InodeShare,
    /// The nid (`erofs_inode::nid`), the key of the inode hash: written by [`iget5_set`]
    /// under `inode_hash_lock` before the inode is hashed, read by [`iget5_eq`].
    nid: AtomicU64,
}

/// One inode as the slab cache holds it (`struct erofs_inode`): the [`InodeHead`], then the
/// filesystem's data `D`, which the cache was made for ([`InodeCache::new`]).
///
/// # Invariants
///
/// `info` is initialised before an inode of a superblock is unlocked (`I_NEW` cleared), and
/// does not change afterwards; it stays uninitialised in shared inodes.
#[repr(C)]
pub(crate) struct ErofsInode<D> {
    /// At offset 0 (`repr(C)`), whatever `D` is.
    head: InodeHead,
    /// The filesystem's data, written while the inode is `I_NEW`.
    info: UnsafeCell<MaybeUninit<D>>,
}

impl InodeHead {
    /// The container of `inode`, as a raw pointer.
    ///
    /// # Safety
    ///
    /// `inode` was allocated by [`erofs_rs_alloc_inode`] (every inode of our superblocks and of
    /// the pseudo filesystem of shared inodes is) and is not freed yet.
    unsafe fn container(inode: *mut bindings::inode) -> *mut Self {
        // SAFETY: such an inode is the `vfs_inode` field of the head of an `ErofsInode` (see
        // `erofs_rs_alloc_inode`), so stepping back by that field's offset stays inside the
        // same allocation; `Opaque<inode>` has the layout of `inode`.
        unsafe {
            kernel::container_of!(
                inode.cast::<Opaque<bindings::inode>>(),
                InodeHead,
                vfs_inode
            )
        }
    }

    /// The container of `inode`.
    ///
    /// # Safety
    ///
    /// `inode` was allocated by [`erofs_rs_alloc_inode`] and is not freed during `'a`.
    pub(super) unsafe fn from_inode<'a>(inode: *mut bindings::inode) -> &'a Self {
        // SAFETY: the container is live for `'a` (contract), and every field a shared
        // reference reaches allows interior mutation where anything mutates it.
        unsafe { &*Self::container(inode) }
    }

    /// The VFS inode.
    pub(super) fn inode(&self) -> *mut bindings::inode {
        self.vfs_inode.get()
    }
}

impl<D> ErofsInode<D> {
    /// The container of `inode`.
    ///
    /// # Safety
    ///
    /// `inode` was allocated by [`erofs_rs_alloc_inode`] from the cache made for `D`
    /// ([`InodeCache::new`]) and is not freed during `'a`.
    pub(super) unsafe fn from_inode<'a>(inode: *mut bindings::inode) -> &'a Self {
        // SAFETY: the head is at offset 0 of the container (`repr(C)`), an object of the cache
        // made for `D` (contract), live for `'a`; every field a shared reference reaches allows
        // interior mutation where anything mutates it.
        unsafe { &*InodeHead::container(inode).cast::<Self>() }
    }

    /// The filesystem's data of a filled inode.
    ///
    /// # Safety
    ///
    /// The inode is a filled inode of a superblock: [`ErofsInode::set_info`] ran before it was
    /// unlocked (or, while it is still `I_NEW`, earlier in the caller's thread, which holds it
    /// locked: `NewInode::fill_with` lends it so).
    pub(super) unsafe fn info(&self) -> &D {
        // SAFETY: written once (contract) before the inode was unlocked, which orders the write
        // before this read, or earlier in this thread; never written again (type invariant).
        unsafe { (*self.info.get()).assume_init_ref() }
    }

    /// Stores the filesystem's data of a new inode.
    ///
    /// # Safety
    ///
    /// The inode is `I_NEW`, locked by the caller and not yet filled, so no reference that
    /// [`ErofsInode::info`] returned exists.
    pub(super) unsafe fn set_info(&self, data: D) {
        // INVARIANT: written while the inode is `I_NEW`, before it is unlocked.
        // SAFETY: nobody else reads or writes `info` of an unfilled `I_NEW` inode (contract).
        unsafe { (*self.info.get()).write(data) };
    }
}

/// The cache while an [`InodeCache`] lives.
static INODE_CACHE: AtomicPtr<bindings::kmem_cache> = AtomicPtr::new(ptr::null_mut());

/// The slab cache of [`ErofsInode`]s (`erofs_inode_cachep`) of one filesystem's data type,
/// published for [`erofs_rs_alloc_inode`] while this value lives.
///
/// # Invariants
///
/// `cache` is the cache `INODE_CACHE` holds; this value created it and owns it.
pub(super) struct InodeCache {
    cache: *mut bindings::kmem_cache,
}

// SAFETY: a cache may be used and destroyed from any thread.
unsafe impl Send for InodeCache {}
// SAFETY: `&InodeCache` gives no access to the cache.
unsafe impl Sync for InodeCache {}

impl InodeCache {
    /// Creates the cache of containers of `D`, named `<module>_inode`, and publishes it;
    /// `EBUSY` if another [`InodeCache`] lives.
    ///
    /// # Safety
    ///
    /// The returned value is dropped only after every superblock whose `alloc_inode` is
    /// [`erofs_rs_alloc_inode`] has been shut down.
    pub(super) unsafe fn new<D: Copy>(module: &CStr) -> Result<Self> {
        let name = kernel::str::CString::try_from_fmt(fmt!("{}_inode", module.to_str()?))?;
        let align = u32::try_from(core::mem::align_of::<ErofsInode<D>>()).map_err(|_| EINVAL)?;
        let mut args = bindings::kmem_cache_args {
            align,
            ctor: Some(init_once),
            ..Default::default()
        };
        let size = u32::try_from(core::mem::size_of::<ErofsInode<D>>()).map_err(|_| EINVAL)?;
        // SAFETY: the name is NUL-terminated, and copied by the callee (`kstrdup_const`); `args`
        // is valid for the call; `init_once` sets up the head of an object of `size` bytes,
        // which starts with one.
        let cache = unsafe {
            bindings::__kmem_cache_create_args(
                name.as_char_ptr(),
                size,
                &mut args,
                ffi::EROFS_RS_SLAB_RECLAIM_ACCOUNT | ffi::EROFS_RS_SLAB_ACCOUNT,
            )
        };
        if cache.is_null() {
            return Err(ENOMEM);
        }
        // ORDERING: `Release` publishes the created cache to `erofs_rs_alloc_inode`.
        if INODE_CACHE
            .compare_exchange(ptr::null_mut(), cache, Ordering::Release, Ordering::Relaxed)
            .is_err()
        {
            // SAFETY: made just above, never published, no object allocated.
            unsafe { bindings::kmem_cache_destroy(cache) };
            return Err(EBUSY);
        }
        // INVARIANT: published, and ours.
        Ok(InodeCache { cache })
    }
}

impl Drop for InodeCache {
    fn drop(&mut self) {
        // `erofs_rs_free_inode` runs from RCU callbacks: wait for those of the last inodes
        // (those of the pseudo filesystem's unmount too) before the cache goes.
        // SAFETY: no preconditions; called in process context (module exit, or init failing).
        unsafe { bindings::rcu_barrier() };
        // ORDERING: nothing allocates any more (constructor's contract).
        INODE_CACHE.store(ptr::null_mut(), Ordering::Relaxed);
        // SAFETY: we own the cache (type invariant); every object has been freed: the
        // superblocks are gone (constructor's contract) and their RCU frees done (above).
        unsafe { bindings::kmem_cache_destroy(self.cache) };
    }
}

/// The cache's constructor (`erofs_inode_init_once`): runs once per object, not per
/// allocation.
///
/// # Safety
///
/// `p` is an object of the cache of [`InodeCache`], an `ErofsInode<D>`, which starts with an
/// [`InodeHead`].
unsafe extern "C" fn init_once(p: *mut c_void) {
    let vi = p.cast::<InodeHead>();
    // INVARIANT: `vfs_inode` is set up before the object is first handed out.
    // SAFETY: `vi` points to writable memory for an `ErofsInode` (contract).
    unsafe { bindings::inode_init_once(Opaque::cast_into(&raw const (*vi).vfs_inode)) };
}

/// `super_operations::alloc_inode` (`erofs_alloc_inode`), for our superblocks and for the
/// pseudo filesystem of shared inodes.
///
/// # Safety
///
/// `sb` is a live superblock whose `s_op->alloc_inode` is this function.
pub(crate) unsafe extern "C" fn erofs_rs_alloc_inode(
    sb: *mut bindings::super_block,
) -> *mut bindings::inode {
    // ORDERING: pairs with the `Release` of `InodeCache::new`.
    let cache = INODE_CACHE.load(Ordering::Acquire);
    if cache.is_null() {
        return ptr::null_mut();
    }
    // SAFETY: `sb` is live (contract); `cache` stays alive while any superblock of ours lives
    // (`InodeCache::new`'s contract).
    let vi = unsafe { ffi::erofs_rs_glue_alloc_inode_sb(sb, cache, bindings::GFP_KERNEL) }
        .cast::<InodeHead>();
    if vi.is_null() {
        return ptr::null_mut();
    }
    // INVARIANT: `share` is set up from here to `erofs_rs_free_inode`; `vfs_inode` was by the
    // constructor.
    // SAFETY: `vi` is a fresh object of the cache, sized and aligned for an `ErofsInode`, which
    // starts with its `InodeHead`, and slab objects do not move, so it may be initialised in
    // place.
    unsafe { pin_init::raw_init(&raw mut (*vi).share, InodeShare::new()) };
    // INVARIANT: so is `nid`, until `iget5_set` keys the inode.
    // SAFETY: as above.
    unsafe { (&raw mut (*vi).nid).write(AtomicU64::new(0)) };
    // SAFETY: `vi` is valid (above).
    Opaque::cast_into(unsafe { &raw const (*vi).vfs_inode })
}

/// `super_operations::free_inode` (`erofs_free_inode`): gives the container back to the cache.
///
/// # Safety
///
/// `inode` was allocated by [`erofs_rs_alloc_inode`], and the VFS is done with it (this runs
/// from the RCU callback that ends its life).
pub(crate) unsafe extern "C" fn erofs_rs_free_inode(inode: *mut bindings::inode) {
    // SAFETY: as `InodeHead::container` requires (contract).
    let vi = unsafe { InodeHead::container(inode) };
    // SAFETY: `share` was initialised by `erofs_rs_alloc_inode` (type invariant) and nothing
    // uses it any more (contract); it is dropped once, here.
    unsafe { ptr::drop_in_place(&raw mut (*vi).share) };
    // ORDERING: the cache was published before this inode was allocated from it.
    let cache = INODE_CACHE.load(Ordering::Acquire);
    // SAFETY: `vi` is an object of `cache`, which lives until every object is freed
    // (`InodeCache::drop` waits for the RCU callbacks); the filesystem's data needs no drop
    // (`InodeCache::new` takes only `Copy` data).
    unsafe { bindings::kmem_cache_free(cache, vi.cast()) };
}

/// `super_operations::evict_inode` (`erofs_evict_inode`): leaves page-cache sharing, drops the
/// page cache and clears the inode.
///
/// # Safety
///
/// `inode` is an inode of one of our superblocks being evicted.
pub(crate) unsafe extern "C" fn erofs_rs_evict_inode(inode: *mut bindings::inode) {
    // SAFETY: our superblocks' inodes come from `erofs_rs_alloc_inode`, and an inode being
    // evicted is not freed before this returns.
    let vi = unsafe { InodeHead::from_inode(inode) };
    // SAFETY: the inode is being evicted: no file of it is open, nothing else looks at it.
    unsafe { vi.share.evict() };
    // SAFETY: `inode` is live and being evicted, as both require.
    unsafe { bindings::truncate_inode_pages_final(&raw mut (*inode).i_data) };
    // SAFETY: as above; the page cache is empty now.
    unsafe { bindings::clear_inode(inode) };
}

/// The key of [`iget5_locked`]: the nid, and the inode number a new inode gets.
struct IgetKey {
    nid: u64,
    ino: c_ulong,
}

/// `iget5_locked`'s test (`erofs_iget5_eq`): whether `inode` is that of the key's nid.
///
/// # Safety
///
/// `inode` is a hashed inode of one of our superblocks (the inode hash calls this only for
/// inodes of the superblock looked up, under `inode_hash_lock` or RCU); `data` is the
/// [`IgetKey`] of [`iget5_locked`].
unsafe extern "C" fn iget5_eq(inode: *mut bindings::inode, data: *mut c_void) -> c_int {
    // SAFETY: our superblocks' inodes come from `erofs_rs_alloc_inode`, and a hashed one is not
    // freed before an RCU grace period (contract).
    let vi = unsafe { InodeHead::from_inode(inode) };
    // SAFETY: `data` is the key (contract).
    let key = unsafe { &*data.cast::<IgetKey>() };
    // ORDERING: written before the inode was hashed, under `inode_hash_lock`, which the
    // hashing (or RCU publication) orders before this read.
    c_int::from(vi.nid.load(Ordering::Relaxed) == key.nid)
}

/// `iget5_locked`'s set (`erofs_iget5_set`): keys a new inode with the nid and gives it its
/// inode number.
///
/// # Safety
///
/// `inode` is a new inode of one of our superblocks, not hashed yet (`inode_insert5` calls this
/// under `inode_hash_lock`); `data` is the [`IgetKey`] of [`iget5_locked`].
unsafe extern "C" fn iget5_set(inode: *mut bindings::inode, data: *mut c_void) -> c_int {
    // SAFETY: as in `iget5_eq`.
    let vi = unsafe { InodeHead::from_inode(inode) };
    // SAFETY: `data` is the key (contract).
    let key = unsafe { &*data.cast::<IgetKey>() };
    // ORDERING: see `iget5_eq`.
    vi.nid.store(key.nid, Ordering::Relaxed);
    // SAFETY: not hashed yet, so nobody else looks at the inode (contract).
    // CAST: `ino_t` fits in the 64-bit `i_ino`.
    unsafe { (*inode).i_ino = key.ino as u64 };
    0
}

/// Looks up or creates the inode of `nid` on `sb` (`iget5_locked` as `erofs_iget` calls it),
/// hashed by `ino` (the inode number, squashed to `ino_t` as `erofs_squash_ino()` does), keyed
/// by the nid: a referenced inode, `I_NEW` and locked if it was created; null if out of memory.
///
/// # Safety
///
/// `sb` is a live superblock of ours whose inodes come from [`erofs_rs_alloc_inode`].
pub(super) unsafe fn iget5_locked(
    sb: *mut bindings::super_block,
    nid: u64,
    ino: u64,
) -> *mut bindings::inode {
    // CAST: `erofs_squash_ino()`: on a 32-bit `ino_t`, the high half folded into the low.
    let ino = if core::mem::size_of::<c_ulong>() < 8 {
        (ino ^ (ino >> 32)) as c_ulong
    } else {
        ino as c_ulong
    };
    let mut key = IgetKey { nid, ino };
    // SAFETY: `sb` is live and ours (contract), so the callbacks only see our inodes; `key`
    // lives across the call.
    unsafe {
        bindings::iget5_locked(
            sb,
            // CAST: as above.
            ino as u64,
            Some(iget5_eq),
            Some(iget5_set),
            (&raw mut key).cast(),
        )
    }
}
