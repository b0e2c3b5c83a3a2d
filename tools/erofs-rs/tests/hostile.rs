// SPDX-License-Identifier: GPL-2.0-only
//! Regression tests from fuzzing (tests/fuzz-core): `erofs-rs fsck` on hostile images must
//! finish, in bounded time and memory, with a problem reported (exit 1), never a panic
//! (exit 101) or a signal. Images are made by mkfs.erofs (from `scripts/env`'s PATH) and
//! patched here; inputs the fuzzer found are kept in fuzz/regress and replayed.
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic, missing_docs)]

use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

fn crc32c(mut crc: u32, data: &[u8]) -> u32 {
    for &b in data {
        crc ^= u32::from(b);
        for _ in 0..8 {
            crc = (crc >> 1) ^ if crc & 1 != 0 { 0x82F6_3B78 } else { 0 };
        }
    }
    crc
}

/// Rewrites the superblock checksum after a patch (when the image has one).
fn fix_checksum(img: &mut [u8]) {
    let sb = &mut img[1024..];
    if sb[8] & 1 == 0 {
        return;
    }
    let blksz = 1usize << sb[12];
    let len = if blksz > 1024 { blksz - 1024 } else { blksz };
    if sb.len() < len {
        return;
    }
    let crc = crc32c(0x5045_B54A, &sb[8..len]);
    sb[4..8].copy_from_slice(&crc.to_le_bytes());
}

fn tmp(name: &str) -> PathBuf {
    let d = std::env::temp_dir().join(format!("erofs-rs-hostile-{}", std::process::id()));
    std::fs::create_dir_all(&d).unwrap();
    d.join(name)
}

/// An image of a tree with one file `f` of `size` bytes, by mkfs.erofs with `opts`.
fn mkfs(name: &str, size: usize, opts: &[&str]) -> PathBuf {
    let tree = tmp(&format!("{name}.tree"));
    let _ = std::fs::remove_dir_all(&tree);
    std::fs::create_dir_all(&tree).unwrap();
    let data: Vec<u8> = (0..size).map(|i| (i * 7 % 251) as u8).collect();
    std::fs::write(tree.join("f"), data).unwrap();
    let img = tmp(&format!("{name}.erofs"));
    let out = Command::new("mkfs.erofs")
        .args(["--quiet", "-T0", "--all-time"])
        .args(opts)
        .arg(&img)
        .arg(&tree)
        .output()
        .expect("mkfs.erofs must be on PATH: run `make setup` and `. scripts/env`");
    assert!(
        out.status.success(),
        "mkfs.erofs {opts:?}: {}",
        String::from_utf8_lossy(&out.stderr)
    );
    img
}

/// The nid of `path` in `img`, from `erofs-rs stat`.
fn nid_of(img: &Path, path: &str) -> u64 {
    let out = Command::new(env!("CARGO_BIN_EXE_erofs-rs"))
        .arg("stat")
        .arg(img)
        .arg(path)
        .output()
        .unwrap();
    let s = String::from_utf8_lossy(&out.stdout);
    s.lines()
        .find_map(|l| l.strip_prefix("nid: "))
        .and_then(|n| n.parse().ok())
        .unwrap_or_else(|| panic!("no nid for {path}: {s}"))
}

/// The superblock of `img`, by the core.
fn sbi(img: &[u8]) -> erofs_core::sb::SbInfo {
    erofs_core::sb::SbInfo::parse(&img[1024..4096], 12, crc32c).unwrap()
}

/// Byte position of inode `nid` (outside the metabox).
fn iloc(img: &[u8], nid: u64) -> usize {
    sbi(img).iloc(erofs_core::Nid(nid)).unwrap() as usize
}

/// Runs fsck on `img` with a time limit; returns its exit code (panics on a signal or hang).
fn fsck(img: &Path, limit: Duration) -> i32 {
    let mut child = Command::new(env!("CARGO_BIN_EXE_erofs-rs"))
        .args(["-q", "-j1", "fsck"])
        .arg(img)
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .spawn()
        .unwrap();
    let t = Instant::now();
    loop {
        if let Some(st) = child.try_wait().unwrap() {
            let code = st
                .code()
                .unwrap_or_else(|| panic!("fsck {} died: {st}", img.display()));
            assert_ne!(code, 101, "fsck {} panicked", img.display());
            return code;
        }
        if t.elapsed() > limit {
            let _ = child.kill();
            let _ = child.wait();
            panic!("fsck {} still running after {limit:?}", img.display());
        }
        std::thread::sleep(Duration::from_millis(20));
    }
}

/// A file whose i_size is 2^62 (valid in the format, impossible on the device) was cut into
/// 2^40 units of work: memory and time without bound before the first read failed.
#[test]
fn huge_i_size() {
    let img = mkfs("huge", 100_000, &["-Eforce-inode-extended"]);
    let nid = nid_of(&img, "/f");
    let mut d = std::fs::read(&img).unwrap();
    let pos = iloc(&d, nid);
    d[pos + 8..pos + 16].copy_from_slice(&(1u64 << 62).to_le_bytes());
    fix_checksum(&mut d);
    std::fs::write(&img, &d).unwrap();
    assert_eq!(fsck(&img, Duration::from_secs(60)), 1);
}

/// The metabox inode's data is read whole at open: an i_size of 2^62 aborted on the
/// allocation (and one of 4 GiB allocated and read it all).
#[test]
fn huge_metabox() {
    for (name, opts) in [
        ("mbox", &["-m4096", "-Eforce-inode-extended"][..]),
        (
            "mboxz",
            &["-zlz4hc", "-m4096", "-Eforce-inode-extended"][..],
        ),
    ] {
        let img = mkfs(name, 10_000, opts);
        let mut d = std::fs::read(&img).unwrap();
        let s = sbi(&d);
        assert!(s.has_metabox());
        let pos = iloc(&d, s.metabox_nid);
        // Compact or extended: both have i_size at 8 (32 or 64 bits).
        let extended = u16::from_le_bytes([d[pos], d[pos + 1]]) & 1 != 0;
        if extended {
            d[pos + 8..pos + 16].copy_from_slice(&(1u64 << 62).to_le_bytes());
        } else {
            d[pos + 8..pos + 12].copy_from_slice(&u32::MAX.to_le_bytes());
        }
        fix_checksum(&mut d);
        std::fs::write(&img, &d).unwrap();
        // It took tens of seconds and GiBs with a 32-bit i_size of 4 GiB.
        assert_eq!(fsck(&img, Duration::from_secs(20)), 1, "{name}");
    }
}

/// Every input the fuzzer found a bug with, kept in fuzz/regress.
#[test]
fn fuzz_regress() {
    let dir = Path::new(env!("CARGO_MANIFEST_DIR")).join("../../fuzz/regress");
    let Ok(rd) = std::fs::read_dir(&dir) else {
        return;
    };
    for e in rd {
        let p = e.unwrap().path();
        let mut d = std::fs::read(&p).unwrap();
        if d.len() > 1024 + 13 && (9..=12).contains(&d[1024 + 12]) {
            fix_checksum(&mut d);
        }
        let img = tmp(&p.file_name().unwrap().to_string_lossy());
        std::fs::write(&img, &d).unwrap();
        fsck(&img, Duration::from_secs(60));
    }
}
