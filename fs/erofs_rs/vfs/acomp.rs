// SPDX-License-Identifier: GPL-2.0-only
//! Asynchronous decompression through the crypto API (acomp): a [`Transform`] of an algorithm
//! or driver, a bounded set of its [`Requests`], and [`Requests::submit`], whose
//! [`Decompression`] owns its output folios until [`Decompression::wait`] gives them back.
//! C header: include/crypto/acompress.h. What is offloaded, and when, is the driver's
//! (decompressor_crypto.rs, as fs/erofs/decompressor_crypto.c).
//!
//! Lifetimes: a [`Transform`] is owned and freed on drop; every [`Request`] holds an [`Arc`] of
//! its transform, so no request outlives it. A [`RequestSlot`] owns one request and everything
//! the engine may touch while it is in flight: the two scatterlists and a reference on each
//! folio they point at. Nothing of a slot is changed, reused or freed before its request
//! completes: finishing waits for it, and dropping a slot finishes it. So a [`Requests`] may
//! be dropped with requests in flight, e.g. after a `mem::forget` of a [`Decompression`]: it
//! waits for them first.
//!
//! Locks: [`Requests`]'s `free` spinlock guards only its bitmap of free slots. It is not held
//! while waiting for the engine.

use super::{
    ffi,
    pagecache::{
        CFolio,
        OutFolio, //
    },
    sys, //
};
use core::{
    cell::UnsafeCell,
    ptr::{
        self,
        NonNull, //
    },
};
use kernel::{
    bindings,
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
            Atomic,
            Relaxed, //
        },
        Arc,
        Completion,
        SpinLock, //
    },
};
use pin_init::{
    pin_init_array_from_fn,
    raw_init, //
};

/// Request slots of a [`Requests`]: as many decompressions of it may be in flight at once.
const REQUESTS: usize = 16;

/// The bitmap of a [`Requests`] whose slots are all free.
const ALL_FREE: u32 = (1 << REQUESTS) - 1;

/// Bytes of an acomp algorithm or driver name, with its NUL (`CRYPTO_MAX_ALG_NAME`).
// CAST: a small constant.
pub(crate) const NAME_LEN: usize = sys::CRYPTO_MAX_ALG_NAME as usize;
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
/// dropped when no operation of it is in flight (its [`RequestSlot`] finishes first).
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

/// What the user of a [`RequestSlot`] changes: the request and the buffers it points at.
struct RequestSlotData {
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
/// at a time (see [`HeldRequest`]) or by its drop; the engine's callback touches only `status`
/// and `done`.
#[pin_data(PinnedDrop)]
struct RequestSlot {
    #[pin]
    done: Completion,
    /// The result of the request in flight, written before `done` completes.
    status: Atomic<i32>,
    data: UnsafeCell<RequestSlotData>,
}

// SAFETY: `data` is used by one thread at a time (type invariant); `status` is atomic and
// `done` is a completion, both shared with the engine's callback on purpose.
unsafe impl Sync for RequestSlot {}
// SAFETY: everything in a slot may be used and dropped from any thread.
unsafe impl Send for RequestSlot {}

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

impl RequestSlot {
    /// A slot with a request of `tfm`.
    fn new(tfm: &Arc<Transform>) -> impl PinInit<Self, Error> + '_ {
        try_pin_init!(RequestSlot {
            done <- Completion::new(),
            status: Atomic::new(0),
            // INVARIANT: not busy.
            data: UnsafeCell::new(RequestSlotData {
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
impl PinnedDrop for RequestSlot {
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
/// `data` is the [`RequestSlot`] whose request completes, as `RequestSlot::start` set it.
unsafe extern "C" fn slot_done(data: *mut c_void, err: c_int) {
    if err == EINPROGRESS.to_errno() {
        // Left the backlog: the real completion follows.
        return;
    }
    // SAFETY: the slot is busy until `done` completes below, so it is not freed before (type
    // invariant); the callback only touches the fields shared with the engine.
    let slot = unsafe { &*data.cast::<RequestSlot>() };
    // ORDERING: published by `complete_all`.
    slot.status.store(err, Relaxed);
    slot.done.complete_all();
}

/// A transform with a fixed set of request slots, handed out one user at a time.
/// Decompressions go through [`Requests::submit`].
///
/// # Invariants
///
/// Bit `i` of `free` is clear exactly while a [`HeldRequest`] of `slots[i]` exists (or was
/// forgotten); every slot's request is of `tfm`.
#[pin_data]
pub(crate) struct Requests {
    #[pin]
    free: SpinLock<u32>,
    #[pin]
    slots: [RequestSlot; REQUESTS],
    /// Dropped after the slots, whose drop waits for their requests.
    tfm: Arc<Transform>,
}

impl Requests {
    /// A set of [`REQUESTS`] requests of `tfm`.
    pub(crate) fn new(tfm: Arc<Transform>) -> impl PinInit<Self, Error> {
        try_pin_init!(Requests {
            // INVARIANT: no slot is handed out yet.
            free <- new_spinlock!(ALL_FREE, "erofs_rs::acomp::Requests::free"),
            slots <- pin_init_array_from_fn(|_| RequestSlot::new(&tfm)),
            tfm,
        })
    }

    /// The transform of the requests.
    pub(crate) fn transform(&self) -> &Transform {
        &self.tfm
    }

    /// Starts decoding `inlen` bytes of `input` (from byte `in_off` of the first folio) into
    /// `outlen` bytes of `out` (from byte `out_off` of the first), folios in a row of any
    /// order. The request owns `out` until [`Decompression::wait`] gives the folios back, so
    /// nothing else reads or writes them while the engine may. Each folio must be one no
    /// output map holds (or was forgotten holding), and write every byte the engine puts in
    /// it (a part may, for its own bytes). `Err` gives `out` back if a folio is not such
    /// (`EBUSY`, `EINVAL`), no request slot is free, or the engine cannot take it.
    pub(crate) fn submit(
        &self,
        input: &[CFolio],
        in_off: usize,
        inlen: u32,
        out: KVec<OutFolio>,
        out_off: usize,
        outlen: u32,
    ) -> Result<Decompression<'_>, KVec<OutFolio>> {
        // CAST: lossless (`u32` into `usize`).
        if outputs_ok(&out, out_off, outlen as usize).is_err() {
            return Err(out);
        }
        let Some(mut req) = self.get() else {
            return Err(out);
        };
        // SAFETY: live folios during the call: `input` referenced by its `CFolio`s, `out`
        // locked by its `OutFolio`s, which the request owns from here until it is waited for
        // (the request references them itself while in flight).
        let started = unsafe {
            req.decompress(
                input.iter().map(|f| f.as_ptr()),
                in_off,
                inlen,
                out.iter().map(|f| f.as_raw()),
                out_off,
                outlen,
            )
        };
        match started {
            Ok(()) => Ok(Decompression { req, out }),
            Err(_) => Err(out),
        }
    }

    /// Takes a free slot, or `None` if all are in use.
    pub(super) fn get(&self) -> Option<HeldRequest<'_>> {
        let mut free = self.free.lock();
        let i = free.trailing_zeros();
        let slot = self.slots.get(usize::try_from(i).ok()?)?;
        *free &= !(1 << i);
        // INVARIANT: bit `i` was set, and is cleared for this value only.
        Some(HeldRequest {
            requests: self,
            slot,
            bit: 1 << i,
        })
    }
}

/// A slot taken from a [`Requests`]: its user, until dropped, which waits for the slot's
/// request and returns it to the set.
///
/// # Invariants
///
/// `slot` is the slot of `requests` whose bit in `requests.free` is `bit`, clear for this
/// value only.
pub(super) struct HeldRequest<'a> {
    requests: &'a Requests,
    slot: &'a RequestSlot,
    bit: u32,
}

impl HeldRequest<'_> {
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
    /// request is waited for ([`HeldRequest::wait`], its drop, or the drop of its [`Requests`]
    /// after a `mem::forget` of it), nothing but the engine writes the input bytes or reads or
    /// writes the output bytes.
    pub(super) unsafe fn decompress(
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
    pub(super) fn wait(&mut self) -> Option<Result<u32>> {
        // SAFETY: we are the slot's only user (type invariant).
        let (status, dlen) = unsafe { self.slot.finish() }?;
        Some(if status == 0 {
            Ok(dlen)
        } else {
            Err(Error::from_errno(status))
        })
    }
}

impl Drop for HeldRequest<'_> {
    fn drop(&mut self) {
        // SAFETY: we are the slot's only user (type invariant).
        unsafe { self.slot.finish() };
        // INVARIANT: the slot goes back to the set with this value.
        *self.requests.free.lock() |= self.bit;
    }
}

/// A decompression in flight, and the output folios it owns until [`Decompression::wait`]
/// gives them back: while the engine may write them, nothing else can reach them. Dropping it
/// waits for the engine, then drops the folios (they end not uptodate). Its slot references
/// the folios until the engine is done, so the engine never writes freed memory; forgetting it
/// leaves the slot to the drop of its [`Requests`], which waits for it too, and the folios
/// locked for good (a leak, not a hazard: nothing reads them).
pub(crate) struct Decompression<'a> {
    /// Declared first: dropped (which waits for the engine) before `out`.
    req: HeldRequest<'a>,
    /// The output folios, dropped after the engine is done with them.
    out: KVec<OutFolio>,
}

impl Decompression<'_> {
    /// Waits for the engine: the bytes it produced, or its error; and the output folios, in
    /// the order given, whatever the outcome.
    pub(crate) fn wait(self) -> (Result<u32>, KVec<OutFolio>) {
        let Decompression { mut req, out } = self;
        // `None` cannot be: a `Decompression` is made only once its request started.
        let ret = req.wait().unwrap_or(Err(EIO));
        // The slot goes back before the folios do.
        drop(req);
        (ret, out)
    }
}

/// Whether the engine may write `outlen` bytes into `out` from byte `out_off` of the first
/// folio, on through the next ones from their first byte: each folio is unmapped, gets some of
/// the bytes, and writes all of those it gets ([`OutFolio::owns`]); `EBUSY` for a mapped one,
/// `EINVAL` else.
fn outputs_ok(out: &[OutFolio], out_off: usize, outlen: usize) -> Result {
    let mut left = outlen;
    let mut off = out_off;
    for f in out {
        if f.mapped.get() {
            return Err(EBUSY);
        }
        let n = f.size().checked_sub(off).ok_or(EINVAL)?.min(left);
        if n == 0 {
            return Err(EINVAL);
        }
        f.owns(off, n)?;
        // OVERFLOW: `n <= left`.
        left -= n;
        off = 0;
    }
    if left != 0 {
        return Err(EINVAL);
    }
    Ok(())
}
