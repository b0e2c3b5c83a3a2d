// SPDX-License-Identifier: MIT OR GPL-2.0-only
//! On-disk inode parsing. C counterpart: fs/erofs/inode.c (`erofs_read_inode`).

use crate::erofs_core::{
    ondisk::{
        self,
        mode,
        InodeCompact,
        InodeExtended, //
    },
    sb::SbInfo,
    Corruption,
    MetaRead,
    Nid,
    Result,
    Unsupported, //
};
use zerocopy::FromBytes;

/// How an inode's data is laid out.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum DataLayout {
    /// `EROFS_INODE_FLAT_PLAIN`: contiguous blocks.
    FlatPlain,
    /// `EROFS_INODE_FLAT_INLINE`: contiguous blocks plus an inline tail.
    FlatInline,
    /// `EROFS_INODE_CHUNK_BASED`: a block map or chunk indexes.
    ChunkBased,
    /// `EROFS_INODE_COMPRESSED_FULL`: compressed, with full lcluster indexes or encoded
    /// extents (see [`zmap`](crate::erofs_core::zmap)).
    CompressedFull,
    /// `EROFS_INODE_COMPRESSED_COMPACT`: compressed, with compact lcluster indexes.
    CompressedCompact,
}

/// Size of the inline xattr area from `i_xattr_icount` (`erofs_xattr_ibody_size`).
pub fn xattr_ibody_size(i_xattr_icount: u16) -> u32 {
    if i_xattr_icount == 0 {
        return 0;
    }
    // At most 12 + 4 * 65534: saturation never happens.
    ondisk::XATTR_IBODY_HEADER_SIZE
        .saturating_add(4u32.saturating_mul(u32::from(i_xattr_icount).saturating_sub(1)))
}

/// The in-memory inode: everything the driver needs, decoded and checked once.
#[doc(alias = "erofs_inode")]
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct InodeInfo {
    /// The inode's nid.
    pub nid: Nid,
    /// Data layout.
    pub datalayout: DataLayout,
    /// 32 or 64.
    pub inode_isize: u8,
    /// Bytes of inline xattrs after the inode.
    pub xattr_isize: u32,
    /// Type and permissions.
    pub mode: u16,
    /// Owner.
    pub uid: u32,
    /// Group.
    pub gid: u32,
    /// Link count.
    pub nlink: u32,
    /// Size in bytes (at most `i64::MAX`).
    pub size: u64,
    /// mtime seconds.
    pub mtime: i64,
    /// mtime nanoseconds.
    pub mtime_nsec: u32,
    /// First data block of flat layouts, or `EROFS_NULL_ADDR`.
    pub startblk: u64,
    /// Device number of device nodes (`new_encode_dev` form).
    pub rdev: u32,
    /// Chunk format of chunk-based inodes.
    pub chunkformat: u16,
    /// log2 of the chunk size in bytes.
    pub chunkbits: u8,
    /// The directory omits its "." dirent.
    pub dot_omitted: bool,
    /// `i_blocks` in 512-byte units.
    pub blocks_512: u64,
}

impl InodeInfo {
    /// The file type bits of the mode.
    pub fn file_type(&self) -> u16 {
        self.mode & mode::S_IFMT
    }

    /// Whether this is a directory.
    pub fn is_dir(&self) -> bool {
        self.file_type() == mode::S_IFDIR
    }

    /// Whether the data is compressed (`erofs_inode_is_data_compressed`); map it with
    /// [`zmap::map_blocks`](crate::erofs_core::zmap::map_blocks).
    pub fn is_compressed(&self) -> bool {
        matches!(
            self.datalayout,
            DataLayout::CompressedFull | DataLayout::CompressedCompact
        )
    }

    /// Whether this is a symlink.
    pub fn is_symlink(&self) -> bool {
        self.file_type() == mode::S_IFLNK
    }

    /// Where the inode's payload (inline data or chunk indexes) starts: after the inode and
    /// its inline xattrs.
    pub fn payload_pos(&self, sbi: &SbInfo) -> Option<u64> {
        sbi.iloc(self.nid)?
            .checked_add(u64::from(self.inode_isize))?
            .checked_add(u64::from(self.xattr_isize))
    }

    /// Number of blocks the data spans (`erofs_iblks`).
    pub fn iblks(&self, sbi: &SbInfo) -> u64 {
        self.size.div_ceil(sbi.blksz())
    }
}

/// Reads and checks the inode `nid` (`erofs_read_inode`).
///
/// # Errors
///
/// [`Error::Unsupported`](crate::erofs_core::Error::Unsupported) for layouts and formats this
/// driver does not read, [`Error::Corrupted`](crate::erofs_core::Error::Corrupted) for
/// inconsistent inodes, and the backend's errors.
pub fn read_inode(sbi: &SbInfo, meta: &impl MetaRead, nid: Nid) -> Result<InodeInfo> {
    let iloc = sbi.iloc(nid).ok_or(Corruption::InodeLocation(nid.0))?;
    let mut raw = [0u8; 64];
    let (compact, rest) = raw.split_at_mut(32);
    meta.read_meta(iloc, compact)?;
    let (dic, _) =
        InodeCompact::ref_from_prefix(compact).map_err(|_| Corruption::InodeLocation(nid.0))?;
    let ifmt = dic.i_format.get();
    if ifmt & !ondisk::EROFS_I_ALL != 0 {
        return Err(Unsupported::InodeFormat {
            nid: nid.0,
            i_format: ifmt,
        }
        .into());
    }
    let raw_layout = (ifmt >> ondisk::EROFS_I_DATALAYOUT_BIT) & ondisk::EROFS_I_DATALAYOUT_MASK;
    let extended = (ifmt >> ondisk::EROFS_I_VERSION_BIT) & ondisk::EROFS_I_VERSION_MASK != 0;

    let mut vi = InodeInfo {
        nid,
        datalayout: DataLayout::FlatPlain,
        inode_isize: 32,
        xattr_isize: 0,
        mode: 0,
        uid: 0,
        gid: 0,
        nlink: 0,
        size: 0,
        mtime: 0,
        mtime_nsec: 0,
        startblk: 0,
        rdev: 0,
        chunkformat: 0,
        chunkbits: 0,
        dot_omitted: false,
        blocks_512: 0,
    };
    // `i_u` and `i_nb` as the layout-independent union values; `addrmask` bounds `startblk`.
    let (i_u, i_nb, addrmask);
    if extended {
        let pos = iloc
            .checked_add(32)
            .ok_or(Corruption::InodeLocation(nid.0))?;
        meta.read_meta(pos, rest)?;
        let (die, _) = InodeExtended::ref_from_prefix(&raw[..])
            .map_err(|_| Corruption::InodeLocation(nid.0))?;
        vi.inode_isize = 64;
        vi.xattr_isize = xattr_ibody_size(die.i_xattr_icount.get());
        vi.mode = die.i_mode.get();
        vi.uid = die.i_uid.get();
        vi.gid = die.i_gid.get();
        vi.nlink = die.i_nlink.get();
        vi.mtime = i64::from_ne_bytes(die.i_mtime.get().to_ne_bytes());
        vi.mtime_nsec = die.i_mtime_nsec.get();
        vi.size = die.i_size.get();
        i_u = die.i_u.get();
        i_nb = die.i_nb.get();
        addrmask = (1u64 << 48) - 1;
    } else {
        vi.xattr_isize = xattr_ibody_size(dic.i_xattr_icount.get());
        vi.mode = dic.i_mode.get();
        vi.uid = u32::from(dic.i_uid.get());
        vi.gid = u32::from(dic.i_gid.get());
        i_u = dic.i_u.get();
        if vi.mode & mode::S_IFMT != mode::S_IFDIR && (ifmt >> ondisk::EROFS_I_NLINK_1_BIT) & 1 != 0
        {
            vi.nlink = 1;
            i_nb = dic.i_nb.get();
            addrmask = (1u64 << 48) - 1;
        } else {
            vi.nlink = u32::from(dic.i_nb.get());
            i_nb = 0;
            addrmask = (1u64 << 32) - 1;
        }
        vi.mtime = sbi.epoch.saturating_add(i64::from(dic.i_mtime.get()));
        vi.mtime_nsec = sbi.fixed_nsec;
        vi.size = u64::from(dic.i_size.get());
    }
    if i64::try_from(vi.size).is_err() {
        return Err(Corruption::NegativeSize(nid.0).into());
    }

    match vi.mode & mode::S_IFMT {
        mode::S_IFDIR | mode::S_IFREG | mode::S_IFLNK => {
            if vi.is_dir() {
                vi.dot_omitted = (ifmt >> ondisk::EROFS_I_DOT_OMITTED_BIT) & 1 != 0;
            }
            vi.startblk = u64::from(i_u) | (u64::from(i_nb) << 32);
            if raw_layout == ondisk::EROFS_INODE_FLAT_PLAIN
                && (vi.startblk ^ ondisk::EROFS_NULL_ADDR) & addrmask == 0
            {
                vi.startblk = ondisk::EROFS_NULL_ADDR;
            }
        }
        mode::S_IFCHR | mode::S_IFBLK => vi.rdev = i_u,
        mode::S_IFIFO | mode::S_IFSOCK => vi.rdev = 0,
        _ => {
            return Err(Corruption::BogusMode {
                nid: nid.0,
                mode: vi.mode,
            }
            .into())
        }
    }

    vi.datalayout = match raw_layout {
        ondisk::EROFS_INODE_FLAT_PLAIN => DataLayout::FlatPlain,
        ondisk::EROFS_INODE_FLAT_INLINE => DataLayout::FlatInline,
        ondisk::EROFS_INODE_CHUNK_BASED => DataLayout::ChunkBased,
        ondisk::EROFS_INODE_COMPRESSED_FULL => DataLayout::CompressedFull,
        ondisk::EROFS_INODE_COMPRESSED_COMPACT => DataLayout::CompressedCompact,
        _ => {
            return Err(Unsupported::DataLayout {
                nid: nid.0,
                datalayout: raw_layout,
            }
            .into())
        }
    };

    if !vi.is_compressed() {
        // `size <= i64::MAX`, so the block-rounded size in sectors fits.
        vi.blocks_512 = vi
            .size
            .div_ceil(sbi.blksz())
            .saturating_mul(sbi.blksz() >> 9);
    } else if sbi.available_compr_algs == 0 {
        // A compressed inode in a filesystem that declares no compression.
        return Err(Corruption::CompressedInPlainFs(nid.0).into());
    } else {
        // Compressed inodes store their block count (`blocks_lo`, `blocks_hi`), at most 48
        // bits, so the count in sectors fits.
        let blocks = u64::from(i_u) | (u64::from(i_nb) << 32);
        vi.blocks_512 = blocks << (sbi.blkszbits.saturating_sub(9));
    }

    if vi.datalayout == DataLayout::ChunkBased {
        vi.chunkformat = u16::try_from(i_u & 0xffff).unwrap_or(u16::MAX);
        if vi.chunkformat & !ondisk::EROFS_CHUNK_FORMAT_ALL != 0 {
            return Err(Unsupported::ChunkFormat {
                nid: nid.0,
                chunkformat: vi.chunkformat,
            }
            .into());
        }
        let bits = u16::from(sbi.blkszbits)
            .saturating_add(vi.chunkformat & ondisk::EROFS_CHUNK_FORMAT_BLKBITS_MASK);
        // A chunk larger than 2^63 bytes cannot be addressed; mkfs never writes one.
        if bits > 63 {
            return Err(Corruption::ChunkAddress(nid.0).into());
        }
        vi.chunkbits = u8::try_from(bits).unwrap_or(63);
    }

    if vi.is_symlink() && (vi.size == 0 || vi.size > 4095) {
        return Err(Corruption::SymlinkSize {
            nid: nid.0,
            size: vi.size,
        }
        .into());
    }
    Ok(vi)
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
    use crate::erofs_core::{Error, MetaRead};
    use std::{vec, vec::Vec};

    struct Mem(Vec<u8>);
    impl MetaRead for Mem {
        fn read_meta(&self, pos: u64, buf: &mut [u8]) -> Result<()> {
            let p = pos as usize;
            buf.copy_from_slice(self.0.get(p..p + buf.len()).ok_or(Error::Io(BACKEND_EIO))?);
            Ok(())
        }
    }

    fn sbi() -> SbInfo {
        let mut b = [0u8; 3072];
        b[0..4].copy_from_slice(&ondisk::EROFS_SUPER_MAGIC_V1.to_le_bytes());
        b[12] = 12;
        b[36..40].copy_from_slice(&100u32.to_le_bytes());
        SbInfo::parse(&b, 12, |_, _| 0).unwrap()
    }

    /// A compact inode at nid 1 (byte 32) with the given fields.
    fn compact(i_format: u16, mode: u16, size: u32, i_u: u32) -> Mem {
        let mut m = vec![0u8; 4096];
        let o = 32;
        m[o..o + 2].copy_from_slice(&i_format.to_le_bytes());
        m[o + 4..o + 6].copy_from_slice(&mode.to_le_bytes());
        m[o + 6..o + 8].copy_from_slice(&3u16.to_le_bytes());
        m[o + 8..o + 12].copy_from_slice(&size.to_le_bytes());
        m[o + 16..o + 20].copy_from_slice(&i_u.to_le_bytes());
        Mem(m)
    }

    #[test]
    fn reads_compact_inode() {
        let vi = read_inode(&sbi(), &compact(2 << 1, 0o100644, 5000, 7), Nid(1)).unwrap();
        assert_eq!(vi.datalayout, DataLayout::FlatInline);
        assert_eq!(
            (vi.size, vi.nlink, vi.startblk, vi.blocks_512),
            (5000, 3, 7, 16)
        );
    }

    #[test]
    fn rejects_unknown_i_format_bits() {
        assert_eq!(
            read_inode(&sbi(), &compact(1 << 5, 0o100644, 1, 0), Nid(1)).unwrap_err(),
            Unsupported::InodeFormat {
                nid: 1,
                i_format: 1 << 5
            }
            .into()
        );
    }

    #[test]
    fn rejects_bad_layouts() {
        for l in [5u16, 6, 7] {
            assert_eq!(
                read_inode(&sbi(), &compact(l << 1, 0o100644, 1, 0), Nid(1)).unwrap_err(),
                Unsupported::DataLayout {
                    nid: 1,
                    datalayout: l
                }
                .into()
            );
        }
        // Compressed inodes in an image without compression are corruption.
        assert_eq!(
            read_inode(&sbi(), &compact(3 << 1, 0o100644, 1, 0), Nid(1)).unwrap_err(),
            Corruption::CompressedInPlainFs(1).into()
        );
    }

    #[test]
    fn reads_compressed_inodes_with_their_block_count() {
        let mut sbi = sbi();
        sbi.available_compr_algs = 1;
        let vi = read_inode(&sbi, &compact(3 << 1, 0o100644, 100_000, 7), Nid(1)).unwrap();
        assert_eq!(vi.datalayout, DataLayout::CompressedCompact);
        assert!(vi.is_compressed());
        assert_eq!(vi.blocks_512, 7 * 8);
        let vi = read_inode(&sbi, &compact(1 << 1, 0o100644, 100_000, 7), Nid(1)).unwrap();
        assert_eq!(vi.datalayout, DataLayout::CompressedFull);
    }

    #[test]
    fn rejects_bogus_mode_and_symlink_size() {
        assert_eq!(
            read_inode(&sbi(), &compact(0, 0o170644, 1, 0), Nid(1)).unwrap_err(),
            Corruption::BogusMode {
                nid: 1,
                mode: 0o170644
            }
            .into()
        );
        assert_eq!(
            read_inode(&sbi(), &compact(2 << 1, 0o120777, 0, 0), Nid(1)).unwrap_err(),
            Corruption::SymlinkSize { nid: 1, size: 0 }.into()
        );
    }

    #[test]
    fn rejects_chunk_format_and_negative_size() {
        assert_eq!(
            read_inode(&sbi(), &compact(4 << 1, 0o100644, 1, 0x80), Nid(1)).unwrap_err(),
            Unsupported::ChunkFormat {
                nid: 1,
                chunkformat: 0x80
            }
            .into()
        );
        // An extended inode with a size beyond i64::MAX.
        let mut m = compact(1, 0o100644, 0, 0);
        m.0[32 + 8..32 + 16].copy_from_slice(&u64::MAX.to_le_bytes());
        assert_eq!(
            read_inode(&sbi(), &m, Nid(1)).unwrap_err(),
            Corruption::NegativeSize(1).into()
        );
    }

    #[test]
    fn inode_past_the_device_is_an_io_error() {
        assert_eq!(
            read_inode(&sbi(), &compact(0, 0o100644, 1, 0), Nid(1000)).unwrap_err(),
            Error::Io(BACKEND_EIO)
        );
    }
}
