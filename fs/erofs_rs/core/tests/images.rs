// SPDX-License-Identifier: MIT OR GPL-2.0-only
//! Whole-image tests of the format core: mkfs.erofs (from `scripts/env`'s PATH) builds images of
//! a generated tree in every uncompressed layout; a user-space walk through the core (superblock,
//! inodes, readdir, lookup, map_blocks) must reproduce the tree exactly.
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
    dirent::{lookup, DirBlock},
    inode::{read_inode, InodeInfo},
    map::{map_blocks, MapKind},
    ondisk::mode,
    sb::SbInfo,
    Error, MetaRead, Nid, Result,
};
use std::fs;
use std::os::unix::fs::{MetadataExt, PermissionsExt};
use std::path::{Path, PathBuf};
use std::process::Command;

struct Image(Vec<u8>);

impl MetaRead for Image {
    fn read_meta(&self, pos: u64, buf: &mut [u8]) -> Result<()> {
        let p = usize::try_from(pos).map_err(|_| Error::Io(5))?;
        let src = self.0.get(p..p + buf.len()).ok_or(Error::Io(5))?;
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

/// The extra device of the `--blobdev` image; only that test sets it and reads it.
static BLOB: std::sync::Mutex<Option<Vec<u8>>> = std::sync::Mutex::new(None);

fn read_data(sbi: &SbInfo, img: &Image, vi: &InodeInfo) -> Vec<u8> {
    let mut out = vec![0u8; vi.size as usize];
    let mut la = 0u64;
    while la < vi.size {
        let m = map_blocks(sbi, img, vi, la).unwrap();
        assert!(
            m.la <= la && m.la + m.llen > la,
            "map of {la} in nid {} is {m:?}",
            vi.nid.0
        );
        let end = (m.la + m.llen).min(vi.size);
        let dst = &mut out[la as usize..end as usize];
        match m.kind {
            MapKind::Hole => dst.fill(0),
            MapKind::Mapped if m.device_id != 0 => {
                assert_eq!(m.device_id, 1);
                let blob = BLOB.lock().unwrap();
                let p = (m.pa + (la - m.la)) as usize;
                dst.copy_from_slice(&blob.as_ref().expect("a blob device")[p..p + dst.len()]);
            }
            _ => img.read_meta(m.pa + (la - m.la), dst).unwrap(),
        }
        la = end;
    }
    out
}

fn readdir(sbi: &SbInfo, img: &Image, vi: &InodeInfo) -> Vec<(Vec<u8>, u64, u8)> {
    let data = read_data(sbi, img, vi);
    let mut out = Vec::new();
    for blk in data.chunks(sbi.blksz() as usize) {
        let b = DirBlock::new(blk, vi.nid.0).unwrap();
        for i in 0..b.len() {
            let e = b.get(i).unwrap();
            out.push((e.name.to_vec(), e.nid, e.file_type));
        }
    }
    out
}

/// Compares the image's tree at `nid` with the source directory `src`, recursively.
fn compare(sbi: &SbInfo, img: &Image, nid: Nid, src: &Path, count: &mut usize) {
    let vi = read_inode(sbi, img, nid).unwrap();
    let md = fs::symlink_metadata(src).unwrap();
    *count += 1;
    assert_eq!(u32::from(vi.mode), md.mode(), "{}", src.display());
    assert_eq!(vi.uid, md.uid());
    assert_eq!(vi.gid, md.gid());
    match vi.mode & mode::S_IFMT {
        mode::S_IFREG => {
            assert_eq!(vi.nlink, md.nlink() as u32);
            assert_eq!(
                read_data(sbi, img, &vi),
                fs::read(src).unwrap(),
                "{}",
                src.display()
            );
        }
        mode::S_IFLNK => {
            let target = fs::read_link(src).unwrap();
            assert_eq!(
                read_data(sbi, img, &vi),
                target.as_os_str().as_encoded_bytes()
            );
        }
        mode::S_IFDIR => {
            let entries = readdir(sbi, img, &vi);
            let mut names: Vec<Vec<u8>> = fs::read_dir(src)
                .unwrap()
                .map(|e| e.unwrap().file_name().as_encoded_bytes().to_vec())
                .collect();
            names.push(b".".to_vec());
            names.push(b"..".to_vec());
            names.sort();
            let got: Vec<Vec<u8>> = entries.iter().map(|e| e.0.clone()).collect();
            assert_eq!(got, names, "{}", src.display());
            let nblocks = vi.iblks(sbi);
            let data = read_data(sbi, img, &vi);
            for (name, enid, _) in &entries {
                // Every name is found by the binary search, with its nid.
                let found = lookup(nblocks, vi.nid.0, name, |i, f| {
                    let s = (i * sbi.blksz()) as usize;
                    f(&data[s..(s + sbi.blksz() as usize).min(data.len())])
                })
                .unwrap();
                assert_eq!(found.map(|x| x.0), Some(*enid));
                if name != b"." && name != b".." {
                    let p = src.join(std::ffi::OsStr::from_encoded_bytes_unchecked_safe(name));
                    compare(sbi, img, Nid(*enid), &p, count);
                }
            }
            let miss = lookup(nblocks, vi.nid.0, b"\x7f-not-there", |i, f| {
                let s = (i * sbi.blksz()) as usize;
                f(&data[s..(s + sbi.blksz() as usize).min(data.len())])
            })
            .unwrap();
            assert_eq!(miss, None);
        }
        _ => assert_eq!(vi.rdev != 0, md.rdev() != 0),
    }
}

/// `OsStr::from_encoded_bytes_unchecked` without unsafe: names come from this machine's tree.
trait FromBytesSafe {
    fn from_encoded_bytes_unchecked_safe(b: &[u8]) -> PathBuf;
}
impl FromBytesSafe for std::ffi::OsStr {
    fn from_encoded_bytes_unchecked_safe(b: &[u8]) -> PathBuf {
        use std::os::unix::ffi::OsStrExt;
        PathBuf::from(std::ffi::OsStr::from_bytes(b))
    }
}

fn make_tree(dir: &Path) {
    let _ = fs::remove_dir_all(dir);
    fs::create_dir_all(dir.join("many")).unwrap();
    for i in 0..3000 {
        fs::write(
            dir.join("many")
                .join(format!("entry-{i:05}-{}", "y".repeat(i % 50))),
            b"",
        )
        .unwrap();
    }
    let mut seed = 12345u64;
    for (i, size) in [0usize, 1, 511, 512, 513, 4095, 4096, 4097, 65537, 300_000]
        .iter()
        .enumerate()
    {
        let data: Vec<u8> = (0..*size)
            .map(|_| {
                seed = seed.wrapping_mul(6364136223846793005).wrapping_add(1);
                (seed >> 33) as u8
            })
            .collect();
        fs::write(dir.join(format!("file{i}")), data).unwrap();
    }
    for n in [1usize, 60, 500, 4095] {
        std::os::unix::fs::symlink("t".repeat(n), dir.join(format!("link{n}"))).unwrap();
    }
    fs::create_dir_all(dir.join("a/b/c/d")).unwrap();
    fs::write(dir.join("a/b/c/d/leaf"), b"leaf\n").unwrap();
    fs::set_permissions(dir.join("file1"), fs::Permissions::from_mode(0o4751)).unwrap();
    let f = fs::File::create(dir.join("sparse")).unwrap();
    f.set_len(1 << 20).unwrap();
    fs::hard_link(dir.join("file3"), dir.join("a/hard")).unwrap();
}

#[test]
fn images_of_every_uncompressed_layout_match_the_tree() {
    let work = PathBuf::from(env!("CARGO_TARGET_TMPDIR")).join("images");
    let src = work.join("tree");
    make_tree(&src);
    let variants: &[&[&str]] = &[
        &[],
        &["-b", "512"],
        &["-b", "1024", "-Eforce-inode-extended"],
        &["-Eforce-inode-compact"],
        &["-E^inline_data"],
        &["--chunksize=4096"],
        &["--chunksize=8192", "-Eforce-chunk-indexes"],
        &["-b", "512", "--chunksize=2048", "-Eforce-inode-blockmap"],
        &["-E48bit"],
        &["-T0"],
    ];
    for v in variants {
        let img_path = work.join("test.erofs");
        let out = Command::new("mkfs.erofs")
            .arg("-d0")
            .args(*v)
            .arg(&img_path)
            .arg(&src)
            .output()
            .expect("mkfs.erofs must be on PATH: run `make setup` and `. scripts/env`");
        assert!(
            out.status.success(),
            "mkfs.erofs {v:?}: {}",
            String::from_utf8_lossy(&out.stderr)
        );
        let img = Image(fs::read(&img_path).unwrap());
        let sbi = SbInfo::parse(&img.0[1024..4096], 12, crc32c).unwrap();
        let mut count = 0;
        compare(&sbi, &img, sbi.root_nid, &src, &mut count);
        assert!(count > 3000, "{v:?}: walked only {count} inodes");
    }
}

#[test]
fn blobdev_images_read_through_the_device_table() {
    let work = PathBuf::from(env!("CARGO_TARGET_TMPDIR")).join("blob");
    let src = work.join("tree");
    make_tree(&src);
    let (img_path, blob_path) = (work.join("main.erofs"), work.join("blob.img"));
    let _ = fs::remove_file(&blob_path);
    let out = Command::new("mkfs.erofs")
        .arg("-d0")
        .arg(format!("--blobdev={}", blob_path.display()))
        .arg("--chunksize=4096")
        .arg(&img_path)
        .arg(&src)
        .output()
        .expect("mkfs.erofs must be on PATH: run `make setup` and `. scripts/env`");
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let img = Image(fs::read(&img_path).unwrap());
    let sbi = SbInfo::parse(&img.0[1024..4096], 12, crc32c).unwrap();
    assert_eq!(sbi.ondisk_extra_devices(), 1);
    let dev = sbi.device(&img, 0).unwrap();
    let blob = fs::read(&blob_path).unwrap();
    assert_eq!(dev.blocks, blob.len() as u64 / 4096);
    *BLOB.lock().unwrap() = Some(blob);
    let mut count = 0;
    compare(&sbi, &img, sbi.root_nid, &src, &mut count);
    assert!(count > 3000);
}

/// A plain file whose i_size runs past the device maps up to the device's end (the C driver
/// reads those blocks, and only the I/O past the end fails); past it, the map fails.
#[test]
fn plain_extents_past_the_device_stop_at_its_end() {
    let work = PathBuf::from(env!("CARGO_TARGET_TMPDIR")).join("pastdev");
    let src = work.join("tree");
    let _ = fs::remove_dir_all(&src);
    fs::create_dir_all(&src).unwrap();
    fs::write(src.join("f"), vec![0x5au8; 10000]).unwrap();
    let img_path = work.join("test.erofs");
    let out = Command::new("mkfs.erofs")
        .args(["-d0", "-E^inline_data", "-Eforce-inode-extended"])
        .arg(&img_path)
        .arg(&src)
        .output()
        .expect("mkfs.erofs must be on PATH: run `make setup` and `. scripts/env`");
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let mut img = Image(fs::read(&img_path).unwrap());
    let sbi = SbInfo::parse(&img.0[1024..4096], 12, crc32c).unwrap();
    let root = read_inode(&sbi, &img, sbi.root_nid).unwrap();
    let (_, nid, _) = readdir(&sbi, &img, &root)
        .into_iter()
        .find(|e| e.0 == b"f")
        .unwrap();
    let iloc = sbi.iloc(Nid(nid)).unwrap() as usize;
    img.0[iloc + 8..iloc + 16].copy_from_slice(&(1u64 << 40).to_le_bytes());
    let vi = read_inode(&sbi, &img, Nid(nid)).unwrap();
    let dev = sbi.device_bytes().unwrap();
    let m = map_blocks(&sbi, &img, &vi, 0).unwrap();
    assert_eq!(m.kind, MapKind::Mapped);
    assert!(m.pa < dev && m.llen > 0, "{m:?}");
    assert_eq!(m.pa + m.llen, dev, "{m:?}");
    assert_eq!(
        &img.0[m.pa as usize..m.pa as usize + 10000],
        &[0x5au8; 10000][..]
    );
    assert!(map_blocks(&sbi, &img, &vi, m.llen).is_err());
}
