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
#![no_main]

use erofs_core::{
    decompress,
    dirent::{self, DirBlock},
    inode::{read_inode, InodeInfo},
    map::{self, MapKind},
    ondisk,
    sb::{SbInfo, METABOX_POS},
    xattr,
    zmap::{self, ZInfo},
    Error, MetaRead, Nid, Result,
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

fuzz_target!(|data: &[u8]| {
    erofs_fuzz::watchdog::begin();
    run(data);
    erofs_fuzz::watchdog::end();
});
