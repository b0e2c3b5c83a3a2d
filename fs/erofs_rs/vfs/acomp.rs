// SPDX-License-Identifier: GPL-2.0-only
//! Asynchronous decompression through the crypto API (acomp), and the driver's offload of
//! DEFLATE pclusters built on it. C header: include/crypto/acompress.h; C counterpart:
//! fs/erofs/decompressor_crypto.c (the Intel QAT path).
//!
//! Lifetimes: a [`Transform`] is owned and freed on drop; every [`Request`] holds an [`Arc`] of
//! its transform, so no request outlives it. A [`Slot`] owns one request and everything the
//! engine may touch while it is in flight: the two scatterlists and a reference on each folio
//! they point at. Nothing of a slot is changed, reused or freed before its request completes:
//! finishing waits for it, and dropping a slot finishes it. So a [`Pool`] (and an [`Accel`]) may
//! be dropped with requests in flight, e.g. after a `mem::forget` of an [`AccelReq`]: it waits
//! for them first.
//!
//! Locks: [`Pool`]'s `free` spinlock guards only its bitmap of free slots; the global
//! accelerator name (`/sys/fs/erofs_rs/accel`) has its own mutex. Neither is held while
//! waiting for the engine.

use super::{
    ffi,
    pagecache::OutFolio, //
    sys,
};
use core::{
    cell::UnsafeCell,
    fmt,
    ptr::{
        self,
        NonNull, //
    },
};
use kernel::{
    bindings,
    debugfs::{
        Dir,
        File, //
    },
    error::from_err_ptr,
    ffi::{
        c_int,
        c_uint,
        c_void, //
    },
    new_spinlock,
    prelude::*,
    str::CStr,
    sync::{
        atomic::{
            Acquire,
            Atomic,
            Relaxed,
            Release, //
        },
        global_lock,
        Arc,
        Completion,
        GlobalGuard,
        SpinLock, //
    },
};
use pin_init::{
    pin_init_array_from_fn,
    raw_init, //
};

/// Request slots per engine: as many pclusters of one read may be in flight at once.
const ACCEL_SLOTS: usize = 16;

/// The bitmap of a pool whose slots are all free.
const ALL_FREE: u32 = (1 << ACCEL_SLOTS) - 1;

/// Bytes of an acomp algorithm or driver name, with its NUL (`CRYPTO_MAX_ALG_NAME`).
// CAST: a small constant.
const NAME_LEN: usize = sys::CRYPTO_MAX_ALG_NAME as usize;
const _: () = assert!(NAME_LEN == 128);

/// An acomp transform (`struct crypto_acomp`): one algorithm of one driver.
///
/// # Invariants
///
/// `ptr` is a transform from `crypto_alloc_acomp`, owned by this value.
pub(crate) struct Transform {
    ptr: NonNull<sys::crypto_acomp>,
}

// SAFETY: the crypto API lets a transform be used and freed from any thread.
unsafe impl Send for Transform {}
// SAFETY: requests of one transform may run concurrently; `&self` methods only read its name.
unsafe impl Sync for Transform {}

impl Transform {
    /// Allocates a transform of `name`, an algorithm ("deflate") or driver ("qat_deflate").
    ///
    /// # Errors
    ///
    /// `ENOENT` if no such driver is loaded or can be, or the driver's error.
    pub(crate) fn new(name: &CStr) -> Result<Self> {
        // SAFETY: `name` is NUL-terminated; type and mask 0 take any acomp implementation.
        let ptr = from_err_ptr(unsafe { sys::crypto_alloc_acomp(name.as_char_ptr(), 0, 0) })?;
        // INVARIANT: a fresh transform, ours.
        NonNull::new(ptr).map(|ptr| Transform { ptr }).ok_or(ENOMEM)
    }

    /// The name of the driver serving this transform (`crypto_acomp_driver_name`).
    pub(crate) fn driver_name(&self) -> &CStr {
        // SAFETY: `ptr` is live (type invariant).
        let name = unsafe { ffi::erofs_rs_glue_crypto_acomp_driver_name(self.ptr.as_ptr()) };
        // SAFETY: the algorithm's `cra_driver_name`, NUL-terminated, lives as long as the
        // transform that pins its algorithm.
        unsafe { CStr::from_char_ptr(name) }
    }
}

impl Drop for Transform {
    fn drop(&mut self) {
        // SAFETY: we own the transform (type invariant); no request of it is left, since each
        // holds an `Arc` of it.
        unsafe { ffi::erofs_rs_glue_crypto_free_acomp(self.ptr.as_ptr()) };
    }
}

/// A request of a transform (`struct acomp_req`).
///
/// # Invariants
///
/// `ptr` is a request from `acomp_request_alloc` on `tfm`, owned by this value. It is only
/// dropped when no operation of it is in flight (its [`Slot`] finishes first).
struct Request {
    ptr: NonNull<sys::acomp_req>,
    /// Keeps the transform alive while the request is.
    _tfm: Arc<Transform>,
}

impl Request {
    /// Allocates a request of `tfm`.
    fn new(tfm: Arc<Transform>) -> Result<Self> {
        // SAFETY: `tfm` is a live transform.
        let ptr = unsafe { ffi::erofs_rs_glue_acomp_request_alloc(tfm.ptr.as_ptr()) };
        // INVARIANT: a fresh request of `tfm`, ours; `tfm` lives as long as we do.
        Ok(Request {
            ptr: NonNull::new(ptr).ok_or(ENOMEM)?,
            _tfm: tfm,
        })
    }
}

impl Drop for Request {
    fn drop(&mut self) {
        // SAFETY: we own the request and nothing is in flight (type invariant); `self._tfm`,
        // dropped after this, still holds its transform.
        unsafe { ffi::erofs_rs_glue_acomp_request_free(self.ptr.as_ptr()) };
    }
}

/// A reference on a folio, dropped with `folio_put`.
///
/// # Invariants
///
/// `ptr` is a folio on which this value owns one reference.
struct FolioRef {
    ptr: NonNull<bindings::folio>,
}

impl FolioRef {
    /// Takes a new reference on `ptr` (`None` if null).
    ///
    /// # Safety
    ///
    /// `ptr` is null or a live folio (its user holds a reference or its lock) during the call.
    unsafe fn get(ptr: *mut bindings::folio) -> Option<Self> {
        let ptr = NonNull::new(ptr)?;
        // SAFETY: a live folio, by the caller's contract.
        unsafe { ffi::erofs_rs_glue_folio_get(ptr.as_ptr()) };
        // INVARIANT: the reference taken just above.
        Some(FolioRef { ptr })
    }
}

// SAFETY: a folio reference can be dropped from any thread.
unsafe impl Send for FolioRef {}

impl Drop for FolioRef {
    fn drop(&mut self) {
        // SAFETY: we own one reference (type invariant), released once.
        unsafe { ffi::erofs_rs_glue_folio_put(self.ptr.as_ptr()) };
    }
}

/// What the user of a [`Slot`] changes: the request and the buffers it points at.
struct SlotData {
    req: Request,
    /// The scatterlists of the request; grown as needed, kept for the next one.
    src: KVec<bindings::scatterlist>,
    dst: KVec<bindings::scatterlist>,
    /// A reference on every folio of `src` and `dst` while the request is in flight: the
    /// engine may write an output page after our caller unlocks a neighbour.
    folios: KVec<FolioRef>,
    /// Whether a request was started and not yet waited for.
    busy: bool,
}

/// A request with its buffers, reused for one decompression after another.
///
/// # Invariants
///
/// While `data.busy`, the engine may use the request, the scatterlists and the pages of
/// `data.folios`, and call [`slot_done`] with this slot; none of them is changed or freed
/// until `done` has completed and been waited for. `data` is only used by the slot's one user
/// at a time (see [`PoolSlot`]) or by its drop; the engine's callback touches only `status`
/// and `done`.
#[pin_data(PinnedDrop)]
struct Slot {
    #[pin]
    done: Completion,
    /// The result of the request in flight, written before `done` completes.
    status: Atomic<i32>,
    data: UnsafeCell<SlotData>,
}

// SAFETY: `data` is used by one thread at a time (type invariant); `status` is atomic and
// `done` is a completion, both shared with the engine's callback on purpose.
unsafe impl Sync for Slot {}
// SAFETY: everything in a slot may be used and dropped from any thread.
unsafe impl Send for Slot {}

/// Fills `sg` with `len` bytes of the folios of `folios` (of any order), from byte `off` of
/// the first, and keeps a reference on each in `refs`.
///
/// # Safety
///
/// The folios are live for the duration of the call; `sg` is not in use by the engine.
unsafe fn fill_sg(
    sg: &mut KVec<bindings::scatterlist>,
    refs: &mut KVec<FolioRef>,
    folios: impl ExactSizeIterator<Item = *mut bindings::folio>,
    off: usize,
    len: usize,
) -> Result<c_uint> {
    let n = folios.len();
    let nents = c_uint::try_from(n).map_err(|_| EINVAL)?;
    if n == 0 {
        return Err(EINVAL);
    }
    // The C glue grew these with GFP_NOIO, which 7.3's `kernel::alloc::Flags` lacks; they grow
    // only when a pcluster spans more folios than any before it in this slot.
    sg.clear();
    sg.resize(n, bindings::scatterlist::default(), GFP_KERNEL)?;
    // SAFETY: `sg` holds `n` entries, which this initialises and ends at the last one.
    unsafe { bindings::sg_init_table(sg.as_mut_ptr(), nents) };
    let mut left = len;
    let mut ents = 0;
    for (i, (folio, ent)) in folios.zip(sg.iter_mut()).enumerate() {
        if left == 0 {
            break;
        }
        let o = if i == 0 { off } else { 0 };
        // SAFETY: a live folio, by this function's contract.
        let size = unsafe { ffi::erofs_rs_glue_folio_size(folio) };
        // OVERFLOW: `o < size` once the check passes.
        let l = size
            .checked_sub(o)
            .filter(|&n| n > 0)
            .ok_or(EINVAL)?
            .min(left);
        // SAFETY: a live folio, by this function's contract.
        let f = unsafe { FolioRef::get(folio) }.ok_or(EINVAL)?;
        // SAFETY: `ent` is an initialised entry; `o + l <= size` lies in the folio, and `refs`
        // keeps the folio referenced while the entry is used.
        unsafe { ffi::erofs_rs_glue_sg_set_folio(ent, f.ptr.as_ptr(), l, o) };
        refs.push(f, GFP_KERNEL)?;
        // OVERFLOW: `l <= left`.
        left -= l;
        // OVERFLOW: `i < n`.
        ents = i + 1;
    }
    // Exactly the folios given, each used: `sg_init_table` ended the list at the last one.
    if left != 0 || ents != n {
        return Err(EINVAL);
    }
    Ok(nents)
}

impl Slot {
    /// A slot with a request of `tfm`.
    fn new(tfm: &Arc<Transform>) -> impl PinInit<Self, Error> + '_ {
        try_pin_init!(Slot {
            done <- Completion::new(),
            status: Atomic::new(0),
            // INVARIANT: not busy.
            data: UnsafeCell::new(SlotData {
                req: Request::new(tfm.clone())?,
                src: KVec::new(),
                dst: KVec::new(),
                folios: KVec::new(),
                busy: false,
            }),
        })
    }

    /// Starts decompressing `inlen` bytes of the folios `src` (from byte `in_off` of the
    /// first) into `outlen` bytes of the folios `dst` (from byte `out_off`). A request still
    /// in flight is waited for first.
    ///
    /// # Safety
    ///
    /// The caller is the slot's only user for the duration of the call, and the folios are
    /// live (referenced or locked by the caller) during it. Until the request is waited for
    /// ([`Slot::finish`]), nothing but the engine writes the input bytes or reads or writes
    /// the output bytes.
    unsafe fn start(
        &self,
        src: impl ExactSizeIterator<Item = *mut bindings::folio>,
        in_off: usize,
        inlen: u32,
        dst: impl ExactSizeIterator<Item = *mut bindings::folio>,
        out_off: usize,
        outlen: u32,
    ) -> Result {
        // SAFETY: we are the slot's only user, by this function's contract.
        unsafe { self.finish() };
        // SAFETY: as above; nothing is in flight now, so the engine does not use `data`.
        let data = unsafe { &mut *self.data.get() };
        // CAST: lossless (`u32` into `usize`).
        let (ilen, olen) = (inlen as usize, outlen as usize);
        // SAFETY: the folios are live (contract); nothing is in flight.
        let filled = unsafe {
            fill_sg(&mut data.src, &mut data.folios, src, in_off, ilen)
                .and_then(|_| fill_sg(&mut data.dst, &mut data.folios, dst, out_off, olen))
        };
        if let Err(e) = filled {
            data.folios.clear();
            return Err(e);
        }
        // SAFETY: `done` is pinned in this slot, and nobody waits on or completes it: its last
        // request, if any, was waited for by `finish` above, after its callback had released
        // the completion's lock. A completion needs no drop, so initialising it again is
        // `reinit_completion`.
        unsafe { raw_init(ptr::from_ref(&self.done).cast_mut(), Completion::new()) };
        // ORDERING: the engine's callback and the waiter order through `done`.
        self.status.store(EINPROGRESS.to_errno(), Relaxed);
        // INVARIANT: from here the engine may use the request and the buffers, until `finish`
        // waits for it.
        data.busy = true;
        let req = data.req.ptr.as_ptr();
        // SAFETY: `req` is our live request, not in flight; the scatterlists hold `inlen` and
        // `outlen` bytes and stay untouched until `finish`.
        unsafe {
            ffi::erofs_rs_glue_acomp_request_set_params(
                req,
                data.src.as_mut_ptr(),
                data.dst.as_mut_ptr(),
                inlen,
                outlen,
            )
        };
        // SAFETY: as above; `slot_done` gets this slot, which outlives the request in flight
        // (type invariant: it is not freed while busy).
        unsafe {
            ffi::erofs_rs_glue_acomp_request_set_callback(
                req,
                sys::CRYPTO_TFM_REQ_MAY_BACKLOG,
                Some(slot_done),
                ptr::from_ref(self).cast_mut().cast(),
            )
        };
        // SAFETY: a request fully set up, of the live transform it holds.
        let ret = unsafe { sys::crypto_acomp_decompress(req) };
        if ret != EINPROGRESS.to_errno() && ret != EBUSY.to_errno() {
            // Completed (or failed) synchronously: the callback is not called.
            // ORDERING: as above.
            self.status.store(ret, Relaxed);
            self.done.complete_all();
        }
        Ok(())
    }

    /// Waits for the request in flight, drops its folio references, and returns its status
    /// and output length; `None` if nothing is in flight.
    ///
    /// # Safety
    ///
    /// The caller is the slot's only user for the duration of the call.
    unsafe fn finish(&self) -> Option<(c_int, u32)> {
        // SAFETY: we are the slot's only user (contract); the engine's callback does not
        // touch `data`.
        let data = unsafe { &mut *self.data.get() };
        if !data.busy {
            return None;
        }
        self.done.wait_for_completion();
        // INVARIANT: the request completed: the engine is done with the buffers.
        data.busy = false;
        data.folios.clear();
        // ORDERING: `done` ordered the callback's store before this.
        let status = self.status.load(Relaxed);
        // SAFETY: our request, no longer in flight.
        let dlen = unsafe { (*data.req.ptr.as_ptr()).dlen };
        Some((status, dlen))
    }
}

#[pinned_drop]
impl PinnedDrop for Slot {
    fn drop(self: Pin<&mut Self>) {
        // SAFETY: `&mut` makes us the slot's only user. A request still in flight (its user
        // was forgotten) is waited for before the buffers are freed.
        unsafe { self.finish() };
    }
}

/// The completion callback of a slot's request (`crypto_completion_t`).
///
/// # Safety
///
/// `data` is the [`Slot`] whose request completes, as `Slot::start` set it.
unsafe extern "C" fn slot_done(data: *mut c_void, err: c_int) {
    if err == EINPROGRESS.to_errno() {
        // Left the backlog: the real completion follows.
        return;
    }
    // SAFETY: the slot is busy until `done` completes below, so it is not freed before (type
    // invariant); the callback only touches the fields shared with the engine.
    let slot = unsafe { &*data.cast::<Slot>() };
    // ORDERING: published by `complete_all`.
    slot.status.store(err, Relaxed);
    slot.done.complete_all();
}

/// A transform with a fixed set of request slots, handed out one user at a time.
///
/// # Invariants
///
/// Bit `i` of `free` is clear exactly while a [`PoolSlot`] of `slots[i]` exists (or was
/// forgotten); every slot's request is of `tfm`.
#[pin_data]
pub(crate) struct Pool {
    #[pin]
    free: SpinLock<u32>,
    #[pin]
    slots: [Slot; ACCEL_SLOTS],
    /// Dropped after the slots, whose drop waits for their requests.
    tfm: Arc<Transform>,
}

impl Pool {
    /// A pool of [`ACCEL_SLOTS`] requests of `tfm`.
    pub(crate) fn new(tfm: Arc<Transform>) -> impl PinInit<Self, Error> {
        try_pin_init!(Pool {
            // INVARIANT: no slot is handed out yet.
            free <- new_spinlock!(ALL_FREE, "erofs_rs::acomp::Pool::free"),
            slots <- pin_init_array_from_fn(|_| Slot::new(&tfm)),
            tfm,
        })
    }

    /// The pool's transform.
    pub(crate) fn transform(&self) -> &Transform {
        &self.tfm
    }

    /// Takes a free slot, or `None` if all are in use.
    pub(crate) fn get(&self) -> Option<PoolSlot<'_>> {
        let mut free = self.free.lock();
        let i = free.trailing_zeros();
        let slot = self.slots.get(usize::try_from(i).ok()?)?;
        *free &= !(1 << i);
        // INVARIANT: bit `i` was set, and is cleared for this value only.
        Some(PoolSlot {
            pool: self,
            slot,
            bit: 1 << i,
        })
    }
}

/// A slot taken from a [`Pool`]: its user, until dropped, which waits for the slot's request
/// and returns it to the pool.
///
/// # Invariants
///
/// `slot` is the slot of `pool` whose bit in `pool.free` is `bit`, clear for this value only.
pub(crate) struct PoolSlot<'a> {
    pool: &'a Pool,
    slot: &'a Slot,
    bit: u32,
}

impl PoolSlot<'_> {
    /// Starts decompressing `inlen` bytes of the folios `src` (from byte `in_off` of the first)
    /// into `outlen` bytes of the folios `dst` (from byte `out_off` of the first). The
    /// slot references the folios until the request is waited for. A request still in flight
    /// is waited for first.
    ///
    /// # Errors
    ///
    /// `EINVAL` if the bytes do not exactly use the folios given, `ENOMEM` if the scatterlists
    /// cannot grow; nothing is started then.
    ///
    /// # Safety
    ///
    /// The folios are live (referenced or locked by the caller) during the call. Until the
    /// request is waited for ([`PoolSlot::wait`], the slot's drop, or the pool's drop after a
    /// `mem::forget` of the slot), nothing but the engine writes the input bytes or reads or
    /// writes the output bytes.
    pub(crate) unsafe fn decompress(
        &mut self,
        src: impl ExactSizeIterator<Item = *mut bindings::folio>,
        in_off: usize,
        inlen: u32,
        dst: impl ExactSizeIterator<Item = *mut bindings::folio>,
        out_off: usize,
        outlen: u32,
    ) -> Result {
        // SAFETY: we are the slot's only user (type invariant); the folios are live, and left
        // to the engine until the request is waited for, by this function's contract.
        unsafe { self.slot.start(src, in_off, inlen, dst, out_off, outlen) }
    }

    /// Waits for the request started: its output length, or its error; `None` if none was.
    pub(crate) fn wait(&mut self) -> Option<Result<u32>> {
        // SAFETY: we are the slot's only user (type invariant).
        let (status, dlen) = unsafe { self.slot.finish() }?;
        Some(if status == 0 {
            Ok(dlen)
        } else {
            Err(Error::from_errno(status))
        })
    }
}

impl Drop for PoolSlot<'_> {
    fn drop(&mut self) {
        // SAFETY: we are the slot's only user (type invariant).
        unsafe { self.slot.finish() };
        // INVARIANT: the slot goes back to the pool with this value.
        *self.pool.free.lock() |= self.bit;
    }
}

/// A mount's engine: the pool and the counters its debugfs file shows.
#[pin_data]
struct Engine {
    #[pin]
    pool: Pool,
    offloaded: Atomic<i64>,
    fallback: Atomic<i64>,
    errors: Atomic<i64>,
    bytes_in: Atomic<i64>,
    bytes_out: Atomic<i64>,
}

/// A mount's crypto-API (acomp) engine for DEFLATE pclusters (`decomp_accel=`), closed on
/// drop: one transform with [`ACCEL_SLOTS`] request slots; a reader submits several pclusters
/// and waits for them in file order. The driver decides which pclusters go, and decodes in
/// software whatever the engine refuses or fails. Its counters are in the mount's debugfs
/// directory (`accel`), whose file holds a reference on the engine while it exists.
pub(crate) struct Accel {
    // Declared first: the file goes before our reference on the engine.
    dbg: Option<Pin<KBox<File<Arc<Engine>>>>>,
    engine: Arc<Engine>,
}

impl Accel {
    /// Opens acomp driver `name` (NUL-terminated) for a mount whose DEFLATE streams use
    /// `windowbits`, or `None` if it is missing or cannot serve such windows (said in the log)
    /// or memory is short: the mount then decodes in software.
    pub(super) fn new(name: &[u8], windowbits: u8) -> Option<Self> {
        if name.last() != Some(&0) {
            return None;
        }
        let name = CStr::from_bytes_until_nul(name).ok()?;
        let tfm = match Transform::new(name) {
            Ok(tfm) => tfm,
            Err(e) => {
                pr_warn!(
                    "acomp driver {} unavailable ({}): DEFLATE decodes in software\n",
                    name,
                    e.to_errno()
                );
                return None;
            }
        };
        // The kernel's software driver inflates with 2 KiB windows (crypto/deflate.c,
        // DEFLATE_DEF_WINBITS 11): a stream with longer back-references is not for it (on 7.3,
        // feeding it one faults in zlib_inflate).
        if tfm.driver_name() == c"deflate-generic" && windowbits > 11 {
            pr_warn!(
                "{} inflates with 2 KiB windows, this image's DEFLATE uses {} KiB: DEFLATE decodes in software\n",
                tfm.driver_name(),
                1u32.checked_shl(u32::from(windowbits)).unwrap_or(0) >> 10
            );
            return None;
        }
        let tfm = Arc::new(tfm, GFP_KERNEL).ok()?;
        let engine = Arc::pin_init(
            try_pin_init!(Engine {
                pool <- Pool::new(tfm),
                offloaded: Atomic::new(0),
                fallback: Atomic::new(0),
                errors: Atomic::new(0),
                bytes_in: Atomic::new(0),
                bytes_out: Atomic::new(0),
            }),
            GFP_KERNEL,
        )
        .ok()?;
        Some(Accel { dbg: None, engine })
    }

    /// Creates the engine's debugfs file `accel` in `dir`, the mount's directory (once; a
    /// missing debugfs, or memory too short for the file, leaves the engine without one).
    pub(super) fn show_in(&mut self, dir: &Dir) {
        if self.dbg.is_none() {
            self.dbg = KBox::pin_init(
                dir.read_callback_file(c"accel", self.engine.clone(), &show_engine),
                GFP_KERNEL,
            )
            .ok();
        }
    }

    /// Room for an acomp driver's name and its NUL (`CRYPTO_MAX_ALG_NAME`).
    pub(crate) const NAME_LEN: usize = NAME_LEN;

    /// The name of the global accelerator (`/sys/fs/erofs_rs/accel`), NUL-terminated, if set.
    pub(crate) fn global_default() -> Option<[u8; NAME_LEN]> {
        let name = accel_default()?;
        (name[0] != 0).then_some(*name)
    }

    /// Sets the name of the global accelerator to `name` (without a NUL), empty for none:
    /// `EINVAL` if it is [`Accel::NAME_LEN`] bytes or longer, `EBUSY` before [`init`].
    pub(crate) fn set_global_default(name: &[u8]) -> Result {
        if name.len() >= NAME_LEN {
            return Err(EINVAL);
        }
        let mut dst = accel_default().ok_or(EBUSY)?;
        if let Some(d) = dst.get_mut(..name.len()) {
            d.copy_from_slice(name);
        }
        // INVARIANT: `name.len() < NAME_LEN`: the name keeps a NUL within the array.
        if let Some(nul) = dst.get_mut(name.len()) {
            *nul = 0;
        }
        Ok(())
    }

    /// Starts decoding `inlen` bytes of the folios `src` (from byte `in_off` of the first) into
    /// `outlen` bytes of the folios `dst` (from byte `out_off` of the first), of any order, in
    /// a row. `None` if
    /// no request slot is free or the engine cannot take it: decode in software then.
    ///
    /// # Safety
    ///
    /// The folios are live (referenced or locked by the caller) during the call, and nothing
    /// but the engine writes the input bytes or reads or writes the output bytes until the
    /// returned request is waited for or dropped, nor ever if it is forgotten (its caller
    /// hands the output folios to it: [`AccelReq::owning`]).
    pub(super) unsafe fn submit_folios(
        &self,
        src: impl ExactSizeIterator<Item = *mut bindings::folio>,
        in_off: usize,
        inlen: usize,
        dst: impl ExactSizeIterator<Item = *mut bindings::folio>,
        out_off: usize,
        outlen: usize,
    ) -> Option<AccelReq<'_>> {
        let (inlen, outlen) = (u32::try_from(inlen).ok()?, u32::try_from(outlen).ok()?);
        let e = &*self.engine;
        let mut slot = e.pool.get()?;
        // SAFETY: the folios are live, and left to the engine until the request is waited for
        // (the returned `AccelReq` waits on drop, the pool if it is forgotten), by this
        // function's contract.
        unsafe { slot.decompress(src, in_off, inlen, dst, out_off, outlen) }.ok()?;
        e.offloaded.add(1, Relaxed);
        e.bytes_in.add(i64::from(inlen), Relaxed);
        super::trace::accel(
            super::trace::AccelOp::Submit,
            inlen.into(),
            outlen.into(),
            0,
        );
        Some(AccelReq {
            req: Some((e, slot)),
            outlen,
            out: KVec::new(),
        })
    }

    /// Counts a pcluster meant for the engine that was decoded in software.
    pub(crate) fn note_fallback(&self) {
        super::trace::accel(super::trace::AccelOp::Fallback, 0, 0, 0);
        self.engine.fallback.add(1, Relaxed);
    }
}

/// An offload request in flight, and the output folios it owns until [`AccelReq::wait`] gives
/// them back: while the engine may write them, nothing else can reach them. Dropping it waits
/// for the engine, then drops the folios (they end not uptodate). Its slot references the
/// folios until the engine is done, so the engine never writes freed memory; forgetting the
/// request leaves the slot to the engine's drop, which waits for it too, and the folios
/// locked for good (a leak, not a hazard: nothing reads them).
pub(crate) struct AccelReq<'a> {
    req: Option<(&'a Engine, PoolSlot<'a>)>,
    outlen: u32,
    /// The output folios, dropped after the engine is done with them ([`Drop`] waits first).
    out: KVec<OutFolio>,
}

impl AccelReq<'_> {
    /// The request, owning its output folios `out`.
    pub(super) fn owning(mut self, out: KVec<OutFolio>) -> Self {
        self.out = out;
        self
    }

    /// Waits for the request: `Ok` if the engine produced exactly the output asked for; and
    /// the output folios, in the order given, whatever the outcome.
    pub(crate) fn wait(mut self) -> (Result, KVec<OutFolio>) {
        let ret = self.finish();
        (ret, core::mem::take(&mut self.out))
    }

    /// Waits for the request, counts its outcome and frees its slot; `EINVAL` if there is no
    /// request (any more).
    fn finish(&mut self) -> Result {
        let (e, mut slot) = self.req.take().ok_or(EINVAL)?;
        let done = slot.wait();
        let (dlen, err) = match done {
            Some(Ok(dlen)) => (dlen, 0),
            Some(Err(err)) => (0, err.to_errno()),
            None => (0, EIO.to_errno()),
        };
        super::trace::accel(super::trace::AccelOp::Complete, 0, dlen.into(), err);
        let ret = match done {
            Some(Ok(dlen)) if dlen == self.outlen => Ok(()),
            Some(Ok(_)) | None => Err(EIO),
            Some(Err(err)) => Err(err),
        };
        if ret.is_err() {
            e.errors.add(1, Relaxed);
        } else {
            e.bytes_out.add(i64::from(self.outlen), Relaxed);
        }
        ret
    }
}

impl Drop for AccelReq<'_> {
    fn drop(&mut self) {
        let _ = self.finish();
    }
}

/// The text of the debugfs file `accel`.
fn show_engine(e: &Arc<Engine>, f: &mut fmt::Formatter<'_>) -> fmt::Result {
    write!(
        f,
        "driver {}\noffloaded {}\nfallback {}\nerrors {}\nbytes_in {}\nbytes_out {}\n",
        e.pool.transform().driver_name().to_str().unwrap_or("?"),
        e.offloaded.load(Relaxed),
        e.fallback.load(Relaxed),
        e.errors.load(Relaxed),
        e.bytes_in.load(Relaxed),
        e.bytes_out.load(Relaxed)
    )
}

global_lock! {
    // SAFETY: `init` initialises it, once, before `accel_default` lets anyone use it.
    unsafe(uninit) static ACCEL_DEFAULT: Mutex<[u8; NAME_LEN]> = [0; NAME_LEN];
}

/// Where [`ACCEL_DEFAULT`] is in its initialisation: 0 not started, 1 under way, 2 done.
static ACCEL_DEFAULT_STATE: Atomic<i32> = Atomic::new(0);

/// Initialises the global accelerator name; later calls do nothing. Call it before
/// `/sys/fs/erofs_rs/accel` exists: until then the name reads as empty and cannot be set.
pub(crate) fn init() {
    // ORDERING: only one caller wins; the others, and users, wait for the release below.
    if ACCEL_DEFAULT_STATE.cmpxchg(0, 1, Relaxed).is_ok() {
        // SAFETY: the only call: the exchange above succeeds once.
        unsafe { ACCEL_DEFAULT.init() };
        // ORDERING: publishes the initialised lock to `accel_default`.
        ACCEL_DEFAULT_STATE.store(2, Release);
    }
}

/// The global accelerator name (NUL-terminated within the array), locked; `None` before
/// [`init`].
fn accel_default() -> Option<GlobalGuard<ACCEL_DEFAULT>> {
    // ORDERING: pairs with the release in `init`.
    (ACCEL_DEFAULT_STATE.load(Acquire) == 2).then(|| ACCEL_DEFAULT.lock())
}
