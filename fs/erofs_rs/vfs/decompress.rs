// SPDX-License-Identifier: GPL-2.0-only
//! The kernel's decompressors, as safe decoder contexts and calls over byte slices: LZ4, a
//! MicroLZMA decoder, a raw zlib inflate context and a Zstandard decompression stream. C
//! counterpart: lib/lz4 (`LZ4_decompress_safe*`), lib/xz (`xz_dec_microlzma_*`),
//! lib/zlib_inflate (`zlib_inflate*`) and lib/zstd (`zstd_*_dstream`).
//!
//! A context decodes one stream at a time (`&mut self`) and may move between threads; a call
//! reads only the input slice and writes only the output slice it is given, whatever the bytes
//! of the stream, so any slices are sound. Which context to use, how many of them, and how a
//! stream's buffers are laid out are the caller's policy.

use super::sys;
use core::{
    marker::PhantomData,
    ops::Range,
    ptr::NonNull, //
};
use kernel::prelude::*;

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

/// Decodes LZ4 in place: the stream is `buf[src]` and its decoded bytes fill `buf[dst]`, which
/// may overlap it (the stream sits at the end of the bytes it decodes to). Never partial.
/// Returns as [`lz4_decompress`], and -1 without decoding when a range is not in `buf`, or when
/// `src` does not end at least `LZ4_DECOMPRESS_INPLACE_MARGIN` (`(srclen >> 8) + 32`) bytes
/// after `dst` nor start at or after `dst`'s start, the layout that lib/lz4 decodes in place.
pub(crate) fn lz4_decompress_in_place(buf: &mut [u8], src: Range<usize>, dst: Range<usize>) -> i32 {
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

/// What one call of a stream decoder did.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) struct Progress {
    /// Bytes of the input it consumed, from the start of the input slice.
    pub(crate) consumed: usize,
    /// Bytes of output it produced, from the start of the output slice.
    pub(crate) produced: usize,
    /// Whether the stream has ended (`XZ_STREAM_END`, `Z_STREAM_END`, a whole Zstandard frame).
    pub(crate) end: bool,
}

/// Why a stream decoder stopped.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum DecodeError {
    /// The stream is corrupt (`XZ_DATA_ERROR`, `Z_DATA_ERROR`).
    Corrupt,
    /// Any other failure the decoder reports without a name (for MicroLZMA and inflate, a
    /// stream it cannot go on with, such as one that ends too early).
    Failed,
    /// A failure the decoder names (Zstandard's `zstd_get_error_name`).
    Named(&'static str),
}

/// A MicroLZMA decoder (`struct xz_dec_microlzma`), preallocated (`XZ_PREALLOC`) for one
/// dictionary size; freed (`xz_dec_microlzma_end`) on drop.
///
/// # Invariants
///
/// `ptr` came from `xz_dec_microlzma_alloc(XZ_PREALLOC, ..)`, is owned by this value, and has
/// been reset (`xz_dec_microlzma_reset`) at least once. `failed` is set when lib/xz reported
/// an error, and cleared only by a reset: lib/xz's state after an error is not documented to
/// be usable, so [`MicroLzma::run`] refuses to run on it.
pub(crate) struct MicroLzma {
    ptr: NonNull<sys::xz_dec_microlzma>,
    failed: bool,
}

// SAFETY: the state is plain memory that any thread may use, one at a time (`&mut self`).
unsafe impl Send for MicroLzma {}

impl MicroLzma {
    /// Allocates a decoder for dictionaries of up to `dictsize` bytes.
    ///
    /// # Errors
    ///
    /// `ENOMEM` if memory is short or lib/xz refuses the size (outside 4 KiB..=3 GiB).
    pub(crate) fn new(dictsize: u32) -> Result<Self> {
        // SAFETY: no preconditions; the result is null or a new state.
        let ptr = unsafe { sys::xz_dec_microlzma_alloc(sys::xz_mode_XZ_PREALLOC, dictsize) };
        let ptr = NonNull::new(ptr).ok_or(ENOMEM)?;
        // SAFETY: `ptr` is a new state, ours only; resetting sets every field that
        // `xz_dec_microlzma_run` reads before it is given input.
        unsafe { sys::xz_dec_microlzma_reset(ptr.as_ptr(), 0, 0, 0) };
        // INVARIANT: allocated above, owned here, and reset.
        Ok(MicroLzma { ptr, failed: false })
    }

    /// Starts a new stream of `comp_size` bytes that decodes to `uncomp_size` bytes, or at
    /// least that many unless `uncomp_size_is_exact` (then the stream must end there).
    pub(crate) fn reset(&mut self, comp_size: u32, uncomp_size: u32, uncomp_size_is_exact: bool) {
        // SAFETY: `ptr` is our state (type invariant), used by this thread only (`&mut self`).
        // lib/xz accepts any sizes here and checks `comp_size` when it runs.
        unsafe {
            sys::xz_dec_microlzma_reset(
                self.ptr.as_ptr(),
                comp_size,
                uncomp_size,
                c_int::from(uncomp_size_is_exact),
            )
        };
        // INVARIANT: reset just above.
        self.failed = false;
    }

    /// Decodes from the start of `src` into the start of `dst` (`xz_dec_microlzma_run`). The
    /// decoder keeps what it needs in its own dictionary, so the slices may change between
    /// calls.
    ///
    /// # Errors
    ///
    /// [`DecodeError::Corrupt`] for bad data, [`DecodeError::Failed`] otherwise, and without
    /// running after an error until [`MicroLzma::reset`].
    pub(crate) fn run(&mut self, src: &[u8], dst: &mut [u8]) -> Result<Progress, DecodeError> {
        if self.failed {
            return Err(DecodeError::Failed);
        }
        let mut buf = sys::xz_buf {
            in_: src.as_ptr(),
            in_pos: 0,
            in_size: src.len(),
            out: dst.as_mut_ptr(),
            out_pos: 0,
            out_size: dst.len(),
        };
        // SAFETY: `buf` describes `src` and `dst`, readable and writable for their lengths
        // during the call, and lib/xz touches no bytes outside `in_pos..in_size` and
        // `out_pos..out_size`. The state is ours and was reset (type invariant), used by this
        // thread only (`&mut self`); `XZ_PREALLOC` decodes into its own dictionary, so buffers
        // may change between calls (include/linux/xz.h).
        let xerr = unsafe { sys::xz_dec_microlzma_run(self.ptr.as_ptr(), &mut buf) };
        match xerr {
            sys::xz_ret_XZ_OK | sys::xz_ret_XZ_STREAM_END => Ok(Progress {
                consumed: buf.in_pos,
                produced: buf.out_pos,
                end: xerr == sys::xz_ret_XZ_STREAM_END,
            }),
            sys::xz_ret_XZ_DATA_ERROR => {
                // INVARIANT: an error: no run until a reset.
                self.failed = true;
                Err(DecodeError::Corrupt)
            }
            _ => {
                // INVARIANT: as above.
                self.failed = true;
                Err(DecodeError::Failed)
            }
        }
    }
}

impl Drop for MicroLzma {
    fn drop(&mut self) {
        // SAFETY: `ptr` is our state (type invariant), freed once, here.
        unsafe { sys::xz_dec_microlzma_end(self.ptr.as_ptr()) };
    }
}

/// A decoder workspace of `size` bytes, allocated with `kvmalloc` and freed (`kvfree`) on
/// drop.
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

/// A zlib inflate context: the workspace of one raw DEFLATE decoder
/// (`zlib_inflate_workspacesize()` bytes), which [`Inflate::init`] starts a stream in.
pub(crate) struct Inflate {
    ws: Workspace,
}

impl Inflate {
    /// Allocates the workspace.
    ///
    /// # Errors
    ///
    /// `ENOMEM`.
    pub(crate) fn new() -> Result<Self> {
        // SAFETY: no preconditions.
        let sz = unsafe { sys::zlib_inflate_workspacesize() };
        Ok(Inflate {
            ws: Workspace::new(usize::try_from(sz).map_err(|_| EINVAL)?)?,
        })
    }

    /// Starts a raw DEFLATE stream (no zlib header) with the largest window
    /// (`zlib_inflateInit2(strm, -MAX_WBITS)`).
    ///
    /// # Errors
    ///
    /// `EINVAL` if zlib refuses.
    pub(crate) fn init(&mut self) -> Result<InflateStream<'_>> {
        let mut zs = sys::z_stream {
            workspace: self.ws.as_mut_ptr(),
            ..Default::default()
        };
        // SAFETY: `zs` is a zeroed stream whose workspace is `zlib_inflate_workspacesize()`
        // bytes (type invariant of `Workspace`, sized in `new`), borrowed exclusively by the
        // stream returned.
        if unsafe { sys::zlib_inflateInit2(&mut zs, z::RAW_MAX_WBITS) } != z::Z_OK {
            return Err(EINVAL);
        }
        // INVARIANT: set up above, its workspace borrowed for `'_`.
        Ok(InflateStream {
            zs,
            live: true,
            _ws: PhantomData,
        })
    }
}

/// A raw DEFLATE stream being decoded in an [`Inflate`] context (`z_stream`); ended
/// (`zlib_inflateEnd`) by [`InflateStream::end`] or on drop.
///
/// # Invariants
///
/// `zs` was set up by `zlib_inflateInit2` with a workspace that the stream borrows
/// exclusively for `'a`; `live` is false once `zlib_inflateEnd` has run.
pub(crate) struct InflateStream<'a> {
    zs: sys::z_stream,
    live: bool,
    _ws: PhantomData<&'a mut Workspace>,
}

impl InflateStream<'_> {
    /// Decodes from the start of `src` into the start of `dst` (`zlib_inflate(Z_SYNC_FLUSH)`).
    /// inflate keeps what it needs in its window, in the workspace, so the slices may change
    /// between calls.
    ///
    /// # Errors
    ///
    /// [`DecodeError::Corrupt`] for bad data, [`DecodeError::Failed`] otherwise (and once
    /// ended).
    pub(crate) fn run(&mut self, src: &[u8], dst: &mut [u8]) -> Result<Progress, DecodeError> {
        if !self.live {
            return Err(DecodeError::Failed);
        }
        let zs = &mut self.zs;
        zs.next_in = src.as_ptr();
        // `uLong` is the kernel's `c_ulong`, a `usize`.
        zs.avail_in = src.len();
        zs.next_out = dst.as_mut_ptr();
        zs.avail_out = dst.len();
        // SAFETY: `zs` was set up and not ended (type invariant, `live`), its workspace ours for
        // the stream's life; `next_in`/`next_out` are `src` and `dst`, readable and writable for
        // `avail_in`/`avail_out` bytes during the call, and inflate touches no other bytes of
        // them.
        let zerr = unsafe { sys::zlib_inflate(zs, z::Z_SYNC_FLUSH) };
        // OVERFLOW: inflate leaves at most what it was given.
        let (consumed, produced) = (src.len() - zs.avail_in, dst.len() - zs.avail_out);
        match zerr {
            z::Z_OK | z::Z_BUF_ERROR | z::Z_STREAM_END => Ok(Progress {
                consumed,
                produced,
                end: zerr == z::Z_STREAM_END,
            }),
            z::Z_DATA_ERROR => Err(DecodeError::Corrupt),
            _ => Err(DecodeError::Failed),
        }
    }

    /// Ends the stream (`zlib_inflateEnd`).
    ///
    /// # Errors
    ///
    /// `EIO` if zlib finds the stream broken.
    pub(crate) fn end(mut self) -> Result {
        if self.finish() {
            Ok(())
        } else {
            Err(EIO)
        }
    }

    /// Ends the stream if it is live; whether zlib found it sound.
    fn finish(&mut self) -> bool {
        if !self.live {
            return true;
        }
        // INVARIANT: not used again: `run` refuses and `finish` returns above.
        self.live = false;
        // SAFETY: `zs` was set up by `zlib_inflateInit2` and not ended (type invariant).
        unsafe { sys::zlib_inflateEnd(&mut self.zs) == z::Z_OK }
    }
}

impl Drop for InflateStream<'_> {
    fn drop(&mut self) {
        self.finish();
    }
}

/// A Zstandard decompression context: the workspace of one `zstd_dstream` for frames whose
/// window is at most `window` bytes (`zstd_dstream_workspace_bound(window)` bytes), which
/// [`Zstd::init`] starts a stream in.
pub(crate) struct Zstd {
    ws: Workspace,
    window: usize,
}

impl Zstd {
    /// Allocates the workspace for windows of up to `window` bytes.
    ///
    /// # Errors
    ///
    /// `ENOMEM`.
    pub(crate) fn new(window: usize) -> Result<Self> {
        // SAFETY: no preconditions.
        let sz = unsafe { sys::zstd_dstream_workspace_bound(window) };
        Ok(Zstd {
            ws: Workspace::new(sz)?,
            window,
        })
    }

    /// Starts a stream in the workspace (`zstd_init_dstream`).
    ///
    /// # Errors
    ///
    /// `ENOMEM` if the workspace cannot hold it.
    pub(crate) fn init(&mut self) -> Result<DStream<'_>> {
        // SAFETY: `ws` is `zstd_dstream_workspace_bound(window)` bytes, 8-byte aligned (type
        // invariant of `Workspace`, sized in `new`); the stream returned borrows it
        // exclusively.
        let ds = unsafe { sys::zstd_init_dstream(self.window, self.ws.as_mut_ptr(), self.ws.size) };
        // INVARIANT: a non-null result is a stream set up in the workspace, borrowed for `'_`.
        Ok(DStream {
            ds: NonNull::new(ds).ok_or(ENOMEM)?,
            _ws: PhantomData,
        })
    }
}

/// A Zstandard stream being decoded in a [`Zstd`] context (`zstd_dstream`); nothing to free,
/// it lives in the workspace.
///
/// # Invariants
///
/// `ds` was set up by `zstd_init_dstream` in a workspace the stream borrows exclusively for
/// `'a`.
pub(crate) struct DStream<'a> {
    ds: NonNull<sys::zstd_dstream>,
    _ws: PhantomData<&'a mut Workspace>,
}

impl DStream<'_> {
    /// Decodes from the start of `src` into the start of `dst` (`zstd_decompress_stream`);
    /// the stream has ended when a frame has and all of it is out. The stream keeps what it
    /// needs in its own buffers, in the workspace, so the slices may change between calls.
    ///
    /// # Errors
    ///
    /// [`DecodeError::Named`] with zstd's name for the error, or [`DecodeError::Failed`] if it
    /// has none.
    pub(crate) fn run(&mut self, src: &[u8], dst: &mut [u8]) -> Result<Progress, DecodeError> {
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
        // SAFETY: `ds` was set up in a workspace that is ours for the stream's life (type
        // invariant), used by this thread only (`&mut self`); `ib` and `ob` describe `src` and
        // `dst`, readable and writable for their sizes during the call, and zstd touches no
        // other bytes of them.
        let zerr = unsafe { sys::zstd_decompress_stream(self.ds.as_ptr(), &mut ob, &mut ib) };
        // SAFETY: no preconditions.
        if unsafe { sys::zstd_is_error(zerr) } != 0 {
            // SAFETY: no preconditions; the result is one of zstd's static error strings.
            let name = unsafe { sys::zstd_get_error_name(zerr) };
            if name.is_null() {
                return Err(DecodeError::Failed);
            }
            // SAFETY: a static NUL-terminated string (zstd's `ERR_getErrorString`).
            let name = unsafe { kernel::str::CStr::from_char_ptr(name) };
            return Err(name
                .to_str()
                .map_or(DecodeError::Failed, DecodeError::Named));
        }
        // 0: a frame ended, and all of it is out.
        Ok(Progress {
            consumed: ib.pos,
            produced: ob.pos,
            end: zerr == 0,
        })
    }
}

#[kunit_tests(erofs_rs_decompress)]
mod tests {
    use super::*;

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

    /// A raw DEFLATE stream of two stored blocks (RFC 1951, 3.2.4) of 3 bytes each: inflate
    /// gives them a step at a time as the input and output come, ends the stream after the
    /// last, and a second stream in the same context starts afresh; a bad block type is
    /// corrupt data.
    #[test]
    fn inflate_steps_through_stored_blocks() -> Result {
        let stream = [
            0, 3, 0, 0xfc, 0xff, b'a', b'b', b'c', 1, 3, 0, 0xfc, 0xff, b'd', b'e', b'f',
        ];
        let mut ctx = Inflate::new()?;
        for _ in 0..2 {
            let mut zs = ctx.init()?;
            let mut out = [0u8; 6];
            // The first block's header and two of its bytes, into room for one.
            let p = zs.run(&stream[..7], &mut out[..1]).map_err(|_| EINVAL)?;
            assert_eq!((p.produced, p.end), (1, false));
            let used = p.consumed;
            let p = zs.run(&stream[used..], &mut out[1..]).map_err(|_| EINVAL)?;
            assert_eq!(
                (p.consumed, p.produced, p.end),
                (stream.len() - used, 5, true)
            );
            assert_eq!(&out, b"abcdef");
            zs.end()?;
        }
        let mut zs = ctx.init()?;
        // BFINAL, BTYPE = 11 (reserved).
        assert_eq!(zs.run(&[7], &mut [0u8; 4]), Err(DecodeError::Corrupt));
        Ok(())
    }

    /// A MicroLZMA decoder that was never given a stream's sizes refuses input as corrupt
    /// (its compressed size is 0) rather than reading state it never had; an empty input is
    /// no progress.
    #[test]
    fn microlzma_starts_reset() -> Result {
        let mut xz = MicroLzma::new(64 * 1024)?;
        let mut out = [0u8; 16];
        let p = xz.run(&[], &mut out).map_err(|_| EINVAL)?;
        assert_eq!((p.consumed, p.produced, p.end), (0, 0, false));
        assert_eq!(xz.run(&[0x5d; 8], &mut out), Err(DecodeError::Corrupt));
        Ok(())
    }

    /// A Zstandard stream that is not a frame fails with zstd's name for it.
    #[test]
    fn zstd_names_bad_frames() -> Result {
        let mut ctx = Zstd::new(1 << 17)?;
        let mut ds = ctx.init()?;
        let mut out = [0u8; 16];
        assert_eq!(
            ds.run(&[1, 2, 3, 4, 5, 6, 7, 8], &mut out),
            Err(DecodeError::Named("Unknown frame descriptor"))
        );
        Ok(())
    }
}
