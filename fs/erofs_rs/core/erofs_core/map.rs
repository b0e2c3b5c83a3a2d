// SPDX-License-Identifier: MIT OR GPL-2.0-only
//! Logical-to-physical mapping of uncompressed files. C counterpart: fs/erofs/data.c
//! (`erofs_map_blocks`, `erofs_map_chunks`).

use crate::erofs_core::{
    inode::{
        DataLayout,
        InodeInfo, //
    },
    ondisk::{
        self,
        ChunkIndex, //
    },
    sb::SbInfo,
    Corruption,
    MetaRead,
    Result,
    Unsupported, //
};
use zerocopy::FromBytes;

/// What a logical range maps to.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum MapKind {
    /// No data: reads as zeroes (sparse chunks, `startblk` of `EROFS_NULL_ADDR`, or past EOF).
    Hole,
    /// Data at `pa` on device `device_id` (0 is the primary device).
    Mapped,
    /// Inline data in the metadata, at byte `pa` of the primary device (`EROFS_MAP_META`).
    Meta,
}

/// One extent (`struct erofs_map_blocks`).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Map {
    /// Logical start, at or before the position asked for.
    pub la: u64,
    /// Logical length; 0 past EOF.
    pub llen: u64,
    /// Physical byte position (meaningful unless `kind` is `Hole`).
    pub pa: u64,
    /// The device of `pa`.
    pub device_id: u16,
    /// What the extent is.
    pub kind: MapKind,
}

/// Maps logical byte `la` of `vi` (`erofs_map_blocks`).
///
/// The result starts at or before `la` and covers it unless `la >= size`, in which case it is a
/// hole of length 0. Physical ranges are checked to lie on a device of `sbi.blocks` blocks when
/// on the primary device.
///
/// # Errors
///
/// [`Error::Corrupted`](crate::erofs_core::Error::Corrupted) for inline tails crossing their
/// block and addresses that overflow; the backend's errors for chunk index reads.
pub fn map_blocks(sbi: &SbInfo, meta: &impl MetaRead, vi: &InodeInfo, la: u64) -> Result<Map> {
    let mut map = Map {
        la,
        llen: 0,
        pa: 0,
        device_id: 0,
        kind: MapKind::Hole,
    };
    if la >= vi.size {
        return Ok(map);
    }
    let nid = vi.nid.0;
    match vi.datalayout {
        DataLayout::ChunkBased => return map_chunks(sbi, meta, vi, la),
        // Compressed inodes are mapped by `zmap::map_blocks`.
        DataLayout::CompressedFull | DataLayout::CompressedCompact => {
            let datalayout = if vi.datalayout == DataLayout::CompressedFull {
                ondisk::EROFS_INODE_COMPRESSED_FULL
            } else {
                ondisk::EROFS_INODE_COMPRESSED_COMPACT
            };
            return Err(Unsupported::DataLayout { nid, datalayout }.into());
        }
        DataLayout::FlatPlain if vi.startblk == ondisk::EROFS_NULL_ADDR => {
            map.la = 0;
            map.llen = vi.size;
        }
        DataLayout::FlatPlain | DataLayout::FlatInline => {
            let tailinline = u64::from(vi.datalayout == DataLayout::FlatInline);
            let iblks = vi.iblks(sbi);
            // `iblks >= 1` here since `la < size`.
            let tailpos = sbi
                .pos(iblks.saturating_sub(tailinline))
                .ok_or(Corruption::ExtentOutOfRange(nid))?;
            if la < tailpos {
                let start = sbi
                    .pos(vi.startblk)
                    .ok_or(Corruption::ExtentOutOfRange(nid))?;
                map.pa = start
                    .checked_add(la)
                    .ok_or(Corruption::ExtentOutOfRange(nid))?;
                map.llen = tailpos.saturating_sub(la);
                map.kind = MapKind::Mapped;
                check_on_device(sbi, &mut map, la, nid)?;
            } else {
                let payload = vi.payload_pos(sbi).ok_or(Corruption::InodeLocation(nid))?;
                map.pa = payload
                    .checked_add(sbi.blkoff(la))
                    .ok_or(Corruption::InodeLocation(nid))?;
                map.llen = vi.size.saturating_sub(la);
                map.kind = MapKind::Meta;
                let end = sbi.blkoff(map.pa).checked_add(map.llen);
                if end.is_none_or(|end| end > sbi.blksz()) {
                    return Err(Corruption::InlineDataAcrossBlocks(nid).into());
                }
            }
        }
    }
    Ok(map)
}

/// Checks that byte `la` of a mapped extent on the primary device lies within the device, and
/// cuts the extent at the device's end: the C driver maps such an extent whole and only the
/// I/O past the end fails, so the blocks before it read (a plain file whose i_size runs past
/// the device reads up to the device's end, then fails with EIO). A byte past the device's end
/// is an error, not an extent that ends before it (which iomap warns about, and maps again):
/// the read fails there with EIO, as the C driver's.
fn check_on_device(sbi: &SbInfo, map: &mut Map, la: u64, nid: u64) -> Result<()> {
    // With extra devices, a primary-device address may lie on one of them (unified
    // addressing); the kernel checks those against the device it picks.
    if map.device_id != 0 || sbi.ondisk_extra_devices() != 0 {
        return Ok(());
    }
    match sbi.device_bytes() {
        Some(dev) if map.pa < dev => {
            map.llen = map.llen.min(dev.saturating_sub(map.pa));
            if map.la.saturating_add(map.llen) > la {
                Ok(())
            } else {
                Err(Corruption::ExtentOutOfRange(nid).into())
            }
        }
        _ => Err(Corruption::ExtentOutOfRange(nid).into()),
    }
}

/// Maps `la` of a chunk-based inode, merging physically contiguous chunks that share an index
/// block (`erofs_map_chunks`).
fn map_chunks(sbi: &SbInfo, meta: &impl MetaRead, vi: &InodeInfo, la: u64) -> Result<Map> {
    let nid = vi.nid.0;
    let indexes = vi.chunkformat & ondisk::EROFS_CHUNK_FORMAT_INDEXES != 0;
    let unit: u64 = if indexes {
        8
    } else {
        ondisk::EROFS_BLOCK_MAP_ENTRY_SIZE
    };
    let addrmask: u64 = if vi.chunkformat & ondisk::EROFS_CHUNK_FORMAT_48BIT != 0 {
        (1 << 48) - 1
    } else {
        (1 << 32) - 1
    };
    let chunkbits = u32::from(vi.chunkbits);
    let chunksize = 1u64 << chunkbits;
    let nr = la >> chunkbits;
    let bad = Corruption::ChunkAddress(nid);
    let base = vi.payload_pos(sbi).ok_or(bad)?;
    // The index array starts aligned to its unit after the inode and its xattrs.
    let base = base.checked_next_multiple_of(unit).ok_or(bad)?;
    let pos = nr
        .checked_mul(unit)
        .and_then(|o| base.checked_add(o))
        .ok_or(bad)?;
    // Entries are merged only within the block of the first one, as the C driver does.
    let endpos = pos
        .checked_add(1)
        .and_then(|p| p.checked_next_multiple_of(sbi.blksz()))
        .ok_or(bad)?;
    // Entries beyond EOF are not read: the image need not hold them.
    let nchunks = vi.size.div_ceil(chunksize);
    let remaining = nchunks.saturating_sub(nr);

    let read_entry = |i: u64| -> Result<u64> {
        let p = i
            .checked_mul(unit)
            .and_then(|o| pos.checked_add(o))
            .ok_or(bad)?;
        let mut raw = [0u8; 8];
        let buf = raw
            .get_mut(..usize::try_from(unit).unwrap_or(8))
            .ok_or(bad)?;
        meta.read_meta(p, buf)?;
        if indexes {
            let (idx, _) = ChunkIndex::ref_from_prefix(&raw[..]).map_err(|_| bad)?;
            let addr = ((u64::from(idx.startblk_hi.get()) << 32)
                | u64::from(idx.startblk_lo.get()))
                & addrmask;
            if addr == ondisk::EROFS_NULL_ADDR & addrmask {
                return Ok(ondisk::EROFS_NULL_ADDR);
            }
            Ok(addr | (u64::from(idx.device_id.get() & sbi.device_id_mask) << 48))
        } else {
            let (blk, _) =
                zerocopy::little_endian::U32::read_from_prefix(&raw[..]).map_err(|_| bad)?;
            let blk = blk.get();
            Ok(if blk == u32::MAX {
                ondisk::EROFS_NULL_ADDR
            } else {
                u64::from(blk)
            })
        }
    };

    let first = read_entry(0)?;
    let mut llen = chunksize;
    let mut i = 1u64;
    // Merge the following chunks while they continue the first one physically.
    while i < remaining
        && pos
            .checked_add(i.saturating_mul(unit))
            .is_some_and(|p| p < endpos)
    {
        let next = read_entry(i)?;
        let expect = if first == ondisk::EROFS_NULL_ADDR {
            ondisk::EROFS_NULL_ADDR
        } else {
            (first & addrmask).checked_add(sbi.blknr(llen)).ok_or(bad)? | (first & !addrmask)
        };
        if next != expect {
            break;
        }
        llen = llen.checked_add(chunksize).ok_or(bad)?;
        i = i.saturating_add(1);
    }

    let map_la = nr.checked_mul(chunksize).ok_or(bad)?;
    // Clamp to EOF, rounded up to a block, as the C driver does.
    let eof = vi
        .size
        .saturating_sub(map_la)
        .checked_next_multiple_of(sbi.blksz())
        .ok_or(bad)?;
    let mut map = Map {
        la: map_la,
        llen: llen.min(eof),
        pa: 0,
        device_id: 0,
        kind: MapKind::Hole,
    };
    if first != ondisk::EROFS_NULL_ADDR {
        map.pa = sbi.pos(first & addrmask).ok_or(bad)?;
        map.device_id = u16::try_from(first >> 48).unwrap_or(u16::MAX);
        map.kind = MapKind::Mapped;
        check_on_device(sbi, &mut map, la, nid)?;
    }
    Ok(map)
}
