// SPDX-License-Identifier: GPL-2.0-only
//! Fuzz target: erofs_rs's format core on arbitrary bytes taken as an image.
//!
//! Parses the superblock (checksum rewritten, see [`erofs_fuzz::fix_sb_checksum`]), the
//! compression configurations, the device table and the long xattr prefixes, then walks the
//! tree from the root (bounded): every inode, its xattrs (iterated, looked up, filtered), its
//! block or chunk map, the dirents of uncompressed directories (iterated and looked up), the
//! lcluster indexes or encoded extents of compressed files, and the core's decompression
//! fixups on every pcluster (padding scan and stripping, shifted and interlaced copies).
//! Every `Err` is an answer; only panics, aborts and timeouts are findings.
//!
//! The input's first [`STREAM_PARAMS`] bytes (zeroes before an image's superblock) also lay
//! out a stream decode read partly in place, which the core's buffer switching
//! ([`stream::Io::drive`]) feeds to a stand-in decoder: its output must be what the same
//! stream decodes to from a separate buffer, whatever the pieces, offsets and step sizes.
#![no_main]

use erofs_core::{
    decompress,
    dirent::{self, DirBlock},
    inode::{read_inode, InodeInfo},
    map::{self, MapKind},
    ondisk,
    sb::{SbInfo, METABOX_POS},
    stream::{self, Spill, Step},
    xattr,
    zmap::{self, ZInfo},
    Corruption, Error, MetaRead, Nid, Result,
};
use libfuzzer_sys::fuzz_target;
use std::collections::{HashSet, VecDeque};

/// Inodes visited per input.
const MAX_INODES: usize = 256;
/// Extents mapped per inode.
const MAX_EXTENTS: usize = 64;
/// Directory blocks read per directory.
const MAX_DIR_BLOCKS: u64 = 32;
/// Largest pcluster or output handled (the core allows 1 MiB + 1 block).
const MAX_BUF: u64 = 2 << 20;

const EIO: i32 = 5;

/// The image in memory, plus the metabox inode's data when it is uncompressed.
struct Mem<'a> {
    img: &'a [u8],
    metabox: Vec<u8>,
}

impl MetaRead for Mem<'_> {
    fn read_meta(&self, pos: u64, buf: &mut [u8]) -> Result<()> {
        let (src, pos) = if pos & METABOX_POS != 0 {
            (&self.metabox[..], pos & !METABOX_POS)
        } else {
            (self.img, pos)
        };
        let s = usize::try_from(pos).map_err(|_| Error::Io(EIO))?;
        let e = s.checked_add(buf.len()).ok_or(Error::Io(EIO))?;
        buf.copy_from_slice(src.get(s..e).ok_or(Error::Io(EIO))?);
        Ok(())
    }
}

/// Long prefixes read from the image.
struct Prefixes(Vec<(u8, Vec<u8>)>);

impl xattr::Prefixes for Prefixes {
    fn get(&self, idx: u8) -> Option<xattr::LongPrefix<'_>> {
        self.0
            .get(usize::from(idx))
            .map(|(b, i)| xattr::LongPrefix {
                base_index: *b,
                infix: i,
            })
    }
}

/// A stand-in for xxh32: the filter only needs some hash.
fn hash(name: &[u8], seed: u32) -> u32 {
    name.iter().fold(seed, |h, &b| {
        h.rotate_left(5) ^ u32::from(b).wrapping_mul(0x9E37_79B1)
    })
}

/// Reads `len` bytes of an uncompressed inode's data from 0 through the block map.
fn read_flat(sbi: &SbInfo, m: &Mem<'_>, vi: &InodeInfo, len: u64, out: &mut Vec<u8>) -> Result<()> {
    out.clear();
    let mut la = 0u64;
    for _ in 0..MAX_EXTENTS {
        if la >= len {
            break;
        }
        let mp = map::map_blocks(sbi, m, vi, la)?;
        let end = mp.la.saturating_add(mp.llen).min(len);
        if mp.llen == 0 || mp.la > la || end <= la {
            return Err(Error::Io(EIO));
        }
        let n = usize::try_from(end - la).map_err(|_| Error::Io(EIO))?;
        let at = out.len();
        out.resize(at + n, 0);
        match mp.kind {
            MapKind::Hole => {}
            MapKind::Meta | MapKind::Mapped => {
                if mp.device_id != 0 {
                    return Err(Error::Io(EIO));
                }
                let pa = mp.pa.checked_add(la - mp.la).ok_or(Error::Io(EIO))?;
                m.read_meta(pa, &mut out[at..])?;
            }
        }
        la = end;
    }
    Ok(())
}

/// Maps a flat or chunk-based inode's extents.
fn walk_flat(sbi: &SbInfo, m: &Mem<'_>, vi: &InodeInfo) {
    let mut la = 0u64;
    for _ in 0..MAX_EXTENTS {
        let Ok(mp) = map::map_blocks(sbi, m, vi, la) else {
            return;
        };
        let next = mp.la.saturating_add(mp.llen);
        if mp.llen == 0 || next <= la {
            return;
        }
        if mp.kind == MapKind::Meta {
            let mut b = [0u8; 16];
            let _ = m.read_meta(mp.pa, &mut b);
        }
        // Some positions inside the extent too: the map must cover them.
        let _ = map::map_blocks(sbi, m, vi, next - 1);
        let _ = map::map_blocks(sbi, m, vi, la.midpoint(next));
        la = next;
    }
    let _ = map::map_blocks(sbi, m, vi, vi.size);
    let _ = map::map_blocks(sbi, m, vi, u64::MAX);
}

/// Maps a compressed inode's extents and runs the decompression fixups on each pcluster.
fn walk_compressed(sbi: &SbInfo, m: &Mem<'_>, vi: &InodeInfo, zi: &ZInfo, pbuf: &mut Vec<u8>) {
    let blksz = sbi.blksz();
    let nid = vi.nid.0;
    let mut la = 0u64;
    let mut out = Vec::new();
    for i in 0..MAX_EXTENTS {
        let flags = [zmap::GET_BLOCKS_FIEMAP, 0, zmap::GET_BLOCKS_READMORE][i % 3];
        let Ok(mp) = zmap::map_blocks_iter(sbi, m, vi, zi, la, flags) else {
            return;
        };
        let next = mp.la.saturating_add(mp.llen);
        if mp.llen == 0 || next <= la || mp.la > la {
            return;
        }
        // Also from the last byte of the extent (the lookback the readers do), and as the
        // driver's readers map: for a reader going on past the extent.
        let _ = zmap::map_blocks(sbi, m, vi, zi, next - 1, false);
        if let Ok(u) = zmap::map_blocks_until(sbi, m, vi, zi, la, next.saturating_add(1 << 20)) {
            assert!(u.la <= la && la < u.la.saturating_add(u.llen), "{u:?} misses {la}");
        }
        if mp.is_mapped() && !mp.is_fragment() {
            let scan = decompress::fixup_scan(&mp, blksz);
            let outputsize = next.min(vi.size).saturating_sub(mp.la).min(mp.llen);
            let _ = decompress::partial_decoding(&mp, outputsize);
            if mp.plen <= MAX_BUF && outputsize <= MAX_BUF {
                pbuf.clear();
                pbuf.resize(mp.plen as usize, 0);
                // Inline pclusters are in the metadata; the others on the device, which is
                // the same bytes here.
                if m.read_meta(mp.pa, pbuf).is_ok() {
                    let alg = mp.algorithmformat;
                    if alg < ondisk::Z_EROFS_COMPRESSION_MAX {
                        if let Ok(pad) = decompress::fixup_insize(pbuf, scan, nid) {
                            assert!(pad < pbuf.len().max(1), "padding past the pcluster");
                        }
                    } else {
                        let interlaced = alg == ondisk::Z_EROFS_COMPRESSION_INTERLACED;
                        out.clear();
                        out.resize(outputsize as usize, 0);
                        let _ = decompress::transform_plain(
                            interlaced, pbuf, &mut out, mp.la, blksz, nid,
                        );
                        // A partial output too, as readers ask for less than the extent.
                        let half = out.len() / 2;
                        let _ = decompress::transform_plain(
                            interlaced,
                            pbuf,
                            &mut out[..half],
                            mp.la,
                            blksz,
                            nid,
                        );
                    }
                }
            }
        }
        la = next;
    }
    let _ = zmap::map_blocks(sbi, m, vi, zi, vi.size, true);
}

/// Iterates, finds and filters the xattrs of `vi`.
fn walk_xattrs(sbi: &SbInfo, m: &Mem<'_>, vi: &InodeInfo, prefixes: &Prefixes) {
    let mut first: Option<(u8, Vec<u8>)> = None;
    let _ = xattr::for_each_entry(sbi, m, vi, |e| {
        let _ = e.value_pos();
        if let Some((base, infix)) = xattr::resolve(e, prefixes) {
            let mut name = infix.to_vec();
            let at = name.len();
            name.resize(at + usize::from(e.name_len), 0);
            m.read_meta(e.name_pos, &mut name[at..])?;
            let mut value = vec![0u8; usize::from(e.value_size)];
            m.read_meta(e.value_pos(), &mut value)?;
            first.get_or_insert((base, name));
        }
        Ok(false)
    });
    let (index, name) = first.unwrap_or((xattr::EROFS_XATTR_INDEX_USER, b"x".to_vec()));
    let _ = xattr::find(sbi, m, vi, prefixes, index, &name);
    let _ = xattr::find(
        sbi,
        m,
        vi,
        prefixes,
        xattr::EROFS_XATTR_INDEX_SECURITY,
        b"selinux",
    );
    let _ = xattr::filtered_out(sbi, m, vi, index, &name, hash);
}

/// Reads the dirents of an uncompressed directory; queues the children.
fn walk_dir(
    sbi: &SbInfo,
    m: &Mem<'_>,
    vi: &InodeInfo,
    queue: &mut VecDeque<u64>,
    data: &mut Vec<u8>,
) {
    let blksz = sbi.blksz();
    let nid = vi.nid.0;
    let nblocks = vi.size.div_ceil(blksz).min(MAX_DIR_BLOCKS);
    let len = (nblocks * blksz).min(vi.size);
    if read_flat(sbi, m, vi, len, data).is_err() {
        return;
    }
    let mut some_name: Option<Vec<u8>> = None;
    for blk in data.chunks(blksz as usize) {
        let Ok(b) = DirBlock::new(blk, nid) else {
            continue;
        };
        let _ = b.first_name();
        for i in 0..b.len() {
            if let Ok(e) = b.get(i) {
                if e.name != b"." && e.name != b".." {
                    queue.push_back(e.nid);
                    some_name.get_or_insert(e.name.to_vec());
                }
            }
        }
        if let Some(n) = &some_name {
            let _ = b.find(n);
        }
        let _ = b.find(b"zzzz");
    }
    for name in [some_name.as_deref().unwrap_or(b"a"), b"", b"~~~~"] {
        let _ = dirent::lookup(nblocks, nid, name, |i, f| {
            let s = usize::try_from(i * blksz).map_err(|_| Error::Io(EIO))?;
            let e = (s + blksz as usize).min(data.len());
            f(data.get(s..e).ok_or(Error::Io(EIO))?)
        });
    }
}

fn run(data: &[u8]) {
    let mut img = data.to_vec();
    erofs_fuzz::fix_sb_checksum(&mut img);
    let Some(sbdata) = img.get(1024..img.len().min(4096)) else {
        return;
    };
    let Ok(mut sbi) = SbInfo::parse(sbdata, 12, erofs_fuzz::crc32c) else {
        return;
    };
    let mut m = Mem {
        img: &img,
        metabox: Vec::new(),
    };
    let _ = sbi.load_compr_cfgs(&m);
    for i in 0..sbi.ondisk_extra_devices().min(8) {
        if let Ok(d) = sbi.device(&m, i) {
            let _ = d.tag();
        }
    }
    let _ = sbi.volume_name();
    let _ = sbi.device_bytes();
    if sbi.has_metabox() {
        let nid = sbi.metabox_nid;
        if let Ok(vi) = read_inode(&sbi, &m, Nid(nid)) {
            let mut mb = Vec::new();
            if !vi.is_compressed()
                && vi.size <= MAX_BUF
                && read_flat(&sbi, &m, &vi, vi.size, &mut mb).is_ok()
            {
                m.metabox = mb;
            }
        }
    }
    let mut prefixes = Prefixes(Vec::new());
    if sbi.xattr_prefix_count != 0 {
        let pos = u64::from(sbi.xattr_prefix_start) * 4;
        let pos = if sbi.feature_compat & ondisk::EROFS_FEATURE_COMPAT_PLAIN_XATTR_PFX == 0
            && sbi.has_metabox()
        {
            pos | METABOX_POS
        } else {
            pos
        };
        let _ = xattr::read_prefixes(&m, pos, sbi.xattr_prefix_count, |b, infix| {
            prefixes.0.push((b, infix.to_vec()));
            Ok(())
        });
    }
    let mut queue = VecDeque::from([sbi.root_nid.0, sbi.packed_nid]);
    let mut seen = HashSet::new();
    let mut buf = Vec::new();
    while let Some(nid) = queue.pop_front() {
        if seen.len() >= MAX_INODES {
            break;
        }
        if !seen.insert(nid) {
            continue;
        }
        let _ = sbi.nid_to_ino(nid);
        let Ok(vi) = read_inode(&sbi, &m, Nid(nid)) else {
            continue;
        };
        let _ = (
            vi.file_type(),
            vi.is_symlink(),
            vi.payload_pos(&sbi),
            vi.iblks(&sbi),
        );
        walk_xattrs(&sbi, &m, &vi, &prefixes);
        if vi.is_compressed() {
            if let Ok(zi) = zmap::fill_inode(&sbi, &m, &vi) {
                walk_compressed(&sbi, &m, &vi, &zi, &mut buf);
            }
        } else {
            walk_flat(&sbi, &m, &vi);
            if vi.is_dir() {
                walk_dir(&sbi, &m, &vi, &mut queue, &mut buf);
            }
        }
    }
}

/// The bytes at the input's start that lay out [`stream_switch`]'s decode.
const STREAM_PARAMS: usize = 32;
/// Largest stream [`stream_switch`] decodes.
const MAX_STREAM: usize = 4096;
/// Most pieces a buffer is split into.
const MAX_PIECES: usize = 64;
/// The reason [`Expand`] gives when told to fail.
const REFUSED: &str = "refused by the fuzzer";

/// The bytes copied aside: a `Vec` (a newtype, as both the trait and `Vec` are foreign).
struct Held(Vec<u8>);

impl Spill for Held {
    fn clear(&mut self) {
        self.0.clear();
    }

    fn extend_from_slice(&mut self, bytes: &[u8]) -> Result<()> {
        self.0.extend_from_slice(bytes);
        Ok(())
    }

    fn as_bytes(&self) -> &[u8] {
        &self.0
    }
}

/// A stand-in for a stream decoder: each input byte `b` stands for `1 + b % ratio` copies of
/// itself, and the stream ends after its last byte (as a real stream marks its end). It keeps
/// what it has read until it has room to write it, and takes at most `max_in` bytes and makes
/// at most `max_out` per call, as real decoders stop at their own block boundaries.
struct Expand {
    left: usize,
    pending: usize,
    byte: u8,
    ratio: u8,
    max_in: usize,
    max_out: usize,
}

impl Expand {
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

/// `len` bytes in pieces of the sizes of `sizes` in turn (0: a page), at most [`MAX_PIECES`]
/// (the last takes the rest).
fn piece_ends(len: usize, sizes: &[u8], page: usize) -> Vec<usize> {
    let mut ends = Vec::new();
    let mut at = 0;
    for &b in sizes.iter().cycle() {
        if at >= len {
            break;
        }
        let n = if b == 0 { page } else { usize::from(b) };
        at = if ends.len() + 1 == MAX_PIECES {
            len
        } else {
            (at + n).min(len)
        };
        ends.push(at);
    }
    ends
}

/// Splits `buf` at `ends` (from [`piece_ends`]).
fn split_at_ends<'b>(mut buf: &'b mut [u8], ends: &[usize]) -> Vec<&'b mut [u8]> {
    let mut parts = Vec::new();
    let mut at = 0;
    for &e in ends {
        let (p, rest) = buf.split_at_mut(e - at);
        parts.push(p);
        buf = rest;
        at = e;
    }
    parts
}

/// Lays out a stream decode as `p` says (page size, decoder, stream, pieces, where the output
/// starts and where the rest of the stream lies in it), runs it through the core's buffer
/// switching and checks the result against the stream decoded from a separate buffer.
fn stream_switch(data: &[u8]) {
    let mut p = [0u8; STREAM_PARAMS];
    let n = data.len().min(STREAM_PARAMS);
    p[..n].copy_from_slice(&data[..n]);
    match p[0] & 3 {
        0 => stream_switch_paged::<16>(&p, &data[n..]),
        1 => stream_switch_paged::<64>(&p, &data[n..]),
        2 => stream_switch_paged::<512>(&p, &data[n..]),
        _ => stream_switch_paged::<4096>(&p, &data[n..]),
    }
}

/// [`stream_switch`] for pages of `PAGE` bytes.
fn stream_switch_paged<const PAGE: usize>(p: &[u8; STREAM_PARAMS], rest: &[u8]) {
    let u16at = |i: usize| usize::from(u16::from_le_bytes([p[i], p[i + 1]]));
    let full_ends = p[0] & 4 != 0;
    // 0: a decoder that works; 1: one that stops making progress after `p[26]` calls; 2: one
    // that refuses the stream then.
    let fail = (p[0] >> 3) % 3;
    // Anywhere in the buffer, or after the output's start as a decode reads in place.
    let wild = p[0] & 0x20 != 0;
    let ratio = 1 + p[1] % 16;
    let (max_in, max_out) = (
        if p[2] == 0 {
            usize::MAX
        } else {
            usize::from(p[2])
        },
        if p[3] == 0 {
            usize::MAX
        } else {
            usize::from(p[3]) * 7
        },
    );
    let slen = u16at(4).min(MAX_STREAM).min(rest.len());
    let input = &rest[..slen];
    let elen = u16at(6) % (slen + 1);
    let want: Vec<u8> = input
        .iter()
        .flat_map(|&b| std::iter::repeat_n(b, 1 + usize::from(b % ratio)))
        .collect();
    let off = u16at(8) % (4 * PAGE);
    let gap = u16at(10);
    // The output: what the stream decodes to (`p[13] == 0`), give or take.
    let delta = match p[13] {
        0 => 0,
        _ => isize::from(i16::from_le_bytes([p[12], p[13]])),
    };
    let outlen = want.len().saturating_add_signed(delta);
    let (ext, inplace) = input.split_at(elen);
    let (lent, out, len) = if wild {
        let lstart = gap;
        let len = usize::from(p[27]) * 64;
        (lstart..lstart + inplace.len(), off..off + outlen, len)
    } else {
        let lstart = off + gap;
        let lent = lstart..lstart + inplace.len();
        let out = off..off + outlen;
        let len = out.end.max(lent.end) + usize::from(p[27]);
        (lent, out, len)
    };
    let mut buf = vec![0xa5u8; len];
    if let Some(dst) = buf.get_mut(lent.clone()) {
        dst.copy_from_slice(inplace);
    }
    let ext_ends = piece_ends(ext.len(), &p[22..26], PAGE);
    let exts: Vec<&[u8]> = ext_ends
        .iter()
        .scan(0, |at, &e| {
            let piece = &ext[*at..e];
            *at = e;
            Some(piece)
        })
        .collect();
    let ends = piece_ends(len, &p[14..22], PAGE);
    let mut parts = split_at_ends(&mut buf, &ends);
    let mut held = Held(Vec::new());
    let mut dec = Expand {
        left: slen,
        pending: 0,
        byte: 0,
        ratio,
        max_in,
        max_out,
    };
    let io = stream::Io {
        ext: &exts,
        buf: &mut parts,
        lent: lent.clone(),
        out: out.clone(),
        spill: &mut held,
    };
    let fits = io.fits();
    let mut calls = 0u32;
    let res = io.drive::<PAGE>(full_ends, |s, o| {
        calls += 1;
        if fail != 0 && calls > u32::from(p[26]) {
            return if fail == 1 {
                Ok(Step {
                    used: 0,
                    made: 0,
                    end: false,
                })
            } else {
                Err(REFUSED)
            };
        }
        dec.step(s, o)
    });
    drop(parts);
    if !fits {
        assert_eq!(res, Err(Error::StreamLayout), "a layout that does not fit");
        return;
    }
    let short = Error::from(Corruption::Decode(stream::UNEXPECTED_END));
    let expected: core::result::Result<&[u8], Error> =
        if want.len() == outlen || (full_ends && want.len() >= outlen) {
            Ok(&want[..outlen])
        } else {
            Err(short)
        };
    match res {
        Ok(copied) => {
            assert!(copied <= lent.len(), "copied {copied} of {}", lent.len());
            assert_eq!(Ok(&buf[out]), expected, "decoded bytes differ");
        }
        Err(e) if fail == 0 => assert_eq!(Err(e), expected, "only a short stream fails"),
        Err(e) => {
            let refused = Error::from(Corruption::Decode(REFUSED));
            assert!(e == short || e == refused, "{e:?}");
        }
    }
}

fuzz_target!(|data: &[u8]| {
    erofs_fuzz::watchdog::begin();
    stream_switch(data);
    run(data);
    erofs_fuzz::watchdog::end();
});
