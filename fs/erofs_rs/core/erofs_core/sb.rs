// SPDX-License-Identifier: MIT OR GPL-2.0-only
//! Superblock parsing and validation. C counterpart: fs/erofs/super.c (`erofs_read_superblock`).

use crate::erofs_core::{
    ondisk::{
        self,
        z,
        SuperBlock, //
    },
    Corruption,
    Error,
    MetaRead,
    Nid,
    Result,
    Unsupported, //
};
use zerocopy::FromBytes;

/// Incompatible features this driver reads. The rest are refused at mount, by name.
pub const SUPPORTED_INCOMPAT: u32 = ondisk::EROFS_FEATURE_INCOMPAT_LZ4_0PADDING
    | ondisk::EROFS_FEATURE_INCOMPAT_COMPR_CFGS
    | ondisk::EROFS_FEATURE_INCOMPAT_CHUNKED_FILE
    | ondisk::EROFS_FEATURE_INCOMPAT_DEVICE_TABLE
    | ondisk::EROFS_FEATURE_INCOMPAT_ZTAILPACKING
    | ondisk::EROFS_FEATURE_INCOMPAT_FRAGMENTS
    | ondisk::EROFS_FEATURE_INCOMPAT_XATTR_PREFIXES
    | ondisk::EROFS_FEATURE_INCOMPAT_48BIT
    | ondisk::EROFS_FEATURE_INCOMPAT_METABOX;

/// Metadata positions with this bit set are offsets in the data of the metabox inode, not on
/// the primary device (the C driver's `in_metabox` argument of `erofs_read_metabuf`).
///
/// [`SbInfo::iloc`] returns such positions for nids with the metabox bit, so that everything
/// derived from an inode's location (inline xattrs, inline data, chunk indexes, compression
/// indexes, inline pclusters) lands in the metabox; [`MetaRead`] implementations dispatch on it.
pub const METABOX_POS: u64 = 1 << 63;

/// Where `metabox_nid` sits in the superblock: a shorter superblock cannot have one.
const METABOX_NID_OFFSET: u32 = 128;

/// Names of the incompatible feature bits, as `/sys/fs/erofs/features` spells them.
const INCOMPAT_NAMES: [(u32, &str); 9] = [
    (ondisk::EROFS_FEATURE_INCOMPAT_LZ4_0PADDING, "lz4_0padding"),
    (
        ondisk::EROFS_FEATURE_INCOMPAT_COMPR_CFGS,
        "compr_cfgs/big_pcluster",
    ),
    (ondisk::EROFS_FEATURE_INCOMPAT_CHUNKED_FILE, "chunked_file"),
    (
        ondisk::EROFS_FEATURE_INCOMPAT_DEVICE_TABLE,
        "device_table/compr_head2",
    ),
    (ondisk::EROFS_FEATURE_INCOMPAT_ZTAILPACKING, "ztailpacking"),
    (ondisk::EROFS_FEATURE_INCOMPAT_FRAGMENTS, "fragments/dedupe"),
    (
        ondisk::EROFS_FEATURE_INCOMPAT_XATTR_PREFIXES,
        "xattr_prefixes",
    ),
    (ondisk::EROFS_FEATURE_INCOMPAT_48BIT, "48bit"),
    (ondisk::EROFS_FEATURE_INCOMPAT_METABOX, "metabox"),
];

/// Calls `f` with the name of each bit set in `bits` (`"unknown"` for bits 7.3 does not know).
pub fn for_each_incompat_name(bits: u32, mut f: impl FnMut(&'static str)) {
    for (bit, name) in INCOMPAT_NAMES {
        if bits & bit != 0 {
            f(name);
        }
    }
    if bits & !ondisk::EROFS_ALL_FEATURE_INCOMPAT != 0 {
        f("unknown");
    }
}

/// The in-memory superblock: what the rest of the core needs from `erofs_super_block`.
#[doc(alias = "erofs_sb_info")]
#[derive(Debug, Clone)]
pub struct SbInfo {
    /// log2 of the block size.
    pub blkszbits: u8,
    /// Compatible feature bits.
    pub feature_compat: u32,
    /// Incompatible feature bits.
    pub feature_incompat: u32,
    /// Superblock size in bytes.
    pub sb_size: u32,
    /// Blocks of the primary device.
    pub blocks: u64,
    /// First block of the inode area.
    pub meta_blkaddr: u64,
    /// First block of the shared xattr area.
    pub xattr_blkaddr: u64,
    /// The root directory.
    pub root_nid: Nid,
    /// The packed inode, or 0.
    pub packed_nid: u64,
    /// The metabox inode, holding compressed metadata (with `METABOX`, else 0).
    pub metabox_nid: u64,
    /// Number of inodes.
    pub inos: u64,
    /// Base seconds of compact inodes' mtimes.
    pub epoch: i64,
    /// Nanoseconds of compact inodes' mtimes.
    pub fixed_nsec: u32,
    /// Seconds after `epoch` at which mkfs ran.
    pub build_time: u32,
    /// Volume uuid.
    pub uuid: [u8; 16],
    /// Volume label, NUL-padded.
    pub volume_name: [u8; 16],
    /// Number of extra devices.
    pub extra_devices: u16,
    /// Device table position in 128-byte slots.
    pub devt_slotoff: u16,
    /// Mask of the device id bits of chunk indexes.
    pub device_id_mask: u16,
    /// log2 of the inode slot size (32 bytes).
    pub islotbits: u8,
    /// Number of long xattr name prefixes.
    pub xattr_prefix_count: u8,
    /// Start of the long prefix table, in 4-byte units.
    pub xattr_prefix_start: u32,
    /// Non-zero if the xattr name filter's format changed: the filter is then ignored.
    pub xattr_filter_reserved: u8,
    /// With `ISHARE_XATTRS`: the long prefix of the page-cache-sharing fingerprint xattr.
    pub ishare_xattr_prefix_id: u8,
    /// Bitmap of the compression algorithms the image uses (`1 << Z_EROFS_COMPRESSION_*`):
    /// `available_compr_algs` with `COMPR_CFGS`, else LZ4 alone if the image has
    /// `lz4_max_distance` or `LZ4_0PADDING`, else 0 (no compressed inodes allowed).
    pub available_compr_algs: u16,
    /// LZ4: the largest match distance (from the superblock or the LZ4 cfgs).
    pub lz4_max_distance: u16,
    /// LZ4: the largest pcluster in blocks (1 without cfgs; 0 if LZ4 is not used).
    pub lz4_max_pclusterblks: u32,
    /// MicroLZMA: dictionary size (0 if LZMA is not used).
    pub lzma_dict_size: u32,
    /// DEFLATE: log2 of the window (0 if DEFLATE is not used).
    pub deflate_windowbits: u8,
    /// Zstandard: `windowLog - 10`, as stored (0 if Zstandard is not used).
    pub zstd_windowlog: u8,
}

impl SbInfo {
    /// Parses and checks the superblock.
    ///
    /// `sbdata` holds the bytes from `EROFS_SUPER_OFFSET` onwards, at least up to the end of
    /// the superblock's block (or 144 bytes, whichever is more). `page_shift` bounds the block
    /// size, and `crc32c(seed, bytes)` is the checksum the kernel or a test provides.
    ///
    /// # Errors
    ///
    /// [`Error::NotErofs`] without the magic, [`Error::Unsupported`] for block sizes and
    /// features this driver does not read, [`Error::Corrupted`] for a bad checksum.
    pub fn parse(
        sbdata: &[u8],
        page_shift: u8,
        crc32c: impl Fn(u32, &[u8]) -> u32,
    ) -> Result<Self> {
        let (dsb, _) = SuperBlock::ref_from_prefix(sbdata).map_err(|_| Error::NotErofs)?;
        if dsb.magic.get() != ondisk::EROFS_SUPER_MAGIC_V1 {
            return Err(Error::NotErofs);
        }
        let blkszbits = dsb.blkszbits;
        if !(9..=page_shift).contains(&blkszbits) {
            return Err(Unsupported::BlockSize(blkszbits).into());
        }
        if dsb.dirblkbits != 0 {
            return Err(Unsupported::DirBlkBits(dsb.dirblkbits).into());
        }
        let feature_compat = dsb.feature_compat.get();
        if feature_compat & ondisk::EROFS_FEATURE_COMPAT_SB_CHKSUM != 0 {
            verify_checksum(sbdata, blkszbits, &crc32c)?;
        }
        let feature_incompat = dsb.feature_incompat.get();
        if feature_incompat & !SUPPORTED_INCOMPAT != 0 {
            return Err(
                Unsupported::IncompatFeatures(feature_incompat & !SUPPORTED_INCOMPAT).into(),
            );
        }
        let sb_size = u32::from(dsb.sb_extslots)
            .saturating_mul(ondisk::EROFS_SB_EXTSLOT_SIZE)
            .saturating_add(128);
        // The superblock must fit in the first page after its offset, as in the C driver.
        let page_size = 1u32 << page_shift;
        if sb_size > page_size.saturating_sub(1024) {
            return Err(Corruption::SuperblockExtslots(sb_size).into());
        }
        let has_48bit = feature_incompat & ondisk::EROFS_FEATURE_INCOMPAT_48BIT != 0;
        let mut blocks = u64::from(dsb.blocks_lo.get());
        let root_nid = if has_48bit && dsb.rootnid_8b.get() != 0 {
            blocks |= u64::from(dsb.rb.get()) << 32;
            dsb.rootnid_8b.get()
        } else {
            u64::from(dsb.rb.get())
        };
        // `z_erofs_parse_cfgs`: the per-algorithm records are read by `load_compr_cfgs`.
        let u1 = dsb.u1.get();
        let (available_compr_algs, lz4_max_distance, lz4_max_pclusterblks) = if feature_incompat
            & ondisk::EROFS_FEATURE_INCOMPAT_COMPR_CFGS
            != 0
        {
            if u1 & !ondisk::Z_EROFS_ALL_COMPR_ALGS != 0 {
                return Err(Unsupported::Algorithms(u1 & !ondisk::Z_EROFS_ALL_COMPR_ALGS).into());
            }
            (u1, 0, 0)
        } else if u1 == 0 && feature_incompat & ondisk::EROFS_FEATURE_INCOMPAT_LZ4_0PADDING == 0 {
            // `z_erofs_load_lz4_config`: no trace of compression at all.
            (0, 0, 0)
        } else {
            (1 << ondisk::Z_EROFS_COMPRESSION_LZ4, u1, 1)
        };
        let ishare_xattr_prefix_id =
            if feature_compat & ondisk::EROFS_FEATURE_COMPAT_ISHARE_XATTRS != 0 {
                if dsb.ishare_xattr_prefix_id >= dsb.xattr_prefix_count {
                    return Err(Corruption::IshareXattrPrefixId(dsb.ishare_xattr_prefix_id).into());
                }
                dsb.ishare_xattr_prefix_id
            } else {
                0
            };
        // The metabox inode itself must live outside the metabox (self-loop detection).
        let metabox_nid = if feature_incompat & ondisk::EROFS_FEATURE_INCOMPAT_METABOX != 0 {
            if sb_size <= METABOX_NID_OFFSET {
                return Err(Corruption::MetaboxNid.into());
            }
            let nid = dsb.metabox_nid.get();
            if nid & (1u64 << ondisk::EROFS_DIRENT_NID_METABOX_BIT) != 0 {
                return Err(Corruption::MetaboxNid.into());
            }
            nid
        } else {
            0
        };
        let extra_devices = dsb.extra_devices.get();
        // As `roundup_pow_of_two(extra_devices + 1) - 1` in the C driver.
        let device_id_mask = (u32::from(extra_devices) + 1)
            .checked_next_power_of_two()
            .map_or(u16::MAX, |p| {
                u16::try_from(p.saturating_sub(1)).unwrap_or(u16::MAX)
            });
        Ok(SbInfo {
            blkszbits,
            feature_compat,
            feature_incompat,
            sb_size,
            blocks,
            meta_blkaddr: u64::from(dsb.meta_blkaddr.get()),
            xattr_blkaddr: u64::from(dsb.xattr_blkaddr.get()),
            root_nid: Nid(root_nid),
            packed_nid: dsb.packed_nid.get(),
            metabox_nid,
            inos: dsb.inos.get(),
            epoch: i64::from_ne_bytes(dsb.epoch.get().to_ne_bytes()),
            fixed_nsec: dsb.fixed_nsec.get(),
            build_time: dsb.build_time.get(),
            uuid: dsb.uuid,
            volume_name: dsb.volume_name,
            extra_devices,
            devt_slotoff: dsb.devt_slotoff.get(),
            device_id_mask,
            islotbits: 5,
            xattr_prefix_count: dsb.xattr_prefix_count,
            xattr_prefix_start: dsb.xattr_prefix_start.get(),
            xattr_filter_reserved: dsb.xattr_filter_reserved,
            ishare_xattr_prefix_id,
            available_compr_algs,
            lz4_max_distance,
            lz4_max_pclusterblks,
            lzma_dict_size: 0,
            deflate_windowbits: 0,
            zstd_windowlog: 0,
        })
    }

    /// Reads the compression configuration records that follow the superblock
    /// (`z_erofs_parse_cfgs`); the kernel calls it right after [`SbInfo::parse`].
    ///
    /// Without `COMPR_CFGS` there are none and this does nothing ([`SbInfo::parse`] already
    /// applied the superblock's LZ4 settings). Otherwise, at `EROFS_SUPER_OFFSET + sb_size`,
    /// each bit of `available_compr_algs`, lowest first, has one 4-byte-aligned record
    /// `{le16 size (0: 65536), payload}`, which may cross a block.
    ///
    /// # Errors
    ///
    /// [`Corruption::ComprCfgs`] for a record too short for its algorithm,
    /// [`Corruption::Lz4Pclusterblks`] for an LZ4 pcluster beyond 1 MiB,
    /// [`Unsupported::ComprCfgs`] for unknown formats and dictionaries or windows beyond what
    /// Linux 7.3 decodes, and the backend's errors.
    pub fn load_compr_cfgs(&mut self, meta: &impl MetaRead) -> Result<()> {
        if !self.has_compr_cfgs() {
            return Ok(());
        }
        let mut offset = ondisk::EROFS_SUPER_OFFSET.saturating_add(u64::from(self.sb_size));
        for alg in 0..ondisk::Z_EROFS_COMPRESSION_MAX {
            if self.available_compr_algs & (1 << alg) == 0 {
                continue;
            }
            // `erofs_read_metadata`: a 4-byte aligned length, then the payload.
            // (A position that overflows is past any device: the records are invalid, as C's
            // `EINVAL` for a short record.)
            let invalid = Corruption::ComprCfgs { alg, size: 0 };
            offset = offset.checked_next_multiple_of(4).ok_or(invalid)?;
            let mut len = [0u8; 2];
            meta.read_meta(offset, &mut len)?;
            let size = match u16::from_le_bytes(len) {
                0 => 65536u32,
                n => u32::from(n),
            };
            offset = offset.checked_add(2).ok_or(invalid)?;
            // No record is longer than 14 bytes; the rest of a longer one is ignored.
            let mut data = [0u8; 16];
            let want = usize::try_from(size).unwrap_or(16).min(data.len());
            let buf = data.get_mut(..want).ok_or(invalid)?;
            meta.read_meta(offset, buf)?;
            offset = offset.checked_add(u64::from(size)).ok_or(invalid)?;
            self.load_compr_cfg(alg, &data, size)?;
        }
        Ok(())
    }

    /// Applies one algorithm's configuration record (the decompressors' `config` hooks).
    fn load_compr_cfg(&mut self, alg: u8, data: &[u8; 16], size: u32) -> Result<()> {
        let short = |need: usize| -> Result<()> {
            if usize::try_from(size).is_ok_and(|s| s >= need) {
                Ok(())
            } else {
                Err(Corruption::ComprCfgs { alg, size }.into())
            }
        };
        let unsupported = Error::Unsupported(Unsupported::ComprCfgs { alg });
        match alg {
            ondisk::Z_EROFS_COMPRESSION_LZ4 => {
                short(core::mem::size_of::<z::Lz4Cfgs>())?;
                let (lz4, _) = z::Lz4Cfgs::ref_from_prefix(&data[..])
                    .map_err(|_| Corruption::ComprCfgs { alg, size })?;
                self.lz4_max_distance = lz4.max_distance.get();
                let blks = u32::from(lz4.max_pclusterblks.get());
                self.lz4_max_pclusterblks = match blks {
                    // A reserved value that means one block.
                    0 => 1,
                    b if u64::from(b) > ondisk::Z_EROFS_PCLUSTER_MAX_SIZE >> self.blkszbits => {
                        return Err(Corruption::Lz4Pclusterblks(b).into());
                    }
                    b => b,
                };
            }
            ondisk::Z_EROFS_COMPRESSION_LZMA => {
                short(core::mem::size_of::<z::LzmaCfgs>())?;
                let (lzma, _) = z::LzmaCfgs::ref_from_prefix(&data[..])
                    .map_err(|_| Corruption::ComprCfgs { alg, size })?;
                let dict_size = lzma.dict_size.get();
                if lzma.format.get() != 0
                    || !(4096..=z::Z_EROFS_LZMA_MAX_DICT_SIZE).contains(&dict_size)
                {
                    return Err(unsupported);
                }
                self.lzma_dict_size = dict_size;
            }
            ondisk::Z_EROFS_COMPRESSION_DEFLATE => {
                short(core::mem::size_of::<z::DeflateCfgs>())?;
                let (dfl, _) = z::DeflateCfgs::ref_from_prefix(&data[..])
                    .map_err(|_| Corruption::ComprCfgs { alg, size })?;
                // `MAX_WBITS` of zlib.
                if dfl.windowbits > 15 {
                    return Err(unsupported);
                }
                self.deflate_windowbits = dfl.windowbits;
            }
            _ => {
                short(core::mem::size_of::<z::ZstdCfgs>())?;
                let (zstd, _) = z::ZstdCfgs::ref_from_prefix(&data[..])
                    .map_err(|_| Corruption::ComprCfgs { alg, size })?;
                // `ilog2(Z_EROFS_ZSTD_MAX_DICT_SIZE) - 10`.
                if zstd.format != 0 || zstd.windowlog > 10 {
                    return Err(unsupported);
                }
                self.zstd_windowlog = zstd.windowlog;
            }
        }
        Ok(())
    }

    /// The block size in bytes.
    pub fn blksz(&self) -> u64 {
        1u64 << self.blkszbits
    }

    /// The block that holds byte `pos` (`erofs_blknr`).
    pub fn blknr(&self, pos: u64) -> u64 {
        pos >> self.blkszbits
    }

    /// The offset of byte `pos` in its block (`erofs_blkoff`).
    pub fn blkoff(&self, pos: u64) -> u64 {
        pos & (self.blksz().wrapping_sub(1))
    }

    /// The byte position of block `blk` (`erofs_pos`), or `None` on overflow.
    pub fn pos(&self, blk: u64) -> Option<u64> {
        blk.checked_mul(self.blksz())
    }

    /// The byte position of inode `nid` (`erofs_iloc`), or `None` on overflow.
    ///
    /// A nid with the metabox bit is a slot in the metabox inode's data: its position carries
    /// [`METABOX_POS`]. Such a nid in an image without a metabox has no position.
    pub fn iloc(&self, nid: Nid) -> Option<u64> {
        let mbox = 1u64 << ondisk::EROFS_DIRENT_NID_METABOX_BIT;
        let off = (nid.0 & !mbox).checked_mul(1u64 << self.islotbits)?;
        if nid.0 & mbox != 0 {
            return (self.has_metabox() && off < METABOX_POS).then_some(off | METABOX_POS);
        }
        self.pos(self.meta_blkaddr)?
            .checked_add(off)
            .filter(|&p| p < METABOX_POS)
    }

    /// The inode number user space sees for `nid` (`erofs_nid_to_ino64`): the nid itself,
    /// except with a metabox, where bits 31-62 move up one and the metabox bit becomes bit 31.
    pub fn nid_to_ino(&self, nid: u64) -> u64 {
        if !self.has_metabox() {
            return nid;
        }
        ((nid << 1) & 0xffff_ffff_0000_0000)
            | (nid & 0x7fff_ffff)
            | ((nid >> ondisk::EROFS_DIRENT_NID_METABOX_BIT) << 31)
    }

    /// Whether inode metadata may live in the metabox inode (`METABOX`).
    pub fn has_metabox(&self) -> bool {
        self.feature_incompat & ondisk::EROFS_FEATURE_INCOMPAT_METABOX != 0
    }

    /// Whether the shared xattr area is in the metabox (`SHARED_EA_IN_METABOX`).
    pub fn has_shared_ea_in_metabox(&self) -> bool {
        self.feature_compat & ondisk::EROFS_FEATURE_COMPAT_SHARED_EA_IN_METABOX != 0
    }

    /// Whether inodes carry page-cache-sharing fingerprints (`ISHARE_XATTRS`).
    pub fn has_ishare_xattrs(&self) -> bool {
        self.feature_compat & ondisk::EROFS_FEATURE_COMPAT_ISHARE_XATTRS != 0
    }

    /// Whether inodes carry an xattr name bloom filter (`XATTR_FILTER`).
    pub fn has_xattr_filter(&self) -> bool {
        self.feature_compat & ondisk::EROFS_FEATURE_COMPAT_XATTR_FILTER != 0
    }

    /// Whether a feature is on: `has_sb_chksum()` and friends, as `EROFS_FEATURE_FUNCS`.
    pub fn has_sb_chksum(&self) -> bool {
        self.feature_compat & ondisk::EROFS_FEATURE_COMPAT_SB_CHKSUM != 0
    }

    /// Whether the image uses 48-bit block addresses.
    pub fn has_48bit(&self) -> bool {
        self.feature_incompat & ondisk::EROFS_FEATURE_INCOMPAT_48BIT != 0
    }

    /// Whether compression configurations follow the superblock (`COMPR_CFGS`).
    pub fn has_compr_cfgs(&self) -> bool {
        self.feature_incompat & ondisk::EROFS_FEATURE_INCOMPAT_COMPR_CFGS != 0
    }

    /// Whether pclusters may span several blocks (`BIG_PCLUSTER`, the `COMPR_CFGS` bit).
    pub fn has_big_pcluster(&self) -> bool {
        self.feature_incompat & ondisk::EROFS_FEATURE_INCOMPAT_BIG_PCLUSTER != 0
    }

    /// Whether compressed data is padded with zeroes at the start of its pcluster.
    pub fn has_lz4_0padding(&self) -> bool {
        self.feature_incompat & ondisk::EROFS_FEATURE_INCOMPAT_LZ4_0PADDING != 0
    }

    /// Whether tail pclusters may be inline in the metadata (`ZTAILPACKING`).
    pub fn has_ztailpacking(&self) -> bool {
        self.feature_incompat & ondisk::EROFS_FEATURE_INCOMPAT_ZTAILPACKING != 0
    }

    /// Whether files may keep fragments in the packed inode (`FRAGMENTS`).
    pub fn has_fragments(&self) -> bool {
        self.feature_incompat & ondisk::EROFS_FEATURE_INCOMPAT_FRAGMENTS != 0
    }

    /// Whether pclusters may be deduplicated (`DEDUPE`, the `FRAGMENTS` bit).
    pub fn has_dedupe(&self) -> bool {
        self.feature_incompat & ondisk::EROFS_FEATURE_INCOMPAT_DEDUPE != 0
    }

    /// The volume label without its NUL padding.
    pub fn volume_name(&self) -> &[u8] {
        let len = self.volume_name.iter().position(|&b| b == 0).unwrap_or(16);
        self.volume_name.get(..len).unwrap_or(&[])
    }

    /// The number of bytes of the primary device the image says it covers.
    pub fn device_bytes(&self) -> Option<u64> {
        self.pos(self.blocks)
    }
}

/// An extra device as the device table describes it (`struct erofs_device_info`).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct DeviceInfo {
    /// The tag, NUL-padded (a path when mkfs.erofs was given one).
    pub tag: [u8; 64],
    /// Blocks of the device.
    pub blocks: u64,
    /// First block of the device in the unified address space (0: none).
    pub uniaddr: u64,
}

impl DeviceInfo {
    /// The tag without its NUL padding.
    pub fn tag(&self) -> &[u8] {
        let len = self.tag.iter().position(|&b| b == 0).unwrap_or(64);
        self.tag.get(..len).unwrap_or(&[])
    }
}

impl SbInfo {
    /// Number of extra devices the image declares (0 without `DEVICE_TABLE`).
    pub fn ondisk_extra_devices(&self) -> u16 {
        if self.feature_incompat & ondisk::EROFS_FEATURE_INCOMPAT_DEVICE_TABLE != 0 {
            self.extra_devices
        } else {
            0
        }
    }

    /// Reads slot `i` of the device table (`erofs_init_device`).
    ///
    /// # Errors
    ///
    /// The backend's errors; [`Corruption::DeviceSlot`] if the slot's position overflows.
    pub fn device(&self, meta: &impl MetaRead, i: u16) -> Result<DeviceInfo> {
        let pos = u64::from(self.devt_slotoff)
            .checked_add(u64::from(i))
            .and_then(|s| s.checked_mul(ondisk::EROFS_DEVT_SLOT_SIZE))
            .ok_or(Corruption::DeviceSlot(i))?;
        let mut raw = [0u8; 128];
        meta.read_meta(pos, &mut raw)?;
        let (dis, _) =
            ondisk::DeviceSlot::ref_from_prefix(&raw[..]).map_err(|_| Corruption::DeviceSlot(i))?;
        let hi = |v: u16| {
            if self.has_48bit() {
                u64::from(v) << 32
            } else {
                0
            }
        };
        Ok(DeviceInfo {
            tag: dis.tag,
            blocks: u64::from(dis.blocks_lo.get()) | hi(dis.blocks_hi.get()),
            uniaddr: u64::from(dis.uniaddr_lo.get()) | hi(dis.uniaddr_hi.get()),
        })
    }
}

/// Checks the superblock crc32c: seed `EROFS_SB_CHKSUM_SEED`, over the rest of the block after
/// the checksum field (`erofs_superblock_csum_verify`).
fn verify_checksum(
    sbdata: &[u8],
    blkszbits: u8,
    crc32c: &impl Fn(u32, &[u8]) -> u32,
) -> Result<()> {
    let blksz = 1usize << blkszbits;
    let len = if blksz > 1024 {
        blksz.saturating_sub(1024)
    } else {
        blksz
    };
    let bytes = sbdata.get(8..len).ok_or(Error::NotErofs)?;
    let expected = sbdata
        .get(4..8)
        .and_then(|b| <[u8; 4]>::try_from(b).ok())
        .map(u32::from_le_bytes)
        .ok_or(Error::NotErofs)?;
    let computed = crc32c(ondisk::EROFS_SB_CHKSUM_SEED, bytes);
    if computed != expected {
        return Err(Corruption::SuperblockChecksum { computed, expected }.into());
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    #![allow(
        clippy::indexing_slicing,
        clippy::unwrap_used,
        clippy::arithmetic_side_effects,
        clippy::as_conversions
    )]

    /// What the test backends fail with: a backend's errno (EIO), opaque to the core.
    const BACKEND_EIO: i32 = 5;
    use super::*;

    /// The kernel's crc32c (reflected Castagnoli, no inversions).
    pub(crate) fn crc32c(mut crc: u32, data: &[u8]) -> u32 {
        for &b in data {
            crc ^= u32::from(b);
            for _ in 0..8 {
                crc = (crc >> 1) ^ if crc & 1 != 0 { 0x82F6_3B78 } else { 0 };
            }
        }
        crc
    }

    /// A valid superblock of a 4 KiB-block image, as bytes from `EROFS_SUPER_OFFSET`.
    fn golden() -> [u8; 3072] {
        let mut b = [0u8; 3072];
        b[0..4].copy_from_slice(&ondisk::EROFS_SUPER_MAGIC_V1.to_le_bytes());
        b[12] = 12; // blkszbits
        b[14..16].copy_from_slice(&36u16.to_le_bytes()); // rootnid_2b
        b[16..24].copy_from_slice(&7u64.to_le_bytes()); // inos
        b[36..40].copy_from_slice(&100u32.to_le_bytes()); // blocks_lo
        b[40..44].copy_from_slice(&1u32.to_le_bytes()); // meta_blkaddr
        b
    }

    fn with_csum(mut b: [u8; 3072]) -> [u8; 3072] {
        b[8..12].copy_from_slice(&ondisk::EROFS_FEATURE_COMPAT_SB_CHKSUM.to_le_bytes());
        b[4..8].fill(0);
        let c = crc32c(ondisk::EROFS_SB_CHKSUM_SEED, &b[8..]);
        b[4..8].copy_from_slice(&c.to_le_bytes());
        b
    }

    #[test]
    fn parses_golden() {
        let sbi = SbInfo::parse(&golden(), 12, crc32c).unwrap();
        assert_eq!(sbi.root_nid, Nid(36));
        assert_eq!(sbi.blocks, 100);
        assert_eq!(sbi.iloc(Nid(36)), Some(4096 + 36 * 32));
        assert_eq!(sbi.device_id_mask, 0);
    }

    #[test]
    fn checksum_accepted_and_rejected() {
        let b = with_csum(golden());
        SbInfo::parse(&b, 12, crc32c).unwrap();
        let mut bad = b;
        bad[2000] ^= 1;
        assert!(matches!(
            SbInfo::parse(&bad, 12, crc32c),
            Err(Error::Corrupted(Corruption::SuperblockChecksum { .. }))
        ));
    }

    #[test]
    fn rejects_bad_magic() {
        let mut b = golden();
        b[0] ^= 0xff;
        assert_eq!(SbInfo::parse(&b, 12, crc32c).unwrap_err(), Error::NotErofs);
    }

    #[test]
    fn rejects_short_buffer() {
        assert_eq!(
            SbInfo::parse(&golden()[..100], 12, crc32c).unwrap_err(),
            Error::NotErofs
        );
    }

    #[test]
    fn rejects_block_sizes() {
        for bits in [0u8, 8, 13, 255] {
            let mut b = golden();
            b[12] = bits;
            assert_eq!(
                SbInfo::parse(&b, 12, crc32c).unwrap_err(),
                Unsupported::BlockSize(bits).into()
            );
        }
        // 512-byte blocks are fine, and the checksum then covers only 504 bytes.
        let mut b = golden();
        b[12] = 9;
        SbInfo::parse(&b, 12, crc32c).unwrap();
    }

    #[test]
    fn rejects_dirblkbits() {
        let mut b = golden();
        b[90] = 1;
        assert_eq!(
            SbInfo::parse(&b, 12, crc32c).unwrap_err(),
            Unsupported::DirBlkBits(1).into()
        );
    }

    #[test]
    fn rejects_unknown_and_unimplemented_incompat() {
        for bits in [0x200u32, 0x400, 0x401] {
            let mut b = golden();
            b[80..84].copy_from_slice(&bits.to_le_bytes());
            assert_eq!(
                SbInfo::parse(&b, 12, crc32c).unwrap_err(),
                Unsupported::IncompatFeatures(bits & !SUPPORTED_INCOMPAT).into()
            );
        }
        let mut names = [""; 4];
        let mut n = 0;
        for_each_incompat_name(0x211, |s| {
            names[n] = s;
            n += 1;
        });
        assert_eq!(&names[..n], &["lz4_0padding", "ztailpacking", "unknown"]);
    }

    /// A superblock with `COMPR_CFGS`, the given algorithms and records, in a device image.
    fn with_cfgs(algs: u16, records: &[&[u8]]) -> (std::vec::Vec<u8>, SbInfo) {
        let mut img = std::vec![0u8; 8192];
        let mut b = golden();
        b[80..84].copy_from_slice(&(ondisk::EROFS_FEATURE_INCOMPAT_COMPR_CFGS | 1).to_le_bytes());
        b[84..86].copy_from_slice(&algs.to_le_bytes());
        img[1024..4096].copy_from_slice(&b);
        let mut off = 1024 + 128;
        for r in records {
            off = (off + 3) & !3;
            img[off..off + r.len()].copy_from_slice(r);
            off += r.len();
        }
        let sbi = SbInfo::parse(&img[1024..4096], 12, crc32c).unwrap();
        (img, sbi)
    }

    struct Mem(std::vec::Vec<u8>);
    impl MetaRead for Mem {
        fn read_meta(&self, pos: u64, buf: &mut [u8]) -> Result<()> {
            let p = pos as usize;
            buf.copy_from_slice(self.0.get(p..p + buf.len()).ok_or(Error::Io(BACKEND_EIO))?);
            Ok(())
        }
    }

    #[test]
    fn lz4_without_cfgs_as_the_c_driver() {
        // Neither a distance nor 0padding: no compression at all.
        let sbi = SbInfo::parse(&golden(), 12, crc32c).unwrap();
        assert_eq!(sbi.available_compr_algs, 0);
        let mut b = golden();
        b[80..84].copy_from_slice(&ondisk::EROFS_FEATURE_INCOMPAT_LZ4_0PADDING.to_le_bytes());
        let sbi = SbInfo::parse(&b, 12, crc32c).unwrap();
        assert_eq!((sbi.available_compr_algs, sbi.lz4_max_pclusterblks), (1, 1));
        let mut b = golden();
        b[84..86].copy_from_slice(&65535u16.to_le_bytes());
        let sbi = SbInfo::parse(&b, 12, crc32c).unwrap();
        assert_eq!((sbi.available_compr_algs, sbi.lz4_max_distance), (1, 65535));
    }

    #[test]
    fn loads_compression_cfgs() {
        let lz4: &[u8] = &[14, 0, 0x10, 0, 4, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0];
        let lzma: &[u8] = &[14, 0, 0, 0, 0x10, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0];
        let deflate: &[u8] = &[6, 0, 15, 0, 0, 0, 0, 0];
        let zstd: &[u8] = &[6, 0, 0, 7, 0, 0, 0, 0];
        let (img, mut sbi) = with_cfgs(0xf, &[lz4, lzma, deflate, zstd]);
        sbi.load_compr_cfgs(&Mem(img)).unwrap();
        assert_eq!(sbi.available_compr_algs, 0xf);
        assert_eq!((sbi.lz4_max_distance, sbi.lz4_max_pclusterblks), (16, 4));
        assert_eq!(sbi.lzma_dict_size, 0x10_0000);
        assert_eq!((sbi.deflate_windowbits, sbi.zstd_windowlog), (15, 7));
        assert!(sbi.has_big_pcluster() && sbi.has_lz4_0padding() && !sbi.has_fragments());
    }

    #[test]
    fn rejects_bad_compression_cfgs() {
        let short: &[u8] = &[4, 0, 1, 0, 1, 0];
        let (img, mut sbi) = with_cfgs(1, &[short]);
        assert_eq!(
            sbi.load_compr_cfgs(&Mem(img)),
            Err(Corruption::ComprCfgs { alg: 0, size: 4 }.into())
        );
        let huge: &[u8] = &[14, 0, 0, 0, 1, 1, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0];
        let (img, mut sbi) = with_cfgs(1, &[huge]);
        assert_eq!(
            sbi.load_compr_cfgs(&Mem(img)),
            Err(Corruption::Lz4Pclusterblks(257).into())
        );
        let zstd: &[u8] = &[6, 0, 0, 11, 0, 0, 0, 0];
        let (img, mut sbi) = with_cfgs(8, &[zstd]);
        assert_eq!(
            sbi.load_compr_cfgs(&Mem(img)),
            Err(Unsupported::ComprCfgs { alg: 3 }.into())
        );
        let deflate: &[u8] = &[6, 0, 16, 0, 0, 0, 0, 0];
        let (img, mut sbi) = with_cfgs(4, &[deflate]);
        assert_eq!(
            sbi.load_compr_cfgs(&Mem(img)),
            Err(Unsupported::ComprCfgs { alg: 2 }.into())
        );
        // A record length of 0 means 65536 bytes (of which only the first 16 are read): here
        // an LZMA record with a dictionary of 0 bytes.
        let (img, mut sbi) = with_cfgs(2, &[&[0, 0]]);
        assert_eq!(
            sbi.load_compr_cfgs(&Mem(img)),
            Err(Unsupported::ComprCfgs { alg: 1 }.into())
        );
        // A record past the device.
        let (img, mut sbi) = with_cfgs(1, &[]);
        assert_eq!(
            sbi.load_compr_cfgs(&Mem(img[..1153].to_vec())),
            Err(Error::Io(BACKEND_EIO))
        );
        // Unknown algorithms are refused by `parse`.
        let mut b = golden();
        b[80..84].copy_from_slice(&ondisk::EROFS_FEATURE_INCOMPAT_COMPR_CFGS.to_le_bytes());
        b[84..86].copy_from_slice(&0x11u16.to_le_bytes());
        assert_eq!(
            SbInfo::parse(&b, 12, crc32c).unwrap_err(),
            Unsupported::Algorithms(0x10).into()
        );
    }

    #[test]
    fn rejects_extslots() {
        let mut b = golden();
        b[13] = 250;
        assert_eq!(
            SbInfo::parse(&b, 12, crc32c).unwrap_err(),
            Corruption::SuperblockExtslots(4128).into()
        );
    }

    #[test]
    fn reads_48bit_root_and_blocks() {
        let mut b = golden();
        b[80..84].copy_from_slice(&ondisk::EROFS_FEATURE_INCOMPAT_48BIT.to_le_bytes());
        b[14..16].copy_from_slice(&2u16.to_le_bytes()); // blocks_hi
        b[112..120].copy_from_slice(&(1u64 << 40).to_le_bytes()); // rootnid_8b
        let sbi = SbInfo::parse(&b, 12, crc32c).unwrap();
        assert_eq!(sbi.root_nid, Nid(1 << 40));
        assert_eq!(sbi.blocks, (2 << 32) | 100);
        // The inode position of a huge nid overflows into an error, not a wrap.
        assert_eq!(sbi.iloc(Nid(u64::MAX)), None);
    }

    #[test]
    fn metabox_nids_and_inos() {
        let mut b = golden();
        b[80..84].copy_from_slice(&ondisk::EROFS_FEATURE_INCOMPAT_METABOX.to_le_bytes());
        // A 128-byte superblock has no room for metabox_nid.
        assert_eq!(
            SbInfo::parse(&b, 12, crc32c).unwrap_err(),
            Corruption::MetaboxNid.into()
        );
        b[13] = 2; // sb_extslots
        b[128..136].copy_from_slice(&(1u64 << 63 | 5).to_le_bytes());
        assert_eq!(
            SbInfo::parse(&b, 12, crc32c).unwrap_err(),
            Corruption::MetaboxNid.into()
        );
        b[128..136].copy_from_slice(&41u64.to_le_bytes());
        let sbi = SbInfo::parse(&b, 12, crc32c).unwrap();
        assert_eq!(sbi.metabox_nid, 41);
        // Outside the metabox: past meta_blkaddr; inside: a slot of the metabox inode's data.
        assert_eq!(sbi.iloc(Nid(41)), Some(4096 + 41 * 32));
        assert_eq!(sbi.iloc(Nid(1 << 63 | 3)), Some(METABOX_POS | 96));
        assert_eq!(sbi.iloc(Nid(u64::MAX)), None);
        // erofs_nid_to_ino64: bits 31-62 up one, the metabox bit to bit 31.
        assert_eq!(sbi.nid_to_ino(1 << 63), 1 << 31);
        assert_eq!(sbi.nid_to_ino(1 << 63 | 1 << 31 | 7), 1 << 32 | 1 << 31 | 7);
        assert_eq!(sbi.nid_to_ino(1 << 30), 1 << 30);
        // Without a metabox, the nid is the ino, and a metabox nid has no place.
        let plain = SbInfo::parse(&golden(), 12, crc32c).unwrap();
        assert_eq!(plain.nid_to_ino(1 << 63 | 3), 1 << 63 | 3);
        assert_eq!(plain.iloc(Nid(1 << 63 | 3)), None);
    }
}
