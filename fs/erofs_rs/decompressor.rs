// SPDX-License-Identifier: GPL-2.0-only
//! The stream decompressors and their pools of decoder contexts: MicroLZMA, DEFLATE and
//! Zstandard, by on-disk algorithm. C counterpart: fs/erofs/decompressor.c (the stream buffer
//! switching, here the format core's `stream::Io::drive`), decompressor_lzma.c,
//! decompressor_deflate.c and decompressor_zstd.c.
//!
//! Stream decoders need a context of up to megabytes (sized by the dictionary or window), so,
//! as in the C driver, each algorithm has a bounded pool of them (`lzma_streams`,
//! `deflate_streams`, `zstd_streams`; by default one per possible CPU), sized for the largest
//! dictionary any mounted image declared, and a decode waits for a free one. The contexts
//! themselves are the kernel's decoders (lib/xz, lib/zlib_inflate, lib/zstd), reached through
//! `vfs/decompress.rs`.
//!
//! Locking: [`Pool::resize`] (a mutex) serialises growing a pool and is held while waiting for
//! every context to come back; [`Pool::streams`] (a spinlock) guards the idle contexts and is
//! taken inside `resize`, never the other way round. Nothing is freed under the spinlock. The
//! pools of the module are one [`Arc<Pools>`] published in [`ZPOOLS`] by the module-owned
//! [`ZPools`]; a decode holds a reference for its duration, so the contexts are freed when the
//! module drops its [`ZPools`] at exit and no decode is left (none can be: every mount is gone).
#![deny(unsafe_code)]

use crate::erofs_core::{
    self as core_,
    ondisk::{
        Z_EROFS_COMPRESSION_DEFLATE,
        Z_EROFS_COMPRESSION_LZMA,
        Z_EROFS_COMPRESSION_ZSTD, //
    },
    stream::{
        self,
        Step,
        UNEXPECTED_END, //
    }, //
};
use crate::super_::to_kernel;
use crate::vfs::{
    cpu::num_possible_cpus,
    decompress::{
        DecodeError,
        Inflate,
        MicroLzma,
        Progress,
        Zstd, //
    },
    global::{
        GlobalArc,
        Published, //
    },
    param::{
        module_param_uint,
        UintParam, //
    }, //
};
use core::cmp::max;
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

impl Alg {
    /// The stream algorithm of on-disk algorithm number `algorithmformat`
    /// (`Z_EROFS_COMPRESSION_*`), if it is one.
    fn from_ondisk(algorithmformat: u8) -> Option<Self> {
        match algorithmformat {
            Z_EROFS_COMPRESSION_LZMA => Some(Alg::Lzma),
            Z_EROFS_COMPRESSION_DEFLATE => Some(Alg::Deflate),
            Z_EROFS_COMPRESSION_ZSTD => Some(Alg::Zstd),
            _ => None,
        }
    }
}

/// Prepares the decoder pool of algorithm `algorithmformat` (LZMA, DEFLATE or ZSTD) for
/// dictionaries or windows of `dictsize` bytes (`z_erofs_load_*_config`).
pub(crate) fn stream_config(algorithmformat: u8, dictsize: u32) -> Result {
    let alg = Alg::from_ondisk(algorithmformat).ok_or(EINVAL)?;
    ZPOOLS.get().ok_or(EOPNOTSUPP)?.pool(alg).config(dictsize)
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

/// One decoder call's result as [`stream::Io::drive`] takes it: its progress, or the reason
/// it failed, `failed` for a failure the decoder does not name.
fn step(
    r: core::result::Result<Progress, DecodeError>,
    failed: &'static str,
) -> core::result::Result<Step, &'static str> {
    match r {
        Ok(p) => Ok(Step {
            used: p.consumed,
            made: p.produced,
            end: p.end,
        }),
        Err(DecodeError::Corrupt) => Err(CORRUPTED),
        Err(DecodeError::Failed) => Err(failed),
        Err(DecodeError::Named(why)) => Err(why),
    }
}

/// Decodes as [`Io`] says with algorithm `algorithmformat`'s decoder; `partial` lets the stream
/// go on past the output. Gives the bytes of the stream copied aside; on failure, the errno
/// and, for bad data, the decoder's reason.
pub(crate) fn stream_decompress_io(
    algorithmformat: u8,
    io: Io<'_, '_>,
    partial: bool,
) -> DecodeResult {
    let alg = Alg::from_ondisk(algorithmformat).ok_or((EINVAL, "unknown algorithm"))?;
    if io.inlen().is_none() || io.outlen().is_none() {
        return Err((EINVAL, "buffers too large"));
    }
    if !io.fits() {
        return Err((EINVAL, DECODER_ERROR));
    }
    let pools = ZPOOLS.get().ok_or((EOPNOTSUPP, DECODER_ERROR))?;
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

/// Decodes the MicroLZMA stream of `io` with `xz`; `partial`: the stream may go on past the
/// output (`z_erofs_lzma_decompress`).
fn unlzma(xz: &mut MicroLzma, io: Io<'_, '_>, partial: bool) -> DecodeResult {
    let (Some(inlen), Some(outlen)) = (io.inlen(), io.outlen()) else {
        return Err((EINVAL, DECODER_ERROR));
    };
    xz.reset(inlen, outlen, !partial);
    // It ends the stream once the output is full (`XZ_STREAM_END`).
    drive(io, false, |src, dst| step(xz.run(src, dst), UNEXPECTED_END))
}

/// Decodes the raw DEFLATE stream of `io` in `ctx`; `partial`: the stream may go on past the
/// output (`z_erofs_deflate_decompress`).
fn inflate(ctx: &mut Inflate, io: Io<'_, '_>, partial: bool) -> DecodeResult {
    let mut zs = ctx.init().map_err(|e| (e, DECODER_ERROR))?;
    let res = drive(io, partial, |src, dst| {
        step(zs.run(src, dst), UNEXPECTED_END)
    });
    if zs.end().is_err() && res.is_ok() {
        return Err((EIO, DECODER_ERROR));
    }
    res
}

/// Decodes the Zstandard stream of `io` in `ctx` (`z_erofs_zstd_decompress`).
fn unzstd(ctx: &mut Zstd, io: Io<'_, '_>) -> DecodeResult {
    let mut ds = ctx.init().map_err(|e| (e, DECODER_ERROR))?;
    // Zstandard frames say where they end: a full output is the end.
    drive(io, true, |src, dst| step(ds.run(src, dst), DECODER_ERROR))
}

/// What a decode gives: the bytes of the stream it copied aside (see [`Io`]); on failure, the
/// errno and the reason.
type DecodeResult = core::result::Result<usize, (Error, &'static str)>;

/// The state of one decoder context, by algorithm.
enum Decoder {
    /// A MicroLZMA decoder.
    Lzma(MicroLzma),
    /// A zlib inflate workspace.
    Deflate(Inflate),
    /// A Zstandard decoder workspace.
    Zstd(Zstd),
}

impl Decoder {
    /// Allocates the state of an `alg` decoder for dictionaries (windows) of `dictsize` bytes.
    fn new(alg: Alg, dictsize: u32) -> Result<Self> {
        Ok(match alg {
            Alg::Lzma => Decoder::Lzma(MicroLzma::new(dictsize)?),
            Alg::Deflate => Decoder::Deflate(Inflate::new()?),
            // CAST: u32 fits in usize.
            Alg::Zstd => Decoder::Zstd(Zstd::new(dictsize as usize)?),
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
            Decoder::Lzma(xz) => unlzma(xz, io, partial),
            Decoder::Deflate(ctx) => inflate(ctx, io, partial),
            // Zstandard frames say where they end: `partial` changes nothing.
            Decoder::Zstd(ctx) => unzstd(ctx, io),
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
