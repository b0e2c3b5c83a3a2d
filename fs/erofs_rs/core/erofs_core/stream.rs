// SPDX-License-Identifier: MIT OR GPL-2.0-only
//! Feeding a stream decoder (MicroLZMA, DEFLATE, Zstandard) whose input was partly read in
//! place, into the pages it decodes to. C counterpart: `z_erofs_stream_switch_bufs` in
//! fs/erofs/decompressor.c.
//!
//! The decoders themselves are the caller's (the kernel's, or crates in user space): [`Io::drive`]
//! calls one step of the decoder at a time, with input and output room it chooses so that the
//! output never overwrites a byte of the stream the decoder has yet to read. Bytes in the way
//! are first copied to the caller's [`Spill`] buffer, the only memory this needs.

use crate::erofs_core::{
    Corruption,
    Error,
    Result, //
};
use core::ops::Range;

/// The reason given when a stream ends before its output is full, or stops making progress
/// (C's wording); decoders use it for their own "needs more input" answers too.
pub const UNEXPECTED_END: &str = "unexpected end of stream";

/// The least output room, in pages, that [`Io::drive`] gives a decoder before the end of the
/// output: each call may only fill up to the stream's first byte still to be read, which a
/// compressed stream approaches by ever smaller steps near its end; below this, the bytes in
/// the way are copied aside instead.
pub const MIN_ROOM_PAGES: usize = 4;

/// The buffer that bytes of the stream read in place are copied to before the output
/// overwrites them: a growable byte buffer of the caller's, reused across decodes.
///
/// An implementation that misbehaves (forgets bytes, gives others) only makes the decode give
/// wrong bytes or fail.
pub trait Spill {
    /// Forgets the bytes held, keeping the memory for later ones.
    fn clear(&mut self);

    /// Appends `bytes` after those held.
    ///
    /// # Errors
    ///
    /// [`Error::NoMemory`] when the buffer cannot grow.
    fn extend_from_slice(&mut self, bytes: &[u8]) -> Result<()>;

    /// The bytes held, in the order they were appended.
    fn as_bytes(&self) -> &[u8];
}

/// A stream decoder's buffers when part of its input was read in place (C's in-place I/O):
/// the stream is `ext`, then bytes `lent` of `buf`, and it decodes into bytes `out` of `buf`,
/// which start at or before `lent` and overwrite it as they reach it.
///
/// Both may come in pieces (pages, or runs of pages, where they lie in memory: C feeds its
/// stream decoders page by page instead of mapping them side by side): `ext` is its pieces
/// one after the other, and so is `buf`, whose positions (`lent`, `out`) count across its
/// pieces. A decoder is never given more than one piece at a time.
///
/// Before the output reaches an input byte the decoder has yet to read, the rest of that page
/// of `lent` is copied to `spill` and read from there (C: `z_erofs_stream_switch_bufs`), so the
/// stream is copied only where the output catches up with it, never whole.
///
/// Any values are safe: positions that do not fit the pieces give [`Error::StreamLayout`].
pub struct Io<'a, 'b, S> {
    /// The stream's first bytes, outside `buf` (device pages), after its zero padding.
    pub ext: &'a [&'b [u8]],
    /// The pages the output goes to.
    pub buf: &'a mut [&'b mut [u8]],
    /// The rest of the stream, in `buf`: an empty range if none.
    pub lent: Range<usize>,
    /// Where the decoded bytes go.
    pub out: Range<usize>,
    /// Where bytes of `lent` are copied before the output overwrites them; reused by the
    /// caller across pclusters.
    pub spill: &'a mut S,
}

/// What one call of a decoder did.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Step {
    /// The input bytes it used, from the start of those it was given.
    pub used: usize,
    /// The output bytes it made, from the start of the room it was given.
    pub made: usize,
    /// Whether the stream ended.
    pub end: bool,
}

/// The piece of `parts` (laid one after the other) that holds byte `pos`, and `pos`'s offset
/// in it; `None` past their end.
fn locate<T: AsRef<[u8]>>(parts: &[T], mut pos: usize) -> Option<(usize, usize)> {
    for (k, p) in parts.iter().enumerate() {
        let n = p.as_ref().len();
        if pos < n {
            return Some((k, pos));
        }
        // OVERFLOW: `pos >= n` just above.
        pos = pos.wrapping_sub(n);
    }
    None
}

/// The bytes of `parts` (laid one after the other) from `pos` on, up to `end` and to the end
/// of `pos`'s piece: an empty slice when `pos == end`; `None` when `pos` is past `end` or past
/// the pieces' end.
pub fn piece<T: AsRef<[u8]>>(parts: &[T], pos: usize, end: usize) -> Option<&[u8]> {
    let len = end.checked_sub(pos)?;
    if len == 0 {
        return Some(&[]);
    }
    let (k, off) = locate(parts, pos)?;
    let p = parts.get(k)?.as_ref();
    p.get(off..p.len().min(off.checked_add(len)?))
}

/// As [`piece`], writable.
fn piece_mut<'p>(parts: &'p mut [&mut [u8]], pos: usize, end: usize) -> Option<&'p mut [u8]> {
    let len = end.checked_sub(pos)?;
    if len == 0 {
        return Some(&mut []);
    }
    let (k, off) = locate(parts, pos)?;
    let p = parts.get_mut(k)?;
    let stop = p.len().min(off.checked_add(len)?);
    p.get_mut(off..stop)
}

/// Bytes `src..src_end` of `parts` to read (up to the end of `src`'s piece) and bytes
/// `dst..dst_end` to write (up to the end of `dst`'s piece), at once: `dst_end <= src`, so the
/// two never overlap.
fn split_pieces<'p>(
    parts: &'p mut [&mut [u8]],
    (src, src_end): (usize, usize),
    (dst, dst_end): (usize, usize),
) -> Option<(&'p [u8], &'p mut [u8])> {
    if dst > dst_end || dst_end > src || src >= src_end {
        return None;
    }
    let (ks, os) = locate(parts, src)?;
    let (slen, dlen) = (src_end.checked_sub(src)?, dst_end.checked_sub(dst)?);
    if dlen == 0 {
        return Some((piece(&*parts, src, src_end)?, &mut []));
    }
    let (kd, od) = locate(parts, dst)?;
    if kd == ks {
        let (head, tail) = parts.get_mut(ks)?.split_at_mut_checked(os)?;
        let dstop = head.len().min(od.checked_add(dlen)?);
        let sstop = tail.len().min(slen);
        return Some((tail.get(..sstop)?, head.get_mut(od..dstop)?));
    }
    // `dst < src`, so its piece comes first.
    let (before, after) = parts.split_at_mut_checked(ks)?;
    let s = after.first()?;
    let d = before.get_mut(kd)?;
    let dstop = d.len().min(od.checked_add(dlen)?);
    let sstop = s.len().min(os.checked_add(slen)?);
    Some((s.get(os..sstop)?, d.get_mut(od..dstop)?))
}

/// The bytes of `parts`, laid one after the other; `None` if they overflow.
fn total<T: AsRef<[u8]>>(parts: &[T]) -> Option<usize> {
    parts
        .iter()
        .try_fold(0usize, |n, p| n.checked_add(p.as_ref().len()))
}

impl<S: Spill> Io<'_, '_, S> {
    /// The bytes of `ext`; `None` if they overflow.
    pub fn extlen(&self) -> Option<usize> {
        total(self.ext)
    }

    /// The bytes of `buf`; `None` if they overflow.
    pub fn buflen(&self) -> Option<usize> {
        total(self.buf)
    }

    /// The stream's length, if it fits the decoders' 32-bit counts.
    pub fn inlen(&self) -> Option<u32> {
        let n = self.extlen()?.checked_add(self.lent.len())?;
        u32::try_from(n).ok()
    }

    /// The output's length, if it fits the decoders' 32-bit counts.
    pub fn outlen(&self) -> Option<u32> {
        u32::try_from(self.out.len()).ok()
    }

    /// Whether `lent` and `out` lie in `buf` and the output starts at or before the stream
    /// read in place, as [`Io::drive`] needs.
    pub fn fits(&self) -> bool {
        let Some(blen) = self.buflen() else {
            return false;
        };
        let (lent, out) = (&self.lent, &self.out);
        lent.start <= lent.end
            && lent.end <= blen
            && out.start <= out.end
            && out.end <= blen
            && (lent.is_empty() || out.start <= lent.start)
    }

    /// Feeds the stream to `step` (one call of a decoder, with the input and the output room
    /// it may use) until the output is full, for pages of `PAGE` bytes (where copies aside
    /// stop); `full_ends`: a full output ends the decode even if the decoder has not seen the
    /// stream's end (`partial` DEFLATE, Zstandard). Gives the bytes of the stream copied aside.
    ///
    /// The output room given never reaches a byte of `lent` the decoder has yet to read, so
    /// what it reads is always the stream. Each call gets input from one piece and output room
    /// in one piece. A call that neither uses input nor makes output ends the decode: the
    /// stream is short (MicroLZMA would otherwise ask for more forever).
    ///
    /// # Errors
    ///
    /// * [`Corruption::Decode`] with `step`'s reason when it fails, and with
    ///   [`UNEXPECTED_END`] when the stream ends before the output is full or a call makes no
    ///   progress;
    /// * [`Error::StreamLayout`] when the buffers do not [fit](Io::fits), or `step` claims
    ///   more than it was given;
    /// * [`Spill::extend_from_slice`]'s error.
    pub fn drive<const PAGE: usize>(
        self,
        full_ends: bool,
        mut step: impl FnMut(&[u8], &mut [u8]) -> core::result::Result<Step, &'static str>,
    ) -> Result<usize> {
        let bad = Error::StreamLayout;
        if !self.fits() {
            return Err(bad);
        }
        let e = self.extlen().ok_or(bad)?;
        let Io {
            ext,
            buf,
            lent,
            out,
            spill,
        } = self;
        let l = lent.len();
        let min_room = PAGE.saturating_mul(MIN_ROOM_PAGES);
        // The input used: bytes of `ext`, then of `lent`.
        let mut cur = 0usize;
        // Where the output goes next.
        let mut at = out.start;
        // `lent[lo..hi]` is copied in `spill[..hi - lo]`.
        let (mut lo, mut hi) = (0usize, 0usize);
        // Bytes copied in all.
        let mut copied = 0usize;
        loop {
            // The first byte of `lent` still to be read where it is: the output stops there.
            let c = cur.saturating_sub(e);
            let need = hi.max(c);
            let limit = if need < l {
                // OVERFLOW: `lent.start + need < lent.end`.
                out.end.min(lent.start.wrapping_add(need))
            } else {
                out.end
            };
            // (`at <= limit`: the output never goes past it, and it only grows.)
            if limit < out.end && limit.saturating_sub(at) < min_room {
                // The output has caught up with the stream, or nearly: copy the rest of that
                // page aside, rather than decode a little at a time up to it.
                if c >= hi {
                    // Everything copied before was read: start again.
                    spill.clear();
                    (lo, hi) = (c, c);
                }
                // OVERFLOW: `hi == need < l`, so `from < lent.end`.
                let from = lent.start.wrapping_add(hi);
                let inpage = from.checked_rem(PAGE).ok_or(bad)?;
                let n = PAGE.saturating_sub(inpage).min(l.saturating_sub(hi));
                // (Up to the end of its piece: the rest, if any, on the next turn.)
                let bytes = piece(&*buf, from, from.saturating_add(n)).ok_or(bad)?;
                if bytes.is_empty() {
                    return Err(bad);
                }
                spill.extend_from_slice(bytes)?;
                // OVERFLOW: at most `l - hi` (`n`), and bytes copied are in memory.
                hi = hi.wrapping_add(bytes.len());
                copied = copied.wrapping_add(bytes.len());
                continue;
            }
            let (src, dst) = if cur < e {
                (piece(ext, cur, e), piece_mut(buf, at, limit))
            } else if c < hi {
                // `c >= lo`: copying starts at the input used.
                let held = spill.as_bytes();
                (
                    held.get(c.saturating_sub(lo)..hi.saturating_sub(lo)),
                    piece_mut(buf, at, limit),
                )
            } else if c < l {
                // Read in place: `limit <= lent.start + c`, so the output stays before it.
                // OVERFLOW: `lent.start + c < lent.end`.
                match split_pieces(buf, (lent.start.wrapping_add(c), lent.end), (at, limit)) {
                    Some((s, d)) => (Some(s), Some(d)),
                    None => (None, None),
                }
            } else {
                (Some(&[][..]), piece_mut(buf, at, limit))
            };
            let (Some(src), Some(dst)) = (src, dst) else {
                return Err(bad);
            };
            let (slen, dlen) = (src.len(), dst.len());
            let s = step(src, dst).map_err(Corruption::Decode)?;
            if s.used > slen || s.made > dlen {
                return Err(bad);
            }
            // OVERFLOW: at most the lengths of the slices just given, which lie in the buffers.
            cur = cur.wrapping_add(s.used);
            at = at.wrapping_add(s.made);
            if s.end {
                return if at == out.end {
                    Ok(copied)
                } else {
                    Err(Corruption::Decode(UNEXPECTED_END).into())
                };
            }
            if at == out.end && full_ends {
                return Ok(copied);
            }
            if s.used == 0 && s.made == 0 {
                return Err(Corruption::Decode(UNEXPECTED_END).into());
            }
        }
    }
}

#[cfg(test)]
mod tests {
    #![expect(
        clippy::indexing_slicing,
        clippy::arithmetic_side_effects,
        clippy::unwrap_used,
        clippy::panic,
        clippy::as_conversions,
        reason = "test code: a panic is a failed test"
    )]
    use super::*;
    use std::{
        vec,
        vec::Vec, //
    };

    impl Spill for Vec<u8> {
        fn clear(&mut self) {
            Vec::clear(self);
        }

        fn extend_from_slice(&mut self, bytes: &[u8]) -> Result<()> {
            Vec::extend_from_slice(self, bytes);
            Ok(())
        }

        fn as_bytes(&self) -> &[u8] {
            self
        }
    }

    /// A spill buffer that cannot grow past `cap` bytes.
    struct Small {
        held: Vec<u8>,
        cap: usize,
    }

    impl Spill for Small {
        fn clear(&mut self) {
            self.held.clear();
        }

        fn extend_from_slice(&mut self, bytes: &[u8]) -> Result<()> {
            if self.held.len() + bytes.len() > self.cap {
                return Err(Error::NoMemory);
            }
            self.held.extend_from_slice(bytes);
            Ok(())
        }

        fn as_bytes(&self) -> &[u8] {
            &self.held
        }
    }

    /// A stand-in for a stream decoder: each input byte `b` stands for `1 + b % ratio` copies
    /// of itself, and the stream ends after its last byte (which the decoder knows, as a real
    /// stream marks its end). It keeps what it has read until it has room to write it, and
    /// takes at most `max_in` bytes and makes at most `max_out` bytes per call, as real
    /// decoders stop at their own block boundaries.
    struct Expand {
        /// Input bytes still to read.
        left: usize,
        /// Copies of `byte` still to write.
        pending: usize,
        byte: u8,
        ratio: u8,
        max_in: usize,
        max_out: usize,
    }

    impl Expand {
        fn new(inlen: usize, ratio: u8, max_in: usize, max_out: usize) -> Self {
            Expand {
                left: inlen,
                pending: 0,
                byte: 0,
                ratio: ratio.max(1),
                max_in: max_in.max(1),
                max_out: max_out.max(1),
            }
        }

        fn step(&mut self, src: &[u8], dst: &mut [u8]) -> core::result::Result<Step, &'static str> {
            let room = dst.len().min(self.max_out);
            let (mut used, mut made) = (0, 0);
            loop {
                while self.pending > 0 && made < room {
                    dst[made] = self.byte;
                    made += 1;
                    self.pending -= 1;
                }
                if self.pending > 0 {
                    break;
                }
                if self.left == 0 {
                    return Ok(Step {
                        used,
                        made,
                        end: true,
                    });
                }
                if used == src.len() || used == self.max_in {
                    break;
                }
                self.byte = src[used];
                self.pending = 1 + usize::from(self.byte % self.ratio);
                used += 1;
                self.left -= 1;
            }
            Ok(Step {
                used,
                made,
                end: false,
            })
        }
    }

    /// All that [`Expand`] makes of `stream`.
    fn expand(stream: &[u8], ratio: u8) -> Vec<u8> {
        let ratio = ratio.max(1);
        stream
            .iter()
            .flat_map(|&b| core::iter::repeat_n(b, 1 + usize::from(b % ratio)))
            .collect()
    }

    /// Bytes that look like a stream: no runs, every value.
    fn sample(n: usize) -> Vec<u8> {
        (0..n).map(|i| (i * 131 + i / 7) as u8).collect()
    }

    /// The lengths of the pieces of `len` bytes cut at the sizes of `sizes`, in turn (the last
    /// piece takes the rest); one piece if `sizes` is empty.
    fn piece_lens(mut len: usize, sizes: &[usize]) -> Vec<usize> {
        let mut lens = Vec::new();
        while len > 0 {
            let n = if sizes.is_empty() {
                len
            } else {
                sizes[lens.len() % sizes.len()].clamp(1, len)
            };
            lens.push(n);
            len -= n;
        }
        lens
    }

    /// `buf` in pieces of the sizes of `sizes` ([`piece_lens`]).
    fn split<'b>(mut buf: &'b mut [u8], sizes: &[usize]) -> Vec<&'b mut [u8]> {
        let mut parts = Vec::new();
        for n in piece_lens(buf.len(), sizes) {
            let (p, rest) = buf.split_at_mut(n);
            parts.push(p);
            buf = rest;
        }
        parts
    }

    /// As [`split`], read-only.
    fn split_ref<'b>(mut buf: &'b [u8], sizes: &[usize]) -> Vec<&'b [u8]> {
        let mut parts = Vec::new();
        for n in piece_lens(buf.len(), sizes) {
            let (p, rest) = buf.split_at(n);
            parts.push(p);
            buf = rest;
        }
        parts
    }

    /// A layout of one decode: the stream's first `ext` bytes outside, the rest in place
    /// `gap` bytes after the output's start (at `off`), buffers split as `sizes` says; the
    /// decoder expects `short` bytes more than the stream has.
    struct Layout<'s> {
        short: usize,
        ext: usize,
        off: usize,
        gap: usize,
        outlen: usize,
        sizes: &'s [usize],
        ext_sizes: &'s [usize],
    }

    /// Decodes `stream` laid out as `lay` with [`Expand`], pages of `PAGE` bytes: the output
    /// and the bytes copied aside, or the error.
    fn run<const PAGE: usize>(
        stream: &[u8],
        lay: &Layout<'_>,
        dec: (u8, usize, usize),
        full_ends: bool,
    ) -> Result<(Vec<u8>, usize)> {
        let (ext, rest) = stream.split_at(lay.ext);
        let lstart = lay.off + lay.gap;
        let out = lay.off..lay.off + lay.outlen;
        let len = out.end.max(lstart + rest.len()) + 3;
        let mut buf = vec![0xa5u8; len];
        buf[lstart..lstart + rest.len()].copy_from_slice(rest);
        let mut spill = Vec::new();
        let exts = split_ref(ext, lay.ext_sizes);
        let mut parts = split(&mut buf, lay.sizes);
        let mut d = Expand::new(stream.len() + lay.short, dec.0, dec.1, dec.2);
        let copied = Io {
            ext: &exts,
            buf: &mut parts,
            lent: lstart..lstart + rest.len(),
            out: out.clone(),
            spill: &mut spill,
        }
        .drive::<PAGE>(full_ends, |s, o| d.step(s, o))?;
        assert!(copied <= rest.len());
        drop(parts);
        Ok((buf[out].to_vec(), copied))
    }

    /// The same stream decodes to the same bytes from a separate buffer and read in place,
    /// at any offset after the output's start, in any pieces, by decoders of any step sizes;
    /// bytes are copied aside only when the output comes near the stream.
    fn in_place_matches<const PAGE: usize>() {
        let stream = sample(3000);
        let want = expand(&stream, 4);
        let n = want.len();
        let page = [PAGE];
        let odd = [7, PAGE, 1, 3 * PAGE + 5, 100];
        for full_ends in [false, true] {
            for dec in [
                (4, usize::MAX, usize::MAX),
                (4, 1, 3),
                (4, 17, 5),
                (4, 1000, 2 * PAGE),
            ] {
                for sizes in [&[][..], &page[..], &odd[..]] {
                    for ext in [0, 1, 100, 1500, 3000] {
                        for off in [0, 5, PAGE - 1] {
                            for gap in [0, 1, PAGE - 1, PAGE, 1000, n, n + MIN_ROOM_PAGES * PAGE] {
                                let lay = Layout {
                                    short: 0,
                                    ext,
                                    off,
                                    gap,
                                    outlen: n,
                                    sizes,
                                    ext_sizes: &odd,
                                };
                                let (got, copied) = run::<PAGE>(&stream, &lay, dec, full_ends)
                                    .unwrap_or_else(|e| panic!("{e:?} at {ext} {off} {gap}"));
                                assert!(got == want, "wrong bytes at {ext} {off} {gap} {dec:?}");
                                if ext == stream.len() || gap >= n + MIN_ROOM_PAGES * PAGE {
                                    assert_eq!(copied, 0);
                                }
                                if ext == 0 && gap == 0 {
                                    // The output starts on the stream: it catches up at once.
                                    assert!(copied > 0);
                                }
                            }
                        }
                    }
                }
            }
        }
    }

    #[test]
    fn in_place_matches_separate_small_pages() {
        in_place_matches::<64>();
    }

    #[test]
    fn in_place_matches_separate_4k_pages() {
        in_place_matches::<4096>();
    }

    /// A partial decode (`full_ends`) stops at a full output and gives its first bytes; a
    /// whole one fails there, as the stream goes on.
    #[test]
    fn partial_output() {
        let stream = sample(2000);
        let want = expand(&stream, 3);
        for ext in [0, 700, 2000] {
            for gap in [0, 64, 5000] {
                let lay = Layout {
                    short: 0,
                    ext,
                    off: 10,
                    gap,
                    outlen: 3000,
                    sizes: &[64],
                    ext_sizes: &[],
                };
                let (got, _) = run::<64>(&stream, &lay, (3, 9, 70), true).unwrap();
                assert!(got[..] == want[..3000]);
                let res = run::<64>(&stream, &lay, (3, 9, 70), false);
                assert_eq!(res.err(), Some(Corruption::Decode(UNEXPECTED_END).into()));
            }
        }
    }

    /// A stream cut short, or whose output is longer than it decodes to, fails as ended too
    /// early, not by waiting for more.
    #[test]
    fn short_stream_fails() {
        let stream = sample(2000);
        let n = expand(&stream, 4).len();
        let end = Err(Error::from(Corruption::Decode(UNEXPECTED_END)));
        for ext in [0, 1000, 2000] {
            for full_ends in [false, true] {
                // The decoder expects one more byte than it gets.
                let lay = Layout {
                    short: 1,
                    ext: ext.min(1999),
                    off: 0,
                    gap: 100,
                    outlen: n,
                    sizes: &[64],
                    ext_sizes: &[10],
                };
                let short = run::<64>(&stream[..1999], &lay, (4, 5, 7), full_ends);
                assert_eq!(short.map(|_| ()), end);
                let lay = Layout {
                    short: 0,
                    outlen: n + 1,
                    ..lay
                };
                let long = run::<64>(&stream, &lay, (4, 5, 7), full_ends);
                assert_eq!(long.map(|_| ()), end);
            }
        }
    }

    /// A decoder that stops making progress, or refuses the stream, ends the decode with its
    /// reason; one that claims bytes it was not given is refused.
    #[test]
    fn decoder_failures() {
        let stream = sample(500);
        let mut buf = vec![0u8; 4096];
        buf[1000..1500].copy_from_slice(&stream);
        let mut spill = Vec::new();
        let mut drive = |f: &mut dyn FnMut(&[u8], &mut [u8]) -> _| {
            let mut parts = split(&mut buf, &[64]);
            Io {
                ext: &[],
                buf: &mut parts,
                lent: 1000..1500,
                out: 0..2000,
                spill: &mut spill,
            }
            .drive::<64>(false, f)
        };
        let mut d = Expand::new(500, 4, 3, 3);
        let mut calls = 0;
        let stall = drive(&mut |s, o| {
            calls += 1;
            if calls > 10 {
                return Ok(Step {
                    used: 0,
                    made: 0,
                    end: false,
                });
            }
            d.step(s, o)
        });
        assert_eq!(stall, Err(Corruption::Decode(UNEXPECTED_END).into()));
        let refused = drive(&mut |_, _| Err("corrupted compressed data"));
        assert_eq!(
            refused,
            Err(Corruption::Decode("corrupted compressed data").into())
        );
        let over = drive(&mut |s, o| {
            Ok(Step {
                used: s.len() + 1,
                made: o.len(),
                end: false,
            })
        });
        assert_eq!(over, Err(Error::StreamLayout));
        let over = drive(&mut |s, o| {
            Ok(Step {
                used: s.len(),
                made: o.len() + 1,
                end: false,
            })
        });
        assert_eq!(over, Err(Error::StreamLayout));
    }

    /// Buffers that do not fit together are refused before any decoder call, and a spill
    /// buffer that cannot grow fails the decode with its error.
    #[test]
    fn layouts_refused_and_spill_failure() {
        let mut buf = vec![0u8; 256];
        let mut spill = Vec::new();
        let mut called = false;
        for (lent, out) in [
            (10..20, 11..30),
            (10..300, 0..30),
            (10..20, 0..257),
            #[expect(clippy::reversed_empty_ranges, reason = "ranges that do not fit")]
            (20..10, 0..5),
            #[expect(clippy::reversed_empty_ranges, reason = "ranges that do not fit")]
            (0..0, 5..4),
        ] {
            let mut parts = split(&mut buf, &[64]);
            let io = Io {
                ext: &[],
                buf: &mut parts,
                lent,
                out,
                spill: &mut spill,
            };
            assert!(!io.fits());
            let res = io.drive::<64>(true, |_, _| {
                called = true;
                Err("called")
            });
            assert_eq!(res, Err(Error::StreamLayout));
        }
        assert!(!called);
        // An output past what the pieces hold but not the stream's: all fits.
        let mut parts = split(&mut buf, &[64]);
        let io = Io {
            ext: &[],
            buf: &mut parts,
            lent: 0..0,
            out: 0..256,
            spill: &mut spill,
        };
        assert!(io.fits());
        // Caught up at once: the first page of the stream is copied, then no more room.
        let stream = sample(300);
        let mut buf = vec![0u8; 2048];
        buf[0..300].copy_from_slice(&stream);
        let mut parts = split(&mut buf, &[64]);
        let mut small = Small {
            held: Vec::new(),
            cap: 100,
        };
        let mut d = Expand::new(300, 4, 8, 8);
        let res = Io {
            ext: &[],
            buf: &mut parts,
            lent: 0..300,
            out: 0..2000,
            spill: &mut small,
        }
        .drive::<64>(false, |s, o| d.step(s, o));
        assert_eq!(res, Err(Error::NoMemory));
        assert!(small.held.len() <= 100);
    }

    /// [`split_pieces`] gives the bytes to read and to write from one piece or two, never
    /// overlapping, each up to its piece's end.
    #[test]
    fn split_pieces_keeps_apart() {
        let mut a = [1u8; 8];
        let mut b = [2u8; 8];
        let mut parts = [&mut a[..], &mut b[..]];
        // Same piece: the write ends where the read starts.
        let (s, d) = split_pieces(&mut parts, (5, 16), (1, 5)).unwrap();
        assert_eq!((s.len(), d.len()), (3, 4));
        // Two pieces: each stops at its own piece's end.
        let (s, d) = split_pieces(&mut parts, (9, 12), (6, 9)).unwrap();
        assert_eq!((s, d.len()), (&[2u8, 2, 2][..], 2));
        // Overlap, or a read past the end: refused.
        assert!(split_pieces(&mut parts, (5, 16), (4, 6)).is_none());
        assert!(split_pieces(&mut parts, (16, 17), (0, 1)).is_none());
        // Nothing to write: only the read.
        let (s, d) = split_pieces(&mut parts, (3, 5), (3, 3)).unwrap();
        assert_eq!((s.len(), d.len()), (2, 0));
    }

    /// [`piece`] stops at `end` and at its piece's end; past the pieces, or backwards, is
    /// `None`, and an empty range is empty wherever it is.
    #[test]
    fn piece_stops_at_ends() {
        let parts: [&[u8]; 3] = [&[1, 2, 3], &[4], &[5, 6]];
        assert_eq!(piece(&parts, 1, 6), Some(&[2u8, 3][..]));
        assert_eq!(piece(&parts, 1, 2), Some(&[2u8][..]));
        assert_eq!(piece(&parts, 3, 6), Some(&[4u8][..]));
        assert_eq!(piece(&parts, 5, 6), Some(&[6u8][..]));
        assert_eq!(piece(&parts, 6, 7), None);
        assert_eq!(piece(&parts, 4, 3), None);
        assert_eq!(piece(&parts, 9, 9), Some(&[][..]));
    }
}
