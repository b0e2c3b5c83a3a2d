// SPDX-License-Identifier: GPL-2.0-only
//! The managed cache of compressed data (C: `sbi->managed_cache`, `MNGD_MAPPING(sbi)` of
//! fs/erofs/zdata.c, made by `erofs_init_managed_cache` in fs/erofs/super.c): an inode of the
//! superblock's own, in no hash and with no name, whose page cache holds the compressed folios
//! of the pclusters that `cache_strategy=` keeps; those it does not keep are read into
//! short-lived folios ([`ZQueue::grab_shortlived`](super::queue::ZQueue::grab_shortlived)).
//! `drop_caches` empties it ([`ManagedCache::drop_unused`]).
//!
//! The cache is private, as the C driver's: only our bios write its folios, before they are
//! uptodate, so the decoders may borrow their bytes. The block device's own page cache, which
//! the metadata is read through, is shared with every other opener of the device, one that
//! writes it included.

use super::{
    fs::FileSystem,
    slot_grab,
    super_block::{
        New,
        SuperBlock, //
    },
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
    prelude::*, //
};

/// The slot of a superblock's managed-cache inode: empty before [`ManagedCache::init`] and
/// after [`ManagedCache::release`].
///
/// As [`InodeSlot`](super::InodeSlot), [`ManagedCache::get`] hands out a reference of its own,
/// so a reader may race `release` (page-cache sharing lets a reader of another mount reach this
/// superblock while it unmounts).
///
/// # Invariants
///
/// `ptr` is null or the managed-cache inode of the superblock this slot belongs to: allocated
/// by `new_inode` (so by our `alloc_inode`, freed by our `free_inode` after an RCU grace
/// period), never hashed, whose page cache only our bios fill; the slot owns one reference.
pub(crate) struct ManagedCache {
    ptr: AtomicPtr<bindings::inode>,
}

impl ManagedCache {
    /// An empty slot.
    pub(crate) const fn empty() -> Self {
        // INVARIANT: null.
        ManagedCache {
            ptr: AtomicPtr::new(ptr::null_mut()),
        }
    }

    /// Makes the managed-cache inode of `sb` (`erofs_init_managed_cache`): one link, the
    /// largest size (its page index is the device's), `GFP_KERNEL` folios. Only for a slot of
    /// `sb`'s state; give it back with [`ManagedCache::release`] before `sb` is shut down. (Not
    /// enforced: a slot kept past its superblock keeps an inode whose superblock is freed, as
    /// an [`InodeSlot`](super::InodeSlot) would.)
    ///
    /// # Errors
    ///
    /// `ENOMEM` if no inode can be allocated; `EBUSY` if the slot holds one already.
    pub(crate) fn init<T: FileSystem>(&self, sb: &SuperBlock<'_, T, New>) -> Result {
        // SAFETY: `sb` is a live superblock of `T` being filled: a `SuperBlock<New>` reaches
        // `T::fill_super` only after `prepare` set `s_op` to `T`'s, whose `alloc_inode` is
        // `erofs_rs_alloc_inode`, so the inode is one of this layer's.
        let inode = unsafe { bindings::new_inode(sb.as_ptr()) };
        if inode.is_null() {
            return Err(ENOMEM);
        }
        // SAFETY: a fresh inode that only we know of: its fields may be set as the C driver
        // does before anyone can see it (`set_nlink`, and the stores `i_size_write` and
        // `mapping_set_gfp_mask` make).
        unsafe {
            bindings::set_nlink(inode, 1);
            (*inode).i_size = bindings::loff_t::MAX;
            (*(*inode).i_mapping).gfp_mask = bindings::GFP_KERNEL;
        }
        // ORDERING: `Release` publishes the set-up inode to `get`'s `Acquire`.
        if self
            .ptr
            .compare_exchange(ptr::null_mut(), inode, Ordering::Release, Ordering::Relaxed)
            .is_err()
        {
            // SAFETY: the slot did not take it: `new_inode`'s reference is still ours.
            unsafe { bindings::iput(inode) };
            return Err(EBUSY);
        }
        // INVARIANT: the slot owns `new_inode`'s reference.
        Ok(())
    }

    /// A reference to the inode, `None` if the slot is empty (or its inode is being freed).
    pub(crate) fn get(&self) -> Option<CacheInode> {
        // SAFETY: an inode in the slot is one that RCU frees, and the slot owns a reference
        // to it until it takes it out (type invariant).
        let p = unsafe { slot_grab(&self.ptr) };
        // INVARIANT: a new reference (`igrab`) to our managed-cache inode.
        (!p.is_null()).then_some(CacheInode { ptr: p })
    }

    /// The page cache of the inode in the slot, without a reference of its own (as
    /// [`ManagedCache::get`] takes: an `igrab` and an `iput` per read); null if the slot is
    /// empty.
    ///
    /// # Safety
    ///
    /// The slot is not released before the caller's last use of the returned mapping.
    pub(crate) unsafe fn mapping_unreferenced(&self) -> *mut bindings::address_space {
        // ORDERING: pairs with `init`'s `Release`: the inode is set up.
        let p = self.ptr.load(Ordering::Acquire);
        if p.is_null() {
            return ptr::null_mut();
        }
        // SAFETY: the slot owns a reference to `p` (type invariant), which it keeps during the
        // call (contract).
        unsafe { (*p).i_mapping }
    }

    /// Gives back the slot's reference (in `put_super`, or when `fill_super` fails), leaving it
    /// empty; the last reference evicts the inode and frees its folios.
    pub(crate) fn release(&self) {
        // ORDERING: pairs with `init`'s `Release`.
        let p = self.ptr.swap(ptr::null_mut(), Ordering::AcqRel);
        // INVARIANT: the slot is empty.
        if !p.is_null() {
            // SAFETY: `p` was in the slot (type invariant), which no longer holds it: its
            // reference is ours.
            unsafe { bindings::iput(p) };
        }
    }

    /// Drops every unused folio of the managed cache (`drop_caches` bit 1 of the C driver's
    /// sysfs: `invalidate_mapping_pages(MNGD_MAPPING(sbi), 0, -1)`): the clean folios nobody
    /// holds, locks or maps. Nothing for an empty slot.
    pub(crate) fn drop_unused(&self) {
        if let Some(c) = self.get() {
            // SAFETY: the mapping of an inode we hold a reference to; `invalidate_mapping_pages`
            // only drops folios it can lock, that are clean, unmapped and referenced by nobody
            // but the page cache.
            unsafe { bindings::invalidate_mapping_pages(c.mapping(), 0, usize::MAX) };
        }
    }
}

impl Drop for ManagedCache {
    fn drop(&mut self) {
        self.release();
    }
}

/// A reference to a managed-cache inode, given back on drop.
///
/// # Invariants
///
/// `ptr` is the managed-cache inode of a superblock of ours (as in [`ManagedCache`]), and this
/// value owns one reference to it.
pub(crate) struct CacheInode {
    ptr: *mut bindings::inode,
}

// SAFETY: an inode reference may be used and given back from any thread.
unsafe impl Send for CacheInode {}
// SAFETY: `&CacheInode` only lends the mapping, whose users lock what they change.
unsafe impl Sync for CacheInode {}

impl CacheInode {
    /// The page cache of the managed cache, live while `self` is.
    pub(crate) fn mapping(&self) -> *mut bindings::address_space {
        // SAFETY: a live inode (type invariant) has a mapping, its own `i_data`.
        unsafe { (*self.ptr).i_mapping }
    }
}

impl Drop for CacheInode {
    fn drop(&mut self) {
        // SAFETY: we own one reference (type invariant), given back once.
        unsafe { bindings::iput(self.ptr) };
    }
}
