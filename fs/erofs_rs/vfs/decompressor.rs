// SPDX-License-Identifier: GPL-2.0-only
//! The kernel's decompressors: LZ4, and the pools of MicroLZMA, DEFLATE and Zstandard decoder
//! contexts. C counterpart: fs/erofs/decompressor.c, decompressor_lzma.c,
//! decompressor_deflate.c and decompressor_zstd.c.
//!
//! Stream decoders need a context of up to megabytes (sized by the dictionary or window), so,
//! as in the C driver, each algorithm has a bounded pool of them (`lzma_streams`,
//! `deflate_streams`, `zstd_streams`; by default one per possible CPU), sized for the largest
//! dictionary any mounted image declared, and a decode waits for a free one.
//!
//! Locking: [`Pool::resize`] (a mutex) serialises growing a pool and is held while waiting for
//! every context to come back; [`Pool::streams`] (a spinlock) guards the idle contexts and is
//! taken inside `resize`, never the other way round. Nothing is freed under the spinlock. The
//! pools of the module are one [`Arc<Pools>`] published in [`ZPOOLS`] by the module-owned
//! [`ZPools`]; a decode holds a reference for its duration, so the contexts are freed when the
//! module drops its [`ZPools`] at exit and no decode is left (none can be: every mount is gone).

use super::{
    cpu::num_possible_cpus,
    global::{
        GlobalArc,
        Published, //
    },
    param::{
        module_param_uint,
        UintParam, //
    },
    sys, //
};
use crate::erofs_core::{
    self as core_,
    stream::{
        self,
        Step,
        UNEXPECTED_END, //
    }, //
};
use crate::super_::to_kernel;
use core::{
    cmp::max,
    ptr::NonNull, //
};
use kernel::{
    alloc::kvec::PushError,
    new_condvar,
    new_mutex,
    new_spinlock,
    page::PAGE_SIZE,
    prelude::*,
    sync::{
        Arc,
        CondVar,
        Mutex,
        SpinLock, //
    }, //
};

module_param_uint!(
    /// MicroLZMA decoder contexts; 0 (the default) means one per possible CPU, and then shows
    /// the number in use once the first image needing them is mounted.
    lzma_streams,
    0o444,
    "MicroLZMA decoder contexts (default: possible CPUs)"
);
module_param_uint!(
    /// DEFLATE decoder contexts, as `lzma_streams`.
    deflate_streams,
    0o444,
    "DEFLATE decoder contexts (default: possible CPUs)"
);
module_param_uint!(
    /// Zstandard decoder contexts, as `lzma_streams`.
    zstd_streams,
    0o444,
    "Zstandard decoder contexts (default: possible CPUs)"
);

/// Decodes LZ4 `src` into all of `dst` with the kernel's decoder; `partial` lets the stream go
/// on past `dst` (`LZ4_decompress_safe_partial`). Returns the bytes produced (`dst.len()` on
/// success) or a negative value for a corrupt stream.
pub(crate) fn lz4_decompress(src: &[u8], dst: &mut [u8], partial: bool) -> i32 {
    let (Ok(srclen), Ok(dstlen)) = (i32::try_from(src.len()), i32::try_from(dst.len())) else {
        return -1;
    };
    let (src, dst) = (src.as_ptr().cast(), dst.as_mut_ptr().cast());
    if partial {
        // SAFETY: the decoder reads at most `srclen` bytes of `src` and writes at most
        // `dstlen` bytes to `dst`, both valid for those lengths.
        unsafe { sys::LZ4_decompress_safe_partial(src, dst, srclen, dstlen, dstlen) }
    } else {
        // SAFETY: as above.
        unsafe { sys::LZ4_decompress_safe(src, dst, srclen, dstlen) }
    }
}

/// Decodes LZ4 in place (`z_erofs_lz4_decompress` with in-place I/O and enough margin): the
/// stream is `buf[src]` and its decoded bytes fill `buf[dst]`, which may overlap it (the
/// stream sits at the end of the pages it decodes to). Never partial. Returns as
/// [`lz4_decompress`], and -1 without decoding when a range is not in `buf`, or when `src`
/// does not end at least `LZ4_DECOMPRESS_INPLACE_MARGIN` (`(srclen >> 8) + 32`) bytes after
/// `dst` nor start at or after `dst`'s start, the layout that lib/lz4 decodes in place.
pub(crate) fn lz4_decompress_in_place(
    buf: &mut [u8],
    src: core::ops::Range<usize>,
    dst: core::ops::Range<usize>,
) -> i32 {
    let (Some(srclen), Some(dstlen)) = (
        src.end.checked_sub(src.start),
        dst.end.checked_sub(dst.start),
    ) else {
        return -1;
    };
    let (Ok(srclen), Ok(dstlen)) = (i32::try_from(srclen), i32::try_from(dstlen)) else {
        return -1;
    };
    // CAST: `srclen` is not negative.
    let margin = (srclen as usize >> 8) + 32;
    if src.end > buf.len()
        || dst.end > buf.len()
        || src.start < dst.start
        || dst.end.checked_add(margin).is_none_or(|e| e > src.end)
    {
        return -1;
    }
    let base = buf.as_mut_ptr();
    // SAFETY: both ranges lie in `buf` (checked above), which we borrow exclusively, so no
    // other reference to those bytes exists during the call. `LZ4_decompress_safe` reads at
    // most `srclen` bytes from `src` and writes at most `dstlen` bytes from `dst`, for any
    // stream; where the ranges overlap it may read bytes it has written (a stream that does not
    // keep to the margin decodes to wrong bytes or fails), and it copies the last literals with
    // `memmove` for in-place decoding (lib/lz4/lz4_decompress.c). C decodes the same way.
    unsafe {
        sys::LZ4_decompress_safe(
            base.add(src.start).cast(),
            base.add(dst.start).cast(),
            srclen,
            dstlen,
        )
    }
}

/// A stream algorithm with a pool of decoder contexts.
#[derive(Clone, Copy, PartialEq, Eq)]
enum Alg {
    /// MicroLZMA (`xz_dec_microlzma`).
    Lzma,
    /// Raw DEFLATE (zlib inflate).
    Deflate,
    /// Zstandard (`zstd_dstream`).
    Zstd,
}

/// The stream decoders by on-disk algorithm number (`Z_EROFS_COMPRESSION_*`): MicroLZMA,
/// DEFLATE, Zstandard.
fn zalg(algorithmformat: u8) -> Option<Alg> {
    match algorithmformat {
        1 => Some(Alg::Lzma),
        2 => Some(Alg::Deflate),
        3 => Some(Alg::Zstd),
        _ => None,
    }
}

/// Prepares the decoder pool of algorithm `algorithmformat` (LZMA, DEFLATE or ZSTD) for
/// dictionaries or windows of `dictsize` bytes (`z_erofs_load_*_config`).
pub(crate) fn stream_config(algorithmformat: u8, dictsize: u32) -> Result {
    let alg = zalg(algorithmformat).ok_or(EINVAL)?;
    pools().ok_or(EOPNOTSUPP)?.pool(alg).config(dictsize)
}

/// Decodes stream `src` of algorithm `algorithmformat` into all of `dst` with the kernel's
/// decoder (xz_dec_microlzma, zlib inflate, zstd); `partial` lets the stream go on past `dst`.
/// On failure, the errno and, for bad data, the decoder's reason.
pub(crate) fn stream_decompress(
    algorithmformat: u8,
    src: &[u8],
    dst: &mut [u8],
    partial: bool,
) -> core::result::Result<(), (Error, &'static str)> {
    let len = dst.len();
    // Never grows: nothing is read in place.
    let mut spill = KVVec::new();
    let io = Io {
        ext: &[src],
        buf: &mut [dst],
        lent: len..len,
        out: 0..len,
        spill: &mut spill,
    };
    stream_decompress_io(algorithmformat, io, partial).map(|_| ())
}

// For the callers of its old home.
pub(crate) use crate::erofs_core::stream::piece;

/// A stream decoder's buffers when part of its input was read in place: the format core's
/// [`stream::Io`], with its bytes copied aside in a `KVVec`.
pub(crate) type Io<'a, 'b> = stream::Io<'a, 'b, KVVec<u8>>;

/// The bytes a stream decoder copies aside grow with `GFP_KERNEL`, as C's bounce page
/// (`erofs_allocpage(pgpl, rq->gfp)`) under the same (sleeping) decode.
impl stream::Spill for KVVec<u8> {
    fn clear(&mut self) {
        KVVec::clear(self);
    }

    fn extend_from_slice(&mut self, bytes: &[u8]) -> core_::Result<()> {
        KVVec::extend_from_slice(self, bytes, GFP_KERNEL).map_err(|_| core_::Error::NoMemory)
    }

    fn as_bytes(&self) -> &[u8] {
        self.as_slice()
    }
}

/// Feeds the stream of `io` to `step` (one call of a decoder) for the kernel's pages
/// ([`stream::Io::drive`]); on failure, the errno and, for bad data, the decoder's reason.
fn drive(
    io: Io<'_, '_>,
    full_ends: bool,
    step: impl FnMut(&[u8], &mut [u8]) -> core::result::Result<Step, &'static str>,
) -> DecodeResult {
    io.drive::<PAGE_SIZE>(full_ends, step).map_err(|e| {
        let why = match e {
            core_::Error::Corrupted(c) => c.reason(),
            _ => DECODER_ERROR,
        };
        (to_kernel(e), why)
    })
}

/// Decodes as [`Io`] says with algorithm `algorithmformat`'s decoder; `partial` lets the stream
/// go on past the output. Gives the bytes of the stream copied aside; on failure, the errno
/// and, for bad data, the decoder's reason.
pub(crate) fn stream_decompress_io(
    algorithmformat: u8,
    io: Io<'_, '_>,
    partial: bool,
) -> DecodeResult {
    let alg = zalg(algorithmformat).ok_or((EINVAL, "unknown algorithm"))?;
    if io.inlen().is_none() || io.outlen().is_none() {
        return Err((EINVAL, "buffers too large"));
    }
    if !io.fits() {
        return Err((EINVAL, DECODER_ERROR));
    }
    let pools = pools().ok_or((EOPNOTSUPP, DECODER_ERROR))?;
    pools
        .pool(alg)
        .with_stream(|s| s.decompress(io, partial))
        .map_err(|e| (e, DECODER_ERROR))?
}

/// The reason given for a failure that is not about the data (C: no reason set).
const DECODER_ERROR: &str = "decoder error";
/// The reason for bad data that the decoders themselves do not name (and
/// [`UNEXPECTED_END`]).
const CORRUPTED: &str = "corrupted compressed data";

/// A MicroLZMA decoder state (`struct xz_dec_microlzma`), preallocated for one dictionary
/// size; freed (`xz_dec_microlzma_end`) on drop.
///
/// # Invariants
///
/// `ptr` came from `xz_dec_microlzma_alloc(XZ_PREALLOC, ..)` and is owned by this value.
struct MicroLzma {
    ptr: NonNull<sys::xz_dec_microlzma>,
}

// SAFETY: the state is plain memory that any thread may use, one at a time (`&mut self`).
unsafe impl Send for MicroLzma {}

impl MicroLzma {
    /// Allocates a decoder for dictionaries of up to `dictsize` bytes.
    fn new(dictsize: u32) -> Result<Self> {
        // SAFETY: no preconditions; the result is null or a new state.
        let ptr = unsafe { sys::xz_dec_microlzma_alloc(sys::xz_mode_XZ_PREALLOC, dictsize) };
        // INVARIANT: a non-null result is a new state, which we own.
        Ok(MicroLzma {
            ptr: NonNull::new(ptr).ok_or(ENOMEM)?,
        })
    }

    /// Decodes the stream of `io` into its output; `partial`: the stream may go on past it.
    fn decompress(&mut self, io: Io<'_, '_>, partial: bool) -> DecodeResult {
        let (Some(inlen), Some(outlen)) = (io.inlen(), io.outlen()) else {
            return Err((EINVAL, DECODER_ERROR));
        };
        // SAFETY: `ptr` is our state (type invariant), used by this thread only (`&mut self`).
        unsafe {
            sys::xz_dec_microlzma_reset(self.ptr.as_ptr(), inlen, outlen, c_int::from(!partial))
        };
        let ptr = self.ptr;
        // It ends the stream once the output is full (`XZ_STREAM_END`).
        drive(io, false, |src, dst| {
            let mut buf = sys::xz_buf {
                in_: src.as_ptr(),
                in_pos: 0,
                in_size: src.len(),
                out: dst.as_mut_ptr(),
                out_pos: 0,
                out_size: dst.len(),
            };
            // SAFETY: `buf` describes `src` and `dst`, readable and writable for their lengths
            // during the call; the state is ours, as above. `XZ_PREALLOC` decodes into its own
            // dictionary, so buffers may change between calls (include/linux/xz.h).
            let xerr = unsafe { sys::xz_dec_microlzma_run(ptr.as_ptr(), &mut buf) };
            match xerr {
                sys::xz_ret_XZ_OK | sys::xz_ret_XZ_STREAM_END => Ok(Step {
                    used: buf.in_pos,
                    made: buf.out_pos,
                    end: xerr == sys::xz_ret_XZ_STREAM_END,
                }),
                sys::xz_ret_XZ_DATA_ERROR => Err(CORRUPTED),
                _ => Err(UNEXPECTED_END),
            }
        })
    }
}

impl Drop for MicroLzma {
    fn drop(&mut self) {
        // SAFETY: `ptr` is our state (type invariant), freed once, here.
        unsafe { sys::xz_dec_microlzma_end(self.ptr.as_ptr()) };
    }
}

/// A decoder workspace (zlib inflate, or a `zstd_dstream`) of `size` bytes, allocated with
/// `kvmalloc` and freed (`kvfree`) on drop.
///
/// # Invariants
///
/// `buf` has room for at least `size` bytes (its capacity; its length stays 0, as only the C
/// decoders use the memory), 8-byte aligned.
struct Workspace {
    buf: KVVec<u64>,
    size: usize,
}

impl Workspace {
    /// Allocates a workspace of `size` bytes, as `kvmalloc(size, GFP_KERNEL)`.
    fn new(size: usize) -> Result<Self> {
        let buf = KVVec::with_capacity(size.div_ceil(size_of::<u64>()), GFP_KERNEL)?;
        // INVARIANT: the capacity covers `size` bytes.
        Ok(Workspace { buf, size })
    }

    /// The workspace, for the decoder: `size` bytes, 8-byte aligned.
    fn as_mut_ptr(&mut self) -> *mut c_void {
        self.buf.as_mut_ptr().cast()
    }
}

/// zlib's return codes, as the `c_int` its functions return.
mod z {
    use super::{
        c_int,
        sys, //
    };

    // CAST: small constants of zlib.h, which bindgen types as u32/i32.
    pub(super) const Z_OK: c_int = sys::Z_OK as c_int;
    // CAST: as above.
    pub(super) const Z_STREAM_END: c_int = sys::Z_STREAM_END as c_int;
    // CAST: as above.
    pub(super) const Z_SYNC_FLUSH: c_int = sys::Z_SYNC_FLUSH as c_int;
    pub(super) const Z_DATA_ERROR: c_int = sys::Z_DATA_ERROR;
    pub(super) const Z_BUF_ERROR: c_int = sys::Z_BUF_ERROR;
    // CAST: as above; negative window bits ask for raw DEFLATE (no zlib header).
    pub(super) const RAW_MAX_WBITS: c_int = -(sys::MAX_WBITS as c_int);
}

/// Decodes the raw DEFLATE stream of `io` in workspace `ws`; `partial`: the stream may go on
/// past the output (`z_erofs_deflate_decompress`).
fn inflate(ws: &mut Workspace, io: Io<'_, '_>, partial: bool) -> DecodeResult {
    let mut zs = sys::z_stream {
        workspace: ws.as_mut_ptr(),
        ..Default::default()
    };
    // SAFETY: `zs` is a zeroed stream whose workspace is `zlib_inflate_workspacesize()` bytes
    // (`Workspace::new`), used by this thread only (`&mut ws`).
    if unsafe { sys::zlib_inflateInit2(&mut zs, z::RAW_MAX_WBITS) } != z::Z_OK {
        return Err((EINVAL, DECODER_ERROR));
    }
    let res = drive(io, partial, |src, dst| {
        zs.next_in = src.as_ptr();
        // `uLong` is the kernel's `c_ulong`, a `usize`.
        zs.avail_in = src.len();
        zs.next_out = dst.as_mut_ptr();
        zs.avail_out = dst.len();
        // SAFETY: `zs` was set up above; `next_in`/`next_out` are `src` and `dst`, readable and
        // writable for `avail_in`/`avail_out` bytes during the call. Between calls inflate keeps
        // what it needs in its window, in the workspace.
        let zerr = unsafe { sys::zlib_inflate(&mut zs, z::Z_SYNC_FLUSH) };
        // OVERFLOW: inflate leaves at most what it was given.
        let (used, made) = (src.len() - zs.avail_in, dst.len() - zs.avail_out);
        match zerr {
            z::Z_OK | z::Z_BUF_ERROR | z::Z_STREAM_END => Ok(Step {
                used,
                made,
                end: zerr == z::Z_STREAM_END,
            }),
            z::Z_DATA_ERROR => Err(CORRUPTED),
            _ => Err(UNEXPECTED_END),
        }
    });
    // SAFETY: `zs` was set up by `zlib_inflateInit2` above; it is not used afterwards.
    if unsafe { sys::zlib_inflateEnd(&mut zs) } != z::Z_OK && res.is_ok() {
        return Err((EIO, DECODER_ERROR));
    }
    res
}

/// Decodes the Zstandard stream of `io` in workspace `ws`, made for windows of up to
/// `dictsize` bytes (`z_erofs_zstd_decompress`).
fn unzstd(ws: &mut Workspace, dictsize: u32, io: Io<'_, '_>) -> DecodeResult {
    // CAST: u32 fits in usize.
    let window = dictsize as usize;
    // SAFETY: `ws` is `zstd_dstream_workspace_bound(dictsize)` bytes, 8-byte aligned
    // (`Workspace::new`), used by this thread only (`&mut ws`).
    let ds = unsafe { sys::zstd_init_dstream(window, ws.as_mut_ptr(), ws.size) };
    if ds.is_null() {
        return Err((ENOMEM, DECODER_ERROR));
    }
    // Zstandard frames say where they end: a full output is the end.
    drive(io, true, |src, dst| {
        let mut ib = sys::zstd_in_buffer {
            src: src.as_ptr().cast(),
            size: src.len(),
            pos: 0,
        };
        let mut ob = sys::zstd_out_buffer {
            dst: dst.as_mut_ptr().cast(),
            size: dst.len(),
            pos: 0,
        };
        // SAFETY: `ds` lives in `ws`, set up above; `ib` and `ob` describe `src` and `dst`,
        // readable and writable for their sizes during the call. Between calls the stream keeps
        // what it needs in its own buffers, in the workspace.
        let zerr = unsafe { sys::zstd_decompress_stream(ds, &mut ob, &mut ib) };
        // SAFETY: no preconditions.
        if unsafe { sys::zstd_is_error(zerr) } != 0 {
            // SAFETY: no preconditions; the result is one of zstd's static error strings.
            let name = unsafe { sys::zstd_get_error_name(zerr) };
            return Err(if name.is_null() {
                DECODER_ERROR
            } else {
                // SAFETY: a static NUL-terminated string (zstd's `ERR_getErrorString`).
                unsafe { kernel::str::CStr::from_char_ptr(name) }
                    .to_str()
                    .unwrap_or(DECODER_ERROR)
            });
        }
        // 0: a frame ended, and all of it is out.
        Ok(Step {
            used: ib.pos,
            made: ob.pos,
            end: zerr == 0,
        })
    })
}

/// What a decode gives: the bytes of the stream it copied aside (see [`Io`]); on failure, the
/// errno and the reason.
type DecodeResult = core::result::Result<usize, (Error, &'static str)>;

/// The state of one decoder context, by algorithm.
enum Decoder {
    /// A MicroLZMA decoder.
    Lzma(MicroLzma),
    /// A zlib inflate workspace.
    Deflate(Workspace),
    /// A Zstandard decoder workspace.
    Zstd(Workspace),
}

impl Decoder {
    /// Allocates the state of an `alg` decoder for dictionaries (windows) of `dictsize` bytes.
    fn new(alg: Alg, dictsize: u32) -> Result<Self> {
        Ok(match alg {
            Alg::Lzma => Decoder::Lzma(MicroLzma::new(dictsize)?),
            Alg::Deflate => {
                // SAFETY: no preconditions.
                let sz = unsafe { sys::zlib_inflate_workspacesize() };
                Decoder::Deflate(Workspace::new(usize::try_from(sz).map_err(|_| EINVAL)?)?)
            }
            Alg::Zstd => {
                // CAST: u32 fits in usize.
                // SAFETY: no preconditions.
                let sz = unsafe { sys::zstd_dstream_workspace_bound(dictsize as usize) };
                Decoder::Zstd(Workspace::new(sz)?)
            }
        })
    }
}

/// One decoder context of a pool (C: `struct zstream`).
struct Stream {
    /// Its state.
    dec: Decoder,
    /// The dictionary (window) size the state was made for.
    dictsize: u32,
}

impl Stream {
    /// Decodes as `io` says; `partial`: the stream may go on past the output.
    fn decompress(&mut self, io: Io<'_, '_>, partial: bool) -> DecodeResult {
        match &mut self.dec {
            Decoder::Lzma(d) => d.decompress(io, partial),
            Decoder::Deflate(ws) => inflate(ws, io, partial),
            // Zstandard frames say where they end: `partial` changes nothing.
            Decoder::Zstd(ws) => unzstd(ws, self.dictsize, io),
        }
    }
}

/// The contexts of a pool under its spinlock.
///
/// # Invariants
///
/// `idle.len() <= nstrms <= idle.capacity()`: the contexts not in `idle` are out with a decode
/// or with `config`, and returning them never allocates.
struct Streams {
    /// The idle contexts.
    idle: KVec<Stream>,
    /// The contexts of the pool, idle or not.
    nstrms: usize,
}

/// The decoder contexts of one algorithm (C: `struct zpool`).
#[pin_data]
struct Pool {
    /// The algorithm.
    alg: Alg,
    /// Its `*_streams` module parameter.
    param: &'static UintParam,
    /// Serialises [`Pool::config`]; holds the largest dictionary (window) size the pool
    /// serves.
    #[pin]
    resize: Mutex<u32>,
    /// The contexts.
    #[pin]
    streams: SpinLock<Streams>,
    /// Signalled when a context goes back to `streams`.
    #[pin]
    returned: CondVar,
}

impl Pool {
    /// An empty pool for `alg`, sized by `param`.
    fn new(alg: Alg, param: &'static UintParam) -> impl PinInit<Self> {
        pin_init!(Pool {
            alg,
            param,
            resize <- new_mutex!(0, "Pool::resize"),
            // INVARIANT: empty.
            streams <- new_spinlock!(
                Streams {
                    idle: KVec::new(),
                    nstrms: 0,
                },
                "Pool::streams"
            ),
            returned <- new_condvar!("Pool::returned"),
        })
    }

    /// Makes the pool serve dictionaries (windows) of `dictsize` bytes: at the first mount that
    /// needs it, and again when a mount declares a larger one. Waits for every busy context;
    /// contexts that cannot grow keep their old size, new ones that cannot be made are
    /// dropped.
    ///
    /// # Errors
    ///
    /// `ENOMEM` if a context could not be made, or none is left.
    fn config(&self, dictsize: u32) -> Result {
        let mut maxdict = self.resize.lock();
        let nstrms = self.streams.lock().nstrms;
        if nstrms != 0 && *maxdict >= dictsize {
            return Ok(());
        }
        let mut want = self.param.get();
        // 0 (the default) means one per possible CPU; show the number in use.
        if want == 0 {
            want = num_possible_cpus();
            self.param.set(want);
        }
        // CAST: u32 fits in usize.
        let want = want as usize;
        // `nstrms` cannot change while `resize` is held, so these never need to grow.
        let cap = max(want, nstrms);
        let mut all = KVec::<Option<Stream>>::with_capacity(cap, GFP_KERNEL)?;
        let mut idle = KVec::<Stream>::with_capacity(cap, GFP_KERNEL)?;

        // Take every context out of circulation, waiting for the busy ones.
        while let Some(s) = self.take_next(&all, nstrms) {
            if let Err(PushError(s)) = all.push_within_capacity(Some(s)) {
                // Cannot happen: `all` holds at most `nstrms` contexts.
                drop(s);
            }
        }
        while all.len() < want {
            if all.push_within_capacity(None).is_err() {
                break;
            }
        }
        let mut res = Ok(());
        for slot in all.iter_mut() {
            if slot.as_ref().is_some_and(|s| s.dictsize >= dictsize) {
                continue;
            }
            match Decoder::new(self.alg, dictsize) {
                // Frees the old state, if any.
                Ok(dec) => *slot = Some(Stream { dec, dictsize }),
                Err(e) => {
                    res = Err(e);
                    break;
                }
            }
        }
        if res.is_ok() {
            *maxdict = max(*maxdict, dictsize);
        }
        // Slots whose state could not be made are dropped; the others go back.
        for s in all.drain_all().flatten() {
            if let Err(PushError(s)) = idle.push_within_capacity(s) {
                // Cannot happen: both have the same capacity.
                drop(s);
            }
        }
        let n = idle.len();
        let old = {
            let mut g = self.streams.lock();
            g.nstrms = n;
            // INVARIANT: `idle` has every context of the pool, `n` of them, within its capacity.
            // The old vector is empty: every context was taken out above and none can come
            // back, as none is out with a decode.
            core::mem::replace(&mut g.idle, idle)
        };
        drop(old);
        self.returned.notify_all();
        if n == 0 {
            return Err(ENOMEM);
        }
        res
    }

    /// The next idle context for `config`, waiting for one while `all` has fewer than
    /// `nstrms`; `None` once it has them all.
    fn take_next(&self, all: &KVec<Option<Stream>>, nstrms: usize) -> Option<Stream> {
        let mut g = self.streams.lock();
        loop {
            if all.len() >= nstrms {
                return None;
            }
            if let Some(s) = g.idle.pop() {
                return Some(s);
            }
            self.returned.wait(&mut g);
        }
    }

    /// Runs `f` on an idle context, waiting for one (`z_erofs_get_*_stream`), and returns the
    /// context to the pool.
    ///
    /// # Errors
    ///
    /// `EOPNOTSUPP` if the pool was never configured (or has no context left).
    fn with_stream<R>(&self, f: impl FnOnce(&mut Stream) -> R) -> Result<R> {
        let mut s = self.get()?;
        let r = f(&mut s);
        self.put(s);
        Ok(r)
    }

    /// Takes an idle context, waiting for one.
    fn get(&self) -> Result<Stream> {
        let mut g = self.streams.lock();
        loop {
            if g.nstrms == 0 {
                return Err(EOPNOTSUPP);
            }
            if let Some(s) = g.idle.pop() {
                return Ok(s);
            }
            self.returned.wait(&mut g);
        }
    }

    /// Returns a context taken with [`Pool::get`].
    fn put(&self, s: Stream) {
        let rejected = {
            let mut g = self.streams.lock();
            match g.idle.push_within_capacity(s) {
                Ok(()) => None,
                Err(PushError(s)) => {
                    // Cannot happen (type invariant of `Streams`); the context leaves the pool.
                    // INVARIANT: one context fewer, and not in `idle`.
                    g.nstrms = g.nstrms.saturating_sub(1);
                    Some(s)
                }
            }
        };
        // Freed outside the spinlock.
        drop(rejected);
        self.returned.notify_one();
    }
}

/// The pools of the three stream algorithms (C: `zpools[]`).
#[pin_data]
struct Pools {
    #[pin]
    lzma: Pool,
    #[pin]
    deflate: Pool,
    #[pin]
    zstd: Pool,
}

impl Pools {
    /// Empty pools, sized by the module parameters.
    fn new() -> impl PinInit<Self> {
        pin_init!(Pools {
            lzma <- Pool::new(Alg::Lzma, &lzma_streams),
            deflate <- Pool::new(Alg::Deflate, &deflate_streams),
            zstd <- Pool::new(Alg::Zstd, &zstd_streams),
        })
    }

    /// The pool of `alg`.
    fn pool(&self, alg: Alg) -> &Pool {
        match alg {
            Alg::Lzma => &self.lzma,
            Alg::Deflate => &self.deflate,
            Alg::Zstd => &self.zstd,
        }
    }
}

/// The module's pools, while [`ZPools`] publishes them.
static ZPOOLS: GlobalArc<Pools> = GlobalArc::new();

/// The module's pools, if [`ZPools`] published them.
fn pools() -> Option<Arc<Pools>> {
    ZPOOLS.get()
}

/// The module's decoder pools (C: `zpools_init` / `zpools_exit`), owned by the module: while it
/// lives, [`stream_config`] and [`stream_decompress`] use them; dropping it frees every
/// context once no decode holds one.
pub(crate) struct ZPools(
    /// The pools, published in [`ZPOOLS`] until this is dropped.
    #[expect(dead_code, reason = "held for its `Drop`, which unpublishes the pools")]
    Published<Pools>,
);

impl ZPools {
    /// Makes empty pools and publishes them.
    ///
    /// # Errors
    ///
    /// `ENOMEM`, or `EBUSY` if another [`ZPools`] lives.
    pub(crate) fn new() -> Result<Self> {
        let pools = Arc::pin_init(Pools::new(), GFP_KERNEL)?;
        Ok(ZPools(ZPOOLS.publish(pools)?))
    }
}

#[kunit_tests(erofs_rs_decoders)]
mod tests {
    use super::*;
    use core::sync::atomic::{
        AtomicBool,
        Ordering, //
    };
    use kernel::{
        sync::Completion,
        time::{
            delay::fsleep,
            Delta, //
        },
        workqueue,
    };

    /// The size of the pools these tests make: one context.
    static ONE: UintParam = UintParam::new(1);

    /// A pool never configured has no context to give.
    #[test]
    fn unconfigured_pool_refuses() -> Result {
        let pool = KBox::pin_init(Pool::new(Alg::Lzma, &ONE), GFP_KERNEL)?;
        assert_eq!(pool.get().err(), Some(EOPNOTSUPP));
        Ok(())
    }

    /// A pool whose contexts are all taken blocks a reader, and wakes it when one is put back.
    #[test]
    fn pool_blocks_when_empty_and_wakes_on_put() -> Result {
        let pool = Arc::pin_init(Pool::new(Alg::Lzma, &ONE), GFP_KERNEL)?;
        pool.config(64 * 1024)?;
        let held = pool.get()?;
        let got = Arc::new(AtomicBool::new(false), GFP_KERNEL)?;
        let done = Arc::pin_init(Completion::new(), GFP_KERNEL)?;
        let (p, g, d) = (pool.clone(), got.clone(), done.clone());
        workqueue::system().try_spawn(GFP_KERNEL, move || {
            if let Ok(s) = p.get() {
                g.store(true, Ordering::Release);
                p.put(s);
            }
            d.complete_all();
        })?;
        // The other reader waits while the only context is out.
        fsleep(Delta::from_millis(100));
        assert!(!got.load(Ordering::Acquire));
        pool.put(held);
        done.wait_for_completion();
        assert!(got.load(Ordering::Acquire));
        // Both contexts went back: the pool has its one context idle again.
        let again = pool.get()?;
        pool.put(again);
        Ok(())
    }

    /// An LZ4 block of 114 bytes decoding to 200: 100 literals, a match of 92 at offset 100,
    /// and 8 last literals; and those 200 bytes.
    fn lz4_sample() -> Result<(KVec<u8>, KVec<u8>)> {
        let lit = |i: usize| u8::try_from(i * 7 % 251).unwrap_or(0);
        let mut block = KVec::with_capacity(114, GFP_KERNEL)?;
        let mut want = KVec::with_capacity(200, GFP_KERNEL)?;
        block.extend_from_slice(&[0xff, 85], GFP_KERNEL)?;
        for i in 0..100 {
            block.push(lit(i), GFP_KERNEL)?;
            want.push(lit(i), GFP_KERNEL)?;
        }
        block.extend_from_slice(&[100, 0, 73, 0x80], GFP_KERNEL)?;
        for i in 0..92 {
            want.push(lit(i), GFP_KERNEL)?;
        }
        for i in 0..8 {
            block.push(lit(200 + i), GFP_KERNEL)?;
            want.push(lit(200 + i), GFP_KERNEL)?;
        }
        Ok((block, want))
    }

    /// A block at the end of a buffer whose start it decodes to, the input overlapping the
    /// output, decodes as it does elsewhere; layouts outside lib/lz4's in-place rule are
    /// refused without decoding.
    #[test]
    fn lz4_decodes_in_place_over_its_input() -> Result {
        let (block, want) = lz4_sample()?;
        let mut out = KVec::from_elem(0u8, 200, GFP_KERNEL)?;
        assert_eq!(lz4_decompress(&block, &mut out, false), 200);
        assert_eq!(&out[..], &want[..]);
        // The margin is (114 >> 8) + 32 = 32 bytes: the input ends at 232, from 118 on.
        let mut buf = KVec::from_elem(0u8, 232, GFP_KERNEL)?;
        buf[118..].copy_from_slice(&block);
        assert_eq!(lz4_decompress_in_place(&mut buf, 118..232, 0..200), 200);
        assert_eq!(&buf[..200], &want[..]);
        // One byte short of the margin, input before output, ranges past the buffer.
        let mut buf = KVec::from_elem(0u8, 231, GFP_KERNEL)?;
        buf[117..].copy_from_slice(&block);
        assert_eq!(lz4_decompress_in_place(&mut buf, 117..231, 0..200), -1);
        assert_eq!(buf[0], 0);
        assert_eq!(lz4_decompress_in_place(&mut buf, 0..114, 1..201), -1);
        assert_eq!(lz4_decompress_in_place(&mut buf, 118..232, 0..200), -1);
        // A stream cut short fails, still inside the buffer.
        let mut buf = KVec::from_elem(0u8, 232, GFP_KERNEL)?;
        buf[118..].copy_from_slice(&block);
        assert!(lz4_decompress_in_place(&mut buf, 118..200, 0..160) < 0);
        Ok(())
    }

    /// A raw DEFLATE stream of stored blocks (RFC 1951, 3.2.4) of 4 KiB each, holding two
    /// pages of bytes, and those bytes: its output is always behind its input, the layout where
    /// an output that starts before the input catches up with it.
    fn stored_sample() -> Result<(KVec<u8>, KVec<u8>)> {
        const N: usize = 2 * PAGE_SIZE;
        const BLOCK: usize = 4096;
        let byte = |i: usize| u8::try_from(i * 7 % 251).unwrap_or(0);
        let mut stream = KVec::with_capacity(N + N / BLOCK * 5, GFP_KERNEL)?;
        let mut want = KVec::with_capacity(N, GFP_KERNEL)?;
        let len = u16::try_from(BLOCK).map_err(|_| EINVAL)?;
        let (l, nl) = (len.to_le_bytes(), (!len).to_le_bytes());
        for i in 0..N {
            if i % BLOCK == 0 {
                // BFINAL on the last block, BTYPE = 00, then LEN and NLEN.
                let last = u8::from(i + BLOCK >= N);
                stream.extend_from_slice(&[last, l[0], l[1], nl[0], nl[1]], GFP_KERNEL)?;
            }
            stream.push(byte(i), GFP_KERNEL)?;
            want.push(byte(i), GFP_KERNEL)?;
        }
        Ok((stream, want))
    }

    /// Runs `f` on `buf` as one piece, or in pages with `split` (as pages that do not lie
    /// side by side give it).
    fn with_parts<'b, R>(
        buf: &'b mut [u8],
        split: bool,
        f: impl FnOnce(&mut [&'b mut [u8]]) -> R,
    ) -> Result<R> {
        let mut parts = KVec::new();
        if split {
            for p in buf.chunks_mut(PAGE_SIZE) {
                parts.push(p, GFP_KERNEL)?;
            }
        } else {
            parts.push(buf, GFP_KERNEL)?;
        }
        Ok(f(&mut parts))
    }

    /// A stream whose last part was read into the pages it decodes to is decoded right: bytes
    /// the output reaches before the decoder has read them (or comes within
    /// [`stream::MIN_ROOM_PAGES`] pages of) are copied aside first (here the output starts half
    /// a page before them and the decoder is still in its first part); a stream wholly in
    /// those pages, ahead of the output, needs no copy; a stream cut short fails. The same in
    /// pieces (the input split inside a block, the output in pages): each decoder call gets
    /// one piece of each, and the bytes out and those copied aside are the same.
    #[test]
    fn stream_read_in_place_decodes_right() -> Result {
        let pool = KBox::pin_init(Pool::new(Alg::Deflate, &ONE), GFP_KERNEL)?;
        pool.config(32768)?;
        let (stream, want) = stored_sample()?;
        let n = want.len();
        // Its first `PAGE_SIZE + 5` bytes outside (a 4 KiB page: a block), the rest at half a
        // page.
        let (ext, rest) = stream.split_at(PAGE_SIZE + 5);
        let (ext1, ext2) = ext.split_at(1000);
        let half = PAGE_SIZE / 2;
        for split in [false, true] {
            let exts: &[&[u8]] = if split { &[ext1, ext2] } else { &[ext] };
            let mut buf = KVec::from_elem(0u8, 3 * PAGE_SIZE, GFP_KERNEL)?;
            buf[half..half + rest.len()].copy_from_slice(rest);
            let mut spill = KVVec::new();
            let copied = with_parts(&mut buf, split, |parts| {
                let io = Io {
                    ext: exts,
                    buf: parts,
                    lent: half..half + rest.len(),
                    out: 0..n,
                    spill: &mut spill,
                };
                pool.with_stream(|s| s.decompress(io, false))
            })??;
            // The output never falls behind again once it has caught up: every byte of the
            // second page is copied, a page's end at a time.
            assert_eq!(copied.ok(), Some(rest.len()));
            assert_eq!(&buf[..n], &want[..]);
            assert_eq!(spill.len(), rest.len());
            // All of it in the pages, far enough after the output's start.
            let at = (stream::MIN_ROOM_PAGES + 1) * PAGE_SIZE;
            let mut buf = KVec::from_elem(0u8, at + 3 * PAGE_SIZE, GFP_KERNEL)?;
            buf[at..at + stream.len()].copy_from_slice(&stream);
            let mut spill = KVVec::new();
            let copied = with_parts(&mut buf, split, |parts| {
                let io = Io {
                    ext: &[],
                    buf: parts,
                    lent: at..at + stream.len(),
                    out: 0..n,
                    spill: &mut spill,
                };
                pool.with_stream(|s| s.decompress(io, false))
            })??;
            assert_eq!(copied.ok(), Some(0));
            assert_eq!(&buf[..n], &want[..]);
            assert!(spill.is_empty());
            // Cut short by a byte: an error, not a wait for more.
            let mut buf = KVec::from_elem(0u8, 3 * PAGE_SIZE, GFP_KERNEL)?;
            buf[half..half + rest.len() - 1].copy_from_slice(&rest[..rest.len() - 1]);
            let res = with_parts(&mut buf, split, |parts| {
                let io = Io {
                    ext: exts,
                    buf: parts,
                    lent: half..half + rest.len() - 1,
                    out: 0..n,
                    spill: &mut spill,
                };
                pool.with_stream(|s| s.decompress(io, false))
            })??;
            assert_eq!(res.map_err(|(e, _)| e), Err(EFSCORRUPTED));
        }
        // Positions past the pieces' end are refused, not read.
        let mut small = [0u8; 16];
        let mut spill = KVVec::new();
        let io = Io {
            ext: &[ext1],
            buf: &mut [&mut small[..]],
            lent: 16..16,
            out: 0..32,
            spill: &mut spill,
        };
        let res = pool.with_stream(|s| s.decompress(io, false))?;
        assert_eq!(res.map_err(|(e, _)| e), Err(EINVAL));
        Ok(())
    }
}
