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
use crate::erofs_core::{
    inode::InodeInfo,
    zmap::ZInfo, //
};
use core::{
    cell::UnsafeCell,
    mem::MaybeUninit,
    ptr,
    sync::atomic::{
        AtomicPtr,
        Ordering, //
    },
};
use kernel::{
    bindings,
    ffi::c_void,
    prelude::*,
    types::Opaque, //
};

/// What the driver keeps per inode besides the VFS inode (`struct erofs_inode`'s fields): the
/// decoded inode and, for compressed ones, the map header.
#[derive(Clone, Copy)]
pub(super) struct InodeBlob {
    /// The decoded on-disk inode.
    pub(super) vi: InodeInfo,
    /// The compressed-file map header: `None` for other inodes, and for compressed ones whose
    /// header did not parse.
    pub(super) zi: Option<ZInfo>,
}

// `erofs_rs_free_inode` frees the container without dropping the blob.
const _: () = assert!(!core::mem::needs_drop::<InodeBlob>());

/// One inode of ours as the slab cache holds it (`struct erofs_inode`).
///
/// # Invariants
///
/// - `vfs_inode` was set up by `inode_init_once` (the cache's constructor), and is the inode
///   the VFS knows from [`erofs_rs_alloc_inode`] to [`erofs_rs_free_inode`].
/// - `share` is initialised over the same span.
/// - `info` is initialised before a regular inode of ours is unlocked (`I_NEW` cleared), and
///   does not change afterwards; it stays uninitialised in shared inodes.
#[repr(C)]
pub(crate) struct ErofsInode {
    /// The VFS inode.
    vfs_inode: Opaque<bindings::inode>,
    /// The decoded inode, written while the inode is `I_NEW`.
    info: UnsafeCell<MaybeUninit<InodeBlob>>,
    /// Page-cache sharing (`inode_share`): the links between real and shared inodes.
    pub(super) share: InodeShare,
}

impl ErofsInode {
    /// The container of `inode`, as a raw pointer.
    ///
    /// # Safety
    ///
    /// `inode` was allocated by [`erofs_rs_alloc_inode`] (every inode of our superblocks and of
    /// the pseudo filesystem of shared inodes is) and is not freed yet.
    unsafe fn container(inode: *mut bindings::inode) -> *mut Self {
        // SAFETY: such an inode is the `vfs_inode` field of an `ErofsInode` (see
        // `erofs_rs_alloc_inode`), so stepping back by that field's offset stays inside the
        // same allocation; `Opaque<inode>` has the layout of `inode`.
        unsafe {
            kernel::container_of!(
                inode.cast::<Opaque<bindings::inode>>(),
                ErofsInode,
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

    /// The driver's state of a filled inode.
    ///
    /// # Safety
    ///
    /// The inode is a filled inode of ours: [`ErofsInode::set_info`] ran before it was
    /// unlocked.
    pub(super) unsafe fn info(&self) -> &InodeBlob {
        // SAFETY: written once before the inode was unlocked (contract), which orders the write
        // before this read; never written again (type invariant).
        unsafe { (*self.info.get()).assume_init_ref() }
    }

    /// Stores the driver's state of a new inode.
    ///
    /// # Safety
    ///
    /// The inode is `I_NEW`, locked by the caller and not yet filled, so no reference that
    /// [`ErofsInode::info`] returned exists.
    pub(super) unsafe fn set_info(&self, blob: InodeBlob) {
        // INVARIANT: written while the inode is `I_NEW`, before it is unlocked.
        // SAFETY: nobody else reads or writes `info` of an unfilled `I_NEW` inode (contract).
        unsafe { (*self.info.get()).write(blob) };
    }
}

/// The cache while an [`InodeCache`] lives.
static INODE_CACHE: AtomicPtr<bindings::kmem_cache> = AtomicPtr::new(ptr::null_mut());

/// The slab cache of [`ErofsInode`]s (`erofs_inode_cachep`), published for
/// [`erofs_rs_alloc_inode`] while this value lives.
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
    /// Creates the cache and publishes it; `EBUSY` if another [`InodeCache`] lives.
    ///
    /// # Safety
    ///
    /// The returned value is dropped only after every superblock whose `alloc_inode` is
    /// [`erofs_rs_alloc_inode`] has been shut down.
    pub(super) unsafe fn new() -> Result<Self> {
        let mut args = bindings::kmem_cache_args {
            // CAST: the alignment of a struct is small.
            align: core::mem::align_of::<ErofsInode>() as u32,
            ctor: Some(init_once),
            ..Default::default()
        };
        const SIZE: usize = core::mem::size_of::<ErofsInode>();
        const _: () = assert!(SIZE <= u32::MAX as usize);
        // SAFETY: the name is a static NUL-terminated string; `args` is valid for the call;
        // `init_once` sets up an object of `SIZE` bytes.
        let cache = unsafe {
            bindings::__kmem_cache_create_args(
                c"erofs_rs_inode".as_char_ptr(),
                // CAST: checked just above.
                SIZE as u32,
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
/// `p` is an object of the cache of [`InodeCache`], `size_of::<ErofsInode>()` bytes.
unsafe extern "C" fn init_once(p: *mut c_void) {
    let vi = p.cast::<ErofsInode>();
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
#[no_mangle]
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
        .cast::<ErofsInode>();
    if vi.is_null() {
        return ptr::null_mut();
    }
    // INVARIANT: `share` is set up from here to `erofs_rs_free_inode`; `vfs_inode` was by the
    // constructor.
    // SAFETY: `vi` is a fresh object of the cache, sized and aligned for an `ErofsInode`, and
    // slab objects do not move, so it may be initialised in place.
    unsafe { pin_init::raw_init(&raw mut (*vi).share, InodeShare::new()) };
    // SAFETY: `vi` is valid (above).
    Opaque::cast_into(unsafe { &raw const (*vi).vfs_inode })
}

/// `super_operations::free_inode` (`erofs_free_inode`): gives the container back to the cache.
///
/// # Safety
///
/// `inode` was allocated by [`erofs_rs_alloc_inode`], and the VFS is done with it (this runs
/// from the RCU callback that ends its life).
#[no_mangle]
pub(crate) unsafe extern "C" fn erofs_rs_free_inode(inode: *mut bindings::inode) {
    // SAFETY: as `ErofsInode::container` requires (contract).
    let vi = unsafe { ErofsInode::container(inode) };
    // SAFETY: `share` was initialised by `erofs_rs_alloc_inode` (type invariant) and nothing
    // uses it any more (contract); it is dropped once, here.
    unsafe { ptr::drop_in_place(&raw mut (*vi).share) };
    // ORDERING: the cache was published before this inode was allocated from it.
    let cache = INODE_CACHE.load(Ordering::Acquire);
    // SAFETY: `vi` is an object of `cache`, which lives until every object is freed
    // (`InodeCache::drop` waits for the RCU callbacks); the blob needs no drop.
    unsafe { bindings::kmem_cache_free(cache, vi.cast()) };
}

/// `super_operations::evict_inode` (`erofs_evict_inode`): leaves page-cache sharing, drops the
/// page cache and clears the inode.
///
/// # Safety
///
/// `inode` is an inode of one of our superblocks being evicted.
#[no_mangle]
pub(crate) unsafe extern "C" fn erofs_rs_evict_inode(inode: *mut bindings::inode) {
    // SAFETY: our superblocks' inodes come from `erofs_rs_alloc_inode`, and an inode being
    // evicted is not freed before this returns.
    let vi = unsafe { ErofsInode::from_inode(inode) };
    // SAFETY: the inode is being evicted: no file of it is open, nothing else looks at it.
    unsafe { vi.share.evict() };
    // SAFETY: `inode` is live and being evicted, as both require.
    unsafe { bindings::truncate_inode_pages_final(&raw mut (*inode).i_data) };
    // SAFETY: as above; the page cache is empty now.
    unsafe { bindings::clear_inode(inode) };
}
