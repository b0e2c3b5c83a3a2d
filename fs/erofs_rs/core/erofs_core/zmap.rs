// SPDX-License-Identifier: MIT OR GPL-2.0-only
//! Logical-to-physical mapping of compressed files. C counterpart: fs/erofs/zmap.c.
//!
//! A compressed file is cut into logical clusters (lclusters) of `1 << z_lclusterbits` bytes.
//! Each has an index: HEAD lclusters start a new extent at `clusterofs` and give the block of
//! its physical cluster (pcluster); NONHEAD lclusters continue the extent of an earlier head
//! (`delta[0]` back) until a later one (`delta[1]` ahead). Indexes are full (8 bytes each),
//! compact (4 or 2 bytes each, packed with a shared base block), or, with
//! `Z_EROFS_ADVISE_EXTENTS`, encoded extent records. The tail may be inline after the indexes
//! (ztailpacking) or a fragment of the packed inode.
//!
//! Every loop here ends: lookback strictly decreases the lcluster number, the forward scans of
//! [`GET_BLOCKS_FIEMAP`] and of [`map_blocks_until`] (`Recorder::extend`, which reads runs of
//! lclusters off their compact packs) strictly increase it up to EOF, the extent scans are
//! bounded by `la` or by a binary search.

use crate::erofs_core::{
    inode::{
        DataLayout,
        InodeInfo, //
    },
    ondisk::{
        self,
        z, //
    },
    sb::{
        SbInfo,
        METABOX_POS, //
    },
    Corruption,
    Error,
    MetaRead,
    Result,
    Unsupported, //
};
use zerocopy::{
    little_endian::{
        U32,
        U64, //
    },
    FromBytes, //
};

/// The per-inode compression state (`z_*` fields of `struct erofs_inode`), from
/// [`fill_inode`].
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub struct ZInfo {
    /// `Z_EROFS_ADVISE_*` bits of the map header.
    pub z_advise: u16,
    /// Algorithms of HEAD1 and HEAD2 lclusters (`Z_EROFS_COMPRESSION_*`).
    pub z_algofmt: [u8; 2],
    /// log2 of the lcluster size.
    pub z_lclusterbits: u8,
    /// Encoded size of the inline tail pcluster (ztailpacking), or 0.
    pub z_idata_size: u16,
    /// With `FRAGMENT_PCLUSTER`: the tail's byte offset in the packed inode. With
    /// ztailpacking: the byte position of the inline pcluster on the device.
    pub z_fragmentoff: u64,
    /// The head lcluster of the tail extent (ztailpacking and fragments).
    pub z_tailextent_headlcn: u64,
    /// Number of extent records (with `Z_EROFS_ADVISE_EXTENTS`).
    pub z_extents: u64,
    /// Where the inode's lcluster indexes lie, worked out once by [`fill_inode`] (each lookup
    /// worked it out again: about 100 instructions of a cold random 4 KiB read).
    index: Option<IndexLayout>,
}

/// The extent has data: `pa`/`plen` give its pcluster (`EROFS_MAP_MAPPED`).
pub const MAP_MAPPED: u32 = 0x0001;
/// The pcluster is inline in the metadata, at byte `pa` of the device (`EROFS_MAP_META`).
pub const MAP_META: u32 = 0x0002;
/// The extent's end is not known exactly: `llen` may be short (`EROFS_MAP_PARTIAL_MAPPED`).
pub const MAP_PARTIAL_MAPPED: u32 = 0x0004;
/// The extent uses only a prefix of its pcluster's decoded data (`EROFS_MAP_PARTIAL_REF`).
pub const MAP_PARTIAL_REF: u32 = 0x0008;
/// The extent is a fragment of the packed inode at offset `pa` (`EROFS_MAP_FRAGMENT`).
pub const MAP_FRAGMENT: u32 = 0x0010;

/// [`map_blocks_iter`] flag: compute the exact decoded length (`EROFS_GET_BLOCKS_FIEMAP`).
pub const GET_BLOCKS_FIEMAP: u32 = 0x0001;
/// [`map_blocks_iter`] flag: compute the exact decoded length for LZMA, DEFLATE and Zstandard
/// extents of at least one block, for readahead (`EROFS_GET_BLOCKS_READMORE`).
pub const GET_BLOCKS_READMORE: u32 = 0x0002;
/// Internal flag: the tail-finding pass of [`fill_inode`] (`EROFS_GET_BLOCKS_FINDTAIL`).
const GET_BLOCKS_FINDTAIL: u32 = 0x0004;

/// One extent of a compressed file (`struct erofs_map_blocks`).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct ZMap {
    /// Logical start of the extent (the decoded pcluster starts here).
    pub la: u64,
    /// Logical length (see [`MAP_PARTIAL_MAPPED`]); past EOF, the distance to the position
    /// asked for plus one.
    pub llen: u64,
    /// [`MAP_MAPPED`]: byte position of the pcluster (in the metadata with [`MAP_META`]);
    /// [`MAP_FRAGMENT`]: byte offset of the extent's data in the packed inode (the C driver
    /// keeps this in `vi->z_fragmentoff`); else 0.
    pub pa: u64,
    /// Encoded length of the pcluster in bytes ([`MAP_MAPPED`] only, else 0).
    pub plen: u64,
    /// `MAP_*` bits; 0 for holes and post-EOF extents.
    pub flags: u32,
    /// `Z_EROFS_COMPRESSION_*`, including `SHIFTED`/`INTERLACED` for uncompressed pclusters;
    /// meaningful with [`MAP_MAPPED`] only.
    pub algorithmformat: u8,
}

impl ZMap {
    /// Whether the extent is exactly the whole decoded pcluster (`EROFS_MAP_FULL`): neither
    /// [`MAP_PARTIAL_MAPPED`] nor [`MAP_PARTIAL_REF`]. Only then, and only when all of `llen`
    /// is wanted, may a decompressor require the stream to end exactly at `llen`.
    pub fn full_mapped(&self) -> bool {
        self.flags & (MAP_PARTIAL_MAPPED | MAP_PARTIAL_REF) == 0
    }

    /// Whether the extent has a pcluster ([`MAP_MAPPED`]).
    pub fn is_mapped(&self) -> bool {
        self.flags & MAP_MAPPED != 0
    }

    /// Whether the pcluster is inline in the metadata ([`MAP_META`]).
    pub fn is_meta(&self) -> bool {
        self.flags & MAP_META != 0
    }

    /// Whether the extent is a fragment of the packed inode ([`MAP_FRAGMENT`]).
    pub fn is_fragment(&self) -> bool {
        self.flags & MAP_FRAGMENT != 0
    }
}

/// Position of the first byte after the map header (`Z_EROFS_MAP_HEADER_END`).
fn map_header_end(sbi: &SbInfo, vi: &InodeInfo) -> Result<u64> {
    let nid = vi.nid.0;
    vi.payload_pos(sbi)
        .and_then(|p| p.checked_next_multiple_of(8))
        .and_then(|p| p.checked_add(8))
        .ok_or(Corruption::InodeLocation(nid).into())
}

/// Reads the map header and sets up the inode's compression state (`z_erofs_fill_inode`).
///
/// For ztailpacking and fragments this also finds the tail extent (the C driver's
/// `EROFS_GET_BLOCKS_FINDTAIL` pass), which reads the last lcluster indexes. The kernel calls
/// it once per inode, before the first [`map_blocks`], and keeps the result.
///
/// # Errors
///
/// [`Unsupported::Algorithm`] for unknown algorithms, [`Error::Corrupted`] for inconsistent
/// big pcluster advice and bad tail extents, and the backend's errors.
pub fn fill_inode(sbi: &SbInfo, meta: &impl MetaRead, vi: &InodeInfo) -> Result<ZInfo> {
    let nid = vi.nid.0;
    let pos = vi
        .payload_pos(sbi)
        .and_then(|p| p.checked_next_multiple_of(8))
        .ok_or(Corruption::InodeLocation(nid))?;
    let mut raw = [0u8; 8];
    meta.read_meta(pos, &mut raw)?;
    let (h, _) =
        z::MapHeader::ref_from_prefix(&raw[..]).map_err(|_| Corruption::InodeLocation(nid))?;
    let mut zi = ZInfo::default();

    // With the top bit set, the whole file is in the packed inode and the rest of the
    // 8-byte header is its offset there (mkfs.erofs -Eall-fragments on small files).
    if h.h_clusterbits >> z::Z_EROFS_FRAGMENT_INODE_BIT != 0 {
        let (whole, _) =
            U64::read_from_prefix(&raw[..]).map_err(|_| Corruption::InodeLocation(nid))?;
        zi.z_advise = z::Z_EROFS_ADVISE_FRAGMENT_PCLUSTER;
        zi.z_fragmentoff = whole.get() & !(1u64 << 63);
        return Ok(zi);
    }
    zi.z_advise = h.h_advise.get();
    zi.z_lclusterbits = sbi.blkszbits.saturating_add(h.h_clusterbits & 15);
    if vi.datalayout == DataLayout::CompressedFull && zi.z_advise & z::Z_EROFS_ADVISE_EXTENTS != 0 {
        zi.z_extents = u64::from(h.h_fragmentoff.get()) | (u64::from(h.h_extents_hi()) << 32);
        return Ok(zi);
    }
    if zi.z_advise & z::Z_EROFS_ADVISE_FRAGMENT_PCLUSTER != 0 {
        zi.z_fragmentoff = u64::from(h.h_fragmentoff.get());
    } else if zi.z_advise & z::Z_EROFS_ADVISE_INLINE_PCLUSTER != 0 {
        zi.z_idata_size = h.h_idata_size();
    }
    zi.z_algofmt = [h.h_algorithmtype & 15, h.h_algorithmtype >> 4];
    for alg in zi.z_algofmt {
        if alg >= ondisk::Z_EROFS_COMPRESSION_MAX {
            return Err(Unsupported::Algorithm { nid, alg }.into());
        }
    }
    let big = z::Z_EROFS_ADVISE_BIG_PCLUSTER_1 | z::Z_EROFS_ADVISE_BIG_PCLUSTER_2;
    if !sbi.has_big_pcluster() && zi.z_advise & big != 0 {
        return Err(Corruption::BigPclusterWithoutFeature(nid).into());
    }
    if vi.datalayout == DataLayout::CompressedCompact
        && (zi.z_advise & z::Z_EROFS_ADVISE_BIG_PCLUSTER_1 == 0)
            != (zi.z_advise & z::Z_EROFS_ADVISE_BIG_PCLUSTER_2 == 0)
    {
        return Err(Corruption::InconsistentBigPcluster(nid).into());
    }
    // An empty file has no tail to find; the C driver never gets here for one, since it sets
    // up the inode only when mapping a position before EOF.
    if (zi.z_idata_size != 0 || zi.z_advise & z::Z_EROFS_ADVISE_FRAGMENT_PCLUSTER != 0)
        && vi.size != 0
    {
        map_blocks_fo(
            sbi,
            meta,
            vi,
            &mut zi,
            vi.size.saturating_sub(1),
            GET_BLOCKS_FINDTAIL,
            &mut IndexCache::default(),
        )?;
    }
    // (An error here is the lookups' to report, as before.)
    zi.index = index_layout(sbi, vi, &zi).ok();
    Ok(zi)
}

/// Where the lcluster indexes of `vi`, of compression state `zi`, lie.
fn index_layout(sbi: &SbInfo, vi: &InodeInfo, zi: &ZInfo) -> Result<IndexLayout> {
    let ebase = map_header_end(sbi, vi)?;
    let totalidx = vi.iblks(sbi);
    // 4B entries up to the first 32-byte boundary, so that 2B packs are aligned.
    let initial = (32u64.saturating_sub(ebase % 32) / 4) & 7;
    let compacted_2b = if zi.z_advise & z::Z_EROFS_ADVISE_COMPACTED_2B != 0 && initial < totalidx {
        totalidx.saturating_sub(initial) & !15
    } else {
        0
    };
    Ok(IndexLayout {
        ebase,
        totalidx,
        initial,
        compacted_2b,
    })
}

/// The state gathered while walking lcluster indexes (`struct z_erofs_maprecorder`).
struct Recorder<'a, M: MetaRead> {
    /// The superblock.
    sbi: &'a SbInfo,
    /// Metadata access.
    meta: &'a M,
    /// The inode.
    vi: &'a InodeInfo,
    /// Its compression state.
    zi: &'a ZInfo,
    /// The lcluster last loaded.
    lcn: u64,
    /// Its type (`Z_EROFS_LCLUSTER_TYPE_*`).
    r#type: u8,
    /// The type of the extent's head.
    headtype: u8,
    /// HEAD: where the extent starts in the lcluster; NONHEAD: the lcluster size.
    clusterofs: u64,
    /// NONHEAD: distance back to the head, and ahead to the next head.
    delta: [u16; 2],
    /// HEAD: the pcluster's block, or `EROFS_NULL_ADDR` for holes.
    pblk: u64,
    /// The byte after the index (pack) last read: where an inline pcluster starts.
    nextpackoff: u64,
    /// The pcluster's block count once known (C: `compressedblks`, -1 when unknown).
    compressedblks: Option<u32>,
    /// The head refers to part of its decoded pcluster.
    partialref: bool,
    /// What the loads so far worked out and read.
    cache: IndexCache,
}

/// What the index loads of an inode keep for the next load, within one lookup and from one
/// lookup to the next of [`map_blocks_until`].
#[derive(Clone, Copy, Default)]
struct IndexCache {
    /// The index area's layout, worked out at the first load (the C driver recomputes it
    /// in each `z_erofs_load_*_lcluster`).
    layout: Option<IndexLayout>,
    /// The last compact pack read, as (its position, its size): the loads of one lookup
    /// mostly fall in one pack (2 or 16 entries), read once.
    pack_at: Option<(u64, usize)>,
    /// Its bytes.
    pack: [u8; 32],
}

/// Where an inode's lcluster indexes lie (what `z_erofs_load_compact_lcluster` works out
/// from the inode before it finds an entry).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
struct IndexLayout {
    /// The first index byte after the map header (`Z_EROFS_MAP_HEADER_END`).
    ebase: u64,
    /// The number of lclusters (`erofs_iblks`).
    totalidx: u64,
    /// Compact: the 4-byte entries before the first 32-byte boundary.
    initial: u64,
    /// Compact: the 2-byte entries after them (a multiple of 16, or 0).
    compacted_2b: u64,
}

/// Where a compact index lies ([`Recorder::locate`]).
struct PackAt {
    /// The pack's position.
    start: u64,
    /// Its size in bytes: 8 (4B entries) or 32 (2B).
    size: usize,
    /// Its number of entries.
    vcnt: usize,
    /// The bits of each entry.
    encodebits: usize,
    /// The entry, in the pack.
    i: usize,
}

impl<'a, M: MetaRead> Recorder<'a, M> {
    /// A recorder for the indexes of `vi`, nothing loaded yet.
    fn new(sbi: &'a SbInfo, meta: &'a M, vi: &'a InodeInfo, zi: &'a ZInfo) -> Self {
        Recorder {
            sbi,
            meta,
            vi,
            zi,
            lcn: 0,
            r#type: 0,
            headtype: 0,
            clusterofs: 0,
            delta: [0; 2],
            pblk: 0,
            nextpackoff: 0,
            compressedblks: None,
            partialref: false,
            cache: IndexCache::default(),
        }
    }
}

impl<M: MetaRead> Recorder<'_, M> {
    /// The inode's nid, for errors.
    fn nid(&self) -> u64 {
        self.vi.nid.0
    }

    /// The lcluster size.
    fn lclustersize(&self) -> u64 {
        1u64 << self.zi.z_lclusterbits.min(63)
    }

    /// The logical position of lcluster `lcn`.
    fn lpos(&self, lcn: u64) -> Option<u64> {
        lcn.checked_mul(self.lclustersize())
    }

    /// Whether the inode allows big pclusters at all.
    fn any_big_pcluster(&self) -> bool {
        self.zi.z_advise & (z::Z_EROFS_ADVISE_BIG_PCLUSTER_1 | z::Z_EROFS_ADVISE_BIG_PCLUSTER_2)
            != 0
    }

    /// The index area's layout, worked out once.
    #[inline]
    fn layout(&mut self) -> Result<IndexLayout> {
        if let Some(l) = self.cache.layout.or(self.zi.index) {
            return Ok(l);
        }
        let l = index_layout(self.sbi, self.vi, self.zi)?;
        self.cache.layout = Some(l);
        Ok(l)
    }

    /// Loads a full (8-byte) index (`z_erofs_load_full_lcluster`).
    fn load_full(&mut self, lcn: u64) -> Result<()> {
        let nid = self.nid();
        let pos = self
            .layout()?
            .ebase
            .checked_add(8)
            .and_then(|p| lcn.checked_mul(8).and_then(|o| p.checked_add(o)))
            .ok_or(Corruption::LclusterOutOfRange(nid))?;
        let mut raw = [0u8; 8];
        self.meta.read_meta(pos, &mut raw)?;
        let (di, _) = z::LclusterIndex::ref_from_prefix(&raw[..])
            .map_err(|_| Corruption::LclusterOutOfRange(nid))?;
        self.lcn = lcn;
        self.nextpackoff = pos.saturating_add(8);
        let advise = di.di_advise.get();
        self.r#type = u8::try_from(advise & z::Z_EROFS_LI_LCLUSTER_TYPE_MASK).unwrap_or(0);
        if self.r#type == z::Z_EROFS_LCLUSTER_TYPE_NONHEAD {
            self.clusterofs = self.lclustersize();
            self.delta[0] = di.delta(0);
            if self.delta[0] & z::Z_EROFS_LI_D0_CBLKCNT != 0 {
                if !self.any_big_pcluster() {
                    return Err(Corruption::BogusCblkcnt(nid).into());
                }
                self.compressedblks = Some(u32::from(self.delta[0] & !z::Z_EROFS_LI_D0_CBLKCNT));
                self.delta[0] = 1;
            }
            self.delta[1] = di.delta(1);
        } else {
            self.partialref = advise & z::Z_EROFS_LI_PARTIAL_REF != 0;
            self.clusterofs = u64::from(di.di_clusterofs.get());
            if advise & z::Z_EROFS_LI_HOLE != 0 {
                self.compressedblks = Some(0);
                self.pblk = ondisk::EROFS_NULL_ADDR;
            } else {
                self.pblk = u64::from(di.di_u.get());
            }
        }
        Ok(())
    }

    /// Finds the compact index of `lcn`: its pack and its entry there (the first half of
    /// `z_erofs_load_compact_lcluster`).
    ///
    /// Compact indexes come in packs: 2 entries in 8 bytes (4B) or 16 entries in 32 bytes
    /// (2B), each pack ending with a le32 base block. The area starts with 4B packs up to a
    /// 32-byte boundary, then 2B packs (with `COMPACTED_2B`) for a multiple of 16 lclusters,
    /// then 4B packs for the rest.
    #[inline(always)]
    fn locate(&mut self, lcn: u64) -> Result<PackAt> {
        let nid = self.nid();
        let bits = self.zi.z_lclusterbits;
        let bad = Corruption::LclusterOutOfRange(nid);
        let IndexLayout {
            ebase,
            totalidx,
            initial,
            compacted_2b,
        } = self.layout()?;
        if lcn >= totalidx {
            return Err(bad.into());
        }
        if bits > 14 {
            return Err(Unsupported::LclusterBits { nid, bits }.into());
        }
        let mut pos = ebase;
        let mut rest = lcn;
        let mut amortizedshift = 2u32;
        if rest >= initial {
            pos = pos.checked_add(initial.saturating_mul(4)).ok_or(bad)?;
            rest = rest.saturating_sub(initial);
            if rest < compacted_2b {
                amortizedshift = 1;
            } else {
                pos = pos.checked_add(compacted_2b.saturating_mul(2)).ok_or(bad)?;
                rest = rest.saturating_sub(compacted_2b);
            }
        }
        pos = rest
            .checked_mul(1 << amortizedshift)
            .and_then(|o| pos.checked_add(o))
            .ok_or(bad)?;
        let vcnt: usize = match amortizedshift {
            2 => 2,
            _ if bits <= 12 => 16,
            _ => return Err(Unsupported::LclusterBits { nid, bits }.into()),
        };
        let size = vcnt << amortizedshift;
        let size64 = u64::try_from(size).map_err(|_| bad)?;
        let start = pos & !(size64.saturating_sub(1));
        let encodebits = size
            .saturating_sub(4)
            .saturating_mul(8)
            .checked_div(vcnt)
            .ok_or(bad)?;
        Ok(PackAt {
            start,
            size,
            vcnt,
            encodebits,
            i: usize::try_from(pos.saturating_sub(start) >> amortizedshift).map_err(|_| bad)?,
        })
    }

    /// Reads the pack at `at` into the cache, unless it is there already.
    #[inline]
    fn read_pack(&mut self, at: &PackAt) -> Result<()> {
        let c = &mut self.cache;
        if c.pack_at != Some((at.start, at.size)) {
            c.pack_at = None;
            let bad = Corruption::LclusterOutOfRange(self.vi.nid.0);
            self.meta
                .read_meta(at.start, c.pack.get_mut(..at.size).ok_or(bad)?)?;
            c.pack_at = Some((at.start, at.size));
        }
        Ok(())
    }

    /// Loads a compact (4- or 2-byte) index (`z_erofs_load_compact_lcluster`).
    fn load_compact(&mut self, lcn: u64, lookahead: bool) -> Result<()> {
        let nid = self.nid();
        let bad = Corruption::LclusterOutOfRange(nid);
        let at = self.locate(lcn)?;
        self.lcn = lcn;
        let (packsize, vcnt) = (at.size, at.vcnt);
        self.nextpackoff = u64::try_from(packsize)
            .ok()
            .and_then(|s| at.start.checked_add(s))
            .ok_or(bad)?;
        self.read_pack(&at)?;
        let pack = &self.cache.pack;
        let p = Pack {
            raw: pack,
            lobits: u32::from(self.zi.z_lclusterbits).max(12),
            encodebits: at.encodebits,
        };
        let i = at.i;

        let (lo, ty) = p.entry(i);
        self.r#type = ty;
        let cblkcnt = z::Z_EROFS_LI_D0_CBLKCNT;
        let big_pcluster = self.zi.z_advise & z::Z_EROFS_ADVISE_BIG_PCLUSTER_1 != 0;
        if ty == z::Z_EROFS_LCLUSTER_TYPE_NONHEAD {
            self.clusterofs = self.lclustersize();
            if lookahead {
                self.delta[1] = compacted_la_distance(&p, vcnt, i);
            }
            if lo & cblkcnt != 0 {
                if !big_pcluster {
                    return Err(Corruption::BogusCblkcnt(nid).into());
                }
                self.compressedblks = Some(u32::from(lo & !cblkcnt));
                self.delta[0] = 1;
                return Ok(());
            }
            if i.saturating_add(1) != vcnt {
                self.delta[0] = lo;
                return Ok(());
            }
            // The last entry of a pack stores `delta[1]`; its `delta[0]` follows from the
            // entry before it.
            let (prev, prev_ty) = p.entry(i.saturating_sub(1));
            let prev = if prev_ty != z::Z_EROFS_LCLUSTER_TYPE_NONHEAD {
                0
            } else if prev & cblkcnt != 0 {
                1
            } else {
                prev
            };
            self.delta[0] = prev.saturating_add(1);
            return Ok(());
        }
        self.clusterofs = u64::from(lo);
        self.delta[0] = 0;
        // The pack's base block plus the blocks of the pclusters that start earlier in it.
        let nblk = head_blocks(&p, i, big_pcluster, nid)?;
        let base = pack
            .get(packsize.saturating_sub(4)..)
            .and_then(|b| U32::read_from_prefix(b).ok())
            .map(|(b, _)| b.get())
            .ok_or(bad)?;
        // A 32-bit block number, as in the C driver.
        self.pblk = u64::from(base.wrapping_add(nblk));
        Ok(())
    }

    /// Loads the index of `lcn` and checks it (`z_erofs_load_lcluster_from_disk`).
    fn load(&mut self, lcn: u64, lookahead: bool) -> Result<()> {
        if self.vi.datalayout == DataLayout::CompressedCompact {
            self.load_compact(lcn, lookahead)?;
        } else {
            self.load_full(lcn)?;
        }
        // The type has two bits, so it is always below `Z_EROFS_LCLUSTER_TYPE_MAX`.
        if self.r#type != z::Z_EROFS_LCLUSTER_TYPE_NONHEAD && self.clusterofs >= self.lclustersize()
        {
            return Err(Corruption::BogusClusterofs(self.nid()).into());
        }
        Ok(())
    }

    /// Walks back from the current lcluster to the extent's head and returns the extent's
    /// logical start (`z_erofs_extent_lookback`).
    fn lookback(&mut self, mut distance: u16) -> Result<u64> {
        let nid = self.nid();
        loop {
            // Each step goes back at least one lcluster, so the walk ends.
            if distance == 0 || self.lcn < u64::from(distance) {
                return Err(Corruption::BogusLookback(nid).into());
            }
            let lcn = self.lcn.saturating_sub(u64::from(distance));
            self.load(lcn, false)?;
            if self.r#type == z::Z_EROFS_LCLUSTER_TYPE_NONHEAD {
                distance = self.delta[0];
                continue;
            }
            self.headtype = self.r#type;
            return Ok(self.lpos(lcn).ok_or(Corruption::BogusLookback(nid))? | self.clusterofs);
        }
    }

    /// Finds the pcluster's encoded length; clears [`MAP_MAPPED`] for holes
    /// (`z_erofs_get_extent_compressedlen`).
    fn compressedlen(&mut self, flags: &mut u32) -> Result<u64> {
        let nid = self.nid();
        let bigpcl1 = self.zi.z_advise & z::Z_EROFS_ADVISE_BIG_PCLUSTER_1 != 0;
        let bigpcl2 = self.zi.z_advise & z::Z_EROFS_ADVISE_BIG_PCLUSTER_2 != 0;
        let lcn = self
            .lcn
            .checked_add(1)
            .ok_or(Corruption::BogusCblkcnt(nid))?;
        let small = match self.headtype {
            z::Z_EROFS_LCLUSTER_TYPE_HEAD1 => !bigpcl1,
            _ => !bigpcl2,
        };
        // Without big pclusters, or when the head is the last lcluster, the pcluster is one
        // block (unless a hole or a count was already seen).
        if (small || self.lpos(lcn).is_none_or(|p| p >= self.vi.size))
            && self.compressedblks.is_none()
        {
            self.compressedblks = Some(1);
        }
        let blks = match self.compressedblks {
            Some(blks) => blks,
            None => {
                self.load(lcn, false)?;
                if self.r#type != z::Z_EROFS_LCLUSTER_TYPE_NONHEAD {
                    // The next lcluster starts another extent: a one-block pcluster. (A hole
                    // head there has set the count to 0, which the C driver keeps.)
                    self.compressedblks.unwrap_or(1)
                } else {
                    match self.compressedblks {
                        Some(blks) if self.delta[0] == 1 => blks,
                        _ => return Err(Corruption::BogusCblkcnt(nid).into()),
                    }
                }
            }
        };
        self.compressedblks = Some(blks);
        if blks == 0 {
            *flags &= !MAP_MAPPED;
        }
        Ok(u64::from(blks) << self.sbi.blkszbits)
    }

    /// Finds the exact decoded length of the extent at `la` by walking forward to the next
    /// head or EOF (`z_erofs_get_extent_decompressedlen`).
    fn decompressedlen(&mut self, la: u64) -> Result<u64> {
        let nid = self.nid();
        let size = self.vi.size;
        let bits = self.zi.z_lclusterbits.min(63);
        let headlcn = la >> bits;
        let mut lcn = self.lcn;
        loop {
            // The last pcluster ends at EOF, with no head after it.
            if self.lpos(lcn).is_none_or(|p| p >= size) {
                return Ok(size.saturating_sub(la));
            }
            self.load(lcn, true)?;
            if self.r#type == z::Z_EROFS_LCLUSTER_TYPE_NONHEAD {
                // Pre-1.0 mkfs wrote 0 here; step one lcluster, as the C driver does.
                if self.delta[1] == 0 {
                    self.delta[1] = 1;
                }
            } else {
                if lcn != headlcn {
                    break;
                }
                self.delta[1] = 1;
            }
            // Each step goes ahead at least one lcluster, so the walk ends at EOF.
            lcn = lcn
                .checked_add(u64::from(self.delta[1]))
                .ok_or(Corruption::BogusLookback(nid))?;
        }
        self.lpos(lcn)
            .and_then(|p| p.checked_add(self.clusterofs))
            .and_then(|p| p.checked_sub(la))
            .ok_or(Corruption::BogusLookback(nid).into())
    }
}

/// What a lookup of an lcluster after an extent's head would make of it ([`Recorder::step`]).
enum Step {
    /// A NONHEAD whose lookup maps the extent as the head's other lclusters do: `delta[0]`
    /// leads straight back to the head, and it has no block count of its own (unless it is
    /// the lcluster right after the head, whose count is the extent's).
    Continues,
    /// A head: the next extent starts at this byte offset in the lcluster.
    Head(u64),
    /// Anything else (an index that does not load, a NONHEAD leading elsewhere or carrying
    /// another block count): left to its own lookup.
    Other,
}

impl<M: MetaRead> Recorder<'_, M> {
    /// Loads lcluster `lcn`, after the extent head `headlcn`, and says what it is to the
    /// extent.
    fn step(&mut self, headlcn: u64, lcn: u64) -> Step {
        self.compressedblks = None;
        if self.load(lcn, false).is_err() {
            return Step::Other;
        }
        if self.r#type != z::Z_EROFS_LCLUSTER_TYPE_NONHEAD {
            // Below the lcluster size, as `load` checks.
            return Step::Head(self.clusterofs);
        }
        let d = lcn.checked_sub(headlcn);
        if d == Some(u64::from(self.delta[0])) && (self.compressedblks.is_none() || d == Some(1)) {
            Step::Continues
        } else {
            Step::Other
        }
    }

    /// Reads compact packs from lcluster `lcn` on, as [`Self::step`] of each lcluster would
    /// load them but without loading each: returns how many lclusters from `lcn`, before
    /// `stop`, [`Step::Continues`] the extent whose head is `headlcn`, and what [`Self::step`]
    /// makes of the lcluster after them, when it is before `stop` and this scan can tell
    /// (`None`: [`Self::step`] is to load it). Full indexes are left to [`Self::step`].
    fn continuing(&mut self, headlcn: u64, lcn: u64, stop: u64) -> (u64, Option<Step>) {
        if self.vi.datalayout != DataLayout::CompressedCompact {
            return (0, None);
        }
        let nid = self.nid();
        let lobits = u32::from(self.zi.z_lclusterbits).max(12);
        let lsz = self.lclustersize();
        let big_pcluster = self.zi.z_advise & z::Z_EROFS_ADVISE_BIG_PCLUSTER_1 != 0;
        let cblkcnt = z::Z_EROFS_LI_D0_CBLKCNT;
        // `load` rejects the lclusters past the index count, which a pack may still hold.
        let Ok(layout) = self.layout() else {
            return (0, None);
        };
        let stop = stop.min(layout.totalidx);
        let mut cur = lcn;
        while cur < stop {
            let Ok(at) = self.locate(cur) else {
                break;
            };
            if self.read_pack(&at).is_err() {
                break;
            }
            let p = Pack {
                raw: &self.cache.pack,
                lobits,
                encodebits: at.encodebits,
            };
            let mut i = at.i;
            while i < at.vcnt && cur < stop {
                let (lo, ty) = p.entry(i);
                if ty != z::Z_EROFS_LCLUSTER_TYPE_NONHEAD {
                    // What `load` makes of a head: an error (then `step` says `Other`) for a
                    // `clusterofs` past the lcluster or a pack that does not add up, checked
                    // as `load` checks them.
                    let ofs = u64::from(lo);
                    let head = if ofs < lsz && head_blocks(&p, i, big_pcluster, nid).is_ok() {
                        Step::Head(ofs)
                    } else {
                        Step::Other
                    };
                    return (cur.saturating_sub(lcn), Some(head));
                }
                let d = cur.saturating_sub(headlcn);
                let continues = if lo & cblkcnt != 0 {
                    big_pcluster && d == 1
                } else if i.saturating_add(1) != at.vcnt {
                    u64::from(lo) == d
                } else {
                    // The last entry of a pack stores `delta[1]`; its `delta[0]` follows from
                    // the entry before it.
                    let (prev, prev_ty) = p.entry(i.saturating_sub(1));
                    let prev = if prev_ty != z::Z_EROFS_LCLUSTER_TYPE_NONHEAD {
                        0
                    } else if prev & cblkcnt != 0 {
                        1
                    } else {
                        prev
                    };
                    u64::from(prev.saturating_add(1)) == d
                };
                if !continues {
                    return (cur.saturating_sub(lcn), Some(Step::Other));
                }
                i = i.saturating_add(1);
                cur = cur.saturating_add(1);
            }
        }
        (cur.saturating_sub(lcn), None)
    }

    /// Extends an extent whose head is lcluster `headlcn` and that reaches at least `end` (the
    /// start of the lcluster after the one mapped) over the following lclusters that start
    /// before `until` and [`Step::Continues`] it, up to the next head. Returns the new end and
    /// whether it is the extent's exact end inside a head lcluster (where the C driver's lookup
    /// of those last bytes gives `EROFS_MAP_FULL_MAPPED`).
    ///
    /// It stops, with what it has, at EOF, at `until`, at [`ondisk::Z_EROFS_PCLUSTER_MAX_DSIZE`]
    /// from `la`, and at a [`Step::Other`] lcluster, which its own lookup then maps (or
    /// rejects) as it always did. Each step goes ahead one lcluster, or, with `scan`, over a run
    /// of lclusters read off their compact packs ([`Self::continuing`]), to the same result.
    fn extend(
        &mut self,
        headlcn: u64,
        la: u64,
        mut end: u64,
        until: u64,
        scan: bool,
    ) -> (u64, bool) {
        let bits = self.zi.z_lclusterbits.min(63);
        let Some(cap) = la.checked_add(ondisk::Z_EROFS_PCLUSTER_MAX_DSIZE) else {
            return (end, false);
        };
        // The lclusters before `stop` start before `until` and EOF, and end by `cap`.
        let lsz_mask = self.lclustersize().saturating_sub(1);
        let ceil = |x: u64| (x >> bits).saturating_add(u64::from(x & lsz_mask != 0));
        let stop = ceil(until).min(ceil(self.vi.size)).min(cap >> bits);
        let mut lcn = end >> bits;
        loop {
            let Some(pos) = self.lpos(lcn) else {
                return (end, false);
            };
            if pos != end || pos >= until || pos >= self.vi.size {
                return (end, false);
            }
            let (n, seen) = if scan {
                self.continuing(headlcn, lcn, stop)
            } else {
                (0, None)
            };
            if n != 0 {
                // As many steps that each [`Step::Continues`].
                lcn = lcn.saturating_add(n);
                match self.lpos(lcn) {
                    Some(e) => end = e,
                    None => return (end, false),
                }
            }
            let step = match seen {
                // `lcn` is before `stop`: it starts at `end`, before `until` and EOF.
                Some(step) => step,
                None if n != 0 => continue,
                None => self.step(headlcn, lcn),
            };
            let Some(pos) = self.lpos(lcn) else {
                return (end, false);
            };
            match step {
                Step::Continues => {}
                Step::Head(ofs) => {
                    let ext_end = pos | ofs;
                    return if ofs != 0 && ext_end <= cap {
                        (ext_end, true)
                    } else {
                        (end, false)
                    };
                }
                Step::Other => return (end, false),
            }
            let Some(next) = lcn.checked_add(1) else {
                return (end, false);
            };
            match self.lpos(next) {
                Some(e) if e <= cap => end = e,
                _ => return (end, false),
            }
            lcn = next;
        }
    }
}

/// A compact pack's bytes and how its entries are packed.
struct Pack<'a> {
    /// The pack, at the start of the buffer.
    raw: &'a [u8; 32],
    /// The low bits of each entry (its type follows in 2 more).
    lobits: u32,
    /// The bits of each entry.
    encodebits: usize,
}

impl Pack<'_> {
    /// Entry `i`: its low bits and its type.
    #[inline(always)]
    fn entry(&self, i: usize) -> (u16, u8) {
        decode_compactedbits(self.raw, self.lobits, i.saturating_mul(self.encodebits))
    }
}

/// Decodes the compact entry at bit `pos` of `pack`: its low `lobits` bits and its type
/// (`decode_compactedbits`). For every entry of a pack, the 32 bits read from byte `pos / 8`
/// (as the C driver's `get_unaligned_le32`) lie in the pack; a larger `pos` reads the
/// buffer's last 4 bytes.
#[inline(always)]
fn decode_compactedbits(pack: &[u8; 32], lobits: u32, pos: usize) -> (u16, u8) {
    let at = (pos / 8).min(28);
    let v = match pack.get(at..at.saturating_add(4)) {
        Some(&[a, b, c, d]) => u32::from_le_bytes([a, b, c, d]),
        _ => 0,
    };
    // `pos % 8 + lobits + 2 <= 7 + 14 + 2`, within the 32 bits read.
    let v = v >> (pos % 8);
    let lo = v & ((1u32 << lobits.min(16)).saturating_sub(1));
    let ty = (v >> lobits.min(30)) & 3;
    (
        u16::try_from(lo).unwrap_or(u16::MAX),
        u8::try_from(ty).unwrap_or(0),
    )
}

/// The blocks of the pclusters whose heads come before entry `i` (a head) in its compact pack,
/// plus one for a pack without big pclusters: what `z_erofs_load_compact_lcluster` adds to
/// the pack's base block to find the head's pcluster.
#[inline(always)]
fn head_blocks(p: &Pack<'_>, i: usize, big_pcluster: bool, nid: u64) -> Result<u32> {
    let bad = Corruption::LclusterOutOfRange(nid);
    let cblkcnt = z::Z_EROFS_LI_D0_CBLKCNT;
    let mut i = i;
    let mut nblk: u32 = 0;
    if !big_pcluster {
        // Each earlier head in the pack has a one-block pcluster.
        nblk = 1;
        let mut j = i64::try_from(i).map_err(|_| bad)?;
        while j > 0 {
            j = j.saturating_sub(1);
            let (lo, ty) = p.entry(usize::try_from(j).map_err(|_| bad)?);
            if ty == z::Z_EROFS_LCLUSTER_TYPE_NONHEAD {
                j = j.saturating_sub(i64::from(lo));
            }
            if j >= 0 {
                nblk = nblk.saturating_add(1);
            }
        }
    } else {
        while i > 0 {
            i = i.saturating_sub(1);
            let (lo, ty) = p.entry(i);
            if ty == z::Z_EROFS_LCLUSTER_TYPE_NONHEAD {
                if lo & cblkcnt != 0 {
                    // Skip the head this count belongs to.
                    i = i.saturating_sub(1);
                    nblk = nblk.saturating_add(u32::from(lo & !cblkcnt));
                    continue;
                }
                // A big pcluster's first NONHEAD has a block count, never `delta[0] == 1`.
                if lo <= 1 {
                    return Err(Corruption::BogusCblkcnt(nid).into());
                }
                i = i.saturating_sub(usize::from(lo).saturating_sub(2));
                continue;
            }
            nblk = nblk.saturating_add(1);
        }
    }
    Ok(nblk)
}

/// The distance from entry `i` to the next head, for compact packs
/// (`get_compacted_la_distance`): counted within the pack, then continued by the last
/// entry's `delta[1]`.
fn compacted_la_distance(p: &Pack<'_>, vcnt: usize, mut i: usize) -> u16 {
    let mut d1: u32 = 0;
    let mut lo;
    loop {
        let (l, ty) = p.entry(i);
        lo = l;
        if ty != z::Z_EROFS_LCLUSTER_TYPE_NONHEAD {
            return u16::try_from(d1).unwrap_or(u16::MAX);
        }
        d1 = d1.saturating_add(1);
        i = i.saturating_add(1);
        if i >= vcnt {
            break;
        }
    }
    if lo & z::Z_EROFS_LI_D0_CBLKCNT == 0 {
        // As the C driver's unsigned arithmetic, truncated to `delta[1]`'s 16 bits; a 0
        // result is fixed up by the caller.
        d1 = d1.wrapping_add(u32::from(lo)).wrapping_sub(1);
    }
    u16::try_from(d1 & 0xffff).unwrap_or(u16::MAX)
}

/// Maps `la` through lcluster indexes (`z_erofs_map_blocks_fo`); with
/// [`GET_BLOCKS_FINDTAIL`], records the tail extent in `zi`.
fn map_blocks_fo(
    sbi: &SbInfo,
    meta: &impl MetaRead,
    vi: &InodeInfo,
    zi: &mut ZInfo,
    la: u64,
    flags: u32,
    cache: &mut IndexCache,
) -> Result<ZMap> {
    let nid = vi.nid.0;
    let findtail = flags & GET_BLOCKS_FINDTAIL != 0;
    let fragment = zi.z_advise & z::Z_EROFS_ADVISE_FRAGMENT_PCLUSTER != 0;
    let ztailpacking = zi.z_idata_size != 0;
    if fragment && !findtail && zi.z_tailextent_headlcn == 0 {
        // The whole file is one fragment.
        return Ok(ZMap {
            la: 0,
            llen: vi.size,
            pa: zi.z_fragmentoff,
            plen: 0,
            flags: MAP_FRAGMENT,
            algorithmformat: 0,
        });
    }
    let snapshot = *zi;
    let mut m = Recorder::new(sbi, meta, vi, &snapshot);
    m.cache = *cache;
    let bits = zi.z_lclusterbits.min(63);
    let initial_lcn = la >> bits;
    let endoff = la & (m.lclustersize().saturating_sub(1));
    m.load(initial_lcn, false)?;
    if findtail && ztailpacking {
        zi.z_fragmentoff = m.nextpackoff;
    }
    let mut mflags = MAP_MAPPED | MAP_PARTIAL_MAPPED;
    let bad = Corruption::BogusLookback(nid);
    let mut end = m.lcn.checked_add(1).and_then(|l| m.lpos(l)).ok_or(bad)?;
    let map_la;
    if m.r#type != z::Z_EROFS_LCLUSTER_TYPE_NONHEAD && endoff >= m.clusterofs {
        m.headtype = m.r#type;
        map_la = m.lpos(m.lcn).ok_or(bad)? | m.clusterofs;
        // An EOF lcluster of a ztailpacking file may hold the end of one extent, the inline
        // tail extent, and nothing else.
        if ztailpacking && end > vi.size {
            end = vi.size;
        }
    } else {
        let mut distance = m.delta[0];
        if m.r#type != z::Z_EROFS_LCLUSTER_TYPE_NONHEAD {
            // `la` is before the head's `clusterofs`: it belongs to the previous extent, which
            // ends exactly there.
            end = m.lpos(m.lcn).ok_or(bad)? | m.clusterofs;
            mflags &= !MAP_PARTIAL_MAPPED;
            distance = 1;
        }
        map_la = m.lookback(distance)?;
    }
    if m.partialref {
        mflags |= MAP_PARTIAL_REF;
    }
    let mut llen = end.checked_sub(map_la).ok_or(bad)?;

    if findtail {
        zi.z_tailextent_headlcn = m.lcn;
        // Full indexes keep bits 32..64 of the fragment offset in the head's `blkaddr`.
        if fragment && vi.datalayout == DataLayout::CompressedFull {
            zi.z_fragmentoff |= (m.pblk & 0xffff_ffff) << 32;
        }
    }
    let (pa, plen);
    if ztailpacking && m.lcn == zi.z_tailextent_headlcn {
        mflags |= MAP_META;
        pa = zi.z_fragmentoff;
        plen = u64::from(zi.z_idata_size);
        if sbi.blkoff(pa).saturating_add(plen) > sbi.blksz() {
            return Err(Corruption::InlinePclusterAcrossBlocks(nid).into());
        }
    } else if fragment && m.lcn == zi.z_tailextent_headlcn {
        mflags = MAP_FRAGMENT;
        pa = zi.z_fragmentoff;
        plen = 0;
    } else {
        // Holes have no block; their position is never used.
        pa = if m.pblk == ondisk::EROFS_NULL_ADDR {
            0
        } else {
            sbi.pos(m.pblk).ok_or(Corruption::PclusterAddress(nid))?
        };
        plen = m.compressedlen(&mut mflags)?;
    }

    let algorithmformat = if m.headtype == z::Z_EROFS_LCLUSTER_TYPE_PLAIN {
        if zi.z_advise & z::Z_EROFS_ADVISE_INTERLACED_PCLUSTER != 0 && mflags & MAP_META == 0 {
            ondisk::Z_EROFS_COMPRESSION_INTERLACED
        } else {
            ondisk::Z_EROFS_COMPRESSION_SHIFTED
        }
    } else {
        let [head1, head2] = zi.z_algofmt;
        if m.headtype == z::Z_EROFS_LCLUSTER_TYPE_HEAD2 {
            head2
        } else {
            head1
        }
    };

    let readmore = flags & GET_BLOCKS_READMORE != 0
        && matches!(
            algorithmformat,
            ondisk::Z_EROFS_COMPRESSION_LZMA
                | ondisk::Z_EROFS_COMPRESSION_DEFLATE
                | ondisk::Z_EROFS_COMPRESSION_ZSTD
        )
        && llen >= sbi.blksz();
    if flags & GET_BLOCKS_FIEMAP != 0 || readmore {
        llen = m.decompressedlen(map_la)?;
        mflags &= !MAP_PARTIAL_MAPPED;
    }
    *cache = m.cache;
    Ok(ZMap {
        la: map_la,
        llen,
        pa,
        plen,
        flags: mflags,
        algorithmformat,
    })
}

/// Maps `la` through encoded extent records (`z_erofs_map_blocks_ext`).
///
/// Records of 4 bytes hold only `plen` (lengths of consecutive pclusters after a le64 start
/// position), 8-byte ones add `pstart_lo` (one record per lcluster in both cases); 16- and
/// 32-byte ones also hold the logical start and are binary searched.
fn map_blocks_ext(
    sbi: &SbInfo,
    meta: &impl MetaRead,
    vi: &InodeInfo,
    zi: &ZInfo,
    la: u64,
) -> Result<ZMap> {
    let nid = vi.nid.0;
    let bad = Corruption::BogusExtent(nid);
    let interlaced = zi.z_advise & z::Z_EROFS_ADVISE_INTERLACED_PCLUSTER != 0;
    let recsz: u64 =
        4 << ((zi.z_advise >> z::Z_EROFS_ADVISE_EXTRECSZ_BIT) & z::Z_EROFS_ADVISE_EXTRECSZ_MASK);
    let recsz_usize = usize::try_from(recsz).map_err(|_| bad)?;
    let mut pos = map_header_end(sbi, vi)?
        .checked_next_multiple_of(recsz)
        .ok_or(bad)?;
    let bmask = sbi.blksz().saturating_sub(1);
    let lsz = 1u64 << zi.z_lclusterbits.min(63);
    let mut lend = vi.size;
    let mut raw = [0u8; 32];
    let mut read_ext = |pos: u64| -> Result<(u32, u32, u32, u32, u32)> {
        raw = [0; 32];
        let buf = raw.get_mut(..recsz_usize).ok_or(bad)?;
        meta.read_meta(pos, buf)?;
        let (ext, _) = z::Extent::ref_from_prefix(&raw[..]).map_err(|_| bad)?;
        Ok((
            ext.plen.get(),
            ext.pstart_lo.get(),
            ext.pstart_hi.get(),
            ext.lstart_lo.get(),
            ext.lstart_hi.get(),
        ))
    };
    let (mut lstart, last);
    let (mut plen_raw, mut pa) = (0u32, 0u64);
    if recsz <= 8 {
        // One record per lcluster.
        let mut base = None;
        if recsz <= 4 {
            let mut start = [0u8; 8];
            meta.read_meta(pos, &mut start)?;
            base = Some(u64::from_le_bytes(start));
            pos = pos.checked_add(8).ok_or(bad)?;
            lstart = 0;
        } else {
            lstart = la & !lsz.saturating_sub(1);
            pos = (lstart >> zi.z_lclusterbits.min(63))
                .checked_mul(recsz)
                .and_then(|o| pos.checked_add(o))
                .ok_or(bad)?;
        }
        // At most `la / lsz + 1` steps.
        while lstart <= la {
            let (plen, pstart_lo, ..) = read_ext(pos)?;
            plen_raw = plen;
            if let Some(b) = base {
                pa = b;
                // A wrap only hurts crafted images, whose result the sanity check rejects.
                base = Some(b.wrapping_add(u64::from(plen & z::Z_EROFS_EXTENT_PLEN_MASK)));
            } else {
                pa = u64::from(pstart_lo);
            }
            pos = pos.checked_add(recsz).ok_or(bad)?;
            lstart = lstart.checked_add(lsz).ok_or(bad)?;
        }
        last = lstart >= lend.checked_next_multiple_of(lsz).ok_or(bad)?;
        lend = lend.min(lstart);
        lstart = lstart.saturating_sub(lsz);
    } else {
        lstart = lend;
        let (mut l, mut r) = (0u64, zi.z_extents);
        while l < r {
            let mid = l.saturating_add(r.saturating_sub(l) / 2);
            let p = mid
                .checked_mul(recsz)
                .and_then(|o| pos.checked_add(o))
                .ok_or(bad)?;
            let (plen, pstart_lo, pstart_hi, lstart_lo, lstart_hi) = read_ext(p)?;
            let mut ela = u64::from(lstart_lo);
            let epa = u64::from(pstart_lo) | (u64::from(pstart_hi) << 32);
            if recsz > 16 {
                ela |= u64::from(lstart_hi) << 32;
            }
            if ela > la {
                r = mid;
                if ela > lend {
                    return Err(bad.into());
                }
                lend = ela;
            } else {
                l = mid.saturating_add(1);
                if la == ela {
                    // Look at one more record only: the one that ends this extent.
                    r = r.min(l.saturating_add(1));
                }
                lstart = ela;
                plen_raw = plen;
                pa = epa;
            }
        }
        last = l >= zi.z_extents;
    }

    let mut map = ZMap {
        la,
        llen: 0,
        pa: 0,
        plen: 0,
        flags: 0,
        algorithmformat: 0,
    };
    if lstart < lend {
        map.la = lstart;
        if last && zi.z_advise & z::Z_EROFS_ADVISE_FRAGMENT_PCLUSTER != 0 {
            // The tail fragment's offset is kept in `plen` (and `pstart_lo` as bits 32..64).
            map.flags = MAP_FRAGMENT;
            map.pa = u64::from(plen_raw);
            if recsz > 4 {
                map.pa |= pa << 32;
            }
        } else if plen_raw & z::Z_EROFS_EXTENT_PLEN_MASK != 0 {
            map.flags = MAP_MAPPED;
            if plen_raw & z::Z_EROFS_EXTENT_PLEN_PARTIAL != 0 {
                map.flags |= MAP_PARTIAL_REF;
            }
            map.pa = pa;
            map.plen = u64::from(plen_raw & z::Z_EROFS_EXTENT_PLEN_MASK);
            let fmt = plen_raw >> z::Z_EROFS_EXTENT_PLEN_FMT_BIT;
            map.algorithmformat = if fmt != 0 {
                let alg = u8::try_from(fmt.saturating_sub(1)).unwrap_or(u8::MAX);
                if alg >= ondisk::Z_EROFS_COMPRESSION_MAX {
                    return Err(Unsupported::Algorithm { nid, alg }.into());
                }
                alg
            } else if interlaced && (map.pa | map.plen) & bmask == 0 {
                ondisk::Z_EROFS_COMPRESSION_INTERLACED
            } else {
                ondisk::Z_EROFS_COMPRESSION_SHIFTED
            };
        }
    }
    map.llen = lend.checked_sub(map.la).ok_or(bad)?;
    Ok(map)
}

/// Checks a mapped extent against the superblock and the format's limits
/// (`z_erofs_map_sanity_check`).
fn map_sanity_check(sbi: &SbInfo, vi: &InodeInfo, map: &ZMap) -> Result<()> {
    let nid = vi.nid.0;
    if !map.is_mapped() {
        return Ok(());
    }
    if map.algorithmformat < ondisk::Z_EROFS_COMPRESSION_MAX {
        if sbi.available_compr_algs & (1 << map.algorithmformat) == 0 {
            return Err(Corruption::InconsistentAlgorithm(nid).into());
        }
        if map.full_mapped()
            && map.llen < map.plen
            && map.la.checked_add(map.llen).is_some_and(|e| e < vi.size)
        {
            return Err(Corruption::TooMuchCompressedData(nid).into());
        }
    } else if map.llen > map.plen {
        return Err(Corruption::NotEnoughPlainData(nid).into());
    }
    if map.plen > ondisk::Z_EROFS_PCLUSTER_MAX_SIZE || map.llen > ondisk::Z_EROFS_PCLUSTER_MAX_DSIZE
    {
        return Err(Unsupported::PclusterSize(nid).into());
    }
    // Filesystems beyond 48-bit block addresses are invalid. (Inline pclusters of inodes in
    // the metabox are offsets in its data.)
    let pa = if map.flags & MAP_META != 0 {
        map.pa & !METABOX_POS
    } else {
        map.pa
    };
    match pa.checked_add(map.plen) {
        Some(pend) if sbi.blknr(pend) < 1 << 48 => Ok(()),
        _ => Err(Corruption::PclusterAddress(nid).into()),
    }
}

/// Maps logical byte `la` of the compressed inode `vi` (`z_erofs_map_blocks_iter`), with
/// `flags` of [`GET_BLOCKS_FIEMAP`] and [`GET_BLOCKS_READMORE`].
///
/// Past EOF the result is unmapped: `la` is the size and `llen` reaches one past the position
/// asked for, as in the C driver. Otherwise the extent starts at or before `la`; its `llen`
/// may stop short of the extent's end (at the end of `la`'s lcluster) unless
/// [`MAP_PARTIAL_MAPPED`] is clear, which [`GET_BLOCKS_FIEMAP`] ensures.
///
/// # Errors
///
/// [`Error::Corrupted`] for inconsistent indexes or extents that fail the sanity checks,
/// [`Error::Unsupported`] for unknown algorithms and oversized pclusters, and the backend's
/// errors.
pub fn map_blocks_iter(
    sbi: &SbInfo,
    meta: &impl MetaRead,
    vi: &InodeInfo,
    zi: &ZInfo,
    la: u64,
    flags: u32,
) -> Result<ZMap> {
    map_blocks_cached(sbi, meta, vi, zi, la, flags, &mut IndexCache::default())
}

/// [`map_blocks_iter`], its index loads starting from `cache` and leaving theirs there.
fn map_blocks_cached(
    sbi: &SbInfo,
    meta: &impl MetaRead,
    vi: &InodeInfo,
    zi: &ZInfo,
    la: u64,
    flags: u32,
    cache: &mut IndexCache,
) -> Result<ZMap> {
    if la >= vi.size {
        return Ok(ZMap {
            la: vi.size,
            llen: la.saturating_sub(vi.size).saturating_add(1),
            pa: 0,
            plen: 0,
            flags: 0,
            algorithmformat: 0,
        });
    }
    let map = if vi.datalayout == DataLayout::CompressedFull
        && zi.z_advise & z::Z_EROFS_ADVISE_EXTENTS != 0
    {
        map_blocks_ext(sbi, meta, vi, zi, la)?
    } else if vi.is_compressed() {
        let mut zi = *zi;
        map_blocks_fo(
            sbi,
            meta,
            vi,
            &mut zi,
            la,
            flags & (GET_BLOCKS_FIEMAP | GET_BLOCKS_READMORE),
            cache,
        )?
    } else {
        let datalayout = match vi.datalayout {
            DataLayout::FlatPlain => ondisk::EROFS_INODE_FLAT_PLAIN,
            DataLayout::FlatInline => ondisk::EROFS_INODE_FLAT_INLINE,
            _ => ondisk::EROFS_INODE_CHUNK_BASED,
        };
        return Err(Error::Unsupported(Unsupported::DataLayout {
            nid: vi.nid.0,
            datalayout,
        }));
    };
    map_sanity_check(sbi, vi, &map)?;
    Ok(map)
}

/// Maps logical byte `la` as [`map_blocks_iter`] without flags, for a reader that goes on to
/// `until`: when the extent goes on past `la`'s lcluster, the lclusters of it that start
/// before `until` are taken in, so that one lookup and a forward scan of the indexes map what
/// the reader wants of the extent instead of one lookup (two or three index loads) per
/// lcluster. The result is the one the lookups of those lclusters
/// would have merged to: `llen` reaches the last of them (or the extent's end, with
/// [`MAP_PARTIAL_MAPPED`] clear when a lookup there would clear it), and `la`, `pa`, `plen`,
/// the algorithm and the other flags are the extent's.
///
/// # Errors
///
/// As [`map_blocks_iter`]; the lclusters after `la`'s are not checked beyond what taking them
/// in needs (one that does not load or does not lead back to the head ends the extent here,
/// and the lookup of it reports it).
pub fn map_blocks_until(
    sbi: &SbInfo,
    meta: &impl MetaRead,
    vi: &InodeInfo,
    zi: &ZInfo,
    la: u64,
    until: u64,
) -> Result<ZMap> {
    map_until(sbi, meta, vi, zi, la, until, true)
}

/// [`map_blocks_until`]; `scan` as [`Recorder::extend`]'s.
fn map_until(
    sbi: &SbInfo,
    meta: &impl MetaRead,
    vi: &InodeInfo,
    zi: &ZInfo,
    la: u64,
    until: u64,
    scan: bool,
) -> Result<ZMap> {
    let mut cache = IndexCache::default();
    let first = map_blocks_cached(sbi, meta, vi, zi, la, 0, &mut cache)?;
    let goes_on = |m: &ZMap| {
        let end = m.la.saturating_add(m.llen);
        end < until
            && end < vi.size
            && m.flags & (MAP_PARTIAL_MAPPED | MAP_FRAGMENT) == MAP_PARTIAL_MAPPED
    };
    let extents =
        vi.datalayout == DataLayout::CompressedFull && zi.z_advise & z::Z_EROFS_ADVISE_EXTENTS != 0;
    if extents || !goes_on(&first) {
        return Ok(first);
    }
    let map = first;
    let end = map.la.saturating_add(map.llen);
    let mut m = Recorder::new(sbi, meta, vi, zi);
    m.cache = cache;
    let bits = zi.z_lclusterbits.min(63);
    let headlcn = map.la >> bits;
    // The lookup of `la` took its pcluster size from the head's (the lcluster after it), as
    // the later lclusters' lookups do, unless `la`'s lcluster leads back through another one or
    // carries a block count of its own (a bad image's): then it alone is mapped.
    let lalcn = la >> bits;
    if lalcn != headlcn && !matches!(m.step(headlcn, lalcn), Step::Continues) {
        return Ok(map);
    }
    let (e, exact) = m.extend(headlcn, map.la, end, until, scan);
    let mut ext = map;
    // `extend` returns `end` or a later end, and `end > map.la`.
    ext.llen = e.saturating_sub(map.la);
    if exact {
        ext.flags &= !MAP_PARTIAL_MAPPED;
    }
    // The longer extent passes the checks the lookups of its parts pass, except where a lookup
    // of its last bytes would fail them: then those bytes are left to that lookup.
    Ok(if map_sanity_check(sbi, vi, &ext).is_ok() {
        ext
    } else {
        map
    })
}

/// Maps logical byte `la` of the compressed inode `vi` (`z_erofs_map_blocks_iter`);
/// `fiemap` asks for the exact decoded length (`EROFS_GET_BLOCKS_FIEMAP`).
///
/// For [`MAP_FRAGMENT`] extents, in both the index and the extent formats, `pa` is the byte
/// offset of the extent's data (from `la` on) in the packed inode: the C driver keeps it in
/// `vi->z_fragmentoff`, which the extent format updates while mapping.
///
/// # Errors
///
/// As [`map_blocks_iter`].
pub fn map_blocks(
    sbi: &SbInfo,
    meta: &impl MetaRead,
    vi: &InodeInfo,
    zi: &ZInfo,
    la: u64,
    fiemap: bool,
) -> Result<ZMap> {
    map_blocks_iter(
        sbi,
        meta,
        vi,
        zi,
        la,
        if fiemap { GET_BLOCKS_FIEMAP } else { 0 },
    )
}

#[cfg(test)]
mod tests {
    #![allow(
        clippy::indexing_slicing,
        clippy::unwrap_used,
        clippy::arithmetic_side_effects,
        clippy::as_conversions,
        clippy::panic,
        clippy::needless_range_loop
    )]

    /// What the test backends fail with: a backend's errno (EIO), opaque to the core.
    const BACKEND_EIO: i32 = 5;
    use super::*;
    use crate::erofs_core::Nid;
    use std::{vec, vec::Vec};

    struct Mem(Vec<u8>);
    impl MetaRead for Mem {
        fn read_meta(&self, pos: u64, buf: &mut [u8]) -> Result<()> {
            let p = usize::try_from(pos).map_err(|_| Error::Io(BACKEND_EIO))?;
            let end = p.checked_add(buf.len()).ok_or(Error::Io(BACKEND_EIO))?;
            buf.copy_from_slice(self.0.get(p..end).ok_or(Error::Io(BACKEND_EIO))?);
            Ok(())
        }
    }

    /// A 4 KiB-block superblock with LZ4 and big pclusters.
    fn sbi() -> SbInfo {
        let mut b = [0u8; 3072];
        b[0..4].copy_from_slice(&ondisk::EROFS_SUPER_MAGIC_V1.to_le_bytes());
        b[12] = 12;
        b[36..40].copy_from_slice(&100_000u32.to_le_bytes());
        let incompat =
            ondisk::EROFS_FEATURE_INCOMPAT_COMPR_CFGS | ondisk::EROFS_FEATURE_INCOMPAT_LZ4_0PADDING;
        b[80..84].copy_from_slice(&incompat.to_le_bytes());
        b[84..86].copy_from_slice(&1u16.to_le_bytes());
        SbInfo::parse(&b, 12, |_, _| 0).unwrap()
    }

    /// A compressed inode at nid 1 (byte 32, so its map header is at 64).
    fn inode(datalayout: DataLayout, size: u64) -> InodeInfo {
        InodeInfo {
            nid: Nid(1),
            datalayout,
            inode_isize: 32,
            xattr_isize: 0,
            mode: 0o100644,
            uid: 0,
            gid: 0,
            nlink: 1,
            size,
            mtime: 0,
            mtime_nsec: 0,
            startblk: 0,
            rdev: 0,
            chunkformat: 0,
            chunkbits: 0,
            dot_omitted: false,
            blocks_512: 0,
        }
    }

    const HEADER: usize = 64;
    const LSZ: u64 = 4096;

    /// One lcluster of a hand-made file.
    #[derive(Clone, Copy, Debug)]
    enum Lc {
        /// A head of this type, at this offset, with a pcluster of this many blocks.
        Head(u8, u16, u32),
        /// Continues the head this many lclusters back.
        NonHead(u64),
    }

    /// The head lcluster, start block and next head of every lcluster.
    fn layout(lcs: &[Lc], startblk: u32) -> (Vec<u32>, Vec<u64>) {
        let mut blk = Vec::new();
        let mut next = startblk;
        for lc in lcs {
            blk.push(next);
            if let Lc::Head(_, _, n) = lc {
                next += n;
            }
        }
        let mut next_head = vec![lcs.len() as u64; lcs.len()];
        let mut nh = lcs.len() as u64;
        for i in (0..lcs.len()).rev() {
            next_head[i] = nh;
            if matches!(lcs[i], Lc::Head(..)) {
                nh = i as u64;
            }
        }
        (blk, next_head)
    }

    /// `delta[0]`, with the block count on the first NONHEAD of a big pcluster.
    fn d0(lcs: &[Lc], i: usize, big: bool) -> u16 {
        let Lc::NonHead(d) = lcs[i] else {
            unreachable!()
        };
        match i.checked_sub(d as usize).map(|h| lcs[h]) {
            Some(Lc::Head(_, _, n)) if big && d == 1 => z::Z_EROFS_LI_D0_CBLKCNT | n as u16,
            _ => d as u16,
        }
    }

    fn header(advise: u16) -> [u8; 8] {
        let mut h = [0u8; 8];
        h[4..6].copy_from_slice(&advise.to_le_bytes());
        h
    }

    fn full_image(lcs: &[Lc], advise: u16, startblk: u32) -> Mem {
        let big = advise & z::Z_EROFS_ADVISE_BIG_PCLUSTER_1 != 0;
        let (blk, next_head) = layout(lcs, startblk);
        let mut m = vec![0u8; 16384];
        m[HEADER..HEADER + 8].copy_from_slice(&header(advise));
        for (i, lc) in lcs.iter().enumerate() {
            let o = HEADER + 16 + 8 * i;
            match *lc {
                Lc::Head(ty, co, _) => {
                    m[o..o + 2].copy_from_slice(&u16::from(ty).to_le_bytes());
                    m[o + 2..o + 4].copy_from_slice(&co.to_le_bytes());
                    m[o + 4..o + 8].copy_from_slice(&blk[i].to_le_bytes());
                }
                Lc::NonHead(_) => {
                    m[o..o + 2].copy_from_slice(&2u16.to_le_bytes());
                    m[o + 4..o + 6].copy_from_slice(&d0(lcs, i, big).to_le_bytes());
                    m[o + 6..o + 8]
                        .copy_from_slice(&((next_head[i] - i as u64) as u16).to_le_bytes());
                }
            }
        }
        Mem(m)
    }

    /// Packs `(lo, type)` entries as compact indexes do: `encodebits` each, then the base.
    fn pack(entries: &[(u16, u8)], lobits: u32, encodebits: usize, base: u32, out: &mut [u8]) {
        for (i, &(lo, ty)) in entries.iter().enumerate() {
            let v = u32::from(lo) | u32::from(ty) << lobits;
            let pos = i * encodebits;
            for bit in 0..lobits as usize + 2 {
                if v >> bit & 1 != 0 {
                    out[(pos + bit) / 8] |= 1 << ((pos + bit) % 8);
                }
            }
        }
        let n = out.len();
        out[n - 4..].copy_from_slice(&base.to_le_bytes());
    }

    fn compact_image(lcs: &[Lc], advise: u16, startblk: u32) -> Mem {
        let big = advise & z::Z_EROFS_ADVISE_BIG_PCLUSTER_1 != 0;
        let (blk, next_head) = layout(lcs, startblk);
        let mut m = vec![0u8; 16384];
        m[HEADER..HEADER + 8].copy_from_slice(&header(advise));
        let ebase = HEADER + 8;
        let total = lcs.len();
        let initial = ((32 - ebase % 32) / 4) & 7;
        let c2b = if advise & z::Z_EROFS_ADVISE_COMPACTED_2B != 0 && initial < total {
            (total - initial) & !15
        } else {
            0
        };
        // (first lcn, entries, packsize) of every pack.
        let mut packs = Vec::new();
        let mut lcn = 0;
        while lcn < total {
            let vcnt = if lcn >= initial && lcn < initial + c2b {
                16
            } else {
                2
            };
            packs.push((lcn, vcnt));
            lcn += vcnt;
        }
        let mut pos = ebase;
        for (first, vcnt) in packs {
            let size = if vcnt == 16 { 32 } else { 8 };
            let mut entries = Vec::new();
            for i in first..first + vcnt {
                entries.push(match lcs.get(i) {
                    Some(Lc::Head(ty, co, _)) => (*co, *ty),
                    Some(Lc::NonHead(_))
                        if i + 1 == first + vcnt
                            && d0(lcs, i, big) & z::Z_EROFS_LI_D0_CBLKCNT == 0 =>
                    {
                        ((next_head[i] - i as u64) as u16, 2)
                    }
                    Some(Lc::NonHead(_)) => (d0(lcs, i, big), 2),
                    None => (0, 0),
                });
            }
            // The base: the first head's block less what the decoder adds for it.
            let h0 = (first..first + vcnt).find(|&i| matches!(lcs.get(i), Some(Lc::Head(..))));
            let base = match h0 {
                None => 0,
                Some(h0) if !big => blk[h0] - 1,
                Some(h0) => match entries[0] {
                    (lo, 2) if lo & z::Z_EROFS_LI_D0_CBLKCNT != 0 && h0 > first => {
                        blk[h0] - u32::from(lo & !z::Z_EROFS_LI_D0_CBLKCNT)
                    }
                    _ => blk[h0],
                },
            };
            let encodebits = (size - 4) * 8 / vcnt;
            pack(&entries, 12, encodebits, base, &mut m[pos..pos + size]);
            pos += size;
        }
        Mem(m)
    }

    /// What `map_blocks` must return for `la`: (la, fiemap llen, pa, plen, algorithmformat).
    fn model(lcs: &[Lc], startblk: u32, size: u64, la: u64) -> (u64, u64, u64, u64, u8) {
        let (blk, _) = layout(lcs, startblk);
        let starts: Vec<(usize, u64)> = lcs
            .iter()
            .enumerate()
            .filter_map(|(i, lc)| match lc {
                Lc::Head(_, co, _) => Some((i, i as u64 * LSZ + u64::from(*co))),
                _ => None,
            })
            .collect();
        let k = starts.iter().rposition(|&(_, s)| s <= la).unwrap();
        let (h, s) = starts[k];
        let end = starts.get(k + 1).map_or(size, |x| x.1);
        let Lc::Head(ty, _, n) = lcs[h] else {
            unreachable!()
        };
        let fmt = if ty == 0 {
            ondisk::Z_EROFS_COMPRESSION_SHIFTED
        } else {
            0
        };
        (s, end - s, u64::from(blk[h]) * LSZ, u64::from(n) * LSZ, fmt)
    }

    /// A file of `n` lclusters with heads of both kinds, clusterofs, long and short extents.
    fn sample(n: usize, big: bool, seed: &mut u64) -> Vec<Lc> {
        let mut lcs = Vec::new();
        let mut rnd = |m: u64| {
            *seed = seed
                .wrapping_mul(6364136223846793005)
                .wrapping_add(1442695040888963407);
            (*seed >> 33) % m
        };
        while lcs.len() < n {
            let head = lcs.len();
            let co = if head == 0 { 0 } else { rnd(4) as u16 * 1000 };
            let long = rnd(4) == 0;
            let span = (1 + rnd(if long { 40 } else { 4 }) as usize).min(n - head);
            // The next head's clusterofs is not known yet: take extents of at least `span - 1`
            // lclusters, so one block per spanned lcluster less one always fits.
            let plain = rnd(3) == 0 && (big || span == 1);
            let blocks = if !big || span == 1 {
                1
            } else {
                1 + rnd(span as u64 - 1) as u32
            };
            lcs.push(Lc::Head(if plain { 0 } else { 1 }, co, blocks));
            for d in 1..span {
                lcs.push(Lc::NonHead(d as u64));
            }
        }
        lcs
    }

    /// Fixes up extents the sanity check would refuse: plain pclusters must cover their
    /// extent and compressed ones must not be longer than theirs.
    fn fixup(lcs: &mut [Lc], size: u64) {
        let heads: Vec<usize> = (0..lcs.len())
            .filter(|&i| matches!(lcs[i], Lc::Head(..)))
            .collect();
        for (k, &h) in heads.iter().enumerate() {
            let Lc::Head(ty, co, n) = lcs[h] else {
                unreachable!()
            };
            let s = h as u64 * LSZ + u64::from(co);
            let end = heads.get(k + 1).map_or(size, |&j| {
                let Lc::Head(_, c, _) = lcs[j] else {
                    unreachable!()
                };
                j as u64 * LSZ + u64::from(c)
            });
            let llen = end - s;
            let spanned = heads.get(k + 1).map_or(lcs.len(), |&j| j) - h;
            if ty == 0 && (llen > u64::from(n) * LSZ) {
                // Uncompressed: exactly enough blocks, if the extent can carry a count.
                let need = llen.div_ceil(LSZ) as u32;
                lcs[h] = if spanned > 1 {
                    Lc::Head(0, co, need)
                } else {
                    Lc::Head(1, co, 1)
                };
            }
            if let Lc::Head(1, _, n) = lcs[h] {
                if llen < u64::from(n) * LSZ && end < size {
                    // Less than a block decoded: store it uncompressed.
                    lcs[h] = if llen < LSZ {
                        Lc::Head(0, co, 1)
                    } else {
                        Lc::Head(1, co, (llen / LSZ) as u32)
                    };
                }
            }
        }
    }

    fn check_against_model(img: &Mem, vi: &InodeInfo, lcs: &[Lc], startblk: u32) {
        let sbi = sbi();
        let zi = fill_inode(&sbi, img, vi).unwrap();
        let mut la = 0;
        while la < vi.size {
            let (mla, mllen, pa, plen, fmt) = model(lcs, startblk, vi.size, la);
            let f = map_blocks(&sbi, img, vi, &zi, la, true)
                .unwrap_or_else(|e| panic!("la {la}: {e:?} {:?}", lcs));
            assert_eq!(
                (f.la, f.llen, f.pa, f.plen, f.algorithmformat),
                (mla, mllen, pa, plen, fmt),
                "la {la}"
            );
            assert_eq!(f.flags, MAP_MAPPED);
            let p = map_blocks(&sbi, img, vi, &zi, la, false).unwrap();
            assert_eq!((p.la, p.pa, p.plen), (mla, pa, plen), "la {la}");
            // Without FIEMAP: up to the end of `la`'s lcluster, or exactly to the next head
            // when `la` is before the head of its lcluster.
            let lcn = la / LSZ;
            let next = match lcs[lcn as usize] {
                Lc::Head(_, co, _) if la < lcn * LSZ + u64::from(co) => {
                    Some(lcn * LSZ + u64::from(co))
                }
                _ => None,
            };
            match next {
                Some(end) => assert_eq!((p.la + p.llen, p.flags), (end, MAP_MAPPED), "la {la}"),
                None => assert_eq!(
                    (p.la + p.llen, p.flags),
                    ((lcn + 1) * LSZ, MAP_MAPPED | MAP_PARTIAL_MAPPED),
                    "la {la}"
                ),
            }
            la += 1000;
        }
    }

    #[test]
    fn full_and_compact_indexes_decode_as_the_model() {
        let mut seed = 1;
        for round in 0..24 {
            let big = round % 2 == 1;
            let n = [3, 7, 30, 100, 130][round % 5];
            let mut lcs = sample(n, big, &mut seed);
            let size = n as u64 * LSZ - [0, 1, 2000][round % 3];
            fixup(&mut lcs, size);
            let bigbits = if big {
                z::Z_EROFS_ADVISE_BIG_PCLUSTER_1 | z::Z_EROFS_ADVISE_BIG_PCLUSTER_2
            } else {
                0
            };
            let full = full_image(&lcs, bigbits, 100);
            check_against_model(&full, &inode(DataLayout::CompressedFull, size), &lcs, 100);
            for c2b in [0, z::Z_EROFS_ADVISE_COMPACTED_2B] {
                let compact = compact_image(&lcs, bigbits | c2b, 100);
                check_against_model(
                    &compact,
                    &inode(DataLayout::CompressedCompact, size),
                    &lcs,
                    100,
                );
            }
        }
    }

    /// Reading runs of lclusters off their packs maps what loading each does, on sampled
    /// compact indexes and on the same indexes with bytes overwritten at random.
    #[test]
    fn pack_scans_map_as_loads() {
        let mut seed: u64 = 7;
        let mut rnd = |m: u64| {
            seed = seed
                .wrapping_mul(6364136223846793005)
                .wrapping_add(1442695040888963407);
            (seed >> 33) % m
        };
        let sbi = sbi();
        let mut compared = 0;
        for round in 0..400 {
            let big = round % 2 == 1;
            let n = [30, 100, 130][round % 3];
            let mut s = rnd(u64::MAX);
            let mut lcs = sample(n, big, &mut s);
            // EOF past the last lcluster's head, if it has one.
            let tail = match lcs.last() {
                Some(Lc::Head(_, co, _)) => LSZ - 1 - u64::from(*co),
                _ => LSZ - 1,
            };
            let size = n as u64 * LSZ - rnd(tail + 1);
            fixup(&mut lcs, size);
            let bigbits = if big {
                z::Z_EROFS_ADVISE_BIG_PCLUSTER_1 | z::Z_EROFS_ADVISE_BIG_PCLUSTER_2
            } else {
                0
            };
            let advise = bigbits | [0, z::Z_EROFS_ADVISE_COMPACTED_2B][round / 2 % 2];
            let mut img = compact_image(&lcs, advise, 100);
            // Past the map header; a quarter of the rounds keep the indexes as written.
            let ibase = HEADER + 8;
            for _ in 0..[0, 1, 4, 16][round / 4 % 4] {
                let at = ibase + rnd(n as u64 * 4 + 8) as usize;
                img.0[at] = rnd(256) as u8;
            }
            let vi = inode(DataLayout::CompressedCompact, size);
            let Ok(zi) = fill_inode(&sbi, &img, &vi) else {
                continue;
            };
            for q in 0..2 * n as u64 {
                let la = ((q / 2) * LSZ + rnd(LSZ)).min(size - 1);
                let until = if q % 2 == 0 {
                    size + 1
                } else {
                    la + 1 + rnd(size + LSZ)
                };
                let scanned = map_until(&sbi, &img, &vi, &zi, la, until, true);
                let loaded = map_until(&sbi, &img, &vi, &zi, la, until, false);
                assert_eq!(scanned, loaded, "round {round} la {la} until {until}");
                compared += usize::from(loaded.is_ok());
            }
        }
        assert!(compared > 20000, "{compared}");
    }

    /// A [`MetaRead`] that counts the reads it passes on.
    struct Counted<'a>(&'a Mem, core::cell::Cell<usize>);
    impl MetaRead for Counted<'_> {
        fn read_meta(&self, pos: u64, buf: &mut [u8]) -> Result<()> {
            self.1.set(self.1.get() + 1);
            self.0.read_meta(pos, buf)
        }
    }

    #[test]
    fn a_lookup_reads_each_compact_pack_once() {
        // The index area starts at byte 72: 6 entries of 4 bytes (lclusters 0-5, three
        // packs), 32 of 2 bytes (6-21 and 22-37, two packs), 4-byte entries for the rest.
        // The extent under test: a head at lcluster 6 and 31 lclusters after it.
        let mut lcs = vec![Lc::Head(1, 0, 1)];
        lcs.extend((1..6).map(Lc::NonHead));
        lcs.push(Lc::Head(1, 0, 1));
        lcs.extend((1..32).map(Lc::NonHead));
        lcs.push(Lc::Head(1, 100, 1));
        lcs.push(Lc::NonHead(1));
        let size = lcs.len() as u64 * LSZ;
        let img = compact_image(&lcs, z::Z_EROFS_ADVISE_COMPACTED_2B, 100);
        let vi = inode(DataLayout::CompressedCompact, size);
        let sbi = sbi();
        let zi = fill_inode(&sbi, &img, &vi).unwrap();
        let counted = Counted(&img, core::cell::Cell::new(0));
        let m = map_blocks_until(&sbi, &counted, &vi, &zi, 9 * LSZ + 5, size).unwrap();
        assert_eq!((m.la, m.la + m.llen), (6 * LSZ, 38 * LSZ + 100));
        assert_eq!(m.flags & MAP_PARTIAL_MAPPED, 0);
        // The lookup of lcluster 9 loads 9, 6 and 7 (one pack); the walk loads 9 to 37 (the
        // same pack, then the next) and the head at 38 (a 4-byte pack): 3 reads, where one
        // read per entry loaded made 33.
        assert_eq!(counted.1.get(), 3);
    }

    #[test]
    fn post_eof_maps_are_unmapped() {
        let sbi = sbi();
        let vi = inode(DataLayout::CompressedCompact, 5000);
        let m = map_blocks(&sbi, &Mem(vec![]), &vi, &ZInfo::default(), 7000, false).unwrap();
        assert_eq!(
            m,
            ZMap {
                la: 5000,
                llen: 2001,
                pa: 0,
                plen: 0,
                flags: 0,
                algorithmformat: 0
            }
        );
        let m = map_blocks(&sbi, &Mem(vec![]), &vi, &ZInfo::default(), u64::MAX, true).unwrap();
        assert_eq!((m.la, m.llen), (5000, u64::MAX - 4999));
    }

    #[test]
    fn whole_file_fragment_header() {
        let sbi = sbi();
        let vi = inode(DataLayout::CompressedFull, 5000);
        let mut m = vec![0u8; 4096];
        m[HEADER..HEADER + 8].copy_from_slice(&((1u64 << 63) | 123_456).to_le_bytes());
        let zi = fill_inode(&sbi, &Mem(m.clone()), &vi).unwrap();
        assert_eq!(
            (zi.z_advise, zi.z_fragmentoff),
            (z::Z_EROFS_ADVISE_FRAGMENT_PCLUSTER, 123_456)
        );
        let map = map_blocks(&sbi, &Mem(m), &vi, &zi, 4000, false).unwrap();
        assert_eq!(
            map,
            ZMap {
                la: 0,
                llen: 5000,
                pa: 123_456,
                plen: 0,
                flags: MAP_FRAGMENT,
                algorithmformat: 0
            }
        );
    }

    #[test]
    fn ztailpacking_finds_the_inline_tail() {
        // Two lclusters: a compressed head, then an inline tail starting at 4096 + 300.
        let lcs = [Lc::Head(1, 0, 1), Lc::Head(1, 300, 1)];
        let mut img = full_image(&lcs, z::Z_EROFS_ADVISE_INLINE_PCLUSTER, 50);
        img.0[HEADER + 2..HEADER + 4].copy_from_slice(&200u16.to_le_bytes());
        img.0[HEADER + 6] = 0x00;
        let sbi = sbi();
        let vi = inode(DataLayout::CompressedFull, 4096 + 1000);
        let zi = fill_inode(&sbi, &img, &vi).unwrap();
        // The inline pcluster follows the last index read.
        assert_eq!(
            (zi.z_idata_size, zi.z_tailextent_headlcn, zi.z_fragmentoff),
            (200, 1, (HEADER + 16 + 16) as u64)
        );
        let m = map_blocks(&sbi, &img, &vi, &zi, 4096 + 500, false).unwrap();
        assert_eq!(
            (m.la, m.llen, m.pa, m.plen),
            (4096 + 300, 700, zi.z_fragmentoff, 200)
        );
        assert_eq!(m.flags, MAP_MAPPED | MAP_META | MAP_PARTIAL_MAPPED);
        let m = map_blocks(&sbi, &img, &vi, &zi, 10, true).unwrap();
        assert_eq!(
            (m.la, m.llen, m.pa, m.flags),
            (0, 4096 + 300, 50 * 4096, MAP_MAPPED)
        );
        // An inline pcluster that would cross its block.
        img.0[HEADER + 2..HEADER + 4].copy_from_slice(&4001u16.to_le_bytes());
        assert_eq!(
            fill_inode(&sbi, &img, &vi),
            Err(Corruption::InlinePclusterAcrossBlocks(1).into())
        );
    }

    #[test]
    fn rejects_inconsistent_headers() {
        let vi = inode(DataLayout::CompressedCompact, 10_000);
        let mut m = vec![0u8; 4096];
        m[HEADER + 6] = 0x50;
        assert_eq!(
            fill_inode(&sbi(), &Mem(m.clone()), &vi),
            Err(Unsupported::Algorithm { nid: 1, alg: 5 }.into())
        );
        m[HEADER + 6] = 0;
        m[HEADER + 4] = z::Z_EROFS_ADVISE_BIG_PCLUSTER_1 as u8;
        let mut nobig = sbi();
        nobig.feature_incompat &= !ondisk::EROFS_FEATURE_INCOMPAT_BIG_PCLUSTER;
        assert_eq!(
            fill_inode(&nobig, &Mem(m.clone()), &vi),
            Err(Corruption::BigPclusterWithoutFeature(1).into())
        );
        assert_eq!(
            fill_inode(&sbi(), &Mem(m.clone()), &vi),
            Err(Corruption::InconsistentBigPcluster(1).into())
        );
        // Compact indexes cannot express lclusters beyond 16 KiB.
        m[HEADER + 4] = 0;
        m[HEADER + 7] = 3;
        let zi = fill_inode(&sbi(), &Mem(m.clone()), &vi).unwrap();
        assert_eq!(
            map_blocks(&sbi(), &Mem(m), &vi, &zi, 0, false),
            Err(Unsupported::LclusterBits { nid: 1, bits: 15 }.into())
        );
    }

    #[test]
    fn rejects_bogus_indexes() {
        let sbi = sbi();
        let vi = inode(DataLayout::CompressedFull, 3 * LSZ);
        let run = |lcs: &[Lc], advise: u16, la: u64| {
            let img = full_image(lcs, advise, 10);
            let zi = fill_inode(&sbi, &img, &vi).unwrap();
            map_blocks(&sbi, &img, &vi, &zi, la, true)
        };
        // A NONHEAD that points before the file.
        let bad = [Lc::NonHead(1), Lc::NonHead(1), Lc::Head(1, 0, 1)];
        assert_eq!(run(&bad, 0, 100), Err(Corruption::BogusLookback(1).into()));
        // A block count without big pclusters.
        let img = full_image(
            &[Lc::Head(1, 0, 2), Lc::NonHead(1), Lc::NonHead(2)],
            z::Z_EROFS_ADVISE_BIG_PCLUSTER_1,
            10,
        );
        let zi = ZInfo {
            z_lclusterbits: 12,
            ..ZInfo::default()
        };
        assert_eq!(
            map_blocks(&sbi, &img, &vi, &zi, 5000, false),
            Err(Corruption::BogusCblkcnt(1).into())
        );
        // A head whose clusterofs is past its lcluster.
        assert_eq!(
            run(
                &[Lc::Head(1, 0, 1), Lc::Head(1, 5000, 1), Lc::NonHead(1)],
                0,
                5000
            ),
            Err(Corruption::BogusClusterofs(1).into())
        );
        // More encoded than decoded data before EOF.
        let img = full_image(
            &[Lc::Head(1, 0, 3), Lc::NonHead(1), Lc::Head(1, 0, 1)],
            z::Z_EROFS_ADVISE_BIG_PCLUSTER_1 | z::Z_EROFS_ADVISE_BIG_PCLUSTER_2,
            10,
        );
        let zi = fill_inode(&sbi, &img, &vi).unwrap();
        assert_eq!(
            map_blocks(&sbi, &img, &vi, &zi, 0, true),
            Err(Corruption::TooMuchCompressedData(1).into())
        );
        // Compact indexes past the file's lclusters.
        let vi = inode(DataLayout::CompressedCompact, 3 * LSZ);
        let img = compact_image(&[Lc::Head(1, 0, 1), Lc::NonHead(1), Lc::NonHead(9)], 0, 10);
        let zi = fill_inode(&sbi, &img, &vi).unwrap();
        assert!(map_blocks(&sbi, &img, &vi, &zi, 2 * LSZ, true).is_err());
    }

    /// Maps every position of an inode whose index area is random bytes: errors are fine.
    #[test]
    fn random_indexes_never_panic() {
        let mut sbi = sbi();
        sbi.available_compr_algs = 0xf;
        let mut seed = 5u64;
        let mut rnd = || {
            seed = seed
                .wrapping_mul(6364136223846793005)
                .wrapping_add(1442695040888963407);
            (seed >> 33) as u8
        };
        for round in 0..400 {
            let mut m = vec![0u8; 2048];
            for b in m[HEADER..].iter_mut() {
                *b = rnd();
            }
            // Keep the header sane half of the time, so the indexes get exercised.
            if round % 2 == 0 {
                m[HEADER + 7] &= 0x03;
                m[HEADER + 6] &= 0x33;
            }
            let layout = if round % 3 == 0 {
                DataLayout::CompressedFull
            } else {
                DataLayout::CompressedCompact
            };
            let size = u64::from(rnd()) * 997 + u64::from(rnd());
            let vi = inode(layout, size);
            let img = Mem(m);
            let Ok(zi) = fill_inode(&sbi, &img, &vi) else {
                continue;
            };
            let mut la = 0;
            while la < size {
                for fiemap in [false, true] {
                    let _ = map_blocks(&sbi, &img, &vi, &zi, la, fiemap);
                }
                la += 777;
            }
        }
    }

    #[test]
    fn encoded_extents() {
        let sbi = sbi();
        let vi = inode(DataLayout::CompressedFull, 100_000);
        // 16-byte records: (plen with format, pstart, lstart).
        let recs: [(u32, u64, u32); 3] = [
            ((1 << 28) | 5000, 8192, 0),
            (20_480 | z::Z_EROFS_EXTENT_PLEN_PARTIAL, 3 * 4096, 30_000),
            (0, 0, 50_000),
        ];
        let mut m = vec![0u8; 4096];
        let advise = z::Z_EROFS_ADVISE_EXTENTS | (2 << z::Z_EROFS_ADVISE_EXTRECSZ_BIT);
        m[HEADER..HEADER + 4].copy_from_slice(&3u32.to_le_bytes());
        m[HEADER + 4..HEADER + 6].copy_from_slice(&advise.to_le_bytes());
        for (i, (plen, pa, la)) in recs.iter().enumerate() {
            let o = HEADER + 16 + 16 * i;
            m[o..o + 4].copy_from_slice(&plen.to_le_bytes());
            m[o + 4..o + 8].copy_from_slice(&(*pa as u32).to_le_bytes());
            m[o + 12..o + 16].copy_from_slice(&la.to_le_bytes());
        }
        let img = Mem(m);
        let zi = fill_inode(&sbi, &img, &vi).unwrap();
        assert_eq!(zi.z_extents, 3);
        let a = map_blocks(&sbi, &img, &vi, &zi, 100, false).unwrap();
        assert_eq!(
            a,
            ZMap {
                la: 0,
                llen: 30_000,
                pa: 8192,
                plen: 5000,
                flags: MAP_MAPPED,
                algorithmformat: 0
            }
        );
        let b = map_blocks(&sbi, &img, &vi, &zi, 30_000, false).unwrap();
        assert_eq!(
            (b.la, b.llen, b.flags, b.algorithmformat),
            (
                30_000,
                20_000,
                MAP_MAPPED | MAP_PARTIAL_REF,
                ondisk::Z_EROFS_COMPRESSION_SHIFTED
            )
        );
        let c = map_blocks(&sbi, &img, &vi, &zi, 99_999, false).unwrap();
        assert_eq!((c.la, c.llen, c.flags), (50_000, 50_000, 0));
    }
}
