// SPDX-License-Identifier: MIT OR GPL-2.0-only
//! Whole-image tests of compressed files: mkfs.erofs (from `scripts/env`'s PATH) builds images
//! of a generated tree and of a small real tree with every compression layout it can write;
//! reading each file through `zmap::fill_inode`, `zmap::map_blocks`, the decompression rules
//! of `decompress` and reference decoders (lz4_flex, miniz_oxide, ruzstd) must give back the
//! source bytes exactly. Corrupted index areas must give errors, never panics.
#![allow(
    clippy::unwrap_used,
    clippy::expect_used,
    clippy::panic,
    clippy::indexing_slicing,
    clippy::arithmetic_side_effects,
    clippy::as_conversions,
    missing_docs,
    reason = "test code: a panic is a test failure"
)]

use erofs_core::{
    decompress::{fixup_insize, fixup_scan, partial_decoding, transform_plain},
    dirent::DirBlock,
    inode::{read_inode, DataLayout, InodeInfo},
    map::{map_blocks as map_flat, MapKind},
    ondisk::{self, mode, z},
    sb::SbInfo,
    zmap::{
        fill_inode, map_blocks, map_blocks_until, ZInfo, ZMap, MAP_FRAGMENT, MAP_META,
        MAP_PARTIAL_MAPPED, MAP_PARTIAL_REF,
    },
    Error, MetaRead, Nid, Result,
};
use std::collections::BTreeMap;
use std::fs;
use std::path::{Path, PathBuf};
use std::process::Command;

/// The errnos these tests return through [`Error::Io`] (Linux's numbers).
const EIO: i32 = 5;
const EBADMSG: i32 = 74;
const EOPNOTSUPP: i32 = 95;

struct Image(Vec<u8>);

impl MetaRead for Image {
    fn read_meta(&self, pos: u64, buf: &mut [u8]) -> Result<()> {
        let p = usize::try_from(pos).map_err(|_| Error::Io(EIO))?;
        let end = p.checked_add(buf.len()).ok_or(Error::Io(EIO))?;
        let src = self.0.get(p..end).ok_or(Error::Io(EIO))?;
        buf.copy_from_slice(src);
        Ok(())
    }
}

fn crc32c(mut crc: u32, data: &[u8]) -> u32 {
    for &b in data {
        crc ^= u32::from(b);
        for _ in 0..8 {
            crc = (crc >> 1) ^ if crc & 1 != 0 { 0x82F6_3B78 } else { 0 };
        }
    }
    crc
}

/// What a walk saw, to check that each variant really exercises its layout.
#[derive(Default, Debug)]
struct Stats {
    files: usize,
    compressed: usize,
    full: usize,
    compact: usize,
    extents: usize,
    big_pcluster: usize,
    meta: usize,
    fragment: usize,
    whole_fragment: usize,
    partial_ref: usize,
    holes: usize,
    algs: BTreeMap<u8, usize>,
}

/// A mounted image: superblock, the packed inode's data, a scratch buffer for decoders.
struct Fs {
    img: Image,
    sbi: SbInfo,
    packed: Option<Vec<u8>>,
    scratch: Vec<u8>,
    stats: Stats,
}

impl Fs {
    fn open(bytes: Vec<u8>) -> Result<Fs> {
        let mut fs = Fs::open_raw(bytes)?;
        if fs.sbi.has_fragments() && fs.sbi.packed_nid != 0 {
            let vi = read_inode(&fs.sbi, &fs.img, Nid(fs.sbi.packed_nid))?;
            fs.packed = Some(fs.read_file(&vi)?);
        }
        Ok(fs)
    }

    /// Opens the image without reading the packed inode.
    fn open_raw(bytes: Vec<u8>) -> Result<Fs> {
        let img = Image(bytes);
        let end = img.0.len().min(4096);
        let mut sbi = SbInfo::parse(&img.0[1024..end], 12, crc32c)?;
        sbi.load_compr_cfgs(&img)?;
        Ok(Fs {
            img,
            sbi,
            packed: None,
            scratch: vec![0u8; ondisk::Z_EROFS_PCLUSTER_MAX_DSIZE as usize + 4096],
            stats: Stats::default(),
        })
    }

    /// Decodes the extent `m` from its start up to `want` bytes.
    fn decode(&mut self, vi: &InodeInfo, m: &ZMap, want: u64) -> Result<Vec<u8>> {
        let nid = vi.nid.0;
        let blksz = self.sbi.blksz();
        let src = self
            .img
            .0
            .get(m.pa as usize..(m.pa + m.plen) as usize)
            .ok_or(Error::Io(EIO))?;
        let mut out = vec![0u8; want as usize];
        match m.algorithmformat {
            ondisk::Z_EROFS_COMPRESSION_SHIFTED | ondisk::Z_EROFS_COMPRESSION_INTERLACED => {
                let interlaced = m.algorithmformat == ondisk::Z_EROFS_COMPRESSION_INTERLACED;
                transform_plain(interlaced, src, &mut out, m.la, blksz, nid)?;
            }
            alg => {
                let pad = fixup_insize(src, fixup_scan(m, blksz), nid)?;
                let stream = &src[pad..];
                let partial = partial_decoding(m, want);
                // The reference decoders cannot stop early: decode everything, then check the
                // length rules the kernel's decoders apply.
                let n = match alg {
                    ondisk::Z_EROFS_COMPRESSION_LZ4 => {
                        lz4_flex::block::decompress_into(stream, &mut self.scratch)
                            .map_err(|_| Error::Io(EBADMSG))?
                    }
                    ondisk::Z_EROFS_COMPRESSION_DEFLATE => {
                        let v = miniz_oxide::inflate::decompress_to_vec_with_limit(
                            stream,
                            self.scratch.len(),
                        )
                        .map_err(|_| Error::Io(EBADMSG))?;
                        self.scratch[..v.len()].copy_from_slice(&v);
                        v.len()
                    }
                    ondisk::Z_EROFS_COMPRESSION_ZSTD => {
                        use std::io::Read;
                        let mut d = ruzstd::decoding::StreamingDecoder::new(stream)
                            .map_err(|_| Error::Io(EBADMSG))?;
                        let mut v = Vec::new();
                        d.read_to_end(&mut v).map_err(|_| Error::Io(EBADMSG))?;
                        self.scratch[..v.len()].copy_from_slice(&v);
                        v.len()
                    }
                    _ => return Err(Error::Io(EOPNOTSUPP)),
                };
                if n < want as usize || (!partial && n != want as usize) {
                    return Err(Error::Io(EBADMSG));
                }
                out.copy_from_slice(&self.scratch[..want as usize]);
            }
        }
        Ok(out)
    }

    fn read_file(&mut self, vi: &InodeInfo) -> Result<Vec<u8>> {
        self.stats.files += 1;
        if !vi.is_compressed() {
            return self.read_flat(vi);
        }
        self.stats.compressed += 1;
        match vi.datalayout {
            DataLayout::CompressedFull => self.stats.full += 1,
            _ => self.stats.compact += 1,
        }
        let zi = fill_inode(&self.sbi, &self.img, vi)?;
        if vi.datalayout == DataLayout::CompressedFull
            && zi.z_advise & z::Z_EROFS_ADVISE_EXTENTS != 0
        {
            self.stats.extents += 1;
        }
        if zi.z_advise & (z::Z_EROFS_ADVISE_BIG_PCLUSTER_1 | z::Z_EROFS_ADVISE_BIG_PCLUSTER_2) != 0
        {
            self.stats.big_pcluster += 1;
        }
        let mut out = vec![0u8; vi.size as usize];
        let mut la = 0u64;
        while la < vi.size {
            let f = map_blocks(&self.sbi, &self.img, vi, &zi, la, true)?;
            let p = map_blocks(&self.sbi, &self.img, vi, &zi, la, false)?;
            assert!(
                f.la <= la && la < f.la + f.llen,
                "fiemap of {la} in nid {} is {f:?}",
                vi.nid.0
            );
            assert_eq!(f.flags & MAP_PARTIAL_MAPPED, 0);
            check_same_extent(&p, &f, la, vi);
            let end = (f.la + f.llen).min(vi.size);
            check_until(&self.sbi, &self.img, vi, &zi, la, end);
            // A position inside the extent maps to the same extent.
            let mid = la + (end - la) / 2;
            let q = map_blocks(&self.sbi, &self.img, vi, &zi, mid, false)?;
            if std::env::var("ZDEBUG").is_ok() {
                eprintln!("la {la} mid {mid}: f {f:?} p {p:?} q {q:?} zi {zi:?}");
            }
            check_same_extent(&q, &f, mid, vi);
            self.stats.partial_ref += usize::from(f.flags & MAP_PARTIAL_REF != 0);
            let dst = &mut out[la as usize..end as usize];
            if f.flags & MAP_FRAGMENT != 0 {
                self.stats.fragment += 1;
                self.stats.whole_fragment += usize::from(f.la == 0 && f.llen == vi.size);
                let packed = self
                    .packed
                    .as_ref()
                    .expect("fragments need the packed inode");
                let start = (f.pa + (la - f.la)) as usize;
                dst.copy_from_slice(&packed[start..start + dst.len()]);
            } else if !f.is_mapped() {
                self.stats.holes += 1;
                dst.fill(0);
            } else {
                self.stats.meta += usize::from(f.flags & MAP_META != 0);
                *self.stats.algs.entry(f.algorithmformat).or_default() += 1;
                // Decode the whole extent (exact), and the non-FIEMAP map's part of it
                // (partial), which must agree.
                let full = self.decode(vi, &f, end - f.la)?;
                let pend = (p.la + p.llen).min(end);
                let part = self.decode(vi, &p, pend - p.la)?;
                assert_eq!(&part[..], &full[..part.len()], "nid {} la {la}", vi.nid.0);
                dst.copy_from_slice(&full[(la - f.la) as usize..]);
            }
            la = end;
        }
        // Past EOF: an unmapped extent from the size to the position asked for.
        let post = map_blocks(&self.sbi, &self.img, vi, &zi, vi.size + 10, false)?;
        assert_eq!((post.la, post.llen, post.flags), (vi.size, 11, 0));
        Ok(out)
    }

    fn read_flat(&mut self, vi: &InodeInfo) -> Result<Vec<u8>> {
        let mut out = vec![0u8; vi.size as usize];
        let mut la = 0u64;
        while la < vi.size {
            let m = map_flat(&self.sbi, &self.img, vi, la)?;
            let end = (m.la + m.llen).min(vi.size);
            let dst = &mut out[la as usize..end as usize];
            match m.kind {
                MapKind::Hole => dst.fill(0),
                _ => self.img.read_meta(m.pa + (la - m.la), dst)?,
            }
            la = end;
        }
        Ok(out)
    }

    /// Walks the tree at `nid` and compares it with `src`.
    fn compare(&mut self, nid: Nid, src: &Path, count: &mut usize) {
        let vi = read_inode(&self.sbi, &self.img, nid).unwrap();
        *count += 1;
        let md = fs::symlink_metadata(src).unwrap();
        match vi.mode & mode::S_IFMT {
            mode::S_IFREG => {
                let got = self
                    .read_file(&vi)
                    .unwrap_or_else(|e| panic!("{}: {e:?}", src.display()));
                let want = fs::read(src).unwrap();
                assert!(
                    got == want,
                    "{} (nid {}, {} bytes) differs",
                    src.display(),
                    nid.0,
                    want.len()
                );
            }
            mode::S_IFLNK => {
                let target = fs::read_link(src).unwrap();
                assert_eq!(
                    self.read_file(&vi).unwrap(),
                    target.as_os_str().as_encoded_bytes()
                );
            }
            mode::S_IFDIR => {
                assert!(md.is_dir());
                let data = self.read_file(&vi).unwrap();
                let mut names = Vec::new();
                for blk in data.chunks(self.sbi.blksz() as usize) {
                    let b = DirBlock::new(blk, nid.0).unwrap();
                    for i in 0..b.len() {
                        let e = b.get(i).unwrap();
                        names.push((e.name.to_vec(), e.nid));
                    }
                }
                let mut want: Vec<Vec<u8>> = fs::read_dir(src)
                    .unwrap()
                    .map(|e| e.unwrap().file_name().as_encoded_bytes().to_vec())
                    .collect();
                want.push(b".".to_vec());
                want.push(b"..".to_vec());
                want.sort();
                let got: Vec<Vec<u8>> = names.iter().map(|e| e.0.clone()).collect();
                assert_eq!(got, want, "{}", src.display());
                for (name, enid) in names {
                    if name != b"." && name != b".." {
                        use std::os::unix::ffi::OsStrExt;
                        let p = src.join(std::ffi::OsStr::from_bytes(&name));
                        self.compare(Nid(enid), &p, count);
                    }
                }
            }
            _ => {}
        }
    }
}

/// The FIEMAP map and another map of the same extent agree, but for the end.
/// What the per-lcluster lookups from `la` on merge to for a reader that goes on to `until`
/// (the driver's `collect` before `map_blocks_until`): the first map, grown by each next lookup
/// that maps the same pcluster from the same start, while it ends before `until`.
fn merged_lookups(
    sbi: &SbInfo,
    img: &Image,
    vi: &InodeInfo,
    zi: &ZInfo,
    la: u64,
    until: u64,
) -> Result<ZMap> {
    let mut acc = map_blocks(sbi, img, vi, zi, la, false)?;
    loop {
        let end = acc.la + acc.llen;
        if end >= until || end >= vi.size || acc.flags & MAP_PARTIAL_MAPPED == 0 {
            return Ok(acc);
        }
        let Ok(n) = map_blocks(sbi, img, vi, zi, end, false) else {
            return Ok(acc);
        };
        if (
            n.la,
            n.pa,
            n.plen,
            n.algorithmformat,
            n.flags | MAP_PARTIAL_MAPPED,
        ) != (acc.la, acc.pa, acc.plen, acc.algorithmformat, acc.flags)
        {
            return Ok(acc);
        }
        acc = n;
    }
}

/// `map_blocks_until` from `la` maps what the lookups it replaces merge to.
fn check_until(sbi: &SbInfo, img: &Image, vi: &InodeInfo, zi: &ZInfo, la: u64, ext_end: u64) {
    let lsz = 1u64 << zi.z_lclusterbits;
    for until in [
        la + 1,
        ext_end.saturating_sub(1),
        ext_end,
        ext_end + lsz,
        vi.size + 1,
        u64::MAX,
    ] {
        let want = merged_lookups(sbi, img, vi, zi, la, until).unwrap();
        let got = map_blocks_until(sbi, img, vi, zi, la, until).unwrap();
        assert_eq!(
            got, want,
            "nid {} la {la} until {until}: map_blocks_until vs the lookups",
            vi.nid.0
        );
    }
}

fn check_same_extent(p: &ZMap, f: &ZMap, la: u64, vi: &InodeInfo) {
    let ctx = || format!("nid {} la {la} size {}: {p:?} vs {f:?}", vi.nid.0, vi.size);
    assert_eq!((p.la, p.pa, p.plen), (f.la, f.pa, f.plen), "{}", ctx());
    assert_eq!(p.flags & !MAP_PARTIAL_MAPPED, f.flags, "{}", ctx());
    if f.is_mapped() {
        assert_eq!(p.algorithmformat, f.algorithmformat, "{}", ctx());
    }
    assert!(p.la <= la && la < p.la + p.llen, "{}", ctx());
    // Without FIEMAP, the extent may end early (at the end of `la`'s lcluster), or late
    // (past EOF, in the last lcluster).
    let (pend, fend) = ((p.la + p.llen).min(vi.size), (f.la + f.llen).min(vi.size));
    // Fragment maps carry no PARTIAL_MAPPED flag, as in the C driver, yet end early too.
    if p.flags & (MAP_PARTIAL_MAPPED | MAP_FRAGMENT) == 0 {
        assert_eq!(pend, fend, "{}", ctx());
    } else {
        assert!(pend <= fend, "{}", ctx());
    }
}

fn prng(seed: &mut u64) -> u8 {
    *seed = seed
        .wrapping_mul(6364136223846793005)
        .wrapping_add(1442695040888963407);
    (*seed >> 33) as u8
}

/// A tree of files of awkward sizes, compressible and random, with duplicates.
fn make_tree(dir: &Path) {
    let _ = fs::remove_dir_all(dir);
    fs::create_dir_all(dir.join("sub/deeper")).unwrap();
    let mut seed = 7u64;
    let text = |n: usize| -> Vec<u8> {
        let words = [
            "erofs ",
            "compressed ",
            "lcluster ",
            "pcluster ",
            "map ",
            "index\n",
            "head ",
            "tail ",
        ];
        let mut v = Vec::with_capacity(n);
        let mut i = 0usize;
        while v.len() < n {
            v.extend_from_slice(words[(i * 7 + i / 3) % words.len()].as_bytes());
            v.extend_from_slice(format!("{i} ").as_bytes());
            i += 1;
        }
        v.truncate(n);
        v
    };
    let sizes = [
        0usize, 1, 100, 511, 512, 4095, 4096, 4097, 8191, 8192, 12_345, 16_384, 16_385, 65_535,
        65_536, 65_537, 200_000,
    ];
    for (i, &n) in sizes.iter().enumerate() {
        fs::write(dir.join(format!("text{i}")), text(n)).unwrap();
        let rnd: Vec<u8> = (0..n).map(|_| prng(&mut seed)).collect();
        fs::write(dir.join(format!("sub/random{i}")), rnd).unwrap();
    }
    // Large files: compressible, incompressible, and mixed with runs of zeroes.
    let big = text(3 << 20);
    fs::write(dir.join("big-text"), &big).unwrap();
    let rnd: Vec<u8> = (0..(2 << 20) + 777).map(|_| prng(&mut seed)).collect();
    fs::write(dir.join("sub/big-random"), &rnd).unwrap();
    let mut mixed = Vec::new();
    for k in 0..40 {
        match k % 4 {
            0 => mixed.extend_from_slice(&text(30_000 + k * 100)),
            1 => mixed.extend((0..20_000 + k * 37).map(|_| prng(&mut seed))),
            2 => mixed.extend(std::iter::repeat_n(0u8, 50_000)),
            _ => mixed.extend_from_slice(&big[k * 1000..k * 1000 + 9_999]),
        }
    }
    fs::write(dir.join("sub/deeper/mixed"), &mixed).unwrap();
    // Duplicates, whole and partial, for dedupe and fragments.
    fs::write(dir.join("dup-a"), &big[..1 << 20]).unwrap();
    fs::write(dir.join("sub/dup-b"), &big[..1 << 20]).unwrap();
    fs::write(dir.join("sub/dup-c"), &big[4096..(1 << 20) + 5000]).unwrap();
    fs::write(dir.join("sub/deeper/dup-d"), &rnd[..300_000]).unwrap();
    std::os::unix::fs::symlink("text3", dir.join("link")).unwrap();
}

/// A smaller tree, for tests that walk an image many times.
fn make_small_tree(dir: &Path) {
    let _ = fs::remove_dir_all(dir);
    fs::create_dir_all(dir).unwrap();
    let mut seed = 3u64;
    for (i, n) in [1usize, 4095, 4097, 20_000, 70_000, 300_000]
        .into_iter()
        .enumerate()
    {
        let v: Vec<u8> = (0..n)
            .map(|k| {
                if k % 3000 < 2000 {
                    (k % 251) as u8
                } else {
                    prng(&mut seed)
                }
            })
            .collect();
        fs::write(dir.join(format!("f{i}")), v).unwrap();
    }
}

fn mkfs(img: &Path, args: &[&str], src: &Path) -> Vec<u8> {
    let out = Command::new("mkfs.erofs")
        .arg("-d0")
        .arg("-T0")
        .args(args)
        .arg(img)
        .arg(src)
        .output()
        .expect("mkfs.erofs must be on PATH: run `make setup` and `. scripts/env`");
    assert!(
        out.status.success(),
        "mkfs.erofs {args:?}: {}",
        String::from_utf8_lossy(&out.stderr)
    );
    fs::read(img).unwrap()
}

fn check_variant(work: &Path, src: &Path, args: &[&str]) -> Stats {
    let bytes = mkfs(&work.join("z.erofs"), args, src);
    let mut fs = Fs::open(bytes).unwrap_or_else(|e| panic!("{args:?}: {e:?}"));
    let mut count = 0;
    let root = fs.sbi.root_nid;
    fs.compare(root, src, &mut count);
    assert!(count > 10, "{args:?}: walked only {count} inodes");
    let stats = std::mem::take(&mut fs.stats);
    eprintln!("{args:?}: {stats:?}");
    assert!(stats.compressed > 0, "{args:?}: no compressed file");
    stats
}

fn work(name: &str) -> PathBuf {
    PathBuf::from(env!("CARGO_TARGET_TMPDIR")).join(name)
}

#[test]
fn lz4_images_of_every_index_layout_match_the_tree() {
    let work = work("zimages-lz4");
    let src = work.join("tree");
    make_tree(&src);
    let variants: &[&[&str]] = &[
        &["-zlz4"],
        &["-zlz4hc,12"],
        &["-zlz4", "-C4096"],
        &["-zlz4hc", "-C16384"],
        &["-zlz4", "-C65536"],
        &["-zlz4hc", "-C1048576"],
        // (`--random-pclusterblks` exists only in debug builds of mkfs.erofs.)
        &["-zlz4hc", "-C65536", "--max-extent-bytes=20000"],
        &["-zlz4", "--zD=1"],
        &["-zlz4hc", "-C16384", "--zD=1", "-Eztailpacking"],
        &["-zlz4", "-Elegacy-compress"],
        &["-zlz4hc", "-C16384", "-Elegacy-compress"],
        &["-b", "512", "-zlz4"],
        &["-b", "1024", "-zlz4hc", "-C16384"],
    ];
    let mut plain = 0;
    for v in variants {
        let s = check_variant(&work, &src, v);
        if v.contains(&"-Elegacy-compress") {
            assert!(s.full > 0 && s.compact == 0, "{v:?}: {s:?}");
        } else {
            assert!(s.compact > 0, "{v:?}: {s:?}");
        }
        if v.iter().any(|a| a.starts_with("-C") && *a != "-C4096") {
            assert!(s.big_pcluster > 0, "{v:?}: {s:?}");
        }
        plain += s
            .algs
            .iter()
            .filter(|(&a, _)| a >= ondisk::Z_EROFS_COMPRESSION_SHIFTED)
            .count();
    }
    // Pclusters that do not compress are stored uncompressed (shifted or interlaced).
    assert!(plain > 0);
}

#[test]
fn ztailpacking_fragments_and_dedupe_images_match_the_tree() {
    let work = work("zimages-tail");
    let src = work.join("tree");
    make_tree(&src);
    let variants: &[&[&str]] = &[
        &["-zlz4", "-Eztailpacking"],
        &["-zlz4hc", "-C16384", "-Eztailpacking"],
        &["-zlz4hc", "-C65536", "-Eztailpacking", "-Elegacy-compress"],
        &["-b", "1024", "-zlz4hc", "-C16384", "-Eztailpacking"],
        &["-zlz4", "-Efragments"],
        &["-zlz4hc", "-C65536", "-Efragments"],
        &["-zlz4hc", "-C16384", "-Efragments", "-Elegacy-compress"],
        &["-zlz4", "-Eall-fragments"],
        &["-zlz4hc", "-C65536", "-Eall-fragments", "-Elegacy-compress"],
        &["-zlz4", "-Ededupe"],
        &["-zlz4hc", "-C16384", "-Ededupe", "-Efragments"],
        &[
            "-zlz4hc",
            "-C65536",
            "-Ededupe",
            "-Eztailpacking",
            "-Elegacy-compress",
        ],
        &[
            "-b",
            "512",
            "-zlz4hc",
            "-C4096",
            "-Eztailpacking",
            "-Efragments",
        ],
    ];
    for v in variants {
        let s = check_variant(&work, &src, v);
        if v.contains(&"-Eztailpacking") {
            assert!(s.meta > 0, "{v:?}: {s:?}");
        }
        if v.iter().any(|a| a.ends_with("fragments")) {
            assert!(s.fragment > 0, "{v:?}: {s:?}");
        }
        if v.contains(&"-Eall-fragments") {
            assert!(s.whole_fragment > 0, "{v:?}: {s:?}");
        }
    }
}

#[test]
fn encoded_extent_images_match_the_tree() {
    let work = work("zimages-48bit");
    let src = work.join("tree");
    make_tree(&src);
    let variants: &[&[&str]] = &[
        &["-zlz4", "-E48bit"],
        &["-zlz4hc", "-C65536", "-E48bit"],
        &["-zlz4hc", "-C16384", "-E48bit", "-Efragments"],
        &["-zlz4", "-E48bit", "-Ededupe"],
    ];
    for v in variants {
        let s = check_variant(&work, &src, v);
        assert!(s.extents > 0, "{v:?}: {s:?}");
    }
}

#[test]
fn deflate_and_zstd_images_match_the_tree() {
    let work = work("zimages-other");
    let src = work.join("tree");
    make_tree(&src);
    let variants: &[(&[&str], u8)] = &[
        (&["-zdeflate"], ondisk::Z_EROFS_COMPRESSION_DEFLATE),
        (
            &["-zdeflate,level=9", "-C65536", "-Eztailpacking"],
            ondisk::Z_EROFS_COMPRESSION_DEFLATE,
        ),
        (&["-zzstd"], ondisk::Z_EROFS_COMPRESSION_ZSTD),
        (
            &["-zzstd", "-C65536", "-Efragments"],
            ondisk::Z_EROFS_COMPRESSION_ZSTD,
        ),
    ];
    for (v, alg) in variants {
        let s = check_variant(&work, &src, v);
        assert!(s.algs.contains_key(alg), "{v:?}: {s:?}");
    }
}

#[test]
fn real_tree_images_match() {
    let real = Path::new("/usr/lib/python3.11/json");
    let real = if real.is_dir() {
        real.to_path_buf()
    } else {
        PathBuf::from(env!("CARGO_MANIFEST_DIR"))
    };
    let work = work("zimages-real");
    fs::create_dir_all(&work).unwrap();
    for v in [
        &["-zlz4hc", "-Eztailpacking"][..],
        &["-zlz4", "-C16384", "-Efragments", "-Ededupe"],
        &["-zlz4hc", "-E48bit"],
        &["-zlz4", "-Eall-fragments", "-Elegacy-compress"],
    ] {
        check_variant(&work, &real, v);
    }
}

/// Maps and decodes every compressed file, tolerating errors; returns how many failed.
fn walk_tolerant(fs: &mut Fs, nids: &[u64]) -> usize {
    let mut errors = 0;
    for &nid in nids {
        let Ok(vi) = read_inode(&fs.sbi, &fs.img, Nid(nid)) else {
            errors += 1;
            continue;
        };
        let Ok(zi) = fill_inode(&fs.sbi, &fs.img, &vi) else {
            errors += 1;
            continue;
        };
        let mut la = 0u64;
        let mut steps = 0;
        while la < vi.size && steps < 4000 {
            steps += 1;
            for fiemap in [false, true] {
                match map_blocks(&fs.sbi, &fs.img, &vi, &zi, la, fiemap) {
                    Ok(m) if m.is_mapped() => {
                        let want = m.llen.min(vi.size.saturating_sub(m.la)).min(1 << 20);
                        errors += usize::from(fs.decode(&vi, &m, want).is_err());
                    }
                    Ok(_) => {}
                    Err(_) => errors += 1,
                }
            }
            // On any image, one lookup for a reader going on takes in no more than the
            // lookups it replaces would merge to, and maps the same pcluster.
            if let Ok(u) =
                map_blocks_until(&fs.sbi, &fs.img, &vi, &zi, la, la.saturating_add(1 << 20))
            {
                let m = merged_lookups(&fs.sbi, &fs.img, &vi, &zi, la, la.saturating_add(1 << 20))
                    .expect("the first lookup succeeded for map_blocks_until");
                assert_eq!(
                    (u.la, u.pa, u.plen, u.algorithmformat),
                    (m.la, m.pa, m.plen, m.algorithmformat)
                );
                assert!(
                    u.llen <= m.llen,
                    "nid {nid} la {la}: {u:?} past {m:?}: next {:?}",
                    map_blocks(&fs.sbi, &fs.img, &vi, &zi, m.la + m.llen, false)
                );
            } else {
                assert!(map_blocks(&fs.sbi, &fs.img, &vi, &zi, la, false).is_err());
            }
            let m = map_blocks(&fs.sbi, &fs.img, &vi, &zi, la, false);
            la = match m {
                Ok(m) => (m.la.saturating_add(m.llen)).max(la + 1),
                Err(_) => la + 4096,
            };
        }
        let _ = ZInfo::default();
    }
    errors
}

/// Collects the compressed inodes of an image, with the position of their map header.
fn compressed_inodes(bytes: &[u8]) -> Vec<(u64, u64)> {
    let mut fs = Fs::open(bytes.to_vec()).unwrap();
    let mut out = Vec::new();
    let mut stack = vec![fs.sbi.root_nid.0];
    while let Some(nid) = stack.pop() {
        let vi = read_inode(&fs.sbi, &fs.img, Nid(nid)).unwrap();
        if vi.is_compressed() {
            let h = vi.payload_pos(&fs.sbi).unwrap().next_multiple_of(8);
            out.push((nid, h));
        }
        if vi.is_dir() {
            let data = fs.read_file(&vi).unwrap();
            for blk in data.chunks(fs.sbi.blksz() as usize) {
                let b = DirBlock::new(blk, nid).unwrap();
                for i in 0..b.len() {
                    let e = b.get(i).unwrap();
                    if e.name != b"." && e.name != b".." {
                        stack.push(e.nid);
                    }
                }
            }
        }
    }
    out
}

#[test]
fn corrupted_indexes_give_errors_not_panics() {
    let work = work("zimages-corrupt");
    let src = work.join("tree");
    make_small_tree(&src);
    let mut seed = 99u64;
    for v in [
        &["-zlz4hc", "-C16384", "-Eztailpacking"][..],
        &["-zlz4hc", "-C65536", "-Elegacy-compress", "-Efragments"],
        &["-zlz4", "-E48bit", "-Efragments"],
        &["-b", "512", "-zlz4", "-C4096", "-Eztailpacking"],
    ] {
        let bytes = mkfs(&work.join("c.erofs"), v, &src);
        let inodes = compressed_inodes(&bytes);
        assert!(!inodes.is_empty());
        let mut fs = Fs::open_raw(bytes.clone()).unwrap();
        let mut failed = 0;
        for round in 0..150 {
            // Flip a few bytes in the map header and indexes of some inodes.
            let mut touched = Vec::new();
            let mut saved = Vec::new();
            for _ in 0..1 + round % 4 {
                let (nid, h) = inodes[prng(&mut seed) as usize % inodes.len()];
                let off = h as usize
                    + (usize::from(prng(&mut seed)) | usize::from(prng(&mut seed)) << 8) % 160;
                if off < fs.img.0.len() {
                    saved.push((off, fs.img.0[off]));
                    fs.img.0[off] ^= prng(&mut seed) | 1;
                    touched.push(nid);
                }
            }
            failed += usize::from(walk_tolerant(&mut fs, &touched) > 0);
            for (off, b) in saved.into_iter().rev() {
                fs.img.0[off] = b;
            }
        }
        eprintln!("{v:?}: {failed}/150 corrupted images gave errors");
    }
}
