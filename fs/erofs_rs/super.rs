// SPDX-License-Identifier: GPL-2.0-only
//! Mounting: superblock reading, the per-mount state, statfs and error reports.
//! C counterpart: fs/erofs/super.c.
#![deny(unsafe_code)]

use crate::decompressor_crypto::Accel;
use crate::erofs_core::{
    self as core_,
    sb::{
        DeviceInfo,
        SbInfo, //
    },
    Corruption,
    MetaRead,
    Unsupported, //
};
use crate::inode::{
    iget,
    InodeData, //
};
use crate::vfs::{
    self,
    fs_context::{
        Constants,
        FcLog,
        MountOptions,
        Param,
        ParamStr,
        ParamString,
        ParamTable,
        Params,
        Value, //
    },
    iomap::{
        Extent,
        InlineSlot, //
    },
    workers::PcpuClaim,
    xattr::Namespace,
    Device,
    ExtraDevice,
    Log,
    New, //
};
use crate::zdata::ZStats;
use core::sync::atomic::{
    AtomicU32,
    Ordering, //
};
use kernel::{
    page::PAGE_SHIFT,
    page::PAGE_SIZE,
    prelude::*,
    seq_file::{
        seq_print,
        SeqFile, //
    },
    str::CString,
    sync::{
        Arc,
        SetOnce, //
    },
};

/// The filesystem type (`erofs_fs_type`), registered by the module under the name of its
/// `fstype` parameter.
pub(crate) static FS_TYPE: vfs::FileSystemType<Erofs> =
    vfs::FileSystemType::of(&<crate::LocalModule as kernel::ModuleMetadata>::THIS_MODULE);

/// A superblock of ours (`struct super_block` with `EROFS_SB()`'s [`SbState`]).
pub(crate) type SuperBlock<'a, S = vfs::Ready> = vfs::SuperBlock<'a, Erofs, S>;
/// An inode of ours, borrowed (`struct erofs_inode`, its data [`InodeData`]).
pub(crate) type Inode<'a> = vfs::Inode<'a, Erofs>;
/// An inode reference of ours.
pub(crate) type InodeRef = vfs::InodeRef<Erofs>;
/// An inode reference the superblock holds for its life.
pub(crate) type InodeSlot = vfs::InodeSlot<Erofs>;
/// A new inode of ours, to fill.
pub(crate) type NewInode<'a> = vfs::NewInode<'a, Erofs>;
/// What `iget5_locked` found on a superblock of ours.
pub(crate) type Iget<'a> = vfs::Iget<'a, Erofs>;
/// The inode a page cache of ours is read with.
pub(crate) type RealInode = vfs::RealInode<Erofs>;
/// A directory of ours being read.
pub(crate) type DirContext<'a> = vfs::DirContext<'a, Erofs>;
/// A dentry of ours.
pub(crate) type Dentry<'a> = vfs::Dentry<'a, Erofs>;

impl<'a> SuperBlock<'a> {
    /// The mount's state (`EROFS_SB()`).
    pub(crate) fn state(&self) -> &'a SbState {
        self.data()
    }

    /// The mount's decompression statistics and `sync_decompress` setting.
    pub(crate) fn zstats(&self) -> &'a ZStats {
        &self.state().zstats
    }

    /// The packed inode (fragments), if the image has one, referenced.
    pub(crate) fn packed_inode(&self) -> Option<InodeRef> {
        self.state().packed.get()
    }
}

/// The EROFS filesystem type: what the VFS calls on its superblocks, directories and inodes
/// (`erofs_fs_type`, `erofs_sops`, the directory and export operations), each in the file that
/// fs/erofs keeps it in.
pub(crate) struct Erofs;

impl vfs::fs::FileSystem for Erofs {
    type Options = MountOpts;
    type Data = SbState;
    type INodeData = InodeData;

    const MAGIC: u32 = core_::ondisk::EROFS_SUPER_MAGIC_V1;

    fn fill_super(sb: SuperBlock<'_, New>, dev: Device, opts: &MountOpts) -> Result {
        fill_super(sb, dev, opts)
    }

    fn put_super(sb: SuperBlock<'_>) {
        sb.state().packed.release();
        let dev = sb.device();
        dev.metabox.release();
        dev.zcache.release();
    }

    fn reconfigure(sb: SuperBlock<'_>, opts: &MountOpts) -> Result {
        if opts.domain_id.is_some() {
            sb.info(format_args!("ignoring reconfiguration for domain_id."));
        }
        sb.state().reconfigure(opts)
    }

    fn show_options(m: &SeqFile, sb: SuperBlock<'_>) {
        show_options(m, sb)
    }

    fn statfs(sb: SuperBlock<'_>) -> vfs::fs::StatFs {
        let st = sb.state();
        vfs::fs::StatFs {
            blocks: st.total_blocks(),
            // OVERFLOW: `inos` is a `u64`, at most `u64::MAX`.
            ffree: u64::MAX - st.sbi.inos,
        }
    }

    fn lookup(dir: Inode<'_>, name: &[u8]) -> Result<Option<InodeRef>> {
        crate::namei::lookup(dir, name)
    }

    fn readdir(ctx: DirContext<'_>) -> Result {
        crate::dir::readdir(ctx)
    }

    /// File handles name inodes by nid, not `i_ino`, which differs with a metabox
    /// (`erofs_encode_fh`).
    fn handle_id(inode: Inode<'_>) -> u64 {
        inode.info().nid.0
    }

    fn inode_by_handle(sb: SuperBlock<'_>, id: u64) -> Result<InodeRef> {
        iget(sb, core_::Nid(id))
    }

    fn user_xattrs(sb: SuperBlock<'_>) -> bool {
        sb.state().opt_flags().contains(MountFlags::USER_XATTR)
    }

    fn getxattr(
        inode: Inode<'_>,
        ns: Namespace,
        name: &[u8],
        buf: Option<&mut [u8]>,
    ) -> Result<usize> {
        crate::xattr::getxattr(inode, crate::xattr::index_of(ns), name, buf)
    }

    fn listxattr(dentry: Dentry<'_>, buf: Option<&mut [u8]>) -> Result<usize> {
        crate::xattr::listxattr(dentry, buf)
    }

    /// Compressed files say so; only uncompressed ones are read with direct I/O (iomap's),
    /// as `erofs_getattr` reports.
    fn stat(inode: Inode<'_>) -> vfs::fs::StatAttrs {
        let compressed = inode.info().is_compressed();
        vfs::fs::StatAttrs {
            compressed,
            direct: !compressed,
        }
    }

    fn iomap_map<'a>(
        inode: Inode<'a>,
        offset: u64,
        length: u64,
        inline: Option<&mut InlineSlot<'_>>,
    ) -> Result<Extent<'a>> {
        crate::data::iomap_map(inode, offset, length, inline)
    }
}

/// Per-mount state (`struct erofs_sb_info`), owned by `s_fs_info`.
pub(crate) struct SbState {
    /// The decoded superblock.
    pub(crate) sbi: SbInfo,
    /// The mount options a remount replaces (`sbi->opt`).
    pub(crate) opts: AtomicSbOpts,
    /// Long xattr name prefixes (`sbi->xattr_prefixes`).
    /// Read after the packed and metabox inodes, which may hold them.
    pub(crate) prefixes: SetOnce<crate::xattr::PrefixTable>,
    /// `domain_id=` with `inode_share` (without its NUL): the first part of fingerprints.
    pub(crate) domain_id: KVec<u8>,
    /// The extra devices, opened from `device=` options (`sbi->devs`).
    pub(crate) devs: KVec<OpenDevice>,
    /// The device table, when no `device=` was given: addresses are then unified on the
    /// primary device (`devs->flatdev`).
    pub(crate) flat: KVec<DeviceInfo>,
    /// The acomp engine for DEFLATE pclusters (`decomp_accel=`); declared before `zstats`, so
    /// dropped before the debugfs directory that holds its counters.
    pub(crate) accel: Option<Arc<Accel>>,
    /// The `decomp_accel=` name as given, NUL-terminated (empty without one), for
    /// show_options.
    pub(crate) accel_name: KVec<u8>,
    /// `decomp_accel_min=`: smaller (compressed) pclusters are decoded in software.
    pub(crate) accel_min: u32,
    /// Our claim on the per-CPU decompression kthreads, while `decomp_pcpu_kthreads` is on.
    pub(crate) pcpu: PcpuClaim,
    /// The packed inode, holding fragments (`sbi->packed_inode`).
    pub(crate) packed: InodeSlot,
    /// Done compressed-read requests, kept for the next reads.
    pub(crate) requests: crate::zdata::RequestCache,
    /// Kept pclusters being read, which other reads of their file may hand their bytes to.
    pub(crate) shares: crate::zdata::Shares,
    /// `dir_ra_bytes` (sysfs): bytes of directory readahead per step, 0 for none
    /// (`sbi->dir_ra_bytes`).
    pub(crate) dir_ra_bytes: AtomicU32,
    /// Decompression statistics and `sync_decompress`, in debugfs: last, so that what holds
    /// files in its directory (`accel`) goes first.
    pub(crate) zstats: ZStats,
}

impl SbState {
    /// `dir_ra_bytes`: bytes of directory readahead per step, 0 for none.
    pub(crate) fn dir_ra_bytes(&self) -> u32 {
        self.dir_ra_bytes.load(Ordering::Relaxed)
    }

    /// The mount's `sync_decompress` (C: `sbi->opt.sync_decompress`), as its sysfs and debugfs
    /// files show and set it: 0 auto, 1 force on, 2 force off.
    pub(crate) fn sync_decompress(&self) -> &AtomicU32 {
        self.zstats.sync_decompress()
    }

    /// The current on/off mount options.
    pub(crate) fn opt_flags(&self) -> MountFlags {
        self.opts.load().flags
    }

    /// Applies the options of a remount (`erofs_fc_reconfigure`): the flags and the cache
    /// strategy change; devices and `fsoffset=` stay as mounted, as in the C driver.
    ///
    /// `decomp_pcpu_kthreads` may change too: reads already queued finish where they were sent,
    /// new ones go to the new place.
    pub(crate) fn reconfigure(&self, opts: &MountOpts) -> Result {
        self.pcpu
            .set(opts.sb.flags.contains(MountFlags::PCPU_KTHREADS))?;
        self.opts.store(opts.sb);
        Ok(())
    }

    /// Blocks of all devices, for statfs (`sbi->total_blocks`).
    pub(crate) fn total_blocks(&self) -> u64 {
        let opened = self.devs.iter().map(|d| d.info.blocks);
        let flat = self.flat.iter().map(|d| d.blocks);
        Iterator::chain(opened, flat).fold(self.sbi.blocks, u64::saturating_add)
    }

    /// Finds the device of physical address `pa` of device `device_id` (`erofs_map_dev`):
    /// `None` for the primary device (with `pa` adjusted), or an extra device and the address
    /// on it.
    pub(crate) fn map_dev(&self, device_id: u16, pa: u64) -> Result<(Option<&OpenDevice>, u64)> {
        let blk = |b: u64| self.sbi.pos(b).ok_or(EFSCORRUPTED);
        if device_id != 0 {
            // OVERFLOW: `device_id != 0`.
            let idx = usize::from(device_id - 1);
            if let Some(info) = self.flat.get(idx) {
                return Ok((
                    None,
                    pa.checked_add(blk(info.uniaddr)?).ok_or(EFSCORRUPTED)?,
                ));
            }
            return match self.devs.get(idx) {
                Some(d) => Ok((Some(d), pa)),
                None => Err(ENODEV),
            };
        }
        for d in self.devs.iter() {
            if d.info.uniaddr == 0 {
                continue;
            }
            let start = blk(d.info.uniaddr)?;
            let end = start.saturating_add(blk(d.info.blocks)?);
            if (start..end).contains(&pa) {
                // OVERFLOW: `pa >= start`.
                return Ok((Some(d), pa - start));
            }
        }
        Ok((None, pa))
    }
}

/// An extra device opened from a `device=` option, with its entry in the device table
/// (`struct erofs_device_info`).
pub(crate) struct OpenDevice {
    /// The opened block device or file.
    pub(crate) dev: ExtraDevice,
    /// What the device table says of it.
    pub(crate) info: DeviceInfo,
}

/// Maps a core error to its errno, exactly once for the whole driver (see shared/STYLE.md):
/// the one the C driver returns for the same check ([`core_::Error::errno`]).
pub(crate) fn to_kernel(e: core_::Error) -> Error {
    match e.errno() {
        core_::Errno::Inval => EINVAL,
        core_::Errno::FsCorrupted => EFSCORRUPTED,
        core_::Errno::BadMsg => EBADMSG,
        core_::Errno::OpNotSupp => EOPNOTSUPP,
        core_::Errno::NoMem => ENOMEM,
        core_::Errno::Backend(code) => Error::from_errno(-code),
    }
}

/// Turns a kernel error into a core one, for errors that cross [`MetaRead`].
pub(crate) fn to_core(e: Error) -> core_::Error {
    core_::Error::Io(-e.to_errno())
}

/// The algorithms this driver decompresses (bits of `available_compr_algs`).
const SUPPORTED_ALGS: u16 = (1 << core_::ondisk::Z_EROFS_COMPRESSION_LZ4)
    | (1 << core_::ondisk::Z_EROFS_COMPRESSION_LZMA)
    | (1 << core_::ondisk::Z_EROFS_COMPRESSION_DEFLATE)
    | (1 << core_::ondisk::Z_EROFS_COMPRESSION_ZSTD);

/// Logs a core error once, at the VFS boundary, with the C driver's wording and the nid.
pub(crate) fn report(sb: impl Log, e: &core_::Error) {
    match e {
        core_::Error::Corrupted(c) => match c.nid() {
            Some(nid) => sb.err(format_args!("{} @ nid {}", c.reason(), nid)),
            None => match c {
                Corruption::SuperblockChecksum { computed, expected } => sb.err(format_args!(
                    "invalid checksum 0x{computed:08x}, 0x{expected:08x} expected"
                )),
                _ => sb.err(format_args!("{}", c.reason())),
            },
        },
        core_::Error::Unsupported(u) => report_unsupported(&sb, u),
        core_::Error::NotErofs => sb.err(format_args!("cannot find valid erofs superblock")),
        core_::Error::BadGeometry => sb.err(format_args!("device too small for the image")),
        core_::Error::Io(code) => sb.err(format_args!("I/O error {code} reading metadata")),
        core_::Error::StreamLayout => sb.err(format_args!("decoder error")),
        // As in C, a failed allocation is not logged: the allocator has warned.
        core_::Error::NoMemory => {}
    }
}

/// Logs why something is unsupported.
fn report_unsupported(sb: &impl Log, u: &Unsupported) {
    match *u {
        Unsupported::IncompatFeatures(bits) => {
            sb.err(format_args!("unsupported incompatible features {bits:#x}:"));
            core_::sb::for_each_incompat_name(bits, |name| sb.err(format_args!("  feature {name} is not supported by erofs_rs yet")));
        }
        Unsupported::BlockSize(bits) => sb.err(format_args!("blkszbits {bits} isn't supported")),
        Unsupported::DirBlkBits(bits) => sb.err(format_args!("dirblkbits {bits} isn't supported")),
        Unsupported::InodeFormat { nid, i_format } => {
            sb.err(format_args!("unsupported i_format {i_format} of nid {nid}"))
        }
        Unsupported::DataLayout { nid, datalayout } => sb.err(format_args!("unsupported datalayout {datalayout} of nid {nid}"),
        ),
        Unsupported::ChunkFormat { nid, chunkformat } => {
            sb.err(format_args!("unsupported chunk format {chunkformat:x} of nid {nid}"))
        }
        Unsupported::ExtraDevice(nid) => {
            sb.err(format_args!("data on extra devices is not supported yet @ nid {nid}"))
        }
        Unsupported::XattrIbody(nid) => {
            sb.err(format_args!("xattr_isize 12 of nid {nid} is not supported yet"))
        }
        Unsupported::Algorithm { nid, alg } => {
            sb.err(format_args!("unknown compression algorithm {alg} for nid {nid}, please upgrade kernel"))
        }
        Unsupported::Algorithms(bits) => {
            sb.err(format_args!("unidentified algorithms {bits:#x}, please upgrade kernel"))
        }
        Unsupported::ComprCfgs { alg } => {
            let name = match alg {
                0 => "lz4",
                1 => "lzma (dictionary over 8 MiB or under 4 KiB, or unknown format)",
                2 => "deflate (window over 32 KiB)",
                3 => "zstd (window over 1 MiB, or unknown format)",
                _ => "unknown",
            };
            sb.err(format_args!("unsupported {name} compression configuration"))
        }
        Unsupported::LclusterBits { nid, bits } => {
            sb.err(format_args!("unsupported lcluster size 2^{bits} @ nid {nid}"))
        }
        Unsupported::PclusterSize(nid) => sb.err(format_args!("pcluster over 1 MiB or extent over 12 MiB @ nid {nid}: not supported, as in the C driver"),
        ),
        Unsupported::PlainOutput(nid) => {
            sb.err(format_args!("plain pcluster shorter than its output @ nid {nid}"))
        }
    }
}

/// Reads the superblock and root inode (`erofs_fc_fill_super`).
fn fill_super(sb: SuperBlock<'_, New>, dev: Device, opts: &MountOpts) -> Result {
    let sbi = read_super(&sb, &dev)?;
    // OVERFLOW: `blksz()` is `1 << blkszbits`, never 0.
    if opts.fsoffset % sbi.blksz() != 0 {
        sb.err(format_args!(
            "fsoffset {} is not aligned to block size {}",
            opts.fsoffset,
            sbi.blksz()
        ));
        return Err(EINVAL);
    }
    let (live, domain_id) = live_options(&sb, &sbi, opts)?;
    setup_decompressors(&sb, &sbi)?;
    let (devs, flat) = scan_devices(&sb, &sbi, &dev, opts)?;

    let root_nid = sbi.root_nid;
    let blkszbits = sbi.blkszbits;
    let uuid = sbi.uuid;
    let packed_nid = sbi.packed_nid;
    let has_fragments = sbi.has_fragments();
    let metabox_nid = sbi.has_metabox().then_some(sbi.metabox_nid);
    let zstats = ZStats::new(&sb)?;
    let (accel, accel_name) = open_accel(&sbi, &zstats, opts)?;
    let state = SbState {
        sbi,
        opts: AtomicSbOpts::new(live),
        prefixes: SetOnce::new(),
        domain_id,
        devs,
        flat,
        accel,
        accel_name,
        accel_min: opts.accel_min,
        pcpu: PcpuClaim::new(&sb)?,
        packed: InodeSlot::new(),
        requests: crate::zdata::RequestCache::new()?,
        shares: crate::zdata::Shares::new()?,
        dir_ra_bytes: AtomicU32::new(DIR_RA_BYTES),
        zstats,
    };
    state
        .pcpu
        .set(live.flags.contains(MountFlags::PCPU_KTHREADS))?;
    sb.set_blocksize(blkszbits)
        .inspect_err(|_| sb.err(format_args!("failed to set erofs blksize")))?;
    sb.set_uuid(&uuid);
    // Compressed data is read into a page cache of our own (`erofs_init_managed_cache`), on
    // block devices and backing files alike; if `fill_super` fails before the state is
    // attached, dropping the device gives it back.
    dev.zcache.init(&sb)?;
    let sb = sb.attach(dev, state)?;

    // Until the root is set, `put_super` does not run: give the inodes back here on failure.
    let root = set_root(sb, metabox_nid, root_nid);
    if root.is_err() {
        sb.device().metabox.release();
        sb.device().zcache.release();
    }
    root?;
    // After the root: from here on, `put_super` gives the packed inode back on any failure.
    if has_fragments && packed_nid != 0 {
        sb.state()
            .packed
            .set(iget_internal(sb, packed_nid, "packed")?);
    }
    let prefixes = crate::xattr::PrefixTable::load(sb)
        .inspect_err(|e| report(sb, e))
        .map_err(to_kernel)?;
    sb.state().prefixes.populate(prefixes);
    sb.register_sysfs()?;
    sb.info(format_args!(
        "mounted with root inode @ nid {}.",
        root_nid.0
    ));
    Ok(())
}

/// Reads and checks the on-disk superblock and the compression configurations
/// (`erofs_read_superblock`).
fn read_super(sb: &SuperBlock<'_, New>, dev: &Device) -> Result<SbInfo> {
    // The superblock and the rest of its block: at most up to the end of the first page.
    let len =
        (PAGE_SIZE - 1024).min(usize::try_from(dev.bytes().saturating_sub(1024)).unwrap_or(0));
    let mut data = KVec::from_elem(0u8, len, GFP_KERNEL)?;
    let mut sbi = dev
        .read_meta(core_::ondisk::EROFS_SUPER_OFFSET, &mut data)
        .and_then(|()| SbInfo::parse(&data, PAGE_SHIFT as u8, vfs::crc32c))
        .inspect_err(|e| report(sb, e))
        .map_err(to_kernel)?;
    sbi.load_compr_cfgs(dev)
        .inspect_err(|e| report(sb, e))
        .map_err(to_kernel)?;
    let unsupported = sbi.available_compr_algs & !SUPPORTED_ALGS;
    if unsupported != 0 {
        sb.info(format_args!("compression algorithms {unsupported:#x} are not supported by erofs_rs yet: their files fail to read"),
        );
    }
    if sbi.device_bytes().is_none_or(|b| b > dev.bytes()) && !dev.is_file() {
        // A truncated device; the C driver finds out on the first read past its end.
        sb.info(format_args!(
            "device is smaller than the {} blocks the image declares",
            sbi.blocks
        ));
    }
    Ok(sbi)
}

/// The options the mount runs with, once the image is known (`erofs_fc_fill_super`'s
/// adjustments): no DAX, `inode_share` only with the image's xattrs; and its domain.
fn live_options(
    sb: &SuperBlock<'_, New>,
    sbi: &SbInfo,
    opts: &MountOpts,
) -> Result<(SbOpts, KVec<u8>)> {
    // DAX reaches here only on kernels with FS_DAX (the parser refuses it otherwise, as the C
    // driver does); erofs_rs has no DAX path.
    let mut live = opts.sb;
    if live.dax == Some(Dax::Always) {
        sb.err(format_args!(
            "DAX is not supported by erofs_rs. Turning off DAX."
        ));
        live.dax = None;
    }
    if live.flags.contains(MountFlags::INODE_SHARE) && !sbi.has_ishare_xattrs() {
        sb.info(format_args!(
            "on-disk ishare xattrs not found. Turning off inode_share."
        ));
        live.flags.set(MountFlags::INODE_SHARE, false);
    }
    let mut domain_id = KVec::new();
    if live.flags.contains(MountFlags::INODE_SHARE) {
        // The fs_context refused inode_share without domain_id.
        if let Some(d) = opts.domain_id.as_ref() {
            domain_id.extend_from_slice(d.as_bytes(), GFP_KERNEL)?;
        }
        sb.info(format_args!("page cache sharing (inode_share) in use"));
    }
    Ok((live, domain_id))
}

/// The DEFLATE offload of `decomp_accel=`, or of the global `/sys/fs/erofs_rs/accel`
/// (`z_erofs_crypto_enable_engine`): the engine, if the image has DEFLATE and the driver is
/// there (software decodes otherwise), and the name asked for, NUL-terminated.
fn open_accel(
    sbi: &SbInfo,
    zstats: &ZStats,
    opts: &MountOpts,
) -> Result<(Option<Arc<Accel>>, KVec<u8>)> {
    let mut name = KVec::new();
    if let Some(n) = opts.accel.as_deref() {
        name.extend_from_slice(n.to_bytes_with_nul(), GFP_KERNEL)?;
    } else if let Some(buf) = Accel::global_default() {
        let n = buf
            .iter()
            .position(|&b| b == 0)
            .map_or(buf.len(), |n| n + 1);
        name.extend_from_slice(&buf[..n], GFP_KERNEL)?;
    }
    let has_deflate =
        sbi.available_compr_algs & (1 << core_::ondisk::Z_EROFS_COMPRESSION_DEFLATE) != 0;
    let accel = match has_deflate
        .then(|| Accel::open(zstats.dir(), &name, sbi.deflate_windowbits))
        .flatten()
    {
        Some(a) => Some(Arc::new(a, GFP_KERNEL)?),
        None => None,
    };
    Ok((accel, name))
}

/// Reads the metabox inode, then the root (which may live in it), and makes the root the
/// superblock's (`erofs_fc_fill_super`'s end).
fn set_root(sb: SuperBlock<'_>, metabox_nid: Option<u64>, root_nid: core_::Nid) -> Result {
    if let Some(nid) = metabox_nid {
        sb.info(format_args!("metadata compression (metabox) in use"));
        sb.device().metabox.set(iget_internal(sb, nid, "metabox")?);
    }
    let root = iget(sb, root_nid)?;
    if !root.inode().info().is_dir() {
        sb.err(format_args!(
            "rootino(nid {}) is not a directory(i_mode {:o})",
            root_nid.0,
            root.inode().info().mode
        ));
        return Err(EINVAL);
    }
    sb.set_root(root)
}

/// The metabox or packed inode, whose data is read through its page cache: it must be a
/// regular file, as mkfs.erofs makes it. A special file's mapping has no `read_folio` (the C
/// driver of 7.3 calls that NULL pointer on such an image).
fn iget_internal(sb: SuperBlock<'_>, nid: u64, what: &str) -> Result<InodeRef> {
    let inode = iget(sb, core_::Nid(nid))?;
    let mode = inode.inode().info().mode;
    if mode & core_::ondisk::mode::S_IFMT != core_::ondisk::mode::S_IFREG {
        sb.err(format_args!(
            "bogus {what} inode (i_mode {mode:o}) @ nid {nid}"
        ));
        return Err(EFSCORRUPTED);
    }
    Ok(inode)
}

/// The options of a mounted superblock, as `/proc/mounts` shows them (`erofs_show_options`).
fn show_options(m: &SeqFile, sb: SuperBlock<'_>) {
    let st = sb.state();
    let dev = sb.device();
    let o = st.opts.load();
    let on = |f| o.flags.contains(f);
    seq_print!(
        m,
        "{}",
        if on(MountFlags::USER_XATTR) {
            ",user_xattr"
        } else {
            ",nouser_xattr"
        }
    );
    seq_print!(
        m,
        "{}",
        if on(MountFlags::ACL) {
            ",acl"
        } else {
            ",noacl"
        }
    );
    // As the C driver: the cache strategy only for images with compressed files.
    if st.sbi.available_compr_algs != 0 {
        seq_print!(m, ",cache_strategy={}", o.cache_strategy.name());
    }
    match o.dax {
        Some(Dax::Always) => seq_print!(m, ",dax=always"),
        Some(Dax::Never) => seq_print!(m, ",dax=never"),
        None => {}
    }
    if on(MountFlags::DIRECT_IO) && dev.is_file() {
        seq_print!(m, ",directio");
    }
    if dev.fsoff() != 0 {
        seq_print!(m, ",fsoffset={}", dev.fsoff());
    }
    if on(MountFlags::INODE_SHARE) {
        seq_print!(m, ",inode_share");
    }
    if on(MountFlags::PCPU_KTHREADS) {
        seq_print!(m, ",decomp_pcpu_kthreads");
    }
    if let Some((_nul, name)) = st.accel_name.split_last() {
        seq_print!(m, ",decomp_accel=");
        vfs::fs_context::seq_write(m, name);
        seq_print!(m, ",decomp_accel_min={}", st.accel_min);
    }
    if st.sbi.available_compr_algs != 0 && o.split != Split::Auto {
        seq_print!(m, ",decomp_split={}", o.split.name());
    }
}

// The mount options (fs/erofs/super.c: `erofs_fs_parameters`, `erofs_fc_parse_param`).

/// At most this many `device=` options (`EROFS_RS_MAX_DEVICES` before; the C driver has no
/// limit of its own, but its device table has at most 65535 entries).
const MAX_DEVICES: usize = 64;

/// `EROFS_DIR_RA_BYTES`: the default of `dir_ra_bytes`, directory readahead per step.
const DIR_RA_BYTES: u32 = 16384;

/// `decomp_accel_min=` default: compressed size from which DEFLATE pclusters are offloaded.
const ACCEL_MIN_DEFAULT: u32 = 0;

/// The option keys (`Opt_*` of fs/erofs/super.c): what `fs_parse()` returns for an entry of
/// [`PARAMETERS`]; `source` is the context's own.
mod key {
    pub(super) const USER_XATTR: u8 = 0;
    pub(super) const ACL: u8 = 1;
    pub(super) const CACHE_STRATEGY: u8 = 2;
    pub(super) const FSOFFSET: u8 = 3;
    pub(super) const DEVICE: u8 = 4;
    pub(super) const DIRECTIO: u8 = 5;
    pub(super) const DECOMP_PCPU_KTHREADS: u8 = 6;
    pub(super) const DECOMP_ACCEL: u8 = 7;
    pub(super) const DECOMP_ACCEL_MIN: u8 = 8;
    pub(super) const DAX: u8 = 9;
    pub(super) const DAX_ENUM: u8 = 10;
    pub(super) const DOMAIN_ID: u8 = 11;
    pub(super) const INODE_SHARE: u8 = 12;
    pub(super) const SOURCE: u8 = 13;
    pub(super) const DECOMP_SPLIT: u8 = 14;
}

/// `cache_strategy=`'s values (`erofs_param_cache_strategy`).
static CACHE_STRATEGY: Constants<4> = Constants::new([
    (c"disabled", CacheStrategy::DISABLED),
    (c"readahead", CacheStrategy::READAHEAD),
    (c"readaround", CacheStrategy::READAROUND),
    Constants::<4>::END,
]);

/// `decomp_split=`'s values.
static SPLIT_ENUM: Constants<4> = Constants::new([
    (c"auto", Split::AUTO),
    (c"force", Split::FORCE),
    (c"off", Split::OFF),
    Constants::<4>::END,
]);

/// `dax=`'s values (`erofs_dax_param_enums`).
static DAX_ENUM: Constants<3> = Constants::new([
    (c"always", Dax::ALWAYS),
    (c"never", Dax::NEVER),
    Constants::<3>::END,
]);

/// The mount options (`erofs_fs_parameters`): the filesystem type names them, and
/// `parse_param` parses each option against them.
static PARAMETERS: ParamTable<16> = ParamTable::new([
    Param::flag_no(c"user_xattr", key::USER_XATTR),
    Param::flag_no(c"acl", key::ACL),
    Param::enumeration(c"cache_strategy", key::CACHE_STRATEGY, &CACHE_STRATEGY),
    Param::u64(c"fsoffset", key::FSOFFSET),
    Param::string(c"device", key::DEVICE),
    Param::flag_no(c"directio", key::DIRECTIO),
    Param::flag_no(c"decomp_pcpu_kthreads", key::DECOMP_PCPU_KTHREADS),
    Param::string(c"decomp_accel", key::DECOMP_ACCEL),
    Param::u32(c"decomp_accel_min", key::DECOMP_ACCEL_MIN),
    Param::enumeration(c"decomp_split", key::DECOMP_SPLIT, &SPLIT_ENUM),
    Param::flag(c"dax", key::DAX),
    Param::enumeration(c"dax", key::DAX_ENUM, &DAX_ENUM),
    Param::string(c"domain_id", key::DOMAIN_ID),
    Param::flag(c"inode_share", key::INODE_SHARE),
    Param::source(c"source", key::SOURCE),
    Param::END,
]);

/// `cache_strategy=` (`EROFS_ZIP_CACHE_*`).
#[derive(Clone, Copy, PartialEq, Eq, Debug)]
pub(crate) enum CacheStrategy {
    /// `disabled`.
    Disabled,
    /// `readahead`.
    ReadAhead,
    /// `readaround`, the default.
    ReadAround,
}

impl CacheStrategy {
    /// `disabled`'s value in [`CACHE_STRATEGY`].
    const DISABLED: u32 = 0;
    /// `readahead`'s.
    const READAHEAD: u32 = 1;
    /// `readaround`'s.
    const READAROUND: u32 = 2;

    /// The strategy of a value of [`CACHE_STRATEGY`].
    fn from_raw(v: u32) -> Option<Self> {
        match v {
            Self::DISABLED => Some(Self::Disabled),
            Self::READAHEAD => Some(Self::ReadAhead),
            Self::READAROUND => Some(Self::ReadAround),
            _ => None,
        }
    }

    /// The option's spelling, as `/proc/mounts` shows it.
    pub(crate) fn name(self) -> &'static str {
        match self {
            Self::Disabled => "disabled",
            Self::ReadAhead => "readahead",
            Self::ReadAround => "readaround",
        }
    }
}

/// `decomp_split=` (erofs_rs only; sysfs `decomp_split`): whether the pclusters of one read
/// are decoded on several CPUs (`zdata.rs`, [`crate::zdata`]'s `split` policy).
#[derive(Clone, Copy, PartialEq, Eq, Debug)]
pub(crate) enum Split {
    /// `auto`, the default: reads with enough decode work of the slow algorithms (MicroLZMA,
    /// DEFLATE, Zstandard) are split; LZ4 never is.
    Auto,
    /// `force`: every read of two pclusters or more is split, whatever the algorithm (for
    /// tests).
    Force,
    /// `off`: every read is decoded on one CPU, as the C driver does.
    Off,
}

impl Split {
    /// `auto`'s value in [`SPLIT_ENUM`] and in sysfs.
    pub(crate) const AUTO: u32 = 0;
    /// `force`'s.
    pub(crate) const FORCE: u32 = 1;
    /// `off`'s.
    pub(crate) const OFF: u32 = 2;

    /// The setting of a value of [`SPLIT_ENUM`] (and of the sysfs file).
    pub(crate) fn from_raw(v: u32) -> Option<Self> {
        match v {
            Self::AUTO => Some(Self::Auto),
            Self::FORCE => Some(Self::Force),
            Self::OFF => Some(Self::Off),
            _ => None,
        }
    }

    /// The value in [`SPLIT_ENUM`] and sysfs.
    pub(crate) fn raw(self) -> u32 {
        match self {
            Self::Auto => Self::AUTO,
            Self::Force => Self::FORCE,
            Self::Off => Self::OFF,
        }
    }

    /// The option's spelling, as `/proc/mounts` shows it.
    pub(crate) fn name(self) -> &'static str {
        match self {
            Self::Auto => "auto",
            Self::Force => "force",
            Self::Off => "off",
        }
    }
}

/// `dax`, `dax=always`, `dax=never` (`EROFS_MOUNT_DAX_ALWAYS`, `EROFS_MOUNT_DAX_NEVER`).
#[derive(Clone, Copy, PartialEq, Eq, Debug)]
pub(crate) enum Dax {
    /// `dax`, `dax=always`.
    Always,
    /// `dax=never`.
    Never,
}

impl Dax {
    /// `always`'s value in [`DAX_ENUM`].
    const ALWAYS: u32 = 1;
    /// `never`'s.
    const NEVER: u32 = 2;
}

/// The on/off mount options (the `EROFS_MOUNT_*` bits of `sbi->opt.mount_opt` but DAX, which
/// is a [`Dax`]).
#[derive(Clone, Copy, PartialEq, Eq, Default, Debug)]
pub(crate) struct MountFlags(u8);

impl MountFlags {
    /// `user_xattr` (`XATTR_USER`).
    pub(crate) const USER_XATTR: Self = Self(1 << 0);
    /// `acl` (`POSIX_ACL`).
    pub(crate) const ACL: Self = Self(1 << 1);
    /// `directio` (`DIRECT_IO`): file-backed mounts read their backing file with O_DIRECT.
    pub(crate) const DIRECT_IO: Self = Self(1 << 2);
    /// `decomp_pcpu_kthreads`: decompression on per-CPU kthreads.
    pub(crate) const PCPU_KTHREADS: Self = Self(1 << 3);
    /// `inode_share` (`INODE_SHARE`), with `domain_id=`.
    pub(crate) const INODE_SHARE: Self = Self(1 << 4);

    /// Whether every flag of `f` is set.
    pub(crate) fn contains(self, f: Self) -> bool {
        self.0 & f.0 == f.0
    }

    /// Sets (`on`) or clears the flags of `f`.
    pub(crate) fn set(&mut self, f: Self, on: bool) {
        if on {
            self.0 |= f.0;
        } else {
            self.0 &= !f.0;
        }
    }
}

impl core::ops::BitOr for MountFlags {
    type Output = Self;

    fn bitor(self, rhs: Self) -> Self {
        Self(self.0 | rhs.0)
    }
}

/// The options a remount replaces (`sbi->opt` of the C driver): plain values.
#[derive(Clone, Copy, PartialEq, Eq, Debug)]
pub(crate) struct SbOpts {
    /// The on/off options.
    pub(crate) flags: MountFlags,
    /// `dax=`, if given.
    pub(crate) dax: Option<Dax>,
    /// `cache_strategy=`.
    pub(crate) cache_strategy: CacheStrategy,
    /// `decomp_split=`.
    pub(crate) split: Split,
}

impl SbOpts {
    /// The options as one word: the flags in bits 0-7, `dax` in 8-9, the cache strategy in
    /// 10-11, `decomp_split` in 12-13.
    const fn pack(self) -> u32 {
        let dax = match self.dax {
            None => 0,
            Some(Dax::Always) => 1,
            Some(Dax::Never) => 2,
        };
        let cache = match self.cache_strategy {
            CacheStrategy::Disabled => 0,
            CacheStrategy::ReadAhead => 1,
            CacheStrategy::ReadAround => 2,
        };
        let split = match self.split {
            Split::Auto => 0,
            Split::Force => 1,
            Split::Off => 2,
        };
        // CAST: widening.
        (self.flags.0 as u32) | (dax << 8) | (cache << 10) | (split << 12)
    }

    /// The options [`SbOpts::pack`] packed.
    const fn unpack(v: u32) -> Self {
        // CAST: the low byte holds the flags (`pack`).
        let flags = MountFlags((v & 0xff) as u8);
        let dax = match (v >> 8) & 3 {
            1 => Some(Dax::Always),
            2 => Some(Dax::Never),
            _ => None,
        };
        let cache_strategy = match (v >> 10) & 3 {
            0 => CacheStrategy::Disabled,
            1 => CacheStrategy::ReadAhead,
            _ => CacheStrategy::ReadAround,
        };
        let split = match (v >> 12) & 3 {
            1 => Split::Force,
            2 => Split::Off,
            _ => Split::Auto,
        };
        Self {
            flags,
            dax,
            cache_strategy,
            split,
        }
    }
}

// `unpack` inverts `pack` for every value of every field.
const _: () = {
    let daxes = [None, Some(Dax::Always), Some(Dax::Never)];
    let caches = [
        CacheStrategy::Disabled,
        CacheStrategy::ReadAhead,
        CacheStrategy::ReadAround,
    ];
    let splits = [Split::Auto, Split::Force, Split::Off];
    let mut flags = 0u32;
    while flags <= 0xff {
        let mut d = 0;
        while d < daxes.len() {
            let mut c = 0;
            while c < caches.len() {
                let mut p = 0;
                while p < splits.len() {
                    // CAST: `flags <= 0xff`.
                    let o = SbOpts {
                        flags: MountFlags(flags as u8),
                        dax: daxes[d],
                        cache_strategy: caches[c],
                        split: splits[p],
                    };
                    assert!(SbOpts::unpack(o.pack()).pack() == o.pack());
                    assert!(SbOpts::unpack(o.pack()).flags.0 == o.flags.0);
                    p += 1;
                }
                c += 1;
            }
            d += 1;
        }
        flags += 1;
    }
};

/// The [`SbOpts`] of a mounted superblock, which a remount replaces while readers look at
/// them: one word, so that a reader sees all of one set.
pub(crate) struct AtomicSbOpts(AtomicU32);

impl AtomicSbOpts {
    /// Holds `o`.
    pub(crate) fn new(o: SbOpts) -> Self {
        Self(AtomicU32::new(o.pack()))
    }

    /// The current options.
    pub(crate) fn load(&self) -> SbOpts {
        // ORDERING: plain option values; readers need no ordering with other memory.
        SbOpts::unpack(self.0.load(Ordering::Relaxed))
    }

    /// Replaces the options.
    pub(crate) fn store(&self, o: SbOpts) {
        // ORDERING: see `load`.
        self.0.store(o.pack(), Ordering::Relaxed);
    }

    /// Changes the options with `f`, atomically with a remount or another change.
    pub(crate) fn update(&self, f: impl Fn(SbOpts) -> SbOpts) {
        // ORDERING: see `load`.
        let _ = self
            .0
            .fetch_update(Ordering::Relaxed, Ordering::Relaxed, |v| {
                Some(f(SbOpts::unpack(v)).pack())
            });
    }
}

/// The parsed mount options, owned by the fs_context and lent to `fill_super` and
/// `reconfigure` (`struct erofs_mount_opts` and the fs_context parts of `erofs_sb_info`).
pub(crate) struct MountOpts {
    /// What a remount may change.
    pub(crate) sb: SbOpts,
    /// `fsoffset=`: where the image starts in its device or file.
    pub(crate) fsoffset: u64,
    /// The `device=` paths, in order (at most [`MAX_DEVICES`]).
    pub(crate) devices: KVec<CString>,
    /// `decomp_accel=`: the crypto driver to offload DEFLATE to (shorter than
    /// `CRYPTO_MAX_ALG_NAME`).
    pub(crate) accel: Option<CString>,
    /// `decomp_accel_min=`: the smallest pcluster offloaded, in bytes.
    pub(crate) accel_min: u32,
    /// `domain_id=`.
    pub(crate) domain_id: Option<ParamString>,
}

impl MountOptions for MountOpts {
    const PARAMS: Params = PARAMETERS.params();

    /// The C driver's defaults (`erofs_default_options`): `user_xattr`, `acl`,
    /// `cache_strategy=readaround`.
    fn new() -> Self {
        MountOpts {
            sb: SbOpts {
                flags: MountFlags::USER_XATTR | MountFlags::ACL,
                dax: None,
                cache_strategy: CacheStrategy::ReadAround,
                split: Split::Auto,
            },
            fsoffset: 0,
            devices: KVec::new(),
            accel: None,
            accel_min: ACCEL_MIN_DEFAULT,
            domain_id: None,
        }
    }

    /// Applies one option (`erofs_fc_parse_param`).
    fn apply(&mut self, fc: &FcLog<'_>, key: u8, value: Value<'_>) -> Result {
        let opt = Opt::new(key, value).ok_or(EINVAL)?;
        let flags = &mut self.sb.flags;
        match opt {
            Opt::UserXattr(on) => flags.set(MountFlags::USER_XATTR, on),
            Opt::Acl(on) => flags.set(MountFlags::ACL, on),
            Opt::DirectIo(on) => flags.set(MountFlags::DIRECT_IO, on),
            Opt::PcpuKthreads(on) => flags.set(MountFlags::PCPU_KTHREADS, on),
            Opt::InodeShare => flags.set(MountFlags::INODE_SHARE, true),
            Opt::CacheStrategy(c) => self.sb.cache_strategy = c,
            Opt::Split(v) => self.sb.split = v,
            Opt::Fsoffset(off) => self.fsoffset = off,
            Opt::DecompAccelMin(min) => self.accel_min = min,
            Opt::DecompAccel(name) => {
                if name.as_cstr().to_bytes().len() >= Accel::NAME_LEN {
                    return Err(fc.invalfc(format_args!("decomp_accel: driver name too long")));
                }
                self.accel = Some(CString::try_from(name.as_cstr())?);
            }
            Opt::Dax(mode) => {
                // As erofs_fc_set_dax_mode(): DAX options exist only in kernels with FS_DAX.
                if !cfg!(CONFIG_FS_DAX) {
                    return Err(fc.invalfc(format_args!("dax options not supported")));
                }
                self.sb.dax = Some(mode);
            }
            Opt::DomainId(d) => self.domain_id = Some(d.take().ok_or(EINVAL)?),
            Opt::Device(path) => {
                if self.devices.len() >= MAX_DEVICES {
                    return Err(
                        fc.invalfc(format_args!("too many devices (at most {MAX_DEVICES})"))
                    );
                }
                self.devices
                    .push(CString::try_from(path.as_cstr())?, GFP_KERNEL)?;
            }
        }
        Ok(())
    }

    /// Option combinations refused before the image is read (`erofs_fc_fill_super`).
    fn validate(&self, fc: &FcLog<'_>) -> Result {
        let share = self.sb.flags.contains(MountFlags::INODE_SHARE);
        if share && self.domain_id.is_none() {
            return Err(fc.invalfc(format_args!("domain_id is needed when inode_share is on")));
        }
        if share && self.sb.dax == Some(Dax::Always) {
            return Err(fc.invalfc(format_args!("FSDAX is not allowed when inode_share is on")));
        }
        Ok(())
    }

    fn posix_acl(&self) -> bool {
        self.sb.flags.contains(MountFlags::ACL)
    }

    fn device_offset(&self) -> u64 {
        self.fsoffset
    }
}

/// One option as `fs_parse()` found it in [`PARAMETERS`], typed by its key.
enum Opt<'a> {
    UserXattr(bool),
    Acl(bool),
    CacheStrategy(CacheStrategy),
    Split(Split),
    Fsoffset(u64),
    Device(ParamStr<'a>),
    DirectIo(bool),
    PcpuKthreads(bool),
    DecompAccel(ParamStr<'a>),
    DecompAccelMin(u32),
    Dax(Dax),
    DomainId(ParamStr<'a>),
    InodeShare,
}

impl<'a> Opt<'a> {
    /// Option `key` of [`PARAMETERS`] with `value`, typed; `None` for a value its key cannot
    /// have.
    fn new(key: u8, value: Value<'a>) -> Option<Self> {
        Some(match (key, value) {
            (key::USER_XATTR, Value::Flag(on)) => Opt::UserXattr(on),
            (key::ACL, Value::Flag(on)) => Opt::Acl(on),
            (key::DIRECTIO, Value::Flag(on)) => Opt::DirectIo(on),
            (key::DECOMP_PCPU_KTHREADS, Value::Flag(on)) => Opt::PcpuKthreads(on),
            (key::INODE_SHARE, Value::Flag(_)) => Opt::InodeShare,
            (key::CACHE_STRATEGY, Value::Enum(v)) => {
                Opt::CacheStrategy(CacheStrategy::from_raw(v)?)
            }
            (key::DECOMP_SPLIT, Value::Enum(v)) => Opt::Split(Split::from_raw(v)?),
            (key::FSOFFSET, Value::U64(off)) => Opt::Fsoffset(off),
            (key::DECOMP_ACCEL_MIN, Value::U32(min)) => Opt::DecompAccelMin(min),
            (key::DEVICE, Value::Str(s)) => Opt::Device(s),
            (key::DECOMP_ACCEL, Value::Str(s)) => Opt::DecompAccel(s),
            (key::DAX, Value::Flag(_)) => Opt::Dax(Dax::Always),
            (key::DAX_ENUM, Value::Enum(Dax::ALWAYS)) => Opt::Dax(Dax::Always),
            (key::DAX_ENUM, Value::Enum(Dax::NEVER)) => Opt::Dax(Dax::Never),
            (key::DOMAIN_ID, Value::Str(s)) => Opt::DomainId(s),
            _ => return None,
        })
    }
}

/// Readies the stream decoders the image's algorithms need, sized for its dictionaries and
/// windows (`z_erofs_parse_cfgs` calling each decompressor's `config`).
fn setup_decompressors(sb: &SuperBlock<'_, New>, sbi: &SbInfo) -> Result {
    use core_::ondisk::{
        Z_EROFS_COMPRESSION_DEFLATE,
        Z_EROFS_COMPRESSION_LZMA,
        Z_EROFS_COMPRESSION_ZSTD, //
    };
    let algs = sbi.available_compr_algs;
    // OVERFLOW: shifts by at most 15, and `zstd_windowlog` (a `u8`) plus 10 fits in a `u32`;
    // the shift itself is checked.
    let needs = [
        (Z_EROFS_COMPRESSION_LZMA, "lzma", sbi.lzma_dict_size),
        (
            Z_EROFS_COMPRESSION_DEFLATE,
            "deflate",
            1u32 << sbi.deflate_windowbits.min(15),
        ),
        (
            Z_EROFS_COMPRESSION_ZSTD,
            "zstd",
            1u32.checked_shl(u32::from(sbi.zstd_windowlog) + 10)
                .unwrap_or(0),
        ),
    ];
    for (alg, name, dictsize) in needs {
        if algs & (1 << alg) == 0 {
            continue;
        }
        crate::decompressor::stream_config(alg, dictsize).inspect_err(|e| {
            sb.err(format_args!(
                "failed to set up {name} decompression (dictionary {dictsize}): {e:?}"
            ))
        })?;
    }
    Ok(())
}

/// Reads the device table and opens the `device=` devices, which must match it in number
/// (`erofs_scan_devices`).
fn scan_devices(
    sb: &SuperBlock<'_, New>,
    sbi: &SbInfo,
    dev: &Device,
    opts: &MountOpts,
) -> Result<(KVec<OpenDevice>, KVec<DeviceInfo>)> {
    let ondisk = sbi.ondisk_extra_devices();
    let mut devs = KVec::new();
    let mut flat = KVec::new();
    let given = opts.devices.len();
    if given != 0 && usize::from(ondisk) != given {
        sb.err(format_args!(
            "extra devices don't match (ondisk {ondisk}, given {given})"
        ));
        return Err(EINVAL);
    }
    for i in 0..ondisk {
        let info = sbi
            .device(dev, i)
            .inspect_err(|e| report(sb, e))
            .map_err(to_kernel)?;
        match opts.devices.get(usize::from(i)) {
            None => flat.push(info, GFP_KERNEL)?,
            Some(path) => devs.push(
                OpenDevice {
                    dev: ExtraDevice::open(sb, path, dev.is_file())?,
                    info,
                },
                GFP_KERNEL,
            )?,
        }
    }
    Ok((devs, flat))
}
