// SPDX-License-Identifier: MIT OR GPL-2.0-only
//! The decompression interface: what goes into a decompressor and what must come out.
//! C counterpart: fs/erofs/decompressor.c (`z_erofs_fixup_insize`, `z_erofs_transform_plain`)
//! and the request set up by fs/erofs/zdata.c.
//!
//! The decompressors themselves are the kernel's (LZ4, xz_dec for MicroLZMA, zlib inflate,
//! zstd); user-space tests plug crates in behind the same rules. For one [`ZMap`] with
//! [`MAP_MAPPED`](crate::erofs_core::zmap::MAP_MAPPED):
//!
//! * **Input.** The pcluster is `plen` bytes at `pa` (on the device, or in the metadata with
//!   `MAP_META`). Its offset in its first page, `pageofs_in`, is `pa % PAGE_SIZE` for inline
//!   pclusters (they come from the metadata page) and `blkoff(pa)` otherwise (0 unless encoded
//!   extents place the pcluster at a byte position).
//! * **Zero padding.** Compressed data (every algorithm below `Z_EROFS_COMPRESSION_MAX`) ends
//!   at the end of the pcluster and is preceded by zeroes (`LZ4_0PADDING`; always for the other
//!   algorithms). Strip them with [`fixup_insize`], scanning [`fixup_scan`] bytes: only the
//!   first block can be padding, and a first block of zeroes only is corruption. The rest,
//!   `plen - padding` bytes, is the exact compressed stream.
//! * **Output.** Decoding always starts at the extent's `la` and produces `outputsize` bytes:
//!   the extent up to the end of what is wanted, at most `llen`. The output starts at
//!   `pageofs_out = la % PAGE_SIZE` of its first page.
//! * **Partial decoding** ([`partial_decoding`]) unless the map is
//!   [`full_mapped`](ZMap::full_mapped) and all of `llen` is wanted. LZ4 then uses
//!   `LZ4_decompress_safe_partial(src, dst, insize, outputsize, outputsize)`, else
//!   `LZ4_decompress_safe(src, dst, insize, outputsize)`; either must return exactly
//!   `outputsize` ("unexpected end of stream" otherwise, "corrupted compressed data" for a
//!   negative result). The streaming algorithms stop once `outputsize` bytes are out; without
//!   partial decoding the stream must also end there.
//! * **Uncompressed pclusters** (`Z_EROFS_COMPRESSION_SHIFTED`/`_INTERLACED`) are copied by
//!   [`transform_plain`]; there is no padding to strip.
//! * **In place.** Output pages may be the input pages (in-place I/O). LZ4 decodes in place
//!   only without partial decoding, when the pcluster ends block aligned
//!   (`(pageofs_in + insize) % blksz == 0`) and the output has
//!   `LZ4_DECOMPRESS_INPLACE_MARGIN(insize)` spare bytes after it in its last page; otherwise
//!   the input is first copied to a per-CPU buffer.

use crate::erofs_core::{
    zmap::ZMap,
    Corruption,
    Result,
    Unsupported, //
};

/// How many bytes at the start of a pcluster may be zero padding: up to the end of the
/// pcluster's first block (`min(inputsize, blksz - pageofs_in)` in the C driver).
///
/// For inline pclusters the C driver takes `pageofs_in` in the page rather than the block,
/// which is the same since the pcluster lies in one block, except for an inline pcluster
/// starting at a block boundary that is not a page boundary, where the C driver scans nothing
/// and fails; this gives the intended `min(plen, blksz)` there.
pub fn fixup_scan(map: &ZMap, blksz: u64) -> usize {
    let pageofs_in = map.pa & blksz.saturating_sub(1);
    let scan = map.plen.min(blksz.saturating_sub(pageofs_in));
    usize::try_from(scan).unwrap_or(usize::MAX)
}

/// Whether the extent must be decoded partially: decode exactly `outputsize` bytes and stop,
/// without requiring the stream to end there (`pcl->partial`).
pub fn partial_decoding(map: &ZMap, outputsize: u64) -> bool {
    !map.full_mapped() || outputsize != map.llen
}

/// The number of leading zero bytes of the pcluster data in `src[..scan]`
/// (`z_erofs_fixup_insize`), `scan` being [`fixup_scan`]; the compressed stream is
/// `src[padding..]`.
///
/// # Errors
///
/// [`Corruption::CompressedDataStart`] if all of `src[..scan]` is zero (or empty).
pub fn fixup_insize(src: &[u8], scan: usize, nid: u64) -> Result<usize> {
    let pad = src.get(..scan.min(src.len())).unwrap_or(&[]);
    pad.iter()
        .position(|&b| b != 0)
        .ok_or(Corruption::CompressedDataStart(nid).into())
}

/// Copies an uncompressed pcluster to its extent (`z_erofs_transform_plain`), for
/// `Z_EROFS_COMPRESSION_SHIFTED` and, with `interlaced`, `Z_EROFS_COMPRESSION_INTERLACED`.
///
/// `src` is the whole pcluster (`plen` bytes, from `pageofs_in`) and `out` receives the
/// decoded bytes from the extent start `la` onward (`out.len()` is the output size, at most
/// the extent's `llen`). Shifted data is `src` itself. Interlaced data is rotated so that each
/// block keeps its in-block offset: with `r = blksz - la % blksz`, the first `min(r, out.len())`
/// output bytes come from `src[plen - r..]` (the tail of the pcluster) and the rest is `src`
/// from its start.
///
/// # Errors
///
/// [`Unsupported::PlainOutput`] if `out` is longer than `src` (C: `EOPNOTSUPP`), and
/// [`Corruption::NotEnoughPlainData`] for a block size of 0 or an interlaced pcluster shorter
/// than `r`.
pub fn transform_plain(
    interlaced: bool,
    src: &[u8],
    out: &mut [u8],
    la: u64,
    blksz: u64,
    nid: u64,
) -> Result<()> {
    if out.len() > src.len() {
        return Err(Unsupported::PlainOutput(nid).into());
    }
    let bad = Corruption::NotEnoughPlainData(nid);
    let (head, from) = if interlaced {
        let rotated = blksz
            .checked_sub(la.checked_rem(blksz).ok_or(bad)?)
            .ok_or(bad)?;
        let rotated = usize::try_from(rotated).map_err(|_| bad)?;
        // The tail is taken from `plen - rotated` even when less of it is wanted.
        (
            rotated.min(out.len()),
            src.len().checked_sub(rotated).ok_or(bad)?,
        )
    } else {
        (0, 0)
    };
    let (first, rest) = out.split_at_mut(head);
    let tail = src.get(from..).and_then(|t| t.get(..head)).ok_or(bad)?;
    first.copy_from_slice(tail);
    rest.copy_from_slice(src.get(..rest.len()).ok_or(bad)?);
    Ok(())
}

/// Where in-place I/O may read a pcluster of `cpages` device pages (C: the exclusive pages of
/// `z_erofs_scan_folio`, attached from the end by `z_erofs_attach_page`): into output pages of
/// its job `lo..end` (`lo`: the first byte that no earlier job writes, at or after the
/// extent's start) that start at or after `lo`, so that only this job and later ones write
/// them, after this job has taken its input out of them. The pages form the longest run of
/// pages the read holds (`present`), ending at the last such page of the job, and at most
/// `cpages` long; the pcluster's last `n` device pages go into them in order. Returns `n`
/// and the run's first page index (`page_shift` gives the page size), or `None`.
pub fn inplace_run(
    lo: u64,
    end: u64,
    cpages: u64,
    page_shift: u32,
    present: impl Fn(u64) -> bool,
) -> Option<(u64, u64)> {
    let page = 1u64.checked_shl(page_shift)?;
    let first = lo.checked_next_multiple_of(page)? >> page_shift;
    let last = end.checked_sub(1)? >> page_shift;
    if first > last || cpages == 0 {
        return None;
    }
    let top = (first..=last).rev().find(|&p| present(p))?;
    let mut bottom = top;
    let mut n = 1u64;
    while n < cpages {
        match bottom.checked_sub(1) {
            Some(b) if b >= first && present(b) => bottom = b,
            _ => break,
        }
        n = n.saturating_add(1);
    }
    Some((n, bottom))
}

#[cfg(test)]
mod tests {
    #![allow(
        clippy::indexing_slicing,
        clippy::unwrap_used,
        clippy::arithmetic_side_effects,
        clippy::as_conversions
    )]
    use super::*;
    use crate::erofs_core::{
        zmap::{
            MAP_MAPPED,
            MAP_PARTIAL_MAPPED, //
        },
        Error,
    };

    #[test]
    fn fixup_insize_finds_the_stream() {
        assert_eq!(fixup_insize(&[0, 0, 0, 7, 0, 1], 4, 9), Ok(3));
        assert_eq!(fixup_insize(&[5], 1, 9), Ok(0));
        assert_eq!(
            fixup_insize(&[0, 0, 0, 7], 3, 9),
            Err(Corruption::CompressedDataStart(9).into())
        );
        assert_eq!(
            fixup_insize(&[], 4096, 9),
            Err(Corruption::CompressedDataStart(9).into())
        );
        // A scan longer than the data is clamped.
        assert_eq!(fixup_insize(&[0, 2], 4096, 9), Ok(1));
    }

    #[test]
    fn scan_and_partial_rules() {
        let mut m = ZMap {
            la: 0,
            llen: 8192,
            pa: 4096 * 3,
            plen: 8192,
            flags: MAP_MAPPED,
            algorithmformat: 0,
        };
        assert_eq!(fixup_scan(&m, 4096), 4096);
        m.pa += 4000;
        m.plen = 50;
        assert_eq!(fixup_scan(&m, 4096), 50);
        m.plen = 500;
        assert_eq!(fixup_scan(&m, 4096), 96);
        assert!(!partial_decoding(&m, 8192));
        assert!(partial_decoding(&m, 4096));
        m.flags |= MAP_PARTIAL_MAPPED;
        assert!(partial_decoding(&m, 8192));
    }

    #[test]
    fn shifted_copies_the_prefix() {
        let src: std::vec::Vec<u8> = (0..100u8).collect();
        let mut out = [0u8; 60];
        transform_plain(false, &src, &mut out, 12345, 16, 1).unwrap();
        assert_eq!(&out[..], &src[..60]);
        let mut long = [0u8; 101];
        assert_eq!(
            transform_plain(false, &src, &mut long, 0, 16, 1),
            Err(Error::Unsupported(Unsupported::PlainOutput(1)))
        );
    }

    #[test]
    fn interlaced_rotates_by_the_in_block_offset() {
        // One 16-byte block written by mkfs for an extent starting at offset 5 of its block:
        // the first 11 bytes of data sit at 5..16, the rest at 0..5.
        let data: std::vec::Vec<u8> = (100..116u8).collect();
        let mut src = [0u8; 16];
        src[5..].copy_from_slice(&data[..11]);
        src[..5].copy_from_slice(&data[11..]);
        let mut out = [0u8; 16];
        transform_plain(true, &src, &mut out, 32 + 5, 16, 1).unwrap();
        assert_eq!(&out[..], &data[..]);
        // A shorter output takes only the rotated head.
        let mut out = [0u8; 4];
        transform_plain(true, &src, &mut out, 5, 16, 1).unwrap();
        assert_eq!(&out[..], &data[..4]);
        // Block size 0 is an error, not a division by zero.
        assert!(transform_plain(true, &src, &mut out, 5, 0, 1).is_err());
    }

    #[test]
    fn inplace_runs_end_at_the_last_page_held_and_never_touch_shared_heads() {
        let all = |_| true;
        // A 64 KiB extent at 0 of 16 pages, 4 device pages: the last 4 output pages.
        assert_eq!(inplace_run(0, 65536, 4, 12, all), Some((4, 12)));
        // An extent starting mid-page: its head page (shared with the job before) is out.
        assert_eq!(inplace_run(100, 8192, 4, 12, all), Some((1, 1)));
        // Fewer pages than the pcluster: all of them.
        assert_eq!(inplace_run(0, 8192, 4, 12, all), Some((2, 0)));
        // A tail page held by the job (ends mid-page) counts.
        assert_eq!(inplace_run(4096, 9000, 1, 12, all), Some((1, 2)));
        // Nothing starts inside the job.
        assert_eq!(inplace_run(100, 4000, 1, 12, all), None);
        assert_eq!(inplace_run(0, 0, 1, 12, all), None);
        assert_eq!(inplace_run(0, 4096, 0, 12, all), None);
        // A gap (a page cached already, not in the read) ends the run; a missing last page
        // moves it down.
        let held = |p: u64| p != 14 && p != 15;
        assert_eq!(inplace_run(0, 65536, 4, 12, held), Some((4, 10)));
        let gap = |p: u64| p != 13;
        assert_eq!(inplace_run(0, 65536, 4, 12, gap), Some((2, 14)));
        assert_eq!(inplace_run(0, 65536, 4, 12, |_| false), None);
        // No overflow at the top of the range.
        assert_eq!(inplace_run(u64::MAX - 10, u64::MAX, 1, 12, all), None);
        assert_eq!(inplace_run(0, 4096, 1, 64, all), None);
    }
}
