// SPDX-License-Identifier: MIT OR GPL-2.0-only
//! Errors of the format core; the kernel maps each to one errno in `vfs/`.

/// Why an image was found corrupted: one variant per failed check.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Corruption {
    /// The superblock crc32c does not match.
    SuperblockChecksum {
        /// What the block hashes to.
        computed: u32,
        /// What the superblock says.
        expected: u32,
    },
    /// `sb_extslots` makes the superblock larger than its block.
    SuperblockExtslots(u32),
    /// The root nid is beyond the metadata it could address.
    RootNid(u64),
    /// `METABOX` with a superblock too short for `metabox_nid`, or a metabox inode that
    /// would itself live in the metabox.
    MetaboxNid,
    /// `ISHARE_XATTRS` naming a long prefix the table does not have.
    IshareXattrPrefixId(u8),
    /// A nid whose inode position overflows.
    InodeLocation(u64),
    /// A negative (as `loff_t`) `i_size`.
    NegativeSize(u64),
    /// An `i_mode` with no valid file type.
    BogusMode {
        /// The inode.
        nid: u64,
        /// Its mode.
        mode: u16,
    },
    /// A compressed inode in an image without compression.
    CompressedInPlainFs(u64),
    /// Inline tail data crosses its block.
    InlineDataAcrossBlocks(u64),
    /// A symlink size that is 0 or too long for a path.
    SymlinkSize {
        /// The inode.
        nid: u64,
        /// Its size.
        size: u64,
    },
    /// A chunk index or block address that overflows the device.
    ChunkAddress(u64),
    /// A data extent that ends outside the device or overflows.
    ExtentOutOfRange(u64),
    /// The first dirent's `nameoff` is 0, unaligned or past the block.
    DirentNameoff0 {
        /// The directory.
        nid: u64,
        /// The bad `nameoff`.
        nameoff: u16,
    },
    /// A dirent name that is empty, too long or past the block.
    BogusDirent(u64),
    /// A directory block with no dirents.
    EmptyDirBlock(u64),
    /// An xattr header, entry or shared id outside the xattr area (nid 0: the prefix table).
    BogusXattr(u64),
    /// A device table slot that cannot be read.
    DeviceSlot(u16),
    /// A compression configuration record too short for its algorithm (C: `EINVAL`).
    ComprCfgs {
        /// The algorithm (`Z_EROFS_COMPRESSION_*`).
        alg: u8,
        /// The record's size.
        size: u32,
    },
    /// An LZ4 `max_pclusterblks` larger than `Z_EROFS_PCLUSTER_MAX_SIZE` (C: `EINVAL`).
    Lz4Pclusterblks(u32),
    /// Big pcluster advice in an inode without the superblock feature.
    BigPclusterWithoutFeature(u64),
    /// Compact indexes whose big pcluster advice differs for HEAD1 and HEAD2.
    InconsistentBigPcluster(u64),
    /// A HEAD lcluster whose `clusterofs` is not inside the lcluster.
    BogusClusterofs(u64),
    /// A compact lcluster number past the index array (C: `EINVAL`).
    LclusterOutOfRange(u64),
    /// A lookback distance that leads nowhere.
    BogusLookback(u64),
    /// A compressed block count where none may be, or missing where one must be.
    BogusCblkcnt(u64),
    /// The inline (ztailpacking) pcluster crosses its block.
    InlinePclusterAcrossBlocks(u64),
    /// A pcluster of an algorithm the superblock does not declare.
    InconsistentAlgorithm(u64),
    /// A fully mapped extent with more encoded than decoded bytes, before EOF.
    TooMuchCompressedData(u64),
    /// An uncompressed pcluster shorter than its extent.
    NotEnoughPlainData(u64),
    /// A pcluster that ends past 48-bit block addresses or overflows.
    PclusterAddress(u64),
    /// Extent records whose logical starts are out of order.
    BogusExtent(u64),
    /// A pcluster of zeroes only, where compressed data must start (`z_erofs_fixup_insize`).
    CompressedDataStart(u64),
    /// A compressed stream that its decoder refused, or that ended (or stopped making
    /// progress) before its output was full: the decoder's reason, as C logs it ("corrupted
    /// compressed data", [`UNEXPECTED_END`](super::stream::UNEXPECTED_END), zstd's error
    /// names).
    Decode(&'static str),
}

impl Corruption {
    /// The C driver's wording of this failure (without the nid).
    pub fn reason(&self) -> &'static str {
        match self {
            Corruption::SuperblockChecksum { .. } => "invalid checksum",
            Corruption::SuperblockExtslots(_) => "invalid sb_extslots (more than a fs block)",
            Corruption::RootNid(_) => "invalid root nid",
            Corruption::MetaboxNid => "invalid metabox nid",
            Corruption::IshareXattrPrefixId(_) => "invalid ishare xattr prefix id",
            Corruption::InodeLocation(_) => "bogus inode location",
            Corruption::NegativeSize(_) => "negative i_size",
            Corruption::BogusMode { .. } => "bogus i_mode",
            Corruption::CompressedInPlainFs(_) => {
                "compressed inode is invalid in a plain filesystem"
            }
            Corruption::InlineDataAcrossBlocks(_) => "inline data across blocks",
            Corruption::SymlinkSize { .. } => "invalid symlink size",
            Corruption::ChunkAddress(_) => "invalid chunk address",
            Corruption::ExtentOutOfRange(_) => "extent beyond the device",
            Corruption::DirentNameoff0 { .. } => "invalid de[0].nameoff",
            Corruption::BogusDirent(_) => "bogus dirent",
            Corruption::EmptyDirBlock(_) => "corrupted dir block",
            Corruption::BogusXattr(_) => "bogus xattr",
            Corruption::DeviceSlot(_) => "invalid device table slot",
            Corruption::ComprCfgs { .. } => "invalid compression cfgs",
            Corruption::Lz4Pclusterblks(_) => "too large lz4 pclusterblks",
            Corruption::BigPclusterWithoutFeature(_) => "per-inode big pcluster without sb feature",
            Corruption::InconsistentBigPcluster(_) => {
                "big pcluster head1/2 of compact indexes should be consistent"
            }
            Corruption::BogusClusterofs(_) => "bogus clusterofs",
            Corruption::LclusterOutOfRange(_) => "lcluster index out of range",
            Corruption::BogusLookback(_) => "bogus lookback distance",
            Corruption::BogusCblkcnt(_) => "bogus CBLKCNT",
            Corruption::InlinePclusterAcrossBlocks(_) => "ztailpacking inline data across blocks",
            Corruption::InconsistentAlgorithm(_) => "inconsistent algorithmtype",
            Corruption::TooMuchCompressedData(_) => "too much compressed data",
            Corruption::NotEnoughPlainData(_) => "not enough plain data on disk",
            Corruption::PclusterAddress(_) => "pcluster beyond 48-bit block addresses",
            Corruption::BogusExtent(_) => "bogus extent record order",
            Corruption::CompressedDataStart(_) => "compressed data start not found",
            Corruption::Decode(why) => why,
        }
    }

    /// The nid this failure belongs to, when there is one.
    pub fn nid(&self) -> Option<u64> {
        match *self {
            Corruption::SuperblockChecksum { .. }
            | Corruption::SuperblockExtslots(_)
            | Corruption::MetaboxNid
            | Corruption::IshareXattrPrefixId(_)
            | Corruption::DeviceSlot(_)
            | Corruption::ComprCfgs { .. }
            | Corruption::Lz4Pclusterblks(_)
            | Corruption::Decode(_) => None,
            Corruption::RootNid(nid)
            | Corruption::InodeLocation(nid)
            | Corruption::NegativeSize(nid)
            | Corruption::BogusMode { nid, .. }
            | Corruption::CompressedInPlainFs(nid)
            | Corruption::InlineDataAcrossBlocks(nid)
            | Corruption::SymlinkSize { nid, .. }
            | Corruption::ChunkAddress(nid)
            | Corruption::ExtentOutOfRange(nid)
            | Corruption::DirentNameoff0 { nid, .. }
            | Corruption::BogusDirent(nid)
            | Corruption::EmptyDirBlock(nid)
            | Corruption::BogusXattr(nid)
            | Corruption::BigPclusterWithoutFeature(nid)
            | Corruption::InconsistentBigPcluster(nid)
            | Corruption::BogusClusterofs(nid)
            | Corruption::LclusterOutOfRange(nid)
            | Corruption::BogusLookback(nid)
            | Corruption::BogusCblkcnt(nid)
            | Corruption::InlinePclusterAcrossBlocks(nid)
            | Corruption::InconsistentAlgorithm(nid)
            | Corruption::TooMuchCompressedData(nid)
            | Corruption::NotEnoughPlainData(nid)
            | Corruption::PclusterAddress(nid)
            | Corruption::BogusExtent(nid)
            | Corruption::CompressedDataStart(nid) => Some(nid),
        }
    }
}

/// A feature of the image that this driver does not implement (yet).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Unsupported {
    /// Incompatible feature bits, named by `incompat_names`.
    IncompatFeatures(u32),
    /// A block size outside 512..=PAGE_SIZE.
    BlockSize(u8),
    /// `dirblkbits` other than 0.
    DirBlkBits(u8),
    /// Unknown `i_format` bits.
    InodeFormat {
        /// The inode.
        nid: u64,
        /// Its `i_format`.
        i_format: u16,
    },
    /// A data layout this driver does not read (unknown values; compressed ones where a flat
    /// layout is required, e.g. by `map::map_blocks`).
    DataLayout {
        /// The inode.
        nid: u64,
        /// Its layout.
        datalayout: u16,
    },
    /// Unknown chunk format bits.
    ChunkFormat {
        /// The inode.
        nid: u64,
        /// Its chunk format.
        chunkformat: u16,
    },
    /// Data on an extra device.
    ExtraDevice(u64),
    /// An xattr area of exactly one ibody header, which the format leaves undefined.
    XattrIbody(u64),
    /// `available_compr_algs` bits of algorithms unknown to Linux 7.3.
    Algorithms(u16),
    /// A compression algorithm number (`Z_EROFS_COMPRESSION_*`) unknown to Linux 7.3, in an
    /// inode's map header or extent records.
    Algorithm {
        /// The inode.
        nid: u64,
        /// The algorithm.
        alg: u8,
    },
    /// A compression configuration this driver does not handle: an unknown format, or a
    /// dictionary/window outside the supported range (C: `EINVAL` or `EOPNOTSUPP`).
    ComprCfgs {
        /// The algorithm (`Z_EROFS_COMPRESSION_*`).
        alg: u8,
    },
    /// Lcluster bits that compact indexes cannot express (C: `EINVAL`/`EOPNOTSUPP`).
    LclusterBits {
        /// The inode.
        nid: u64,
        /// `z_lclusterbits`.
        bits: u8,
    },
    /// A pcluster larger than `Z_EROFS_PCLUSTER_MAX_SIZE` or an extent larger than
    /// `Z_EROFS_PCLUSTER_MAX_DSIZE`.
    PclusterSize(u64),
    /// Uncompressed (shifted/interlaced) output longer than its pcluster.
    PlainOutput(u64),
}

/// The one error type of the core.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Error {
    /// The image is inconsistent (mostly `EFSCORRUPTED`: see [`Corruption::errno`]).
    Corrupted(Corruption),
    /// The image uses something not implemented (mostly `EOPNOTSUPP`: see
    /// [`Unsupported::errno`]).
    Unsupported(Unsupported),
    /// No EROFS superblock (`EINVAL`).
    NotErofs,
    /// A device too small for what its superblock says (`EINVAL`).
    BadGeometry,
    /// The backend failed with this (positive) errno, passed on unchanged; the core never
    /// makes one itself.
    Io(i32),
    /// A stream decoder's buffers that do not fit together (see
    /// [`Io::fits`](super::stream::Io::fits)), or a decoder that claims more bytes than it was
    /// given (`EINVAL`): the caller's mistake, not the image's.
    StreamLayout,
    /// A buffer of the caller's could not grow (`ENOMEM`), as the C decompressors' page
    /// allocations fail.
    NoMemory,
}

impl From<Corruption> for Error {
    fn from(c: Corruption) -> Self {
        Error::Corrupted(c)
    }
}

impl From<Unsupported> for Error {
    fn from(u: Unsupported) -> Self {
        Error::Unsupported(u)
    }
}

/// An errno by name: what the C driver returns for an error. The module and user-space tools
/// turn it into their own number, so the core holds none.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Errno {
    /// `EINVAL`: a superblock or configuration the C driver refuses to mount, an lcluster index
    /// out of range.
    Inval,
    /// `EFSCORRUPTED` (`EUCLEAN`): an inconsistent image.
    FsCorrupted,
    /// `EBADMSG`: a superblock checksum mismatch.
    BadMsg,
    /// `EOPNOTSUPP`: something the driver does not implement.
    OpNotSupp,
    /// `ENOMEM`: an allocation failed.
    NoMem,
    /// The backend's own errno (positive), passed on unchanged.
    Backend(i32),
}

impl Error {
    /// The errno the C driver (fs/erofs in Linux 7.3) returns for this error.
    pub fn errno(&self) -> Errno {
        match *self {
            Error::Corrupted(c) => c.errno(),
            Error::Unsupported(u) => u.errno(),
            Error::NotErofs | Error::BadGeometry | Error::StreamLayout => Errno::Inval,
            Error::Io(code) => Errno::Backend(code),
            Error::NoMemory => Errno::NoMem,
        }
    }
}

impl Corruption {
    /// The errno the C driver returns for this check: `EINVAL` where its check returns that
    /// (`erofs_read_superblock`'s sb_extslots, the decompressors' `config` hooks,
    /// `z_erofs_load_compact_lcluster`), `EBADMSG` for the checksum, `EFSCORRUPTED` otherwise.
    pub fn errno(&self) -> Errno {
        match self {
            Corruption::SuperblockChecksum { .. } => Errno::BadMsg,
            Corruption::SuperblockExtslots(_)
            | Corruption::ComprCfgs { .. }
            | Corruption::Lz4Pclusterblks(_)
            | Corruption::LclusterOutOfRange(_) => Errno::Inval,
            _ => Errno::FsCorrupted,
        }
    }
}

impl Unsupported {
    /// The errno the C driver returns: `EINVAL` for unknown incompatible features, block
    /// sizes, `dirblkbits`, LZMA/Zstandard configurations and lcluster bits over 14 (compact
    /// indexes), `EOPNOTSUPP` otherwise.
    pub fn errno(&self) -> Errno {
        match *self {
            Unsupported::IncompatFeatures(_)
            | Unsupported::BlockSize(_)
            | Unsupported::DirBlkBits(_) => Errno::Inval,
            Unsupported::ComprCfgs { alg } if alg != super::ondisk::Z_EROFS_COMPRESSION_DEFLATE => {
                Errno::Inval
            }
            Unsupported::LclusterBits { bits, .. } if bits > 14 => Errno::Inval,
            _ => Errno::OpNotSupp,
        }
    }
}

/// The core's result type.
pub type Result<T> = core::result::Result<T, Error>;

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn errnos_are_the_c_drivers() {
        let e = |e: Error| e.errno();
        assert_eq!(
            e(Corruption::SuperblockChecksum {
                computed: 1,
                expected: 2
            }
            .into()),
            Errno::BadMsg
        );
        assert_eq!(e(Corruption::SuperblockExtslots(4128).into()), Errno::Inval);
        assert_eq!(
            e(Corruption::ComprCfgs { alg: 1, size: 2 }.into()),
            Errno::Inval
        );
        assert_eq!(e(Corruption::Lz4Pclusterblks(257).into()), Errno::Inval);
        assert_eq!(e(Corruption::LclusterOutOfRange(7).into()), Errno::Inval);
        assert_eq!(e(Corruption::BogusDirent(7).into()), Errno::FsCorrupted);
        assert_eq!(
            e(Unsupported::IncompatFeatures(0x8000).into()),
            Errno::Inval
        );
        assert_eq!(e(Unsupported::Algorithms(0x30).into()), Errno::OpNotSupp);
        assert_eq!(e(Unsupported::ComprCfgs { alg: 1 }.into()), Errno::Inval);
        assert_eq!(
            e(Unsupported::ComprCfgs { alg: 2 }.into()),
            Errno::OpNotSupp
        );
        assert_eq!(
            e(Unsupported::LclusterBits { nid: 1, bits: 15 }.into()),
            Errno::Inval
        );
        assert_eq!(
            e(Unsupported::LclusterBits { nid: 1, bits: 13 }.into()),
            Errno::OpNotSupp
        );
        assert_eq!(e(Error::NotErofs), Errno::Inval);
        assert_eq!(e(Error::Io(5)), Errno::Backend(5));
        assert_eq!(e(Corruption::Decode("bad").into()), Errno::FsCorrupted);
        assert_eq!(e(Error::StreamLayout), Errno::Inval);
        assert_eq!(e(Error::NoMemory), Errno::NoMem);
    }
}
