// SPDX-License-Identifier: GPL-2.0-only
//! Fuzz target: `erofs-rs fsck` on arbitrary bytes, in process: the tool's own sources
//! (tools/erofs-rs/src, all but main.rs) compiled into this target, with the real decoders
//! (liblz4, liblzma, libdeflate, libzstd). The input is written to a file in /dev/shm (the
//! tool reads images with pread(2)), the superblock checksum is rewritten as in the core
//! target, and the image is opened and checked on one worker (deterministic coverage).
//! Every problem fsck reports is an answer; panics, aborts, timeouts and allocations past
//! libFuzzer's `-rss_limit_mb`/`-malloc_limit_mb` are findings.
#![no_main]
#![allow(dead_code, unused_imports)]

#[path = "../../tools/erofs-rs/src/error.rs"]
mod error;
#[path = "../../tools/erofs-rs/src/extract.rs"]
mod extract;
#[path = "../../tools/erofs-rs/src/image.rs"]
mod image;
#[path = "../../tools/erofs-rs/src/lz4.rs"]
mod lz4;
#[path = "../../tools/erofs-rs/src/lzma.rs"]
mod lzma;
#[path = "../../tools/erofs-rs/src/sys.rs"]
mod sys;
#[path = "../../tools/erofs-rs/src/walk.rs"]
mod walk;

use libfuzzer_sys::fuzz_target;
use std::sync::OnceLock;

/// The per-process image file.
fn path() -> &'static str {
    static P: OnceLock<String> = OnceLock::new();
    P.get_or_init(|| {
        let dir = std::env::var("EROFS_FUZZ_TMP").unwrap_or_else(|_| "/dev/shm".into());
        format!("{dir}/erofs-fuzz-fsck.{}", std::process::id())
    })
}

fuzz_target!(|data: &[u8]| {
    erofs_fuzz::watchdog::begin();
    check(data);
    erofs_fuzz::watchdog::end();
});

fn check(data: &[u8]) {
    let mut img = data.to_vec();
    erofs_fuzz::fix_sb_checksum(&mut img);
    let p = path();
    if std::fs::write(p, &img).is_err() {
        return;
    }
    if let Ok(i) = image::Image::open(p, 0, &[]) {
        let opts = extract::Opts {
            workers: 1,
            dest: None,
            preserve_owner: false,
            xattrs: true,
            quiet: true,
        };
        let _ = extract::run(&i, &opts);
    }
}
