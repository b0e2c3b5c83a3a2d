// SPDX-License-Identifier: GPL-2.0-only
//! Reading compressed files into the page cache. C counterpart: fs/erofs/zdata.c (the frontend
//! that collects the pclusters of a read and the backend that decompresses them) and the
//! dispatch of fs/erofs/decompressor.c.
//!
//! A read (one `read_folio`, or one readahead batch) becomes a [`Request`]: the locked folios
//! to fill and, in file order, one [`Job`] per extent that covers them. The frontend maps the
//! extents with the core's `zmap` and starts the reads of their compressed data: bios into the
//! managed cache (an inode of the superblock's own, `vfs/zcache.rs`) for the pclusters that
//! `cache_strategy=` keeps for the next reader, as the C driver's does, and into short-lived
//! folios for the others (see [`Request::cache_keeps`]); on a file-backed mount, the same bios
//! are kiocb reads of the backing file (`vfs/bio.rs`, C: fs/erofs/fileio.c). A kept pcluster
//! that another read of the file is reading is left to that read, with this read's folios'
//! parts of it ([`Shares`]). The backend runs once all of that I/O has completed: in the reader
//! for `read_folio` (the C driver's synchronous decompression), else on the decompression
//! workers the mount chose, the bound high-priority workqueue or the per-CPU kthreads of
//! `decomp_pcpu_kthreads` (see `vfs/zdata.rs`). It decodes each extent from its start into a
//! buffer, copies the part the request wants into the folios, and unlocks them, uptodate unless
//! any extent failed.
#![deny(unsafe_code)]

use crate::decompressor::{
    stream_decompress,
    stream_decompress_io,
    Io, //
};
use crate::decompressor_crypto::{
    Accel,
    AccelReq, //
};
use crate::erofs_core::{
    self as core_,
    buf::MetaBuf,
    decompress::{
        fixup_insize,
        fixup_scan,
        inplace_run,
        partial_decoding,
        transform_plain, //
    },
    inode::InodeInfo,
    ondisk::{
        Z_EROFS_COMPRESSION_DEFLATE,
        Z_EROFS_COMPRESSION_INTERLACED,
        Z_EROFS_COMPRESSION_LZ4,
        Z_EROFS_COMPRESSION_LZMA,
        Z_EROFS_COMPRESSION_SHIFTED,
        Z_EROFS_COMPRESSION_ZSTD,
        Z_EROFS_PCLUSTER_MAX_DSIZE, //
    },
    stream::piece,
    zmap::{
        map_blocks,
        map_blocks_until,
        ZInfo,
        ZMap,
        GET_BLOCKS_FIEMAP,
        MAP_FRAGMENT,
        MAP_MAPPED,
        MAP_META, //
    },
    MetaRead,
};
use crate::super_::{
    report,
    to_core,
    to_kernel,
    CacheStrategy,
    Inode,
    MountFlags,
    RealInode,
    Split,
    SuperBlock, //
};
use crate::vfs::{
    self,
    decompress::{
        lz4_decompress,
        lz4_decompress_in_place, //
    },
    iomap::{
        Extent,
        ExtentKind, //
    },
    pagecache::{
        CFolio,
        OutFolio,
        PageCache,
        Parts,
        Readahead, //
    },
    queue::{
        Bypassed,
        Committed,
        Spread,
        ZQueue,
        ZWork, //
    },
    smallvec::{
        release,
        SmallVec, //
    },
    vmap::{
        BouncePages,
        OutPage,
        Output,
        PageMap,
        PageRuns, //
    },
};
use core::cell::RefCell;
use kernel::{
    new_spinlock,
    page::{
        PAGE_SHIFT,
        PAGE_SIZE, //
    },
    prelude::*,
    sync::{
        Arc,
        SpinLock, //
    },
};

mod stats;
pub(crate) use stats::ZStats;

/// Reports the extent at `offset` for FIEMAP and SEEK_DATA/SEEK_HOLE
/// (`z_erofs_iomap_begin_report`): whole extents, with the pcluster's address; fragments are
/// mapped without one.
pub(crate) fn iomap_report(inode: Inode<'_>, offset: u64, length: u64) -> Result<Extent<'_>> {
    let sb = inode.sb();
    let dev = sb.device();
    let vi = inode.info();
    let mut ext = Extent {
        la: offset,
        llen: length.max(1),
        pa: u64::MAX,
        kind: ExtentKind::Hole,
        dev: None,
    };
    if offset >= vi.size {
        // Post-EOF: a hole from EOF on, long enough for iomap to step past `offset`.
        ext.la = vi.size;
        // OVERFLOW: `offset >= vi.size` just above.
        ext.llen = length.saturating_add(offset - vi.size).max(1);
        return Ok(ext);
    }
    let zi = inode.zinfo().ok_or(EFSCORRUPTED)?;
    let map = zmap(&sb, dev, vi, zi, offset, Want::Exact)
        .inspect_err(|e| report(sb, e))
        .map_err(to_kernel)?;
    ext.la = map.la;
    ext.llen = map.llen;
    if map.flags & MAP_FRAGMENT != 0 {
        ext.kind = ExtentKind::Mapped;
    } else if map.flags & MAP_MAPPED != 0 {
        ext.kind = ExtentKind::Mapped;
        // An inline pcluster in the metabox reports its offset there, as the C driver does.
        ext.pa = map.pa & !crate::erofs_core::sb::METABOX_POS;
    }
    Ok(ext)
}

/// Most DEFLATE pclusters one read keeps in flight on an acomp engine.
const ACCEL_WINDOW: usize = 8;

/// The decode work of one part of a split read ([`Request::split`]), in the units of
/// [`split_units`].
const SPLIT_UNIT: u64 = 1 << 16;

/// The smallest output of each algorithm worth handing to another CPU (`decomp_split=auto`):
/// a decode of that much takes far longer than the hand-off (a work item queued on another
/// CPU and a request from the mount's pool). LZ4 decodes faster than a hand-off pays for.
/// (Documentation/erofs_rs.rst has the measurements.)
const SPLIT_MIN_LZMA: u64 = 32 << 10;
const SPLIT_MIN_DEFLATE: u64 = 64 << 10;
const SPLIT_MIN_ZSTD: u64 = 128 << 10;

/// The decode work of `job` of a read of `start..end`, in units of which [`SPLIT_UNIT`] makes
/// one part worth handing off: its decoded bytes (from the extent's start: a partial decode
/// begins there) scaled by the algorithm's `SPLIT_MIN_*`; with `force`, any pcluster is a
/// whole part.
fn split_units(job: &Job, start: u64, end: u64, mode: Split) -> u64 {
    if job.map.flags & MAP_MAPPED == 0
        || !matches!(job.src, Src::Pending | Src::Dev { .. } | Src::Buf(_))
    {
        return 0;
    }
    if job.end.min(end) <= job.map.la.max(start) {
        return 0;
    }
    if mode == Split::Force {
        return SPLIT_UNIT;
    }
    let min = match job.map.algorithmformat {
        Z_EROFS_COMPRESSION_LZMA => SPLIT_MIN_LZMA,
        Z_EROFS_COMPRESSION_DEFLATE => SPLIT_MIN_DEFLATE,
        Z_EROFS_COMPRESSION_ZSTD => SPLIT_MIN_ZSTD,
        _ => return 0,
    };
    let bytes = job.end.min(end).saturating_sub(job.map.la);
    bytes.saturating_mul(SPLIT_UNIT) / min
}

/// Moves `src[from..]` to the end of `dst`, in order; `dst` has room for them (else those
/// without room are dropped).
fn move_tail<T>(src: &mut KVec<T>, from: usize, dst: &mut KVec<T>) {
    let base = dst.len();
    while src.len() > from {
        let Some(v) = src.pop() else { break };
        let _ = dst.push_within_capacity(v);
    }
    if let Some(moved) = dst.get_mut(base..) {
        moved.reverse();
    }
}

/// Largest readahead batch decompressed in the reader (`Z_EROFS_MAX_SYNC_DECOMPRESS_BYTES`).
const SYNC_READAHEAD_MAX: u64 = 12288;
/// The smallest DEFLATE pcluster decoded from the pages it was read into in place: zlib copies
/// up to 32 KiB of output into its window at the end of each call, and such a decode takes at
/// least two calls, which costs more than copying a small pcluster whole (bench/icount:
/// 16 KiB pclusters 1% slower, 64 KiB ones even).
const DEFLATE_INPLACE_MIN: usize = 65536;

/// Most readahead growth asked for past the batch, to cover the batch's last extent whole.
const READMORE_MAX: u64 = 4 << 20;

/// Where the bytes of one extent come from.
enum Src {
    /// Zeroes: a hole, or past EOF.
    Zero,
    /// A pcluster on the primary block device, until `start_io` grabs its folios.
    Pending,
    /// A pcluster read from the primary device: `Request::cfolios[first..first + count]`,
    /// starting `skip` bytes into the first, then, with in-place I/O, `inplace` more pages
    /// read into the pages of the request's folios from file byte `at` on (pages of one or
    /// more folios, of any order), which the job decodes over (after taking its input out of
    /// them).
    Dev {
        first: usize,
        count: usize,
        skip: usize,
        inplace: usize,
        at: u64,
    },
    /// Pcluster bytes already read: an inline (ztailpacking) pcluster, or any pcluster of a
    /// file-backed mount or an extra device.
    Buf(KVVec<u8>),
    /// Decompressed bytes from `from` on: a fragment, copied from the packed inode.
    Plain { from: u64, data: KVVec<u8> },
    /// Decoded already, by [`Request::decode_ready`].
    Done,
    /// [`Request::decode_ready`] failed on it, with this error (reported then).
    Failed(Error),
    /// Decoded by another read of the file, which reads the pcluster and was handed this
    /// read's bytes of it ([`Shares::attach`]).
    Shared,
}

/// One extent of a request: decode `map` from `map.la` up to `end`.
///
/// `collect` builds jobs with `map.la < end`, but the extent may start before the job's own
/// first byte (a fragment over several lclusters, or overlapping extents of a corrupted
/// image); code that relies on `map.la < end` checks it through [`Job::outlen`].
struct Job {
    map: ZMap,
    end: u64,
    src: Src,
    /// For a pcluster the managed cache keeps, the entry by which other reads of the file hand
    /// this one the bytes they want of it ([`Shares::register`]).
    share: Option<Share>,
}

impl Job {
    /// The bytes to decode, from the extent's start `map.la` to `end`; `None` if there are
    /// none, which no valid image gives.
    fn outlen(&self) -> Option<u64> {
        self.end.checked_sub(self.map.la).filter(|&n| n != 0)
    }

    /// Adds this job, if it is a pcluster, to `n`: pclusters, compressed bytes, decoded bytes
    /// (what the `erofs_rs_decompress` tracepoint records).
    fn count_into(&self, n: &mut (u32, u64, u64)) {
        self.count_upto(self.end, n);
    }

    /// As [`Job::count_into`], decoding up to `end`.
    fn count_upto(&self, end: u64, n: &mut (u32, u64, u64)) {
        if self.map.flags & MAP_MAPPED != 0 && !matches!(self.src, Src::Shared) {
            n.0 = n.0.saturating_add(1);
            n.1 = n.1.saturating_add(self.map.plen);
            n.2 = n.2.saturating_add(end.saturating_sub(self.map.la));
        }
    }
}

/// A folio of a request and its byte range in the file; the folio is taken out (unlocked,
/// uptodate) as soon as every extent over it is decoded.
struct ReqFolio {
    pos: u64,
    end: u64,
    folio: Option<OutFolio>,
    /// The folio is lent to the queue's bios (in-place I/O into some of its pages): it is
    /// back in `folio` once they are done.
    lent: bool,
}

impl ReqFolio {
    fn new(folio: OutFolio) -> Self {
        let pos = folio.pos();
        ReqFolio {
            pos,
            end: pos.saturating_add(folio.size() as u64),
            folio: Some(folio),
            lent: false,
        }
    }
}

/// The index of the slot of `out` (sorted, not overlapping) whose byte range holds file byte
/// `pos`; `None` if none does.
fn slot_at(out: &[ReqFolio], pos: u64) -> Option<usize> {
    let i = out.partition_point(|s| s.end <= pos);
    out.get(i).filter(|s| s.pos <= pos).map(|_| i)
}

/// A DEFLATE pcluster on the acomp engine ([`Request::offload`]): its job, the slot of the
/// first folio it writes (the others follow), and the request, which owns the pieces of
/// those folios until it is waited for; `None` once it was.
struct Offload<'a> {
    job: usize,
    first: usize,
    req: Option<AccelReq<'a>>,
}

/// Pieces of the read's folios that are neither in their slot nor on the engine, with the
/// index of their slot: split off after the bytes of a pcluster on the engine, in the middle
/// of a piece, or back from the engine before the pieces beside them ([`settle`]).
type Aside = KVec<(usize, OutFolio)>;

/// The bytes of file bytes `from..to` that fall in the folio of `s`, as offsets in it.
fn piece_bytes(s: &ReqFolio, from: u64, to: u64) -> (usize, usize) {
    // CAST: offsets inside one folio.
    // OVERFLOW: callers pass a slot that overlaps `from..to` (`s.pos < to`, `s.end > from`).
    (
        (s.pos.max(from) - s.pos) as usize,
        (s.end.min(to) - s.pos) as usize,
    )
}

/// Takes out of slot `k` (from its folio, or from a piece of it `aside`) the bytes of file
/// bytes `from..to` there, for the engine: the piece that holds them if it holds nothing else,
/// else a part split off it (the bytes after them going `aside` if they are in its middle).
/// `None` if no piece holds them all, or memory is short: then nothing changed.
fn take_piece(
    out: &mut [ReqFolio],
    k: usize,
    from: u64,
    to: u64,
    aside: &mut Aside,
) -> Option<OutFolio> {
    let s = out.get_mut(k)?;
    let (a, b) = piece_bytes(s, from, to);
    let covers = |f: &OutFolio| {
        let (x, y) = f.range();
        x <= a && b <= y
    };
    // Room for the bytes after, and a count for the parts, first: nothing fails once split.
    aside.reserve(1, GFP_KERNEL).ok()?;
    let f = if s.folio.as_ref().is_some_and(covers) {
        s.folio.as_mut()?
    } else {
        let j = aside.iter().position(|(i, f)| *i == k && covers(f))?;
        &mut aside.get_mut(j)?.1
    };
    let (x, y) = f.range();
    if (x, y) == (a, b) {
        // The whole piece: out of its slot, or out of `aside`.
        let p = if s.folio.as_ref().is_some_and(covers) {
            s.folio.take()
        } else {
            let j = aside.iter().position(|(i, f)| *i == k && covers(f))?;
            aside.remove(j).ok().map(|(_, p)| p)
        };
        normalize(out, k, aside);
        return p;
    }
    let mut spare = if f.is_part() {
        None
    } else {
        Some(Parts::new(GFP_KERNEL).ok()?)
    };
    if a == x || b == y {
        return f.split_off(a, b, &mut spare).ok();
    }
    // In the middle of the piece: the bytes after go aside, the piece keeps those before.
    let after = f.split_off(b, y, &mut spare).ok()?;
    match f.split_off(a, b, &mut None) {
        Ok(p) => {
            // Never fails: room made above.
            let _ = aside.push_within_capacity((k, after));
            Some(p)
        }
        Err(_) => {
            // (Cannot fail: `a..b` ends where the piece now does.) Joined again.
            if let Err(after) = f.merge(after) {
                let _ = aside.push_within_capacity((k, after));
            }
            None
        }
    }
}

/// Gives the pieces `outs` back from the engine to their slots, `first` and those after it, in
/// order ([`settle`]).
fn give_back(out: &mut [ReqFolio], first: usize, outs: KVec<OutFolio>, aside: &mut Aside) {
    for (k, f) in (first..).zip(outs) {
        settle(out, k, f, aside);
    }
}

/// Puts `f`, a piece of the folio of slot `k`, back: merged with the slot's piece if they
/// lie side by side, else `aside`; then [`normalize`].
fn settle(out: &mut [ReqFolio], k: usize, f: OutFolio, aside: &mut Aside) {
    let Some(s) = out.get_mut(k) else {
        // (Cannot happen: the pieces came from these slots, which do not move.)
        return;
    };
    match s.folio.as_mut() {
        None => s.folio = Some(f),
        Some(cur) => {
            if let Err(f) = cur.merge(f) {
                // Dropped if memory is short: the folio ends not uptodate, and is read again;
                // the slot's piece keeps it locked until then.
                let _ = aside.push((k, f), GFP_KERNEL);
            }
        }
    }
    normalize(out, k, aside);
}

/// Makes slot `k` hold the first (leftmost) piece of its folio that is not on the engine,
/// merged with those beside it that are `aside`: the one the software decodes into next, as
/// the jobs come in file order, and whole again once all are back.
fn normalize(out: &mut [ReqFolio], k: usize, aside: &mut Aside) {
    let Some(s) = out.get_mut(k) else {
        return;
    };
    let first = aside
        .iter()
        .enumerate()
        .filter(|(_, (i, _))| *i == k)
        .min_by_key(|(_, (_, p))| p.range().0)
        .map(|(j, _)| j);
    if let Some(j) = first {
        match s.folio.as_mut() {
            None => s.folio = aside.remove(j).ok().map(|(_, p)| p),
            Some(cur) => {
                if let Some((_, p)) = aside.get_mut(j) {
                    if p.range().0 < cur.range().0 {
                        core::mem::swap(cur, p);
                    }
                }
            }
        }
    }
    while let Some(cur) = s.folio.as_mut() {
        let (a, b) = cur.range();
        let Some(j) = aside.iter().position(|(i, p)| {
            let (x, y) = p.range();
            *i == k && (y == a || x == b)
        }) else {
            break;
        };
        let Ok((_, p)) = aside.remove(j) else {
            break;
        };
        if let Err(p) = cur.merge(p) {
            // (Cannot happen: the pieces of one folio share one count.) Left aside; never
            // allocates, one was just taken out.
            let _ = aside.push_within_capacity((k, p));
            break;
        }
    }
}

/// One read: the folios to fill (sorted, within `start..end`, with gaps where pages are
/// cached or busy), and the extents that cover `start..end` in file order.
pub(crate) struct Request {
    nid: u64,
    out: KVec<ReqFolio>,
    start: u64,
    end: u64,
    /// The first byte the VFS asked for (`headoffset`), before readahead or [`cache_head`]
    /// widened `start`: `cache_strategy=readaround` keeps the pclusters that start before it.
    head: u64,
    jobs: KVec<Job>,
    cfolios: KVec<CFolio>,
    /// The mount's acomp engine for DEFLATE pclusters, and the smallest pcluster it takes.
    accel: Option<Arc<Accel>>,
    accel_min: u32,
    /// The filesystem's block size (`sbi.blksz()`).
    blksz: u64,
    /// The compressed data on the primary device is read with bios by [`start_io`]: always on
    /// a block device; on a file-backed mount with `directio` (kiocb reads of the backing
    /// file, `vfs/bio.rs`). Else it is read here, through the backing file's page cache.
    bios: bool,
    /// Some folio of `out` is a part of one another read writes too ([`Shares::attach`]), or
    /// was split around a pcluster on the engine ([`Request::offload`]): see
    /// [`Request::has_parts`].
    parts: bool,
    /// A readahead batch ([`readahead`]), not a `read_folio`: a batch that begins where
    /// another read's folios end does not hand it a pcluster ([`Shares::enter`]).
    ahead: bool,
    /// Where the read is to be split between CPUs ([`Request::plan_split`]), from the last:
    /// file bytes at which jobs end and the next part's begin.
    cuts: KVec<u64>,
}

/// Requests whose reads are done, kept for the next reads of the mount with the room of their
/// vectors (the C driver allocates a pcluster from its slab per pcluster and keeps the rest
/// of a read on the stack): a cold random 4 KiB read made five allocations, four of them for
/// a request's box and vectors.
pub(crate) struct RequestCache(Pin<KBox<SpinLock<KVec<KBox<Request>>>>>);

/// How many done requests a mount keeps.
const POOLED_REQUESTS: usize = 4;

/// A kept request's vectors at most this long (entries): longer ones are not kept.
const POOLED_ROOM: usize = 64;

impl RequestCache {
    pub(crate) fn new() -> Result<Self> {
        let free = KVec::with_capacity(POOLED_REQUESTS, GFP_KERNEL)?;
        Ok(RequestCache(KBox::pin_init(
            new_spinlock!(free, "erofs_rs_requests"),
            GFP_KERNEL,
        )?))
    }

    /// A request with no folios, jobs or device folios: a kept one, or a new one.
    fn take(&self) -> Result<KBox<Request>> {
        if let Some(r) = self.0.lock().pop() {
            return Ok(r);
        }
        Ok(KBox::new(
            Request {
                nid: 0,
                out: KVec::new(),
                start: 0,
                end: 0,
                head: 0,
                jobs: KVec::new(),
                cfolios: KVec::new(),
                accel: None,
                accel_min: 0,
                blksz: 0,
                bios: true,
                parts: false,
                ahead: false,
                cuts: KVec::new(),
            },
            GFP_KERNEL,
        )?)
    }

    /// Keeps `req`, whose folios are all handed back, emptied, unless the pool is full or its
    /// vectors grew long.
    fn give(&self, mut req: KBox<Request>) {
        if req.out.iter().any(|s| s.folio.is_some())
            || req.out.capacity() > POOLED_ROOM
            || req.jobs.capacity() > POOLED_ROOM
            || req.cfolios.capacity() > POOLED_ROOM
        {
            return;
        }
        req.out.clear();
        req.jobs.clear();
        req.cfolios.clear();
        req.cuts.clear();
        req.accel = None;
        let mut free = self.0.lock();
        // Never allocates: within the room made at mount.
        let spare = free.push_within_capacity(req).err();
        drop(free);
        // A full pool: freed here, out of the lock.
        drop(spare);
    }
}

/// The pclusters kept by the managed cache that a read of the mount is reading and has not
/// begun to decode, by which another read of the same file that wants some of their bytes
/// hands that read its folios' parts for them, so that each is read and decoded once, as the
/// C driver does when `z_erofs_pcluster_begin` finds a pcluster another read has claimed
/// (`Z_EROFS_PCLUSTER_INFLIGHT`: its bvecs gain the second read's pages).
///
/// Only those pclusters: a read keeps the ones it does not decode to their end or that start
/// before the first byte asked for ([`Request::cache_keeps`]), which are the ones two
/// concurrent reads of one file can both want (with `readaround`, each keeps them). The
/// entries live in one vector under one lock, with room made at mount: entering and removing
/// one allocates nothing (a cold random read enters one or two).
pub(crate) struct Shares(Arc<SpinLock<Table>>);

/// The entries of [`Shares`], and the number the next one gets.
struct Table {
    entries: KVec<Entry>,
    next: u64,
}

/// How many entries [`Shares`] has room for at mount (more are added without sleeping).
const SHARES_ROOM: usize = 16;

/// What tells that two reads want the same pcluster of the same file: its device byte, the
/// inode, and where its extent starts. (Not the extent's length: each read maps it as far as
/// it reads, `Want::Until`.)
#[derive(Clone, Copy, PartialEq, Eq)]
struct Key {
    abs: u64,
    nid: u64,
    la: u64,
    plen: u64,
    alg: u8,
}

impl Key {
    fn new(nid: u64, abs: u64, map: &ZMap) -> Self {
        Key {
            abs,
            nid,
            la: map.la,
            plen: map.plen,
            alg: map.algorithmformat,
        }
    }
}

/// Which read a pcluster of [`Shares`] belongs to: its request's address, only compared (the
/// request lives, in place, for as long as its entries do).
#[derive(Clone, Copy, PartialEq, Eq)]
struct ReadId(usize);

impl ReadId {
    /// The id of the read of `req`.
    fn of(req: &Request) -> Self {
        ReadId(core::ptr::from_ref(req) as usize)
    }
}

/// One pcluster of [`Shares`]: the read reading it (`owner`, and the file byte where its
/// folios end), and what other reads handed it, if any did.
struct Entry {
    id: u64,
    key: Key,
    owner: ReadId,
    end: u64,
    handed: Option<KBox<Handed>>,
}

/// What other reads handed a pcluster of [`Shares`]: the parts of their folios it is to be
/// decoded into, the file bytes `from..to` they cover, and the longest of those reads' maps of
/// its extent.
struct Handed {
    from: u64,
    to: u64,
    map: ZMap,
    parts: KVec<ReqFolio>,
}

/// What [`Shares::enter`] did.
enum Entered {
    /// Another read entered the pcluster: hand it our bytes ([`Shares::attach`]).
    Theirs,
    /// Another read entered the pcluster, and we are the next readahead batch of its stream:
    /// read it ourselves, and enter nothing.
    Follows,
    /// We did (`None`: no room).
    Ours(Option<Share>),
}

/// A read's entry in [`Shares`], `id`: taken out when dropped; the parts handed to it and not
/// taken then are dropped, so their folios end not uptodate, to be read again.
struct Share {
    table: Arc<SpinLock<Table>>,
    /// `None` once closed.
    id: Option<u64>,
    /// What was handed to it, once closed before its job could be decoded
    /// ([`Request::decode_ready`]).
    kept: Option<KBox<Handed>>,
}

impl Share {
    /// Takes the entry out of [`Shares`]: no more parts are handed to it. Returns what was
    /// handed to it (`None` if nothing was); once closed, what [`Share::kept`] holds.
    fn close(&mut self) -> Option<KBox<Handed>> {
        let Some(id) = self.id.take() else {
            return self.kept.take();
        };
        let mut t = self.table.lock();
        let i = t.entries.iter().position(|e| e.id == id)?;
        // The last in its place (the order does not matter): mostly it is the last.
        let last = t.entries.len().checked_sub(1)?;
        if i != last {
            t.entries.swap(i, last);
        }
        let e = t.entries.pop()?;
        drop(t);
        e.handed
    }

    /// The end of the bytes handed to the entry so far, if any were.
    fn wanted(&self) -> Option<u64> {
        let Some(id) = self.id else {
            return self.kept.as_ref().map(|h| h.to);
        };
        let t = self.table.lock();
        let e = t.entries.iter().find(|e| e.id == id)?;
        e.handed.as_ref().map(|h| h.to)
    }
}

impl Drop for Share {
    fn drop(&mut self) {
        // Out of the lock: dropping a part may unlock its folio.
        drop(self.close());
    }
}

impl Shares {
    pub(crate) fn new() -> Result<Self> {
        let t = Table {
            entries: KVec::with_capacity(SHARES_ROOM, GFP_KERNEL)?,
            next: 0,
        };
        Ok(Shares(Arc::pin_init(
            new_spinlock!(t, "erofs_rs_shares"),
            GFP_KERNEL,
        )?))
    }

    /// Enters the pcluster `key` that the read `owner` reads (its folios in file bytes
    /// `start..end`), for others to hand it their bytes of it, unless another read than `owner`
    /// and `handed` (the read `owner` handed a pcluster to) entered it already
    /// ([`Entered::Theirs`]): one look at the table for both.
    ///
    /// If that read's folios end at `start` and `owner` is a readahead batch (`ahead`), `owner`
    /// is the next window of a sequential reader: it reads the pcluster itself
    /// ([`Entered::Follows`]). That read's backend has the rest of its batch to decode
    /// first, and ours would wait for it on the same CPU (both batches' bios end in one
    /// completion): a cold 40 MiB sequential read handed 2-5 pclusters so, and lost 1-2% of
    /// its throughput on LZ4 with per-CPU kthreads.
    fn enter(
        &self,
        key: Key,
        owner: ReadId,
        handed: ReadId,
        (start, end): (u64, u64),
        ahead: bool,
    ) -> Entered {
        let mut t = self.0.lock();
        if let Some(e) = t
            .entries
            .iter()
            .find(|e| e.key == key && e.owner != owner && e.owner != handed)
        {
            if ahead && e.end == start {
                return Entered::Follows;
            }
            return Entered::Theirs;
        }
        Entered::Ours(Self::push(&mut t, &self.0, key, owner, end))
    }

    /// Enters the pcluster `key` that the read `owner` reads (its folios ending at file byte
    /// `end`), for others to hand it their bytes of it; `None` if there is no room for it (then
    /// none can).
    fn register(&self, key: Key, owner: ReadId, end: u64) -> Option<Share> {
        Self::push(&mut self.0.lock(), &self.0, key, owner, end)
    }

    /// [`Shares::register`], under the lock of `table`, held as `t`.
    fn push(
        t: &mut Table,
        table: &Arc<SpinLock<Table>>,
        key: Key,
        owner: ReadId,
        end: u64,
    ) -> Option<Share> {
        let id = t.next;
        t.next = id.wrapping_add(1);
        let e = Entry {
            id,
            key,
            owner,
            end,
            handed: None,
        };
        // Within the room made at mount, unless more reads than that are under way.
        t.entries.push(e, GFP_NOWAIT).ok()?;
        Some(Share {
            table: table.clone(),
            id: Some(id),
            kept: None,
        })
    }

    /// Hands the read of pcluster `key` that another request than `this` and `handed` registered,
    /// and has not begun to decode, the parts of `req`'s folios in file bytes `from..to`
    /// (those `req`'s job of the pcluster, mapped as `map`, would write). Returns that read's
    /// request ([`Entry::owner`]) and how many folios gave a part; `None` if there is no such
    /// read, or a folio there cannot give one (lent to a bio, or its part would cut what it
    /// keeps in two), or no memory: then nothing was handed. Errors leave some parts handed and
    /// the folios they were cut from unable to take the pcluster's bytes: the read fails.
    #[expect(
        clippy::too_many_arguments,
        reason = "the pcluster, its range and the two reads' slots, as `Shares` keeps them"
    )]
    fn attach(
        &self,
        key: Key,
        map: &ZMap,
        this: ReadId,
        handed: ReadId,
        req: &mut Request,
        from: u64,
        to: u64,
    ) -> Result<Option<(ReadId, u32)>> {
        if from >= to {
            return Ok(None);
        }
        let first = req.out.partition_point(|s| s.end <= from);
        let n = req
            .out
            .get(first..)
            .unwrap_or_default()
            .iter()
            .take_while(|s| s.pos < to)
            .count();
        if n == 0 {
            return Ok(None);
        }
        // OVERFLOW: `first + n` slots exist, counted above.
        let slots = &mut req.out[first..first + n];
        // What each folio gives: its bytes in `from..to`, which must start or end where its
        // own bytes do.
        let given = |s: &ReqFolio| -> Option<(usize, usize)> {
            let f = s.folio.as_ref().filter(|_| !s.lent)?;
            // CAST: offsets inside one folio.
            // OVERFLOW: the slot overlaps `from..to` (sorted slots, `s.pos < to`, `s.end > from`).
            let a = (s.pos.max(from) - s.pos) as usize;
            let b = (s.end.min(to) - s.pos) as usize;
            let (fa, fb) = f.range();
            (fa <= a && b <= fb && (a == fa || b == fb)).then_some((a, b))
        };
        let mut spares = KVec::with_capacity(n, GFP_KERNEL)?;
        for s in slots.iter() {
            if given(s).is_none() {
                return Ok(None);
            }
            if s.folio.as_ref().is_some_and(|f| !f.is_part()) {
                spares.push(Parts::new(GFP_KERNEL)?, GFP_KERNEL)?;
            }
        }
        // For the first read to hand it anything.
        let mut fresh = Some(KBox::new(
            Handed {
                from,
                to,
                map: *map,
                parts: KVec::with_capacity(n, GFP_KERNEL)?,
            },
            GFP_KERNEL,
        )?);
        let mut t = self.0.lock();
        let Some(e) = t
            .entries
            .iter_mut()
            .find(|e| e.key == key && e.owner != this && e.owner != handed)
        else {
            // Its read began to decode meanwhile.
            return Ok(None);
        };
        let owner = e.owner;
        let h = match e.handed.as_mut() {
            Some(h) => {
                if h.parts.reserve(n, GFP_NOWAIT).is_err() {
                    return Ok(None);
                }
                h.from = h.from.min(from);
                h.to = h.to.max(to);
                let ext_end = |m: &ZMap| m.la.saturating_add(m.llen);
                if ext_end(&h.map) < ext_end(map) {
                    h.map = *map;
                }
                h
            }
            None => e.handed.insert(fresh.take().ok_or(EINVAL)?),
        };
        for s in slots.iter_mut() {
            let (ca, cb) = given(s).ok_or(EINVAL)?;
            let f = s.folio.as_mut().ok_or(EINVAL)?;
            let mut spare = if f.is_part() { None } else { spares.pop() };
            let part = f.split_off(ca, cb, &mut spare)?;
            // Never allocates: room made above.
            h.parts
                .push_within_capacity(ReqFolio {
                    pos: s.pos,
                    end: s.end,
                    folio: Some(part),
                    lent: false,
                })
                .map_err(|_| ENOMEM)?;
        }
        drop(t);
        req.parts = true;
        // Not needed after all: freed out of the lock.
        drop(fresh);
        // CAST: at most the request's slots, which are far fewer.
        Ok(Some((owner, n as u32)))
    }
}

/// The page-cache operations of compressed files, of both kinds of mounts (`z_erofs_aops`).
pub(crate) struct ZAops;

impl vfs::fs::AddressSpace for ZAops {
    type Folio<'a> = OutFolio;

    fn read_folio(folio: OutFolio) -> Result {
        read_folio(folio)
    }

    fn readahead(rac: Readahead<'_>) {
        readahead(rac)
    }
}

/// `read_folio` for compressed inodes (`z_erofs_read_folio`): decompresses in the caller.
pub(crate) fn read_folio(folio: OutFolio) -> Result {
    // Metadata comes from the real inode of a shared one (`inode_share`); pages go to the
    // page cache being read.
    let real = folio.real_inode().ok_or(EIO)?;
    let start = folio.pos();
    vfs::trace::read_folio(&real.inode(), start, folio.size(), false);
    let end = start.checked_add(folio.size() as u64).ok_or(EINVAL)?;
    let cache = folio.cache().ok_or(EIO)?;
    let inode = real.inode();
    let st = inode.sb().state();
    let dev = inode.sb().device();
    let mut req = st.requests.take()?;
    req.ahead = false;
    req.out.push(ReqFolio::new(folio), GFP_KERNEL)?;
    let mut win = [0u8; SMALL_WINDOW];
    let meta = MetaBuf::new(dev, &mut win);
    submit(
        inode,
        &Lookups::new(&meta),
        &cache,
        req,
        start,
        end,
        true,
        None,
    )
}

/// `readahead` for compressed inodes (`z_erofs_readahead`): widens the batch to whole extents,
/// then starts the reads; workers decompress.
pub(crate) fn readahead(mut rac: Readahead<'_>) {
    let Some(real) = rac.real_inode() else { return };
    let inode = real.inode();
    let cache = rac.cache();
    let (start, len) = rac.range();
    vfs::trace::readahead(&inode, start, len, false);
    // Small readahead (as asked, before widening) decompresses in the reader, as the C
    // driver's `z_erofs_runqueue` once `sync_decompress` is on.
    let small = len <= SYNC_READAHEAD_MAX;
    let sync = small && inode.sb().zstats().sync_small_readahead();
    // One window of metadata for the lookups of `readmore` and of the request, which read the
    // same index blocks (the C driver keeps `map.buf` across them), on the stack; each of the
    // two is zeroed only when used.
    let mut small_win;
    let mut large_win;
    let win: &mut [u8] = if small {
        small_win = [0u8; SMALL_WINDOW];
        &mut small_win
    } else {
        large_win = [0u8; LARGE_WINDOW];
        &mut large_win
    };
    let st = inode.sb().state();
    let dev = inode.sb().device();
    let meta = MetaBuf::new(dev, win);
    let maps = Lookups::new(&meta);
    if let Some((s, e)) = readmore(inode, &maps, start, start.saturating_add(len), small) {
        // Forward first: `readahead_expand` stops at the first folio already cached before the
        // batch, without growing it forward either, which left the batch's last extent to be
        // decoded again (and its pcluster kept) by the next batch.
        // OVERFLOW: `readmore` returns `s <= start < end <= e`.
        rac.expand(start, e - start);
        if s < start {
            // OVERFLOW: as above.
            rac.expand(s, e - s);
        }
    }
    // A slot per folio; at most one per page (`cache_tail` adds none to a readahead batch).
    let (_, batch) = rac.range();
    let slots = usize::try_from(batch >> PAGE_SHIFT).map_or(0, |n| n.min(1024));
    // (Without a request, the VFS unlocks the batch's folios not uptodate, to be read again
    // with `read_folio` when someone needs them.)
    let Ok(mut req) = st.requests.take() else {
        return;
    };
    req.ahead = true;
    let _ = req.out.reserve(slots, GFP_KERNEL);
    while let Some(folio) = rac.next_folio() {
        // On allocation failure the folio is dropped, which unlocks it not uptodate: the VFS
        // reads it again with `read_folio` when someone needs it.
        let _ = req.out.push(ReqFolio::new(folio), GFP_KERNEL);
    }
    let (Some(first), Some(last)) = (req.out.first(), req.out.last()) else {
        st.requests.give(req);
        return;
    };
    let (first_pos, last_end) = (first.pos, last.end);
    // Errors leave the folios not uptodate, and were reported.
    let _ = submit(
        inode,
        &maps,
        &cache,
        req,
        first_pos,
        last_end,
        sync,
        Some(start),
    );
    // The index page after the last one this batch's lookups read: a sequential reader's next
    // batch starts there, and would wait for it with every CPU idle.
    if let Some(w) = meta.window() {
        let page = PAGE_SIZE as u64;
        crate::data::prefetch_meta(dev, (w & !(page - 1)).saturating_add(page));
    }
}

/// What a lookup of [`zmap`] is for.
#[derive(Clone, Copy)]
enum Want {
    /// The extent at `la`, as far as `la`'s lcluster tells (`z_erofs_map_blocks_iter`).
    One,
    /// The extent at `la`, with its lclusters before this position (`map_blocks_until`): for a
    /// reader that goes on there.
    Until(u64),
    /// The extent at `la` and its exact length (`EROFS_GET_BLOCKS_FIEMAP`).
    Exact,
}

/// The extent lookups of one read (`read_folio`, or a readahead batch with its `readmore`),
/// through its metadata window. The last two results are kept, and a lookup one of them answers
/// is not made again, as the C driver's `z_erofs_scan_folio` maps again only outside the
/// extent `struct z_erofs_frontend` holds: the lookups of `readmore` are those of the
/// request's first and last extents (a random 4 KiB read looked up its extent three times and
/// loaded 7.3 index entries where the C driver loads 2.8).
struct Lookups<'a, M: MetaRead> {
    meta: &'a M,
    seen: RefCell<[Option<Seen>; 2]>,
}

/// A lookup kept by [`Lookups`]: what it asked and what it found.
#[derive(Clone, Copy)]
struct Seen {
    nid: u64,
    /// The lcluster of the byte looked up.
    lcn: u64,
    want: Want,
    map: ZMap,
}

impl Seen {
    /// Whether a lookup of byte `la` (in lcluster `lcn`) of inode `nid` for `want` would find
    /// this extent, as this lookup found it: `la` lies in it, and
    /// - [`Want::One`]: it was a `One` lookup in the same lcluster (whose extent and its end
    ///   there do not depend on where in the lcluster `la` is, once `la` lies in it);
    /// - [`Want::Until`]: it reaches `until` or its exact end (the extended lookup's result
    ///   would end at the same place, or the extent goes on past `until` in both: the read
    ///   decodes only to `until` either way);
    /// - [`Want::Exact`]: it was an `Exact` lookup.
    ///
    /// Fragments are never answered: their `pa` is the offset of `la` itself.
    fn answers(&self, nid: u64, la: u64, lcn: u64, want: Want) -> bool {
        let m = &self.map;
        let end = m.la.saturating_add(m.llen);
        if self.nid != nid || la < m.la || la >= end || m.flags & MAP_FRAGMENT != 0 {
            return false;
        }
        match (want, self.want) {
            (Want::One, Want::One) => self.lcn == lcn,
            (Want::Until(until), _) => end >= until || m.full_mapped(),
            (Want::Exact, Want::Exact) => true,
            _ => false,
        }
    }
}

impl<'a, M: MetaRead> Lookups<'a, M> {
    fn new(meta: &'a M) -> Self {
        Lookups {
            meta,
            seen: RefCell::new([None; 2]),
        }
    }

    /// [`zmap`] of byte `la` of `vi`, or the result of an earlier lookup that answers it
    /// ([`Seen::answers`]).
    fn map(
        &self,
        sb: &SuperBlock<'_>,
        vi: &InodeInfo,
        zi: &ZInfo,
        la: u64,
        want: Want,
    ) -> core::result::Result<ZMap, core_::Error> {
        let nid = vi.nid.0;
        let lcn = la >> zi.z_lclusterbits.min(63);
        if la >= vi.size {
            // Past EOF: an unmapped extent of its own, never kept.
            return zmap(sb, self.meta, vi, zi, la, want);
        }
        // (Borrowed in place, not copied: the lookups are not reentrant, so the borrows cannot
        // fail.)
        if let Ok(seen) = self.seen.try_borrow() {
            if let Some(s) = seen
                .iter()
                .flatten()
                .find(|s| s.answers(nid, la, lcn, want))
            {
                return Ok(s.map);
            }
        }
        let map = zmap(sb, self.meta, vi, zi, la, want)?;
        if let Ok(mut seen) = self.seen.try_borrow_mut() {
            // The newest first; the older one goes.
            seen[1] = seen[0].take();
            seen[0] = Some(Seen {
                nid,
                lcn,
                want,
                map,
            });
        }
        Ok(map)
    }
}

/// `z_erofs_map_blocks_iter`: the core's mapping of byte `la` of the compressed inode `vi`,
/// between the C driver's `erofs_map_blocks_enter` and `_exit` events.
fn zmap(
    sb: &SuperBlock<'_>,
    meta: &impl MetaRead,
    vi: &InodeInfo,
    zi: &ZInfo,
    la: u64,
    want: Want,
) -> core::result::Result<ZMap, core_::Error> {
    let fiemap = matches!(want, Want::Exact);
    let flags = if fiemap { GET_BLOCKS_FIEMAP } else { 0 };
    vfs::trace::map_blocks_enter(sb, vi.nid.0, la, 0, flags);
    let r = match want {
        Want::Until(until) => map_blocks_until(&sb.state().sbi, meta, vi, zi, la, until),
        _ => map_blocks(&sb.state().sbi, meta, vi, zi, la, fiemap),
    };
    let (exit, ret) = match &r {
        Ok(m) => (
            vfs::trace::MapExit {
                la: m.la,
                pa: m.pa,
                llen: m.llen,
                plen: m.plen,
                mflags: m.flags,
            },
            0,
        ),
        Err(e) => (
            vfs::trace::MapExit {
                la,
                pa: 0,
                llen: 0,
                plen: 0,
                mflags: 0,
            },
            to_kernel(*e).to_errno(),
        ),
    };
    vfs::trace::map_blocks_exit(sb, vi.nid.0, flags, &exit, ret);
    r
}

/// The range to read around `start..end` so that its first and last extents are read whole
/// (`z_erofs_pcluster_readmore`), page aligned, less the page the first extent starts inside;
/// `None` if nothing is to be added.
///
/// A `small` batch (a few pages, as a random read asks for) takes its last extent only as far as
/// its lookup tells (the lcluster) unless a stream decoder decodes it and the lookup found a
/// block of it or more, as the C driver's `EROFS_GET_BLOCKS_READMORE`: decoding an LZ4 extent
/// whole took a random 4 KiB read into the next extent's pcluster too, for pages nobody asked
/// for. Bigger batches take it whole,
/// so that the next batch does not decode it again.
fn readmore(
    inode: Inode<'_>,
    maps: &Lookups<'_, impl MetaRead>,
    start: u64,
    end: u64,
    small: bool,
) -> Option<(u64, u64)> {
    let vi = inode.info();
    let zi = inode.zinfo()?;
    if start >= end || start >= vi.size {
        return None;
    }
    let head = maps.map(&inode.sb(), vi, zi, start, Want::One).ok()?;
    // OVERFLOW: `start < end` and `start < vi.size`, so the minimum is at least 1.
    let last = end.min(vi.size) - 1;
    let want = |w| maps.map(&inode.sb(), vi, zi, last, w).ok();
    let tail = if small {
        want(Want::One).and_then(|t| {
            let stream = matches!(
                t.algorithmformat,
                Z_EROFS_COMPRESSION_LZMA | Z_EROFS_COMPRESSION_DEFLATE | Z_EROFS_COMPRESSION_ZSTD
            );
            if stream && t.llen >= inode.sb().state().sbi.blksz() {
                want(Want::Exact)
            } else {
                Some(t)
            }
        })?
    } else {
        want(Want::Exact)?
    };
    let page = PAGE_SIZE as u64;
    // Back to the first page wholly in the head extent, as the C driver's front readmore
    // (`round_up(map->m_la, PAGE_SIZE)`): the page holding the extent's first byte also ends
    // the extent before it, which would have to be decoded whole for those bytes (a random
    // 4 KiB read decoded two pclusters where the C driver decodes one).
    let s = head.la.checked_next_multiple_of(page)?.min(start);
    let tail_end = tail
        .la
        .saturating_add(tail.llen)
        .min(vi.size)
        .min(end.saturating_add(READMORE_MAX));
    let e = tail_end.max(end).checked_next_multiple_of(page)?;
    (s < start || e > end).then_some((s, e))
}

/// Fills in `req`, whose folios (`req.out`) cover `start..end`, starts its I/O and
/// hands it to the backend: in the caller when `sync`. `ra` is the first byte a readahead was
/// asked for (then its bios are readahead), `None` for `read_folio`.
#[expect(
    clippy::too_many_arguments,
    reason = "the arguments of C's z_erofs_pcluster_readmore/runqueue, gathered in one place"
)]
fn submit(
    inode: Inode<'_>,
    maps: &Lookups<'_, impl MetaRead>,
    cache: &PageCache<'_>,
    mut req: KBox<Request>,
    start: u64,
    end: u64,
    sync: bool,
    ra: Option<u64>,
) -> Result {
    let sb = inode.sb();
    let st = sb.state();
    let dev = sb.device();
    let vi = inode.info();
    let flags = st.opt_flags();
    let direct = flags.contains(MountFlags::DIRECT_IO);
    req.nid = vi.nid.0;
    req.parts = false;
    req.start = start;
    req.end = end;
    req.head = ra.unwrap_or(start);
    reserve_jobs(&mut req.jobs, inode, start, end);
    req.accel = st.accel.clone();
    req.accel_min = st.accel_min;
    req.blksz = st.sbi.blksz();
    req.bios = !dev.is_file() || direct;
    let Some(zi) = inode.zinfo() else {
        // The map header was reported bad when the inode was read.
        return Err(EFSCORRUPTED);
    };
    // The extent lookups of one request read their indexes through the caller's window.
    let start = req.start;
    collect(sb, maps, vi, zi, &mut req, start)?;
    cache_head(cache, &mut req)?;
    // Readahead grew the batch to its last extent's end already (`readmore`); pages added
    // past the batch here would be outside the readahead window, where the next window's
    // `PG_readahead` mark then falls on a page already cached and is lost: the stream of
    // reads went on in small synchronous batches, each keeping a partly decoded pcluster
    // (23 batches for a 40 MiB read where the C driver has 10, with 4-5% more page cache).
    // As `z_erofs_readahead`, the page past the batch's last extent is left to the next batch.
    if ra.is_none() {
        cache_tail(inode, maps, cache, &mut req)?;
    }
    let pcpu = flags.contains(MountFlags::PCPU_KTHREADS);
    req.cuts.clear();
    if !req.bios {
        if !sync {
            req.plan_split(st.opts.load().split);
        }
        // Read through the backing file's page cache, in the caller: nothing is left to wait
        // for. (A sync read is not split: its caller takes the error of all of it.)
        let events = st.zstats.events();
        let mut spread = if sync {
            None
        } else {
            Spread::for_reader(sb, &events, pcpu).ok()
        };
        let ret = req.run_backend(0, spread.as_mut());
        if let Some(sp) = spread.as_mut() {
            sp.take_back();
        }
        return ret;
    }
    let mut q = ZQueue::new(sb, st.zstats.events(), sync, pcpu, direct)?;
    if ra.is_some() {
        q.set_readahead();
    }
    // Before the reads are built: in-place I/O must not put a pcluster's input where the next
    // part writes.
    req.cuts.clear();
    if !sync {
        req.plan_split(st.opts.load().split);
    }
    start_io(sb, &mut q, &mut req)?;
    // What needs none of the I/O is decoded now, while it is on its way, and its folios go
    // back at once (`z_erofs_runqueue`'s bypass queue, for sync and async reads alike).
    // (Device pclusters only when some were cached: checking each folio of each costs a
    // random read more than the rest of this.)
    let hit = q.hit();
    if req.accel.is_none() && req.jobs.iter().any(|j| req.ready(j, hit)) {
        q.bypass(|| req.decode_ready());
    }
    // A sync queue runs here, after its I/O, and its error is the read's (the C driver's
    // `z_erofs_read_folio` returns `z_erofs_runqueue`'s: EFSCORRUPTED for data that fails to
    // decode, not the VFS's EIO); a worker's errors are reported by the backend and show as
    // folios left not uptodate, which the VFS turns into EIO.
    match q.commit(req) {
        Committed::Ran(r) => r,
        Committed::Queued => Ok(()),
    }
}

impl ZWork for Request {
    type Events = stats::Stats;

    fn run(
        mut self: KBox<Self>,
        err: i32,
        mut lent: KVec<(usize, OutFolio)>,
        spread: &mut Spread<'_, Self>,
    ) -> Result {
        // The folios read in place go back to their slots (each was taken from one).
        for (i, f) in lent.drain_all() {
            if let Some(s) = self.out.get_mut(i).filter(|s| s.folio.is_none()) {
                s.folio = Some(f);
                s.lent = false;
            }
        }
        release(lent);
        self.run_backend(err, Some(spread))
    }

    fn sizes(&self) -> (u32, u64, u64) {
        let mut n = (0u32, 0u64, 0u64);
        // (Not those decoded before the I/O completed: `decode_ready` ran them.)
        for job in self.jobs.iter().filter(|j| !matches!(j.src, Src::Done)) {
            // With the bytes other reads handed it so far, as `take_shared` extends it.
            let end = match job.share.as_ref().and_then(Share::wanted) {
                Some(to) => job.end.max(to),
                None => job.end,
            };
            job.count_upto(end, &mut n);
        }
        n
    }
}

/// Room in `jobs` (empty) for the jobs of a request over `start..end`: one per lcluster at most
/// (so as not to grow the vector while collecting), within reason; none if even that cannot
/// be had.
fn reserve_jobs(jobs: &mut KVec<Job>, inode: Inode<'_>, start: u64, end: u64) {
    let bits = inode
        .zinfo()
        .map_or(PAGE_SHIFT as u8, |zi| zi.z_lclusterbits)
        .min(63);
    let lclusters = end.saturating_sub(start) >> bits;
    let n = usize::try_from(lclusters).map_or(64, |n| n.saturating_add(2).min(64));
    let _ = jobs.reserve(n, GFP_KERNEL);
}

/// The metadata window of a small read (a few pages, as random reads ask): its lookups read a
/// few index entries next to each other. A page-sized window, zeroed and then filled with a
/// copy of the whole index block, cost a cold random 4 KiB read of LZ4 4 KiB pclusters about
/// 7 us of guest time, half of what it took over the C driver's; 256 bytes still cost it 1%
/// more than 64 (bench/icount, random reads: 0.942 of C's throughput against 0.953), which
/// hold the compact pack (32 bytes at most) or the 8-byte full entries a lookup reads. A read
/// that does not fit in the window goes to the page cache.
const SMALL_WINDOW: usize = 64;

/// The metadata window of a larger read: 256 bytes map 128 lclusters of 2-byte compact indexes
/// (512 KiB of 4 KiB lclusters), 64 of 4-byte ones, 32 of full ones; a window read again costs
/// a page-cache lookup and a copy of the window. A page-sized window on the heap, zeroed and
/// then filled with a copy of the whole index block, cost a cold sequential read of LZ4 16 KiB
/// pclusters about 9,600 guest instructions per MiB more (bench/profile). On the stack, as
/// the small one: the reader may decode there.
const LARGE_WINDOW: usize = 256;

/// Maps the extents of `from..req.end` into `req.jobs` (after those it has), merging the pieces
/// of one pcluster that consecutive lclusters map (`z_erofs_scan_folio`), and reads inline and
/// fragment data. `from` is `req.start`, or where the jobs so far end.
fn collect(
    sb: SuperBlock<'_>,
    maps: &Lookups<'_, impl MetaRead>,
    vi: &InodeInfo,
    zi: &ZInfo,
    req: &mut Request,
    from: u64,
) -> Result {
    let st = sb.state();
    let nid = vi.nid.0;
    let mut la = from;
    while la < req.end {
        if la >= vi.size {
            // OVERFLOW: `la < req.end`, the loop condition.
            let map = ZMap {
                la,
                llen: req.end - la,
                pa: 0,
                plen: 0,
                flags: 0,
                algorithmformat: 0,
            };
            req.jobs.push(
                Job {
                    map,
                    end: req.end,
                    src: Src::Zero,
                    share: None,
                },
                GFP_KERNEL,
            )?;
            break;
        }
        let map = maps
            .map(&sb, vi, zi, la, Want::Until(req.end))
            .inspect_err(|e| report(sb, e))
            .map_err(to_kernel)?;
        let ext_end = map.la.saturating_add(map.llen);
        if map.la > la || ext_end <= la {
            sb.err(format_args!(
                "bogus extent {}+{} for offset {} @ nid {}",
                map.la, map.llen, la, nid
            ));
            return Err(EFSCORRUPTED);
        }
        let end = ext_end.min(req.end);
        if let Some(prev) = req.jobs.last_mut() {
            let same = prev.map.flags & MAP_MAPPED != 0
                && prev.map.flags & MAP_FRAGMENT == 0
                && prev.map.la == map.la
                && prev.map.pa == map.pa
                && prev.map.plen == map.plen
                && prev.map.algorithmformat == map.algorithmformat
                && prev.end == la;
            if same {
                // The next lcluster of the same pcluster: decode further.
                prev.map = map;
                prev.end = end;
                la = end;
                continue;
            }
        }
        let src = if map.flags & MAP_FRAGMENT != 0 {
            if nid == st.sbi.packed_nid {
                // Its fragment would be read from itself: through the page being read (a
                // deadlock; the C driver of 7.3 hangs there) or page after page. erofs-utils
                // refuses it likewise.
                sb.err(format_args!(
                    "fragment in the packed inode itself @ nid {nid}"
                ));
                return Err(EFSCORRUPTED);
            }
            read_fragment(sb, map, la, end, vi.size, nid)?
        } else if map.flags & MAP_MAPPED == 0 {
            Src::Zero
        } else if map.flags & MAP_META != 0 {
            Src::Buf(read_bytes(sb, map.pa, map.plen, nid, true)?)
        } else {
            // On the primary device filled in by `start_io` when it reads with bios; read now
            // otherwise.
            match st.map_dev(0, map.pa)? {
                (None, _) if req.bios => Src::Pending,
                (None, pa) => Src::Buf(read_bytes(sb, pa, map.plen, nid, false)?),
                (Some(d), pa) => {
                    let mut buf = alloc_buf(map.plen)?;
                    d.dev
                        .read(pa, &mut buf)
                        .map_err(to_core)
                        .inspect_err(|e| report(sb, e))
                        .map_err(to_kernel)?;
                    Src::Buf(buf)
                }
            }
        };
        req.jobs.push(
            Job {
                map,
                end,
                src,
                share: None,
            },
            GFP_KERNEL,
        )?;
        la = end;
    }
    Ok(())
}

/// Adds the pages between the start of the first extent and the request, which are decoded
/// anyway, so that later reads find them cached (`z_erofs_pcluster_readmore` without
/// readahead): only absent pages nobody holds, never waiting.
fn cache_head(cache: &PageCache<'_>, req: &mut Request) -> Result {
    let page = PAGE_SIZE as u64;
    let Some(first) = req.jobs.first() else {
        return Ok(());
    };
    if first.map.la >= req.start || !matches!(first.src, Src::Pending | Src::Buf(_)) {
        return Ok(());
    }
    // OVERFLOW: `first.map.la < req.start`, a folio position, far below `u64::MAX`.
    let from = first.map.la.next_multiple_of(page) >> PAGE_SHIFT;
    let to = req.start >> PAGE_SHIFT;
    if from >= to {
        return Ok(());
    }
    // OVERFLOW: `from < to` just above.
    let extra = usize::try_from(to - from).unwrap_or(0);
    let mut out = KVec::with_capacity(req.out.len().checked_add(extra).ok_or(EINVAL)?, GFP_KERNEL)?;
    for index in from..to {
        if let Some(f) = cache.grab_folio_nowait(index) {
            out.push(ReqFolio::new(f), GFP_KERNEL)?;
        }
    }
    let Some(head) = out.first() else {
        return Ok(());
    };
    req.start = head.pos;
    for f in req.out.drain_all() {
        out.push(f, GFP_KERNEL)?;
    }
    req.out = out;
    Ok(())
}

/// Output pages of a job on the stack (256 bytes, as C's `onstack_pages` of
/// `z_erofs_decompress_pcluster`): a 4 or 16 KiB pcluster's output mostly fits.
const ONSTACK_OUT: usize = 16;

/// The output pages of one job ([`Request::out_pages`]): in place up to [`ONSTACK_OUT`].
type OutPages<'a> = SmallVec<Option<OutPage<'a>>, ONSTACK_OUT>;

/// The pages of an extent's output that fall in parts of folios, decoded into bounce folios
/// and copied after ([`Request::copy_parted`]): the page's index in the output and the slot of
/// its folio. A part is at most at each end of a run of folios: two on the stack cover most.
type Parted = SmallVec<(usize, usize), 4>;

/// Decompressed size up to which the request's last extent is decoded whole, so that the rest
/// of its pages are cached on the side (as the C driver fills every page of a pcluster).
const TAIL_WHOLE_MAX: u64 = 256 << 10;

/// Decodes the last extent to its end when it is small, adding its remaining pages that are
/// absent and not held (never waiting), so that the next reads of them hit the cache: for
/// `read_folio`, as `z_erofs_pcluster_readmore` without readahead.
fn cache_tail(
    inode: Inode<'_>,
    maps: &Lookups<'_, impl MetaRead>,
    cache: &PageCache<'_>,
    req: &mut Request,
) -> Result {
    let page = PAGE_SIZE as u64;
    let vi = inode.info();
    let Some(zi) = inode.zinfo() else {
        return Ok(());
    };
    let Some(last) = req.jobs.last_mut() else {
        return Ok(());
    };
    if !matches!(last.src, Src::Pending | Src::Buf(_)) || last.end < req.end || last.end >= vi.size
    {
        return Ok(());
    }
    let mut map = last.map;
    if !map.full_mapped() {
        // The extent's whole length (`EROFS_GET_BLOCKS_FIEMAP`); ignore failures, this is
        // only an optimization.
        let Ok(full) = maps.map(&inode.sb(), vi, zi, map.la, Want::Exact) else {
            return Ok(());
        };
        if full.la != map.la || full.pa != map.pa || full.plen != map.plen {
            return Ok(());
        }
        map = full;
    }
    let ext_end = map.la.saturating_add(map.llen).min(vi.size);
    // Stream decoders cannot resume: decode their extents whole (the C driver's READMORE for
    // LZMA, DEFLATE and ZSTD), LZ4 ones only when small.
    let cap = if map.algorithmformat == Z_EROFS_COMPRESSION_LZ4 {
        TAIL_WHOLE_MAX
    } else {
        Z_EROFS_PCLUSTER_MAX_DSIZE
    };
    if ext_end.checked_sub(map.la).is_none_or(|n| n > cap) {
        return Ok(());
    }
    let Some(from) = req.end.checked_next_multiple_of(page) else {
        return Ok(());
    };
    // Up to the page holding the extent's last byte: when the extent ends inside a page, that
    // page starts the next extent (or lies past EOF) too, and leaving it out made the next read
    // of it decode this whole extent again for its few last bytes (a stream decoder cannot
    // resume). The C driver's readmore rounds the extent's end up likewise.
    let Some(to) = ext_end.checked_next_multiple_of(page) else {
        return Ok(());
    };
    if from >= to {
        return Ok(());
    }
    let mut added = 0u64;
    for index in (from >> PAGE_SHIFT)..(to >> PAGE_SHIFT) {
        // Only a contiguous run: jobs must cover every byte up to the request's end.
        let Some(f) = cache.grab_folio_nowait(index) else {
            break;
        };
        req.out.push(ReqFolio::new(f), GFP_KERNEL)?;
        // OVERFLOW: at most the number of pages in `from..to`.
        added += 1;
    }
    if added == 0 {
        return Ok(());
    }
    // OVERFLOW: the `added` pages from `from` end at or before `to`.
    req.end = from + added * page;
    last.map = map;
    last.end = req.end.min(ext_end);
    if req.end > ext_end {
        // The last page added goes on past the extent: map what follows (the next extent's
        // start, or zeroes past EOF) so that the jobs cover the request to its end. If that
        // fails, leave the page out again: its read reports the error.
        let njobs = req.jobs.len();
        if collect(inode.sb(), maps, vi, zi, req, ext_end).is_err() {
            req.jobs.truncate(njobs);
            // The page holding `ext_end`, the last one added (`to` is just past it).
            drop(req.out.pop());
            // OVERFLOW: `to > from >= page`, as `from < to` and both are page multiples.
            req.end = to - page;
            if let Some(last) = req.jobs.last_mut() {
                last.end = req.end;
            }
        }
    }
    Ok(())
}

/// Starts reading the pclusters of `req` that sit on the primary device (block device or
/// backing file), recording their folios in the jobs.
fn start_io(sb: SuperBlock<'_>, q: &mut ZQueue<'_, Request>, req: &mut Request) -> Result {
    let st = sb.state();
    let dev = sb.device();
    let page = PAGE_SIZE as u64;
    let strategy = st.opts.load().cache_strategy;
    // In-place I/O (C: `z_erofs_bind_cache` and `z_erofs_fill_bio_vec` with file pages) for
    // pclusters not kept, in blocks of a page, on a block device, without an acomp engine
    // (which decodes pclusters ahead, out of file order).
    let inplace_ok = st.sbi.blksz() == page && q.lends() && req.accel.is_none();
    // Room for the folios of every pcluster to read, made once: the pages they span.
    let pages = req
        .jobs
        .iter()
        .filter(|j| matches!(j.src, Src::Pending))
        .map(|j| {
            let span = (j.map.pa % page).saturating_add(j.map.plen).div_ceil(page);
            usize::try_from(span).unwrap_or(usize::MAX)
        })
        .fold(0, usize::saturating_add);
    // (Only room: if it cannot be had, the pushes below report it.)
    let _ = req.cfolios.reserve(pages, GFP_KERNEL);
    q.plan_room(pages);
    // This request, and the read it handed a pcluster to (at most one: two parts of one folio
    // in one read would overlap there).
    let this = ReadId::of(req);
    let mut handed = this;
    for i in 0..req.jobs.len() {
        let map = req.jobs[i].map;
        if !matches!(req.jobs[i].src, Src::Pending) {
            continue;
        }
        let keep = req.cache_keeps(&req.jobs[i], strategy, st.sbi.blksz());
        let (None, pa) = st.map_dev(0, map.pa)? else {
            continue;
        };
        let end = pa.checked_add(map.plen).ok_or(EFSCORRUPTED)?;
        if end > dev.bytes() {
            sb.err(format_args!(
                "pcluster {}+{} beyond the device @ nid {}",
                pa, map.plen, req.nid
            ));
            return Err(EFSCORRUPTED);
        }
        let abs = pa.checked_add(dev.fsoff()).ok_or(EFSCORRUPTED)?;
        let abs_end = abs.checked_add(map.plen).ok_or(EFSCORRUPTED)?;
        if keep {
            // Another read of the file reads this pcluster: it decodes our bytes of it too.
            // Else others may hand us theirs.
            let key = Key::new(req.nid, abs, &map);
            match st
                .shares
                .enter(key, this, handed, (req.start, req.end), req.ahead)
            {
                Entered::Ours(share) => req.jobs[i].share = share,
                Entered::Follows => {}
                Entered::Theirs => {
                    let (from, to) = (map.la.max(req.start), req.jobs[i].end.min(req.end));
                    if let Some((owner, n)) =
                        st.shares.attach(key, &map, this, handed, req, from, to)?
                    {
                        handed = owner;
                        req.jobs[i].src = Src::Shared;
                        sb.zstats().note_shared(n);
                        continue;
                    }
                    req.jobs[i].share = st.shares.register(key, this, req.end);
                }
            }
        }
        let (inplace, at) = if inplace_ok && !keep && abs % page == 0 {
            inplace_pages(q, req, i, abs, abs_end)
        } else {
            (0, 0)
        };
        // OVERFLOW: `inplace_pages` gives at most the pcluster's pages, which end at `abs_end`.
        let own_end = abs_end.min(abs_end.next_multiple_of(page) - inplace as u64 * page);
        let first = req.cfolios.len();
        let mut pos = abs & !(page - 1);
        let mut skip = None;
        while pos < own_end {
            let f = if keep {
                q.grab(pos >> PAGE_SHIFT)?
            } else {
                q.grab_shortlived(pos >> PAGE_SHIFT)?
            };
            let fpos = f.pos();
            let fend = fpos.saturating_add(f.size() as u64);
            if fpos > pos || fend <= pos {
                return Err(EIO);
            }
            if skip.is_none() {
                // CAST: the offset lies inside one folio.
                // OVERFLOW: `fpos <= pos <= abs`: `pos` is `abs` rounded down, checked above.
                skip = Some((abs - fpos) as usize);
            }
            req.cfolios.push(f, GFP_KERNEL)?;
            pos = fend;
        }
        for k in 0..inplace {
            // OVERFLOW: the run `inplace_pages` found among the read's folios, from `at`; the
            // device pages from `own_end` on are the pcluster's last `inplace` ones.
            let pos = at + (k * PAGE_SIZE) as u64;
            let dev = (own_end >> PAGE_SHIFT) + k as u64;
            let i = slot_at(&req.out, pos).ok_or(EINVAL)?;
            let s = req.out.get_mut(i).ok_or(EINVAL)?;
            // CAST: a page index inside one folio.
            // OVERFLOW: the slot holds `pos`, so `s.pos <= pos`.
            let idx = ((pos - s.pos) >> PAGE_SHIFT) as usize;
            if let Some(f) = s.folio.take() {
                if let Err(f) = q.lend(i, f, idx, dev) {
                    s.folio = Some(f);
                    return Err(ENOMEM);
                }
                s.lent = true;
            } else if s.lent {
                q.lend_more(i, idx, dev)?;
            } else {
                return Err(EINVAL);
            }
        }
        // OVERFLOW: `first` is the length before this loop's pushes.
        let count = req.cfolios.len() - first;
        req.jobs[i].src = Src::Dev {
            first,
            count,
            skip: skip.unwrap_or(0),
            inplace,
            at,
        };
    }
    Ok(())
}

/// How many of the last device pages of job `i`'s pcluster `abs..abs_end` (page aligned) to
/// read in place, and the file byte of the page the first of them goes to: the run
/// [`inplace_run`] finds among the pages of the folios the read holds (of any order, as the C
/// driver's `z_erofs_scan_folio` attaches the pages of a large folio one by one), none of
/// whose device pages the managed cache has (C reads such a pcluster through the cache,
/// `NOINPLACE`).
fn inplace_pages(
    q: &ZQueue<'_, Request>,
    req: &Request,
    i: usize,
    abs: u64,
    abs_end: u64,
) -> (usize, u64) {
    let page = PAGE_SIZE as u64;
    let Some(job) = req.jobs.get(i) else {
        return (0, 0);
    };
    // The first byte no earlier job writes.
    let lo = match i.checked_sub(1).and_then(|p| req.jobs.get(p)) {
        Some(prev) => job.map.la.max(prev.end),
        None => job.map.la,
    };
    // A folio lent for an earlier pcluster is held too: its other pages may be lent again.
    // Not a part of a folio another read writes too.
    let held = |p: u64| {
        let Some(pos) = p.checked_mul(page) else {
            return false;
        };
        slot_at(&req.out, pos)
            .and_then(|k| req.out.get(k))
            .is_some_and(|s| s.folio.as_ref().map_or(s.lent, |f| !f.is_part()))
    };
    // OVERFLOW: `abs <= abs_end`, both checked sums in the caller.
    let cpages = (abs_end - abs).div_ceil(page);
    // Where another part of the read begins ([`Request::plan_split`]), not the page there:
    // that part may write it while this job still reads its input from it.
    let end = if req.cuts.contains(&job.end) {
        job.end & !(page - 1)
    } else {
        job.end
    };
    let Some((n, from)) = inplace_run(lo, end, cpages, PAGE_SHIFT as u32, held) else {
        return (0, 0);
    };
    // OVERFLOW: `n <= cpages`, the pcluster's pages from `abs`.
    let dev_from = (abs >> PAGE_SHIFT) + cpages - n;
    if (dev_from..dev_from + n).any(|d| q.cached(d)) {
        return (0, 0);
    }
    match from.checked_mul(page) {
        Some(at) => (usize::try_from(n).unwrap_or(0), at),
        None => (0, 0),
    }
}

/// Whether a stream decoder gets its pages piece by piece (runs of pages where they lie in
/// memory) instead of mapped side by side with `vm_map_ram`, as C feeds all of its stream
/// decoders. MicroLZMA always decodes into its own dictionary and copies out, so pieces
/// cost it only more calls (a cold read of 4 KiB pclusters: the same instructions within
/// 0.03%, and no `vm_map_ram` where there were 10 per MiB). zlib and zstd write straight into
/// one output and keep their windows from it: a page at a time, zlib copies every byte once
/// more into its window (`zlib_updatewindow`) and zstd decodes into its window and copies out,
/// 1.5% and 2.2% more instructions per MiB than the mapping costs (16 KiB pclusters).
/// Pages in highmem are not in the direct map: those kernels map them side by side.
fn stream_in_pieces(alg: u8) -> bool {
    alg == Z_EROFS_COMPRESSION_LZMA && !cfg!(CONFIG_HIGHMEM)
}

/// Pieces of a stream on the stack (as [`PageRuns`] keeps its runs).
const ONSTACK_PIECES: usize = 16;

/// Puts bytes `skip..skip + len` of `pieces` (laid one after the other) into `v`, in pieces;
/// `len` `None`: all from `skip` on. `EINVAL` if they go past the pieces' end.
fn slice_pieces<'x>(
    pieces: &[&'x [u8]],
    mut skip: usize,
    len: Option<usize>,
    v: &mut SmallVec<&'x [u8], ONSTACK_PIECES>,
) -> Result {
    let mut left = len.unwrap_or(usize::MAX);
    for &p in pieces {
        if left == 0 {
            break;
        }
        if skip >= p.len() {
            // OVERFLOW: `skip >= p.len()`.
            skip -= p.len();
            continue;
        }
        // OVERFLOW: `skip < p.len()`.
        let n = (p.len() - skip).min(left);
        v.push(p.get(skip..skip + n).ok_or(EINVAL)?)?;
        skip = 0;
        // OVERFLOW: `n <= left`.
        left -= n;
    }
    if skip != 0 || (len.is_some() && left != 0) {
        return Err(EINVAL);
    }
    Ok(())
}

/// Allocates a zeroed buffer of `len` bytes.
fn alloc_buf(len: u64) -> Result<KVVec<u8>> {
    let len = usize::try_from(len).map_err(|_| EFSCORRUPTED)?;
    Ok(KVVec::from_elem(0u8, len, GFP_KERNEL)?)
}

/// Reads `len` bytes of the primary device at `pos` (metadata for inline pclusters, data of
/// file-backed mounts), checking they lie on the device.
fn read_bytes(sb: SuperBlock<'_>, pos: u64, len: u64, nid: u64, meta: bool) -> Result<KVVec<u8>> {
    let dev = sb.device();
    // (Inline pclusters of inodes in the metabox are bounded by the metabox inode's size.)
    let in_metabox = meta && pos & crate::erofs_core::sb::METABOX_POS != 0;
    if !in_metabox && pos.checked_add(len).is_none_or(|e| e > dev.bytes()) {
        let what = if meta { "inline pcluster" } else { "pcluster" };
        sb.err(format_args!(
            "{what} {pos}+{len} beyond the device @ nid {nid}"
        ));
        return Err(EFSCORRUPTED);
    }
    let len = usize::try_from(len).map_err(|_| EFSCORRUPTED)?;
    // Filled by appending: a zeroed buffer cost a file-backed read of LZ4 16 KiB pclusters
    // 650,000 instructions of memset per MiB.
    let mut buf = KVVec::new();
    buf.reserve(len, GFP_KERNEL)?;
    crate::data::append_meta(dev, pos, len, &mut buf)
        .inspect_err(|e| report(sb, e))
        .map_err(to_kernel)?;
    if buf.len() != len {
        return Err(EIO);
    }
    Ok(buf)
}

/// Reads the part `la..end` of a fragment extent from the packed inode (`z_erofs_read_fragment`):
/// the extent's bytes start at `map.pa` in the packed inode. What lies past `size`, the file's
/// end, is zeroes: an extent ends at an lcluster boundary, and the packed inode may end with
/// the file's last byte (the C driver reads on into the rest of the packed inode's page).
fn read_fragment(
    sb: SuperBlock<'_>,
    map: ZMap,
    la: u64,
    end: u64,
    size: u64,
    nid: u64,
) -> Result<Src> {
    let Some(pinode) = sb.packed_inode() else {
        sb.err(format_args!("fragment extent without a packed inode"));
        return Err(EFSCORRUPTED);
    };
    let pinode = pinode.inode();
    let (Some(skip), Some(len)) = (la.checked_sub(map.la), end.checked_sub(la)) else {
        sb.err(format_args!(
            "bogus fragment extent {}+{} for {}..{} @ nid {}",
            map.la, map.llen, la, end, nid
        ));
        return Err(EFSCORRUPTED);
    };
    let off = map.pa.checked_add(skip).ok_or(EFSCORRUPTED)?;
    // The bytes before the file's end (`la < size`: the caller makes past-EOF jobs zero).
    let want = end.min(size).saturating_sub(la);
    if off.checked_add(want).is_none_or(|e| e > pinode.info().size) {
        sb.err(format_args!(
            "fragment {}+{} beyond the packed inode @ nid {}",
            off, want, nid
        ));
        return Err(EFSCORRUPTED);
    }
    let mut data = alloc_buf(len)?;
    let want = usize::try_from(want).map_err(|_| EFSCORRUPTED)?;
    let mut done = 0usize;
    while done < want {
        // OVERFLOW: `done < want` and `off + want` fits, checked above.
        let pos = off + done as u64;
        // CAST: the remainder of a page is below PAGE_SIZE.
        // OVERFLOW: `done < want`, the loop condition.
        let n = (PAGE_SIZE - (pos % PAGE_SIZE as u64) as usize).min(want - done);
        // OVERFLOW: `n <= want - done`; `want <= len`, the buffer's length.
        let dst = data.get_mut(done..done + n).ok_or(EINVAL)?;
        pinode.with_cached(pos, n, |bytes| {
            dst.copy_from_slice(bytes);
            Ok(())
        })?;
        // OVERFLOW: as above, `done + n <= want`.
        done += n;
    }
    Ok(Src::Plain { from: la, data })
}

impl Request {
    /// Whether the managed cache keeps the compressed data of `job`,
    /// as the C driver's `z_erofs_should_alloc_cache` decides: with `cache_strategy` not
    /// `disabled` and blocks of a page, pclusters this read does not decode to their end, and
    /// with `readaround` those starting before the first byte asked for. The others are read
    /// into short-lived folios ([`ZQueue::grab_shortlived`]), unless the managed cache has them
    /// already.
    ///
    /// With `readaround`, a pcluster two concurrent reads of one file both need is kept by both
    /// (each holds only some of its pages, so for each it ends past the read or starts before
    /// it), and so read once, through the managed cache, and decoded once if the second read
    /// comes while the first is reading it ([`Shares`]); with the other strategies, or for a
    /// pcluster two files share (deduplicated images), a read that comes first may read it
    /// into short-lived folios, and the other read it again.
    fn cache_keeps(&self, job: &Job, strategy: CacheStrategy, blksz: u64) -> bool {
        let map = &job.map;
        let ext_end = map.la.saturating_add(map.llen);
        // A job ends before the request only where its extent ends (the next lookup found
        // another one): then, as with an exact length within the request, the pcluster is
        // decoded to its end.
        let to_end = job.end < self.end || (map.full_mapped() && ext_end <= self.end);
        let keep = match strategy {
            CacheStrategy::Disabled => false,
            CacheStrategy::ReadAhead => !to_end,
            CacheStrategy::ReadAround => !to_end || map.la < self.head,
        };
        keep && blksz == PAGE_SIZE as u64
    }

    /// The backend (`z_erofs_decompress_queue`): decodes every job into the folios and unlocks
    /// them, uptodate if all went well. `err` is the first I/O error of the request's bios.
    /// With `spread`, parts of a read with enough decode work go to other CPUs first
    /// ([`Request::split`]); what could not be handed off is decoded here after the rest.
    fn run_backend(
        mut self: KBox<Self>,
        err: i32,
        spread: Option<&mut Spread<'_, Self>>,
    ) -> Result {
        self.take_shared();
        let mut unsent = None;
        if let (0, Some(sp)) = (err, spread) {
            unsent = self.split(sp);
        }
        let ret = if err != 0 {
            Err(Error::from_errno(err))
        } else {
            self.decode_all()
        };
        // Short-lived folios and the engine go now, before the folios are handed back: the last
        // one's lock pins the mount.
        self.cfolios.clear();
        self.accel = None;
        let ok = ret.is_ok();
        // All but the last, which pins the mount while its pool takes the request back.
        let mut last = None;
        for slot in self.out.iter_mut() {
            if let Some(f) = slot.folio.take() {
                if let Some(prev) = last.replace(f) {
                    prev.end_read(ok);
                }
            }
        }
        if let Some(f) = last {
            // Not for a shared inode of `inode_share`: its folio pins no mount of a real inode.
            match f.real_inode() {
                Some(real) if real.is_host() => real.inode().sb().state().requests.give(self),
                _ => drop(self),
            }
            f.end_read(ok);
        }
        if let Some(part) = unsent {
            // Its errors were reported, and leave its folios not uptodate.
            let _ = part.run_backend(0, None);
        }
        ret
    }

    /// Plans how the read is split between CPUs (`decomp_split`), before its reads are built:
    /// with enough decode work, as [`split_units`] weighs it, into as many parts as there are
    /// online CPUs, each of about the same work and at least [`SPLIT_UNIT`]; the cuts fall
    /// where jobs end, and go to `cuts`, from the last. Not with an acomp engine (which
    /// decodes a read's DEFLATE pclusters ahead already).
    fn plan_split(&mut self, mode: Split) {
        if mode == Split::Off || self.accel.is_some() || self.jobs.len() < 2 {
            return;
        }
        let cpus = u64::from(vfs::cpu::num_online_cpus());
        let (start, end) = (self.start, self.end);
        let weigh = |j: &Job| split_units(j, start, end, mode);
        let total = self.jobs.iter().map(weigh).fold(0u64, u64::saturating_add);
        let parts = (total / SPLIT_UNIT).min(cpus);
        if parts < 2 || self.cuts.reserve(parts as usize, GFP_KERNEL).is_err() {
            return;
        }
        let per_part = total / parts;
        let mut k = self.jobs.len();
        for _ in 1..parts {
            // The jobs before `k`, back to the nearest to one part's work: a job goes in if at
            // least half of it fits (the first part's CPU also runs the reader, and the
            // decodes that need none of the I/O).
            let mut w = 0u64;
            let top = k;
            while k > 1 {
                let wk = self.jobs.get(k - 1).map_or(0, weigh);
                if k < top && w.saturating_add(wk / 2) >= per_part {
                    break;
                }
                k -= 1;
                w = w.saturating_add(wk);
            }
            let Some(cut) = k
                .checked_sub(1)
                .and_then(|p| self.jobs.get(p))
                .map(|j| j.end)
            else {
                break;
            };
            if cut <= start || self.cuts.last().is_some_and(|&c| c <= cut) {
                break;
            }
            // Never fails: room made above.
            let _ = self.cuts.push_within_capacity(cut);
        }
    }

    /// Splits the read where [`Request::plan_split`] planned, the parts after the first going
    /// to the next CPUs' workers through `spread`; this request keeps the first part (the
    /// reader waits for its first folio). Each part ends its own folios; a folio two parts
    /// write is split between them ([`OutFolio::split_off`]) and unlocked when both have
    /// ended. Returns the part that could not be handed off, if any: the caller decodes it
    /// after this one.
    fn split(&mut self, spread: &mut Spread<'_, Self>) -> Option<KBox<Request>> {
        if self.cuts.is_empty() {
            return None;
        }
        let real = self.real_inode().ok()?;
        let inode = real.inode();
        let st = inode.sb().state();
        if st.opts.load().split == Split::Force {
            spread.insist();
        }
        if spread.others() == 0 {
            self.cuts.clear();
            return None;
        }
        let cuts = core::mem::take(&mut self.cuts);
        let mut unsent = None;
        for &cut in cuts.iter() {
            let Some(k) = self.jobs.iter().position(|j| j.map.la >= cut) else {
                break;
            };
            let Some(part) = self.split_off(k, st) else {
                break;
            };
            if let Err(part) = spread.send(part) {
                unsent = Some(part);
                break;
            }
        }
        // Back, with its room, for the pool.
        self.cuts = cuts;
        self.cuts.clear();
        unsent
    }

    /// Moves jobs `k..` (`k > 0`) into a new request, with the folios they write and the
    /// device folios they read; `None` (nothing changed) if that cannot be done cleanly: a
    /// job of each side would write the same bytes, read the same device folios, or a folio
    /// of both holds pages read in place; or memory is short.
    fn split_off(&mut self, k: usize, st: &crate::super_::SbState) -> Option<KBox<Request>> {
        let prev = self.jobs.get(k.checked_sub(1)?)?;
        // The first byte of the tail: no job before `k` writes from there on, none from `k`
        // writes before.
        let cut = prev.end;
        if cut <= self.start || cut >= self.end {
            return None;
        }
        let (head, tail) = self.jobs.split_at(k);
        if head.iter().any(|j| j.end > cut) || tail.iter().any(|j| j.map.la < cut) {
            return None;
        }
        // The device folios: the tail's from `m` on, the head's all before.
        let dev_range = |j: &Job| match j.src {
            Src::Dev { first, count, .. } => Some((first, first.saturating_add(count))),
            _ => None,
        };
        let m = tail
            .iter()
            .filter_map(dev_range)
            .map(|(a, _)| a)
            .min()
            .unwrap_or(self.cfolios.len());
        if head.iter().filter_map(dev_range).any(|(_, b)| b > m) {
            return None;
        }
        // The folio across the cut, if any, is split between the two. Pages of it read in
        // place are on the side of the job they were read for (each job reads in place only
        // pages it alone writes), which decodes from a copy of them (a part is not decoded
        // over in place).
        let bi = self.out.partition_point(|s| s.end <= cut);
        if self.out.get(bi).is_some_and(|s| s.pos < cut && s.lent) {
            return None;
        }
        // No page read in place across the cut: one part would write it while the other reads
        // its input from it. (`plan_split` kept them apart; a job may end past its plan after
        // `take_shared`.)
        let crosses = self.jobs.iter().any(|j| match j.src {
            Src::Dev { inplace, at, .. } if inplace != 0 => {
                at < cut && at.saturating_add((inplace * PAGE_SIZE) as u64) > cut
            }
            _ => false,
        });
        if crosses {
            return None;
        }
        if self.out.iter().any(|s| s.lent) {
            return None;
        }
        let mut part = st.requests.take().ok()?;
        // Room first: nothing below fails once the folio across the cut is split.
        let tail_slots = self.out.len() - bi;
        let ok = part.jobs.reserve(self.jobs.len() - k, GFP_KERNEL).is_ok()
            && part.out.reserve(tail_slots, GFP_KERNEL).is_ok()
            && part
                .cfolios
                .reserve(self.cfolios.len().saturating_sub(m), GFP_KERNEL)
                .is_ok();
        if !ok {
            st.requests.give(part);
            return None;
        }
        let mut first_slot = None;
        if let Some(s) = self.out.get_mut(bi).filter(|s| s.pos < cut) {
            if let Some(f) = s.folio.as_mut() {
                let mut spare = if f.is_part() {
                    None
                } else {
                    Parts::new(GFP_KERNEL).ok()
                };
                // CAST: an offset inside one folio.
                // OVERFLOW: `s.pos < cut < s.end`.
                let at = (cut - s.pos) as usize;
                let (_, to) = f.range();
                let Ok(p) = f.split_off(at, to, &mut spare) else {
                    st.requests.give(part);
                    return None;
                };
                first_slot = Some(ReqFolio {
                    pos: s.pos,
                    end: s.end,
                    folio: Some(p),
                    lent: false,
                });
            }
        }
        let parted = first_slot.is_some();
        // (Never fails from here: room made above.)
        if let Some(s) = first_slot {
            let _ = part.out.push_within_capacity(s);
        }
        let from_slot = if parted { bi + 1 } else { bi };
        move_tail(&mut self.out, from_slot, &mut part.out);
        move_tail(&mut self.jobs, k, &mut part.jobs);
        move_tail(&mut self.cfolios, m, &mut part.cfolios);
        for j in part.jobs.iter_mut() {
            if let Src::Dev { first, .. } = &mut j.src {
                // OVERFLOW: every tail job's device folios start at `m` or later.
                *first -= m;
            }
        }
        part.nid = self.nid;
        part.start = cut;
        part.end = self.end;
        part.head = cut;
        part.accel = None;
        part.accel_min = self.accel_min;
        part.blksz = self.blksz;
        part.bios = self.bios;
        part.ahead = self.ahead;
        part.parts = self.parts || parted;
        self.end = cut;
        self.parts |= parted;
        Some(part)
    }

    /// Closes the request's entries in [`Shares`] and takes the parts of folios other reads
    /// handed them: their jobs now decode up to the last byte those want, into them too.
    /// Parts that cannot be taken (no memory) are dropped: those folios end not uptodate, and
    /// are read again.
    fn take_shared(&mut self) {
        let mut any = false;
        for job in self.jobs.iter_mut() {
            let Some(h) = job.share.take().and_then(|mut sh| sh.close()) else {
                continue;
            };
            let h = KBox::into_inner(h);
            // The others mapped the extent as far as they read it: maybe further than we did.
            let ext_end = |m: &ZMap| m.la.saturating_add(m.llen);
            if ext_end(&h.map) > ext_end(&job.map) {
                job.map = h.map;
            }
            // Parts past the extent (which no valid image gives) would not be written: dropped
            // here, they end not uptodate.
            if h.to > ext_end(&job.map) || self.out.reserve(h.parts.len(), GFP_KERNEL).is_err() {
                continue;
            }
            job.end = job.end.max(h.to);
            self.start = self.start.min(h.from);
            self.end = self.end.max(h.to);
            for p in h.parts {
                // Never allocates: room made above.
                let _ = self.out.push_within_capacity(p);
            }
            any = true;
        }
        if any {
            // The others' folios are not ours, so none of them holds a position one of ours
            // holds.
            self.out.sort_unstable_by_key(|s| s.pos);
            self.parts = true;
        }
    }

    /// Decodes the jobs in file order, handing each folio back as soon as it is complete, so
    /// the reader can go on while the rest of the batch decompresses.
    ///
    /// With an acomp engine, eligible DEFLATE pclusters are submitted ahead, up to
    /// [`ACCEL_WINDOW`] in flight, and waited for in file order; any the engine refuses or
    /// fails is decoded in software instead. A request owns the pieces of the folios it
    /// writes until it is waited for ([`Request::offload`]); then they go back to their slots.
    fn decode_all(&mut self) -> Result {
        let jobs = core::mem::take(&mut self.jobs);
        // Dropped before the last folio is handed back (in `run_backend`): the engine must not
        // outlive the mount, which that folio's lock pins.
        let accel = self.accel.take();
        let mut inflight = KVec::new();
        let mut aside = KVec::new();
        let ret = self.decode_jobs(&jobs, accel.as_deref(), &mut inflight, &mut aside);
        // After an error, the requests still in flight: waited for, and their pieces back in
        // their slots, so that nothing unlocks a folio before `run_backend` (the last one pins
        // the mount, and the engine goes first).
        for o in inflight.iter_mut() {
            if let Some(r) = o.req.take() {
                let (_, outs) = r.wait();
                give_back(&mut self.out, o.first, outs, &mut aside);
            }
        }
        // Every piece came back beside the others of its folio and merged with them: none is
        // left aside. (One that did not would be dropped here, its folio left not uptodate;
        // never the last folio's only one: a slot keeps a piece while any is aside.) Mostly never
        // allocated: no `krealloc` to drop it.
        release(aside);
        release(inflight);
        // Back where it was taken from, with its room, for the pool (or the request's drop).
        release(core::mem::replace(&mut self.jobs, jobs));
        ret
    }

    /// The loop of [`Request::decode_all`]: on an error, requests may be left in `inflight`.
    fn decode_jobs<'a>(
        &mut self,
        jobs: &[Job],
        accel: Option<&'a Accel>,
        inflight: &mut KVec<Offload<'a>>,
        aside: &mut Aside,
    ) -> Result {
        let mut cbuf = KVVec::new();
        let mut spill = KVVec::new();
        let mut bounce = BouncePages::new();
        let mut head = 0usize;
        let mut next = 0usize;
        let mut done = 0usize;
        for (i, job) in jobs.iter().enumerate() {
            if let Some(a) = accel {
                next = next.max(i);
                while next < jobs.len() && inflight.len() - head < ACCEL_WINDOW {
                    if self.offloadable(&jobs[next], aside) {
                        // Room first: a request that could not be kept would unlock its folios.
                        inflight.reserve(1, GFP_KERNEL)?;
                        match self.offload(a, &jobs[next], aside) {
                            Some((first, r)) => {
                                let o = Offload {
                                    job: next,
                                    first,
                                    req: Some(r),
                                };
                                // Never fails: room made above.
                                let _ = inflight.push_within_capacity(o);
                            }
                            None => {
                                a.note_fallback();
                                next += 1;
                                break;
                            }
                        }
                    }
                    next += 1;
                }
            }
            let mut decoded = false;
            if let Some(o) = inflight.get_mut(head).filter(|o| o.job == i) {
                head += 1;
                if let Some(r) = o.req.take() {
                    let (ret, outs) = r.wait();
                    give_back(&mut self.out, o.first, outs, aside);
                    decoded = ret.is_ok();
                }
                if !decoded {
                    if let Some(a) = accel {
                        a.note_fallback();
                    }
                }
            }
            if !decoded {
                self.decode(job, &mut cbuf, &mut spill, &mut bounce)?;
            }
            // Hand back the folios this job completed, all but the very last one.
            while done + 1 < self.out.len() {
                let Some(slot) = self.out.get_mut(done) else {
                    break;
                };
                if slot.end > job.end {
                    break;
                }
                if let Some(f) = slot.folio.take() {
                    f.end_read(true);
                }
                done += 1;
            }
        }
        // Mostly never allocated (a read of one-page pclusters): no `krealloc` to drop them.
        release(cbuf);
        release(spill);
        Ok(())
    }

    /// The bypass queue of `z_erofs_runqueue`: decodes now, in the submitter, the jobs whose
    /// input needs none of the read's I/O (holes, inline and fragment data, pclusters of other
    /// devices, device pclusters whose folios are all uptodate: cached, or read already), then
    /// hands back the folios they alone write. Returns how many it decoded. A job that fails
    /// keeps its error for [`Request::decode_all`], which stops there as if it had failed then;
    /// one that could not get memory is left to it, to try again. Not with an acomp engine,
    /// which decodes DEFLATE pclusters in the worker's order.
    ///
    /// Returns the pclusters decoded, with their compressed and decoded bytes (as
    /// [`ZWork::sizes`]), and the folios handed back.
    fn decode_ready(&mut self) -> Bypassed {
        let mut b = Bypassed::default();
        if self.accel.is_some() {
            return b;
        }
        let mut sizes = (0u32, 0u64, 0u64);
        let mut jobs = core::mem::take(&mut self.jobs);
        let mut cbuf = KVVec::new();
        let mut spill = KVVec::new();
        let mut bounce = BouncePages::new();
        let mut n = 0usize;
        for job in jobs.iter_mut() {
            if !self.ready(job, true) {
                continue;
            }
            // No more parts for it (as C's decoding takes the pcluster's lock). If some were
            // handed already, it is decoded with the rest, into them too: they can be taken
            // into the folios only once no bio holds a folio of the read (`take_shared`).
            if let Some(sh) = job.share.as_mut() {
                if let Some(h) = sh.close() {
                    sh.kept = Some(h);
                    continue;
                }
                job.share = None;
            }
            match self.decode(job, &mut cbuf, &mut spill, &mut bounce) {
                Ok(()) => {
                    job.count_into(&mut sizes);
                    job.src = Src::Done;
                    n += 1;
                }
                // The rest waits for the I/O; the worker tries this one again.
                Err(e) if e == ENOMEM => break,
                Err(e) => {
                    // Reported; the rest waits for the I/O, and then for this error.
                    job.src = Src::Failed(e);
                    break;
                }
            }
        }
        release(cbuf);
        release(spill);
        (b.pclusters, b.in_bytes, b.out_bytes) = sizes;
        if n != 0 {
            b.folios = self.end_ready(&jobs);
        }
        release(core::mem::replace(&mut self.jobs, jobs));
        b
    }

    /// Whether `job` can be decoded before the read's I/O completes: its input is at hand, and
    /// none of the folios it writes is lent to a bio (in-place I/O of another pcluster). Device
    /// pclusters are looked at only if `dev`.
    fn ready(&self, job: &Job, dev: bool) -> bool {
        match &job.src {
            Src::Zero | Src::Buf(_) | Src::Plain { .. } => {}
            Src::Dev {
                first,
                count,
                inplace: 0,
                ..
            } if dev => {
                let cf = first
                    .checked_add(*count)
                    .and_then(|end| self.cfolios.get(*first..end));
                if !cf.is_some_and(|cf| cf.iter().all(|f| f.uptodate())) {
                    return false;
                }
            }
            _ => return false,
        }
        let from = job.map.la.max(self.start);
        let to = job.end.min(self.end);
        let i = self.out.partition_point(|s| s.end <= from);
        self.out
            .get(i..)
            .unwrap_or_default()
            .iter()
            .take_while(|s| s.pos < to)
            .all(|s| !s.lent)
    }

    /// Hands back, uptodate, the folios (but the last, as [`Request::decode_all`]) that one
    /// job decoded by [`Request::decode_ready`] wrote whole and no other job writes to, as
    /// the C driver ends a folio once its last part is decoded. `jobs` are the request's, which
    /// end in file order (else nothing is handed back here). Returns how many it handed back.
    fn end_ready(&mut self, jobs: &[Job]) -> u32 {
        let mut n = 0u32;
        if jobs.windows(2).any(|w| w[0].end > w[1].end) {
            return n;
        }
        let Some(last) = self.out.len().checked_sub(1) else {
            return n;
        };
        // From the back: the jobs that end past a folio's first byte are the ones from `k` on,
        // and `pending` is the least first byte of those not decoded yet.
        let mut k = jobs.len();
        let mut pending = u64::MAX;
        for slot in self
            .out
            .get_mut(..last)
            .unwrap_or_default()
            .iter_mut()
            .rev()
        {
            while let Some(j) = k.checked_sub(1).and_then(|p| jobs.get(p)) {
                if j.end <= slot.pos {
                    break;
                }
                k -= 1;
                if !matches!(j.src, Src::Done) {
                    pending = pending.min(j.map.la);
                }
            }
            if pending < slot.end {
                continue;
            }
            let whole = jobs.get(k).is_some_and(|j| {
                matches!(j.src, Src::Done) && j.map.la <= slot.pos && j.end >= slot.end
            });
            if whole {
                if let Some(f) = slot.folio.take() {
                    f.end_read(true);
                    n = n.saturating_add(1);
                }
            }
        }
        n
    }

    /// Whether the engine may decode `job`: a whole DEFLATE extent in device folios, of at
    /// least `decomp_accel_min` bytes, whose output bytes all belong to this read and are
    /// not on the engine already (pieces in their slots or `aside`).
    fn offloadable(&self, job: &Job, aside: &Aside) -> bool {
        let map = &job.map;
        let Some(outlen) = job.outlen() else {
            return false;
        };
        if map.algorithmformat != Z_EROFS_COMPRESSION_DEFLATE
            || !matches!(job.src, Src::Dev { .. })
            || partial_decoding(map, outlen)
            || map.plen < u64::from(self.accel_min)
        {
            return false;
        }
        // The read's folios hold every byte of `map.la..job.end`, in a row.
        self.held_run(map.la, job.end, aside).is_some()
    }

    /// Submits `job` to the engine, with the pieces of the read's folios that hold its bytes:
    /// the folios it writes whole, taken out of their slots, and parts split off those it
    /// shares with its neighbours, which the software decodes into meanwhile ([`has_parts`]).
    /// Returns the slot of the first folio (the others follow) and the request, which gives
    /// the pieces back once waited for ([`give_back`]); `None` if the engine cannot take it
    /// now, the pieces then back already.
    ///
    /// [`has_parts`]: Request::has_parts
    fn offload<'a>(
        &mut self,
        a: &'a Accel,
        job: &Job,
        aside: &mut Aside,
    ) -> Option<(usize, AccelReq<'a>)> {
        let Src::Dev {
            first,
            count,
            skip,
            inplace: 0,
            ..
        } = job.src
        else {
            return None;
        };
        let map = &job.map;
        let outlen = job.outlen()?;
        let plen = usize::try_from(map.plen).ok()?;
        let blksz = self.real_inode().ok()?.inode().sb().state().sbi.blksz();
        let scan = fixup_scan(map, blksz);
        let cfolios = self.cfolios.get(first..first.checked_add(count)?)?;
        // OVERFLOW: `skip % PAGE_SIZE < PAGE_SIZE`.
        let pad = cfolios
            .first()?
            .with_bytes(skip, scan.min(PAGE_SIZE - skip % PAGE_SIZE), |b| {
                fixup_insize(b, b.len(), self.nid)
            })
            .ok()?
            .ok()?;
        let run = self.held_run(map.la, job.end, aside)?;
        let out_off = usize::try_from(map.la.checked_sub(self.out.get(run.start)?.pos)?).ok()?;
        let outlen = usize::try_from(outlen).ok()?;
        let mut outs = KVec::with_capacity(run.len(), GFP_KERNEL).ok()?;
        for k in run.clone() {
            let Some(p) = take_piece(&mut self.out, k, map.la, job.end, aside) else {
                give_back(&mut self.out, run.start, outs, aside);
                return None;
            };
            if p.is_part() {
                // The software decodes the neighbours of the pieces aside, and copies.
                self.parts = true;
            }
            // Never fails: room made above, one per slot.
            let _ = outs.push_within_capacity(p);
        }
        match a.submit(
            cfolios,
            skip.checked_add(pad)?,
            plen.checked_sub(pad)?,
            outs,
            out_off,
            outlen,
        ) {
            Ok(r) => Some((run.start, r)),
            Err(outs) => {
                give_back(&mut self.out, run.start, outs, aside);
                None
            }
        }
    }

    /// Decodes one job and copies what the request wants of it into the folios. `cbuf` and
    /// `spill` are buffers reused across the jobs of the request.
    fn decode(
        &mut self,
        job: &Job,
        cbuf: &mut KVVec<u8>,
        spill: &mut KVVec<u8>,
        bounce: &mut BouncePages,
    ) -> Result {
        let from = job.map.la.max(self.start);
        let to = job.end.min(self.end);
        // Nothing to do unless a folio of ours lies in `from..to` (pages between the request's
        // folios are cached already, or someone else's).
        let i = self.out.partition_point(|s| s.end <= from);
        if self.out.get(i).is_none_or(|s| s.pos >= to) {
            return Ok(());
        }
        match &job.src {
            Src::Zero => self.zero(from, to),
            Src::Plain { from: pfrom, data } => {
                // `data` holds only `pfrom..pfrom + data.len()`: when the extent starts before
                // the job (a fragment over several lclusters, or overlapping extents of a
                // corrupted image), the job's part starts at `pfrom`.
                let from = from.max(*pfrom);
                // OVERFLOW: `from >= pfrom` just above.
                let a = usize::try_from(from - pfrom).ok();
                let b = to.checked_sub(*pfrom).and_then(|b| usize::try_from(b).ok());
                let Some(bytes) = a.zip(b).and_then(|(a, b)| data.get(a..b)) else {
                    return Err(self.corrupt_extent(job, "fragment"));
                };
                self.copy_out(from, bytes)
            }
            Src::Buf(b) => self.decode_into(job, b, bounce),
            Src::Done | Src::Shared => Ok(()),
            Src::Failed(e) => Err(*e),
            Src::Pending => Err(EIO),
            Src::Dev {
                first,
                count,
                skip,
                inplace,
                at,
            } => {
                let plen = usize::try_from(job.map.plen).map_err(|_| EFSCORRUPTED)?;
                let cfolios = first
                    .checked_add(*count)
                    .and_then(|end| self.cfolios.get(*first..end))
                    .ok_or(EINVAL)?;
                // (Not over a part of a folio: its pages go to bounce folios, then copied.)
                if *inplace != 0
                    && !self.has_parts(job)
                    && (self.decode_lz4_in_place(job, bounce)?
                        || self.decode_stream_in_place(
                            job, cfolios, *skip, *inplace, *at, bounce, spill,
                        )?)
                {
                    return Ok(());
                }
                if let ([cf], 0) = (cfolios, *inplace) {
                    if (*skip % PAGE_SIZE)
                        .checked_add(plen)
                        .is_some_and(|e| e <= PAGE_SIZE)
                    {
                        // The whole pcluster in one page: decode it where it is.
                        return cf
                            .with_bytes(*skip, plen, |src| self.decode_into(job, src, bounce))?;
                    }
                }
                if *inplace == 0 && stream_in_pieces(job.map.algorithmformat) {
                    if let Ok(r) = PageRuns::input(cfolios) {
                        // The pcluster's pages where they are, run by run.
                        let mut all = SmallVec::<_, ONSTACK_PIECES>::new();
                        let mut ext = SmallVec::new();
                        r.pieces(&mut all)?;
                        slice_pieces(&all, *skip, Some(plen), &mut ext)?;
                        return self.decode_pieces(job, &ext, bounce);
                    }
                }
                if *inplace == 0 {
                    if let Ok(m) = PageMap::input(cfolios) {
                        // The pcluster's pages mapped side by side: decode it where it is.
                        let src = skip
                            .checked_add(plen)
                            .and_then(|end| m.bytes().get(*skip..end))
                            .ok_or(EINVAL)?;
                        return self.decode_into(job, src, bounce);
                    }
                }
                // Copied into one buffer: the device folios, then the pages read in place,
                // which are output pages (C's per-CPU buffer, `z_erofs_lz4_handle_overlap`).
                // (Appended, not copied over zeroes: the buffer is only as long as filled.)
                cbuf.clear();
                cbuf.reserve(plen, GFP_KERNEL)?;
                let mut done = 0usize;
                let mut off = *skip;
                for f in cfolios {
                    // OVERFLOW: `done <= plen`: each piece is at most `plen - done`.
                    let n = f.size().checked_sub(off).ok_or(EIO)?.min(plen - done);
                    f.append_to(off, n, cbuf)?;
                    // OVERFLOW: `done + n <= plen`.
                    done += n;
                    off = 0;
                }
                for k in 0..*inplace {
                    // OVERFLOW: the pages read in place follow each other from `at`.
                    let (f, off) = self.held_at(*at + (k * PAGE_SIZE) as u64).ok_or(EIO)?;
                    // OVERFLOW: as above, `done <= plen`.
                    let n = PAGE_SIZE.min(plen - done);
                    f.append_to(off, n, cbuf)?;
                    done += n;
                }
                if done != plen || cbuf.len() != plen {
                    return Err(EIO);
                }
                self.decode_into(job, cbuf, bounce)
            }
        }
    }

    /// Decodes pcluster `src` straight into the page-cache folios of the read, mapped side by
    /// side with bounce folios for the pages it does not want (C: `z_erofs_decompress_pcluster`
    /// with `vm_map_ram` of the output pages).
    fn decode_into(&self, job: &Job, src: &[u8], bounce: &mut BouncePages) -> Result {
        if stream_in_pieces(job.map.algorithmformat) {
            return self.decode_pieces(job, &[src], bounce);
        }
        let page = PAGE_SIZE as u64;
        let olen = job
            .outlen()
            .ok_or_else(|| self.corrupt_extent(job, "compressed"))?;
        // Pages of folios that are parts (another read, or another part of this one, writes
        // their other bytes) are decoded into bounce folios, then copied ([`Self::copy_parted`]).
        let mut pages = OutPages::new();
        let mut parted = Parted::new();
        self.out_pages(job, &mut pages, &mut parted)?;
        let mut m = PageMap::output(pages.as_slice(), bounce)?;
        // CAST: below a page.
        let off = (job.map.la % page) as usize;
        let olen = usize::try_from(olen).map_err(|_| EFSCORRUPTED)?;
        let out = off
            .checked_add(olen)
            .and_then(|end| m.bytes_mut(off..end))
            .ok_or(EINVAL)?;
        self.decompress(job, src, out)?;
        self.copy_parted(job, &parted, |r, f, at| {
            f.write(at, m.bytes_mut(r).ok_or(EINVAL)?)
        })
    }

    /// Copies what `job` decoded into the bounce folios standing for the pages of parts
    /// (`parted`, from [`Self::out_pages`]) into those parts, the bytes each writes:
    /// `put(range, part, at)` writes a range of the output (counted from the page of the
    /// extent's first byte, inside one page) at byte `at` of the part's folio.
    fn copy_parted(
        &self,
        job: &Job,
        parted: &Parted,
        mut put: impl FnMut(core::ops::Range<usize>, &OutFolio, usize) -> Result,
    ) -> Result {
        let page = PAGE_SIZE as u64;
        let base = job.map.la & !(page - 1);
        let from = job.map.la.max(self.start);
        let to = job.end.min(self.end);
        for &(k, i) in parted.iter() {
            let Some(s) = self.out.get(i) else { continue };
            let Some(f) = s.folio.as_ref() else { continue };
            let (x, y) = f.range();
            // The bytes of output page `k` that are the job's and this part's, as file bytes.
            // OVERFLOW: pages of one extent, whose bytes are below `job.end`.
            let pos = base + (k as u64) * page;
            let a = pos.max(from).max(s.pos + x as u64);
            let b = (pos + page).min(to).min(s.pos + y as u64);
            if a >= b {
                continue;
            }
            // CAST: offsets inside the extent's output and inside one folio.
            put(
                (a - base) as usize..(b - base) as usize,
                f,
                (a - s.pos) as usize,
            )?;
        }
        Ok(())
    }

    /// Decodes stream pcluster `ext` (its pieces one after the other, from its first byte)
    /// into the page-cache folios of the read and bounce folios, as [`Self::decode_into`],
    /// but given to the decoder page run by page run instead of mapped side by side (C:
    /// `z_erofs_stream_switch_bufs`); for kernels without highmem ([`stream_in_pieces`]).
    fn decode_pieces(&self, job: &Job, ext: &[&[u8]], bounce: &mut BouncePages) -> Result {
        let page = PAGE_SIZE as u64;
        let map = &job.map;
        let olen = job
            .outlen()
            .ok_or_else(|| self.corrupt_extent(job, "compressed"))?;
        let real = self.real_inode()?;
        let sb = real.inode().sb();
        let blksz = sb.state().sbi.blksz();
        // The stream starts after its zero padding, in its first block, which lies in its
        // first piece (a piece starts in a page, and blocks are at most a page).
        let first = ext.first().copied().unwrap_or(&[]);
        let pad = fixup_insize(first, fixup_scan(map, blksz), self.nid)
            .inspect_err(|e| report(sb, e))
            .map_err(to_kernel)?;
        let mut rest = SmallVec::new();
        slice_pieces(ext, pad, None, &mut rest)?;
        let partial = partial_decoding(map, olen);
        // As in `decode_into`: the pages of parts decoded into bounce folios, then copied.
        let mut pages = OutPages::new();
        let mut parted = Parted::new();
        self.out_pages(job, &mut pages, &mut parted)?;
        // CAST: below a page.
        let off = (map.la % page) as usize;
        let olen = usize::try_from(olen).map_err(|_| EFSCORRUPTED)?;
        let end = off.checked_add(olen).ok_or(EFSCORRUPTED)?;
        let mut runs = PageRuns::output(pages.as_slice(), bounce)?;
        // Only the bytes decoded into (as `decode_into` borrows them).
        let mut parts = SmallVec::<_, ONSTACK_PIECES>::new();
        runs.pieces_mut(off..end, &mut parts)?;
        // Never grows: nothing is read in place.
        let mut spill = KVVec::new();
        let io = Io {
            ext: rest.as_slice(),
            buf: parts.as_mut_slice(),
            lent: 0..0,
            out: 0..olen,
            spill: &mut spill,
        };
        stream_decompress_io(map.algorithmformat, io, partial)
            .map_err(|(e, why)| self.stream_failed(job, why, olen, e))?;
        drop(parts);
        if parted.is_empty() {
            return Ok(());
        }
        self.copy_parted(job, &parted, |r, f, at| {
            // A range inside one page: one piece of one run.
            let mut piece = SmallVec::<_, 2>::new();
            runs.pieces_mut(r, &mut piece)?;
            f.write(at, piece.as_slice().first().ok_or(EINVAL)?)
        })
    }

    /// Decodes an LZ4 pcluster read wholly in place, over its input, when C's rule allows
    /// it (`z_erofs_lz4_handle_overlap`): not partial, its pages are the last of the output's,
    /// and the output ends `LZ4_DECOMPRESS_INPLACE_MARGIN` bytes before the input does.
    /// `Ok(false)` if the rule does not hold: then nothing was written.
    fn decode_lz4_in_place(&self, job: &Job, bounce: &mut BouncePages) -> Result<bool> {
        let page = PAGE_SIZE as u64;
        let map = &job.map;
        let Src::Dev {
            count: 0,
            inplace,
            at,
            ..
        } = job.src
        else {
            return Ok(false);
        };
        let Some(olen) = job.outlen() else {
            return Ok(false);
        };
        // OVERFLOW: `job.end > map.la` (`outlen` is not 0).
        let last = (job.end - 1) >> PAGE_SHIFT;
        // The pages read in place are the output's last ones, all back from their bios.
        let top = inplace
            .checked_sub(1)
            .and_then(|k| u64::try_from(k).ok()?.checked_mul(page))
            .and_then(|o| at.checked_add(o));
        if map.algorithmformat != Z_EROFS_COMPRESSION_LZ4
            || partial_decoding(map, olen)
            || top != Some(last << PAGE_SHIFT)
            || !self.lent_back(at, inplace)
        {
            return Ok(false);
        }
        let real = self.real_inode()?;
        let sb = real.inode().sb();
        let blksz = sb.state().sbi.blksz();
        let mut pages = OutPages::new();
        // (No part among them: not called over parts, `has_parts`.)
        self.out_pages(job, &mut pages, &mut Parted::new())?;
        let npages = pages.len();
        let Some(in_start) = npages.checked_sub(inplace).map(|n| n * PAGE_SIZE) else {
            return Ok(false);
        };
        let plen = usize::try_from(map.plen).map_err(|_| EFSCORRUPTED)?;
        // The pcluster's pages are whole (blocks of a page, page aligned: `start_io`).
        if inplace.checked_mul(PAGE_SIZE) != Some(plen) {
            return Ok(false);
        }
        // CAST: below a page.
        let off = (map.la % page) as usize;
        let olen = usize::try_from(olen).map_err(|_| EFSCORRUPTED)?;
        let oend = off.checked_add(olen).ok_or(EFSCORRUPTED)?;
        let mut m = PageMap::output(pages.as_slice(), bounce)?;
        let end = m.bytes().len();
        let pad = m.bytes().get(in_start..end).ok_or(EINVAL).and_then(|b| {
            fixup_insize(b, fixup_scan(map, blksz), self.nid)
                .inspect_err(|e| report(sb, e))
                .map_err(to_kernel)
        })?;
        let src = in_start.checked_add(pad).ok_or(EINVAL)?..end;
        // OVERFLOW: `pad < plen`, found in the input's first block.
        let margin = ((src.end - src.start) >> 8) + 32;
        if oend.checked_add(margin).is_none_or(|e| e > end) {
            return Ok(false);
        }
        let buf = m.bytes_mut(0..end).ok_or(EINVAL)?;
        let ret = lz4_decompress_in_place(buf, src, off..oend);
        self.lz4_done(map, ret, olen)?;
        sb.zstats().note_lz4_inplace();
        Ok(true)
    }

    /// Decodes a MicroLZMA or DEFLATE pcluster whose last `inplace` pages were read into
    /// output pages of the read (from file byte `lent_pos` on), with the stream read where it
    /// is: the device folios `cfolios` (from byte `skip`), then those pages, copied aside only
    /// where the output catches up with them (C: `z_erofs_stream_switch_bufs`). `Ok(false)`
    /// if the layout does not allow it: then nothing was written.
    #[expect(
        clippy::too_many_arguments,
        reason = "the stream's two sources and its output, as z_erofs_stream_switch_bufs has them"
    )]
    fn decode_stream_in_place(
        &self,
        job: &Job,
        cfolios: &[CFolio],
        skip: usize,
        inplace: usize,
        lent_pos: u64,
        bounce: &mut BouncePages,
        spill: &mut KVVec<u8>,
    ) -> Result<bool> {
        let page = PAGE_SIZE as u64;
        let map = &job.map;
        let alg = map.algorithmformat;
        // Not Zstandard: given the whole frame in one buffer and room for all of its output,
        // zstd decodes it in a single pass straight into the output; fed in parts, it decodes
        // into its own window and copies out, which costs more than copying the input.
        if !matches!(alg, Z_EROFS_COMPRESSION_LZMA | Z_EROFS_COMPRESSION_DEFLATE) {
            return Ok(false);
        }
        let Some(olen) = job.outlen() else {
            return Ok(false);
        };
        let plen = usize::try_from(map.plen).map_err(|_| EFSCORRUPTED)?;
        // The pcluster's bytes in device folios, before the pages read in place, and in those
        // pages: it starts on a page (`start_io`) and its last page may be partly beyond it
        // (encoded extents are counted in bytes).
        let Some(elen) = plen
            .div_ceil(PAGE_SIZE)
            .checked_sub(inplace)
            .and_then(|n| n.checked_mul(PAGE_SIZE))
        else {
            return Ok(false);
        };
        let Some(llen) = plen.checked_sub(elen).filter(|&l| l > 0) else {
            return Ok(false);
        };
        if alg == Z_EROFS_COMPRESSION_DEFLATE && plen < DEFLATE_INPLACE_MIN {
            return Ok(false);
        }
        let pieces = stream_in_pieces(alg);
        // The device folios before the pages read in place: mapped side by side, or as runs.
        let (inmap, inruns) = match (cfolios.is_empty(), elen, pieces) {
            (true, 0, _) => (None, None),
            (false, _, false) => match PageMap::input(cfolios) {
                Ok(m) => (Some(m), None),
                Err(_) => return Ok(false),
            },
            (false, _, true) => match PageRuns::input(cfolios) {
                Ok(r) => (None, Some(r)),
                Err(_) => return Ok(false),
            },
            (true, _, _) => return Ok(false),
        };
        let mut all = SmallVec::<_, ONSTACK_PIECES>::new();
        let mut ext = SmallVec::new();
        if let Some(m) = &inmap {
            all.push(m.bytes())?;
        } else if let Some(r) = &inruns {
            r.pieces(&mut all)?;
        }
        slice_pieces(&all, skip, Some(elen), &mut ext)?;
        // The pages read in place follow each other in the output, from `lent_pos` on.
        if !self.lent_back(lent_pos, inplace) {
            return Ok(false);
        }
        // The run lies in the job's pages (`inplace_pages`), which the map starts with `map.la`'s.
        let lstart = lent_pos
            .checked_sub(map.la & !(page - 1))
            .and_then(|b| usize::try_from(b).ok())
            .ok_or(EINVAL)?;
        let real = self.real_inode()?;
        let sb = real.inode().sb();
        let blksz = sb.state().sbi.blksz();
        let mut pages = OutPages::new();
        // (No part among them: not called over parts, `has_parts`.)
        self.out_pages(job, &mut pages, &mut Parted::new())?;
        // The output pages: mapped side by side, or as runs.
        let mut outmap: PageMap<'_, Output>;
        let mut outruns: PageRuns<'_, Output>;
        let mut buf = SmallVec::<_, ONSTACK_PIECES>::new();
        if pieces {
            outruns = PageRuns::output(pages.as_slice(), bounce)?;
            // All the pages, as the map below: the stream read in place may end after the
            // output (never with an acomp engine, which is never given in-place reads).
            let all = pages.len().checked_mul(PAGE_SIZE).ok_or(EINVAL)?;
            outruns.pieces_mut(0..all, &mut buf)?;
        } else {
            outmap = PageMap::output(pages.as_slice(), bounce)?;
            let end = outmap.bytes().len();
            buf.push(outmap.bytes_mut(0..end).ok_or(EINVAL)?)?;
        }
        // OVERFLOW: the lengths of pages in memory.
        let end = buf.iter().map(|p| p.len()).sum::<usize>();
        let lent = lstart
            .checked_add(llen)
            .filter(|&e| e <= end)
            .map(|e| lstart..e)
            .ok_or(EINVAL)?;
        // The stream starts after its zero padding, in its first block (in one piece: pieces
        // are whole pages, and a block is at most a page).
        let first = match ext.first() {
            Some(&f) => f,
            None => piece(buf.as_slice(), lent.start, lent.end).ok_or(EINVAL)?,
        };
        let pad = fixup_insize(first, fixup_scan(map, blksz), self.nid)
            .inspect_err(|e| report(sb, e))
            .map_err(to_kernel)?;
        let lent = match ext.as_mut_slice().first_mut() {
            // OVERFLOW: `pad` was found in `lent`'s first bytes.
            None => lent.start + pad..lent.end,
            Some(f) => {
                *f = f.get(pad..).ok_or(EINVAL)?;
                lent
            }
        };
        let partial = partial_decoding(map, olen);
        // CAST: below a page.
        let off = (map.la % page) as usize;
        let olen = usize::try_from(olen).map_err(|_| EFSCORRUPTED)?;
        let out = off..off.checked_add(olen).ok_or(EFSCORRUPTED)?;
        let io = Io {
            ext: ext.as_slice(),
            buf: buf.as_mut_slice(),
            lent,
            out,
            spill,
        };
        let copied = stream_decompress_io(alg, io, partial)
            .map_err(|(e, why)| self.stream_failed(job, why, olen, e))?;
        sb.zstats().note_stream_inplace(copied);
        Ok(true)
    }

    /// Logs a stream decoder's failure on `job` (`why`), whose output was `olen` bytes, and
    /// gives back `e` (the C driver's messages).
    fn stream_failed(&self, job: &Job, why: &str, olen: usize, e: Error) -> Error {
        let map = &job.map;
        let name = match map.algorithmformat {
            Z_EROFS_COMPRESSION_LZMA => "lzma",
            Z_EROFS_COMPRESSION_DEFLATE => "deflate",
            _ => "zstd",
        };
        if let Ok(real) = self.real_inode() {
            real.inode().sb().err(format_args!(
                "failed to decompress ({name}): {why} @ nid {}, la {}, pa {} size {} => {}",
                self.nid, map.la, map.pa, map.plen, olen
            ));
        }
        e
    }

    /// The pages of the read's folios for each output page of `job` (its extent's first page to
    /// its last): the folio holding it and the page's index in it, `None` where the read holds
    /// none. A large folio gives its pages in a row.
    fn out_pages<'s>(&'s self, job: &Job, pages: &mut OutPages<'s>, parted: &mut Parted) -> Result {
        let page = PAGE_SIZE as u64;
        job.outlen()
            .ok_or_else(|| self.corrupt_extent(job, "compressed"))?;
        let first = job.map.la >> PAGE_SHIFT;
        // OVERFLOW: `job.end > job.map.la >= 0` (`outlen` is not 0).
        let last = (job.end - 1) >> PAGE_SHIFT;
        pages.clear();
        // OVERFLOW: `first <= last`.
        pages.reserve(usize::try_from(last - first + 1).map_err(|_| EFSCORRUPTED)?)?;
        // OVERFLOW: `first * page <= job.map.la`.
        let mut i = self.out.partition_point(|s| s.end <= first * page);
        for index in first..=last {
            // OVERFLOW: `index * page <= last * page < job.end`.
            let pos = index * page;
            while self.out.get(i).is_some_and(|s| s.end <= pos) {
                i += 1;
            }
            let p = self.out.get(i).filter(|s| s.pos <= pos).and_then(|s| {
                // CAST: a page index inside one folio.
                // OVERFLOW: `s.pos <= pos` just above.
                let idx = ((pos - s.pos) >> PAGE_SHIFT) as usize;
                s.folio.as_ref().map(|f| (f, idx))
            });
            let p = match p {
                Some((f, _)) if f.is_part() => {
                    // CAST: a page index of one extent's output.
                    // OVERFLOW: `index >= first`.
                    parted.push(((index - first) as usize, i))?;
                    None
                }
                p => p,
            };
            pages.push(p)?;
        }
        Ok(())
    }

    /// Decompresses `src` (the pcluster) into all of `out` (`z_erofs_decompress_pcluster`).
    fn decompress(&self, job: &Job, src: &[u8], out: &mut [u8]) -> Result {
        let map = &job.map;
        let blksz = self.blksz;
        // CAST: usize fits in u64. `out` is the job's whole output, `job.end - map.la` bytes.
        let outsize = out.len() as u64;
        if map.algorithmformat == Z_EROFS_COMPRESSION_LZ4 {
            // The superblock only for a failure's message: looking the inode up for each
            // pcluster cost a cold random 4 KiB read about 40 instructions.
            let pad = fixup_insize(src, fixup_scan(map, blksz), self.nid).map_err(|e| {
                if let Ok(real) = self.real_inode() {
                    report(real.inode().sb(), &e);
                }
                to_kernel(e)
            })?;
            let partial = partial_decoding(map, outsize);
            let ret = lz4_decompress(src.get(pad..).ok_or(EFSCORRUPTED)?, out, partial);
            return self.lz4_done(map, ret, out.len());
        }
        let real = self.real_inode()?;
        let sb = real.inode().sb();
        let res = match map.algorithmformat {
            alg @ (Z_EROFS_COMPRESSION_LZMA
            | Z_EROFS_COMPRESSION_DEFLATE
            | Z_EROFS_COMPRESSION_ZSTD) => {
                let pad = fixup_insize(src, fixup_scan(map, blksz), self.nid)
                    .inspect_err(|e| report(sb, e))
                    .map_err(to_kernel)?;
                let partial = partial_decoding(map, outsize);
                let olen = out.len();
                stream_decompress(alg, src.get(pad..).ok_or(EFSCORRUPTED)?, out, partial)
                    .map_err(|(e, why)| self.stream_failed(job, why, olen, e))
            }
            Z_EROFS_COMPRESSION_SHIFTED | Z_EROFS_COMPRESSION_INTERLACED => transform_plain(
                map.algorithmformat == Z_EROFS_COMPRESSION_INTERLACED,
                src,
                out,
                map.la,
                blksz,
                self.nid,
            )
            .inspect_err(|e| report(sb, e))
            .map_err(to_kernel),
            alg => {
                sb.err(format_args!(
                    "compression algorithm {alg} is not supported yet @ nid {}",
                    self.nid
                ));
                Err(EOPNOTSUPP)
            }
        };
        res
    }

    /// Checks what the LZ4 decoder returned for `map`, which had to be `olen` bytes, and logs
    /// a failure (`z_erofs_lz4_decompress_mem`'s messages).
    fn lz4_done(&self, map: &ZMap, ret: i32, olen: usize) -> Result {
        // CAST: a non-negative count of bytes.
        if ret >= 0 && ret as usize == olen {
            return Ok(());
        }
        let Ok(real) = self.real_inode() else {
            return Err(EFSCORRUPTED);
        };
        let sb = real.inode().sb();
        let why = if ret < 0 {
            "corrupted compressed data"
        } else {
            "unexpected end of stream"
        };
        sb.err(format_args!(
            "failed to decompress (lz4): {why} @ nid {}, la {}, pa {} size {} => {}",
            self.nid, map.la, map.pa, map.plen, olen
        ));
        Err(EFSCORRUPTED)
    }

    /// Logs a job whose extent does not fit it (`what` source; a corrupted image) and returns
    /// `EFSCORRUPTED`.
    fn corrupt_extent(&self, job: &Job, what: &str) -> Error {
        if let Ok(real) = self.real_inode() {
            real.inode().sb().err(format_args!(
                "bogus {what} extent {}+{} up to {} @ nid {}",
                job.map.la, job.map.llen, job.end, self.nid
            ));
        }
        EFSCORRUPTED
    }

    /// The inode being read, through a folio still locked (which keeps it); for a shared
    /// inode (`inode_share`), a real one of the same content.
    fn real_inode(&self) -> Result<RealInode> {
        // From the back: `decode_all` hands folios back from the front and keeps the last one
        // to the end, so this finds one at once.
        self.out
            .iter()
            .rev()
            .find_map(|s| s.folio.as_ref())
            .and_then(|f| f.real_inode())
            .ok_or(EINVAL)
    }

    /// The folio of the read holding file byte `pos`, and `pos`'s offset in it; `None` if the
    /// read holds none there (or it is lent).
    fn held_at(&self, pos: u64) -> Option<(&OutFolio, usize)> {
        let s = self.out.get(slot_at(&self.out, pos)?)?;
        // CAST: an offset inside one folio.
        // OVERFLOW: the slot holds `pos`, so `s.pos <= pos`.
        Some((s.folio.as_ref()?, (pos - s.pos) as usize))
    }

    /// Whether the `n` pages read in place from file byte `at` on are all back in the read's
    /// folios (their bios done), as the in-place decoders need.
    fn lent_back(&self, at: u64, n: usize) -> bool {
        (0..n).all(|k| {
            u64::try_from(k)
                .ok()
                .and_then(|k| k.checked_mul(PAGE_SIZE as u64))
                .and_then(|o| at.checked_add(o))
                .is_some_and(|pos| self.held_at(pos).is_some())
        })
    }

    /// The slots whose folios hold every byte of `from..to` (`from < to`), in a row: the range
    /// of their indexes in `self.out`; `None` if a byte there is not held: no folio of the
    /// read's there, or it is not in a piece the read holds (in its slot or `aside`): it is on
    /// the engine, or in the part of a folio that another read writes and did not hand this
    /// one.
    fn held_run(&self, from: u64, to: u64, aside: &Aside) -> Option<core::ops::Range<usize>> {
        let first = slot_at(&self.out, from)?;
        let mut i = first;
        let mut pos = from;
        while pos < to {
            let s = self.out.get(i).filter(|s| s.pos <= pos)?;
            let (a, b) = piece_bytes(s, pos, to);
            let covers = |f: &OutFolio| {
                let (x, y) = f.range();
                x <= a && b <= y
            };
            if !s.folio.as_ref().is_some_and(covers)
                && !aside.iter().any(|(k, f)| *k == i && covers(f))
            {
                return None;
            }
            pos = s.end;
            i += 1;
        }
        Some(first..i)
    }

    /// Whether a folio `job` writes is a part of one another read writes too
    /// ([`Shares::attach`]), or whose other bytes are on the engine ([`Request::offload`]).
    fn has_parts(&self, job: &Job) -> bool {
        if !self.parts {
            return false;
        }
        let i = self.out.partition_point(|s| s.end <= job.map.la);
        self.out
            .get(i..)
            .unwrap_or_default()
            .iter()
            .take_while(|s| s.pos < job.end)
            .any(|s| s.folio.as_ref().is_some_and(|f| f.is_part()))
    }

    /// Zeroes `from..to` of the folios.
    fn zero(&mut self, from: u64, to: u64) -> Result {
        self.for_each_out(from, to, |f, off, _at, n| f.zero(off, n))
    }

    /// Copies `bytes` to file position `from` of the folios.
    fn copy_out(&mut self, from: u64, bytes: &[u8]) -> Result {
        let to = from.checked_add(bytes.len() as u64).ok_or(EINVAL)?;
        // OVERFLOW: `at + n` is at most `to - from`, the length of `bytes`.
        self.for_each_out(from, to, |f, off, at, n| {
            f.write(off, bytes.get(at..at + n).ok_or(EINVAL)?)
        })
    }

    /// Calls `f(folio, offset in folio, offset from from, length)` for the pieces of `from..to`
    /// that fall in the request's folios (pages between them are not ours to fill).
    fn for_each_out(
        &mut self,
        from: u64,
        to: u64,
        mut f: impl FnMut(&mut OutFolio, usize, usize, usize) -> Result,
    ) -> Result {
        if from >= to {
            return Ok(());
        }
        // The folios are sorted: find the first that ends past `from`.
        let mut i = self.out.partition_point(|s| s.end <= from);
        while let Some(slot) = self.out.get_mut(i) {
            if slot.pos >= to {
                break;
            }
            let (a, b) = (slot.pos.max(from), slot.end.min(to));
            if let Some(folio) = slot.folio.as_mut() {
                // CAST: offsets and lengths inside one folio, or inside `from..to`.
                // OVERFLOW: `a >= slot.pos` and `a >= from`; `b >= a`, as `slot.end` is past
                // both `slot.pos` and `from` (sorted folios) and `to` past both too.
                f(
                    folio,
                    (a - slot.pos) as usize,
                    (a - from) as usize,
                    (b - a) as usize,
                )?;
            }
            i += 1;
        }
        Ok(())
    }
}
