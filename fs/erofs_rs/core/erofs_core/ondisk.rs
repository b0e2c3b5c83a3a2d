// SPDX-License-Identifier: MIT OR GPL-2.0-only
//! The EROFS on-disk format, definitions only. C counterpart: fs/erofs/erofs_fs.h.
//!
//! Every multi-byte field is little endian and may sit at any alignment in a block, so each
//! struct is `Unaligned` and parsed with `ref_from_prefix`/`read_from_prefix`.

use zerocopy::little_endian::{
    U16,
    U32,
    U64, //
};
use zerocopy_derive::{
    FromBytes,
    Immutable,
    KnownLayout,
    Unaligned, //
};

/// Byte offset of the superblock from the start of the primary device.
pub const EROFS_SUPER_OFFSET: u64 = 1024;
/// The superblock magic (`EROFS_SUPER_MAGIC_V1`).
pub const EROFS_SUPER_MAGIC_V1: u32 = 0xE0F5_E1E2;
/// Seed of the superblock crc32c.
pub const EROFS_SB_CHKSUM_SEED: u32 = 0x5045_B54A;
/// Size of one superblock extension slot.
pub const EROFS_SB_EXTSLOT_SIZE: u32 = 16;

/// The superblock carries a crc32c of the rest of its block.
pub const EROFS_FEATURE_COMPAT_SB_CHKSUM: u32 = 0x0000_0001;
/// Compact inodes carry their own mtime (relative to `epoch`).
pub const EROFS_FEATURE_COMPAT_MTIME: u32 = 0x0000_0002;
/// Inodes carry a bloom filter of their xattr names.
pub const EROFS_FEATURE_COMPAT_XATTR_FILTER: u32 = 0x0000_0004;
/// Shared xattrs live in the metabox inode.
pub const EROFS_FEATURE_COMPAT_SHARED_EA_IN_METABOX: u32 = 0x0000_0008;
/// Long xattr name prefixes are stored plainly on disk.
pub const EROFS_FEATURE_COMPAT_PLAIN_XATTR_PFX: u32 = 0x0000_0010;
/// Inodes carry page-cache-sharing fingerprints in xattrs.
pub const EROFS_FEATURE_COMPAT_ISHARE_XATTRS: u32 = 0x0000_0020;

/// Compressed data is padded with zeroes at the start of a pcluster.
pub const EROFS_FEATURE_INCOMPAT_LZ4_0PADDING: u32 = 0x0000_0001;
/// Per-algorithm compression configurations follow the superblock.
pub const EROFS_FEATURE_INCOMPAT_COMPR_CFGS: u32 = 0x0000_0002;
/// Pclusters larger than one block (shares the bit with `COMPR_CFGS`).
pub const EROFS_FEATURE_INCOMPAT_BIG_PCLUSTER: u32 = 0x0000_0002;
/// Chunk-based files.
pub const EROFS_FEATURE_INCOMPAT_CHUNKED_FILE: u32 = 0x0000_0004;
/// A table of extra devices.
pub const EROFS_FEATURE_INCOMPAT_DEVICE_TABLE: u32 = 0x0000_0008;
/// Two compression algorithms in one file (shares the bit with `DEVICE_TABLE`).
pub const EROFS_FEATURE_INCOMPAT_COMPR_HEAD2: u32 = 0x0000_0008;
/// Tail pclusters inline in the inode's metadata block.
pub const EROFS_FEATURE_INCOMPAT_ZTAILPACKING: u32 = 0x0000_0010;
/// Fragments in the packed inode.
pub const EROFS_FEATURE_INCOMPAT_FRAGMENTS: u32 = 0x0000_0020;
/// Deduplicated pclusters (shares the bit with `FRAGMENTS`).
pub const EROFS_FEATURE_INCOMPAT_DEDUPE: u32 = 0x0000_0020;
/// Long xattr name prefixes.
pub const EROFS_FEATURE_INCOMPAT_XATTR_PREFIXES: u32 = 0x0000_0040;
/// 48-bit block addresses.
pub const EROFS_FEATURE_INCOMPAT_48BIT: u32 = 0x0000_0080;
/// Metadata compressed in a metabox inode.
pub const EROFS_FEATURE_INCOMPAT_METABOX: u32 = 0x0000_0100;
/// Every incompatible feature Linux 7.3 knows of.
pub const EROFS_ALL_FEATURE_INCOMPAT: u32 = (EROFS_FEATURE_INCOMPAT_METABOX << 1) - 1;

/// The on-disk superblock, 144 bytes at `EROFS_SUPER_OFFSET`.
///
/// Only the first 128 bytes are meaningful when `sb_extslots` is 0; the rest are zero then.
#[doc(alias = "erofs_super_block")]
#[repr(C)]
#[derive(FromBytes, Immutable, KnownLayout, Unaligned)]
pub struct SuperBlock {
    /// `EROFS_SUPER_MAGIC_V1`.
    pub magic: U32,
    /// crc32c of the rest of the superblock's block, valid with `COMPAT_SB_CHKSUM`.
    pub checksum: U32,
    /// Compatible feature bits.
    pub feature_compat: U32,
    /// log2 of the block size, 9..=PAGE_SHIFT.
    pub blkszbits: u8,
    /// The superblock is `128 + 16 * sb_extslots` bytes.
    pub sb_extslots: u8,
    /// Root nid (`rootnid_2b`), or the block count's bits 32..48 with `48BIT` and `rootnid_8b`.
    pub rb: U16,
    /// Number of inodes.
    pub inos: U64,
    /// Base seconds of compact inodes' mtimes.
    pub epoch: U64,
    /// Nanoseconds of compact inodes' mtimes.
    pub fixed_nsec: U32,
    /// Block count, bits 0..32.
    pub blocks_lo: U32,
    /// First block of the metadata area (inodes).
    pub meta_blkaddr: U32,
    /// First block of the shared xattr area.
    pub xattr_blkaddr: U32,
    /// Volume uuid.
    pub uuid: [u8; 16],
    /// Volume label, NUL-padded.
    pub volume_name: [u8; 16],
    /// Incompatible feature bits.
    pub feature_incompat: U32,
    /// `available_compr_algs` bitmap with `COMPR_CFGS`, else `lz4_max_distance`.
    pub u1: U16,
    /// Number of devices besides the primary one.
    pub extra_devices: U16,
    /// Device table position in 128-byte slots.
    pub devt_slotoff: U16,
    /// Must be 0.
    pub dirblkbits: u8,
    /// Number of long xattr name prefixes.
    pub xattr_prefix_count: u8,
    /// Start of the long xattr name prefixes.
    pub xattr_prefix_start: U32,
    /// Nid of the packed inode (fragments, long xattr prefixes).
    pub packed_nid: U64,
    /// Reserved for the xattr name filter.
    pub xattr_filter_reserved: u8,
    /// Prefix id of page-cache-sharing xattrs.
    pub ishare_xattr_prefix_id: u8,
    /// Reserved.
    pub reserved: [u8; 2],
    /// Seconds added to `epoch` for the mkfs time.
    pub build_time: U32,
    /// Root nid with `48BIT`, if not 0.
    pub rootnid_8b: U64,
    /// Reserved.
    pub reserved2: U64,
    /// Nid of the metabox inode with `METABOX`.
    pub metabox_nid: U64,
    /// Reserved.
    pub reserved3: U64,
}

/// Size of one device table slot.
pub const EROFS_DEVT_SLOT_SIZE: u64 = 128;

/// One slot of the device table, 128 bytes at `devt_slotoff * 128`.
#[doc(alias = "erofs_deviceslot")]
#[repr(C)]
#[derive(FromBytes, Immutable, KnownLayout, Unaligned)]
pub struct DeviceSlot {
    /// A tag naming the device (a path or digest), NUL-padded.
    pub tag: [u8; 64],
    /// Blocks of the device, bits 0..32.
    pub blocks_lo: U32,
    /// First block of the device in the unified address space, bits 0..32.
    pub uniaddr_lo: U32,
    /// Blocks, bits 32..48 (with `48BIT`).
    pub blocks_hi: U16,
    /// Unified first block, bits 32..48 (with `48BIT`).
    pub uniaddr_hi: U16,
    /// Reserved.
    pub reserved: [u8; 52],
}

/// `i_format` bit 0: the inode is extended (64 bytes).
pub const EROFS_I_VERSION_MASK: u16 = 0x01;
/// `i_format` bits 1..4: the data layout.
pub const EROFS_I_DATALAYOUT_MASK: u16 = 0x07;
/// Bit position of the version in `i_format`.
pub const EROFS_I_VERSION_BIT: u16 = 0;
/// Bit position of the data layout in `i_format`.
pub const EROFS_I_DATALAYOUT_BIT: u16 = 1;
/// Non-directory compact inodes: nlink is 1 and `i_nb` holds `startblk_hi`.
pub const EROFS_I_NLINK_1_BIT: u16 = 4;
/// Directories: the "." dirent is omitted.
pub const EROFS_I_DOT_OMITTED_BIT: u16 = 4;
/// Every known `i_format` bit.
pub const EROFS_I_ALL: u16 = (1 << (EROFS_I_NLINK_1_BIT + 1)) - 1;

/// Data layout: contiguous blocks from `startblk`.
pub const EROFS_INODE_FLAT_PLAIN: u16 = 0;
/// Data layout: compressed with full (8-byte) lcluster indexes.
pub const EROFS_INODE_COMPRESSED_FULL: u16 = 1;
/// Data layout: contiguous blocks plus a tail inline after the inode.
pub const EROFS_INODE_FLAT_INLINE: u16 = 2;
/// Data layout: compressed with compact lcluster indexes.
pub const EROFS_INODE_COMPRESSED_COMPACT: u16 = 3;
/// Data layout: chunk-based.
pub const EROFS_INODE_CHUNK_BASED: u16 = 4;

/// Chunk format: log2 of blocks per chunk.
pub const EROFS_CHUNK_FORMAT_BLKBITS_MASK: u16 = 0x001F;
/// Chunk format: 8-byte chunk indexes instead of a 4-byte block map.
pub const EROFS_CHUNK_FORMAT_INDEXES: u16 = 0x0020;
/// Chunk format: 48-bit chunk addresses.
pub const EROFS_CHUNK_FORMAT_48BIT: u16 = 0x0040;
/// Every known chunk format bit.
pub const EROFS_CHUNK_FORMAT_ALL: u16 = (EROFS_CHUNK_FORMAT_48BIT << 1) - 1;

/// A hole in a block map or chunk index (`EROFS_NULL_ADDR`, all ones).
pub const EROFS_NULL_ADDR: u64 = u64::MAX;
/// Size of one block map entry.
pub const EROFS_BLOCK_MAP_ENTRY_SIZE: u64 = 4;

/// The 32-byte compact inode.
#[doc(alias = "erofs_inode_compact")]
#[repr(C)]
#[derive(FromBytes, Immutable, KnownLayout, Unaligned)]
pub struct InodeCompact {
    /// Version, data layout and flag bits.
    pub i_format: U16,
    /// Inline xattr size in 4-byte units (see `xattr_ibody_size`).
    pub i_xattr_icount: U16,
    /// File type and permissions.
    pub i_mode: U16,
    /// `nlink`, or `startblk_hi`/`blocks_hi` with `EROFS_I_NLINK_1_BIT`.
    pub i_nb: U16,
    /// File size.
    pub i_size: U32,
    /// mtime relative to the superblock's `epoch`.
    pub i_mtime: U32,
    /// `startblk_lo`, `blocks_lo`, `rdev` or chunk format, by layout and type.
    pub i_u: U32,
    /// Inode number for 32-bit stat.
    pub i_ino: U32,
    /// Owner.
    pub i_uid: U16,
    /// Group.
    pub i_gid: U16,
    /// Reserved.
    pub i_reserved: U32,
}

/// The 64-byte extended inode.
#[doc(alias = "erofs_inode_extended")]
#[repr(C)]
#[derive(FromBytes, Immutable, KnownLayout, Unaligned)]
pub struct InodeExtended {
    /// Version, data layout and flag bits.
    pub i_format: U16,
    /// Inline xattr size in 4-byte units.
    pub i_xattr_icount: U16,
    /// File type and permissions.
    pub i_mode: U16,
    /// `startblk_hi` or `blocks_hi`.
    pub i_nb: U16,
    /// File size.
    pub i_size: U64,
    /// `startblk_lo`, `blocks_lo`, `rdev` or chunk format.
    pub i_u: U32,
    /// Inode number for 32-bit stat.
    pub i_ino: U32,
    /// Owner.
    pub i_uid: U32,
    /// Group.
    pub i_gid: U32,
    /// mtime seconds.
    pub i_mtime: U64,
    /// mtime nanoseconds.
    pub i_mtime_nsec: U32,
    /// Link count.
    pub i_nlink: U32,
    /// Reserved.
    pub i_reserved2: [u8; 16],
}

/// The 8-byte chunk index of chunk-based files with `EROFS_CHUNK_FORMAT_INDEXES`.
#[doc(alias = "erofs_inode_chunk_index")]
#[repr(C)]
#[derive(FromBytes, Immutable, KnownLayout, Unaligned)]
pub struct ChunkIndex {
    /// Start block, bits 32..48.
    pub startblk_hi: U16,
    /// Device id (masked by the number of devices).
    pub device_id: U16,
    /// Start block, bits 0..32.
    pub startblk_lo: U32,
}

/// Size of the xattr ibody header.
pub const XATTR_IBODY_HEADER_SIZE: u32 = 12;

/// Dirent nid bit that says the inode lives in the metabox.
pub const EROFS_DIRENT_NID_METABOX_BIT: u32 = 63;

/// The 12-byte directory entry; names follow the entry array in the same block.
#[doc(alias = "erofs_dirent")]
#[repr(C)]
#[derive(FromBytes, Immutable, KnownLayout, Unaligned)]
pub struct Dirent {
    /// Inode nid.
    pub nid: U64,
    /// Offset of the name in the block.
    pub nameoff: U16,
    /// `FT_*` file type.
    pub file_type: u8,
    /// Reserved.
    pub reserved: u8,
}

/// Longest name.
pub const EROFS_NAME_LEN: usize = 255;

/// `FT_*` file types, as dirents store them.
pub mod ft {
    /// Unknown.
    pub const UNKNOWN: u8 = 0;
    /// Regular file.
    pub const REG_FILE: u8 = 1;
    /// Directory.
    pub const DIR: u8 = 2;
    /// Character device.
    pub const CHRDEV: u8 = 3;
    /// Block device.
    pub const BLKDEV: u8 = 4;
    /// Fifo.
    pub const FIFO: u8 = 5;
    /// Socket.
    pub const SOCK: u8 = 6;
    /// Symlink.
    pub const SYMLINK: u8 = 7;
}

/// Mode bits (`S_IF*`), which the format stores as Linux does.
pub mod mode {
    /// File type mask.
    pub const S_IFMT: u16 = 0o170000;
    /// Socket.
    pub const S_IFSOCK: u16 = 0o140000;
    /// Symlink.
    pub const S_IFLNK: u16 = 0o120000;
    /// Regular file.
    pub const S_IFREG: u16 = 0o100000;
    /// Block device.
    pub const S_IFBLK: u16 = 0o060000;
    /// Directory.
    pub const S_IFDIR: u16 = 0o040000;
    /// Character device.
    pub const S_IFCHR: u16 = 0o020000;
    /// Fifo.
    pub const S_IFIFO: u16 = 0o010000;
}

/// Largest encoded size of one pcluster.
pub const Z_EROFS_PCLUSTER_MAX_SIZE: u64 = 1024 * 1024;
/// Largest decoded size of one pcluster.
pub const Z_EROFS_PCLUSTER_MAX_DSIZE: u64 = 12 * 1024 * 1024;

/// Compression algorithm: LZ4 (`h_algorithmtype` value and `available_compr_algs` bit).
pub const Z_EROFS_COMPRESSION_LZ4: u8 = 0;
/// Compression algorithm: MicroLZMA.
pub const Z_EROFS_COMPRESSION_LZMA: u8 = 1;
/// Compression algorithm: raw DEFLATE.
pub const Z_EROFS_COMPRESSION_DEFLATE: u8 = 2;
/// Compression algorithm: Zstandard.
pub const Z_EROFS_COMPRESSION_ZSTD: u8 = 3;
/// Number of on-disk compression algorithms.
pub const Z_EROFS_COMPRESSION_MAX: u8 = 4;
/// Every on-disk compression algorithm, as an `available_compr_algs` mask.
pub const Z_EROFS_ALL_COMPR_ALGS: u16 = (1 << Z_EROFS_COMPRESSION_MAX) - 1;
/// Runtime format (not on disk): uncompressed data, shifted to the extent start.
pub const Z_EROFS_COMPRESSION_SHIFTED: u8 = Z_EROFS_COMPRESSION_MAX;
/// Runtime format (not on disk): uncompressed data, interlaced (rotated by the in-block offset).
pub const Z_EROFS_COMPRESSION_INTERLACED: u8 = Z_EROFS_COMPRESSION_MAX + 1;

/// The compression formats: `z_erofs_*` definitions of erofs_fs.h.
pub mod z {
    use zerocopy::little_endian::{
        U16,
        U32, //
    };
    use zerocopy_derive::{
        FromBytes,
        Immutable,
        KnownLayout,
        Unaligned, //
    };

    /// LZ4 configuration, 14 bytes after its 2-byte length, with `COMPR_CFGS`.
    #[doc(alias = "z_erofs_lz4_cfgs")]
    #[repr(C)]
    #[derive(FromBytes, Immutable, KnownLayout, Unaligned)]
    pub struct Lz4Cfgs {
        /// The largest match distance the compressor used.
        pub max_distance: U16,
        /// The largest LZ4 pcluster in blocks (0: 1).
        pub max_pclusterblks: U16,
        /// Reserved.
        pub reserved: [u8; 10],
    }

    /// MicroLZMA configuration, 14 bytes after its 2-byte length.
    #[doc(alias = "z_erofs_lzma_cfgs")]
    #[repr(C)]
    #[derive(FromBytes, Immutable, KnownLayout, Unaligned)]
    pub struct LzmaCfgs {
        /// Dictionary size in bytes, 4096..=`Z_EROFS_LZMA_MAX_DICT_SIZE`.
        pub dict_size: U32,
        /// Format; only 0 is defined.
        pub format: U16,
        /// Reserved.
        pub reserved: [u8; 8],
    }

    /// Largest MicroLZMA dictionary.
    pub const Z_EROFS_LZMA_MAX_DICT_SIZE: u32 = 8 * 1024 * 1024;

    /// DEFLATE configuration, 6 bytes after its 2-byte length.
    #[doc(alias = "z_erofs_deflate_cfgs")]
    #[repr(C)]
    #[derive(FromBytes, Immutable, KnownLayout, Unaligned)]
    pub struct DeflateCfgs {
        /// log2 of the window, 8..=15.
        pub windowbits: u8,
        /// Reserved.
        pub reserved: [u8; 5],
    }

    /// Zstandard configuration, 6 bytes after its 2-byte length.
    #[doc(alias = "z_erofs_zstd_cfgs")]
    #[repr(C)]
    #[derive(FromBytes, Immutable, KnownLayout, Unaligned)]
    pub struct ZstdCfgs {
        /// Format; only 0 is defined.
        pub format: u8,
        /// `windowLog - 10` (`ZSTD_WINDOWLOG_ABSOLUTEMIN`).
        pub windowlog: u8,
        /// Reserved.
        pub reserved: [u8; 4],
    }

    /// Largest Zstandard window.
    pub const Z_EROFS_ZSTD_MAX_DICT_SIZE: u32 = 1024 * 1024;

    /// Compact inodes: 2-byte lcluster indexes in the middle of the index area.
    pub const Z_EROFS_ADVISE_COMPACTED_2B: u16 = 0x0001;
    /// Full inodes: the indexes are encoded extents (same bit as `COMPACTED_2B`).
    pub const Z_EROFS_ADVISE_EXTENTS: u16 = 0x0001;
    /// HEAD1 pclusters may be larger than one lcluster.
    pub const Z_EROFS_ADVISE_BIG_PCLUSTER_1: u16 = 0x0002;
    /// HEAD2 and PLAIN pclusters may be larger than one lcluster.
    pub const Z_EROFS_ADVISE_BIG_PCLUSTER_2: u16 = 0x0004;
    /// The tail pcluster is inline after the indexes (ztailpacking).
    pub const Z_EROFS_ADVISE_INLINE_PCLUSTER: u16 = 0x0008;
    /// Uncompressed pclusters are interlaced.
    pub const Z_EROFS_ADVISE_INTERLACED_PCLUSTER: u16 = 0x0010;
    /// The tail extent is a fragment of the packed inode.
    pub const Z_EROFS_ADVISE_FRAGMENT_PCLUSTER: u16 = 0x0020;
    /// Bit position of the extent record size in `h_advise` (with `EXTENTS`).
    pub const Z_EROFS_ADVISE_EXTRECSZ_BIT: u16 = 1;
    /// Mask of the extent record size: records are `4 << value` bytes.
    pub const Z_EROFS_ADVISE_EXTRECSZ_MASK: u16 = 0x3;

    /// Bit of `h_clusterbits` that says the whole file is a fragment of the packed inode.
    pub const Z_EROFS_FRAGMENT_INODE_BIT: u8 = 7;

    /// The 8-byte map header, 8-byte aligned after the inode and its xattrs.
    ///
    /// The first word is `h_fragmentoff` (with `FRAGMENT_PCLUSTER`), or `h_reserved1` plus
    /// `h_idata_size` (with `INLINE_PCLUSTER`), or `h_extents_lo` (with `EXTENTS`); the last
    /// two bytes are `h_algorithmtype`/`h_clusterbits`, or `h_extents_hi` with `EXTENTS`.
    /// With bit 7 of `h_clusterbits` set, the whole header is instead the fragment offset
    /// (bits 0..63) of a file stored entirely in the packed inode.
    #[doc(alias = "z_erofs_map_header")]
    #[repr(C)]
    #[derive(FromBytes, Immutable, KnownLayout, Unaligned)]
    pub struct MapHeader {
        /// `h_fragmentoff`, `h_reserved1 | h_idata_size << 16` or `h_extents_lo`.
        pub h_fragmentoff: U32,
        /// `Z_EROFS_ADVISE_*` bits.
        pub h_advise: U16,
        /// Bits 0..4: HEAD1 algorithm; bits 4..8: HEAD2 algorithm (low byte of `h_extents_hi`).
        pub h_algorithmtype: u8,
        /// Bits 0..4: lcluster bits minus `blkszbits`; bit 7: whole-file fragment.
        pub h_clusterbits: u8,
    }

    impl MapHeader {
        /// `h_idata_size`: the encoded size of the inline tail pcluster.
        pub fn h_idata_size(&self) -> u16 {
            // The high half of the first word.
            u16::try_from(self.h_fragmentoff.get() >> 16).unwrap_or(u16::MAX)
        }

        /// `h_extents_hi`: bits 32..48 of the extent count.
        pub fn h_extents_hi(&self) -> u16 {
            u16::from_le_bytes([self.h_algorithmtype, self.h_clusterbits])
        }
    }

    /// Lcluster type: an uncompressed pcluster starts in this lcluster.
    pub const Z_EROFS_LCLUSTER_TYPE_PLAIN: u8 = 0;
    /// Lcluster type: a pcluster of the HEAD1 algorithm starts in this lcluster.
    pub const Z_EROFS_LCLUSTER_TYPE_HEAD1: u8 = 1;
    /// Lcluster type: the lcluster continues the extent of an earlier head.
    pub const Z_EROFS_LCLUSTER_TYPE_NONHEAD: u8 = 2;
    /// Lcluster type: a pcluster of the HEAD2 algorithm starts in this lcluster.
    pub const Z_EROFS_LCLUSTER_TYPE_HEAD2: u8 = 3;
    /// Number of lcluster types.
    pub const Z_EROFS_LCLUSTER_TYPE_MAX: u8 = 4;
    /// Mask of the type in `di_advise`.
    pub const Z_EROFS_LI_LCLUSTER_TYPE_MASK: u16 = 3;
    /// Full indexes, HEAD: the pcluster refers to part of its decompressed data.
    pub const Z_EROFS_LI_PARTIAL_REF: u16 = 1 << 15;
    /// Full indexes, HEAD: the extent is a hole.
    pub const Z_EROFS_LI_HOLE: u16 = 1 << 14;
    /// First NONHEAD of a big pcluster: `delta[0]` holds the compressed block count.
    pub const Z_EROFS_LI_D0_CBLKCNT: u16 = 1 << 11;

    /// The 8-byte full lcluster index of `EROFS_INODE_COMPRESSED_FULL`.
    #[doc(alias = "z_erofs_lcluster_index")]
    #[repr(C)]
    #[derive(FromBytes, Immutable, KnownLayout, Unaligned)]
    pub struct LclusterIndex {
        /// Type and `Z_EROFS_LI_*` flags.
        pub di_advise: U16,
        /// HEAD: where the extent starts in this lcluster.
        pub di_clusterofs: U16,
        /// HEAD: `blkaddr` of the pcluster; NONHEAD: `delta[0]` (distance back to the head,
        /// or a block count with `D0_CBLKCNT`) in the low half and `delta[1]` (distance to
        /// the next head) in the high half.
        pub di_u: U32,
    }

    impl LclusterIndex {
        /// `delta[0]` or `delta[1]` of a NONHEAD index.
        pub fn delta(&self, i: usize) -> u16 {
            let v = self.di_u.get();
            let half = if i == 0 { v } else { v >> 16 };
            u16::try_from(half & 0xffff).unwrap_or(u16::MAX)
        }
    }

    /// Extent records: the `plen` bit that marks a partial reference.
    pub const Z_EROFS_EXTENT_PLEN_PARTIAL: u32 = 1 << 27;
    /// Extent records: the bit position of the format (algorithm + 1; 0 is uncompressed).
    pub const Z_EROFS_EXTENT_PLEN_FMT_BIT: u32 = 28;
    /// Extent records: the mask of the encoded length in `plen`.
    pub const Z_EROFS_EXTENT_PLEN_MASK: u32 = ((1024 * 1024) << 1) - 1;

    /// One encoded extent record (with `EXTENTS`), of which only the first
    /// `4 << EXTRECSZ` bytes are stored.
    #[doc(alias = "z_erofs_extent")]
    #[repr(C)]
    #[derive(FromBytes, Immutable, KnownLayout, Unaligned)]
    pub struct Extent {
        /// Encoded length, partial-reference bit and format.
        pub plen: U32,
        /// Physical byte position (bits 0..32).
        pub pstart_lo: U32,
        /// Physical byte position (bits 32..64).
        pub pstart_hi: U32,
        /// Logical start (bits 0..32).
        pub lstart_lo: U32,
        /// Logical start (bits 32..64), in 32-byte records.
        pub lstart_hi: U32,
        /// Reserved.
        pub reserved: [u8; 12],
    }

    const _: () = assert!(core::mem::size_of::<Lz4Cfgs>() == 14);
    const _: () = assert!(core::mem::size_of::<LzmaCfgs>() == 14);
    const _: () = assert!(core::mem::size_of::<DeflateCfgs>() == 6);
    const _: () = assert!(core::mem::size_of::<ZstdCfgs>() == 6);
    const _: () = assert!(core::mem::size_of::<MapHeader>() == 8);
    const _: () = assert!(core::mem::size_of::<LclusterIndex>() == 8);
    const _: () = assert!(core::mem::size_of::<Extent>() == 32);
}

const _: () = assert!(core::mem::size_of::<SuperBlock>() == 144);
const _: () = assert!(core::mem::size_of::<InodeCompact>() == 32);
const _: () = assert!(core::mem::size_of::<InodeExtended>() == 64);
const _: () = assert!(core::mem::size_of::<ChunkIndex>() == 8);
const _: () = assert!(core::mem::size_of::<Dirent>() == 12);
const _: () = assert!(core::mem::size_of::<DeviceSlot>() == 128);

#[cfg(test)]
mod tests {
    use super::*;
    use core::mem::offset_of;

    #[test]
    fn superblock_offsets_match_erofs_fs_h() {
        assert_eq!(offset_of!(SuperBlock, blkszbits), 12);
        assert_eq!(offset_of!(SuperBlock, inos), 16);
        assert_eq!(offset_of!(SuperBlock, meta_blkaddr), 40);
        assert_eq!(offset_of!(SuperBlock, uuid), 48);
        assert_eq!(offset_of!(SuperBlock, feature_incompat), 80);
        assert_eq!(offset_of!(SuperBlock, packed_nid), 96);
        assert_eq!(offset_of!(SuperBlock, build_time), 108);
        assert_eq!(offset_of!(SuperBlock, rootnid_8b), 112);
        assert_eq!(offset_of!(SuperBlock, metabox_nid), 128);
    }

    #[test]
    fn inode_offsets_match_erofs_fs_h() {
        assert_eq!(offset_of!(InodeCompact, i_u), 16);
        assert_eq!(offset_of!(InodeCompact, i_uid), 24);
        assert_eq!(offset_of!(InodeExtended, i_u), 16);
        assert_eq!(offset_of!(InodeExtended, i_mtime), 32);
        assert_eq!(offset_of!(InodeExtended, i_nlink), 44);
    }

    #[test]
    fn z_offsets_match_erofs_fs_h() {
        assert_eq!(offset_of!(z::MapHeader, h_advise), 4);
        assert_eq!(offset_of!(z::MapHeader, h_clusterbits), 7);
        assert_eq!(offset_of!(z::LclusterIndex, di_u), 4);
        assert_eq!(offset_of!(z::Extent, pstart_lo), 4);
        assert_eq!(offset_of!(z::Extent, pstart_hi), 8);
        assert_eq!(offset_of!(z::Extent, lstart_lo), 12);
        assert_eq!(offset_of!(z::Extent, lstart_hi), 16);
        assert_eq!(offset_of!(z::ZstdCfgs, windowlog), 1);
    }
}
