// SPDX-License-Identifier: GPL-2.0-only
//! LZ4 block decoding through liblz4 (the copy `lz4-sys` builds and links statically), as the
//! kernel and erofs-utils decode it: `LZ4_decompress_safe` for whole extents and
//! `LZ4_decompress_safe_partial` for partial decoding, which stops once the wanted prefix is
//! out instead of decoding the whole pcluster.

use std::ffi::{
    c_char,
    c_int, //
};

// `lz4-sys` declares `LZ4_decompress_safe` but not the partial decoder, which its liblz4
// (1.10) exports as public API (`LZ4LIB_API`, stable since 1.9): declare it here.
use lz4_sys::LZ4_decompress_safe;
extern "C" {
    fn LZ4_decompress_safe_partial(
        src: *const c_char,
        dst: *mut c_char,
        src_size: c_int,
        target_output_size: c_int,
        dst_capacity: c_int,
    ) -> c_int;
}

/// Decodes the LZ4 block `src` (exactly, without padding) into `dst`; with `partial`, only
/// the first `dst.len()` bytes of what it decodes to, else the block must decode to exactly
/// `dst.len()` bytes.
///
/// Returns liblz4's result: the number of bytes written (which the caller compares with
/// `dst.len()`), or a negative number for corrupted data.
pub fn decode(src: &[u8], dst: &mut [u8], partial: bool) -> i32 {
    let (Ok(srclen), Ok(dstlen)) = (c_int::try_from(src.len()), c_int::try_from(dst.len())) else {
        return -1;
    };
    let (s, d) = (
        src.as_ptr().cast::<c_char>(),
        dst.as_mut_ptr().cast::<c_char>(),
    );
    if partial {
        // SAFETY: liblz4's safe decoders read at most `srclen` bytes from `s` and write at
        // most `dstlen` bytes to `d` (`dst_capacity`), whatever the input; both buffers are
        // valid for those lengths and borrowed across the call.
        unsafe { LZ4_decompress_safe_partial(s, d, srclen, dstlen, dstlen) }
    } else {
        // SAFETY: as above (`maxDecompressedSize` bounds the writes).
        unsafe { LZ4_decompress_safe(s, d, srclen, dstlen) }
    }
}
