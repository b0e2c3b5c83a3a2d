// SPDX-License-Identifier: GPL-2.0-only
//! Mounting: superblock reading, the per-mount state, statfs and error reports.
//! C counterpart: fs/erofs/super.c.
#![deny(unsafe_code)]

use crate::erofs_core::{
    self as core_,
    sb::SbInfo,
    Corruption,
    MetaRead,
    Unsupported, //
};
use crate::inode::iget;
use crate::vfs::{
    self,
    ffi::MountOpts,
    Device,
    SuperBlock, //
};
use kernel::{
    page::PAGE_SHIFT,
    page::PAGE_SIZE,
    prelude::*, //
};

/// Per-mount state (`struct erofs_sb_info`), owned by `s_fs_info`.
pub(crate) struct SbState {
    /// The decoded superblock.
    pub(crate) sbi: SbInfo,
    /// The primary device.
    pub(crate) dev: Device,
    /// The mount options.
    pub(crate) opts: MountOpts,
    /// Long xattr name prefixes (`sbi->xattr_prefixes`).
    pub(crate) prefixes: crate::xattr::PrefixTable,
}

impl SbState {
    /// Blocks of all devices, for statfs.
    pub(crate) fn total_blocks(&self) -> u64 {
        self.sbi.blocks
    }
}

/// Logs a core error once, at the VFS boundary, with the C driver's wording and the nid.
pub(crate) fn report(sb: SuperBlock<'_>, e: &core_::Error) {
    match e {
        core_::Error::Corrupted(c) => match c.nid() {
            Some(nid) => sb.log(true, format_args!("{} @ nid {}", c.reason(), nid)),
            None => match c {
                Corruption::SuperblockChecksum { computed, expected } => sb.log(
                    true,
                    format_args!("invalid checksum 0x{computed:08x}, 0x{expected:08x} expected"),
                ),
                _ => sb.log(true, format_args!("{}", c.reason())),
            },
        },
        core_::Error::Unsupported(u) => report_unsupported(sb, u),
        core_::Error::NotErofs => sb.log(true, format_args!("cannot find valid erofs superblock")),
        core_::Error::BadGeometry => sb.log(true, format_args!("device too small for the image")),
        core_::Error::Io(code) => sb.log(true, format_args!("I/O error {code} reading metadata")),
    }
}

/// Logs why something is unsupported.
fn report_unsupported(sb: SuperBlock<'_>, u: &Unsupported) {
    match *u {
        Unsupported::IncompatFeatures(bits) => {
            sb.log(true, format_args!("unsupported incompatible features {bits:#x}:"));
            core_::sb::for_each_incompat_name(bits, |name| sb.log(true, format_args!("  feature {name} is not supported by erofs_rs yet")));
        }
        Unsupported::BlockSize(bits) => sb.log(true, format_args!("blkszbits {bits} isn't supported")),
        Unsupported::DirBlkBits(bits) => sb.log(true, format_args!("dirblkbits {bits} isn't supported")),
        Unsupported::InodeFormat { nid, i_format } => {
            sb.log(true, format_args!("unsupported i_format {i_format} of nid {nid}"))
        }
        Unsupported::DataLayout { nid, datalayout } => sb.log(
            true,
            format_args!("unsupported datalayout {datalayout} of nid {nid} (compressed files are not supported yet)"),
        ),
        Unsupported::ChunkFormat { nid, chunkformat } => {
            sb.log(true, format_args!("unsupported chunk format {chunkformat:x} of nid {nid}"))
        }
        Unsupported::ExtraDevice(nid) => {
            sb.log(true, format_args!("data on extra devices is not supported yet @ nid {nid}"))
        }
        Unsupported::XattrIbody(nid) => {
            sb.log(true, format_args!("xattr_isize 12 of nid {nid} is not supported yet"))
        }
        Unsupported::PackedInode(nid) => sb.log(
            true,
            format_args!("packed inode (nid {nid}) is compressed: long xattr prefixes are not supported yet"),
        ),
    }
}

/// Reads the superblock and root inode (`erofs_fc_fill_super`).
pub(crate) fn fill_super(sb: SuperBlock<'_>, dev: Device, opts: MountOpts) -> Result {
    sb.prepare()?;
    // The superblock and the rest of its block: at most up to the end of the first page.
    let len = (PAGE_SIZE - 1024).min(usize::try_from(dev.bytes().saturating_sub(1024)).unwrap_or(0));
    let mut data = KVec::from_elem(0u8, len, GFP_KERNEL)?;
    let sbi = dev
        .read_meta(core_::ondisk::EROFS_SUPER_OFFSET, &mut data)
        .and_then(|()| SbInfo::parse(&data, PAGE_SHIFT as u8, vfs::crc32c))
        .inspect_err(|e| report(sb, e))
        .map_err(vfs::to_kernel)?;
    drop(data);
    if sbi.device_bytes().is_none_or(|b| b > dev.bytes()) && !dev.is_file() {
        // A truncated device; the C driver finds out on the first read past its end.
        sb.log(false, format_args!("device is smaller than the {} blocks the image declares", sbi.blocks));
    }

    if opts.fsoffset % sbi.blksz() != 0 {
        sb.log(
            true,
            format_args!("fsoffset {} is not aligned to block size {}", opts.fsoffset, sbi.blksz()),
        );
        return Err(EINVAL);
    }
    let prefixes = crate::xattr::PrefixTable::load(&sbi, &dev)
        .inspect_err(|e| report(sb, e))
        .map_err(vfs::to_kernel)?;

    let root_nid = sbi.root_nid;
    let blkszbits = sbi.blkszbits;
    let uuid = sbi.uuid;
    sb.attach(KBox::new(SbState { sbi, dev, opts, prefixes }, GFP_KERNEL)?);
    sb.set_blocksize(blkszbits).inspect_err(|_| sb.log(true, format_args!("failed to set erofs blksize")))?;
    sb.set_uuid(&uuid);

    let root = iget(sb, root_nid)?;
    if !root.inode().info().is_dir() {
        sb.log(
            true,
            format_args!("rootino(nid {}) is not a directory(i_mode {:o})", root_nid.0, root.inode().info().mode),
        );
        return Err(EINVAL);
    }
    sb.set_root(root)?;
    sb.log(false, format_args!("mounted with root inode @ nid {}.", root_nid.0));
    Ok(())
}
