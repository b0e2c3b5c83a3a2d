// SPDX-License-Identifier: GPL-2.0-only
//! MicroLZMA through liblzma's `lzma_microlzma_decoder`: the only unsafe code of the tool.
//!
//! EROFS stores LZMA pclusters as MicroLZMA streams (an LZMA1 stream whose first byte holds the
//! properties, without end marker), which liblzma decodes since 5.3.2 given the exact
//! compressed size, the uncompressed size (exact, or a lower bound for partial decoding) and
//! the dictionary size. erofs-utils' fsck decodes them the same way.

use liblzma_sys as sys;

/// One decoder state, reused across pclusters so that liblzma keeps its dictionary buffer.
///
/// # Invariants
///
/// `strm` is a valid `lzma_stream`: zero-initialised (`LZMA_STREAM_INIT`) and then only
/// changed by liblzma; it is ended once, on drop.
pub struct Lzma {
    strm: Box<sys::lzma_stream>,
}

// SAFETY: the stream's internal state is owned by this value and never shared; liblzma keeps
// no thread-local state, so using it from another thread is fine.
unsafe impl Send for Lzma {}

impl Lzma {
    /// A new, idle decoder.
    pub fn new() -> Self {
        // SAFETY: `lzma_stream` is a plain C struct of pointers and integers, for which all
        // zeroes is `LZMA_STREAM_INIT`.
        let strm: sys::lzma_stream = unsafe { std::mem::zeroed() };
        // INVARIANT: zero-initialised, as `LZMA_STREAM_INIT`.
        Lzma {
            strm: Box::new(strm),
        }
    }

    /// Decodes the MicroLZMA stream `src` (exactly, without padding) into all of `dst`.
    ///
    /// With `exact`, the stream must end at `dst.len()`; otherwise decoding stops there.
    /// Returns a short description of the failure.
    pub fn decode(
        &mut self,
        src: &[u8],
        dst: &mut [u8],
        exact: bool,
        dict_size: u32,
    ) -> Result<(), &'static str> {
        let comp = u64::try_from(src.len()).map_err(|_| "pcluster too large")?;
        let uncomp = u64::try_from(dst.len()).map_err(|_| "output too large")?;
        // SAFETY: `self.strm` is valid (type invariant); liblzma (re)initialises the decoder
        // in it, reusing its allocations.
        let ret = unsafe {
            sys::lzma_microlzma_decoder(&mut *self.strm, comp, uncomp, u8::from(exact), dict_size)
        };
        if ret != sys::LZMA_OK {
            return Err("cannot set up the MicroLZMA decoder");
        }
        self.strm.next_in = src.as_ptr();
        self.strm.avail_in = src.len();
        self.strm.next_out = dst.as_mut_ptr();
        self.strm.avail_out = dst.len();
        // SAFETY: `next_in`/`avail_in` describe `src` and `next_out`/`avail_out` describe
        // `dst`, both borrowed for the whole call; liblzma reads and writes only within them.
        let ret = unsafe { sys::lzma_code(&mut *self.strm, sys::LZMA_FINISH) };
        let done = dst.len().saturating_sub(self.strm.avail_out);
        // The pointers into `src` and `dst` must not outlive this call.
        self.strm.next_in = std::ptr::null();
        self.strm.avail_in = 0;
        self.strm.next_out = std::ptr::null_mut();
        self.strm.avail_out = 0;
        match ret {
            sys::LZMA_STREAM_END if done == dst.len() => Ok(()),
            sys::LZMA_STREAM_END | sys::LZMA_OK | sys::LZMA_BUF_ERROR => {
                Err("unexpected end of stream")
            }
            sys::LZMA_MEM_ERROR => Err("out of memory"),
            _ => Err("corrupted compressed data"),
        }
    }
}

impl Drop for Lzma {
    fn drop(&mut self) {
        // SAFETY: `self.strm` is valid and ended only here; `lzma_end` accepts a stream that
        // was never initialised.
        unsafe { sys::lzma_end(&mut *self.strm) };
    }
}
