// SPDX-License-Identifier: GPL-2.0-only
//! Helpers shared by the fuzz targets.

/// The kernel's crc32c (reflected Castagnoli, no inversions).
pub fn crc32c(mut crc: u32, data: &[u8]) -> u32 {
    for &b in data {
        crc ^= u32::from(b);
        for _ in 0..8 {
            crc = (crc >> 1) ^ if crc & 1 != 0 { 0x82F6_3B78 } else { 0 };
        }
    }
    crc
}

/// Rewrites the superblock checksum of `img` when it has `EROFS_FEATURE_COMPAT_SB_CHKSUM`, so
/// that mutations of the first block (which holds the root inode of small images) are not all
/// rejected by the checksum. The checksum check itself is covered by the core's unit tests.
pub fn fix_sb_checksum(img: &mut [u8]) {
    const SB: usize = 1024;
    let Some(sb) = img.get_mut(SB..) else { return };
    if sb.len() < 13 || sb[8] & 1 == 0 || !(9..=12).contains(&sb[12]) {
        return;
    }
    let blksz = 1usize << sb[12];
    let len = if blksz > SB { blksz - SB } else { blksz };
    if sb.len() < len {
        return;
    }
    let crc = crc32c(0x5045_B54A, &sb[8..len]);
    sb[4..8].copy_from_slice(&crc.to_le_bytes());
}

/// A hang detector that counts CPU time, not wall time, and does not run in a signal handler.
///
/// libFuzzer's `-timeout` is an alarm whose handler allocates: when it interrupts `malloc`, the
/// process deadlocks instead of reporting (seen here with fsck), and wall time says little at
/// nice 19 on a loaded machine. The runner passes `-timeout=0`; instead a thread samples the
/// process's CPU time each second and aborts (libFuzzer then saves the input as a crash) when
/// one input has used more than `EROFS_FUZZ_CPU_TIMEOUT` seconds of CPU (default 10).
pub mod watchdog {
    use std::sync::atomic::{AtomicU64, Ordering};
    use std::sync::Once;
    use std::time::Duration;

    /// Incremented at each input's start (odd: running, even: idle).
    static GEN: AtomicU64 = AtomicU64::new(0);

    /// utime + stime of this process, in clock ticks.
    fn cpu_ticks() -> Option<u64> {
        let s = std::fs::read_to_string("/proc/self/stat").ok()?;
        let rest = s.get(s.rfind(')')? + 2..)?;
        let f: Vec<&str> = rest.split(' ').collect();
        // Fields 14 and 15 of stat(5), counted after the command (field 3 is the first here).
        Some(f.get(11)?.parse::<u64>().ok()? + f.get(12)?.parse::<u64>().ok()?)
    }

    fn run() {
        let limit: u64 = std::env::var("EROFS_FUZZ_CPU_TIMEOUT")
            .ok()
            .and_then(|v| v.parse().ok())
            .unwrap_or(10);
        // Linux's USER_HZ is 100 on every architecture this runs on.
        let limit = limit * 100;
        let mut seen = (u64::MAX, 0u64);
        loop {
            std::thread::sleep(Duration::from_millis(500));
            let g = GEN.load(Ordering::SeqCst);
            let Some(now) = cpu_ticks() else { continue };
            if g % 2 == 0 || g != seen.0 {
                seen = (g, now);
                continue;
            }
            if now.saturating_sub(seen.1) > limit {
                eprintln!(
                    "erofs-fuzz watchdog: one input ran for over {} s of CPU",
                    limit / 100
                );
                std::process::abort();
            }
        }
    }

    /// Marks the start of an input (and starts the watchdog on first use).
    pub fn begin() {
        static START: Once = Once::new();
        START.call_once(|| {
            std::thread::spawn(run);
        });
        GEN.fetch_add(1, Ordering::SeqCst);
    }

    /// Marks the end of an input.
    pub fn end() {
        GEN.fetch_add(1, Ordering::SeqCst);
    }
}
