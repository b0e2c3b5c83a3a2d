// SPDX-License-Identifier: GPL-2.0-only
//! Read bios (`include/linux/bio.h`): built from locked page-cache folios of a block device,
//! submitted, and handed back to a completion function, as `zdata.c` reads compressed data.
//!
//! File-backed mounts read with the same bios, built without a device (fs/erofs/fileio.c's
//! `struct erofs_fileio_rq`): submitting one reads its folios from the backing file with a
//! kiocb, asynchronously where the file completes it so (`directio` on a file that allows
//! `O_DIRECT`), and its completion runs the same `end_io`.

use super::{
    ffi,
    sys, //
};
use core::{
    ptr::NonNull,
    sync::atomic::{
        AtomicU32,
        Ordering, //
    },
};
use kernel::{
    bindings,
    ffi::{
        c_int,
        c_long,
        c_void, //
    },
    prelude::*, //
};

/// Room for folios in a file read's bio (C: the 16 `bvecs` of `struct erofs_fileio_rq`);
/// contiguous pages share one vector, so a read may be longer.
const FILE_VECS: usize = 32;

/// A read of a backing file that stands in for a bio (`struct erofs_fileio_rq`): a bio with
/// no device, initialised over `bvecs`, which a kiocb read of `file` fills. Two counts hold it
/// (`refs`): the submitter's, until its read call has returned (a file may still touch the
/// kiocb after queueing the read: ext4 updates the file's atime), and the completion's, until
/// the bio's `end_io` has returned ([`file_complete`]); the last one frees it.
///
/// `bio` is the first field: a pointer to it is one to the whole request.
#[repr(C)]
struct FileRq {
    bio: bindings::bio,
    bvecs: [bindings::bio_vec; FILE_VECS],
    iocb: bindings::kiocb,
    /// The backing file, with a reference of the request's own, given up when it is freed
    /// (the superblock's may be gone by then: a shared inode's read may outlive the mount
    /// whose file it reads, and `fput` may run in any context).
    file: *mut bindings::file,
    /// Read with `IOCB_DIRECT` if the file allows it (`directio`).
    direct: bool,
    /// The file byte the read starts at (`bi_sector` holds it in sectors, as C's).
    pos: u64,
    /// The counts that hold the request (C: `ref`).
    refs: AtomicU32,
}

/// A read bio being built on a block device. Dropping it unsubmitted is not possible: it owns
/// locked folios that only its completion unlocks, so it is submitted (see [`ReadBio::submit`])
/// or, on drop, submitted as well.
///
/// # Invariants
///
/// `ptr` is a bio for a read of `REQ_OP_READ`, with at least one folio, not yet submitted,
/// whose `bi_end_io` and `bi_private` were set by its maker's caller under its contract: one from
/// `bio_alloc_bioset` on a device ([`ReadBio::new`]), or, with no device, the `bio` of a
/// `FileRq` ([`ReadBio::new_file`]).
pub(crate) struct ReadBio {
    ptr: NonNull<bindings::bio>,
}

// SAFETY: a bio being built may be finished and submitted from any thread.
unsafe impl Send for ReadBio {}

impl ReadBio {
    /// A bio reading `len` bytes of `folio`, from its byte `off`, from byte `pos` of `bdev`, with
    /// room for `BIO_MAX_VECS` folios; `end_io` runs with it once it completes (see [`Completed`]).
    /// `rahead` marks it as readahead (`REQ_RAHEAD`), which the block layer may fail early.
    ///
    /// # Safety
    ///
    /// `bdev` stays live until the bio completes. `folio` is a locked folio of at least
    /// `off + len` bytes, referenced until the bio completes: one that the completion unlocks (the
    /// page-cache folio of `bdev` at byte `pos`, or a short-lived folio outside any page
    /// cache), or one lent by its locker, who keeps it locked until the bio has completed (a
    /// file's page-cache folio that the bio reads compressed data into; the completion leaves
    /// it alone, [`Completed::end_read_owned`]).
    /// `end_io` takes the bio as a [`Completed`] and handles `private` as the caller intends;
    /// if any folio of the bio is lent, it ends the folios with
    /// [`Completed::end_read_owned`] (of the page cache whose folios passed to the bio, if
    /// any), never with [`Completed::end_read`], which ends every folio.
    #[expect(
        clippy::too_many_arguments,
        reason = "bio_alloc's arguments and the first folio, as C's callers pass them"
    )]
    pub(crate) unsafe fn new(
        bdev: *mut bindings::block_device,
        pos: u64,
        folio: *mut bindings::folio,
        off: usize,
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
            bindings::bio_add_folio_nofail(b, folio, len, off);
        }
        // INVARIANT: the fresh bio, with one folio, not submitted.
        Ok(ReadBio { ptr: bio })
    }

    /// As [`ReadBio::new`], for byte `pos` of the backing file `file` of a file-backed mount
    /// (`erofs_fileio_bio_alloc`), with room for [`FILE_VECS`] vectors; read with
    /// `IOCB_DIRECT` when `direct` and the file allows it.
    ///
    /// # Safety
    ///
    /// As for [`ReadBio::new`], with `file` a referenced regular file in place of `bdev` (the
    /// request takes a reference of its own for the read), `pos` within `loff_t`, and `folio`
    /// a short-lived folio or one of a page cache of ours, never of the file's own, for its
    /// byte `pos`.
    pub(crate) unsafe fn new_file(
        file: *mut bindings::file,
        direct: bool,
        pos: u64,
        folio: *mut bindings::folio,
        len: usize,
        end_io: unsafe extern "C" fn(*mut bindings::bio),
        private: *mut c_void,
    ) -> Result<Self> {
        let rq = KBox::into_raw(KBox::<FileRq>::new_uninit(GFP_KERNEL)?).cast::<FileRq>();
        // SAFETY: `rq` is a fresh allocation of one `FileRq`, ours alone; every field of it is
        // plain data that may be all zeroes before `bio_init` sets the bio up over the vectors,
        // which stay where they are until the request is freed. The first folio fits in an
        // empty bio.
        unsafe {
            core::ptr::write_bytes(rq, 0, 1);
            let b = &raw mut (*rq).bio;
            // CAST: FILE_VECS (32) fits in the `unsigned short` the callee takes.
            bindings::bio_init(
                b,
                core::ptr::null_mut(),
                (&raw mut (*rq).bvecs).cast(),
                FILE_VECS as u16,
                bindings::req_op_REQ_OP_READ,
            );
            (*rq).file = bindings::get_file(file);
            (*rq).direct = direct;
            (*rq).pos = pos;
            (&raw mut (*rq).refs).write(AtomicU32::new(2));
            (*b).bi_iter.bi_sector = pos >> bindings::SECTOR_SHIFT;
            (*b).bi_end_io = Some(end_io);
            (*b).bi_private = private;
            bindings::bio_add_folio_nofail(b, folio, len, 0);
            // INVARIANT: the fresh bio, with one folio, not submitted; no device, so it is
            // the `bio` of a `FileRq`.
            Ok(ReadBio {
                ptr: NonNull::new_unchecked(b),
            })
        }
    }

    /// Adds `len` bytes of `folio` (from its byte `off`) after what the bio reads; `false` if
    /// the bio is full, and the folio was not added.
    ///
    /// # Safety
    ///
    /// As for [`ReadBio::new`] (or [`ReadBio::new_file`] for a bio without a device): `folio`
    /// is a locked folio for the bytes of the bio's device (or file) right after the bio's
    /// last one, referenced until the bio completes, that the completion unlocks (its
    /// page-cache folio there, or a short-lived folio) or that its locker lent.
    pub(crate) unsafe fn add_folio(
        &mut self,
        folio: *mut bindings::folio,
        off: usize,
        len: usize,
    ) -> bool {
        // SAFETY: our unsubmitted bio (type invariant); the folio by the caller's contract.
        unsafe { bindings::bio_add_folio(self.ptr.as_ptr(), folio, len, off) }
    }

    /// Submits the bio; its `end_io` runs when it completes, maybe before this returns.
    pub(crate) fn submit(self) {
        let bio = self.ptr.as_ptr();
        core::mem::forget(self);
        // SAFETY: an unsubmitted bio (type invariant), submitted once (`self` is gone).
        unsafe { submit(bio) };
    }
}

impl Drop for ReadBio {
    fn drop(&mut self) {
        // SAFETY: as in `submit`; `drop` runs only when `submit` did not.
        unsafe { submit(self.ptr.as_ptr()) };
    }
}

/// Submits `bio`: to its device, or, without one, as a read of its backing file
/// (`erofs_fileio_rq_submit`).
///
/// # Safety
///
/// `bio` is an unsubmitted bio of [`ReadBio`], submitted once.
unsafe fn submit(bio: *mut bindings::bio) {
    // SAFETY: a live bio (contract).
    if !unsafe { (*bio).bi_bdev }.is_null() {
        // SAFETY: a bio of `ReadBio::new`, ready (contract).
        unsafe { bindings::submit_bio(bio) };
        return;
    }
    // A bio without a device comes from `ReadBio::new_file`: it is the first field of a live
    // `FileRq`, which is ours until `file_complete` frees it.
    let rq = bio.cast::<FileRq>();
    // SAFETY: `rq` is live and ours, as said above; `file` is referenced until the read
    // completes (`new_file`'s contract).
    let ret = unsafe {
        let file = (*rq).file;
        let iocb = &raw mut (*rq).iocb;
        ffi::erofs_rs_glue_init_sync_kiocb(iocb, file);
        // CAST: within `loff_t` (`new_file`'s contract).
        (*iocb).ki_pos = (*rq).pos as i64;
        (*iocb).ki_complete = Some(file_complete);
        if (*rq).direct && (*file).f_mode & sys::EROFS_RS_FMODE_CAN_ODIRECT != 0 {
            (*iocb).ki_flags |= bindings::IOCB_DIRECT as c_int;
        }
        let mut iter = core::mem::MaybeUninit::<bindings::iov_iter>::uninit();
        // The vectors stay with the request until it completes; the iterator is used up
        // during the read call (a direct read builds its bios from it there).
        bindings::iov_iter_bvec(
            iter.as_mut_ptr(),
            bindings::ITER_DEST,
            (&raw const (*rq).bvecs).cast(),
            (*bio).bi_vcnt.into(),
            (*bio).bi_iter.bi_size as usize,
        );
        // The old credentials are restored right after, in this task.
        let old = ffi::erofs_rs_glue_override_creds((*file).f_cred);
        let ret = bindings::vfs_iocb_iter_read(file, iocb, iter.as_mut_ptr());
        ffi::erofs_rs_glue_revert_creds(old);
        ret
    };
    // CAST: the errno fits.
    if ret != -(bindings::EIOCBQUEUED as isize) {
        // SAFETY: the read is over, and nobody else completes it; the submitter's count keeps
        // the request.
        unsafe { file_complete(&raw mut (*rq).iocb, ret as c_long) };
    }
    // SAFETY: the submitter's count, given up once, after the read call.
    unsafe { file_rq_put(rq) };
}

/// Gives up one count of `rq`, freeing it with the last.
///
/// # Safety
///
/// `rq` is a live `FileRq` of [`ReadBio::new_file`] on which the caller holds a count, not used
/// by it afterwards.
unsafe fn file_rq_put(rq: *mut FileRq) {
    // ORDERING: AcqRel: the last count sees every use of the request before it frees it.
    // SAFETY: live while the caller's count is held (contract).
    if unsafe { (*rq).refs.fetch_sub(1, Ordering::AcqRel) } == 1 {
        // SAFETY: the last count: nobody refers to the request; a box of `new_file`, freed once,
        // with the reference to the file it took.
        unsafe {
            bindings::fput((*rq).file);
            drop(KBox::from_raw(rq));
        }
    }
}

/// A file read completed (`erofs_fileio_ki_complete`), in any context: what a short read left
/// out (past the backing file's end) reads as zeroes, as the C driver's; the bio's `end_io`
/// runs, and the completion's count is given up.
///
/// # Safety
///
/// `iocb` is the `iocb` of a `FileRq` that [`submit`] started, completed once.
unsafe extern "C" fn file_complete(iocb: *mut bindings::kiocb, ret: c_long) {
    // SAFETY: `iocb` is a field of a live `FileRq` (contract), ours from here on.
    let rq = unsafe { iocb.byte_sub(core::mem::offset_of!(FileRq, iocb)) }.cast::<FileRq>();
    // SAFETY: as above.
    let bio = unsafe { &raw mut (*rq).bio };
    // SAFETY: the completion's count keeps the request; `end_io` takes the bio as a
    // `Completed`, which does not put a bio without a device, and the bio is not used after
    // `bio_uninit`; the count is given up once, last. Advancing the bio's iterator past what
    // was read and zeroing the rest touches only the request's own vectors and the folios
    // they hold (locked, referenced until `end_io`); `end_io` walks the vectors, not the
    // iterator.
    unsafe {
        // CAST: `ret` is not negative where it is widened, and below the `u32` size where it
        // is narrowed.
        if ret >= 0 && (ret as u64) < u64::from((*bio).bi_iter.bi_size) {
            bindings::__bio_advance(bio, ret as u32);
            bindings::zero_fill_bio(bio);
        }
        if ret < 0 && (*bio).bi_status == 0 {
            // CAST: errnos fit in `int`.
            (*bio).bi_status = bindings::errno_to_blk_status(ret as c_int);
        }
        if let Some(end_io) = (*bio).bi_end_io {
            end_io(bio);
        }
        bindings::bio_uninit(bio);
        file_rq_put(rq);
    }
}

/// A completed read bio, in its `end_io`; dropping it puts it (`bio_put`), unless it is a file
/// read's, which its completion frees after `end_io` (C: `z_erofs_endio` puts only a bio with a
/// device).
///
/// # Invariants
///
/// `ptr` is a completed bio built by [`ReadBio`], whose reference (for one without a device,
/// its use until `end_io` returns) passed to this value.
pub(crate) struct Completed {
    ptr: NonNull<bindings::bio>,
}

impl Completed {
    /// # Safety
    ///
    /// `bio` is the argument of an `end_io` given to [`ReadBio::new`] or
    /// [`ReadBio::new_file`], taken once, and not used after that `end_io` returns.
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

    /// Marks every folio of the bio uptodate (or not) and unlocks it (`folio_end_read`), then
    /// puts the bio. Takes the completion, so that its folios are unlocked once.
    pub(crate) fn end_read(self, success: bool) {
        self.end_folios(success, None);
    }

    /// As [`Completed::end_read`], for the folios the bio owns only (`z_erofs_endio`): those
    /// outside any page cache (short-lived) and those of the page cache `owned` (the managed
    /// cache). Folios of another page cache were lent to the bio by their locker, which ends
    /// them itself: a file's own folios that compressed data is read into (in-place I/O).
    /// `owned` is compared, never followed.
    pub(crate) fn end_read_owned(self, success: bool, owned: *const bindings::address_space) {
        self.end_folios(success, Some(owned));
    }

    /// Ends the folios of the bio: all of them, or those outside any page cache and those of
    /// page cache `owned`.
    fn end_folios(self, success: bool, owned: Option<*const bindings::address_space>) {
        let mut fi = sys::folio_iter::default();
        let bio = self.ptr.as_ptr();
        // SAFETY: `bio` is live; `fi` is its folio iterator, used only here.
        unsafe { ffi::erofs_rs_glue_bio_first_folio(&mut fi, bio) };
        while !fi.folio.is_null() {
            // SAFETY: each folio of a completed read bio is locked until it is ended (by its
            // unlocking passing to this completion, or by its lender, who ends it only after
            // the bio completed: the contract of `ReadBio::new`/`add_folio`), so it is live and
            // its `mapping` cannot change (truncation waits for the lock).
            let mapping = unsafe { (*fi.folio).__bindgen_anon_1.__bindgen_anon_1.mapping };
            if owned.is_none_or(|o| mapping.is_null() || core::ptr::eq(mapping, o)) {
                // SAFETY: a folio whose unlocking passed to this completion, ended once: by
                // `ReadBio::new`'s contract, a bio with lent folios is ended with `owned`,
                // and its lent folios are of another page cache (skipped here); one ended
                // without `owned` has none.
                unsafe { bindings::folio_end_read(fi.folio, success) };
            }
            // SAFETY: as above; the iterator walks the bio's vectors, which nobody changes.
            unsafe { ffi::erofs_rs_glue_bio_next_folio(&mut fi, bio) };
        }
    }
}

impl Drop for Completed {
    fn drop(&mut self) {
        let bio = self.ptr.as_ptr();
        // SAFETY: we own the bio's reference (type invariant), put once; one without a device
        // is a `FileRq`'s, freed by `file_complete` when `end_io` returns.
        unsafe {
            if !(*bio).bi_bdev.is_null() {
                bindings::bio_put(bio);
            }
        }
    }
}
