// SPDX-License-Identifier: GPL-2.0-only
//! Read bios (`include/linux/bio.h`): built from locked page-cache folios of a block device,
//! submitted, and handed back to a completion function, as `zdata.c` reads compressed data.

use super::{
    ffi,
    sys, //
};
use core::ptr::NonNull;
use kernel::{
    bindings,
    ffi::c_void,
    prelude::*, //
};

/// A read bio being built on a block device. Dropping it unsubmitted is not possible: it owns
/// locked folios that only its completion unlocks, so it is submitted (see [`ReadBio::submit`])
/// or, on drop, submitted as well.
///
/// # Invariants
///
/// `ptr` is a bio from `bio_alloc_bioset` for a read of `REQ_OP_READ`, with at least one folio,
/// not yet submitted, whose `bi_end_io` and `bi_private` were set by [`ReadBio::new`]'s caller
/// under its contract.
pub(crate) struct ReadBio {
    ptr: NonNull<bindings::bio>,
}

// SAFETY: a bio being built may be finished and submitted from any thread.
unsafe impl Send for ReadBio {}

impl ReadBio {
    /// A bio reading `len` bytes of `folio` into its start from byte `pos` of `bdev`, with room
    /// for `BIO_MAX_VECS` folios; `end_io` runs with it once it completes (see [`Completed`]).
    /// `rahead` marks it as readahead (`REQ_RAHEAD`), which the block layer may fail early.
    ///
    /// # Safety
    ///
    /// `bdev` stays live until the bio completes. `folio` is a locked folio of at least `len`
    /// bytes, referenced until the bio completes, that the completion unlocks: the page-cache
    /// folio of `bdev` at byte `pos`, or a short-lived folio outside any page cache.
    /// `end_io` takes the bio as a [`Completed`] and handles `private` as the caller intends.
    pub(crate) unsafe fn new(
        bdev: *mut bindings::block_device,
        pos: u64,
        folio: *mut bindings::folio,
        len: usize,
        end_io: unsafe extern "C" fn(*mut bindings::bio),
        private: *mut c_void,
        rahead: bool,
    ) -> Result<Self> {
        // CAST: BIO_MAX_VECS (256) fits in the `unsigned short` the callee takes.
        // SAFETY: `bdev` is live; `fs_bio_set` is the kernel's bio set for filesystems.
        let bio = unsafe {
            bindings::bio_alloc_bioset(
                bdev,
                bindings::BIO_MAX_VECS as u16,
                bindings::req_op_REQ_OP_READ,
                sys::EROFS_RS_GFP_NOIO,
                core::ptr::addr_of_mut!(bindings::fs_bio_set),
            )
        };
        // GFP_NOIO waits for the bio set's mempool rather than failing, but be safe.
        let bio = NonNull::new(bio).ok_or(ENOMEM)?;
        // SAFETY: a fresh bio that we initialise; the first folio always fits in an empty bio
        // of 256 vectors.
        unsafe {
            let b = bio.as_ptr();
            (*b).bi_iter.bi_sector = pos >> bindings::SECTOR_SHIFT;
            (*b).bi_end_io = Some(end_io);
            (*b).bi_private = private;
            if rahead {
                (*b).bi_opf |= 1 << bindings::req_flag_bits___REQ_RAHEAD;
            }
            bindings::bio_add_folio_nofail(b, folio, len, 0);
        }
        // INVARIANT: the fresh bio, with one folio, not submitted.
        Ok(ReadBio { ptr: bio })
    }

    /// Adds `len` bytes of `folio` (from its start) after what the bio reads; `false` if the
    /// bio is full, and the folio was not added.
    ///
    /// # Safety
    ///
    /// As for [`ReadBio::new`]: `folio` is a locked folio for the bytes of the bio's device
    /// right after the bio's last one (its page-cache folio there, or a short-lived folio),
    /// referenced until the bio completes, that the completion unlocks.
    pub(crate) unsafe fn add_folio(&mut self, folio: *mut bindings::folio, len: usize) -> bool {
        // SAFETY: our unsubmitted bio (type invariant); the folio by the caller's contract.
        unsafe { bindings::bio_add_folio(self.ptr.as_ptr(), folio, len, 0) }
    }

    /// Submits the bio; its `end_io` runs when it completes, maybe before this returns.
    pub(crate) fn submit(self) {
        let bio = self.ptr.as_ptr();
        core::mem::forget(self);
        // SAFETY: an unsubmitted bio (type invariant), submitted once (`self` is gone).
        unsafe { bindings::submit_bio(bio) };
    }
}

impl Drop for ReadBio {
    fn drop(&mut self) {
        // SAFETY: as in `submit`; `drop` runs only when `submit` did not.
        unsafe { bindings::submit_bio(self.ptr.as_ptr()) };
    }
}

/// A completed read bio, in its `end_io`; dropping it puts it (`bio_put`).
///
/// # Invariants
///
/// `ptr` is a completed bio built by [`ReadBio`], whose reference passed to this value.
pub(crate) struct Completed {
    ptr: NonNull<bindings::bio>,
}

impl Completed {
    /// # Safety
    ///
    /// `bio` is the argument of an `end_io` given to [`ReadBio::new`], taken once.
    pub(crate) unsafe fn from_raw(bio: NonNull<bindings::bio>) -> Self {
        // INVARIANT: by the caller's contract.
        Completed { ptr: bio }
    }

    /// The `private` pointer given to [`ReadBio::new`].
    pub(crate) fn private(&self) -> *mut c_void {
        // SAFETY: a live bio (type invariant).
        unsafe { (*self.ptr.as_ptr()).bi_private }
    }

    /// The I/O status as an errno: 0 or negative.
    pub(crate) fn errno(&self) -> i32 {
        // SAFETY: a live bio (type invariant).
        unsafe { bindings::blk_status_to_errno((*self.ptr.as_ptr()).bi_status) }
    }

    /// Marks every folio of the bio uptodate (or not) and unlocks it (`folio_end_read`).
    pub(crate) fn end_read(&self, success: bool) {
        let mut fi = sys::folio_iter::default();
        let bio = self.ptr.as_ptr();
        // SAFETY: `bio` is live; `fi` is its folio iterator, used only here.
        unsafe { ffi::erofs_rs_glue_bio_first_folio(&mut fi, bio) };
        while !fi.folio.is_null() {
            // SAFETY: each folio of a completed read bio is locked, and its unlocking passed
            // to this completion (the contract of `ReadBio::new`/`add_folio`).
            unsafe { bindings::folio_end_read(fi.folio, success) };
            // SAFETY: as above; the iterator walks the bio's vectors, which nobody changes.
            unsafe { ffi::erofs_rs_glue_bio_next_folio(&mut fi, bio) };
        }
    }
}

impl Drop for Completed {
    fn drop(&mut self) {
        // SAFETY: we own the bio's reference (type invariant), put once.
        unsafe { bindings::bio_put(self.ptr.as_ptr()) };
    }
}
