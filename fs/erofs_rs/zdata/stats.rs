// SPDX-License-Identifier: GPL-2.0-only
//! A mount's decompression statistics and its `sync_decompress` setting, in debugfs
//! (`/sys/kernel/debug/erofs_rs/<disk>/decompress_latency`, `reset`, `sync_decompress`; the
//! acomp engine adds `accel`). The C driver has no such statistics, so fs/erofs has no file to
//! mirror; they are erofs_rs's own, for measuring where and how fast decompression runs.
//! They stay out of `zdata.rs`, which mirrors fs/erofs/zdata.c and is long enough, as one
//! submodule of it: the queues of `vfs/zdata.rs` report to them ([`ZEvents`]) and the decoders
//! of `zdata.rs` count into them. `sync_decompress` is here, though C keeps it in
//! `sbi->opt`, because its debugfs file shares the statistics' storage; what it decides (small
//! readahead decompresses in the reader) is in `zdata.rs`, as in C's `z_erofs_readahead`.
#![deny(unsafe_code)]

use crate::super_::SuperBlock;
use crate::vfs::{
    queue::{
        Bypassed,
        Placement,
        ZEvents, //
    },
    workers::debugfs_root,
    New, //
};
use core::{
    fmt,
    sync::atomic::{
        AtomicU32,
        AtomicU64,
        Ordering, //
    },
};
use kernel::{
    debugfs::{
        Dir,
        File, //
    },
    prelude::*,
    sync::Arc,
    uaccess::UserSliceReader,
};

/// The placements a queue runs at ([`Placement`]'s values are `0..PLACEMENTS`).
const PLACEMENTS: usize = 5;
const _: () = assert!(Placement::Completion as usize + 1 == PLACEMENTS);

/// Latency histogram buckets: a quarter power of two of nanoseconds each.
const BUCKETS: usize = 64 * 4;

/// One latency histogram.
struct Hist {
    count: AtomicU64,
    sum_ns: AtomicU64,
    max_ns: AtomicU64,
    bucket: [AtomicU64; BUCKETS],
}

impl Hist {
    /// An empty histogram.
    const fn new() -> Self {
        Hist {
            count: AtomicU64::new(0),
            sum_ns: AtomicU64::new(0),
            max_ns: AtomicU64::new(0),
            bucket: [const { AtomicU64::new(0) }; BUCKETS],
        }
    }

    /// The bucket of `ns`.
    fn bucket_of(ns: u64) -> usize {
        if ns < 4 {
            // CAST: below 4.
            return ns as usize;
        }
        let lg = ns.ilog2();
        // CAST: two bits.
        let frac = ((ns >> (lg - 2)) & 3) as usize;
        // CAST: `lg < 64`.
        (lg as usize * 4 + frac).min(BUCKETS - 1)
    }

    /// The lower edge of bucket `b`, in ns.
    fn bucket_ns(b: usize) -> u64 {
        // Buckets 4 to 7 stay empty (4 ns and up go to 8 and up); their edge is 4 ns, where
        // the quantile of bucket 3 ends.
        if b < 8 {
            return (b as u64).min(4);
        }
        (4 + (b as u64 & 3)) << (b / 4 - 2)
    }

    /// Counts one duration of `ns`.
    fn add(&self, ns: u64) {
        // ORDERING: statistics only.
        self.count.fetch_add(1, Ordering::Relaxed);
        self.sum_ns.fetch_add(ns, Ordering::Relaxed);
        self.bucket[Self::bucket_of(ns)].fetch_add(1, Ordering::Relaxed);
        self.max_ns.fetch_max(ns, Ordering::Relaxed);
    }

    /// Empties the histogram.
    fn reset(&self) {
        for a in Iterator::chain(
            [&self.count, &self.sum_ns, &self.max_ns].into_iter(),
            self.bucket.iter(),
        ) {
            a.store(0, Ordering::Relaxed);
        }
    }

    /// The value at quantile `num/den`, as the upper edge of its bucket.
    fn quantile(&self, count: u64, num: u64, den: u64) -> u64 {
        let want = count.saturating_mul(num).div_ceil(den);
        let mut seen = 0u64;
        for (b, n) in self.bucket.iter().enumerate() {
            seen = seen.saturating_add(n.load(Ordering::Relaxed));
            if seen >= want && seen != 0 {
                return if b + 1 < BUCKETS {
                    Self::bucket_ns(b + 1)
                } else {
                    u64::MAX
                };
            }
        }
        0
    }

    /// Writes the histogram's line of `decompress_latency`, named `name`.
    fn show(&self, f: &mut fmt::Formatter<'_>, name: &str) -> fmt::Result {
        let count = self.count.load(Ordering::Relaxed);
        write!(f, "{name} count {count}")?;
        if let Some(mean) = self.sum_ns.load(Ordering::Relaxed).checked_div(count) {
            write!(
                f,
                " mean_ns {} p50_ns {} p90_ns {} p99_ns {} p999_ns {} max_ns {}",
                mean,
                self.quantile(count, 50, 100),
                self.quantile(count, 90, 100),
                self.quantile(count, 99, 100),
                self.quantile(count, 999, 1000),
                self.max_ns.load(Ordering::Relaxed)
            )?;
        }
        writeln!(f)
    }
}

/// A mount's decompression statistics, and its `sync_decompress` setting: what the queues
/// report ([`ZEvents`]) and what the decoders count, shared by the mount's queues and its
/// debugfs files.
#[pin_data]
pub(crate) struct Stats {
    /// Bio completion to decompression start: on the workqueue, on the kthreads.
    sched: [Hist; 2],
    /// Decompression time of one queue.
    decomp: Hist,
    /// Queues run, by [`Placement`].
    runs: [AtomicU64; PLACEMENTS],
    /// As the C driver's `sync_decompress`: 0 = auto (becomes 1 on the first bio completing
    /// in atomic context), 1 = force on (readahead of at most 12 KiB decompresses in the
    /// reader), 2 = force off. In debugfs, writable.
    sync_decompress: AtomicU32,
    /// Device pages read into the file's own pages (in-place I/O), and into short-lived ones.
    inplace: AtomicU64,
    shortlived: AtomicU64,
    /// LZ4 pclusters decoded over their input, without a copy.
    lz4_inplace: AtomicU64,
    /// MicroLZMA and DEFLATE pclusters read in place and decoded from where they were read,
    /// without a copy of the whole stream; and the bytes of them copied aside
    /// where the output caught up with them.
    stream_inplace: AtomicU64,
    stream_copied: AtomicU64,
    /// Pclusters decoded in the submitter before its read's I/O completed, needing none of it
    /// (`z_erofs_runqueue`'s bypass queue: inline, fragment and cached data, holes).
    bypass: AtomicU64,
    /// Folios those handed back then.
    bypass_folios: AtomicU64,
    /// Pclusters a read left to another that reads them (`Z_EROFS_PCLUSTER_INFLIGHT`), and
    /// the folios it handed that read parts of.
    shared: AtomicU64,
    shared_folios: AtomicU64,
    /// Parts of reads handed to other CPUs' workers (`decomp_split`).
    split_parts: AtomicU64,
}

impl Stats {
    /// Zero statistics; `sync_decompress` 0 (auto).
    fn new() -> impl PinInit<Self> {
        pin_init!(Stats {
            sched: [Hist::new(), Hist::new()],
            decomp: Hist::new(),
            runs: [const { AtomicU64::new(0) }; PLACEMENTS],
            sync_decompress: AtomicU32::new(0),
            inplace: AtomicU64::new(0),
            shortlived: AtomicU64::new(0),
            lz4_inplace: AtomicU64::new(0),
            stream_inplace: AtomicU64::new(0),
            stream_copied: AtomicU64::new(0),
            bypass: AtomicU64::new(0),
            bypass_folios: AtomicU64::new(0),
            shared: AtomicU64::new(0),
            shared_folios: AtomicU64::new(0),
            split_parts: AtomicU64::new(0),
        })
    }

    /// `decompress_latency`.
    fn show(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let r = |p: Placement| self.runs[p as usize].load(Ordering::Relaxed);
        writeln!(
            f,
            "runs inline {} workqueue {} kthread {} kthread_fallback {} completion {}",
            r(Placement::Inline),
            r(Placement::Workqueue),
            r(Placement::Kthread),
            r(Placement::KthreadFallback),
            r(Placement::Completion)
        )?;
        writeln!(
            f,
            "pages inplace {} shortlived {} lz4_inplace {} stream_inplace {} stream_copied {}",
            self.inplace.load(Ordering::Relaxed),
            self.shortlived.load(Ordering::Relaxed),
            self.lz4_inplace.load(Ordering::Relaxed),
            self.stream_inplace.load(Ordering::Relaxed),
            self.stream_copied.load(Ordering::Relaxed)
        )?;
        writeln!(
            f,
            "bypass {} folios {}",
            self.bypass.load(Ordering::Relaxed),
            self.bypass_folios.load(Ordering::Relaxed)
        )?;
        writeln!(
            f,
            "shared {} folios {}",
            self.shared.load(Ordering::Relaxed),
            self.shared_folios.load(Ordering::Relaxed)
        )?;
        writeln!(
            f,
            "split parts {}",
            self.split_parts.load(Ordering::Relaxed)
        )?;
        self.sched[0].show(f, "sched_workqueue")?;
        self.sched[1].show(f, "sched_kthread")?;
        self.decomp.show(f, "decompress")?;
        // Raw buckets, for plotting: name lower_edge_ns count.
        for b in 0..BUCKETS {
            let (w, k, d) = (
                self.sched[0].bucket[b].load(Ordering::Relaxed),
                self.sched[1].bucket[b].load(Ordering::Relaxed),
                self.decomp.bucket[b].load(Ordering::Relaxed),
            );
            if w != 0 || k != 0 || d != 0 {
                writeln!(f, "bucket {} {w} {k} {d}", Hist::bucket_ns(b))?;
            }
        }
        Ok(())
    }

    /// Writing anything to `reset` clears the statistics, not the setting.
    fn reset(&self) {
        self.sched[0].reset();
        self.sched[1].reset();
        self.decomp.reset();
        for r in &self.runs {
            r.store(0, Ordering::Relaxed);
        }
        self.inplace.store(0, Ordering::Relaxed);
        self.shortlived.store(0, Ordering::Relaxed);
        self.lz4_inplace.store(0, Ordering::Relaxed);
        self.stream_inplace.store(0, Ordering::Relaxed);
        self.stream_copied.store(0, Ordering::Relaxed);
        self.bypass.store(0, Ordering::Relaxed);
        self.bypass_folios.store(0, Ordering::Relaxed);
        self.shared.store(0, Ordering::Relaxed);
        self.shared_folios.store(0, Ordering::Relaxed);
        self.split_parts.store(0, Ordering::Relaxed);
    }
}

/// `decompress_latency`'s text.
fn show_latency(s: &Arc<Stats>, f: &mut fmt::Formatter<'_>) -> fmt::Result {
    s.show(f)
}

/// A write to `reset`.
fn write_reset(s: &Arc<Stats>, r: &mut UserSliceReader) -> Result {
    // The bytes written do not matter; take them all.
    let mut buf = [0u8; 64];
    while !r.is_empty() {
        let n = r.len().min(buf.len());
        r.read_slice(&mut buf[..n])?;
    }
    s.reset();
    Ok(())
}

/// `sync_decompress`'s text.
fn show_sync(s: &Arc<Stats>, f: &mut fmt::Formatter<'_>) -> fmt::Result {
    writeln!(f, "{}", s.sync_decompress.load(Ordering::Relaxed))
}

/// A write to `sync_decompress`: 0, 1 or 2, else `EINVAL`.
fn write_sync(s: &Arc<Stats>, r: &mut UserSliceReader) -> Result {
    // As debugfs_create_u32's files: a number, decimal or 0x-prefixed hexadecimal.
    let mut buf = [0u8; 24];
    let n = r.len();
    if n >= buf.len() {
        return Err(EINVAL);
    }
    r.read_slice(&mut buf[..n])?;
    let text = core::str::from_utf8(&buf[..n]).map_err(|_| EINVAL)?.trim();
    let v = match text.strip_prefix("0x").or_else(|| text.strip_prefix("0X")) {
        Some(hex) => u32::from_str_radix(hex, 16),
        None => text.parse::<u32>(),
    }
    .map_err(|_| EINVAL)?;
    // As erofs_attr_store: above EROFS_SYNC_DECOMPRESS_FORCE_OFF (2) is EINVAL.
    if v > 2 {
        return Err(EINVAL);
    }
    s.sync_decompress.store(v, Ordering::Relaxed);
    Ok(())
}

/// What the mount's decompression queues report goes into the statistics; and, as the C
/// driver's `z_erofs_decompress_kickoff` does, a bio completing in atomic context turns
/// `sync_decompress` on if it is auto.
impl ZEvents for Stats {
    fn ran(&self, placement: Placement, queued_ns: u64, decode_ns: u64) {
        match placement {
            Placement::Workqueue | Placement::KthreadFallback => self.sched[0].add(queued_ns),
            Placement::Kthread => self.sched[1].add(queued_ns),
            Placement::Inline | Placement::Completion => {}
        }
        self.decomp.add(decode_ns);
        // ORDERING: statistics only.
        self.runs[placement as usize].fetch_add(1, Ordering::Relaxed);
    }

    fn bypassed(&self, decoded: &Bypassed, decode_ns: u64) {
        self.decomp.add(decode_ns);
        self.bypass
            .fetch_add(u64::from(decoded.pclusters), Ordering::Relaxed);
        self.bypass_folios
            .fetch_add(u64::from(decoded.folios), Ordering::Relaxed);
    }

    fn read_in_place(&self) {
        self.inplace.fetch_add(1, Ordering::Relaxed);
    }

    fn read_shortlived(&self) {
        self.shortlived.fetch_add(1, Ordering::Relaxed);
    }

    fn handed_off(&self) {
        self.split_parts.fetch_add(1, Ordering::Relaxed);
    }

    fn completed_in_atomic(&self) {
        // Completions in atomic context cost small reads a worker hop: decode those in the
        // reader from now on.
        let _ = self
            .sync_decompress
            .compare_exchange(0, 1, Ordering::Relaxed, Ordering::Relaxed);
    }
}

/// Per-mount decompression statistics, in debugfs (`erofs_rs/<disk>/decompress_latency`,
/// `reset`, `sync_decompress`), removed with the mount.
pub(crate) struct ZStats {
    // Declared before `dir`: the files go first.
    _files: KVec<Pin<KBox<File<Arc<Stats>>>>>,
    /// The mount's debugfs directory (empty if debugfs is absent).
    dir: Dir,
    stats: Arc<Stats>,
}

impl ZStats {
    /// Creates the statistics of `sb`, in a debugfs directory named as the C driver's sysfs
    /// directory: the disk, or `major:minor` of a file-backed mount. Debugfs is optional:
    /// if it is absent or full, the statistics are only kept.
    pub(crate) fn new(sb: &SuperBlock<'_, New>) -> Result<Self> {
        let root = debugfs_root(sb)?;
        let stats = Arc::pin_init(Stats::new(), GFP_KERNEL)?;
        let name = sb.debugfs_name()?;
        let dir = root.subdir(&name);
        let mut files = KVec::with_capacity(3, GFP_KERNEL)?;
        files.push(
            KBox::pin_init(
                dir.read_callback_file(c"decompress_latency", stats.clone(), &show_latency),
                GFP_KERNEL,
            )?,
            GFP_KERNEL,
        )?;
        files.push(
            KBox::pin_init(
                dir.write_callback_file(c"reset", stats.clone(), &write_reset),
                GFP_KERNEL,
            )?,
            GFP_KERNEL,
        )?;
        files.push(
            KBox::pin_init(
                dir.read_write_callback_file(
                    c"sync_decompress",
                    stats.clone(),
                    &show_sync,
                    &write_sync,
                ),
                GFP_KERNEL,
            )?,
            GFP_KERNEL,
        )?;
        Ok(ZStats {
            _files: files,
            dir,
            stats,
        })
    }

    /// Whether readahead of at most 12 KiB decompresses in the reader: the mount's
    /// `sync_decompress` (debugfs) is 1, which it becomes on its own once a bio completes in
    /// atomic context, as in the C driver.
    pub(crate) fn sync_small_readahead(&self) -> bool {
        self.stats.sync_decompress.load(Ordering::Relaxed) == 1
    }

    /// Counts an LZ4 pcluster decoded over its input (in `decompress_latency`).
    pub(crate) fn note_lz4_inplace(&self) {
        self.stats.lz4_inplace.fetch_add(1, Ordering::Relaxed);
    }

    /// Counts a stream pcluster decoded from the pages it was read into, of which `copied`
    /// bytes were copied aside (in `decompress_latency`).
    pub(crate) fn note_stream_inplace(&self, copied: usize) {
        self.stats.stream_inplace.fetch_add(1, Ordering::Relaxed);
        // CAST: usize fits in u64.
        self.stats
            .stream_copied
            .fetch_add(copied as u64, Ordering::Relaxed);
    }

    /// Counts a pcluster left to another read, which was handed parts of `folios` folios (in
    /// `decompress_latency`).
    pub(crate) fn note_shared(&self, folios: u32) {
        self.stats.shared.fetch_add(1, Ordering::Relaxed);
        self.stats
            .shared_folios
            .fetch_add(u64::from(folios), Ordering::Relaxed);
    }

    /// The mount's `sync_decompress` (its debugfs and sysfs files).
    pub(crate) fn sync_decompress(&self) -> &AtomicU32 {
        &self.stats.sync_decompress
    }

    /// The mount's debugfs directory, for the acomp engine's file (`accel`), which must go
    /// before it.
    pub(crate) fn dir(&self) -> &Dir {
        &self.dir
    }

    /// Where a decompression queue of the mount reports
    /// ([`ZQueue::new`](crate::vfs::queue::ZQueue::new)).
    pub(crate) fn events(&self) -> Arc<Stats> {
        self.stats.clone()
    }
}
