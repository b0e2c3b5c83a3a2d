// SPDX-License-Identifier: GPL-2.0-only
//! Mounting: superblock reading, the per-mount state, statfs and error reports.
//! C counterpart: fs/erofs/super.c.
#![deny(unsafe_code)]

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
use crate::inode::iget;
use crate::vfs::{
    self,
    fs_context::{
        AtomicSbOpts,
        Dax,
        MountFlags,
        MountOpts, //
    },
    zdata::{
        Accel,
        PcpuClaim,
        ZStats, //
    },
    Device,
    ExtraDevice,
    InodeSlot,
    Log,
    New,
    SbSysfs,
    SuperBlock, //
};
use kernel::{
    page::PAGE_SHIFT,
    page::PAGE_SIZE,
    prelude::*,
    seq_file::{
        seq_print,
        SeqFile, //
    },
    sync::{
        Arc,
        SetOnce, //
    },
};

/// Per-mount state (`struct erofs_sb_info`), owned by `s_fs_info`.
pub(crate) struct SbState {
    /// `/sys/fs/<fstype>/<disk>/` and its settings; first, so that it goes first.
    pub(crate) sysfs: SbSysfs,
    /// The decoded superblock.
    pub(crate) sbi: SbInfo,
    /// The primary device.
    pub(crate) dev: Device,
    /// The mount options a remount replaces (`sbi->opt`).
    pub(crate) opts: AtomicSbOpts,
    /// Long xattr name prefixes (`sbi->xattr_prefixes`).
    /// Read after the packed and metabox inodes, which may hold them.
    pub(crate) prefixes: SetOnce<crate::xattr::PrefixTable>,
    /// `domain_id=` with `inode_share` (without its NUL): the first part of fingerprints.
    pub(crate) domain_id: KVec<u8>,
    /// The extra devices, opened from `device=` options (`sbi->devs`).
    pub(crate) devs: KVec<ExtraDevice>,
    /// The device table, when no `device=` was given: addresses are then unified on the
    /// primary device (`devs->flatdev`).
    pub(crate) flat: KVec<DeviceInfo>,
    /// The acomp engine for DEFLATE pclusters (`decomp_accel=`); declared before `zstats`,
    /// whose debugfs directory holds its counters, so that it goes first.
    pub(crate) accel: Option<Arc<Accel>>,
    /// The `decomp_accel=` name as given, NUL-terminated (empty without one), for
    /// show_options.
    pub(crate) accel_name: KVec<u8>,
    /// `decomp_accel_min=`: smaller (compressed) pclusters are decoded in software.
    pub(crate) accel_min: u32,
    /// Decompression latency statistics, in debugfs.
    pub(crate) zstats: ZStats,
    /// Our claim on the per-CPU decompression kthreads, while `decomp_pcpu_kthreads` is on.
    pub(crate) pcpu: PcpuClaim,
    /// The packed inode, holding fragments (`sbi->packed_inode`).
    pub(crate) packed: InodeSlot,
    /// Done compressed-read requests, kept for the next reads.
    pub(crate) requests: crate::zdata::RequestPool,
    /// Kept pclusters being read, which other reads of their file may hand their bytes to.
    pub(crate) shares: crate::zdata::Shares,
}

impl SbState {
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
    pub(crate) fn map_dev(&self, device_id: u16, pa: u64) -> Result<(Option<&ExtraDevice>, u64)> {
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

/// The algorithms this driver decompresses (bits of `available_compr_algs`).
const SUPPORTED_ALGS: u16 = (1 << core_::ondisk::Z_EROFS_COMPRESSION_LZ4)
    | (1 << core_::ondisk::Z_EROFS_COMPRESSION_LZMA)
    | (1 << core_::ondisk::Z_EROFS_COMPRESSION_DEFLATE)
    | (1 << core_::ondisk::Z_EROFS_COMPRESSION_ZSTD);

/// Logs a core error once, at the VFS boundary, with the C driver's wording and the nid.
pub(crate) fn report(sb: impl Log, e: &core_::Error) {
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
        core_::Error::Unsupported(u) => report_unsupported(&sb, u),
        core_::Error::NotErofs => sb.log(true, format_args!("cannot find valid erofs superblock")),
        core_::Error::BadGeometry => sb.log(true, format_args!("device too small for the image")),
        core_::Error::Io(code) => sb.log(true, format_args!("I/O error {code} reading metadata")),
        core_::Error::StreamLayout => sb.log(true, format_args!("decoder error")),
        // As in C, a failed allocation is not logged: the allocator has warned.
        core_::Error::NoMemory => {}
    }
}

/// Logs why something is unsupported.
fn report_unsupported(sb: &impl Log, u: &Unsupported) {
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
            format_args!("unsupported datalayout {datalayout} of nid {nid}"),
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
        Unsupported::Algorithm { nid, alg } => {
            sb.log(true, format_args!("unknown compression algorithm {alg} for nid {nid}, please upgrade kernel"))
        }
        Unsupported::Algorithms(bits) => {
            sb.log(true, format_args!("unidentified algorithms {bits:#x}, please upgrade kernel"))
        }
        Unsupported::ComprCfgs { alg } => {
            let name = match alg {
                0 => "lz4",
                1 => "lzma (dictionary over 8 MiB or under 4 KiB, or unknown format)",
                2 => "deflate (window over 32 KiB)",
                3 => "zstd (window over 1 MiB, or unknown format)",
                _ => "unknown",
            };
            sb.log(true, format_args!("unsupported {name} compression configuration"))
        }
        Unsupported::LclusterBits { nid, bits } => {
            sb.log(true, format_args!("unsupported lcluster size 2^{bits} @ nid {nid}"))
        }
        Unsupported::PclusterSize(nid) => sb.log(
            true,
            format_args!("pcluster over 1 MiB or extent over 12 MiB @ nid {nid}: not supported, as in the C driver"),
        ),
        Unsupported::PlainOutput(nid) => {
            sb.log(true, format_args!("plain pcluster shorter than its output @ nid {nid}"))
        }
    }
}

/// Reads the superblock and root inode (`erofs_fc_fill_super`).
pub(crate) fn fill_super(sb: SuperBlock<'_, New>, dev: Device, opts: &MountOpts) -> Result {
    sb.prepare()?;
    // The superblock and the rest of its block: at most up to the end of the first page.
    let len =
        (PAGE_SIZE - 1024).min(usize::try_from(dev.bytes().saturating_sub(1024)).unwrap_or(0));
    let mut data = KVec::from_elem(0u8, len, GFP_KERNEL)?;
    let mut sbi = dev
        .read_meta(core_::ondisk::EROFS_SUPER_OFFSET, &mut data)
        .and_then(|()| SbInfo::parse(&data, PAGE_SHIFT as u8, vfs::crc32c))
        .inspect_err(|e| report(&sb, e))
        .map_err(vfs::to_kernel)?;
    sbi.load_compr_cfgs(&dev)
        .inspect_err(|e| report(&sb, e))
        .map_err(vfs::to_kernel)?;
    let unsupported = sbi.available_compr_algs & !SUPPORTED_ALGS;
    if unsupported != 0 {
        sb.log(
            false,
            format_args!("compression algorithms {unsupported:#x} are not supported by erofs_rs yet: their files fail to read"),
        );
    }
    drop(data);
    if sbi.device_bytes().is_none_or(|b| b > dev.bytes()) && !dev.is_file() {
        // A truncated device; the C driver finds out on the first read past its end.
        sb.log(
            false,
            format_args!(
                "device is smaller than the {} blocks the image declares",
                sbi.blocks
            ),
        );
    }

    // OVERFLOW: `blksz()` is `1 << blkszbits`, never 0.
    if opts.fsoffset % sbi.blksz() != 0 {
        sb.log(
            true,
            format_args!(
                "fsoffset {} is not aligned to block size {}",
                opts.fsoffset,
                sbi.blksz()
            ),
        );
        return Err(EINVAL);
    }
    // DAX reaches here only on kernels with FS_DAX (the parser refuses it otherwise, as the C
    // driver does); erofs_rs has no DAX path.
    let mut live = opts.sb;
    if live.dax == Some(Dax::Always) {
        sb.log(
            true,
            format_args!("DAX is not supported by erofs_rs. Turning off DAX."),
        );
        live.dax = None;
    }
    if live.flags.contains(MountFlags::INODE_SHARE) && !sbi.has_ishare_xattrs() {
        sb.log(
            false,
            format_args!("on-disk ishare xattrs not found. Turning off inode_share."),
        );
        live.flags.set(MountFlags::INODE_SHARE, false);
    }
    let mut domain_id = KVec::new();
    if live.flags.contains(MountFlags::INODE_SHARE) {
        // The fs_context refused inode_share without domain_id.
        if let Some(d) = opts.domain_id.as_ref() {
            domain_id.extend_from_slice(d.as_bytes(), GFP_KERNEL)?;
        }
        sb.log(
            false,
            format_args!("page cache sharing (inode_share) in use"),
        );
    }
    setup_decompressors(&sb, &sbi)?;
    let (devs, flat) = scan_devices(&sb, &sbi, &dev, opts)?;

    let root_nid = sbi.root_nid;
    let blkszbits = sbi.blkszbits;
    let uuid = sbi.uuid;
    let packed_nid = sbi.packed_nid;
    let has_fragments = sbi.has_fragments();
    let metabox_nid = sbi.has_metabox().then_some(sbi.metabox_nid);
    let zstats = ZStats::new(&sb)?;
    // decomp_accel=, or the global /sys/fs/erofs_rs/accel; a missing driver leaves software.
    let mut accel_name = KVec::new();
    if let Some(name) = opts.accel.as_deref() {
        accel_name.extend_from_slice(name.to_bytes_with_nul(), GFP_KERNEL)?;
    } else if let Some(buf) = Accel::global_default() {
        let n = buf
            .iter()
            .position(|&b| b == 0)
            .map_or(buf.len(), |n| n + 1);
        accel_name.extend_from_slice(&buf[..n], GFP_KERNEL)?;
    }
    let has_deflate =
        sbi.available_compr_algs & (1 << core_::ondisk::Z_EROFS_COMPRESSION_DEFLATE) != 0;
    let accel = match has_deflate
        .then(|| Accel::open(&zstats, &accel_name, sbi.deflate_windowbits))
        .flatten()
    {
        Some(a) => Some(Arc::new(a, GFP_KERNEL)?),
        None => None,
    };
    let state = SbState {
        sysfs: SbSysfs::new(),
        sbi,
        dev,
        opts: AtomicSbOpts::new(live),
        prefixes: SetOnce::new(),
        domain_id,
        devs,
        flat,
        accel,
        accel_name,
        accel_min: opts.accel_min,
        zstats,
        pcpu: PcpuClaim::new(&sb)?,
        packed: InodeSlot::new(None),
        requests: crate::zdata::RequestPool::new()?,
        shares: crate::zdata::Shares::new()?,
    };
    state
        .pcpu
        .set(live.flags.contains(MountFlags::PCPU_KTHREADS))?;
    sb.set_blocksize(blkszbits)
        .inspect_err(|_| sb.log(true, format_args!("failed to set erofs blksize")))?;
    sb.set_uuid(&uuid);
    // Compressed data is read into a page cache of our own (`erofs_init_managed_cache`), on
    // block devices and backing files alike; if `fill_super` fails before the state is
    // attached, dropping the device gives it back.
    state.dev.zcache.init(&sb)?;
    let sb = sb.attach(KBox::new(state, GFP_KERNEL)?);

    // The metabox inode before the root, which may live in it. Until the root is set,
    // `put_super` does not run: give both inodes back here on failure.
    let root = (|| {
        if let Some(nid) = metabox_nid {
            sb.log(false, format_args!("metadata compression (metabox) in use"));
            sb.state()
                .dev
                .metabox
                .set(iget_internal(sb, nid, "metabox")?);
        }
        let root = iget(sb, root_nid)?;
        if !root.inode().info().is_dir() {
            sb.log(
                true,
                format_args!(
                    "rootino(nid {}) is not a directory(i_mode {:o})",
                    root_nid.0,
                    root.inode().info().mode
                ),
            );
            return Err(EINVAL);
        }
        sb.set_root(root)
    })();
    if root.is_err() {
        sb.state().dev.metabox.release();
        sb.state().dev.zcache.release();
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
        .map_err(vfs::to_kernel)?;
    sb.state().prefixes.populate(prefixes);
    sb.state().sysfs.register(sb)?;
    sb.log(
        false,
        format_args!("mounted with root inode @ nid {}.", root_nid.0),
    );
    Ok(())
}

/// The metabox or packed inode, whose data is read through its page cache: it must be a
/// regular file, as mkfs.erofs makes it. A special file's mapping has no `read_folio` (the C
/// driver of 7.3 calls that NULL pointer on such an image).
fn iget_internal(sb: SuperBlock<'_>, nid: u64, what: &str) -> Result<vfs::InodeRef> {
    let inode = iget(sb, core_::Nid(nid))?;
    let mode = inode.inode().info().mode;
    if mode & core_::ondisk::mode::S_IFMT != core_::ondisk::mode::S_IFREG {
        sb.log(
            true,
            format_args!("bogus {what} inode (i_mode {mode:o}) @ nid {nid}"),
        );
        return Err(EFSCORRUPTED);
    }
    Ok(inode)
}

/// The options of a mounted superblock, as `/proc/mounts` shows them (`erofs_show_options`).
pub(crate) fn show_options(m: &SeqFile, sb: SuperBlock<'_>) {
    let st = sb.state();
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
    if on(MountFlags::DIRECT_IO) && st.dev.is_file() {
        seq_print!(m, ",directio");
    }
    if st.dev.fsoff() != 0 {
        seq_print!(m, ",fsoffset={}", st.dev.fsoff());
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
        vfs::zdata::stream_config(alg, dictsize).inspect_err(|e| {
            sb.log(
                true,
                format_args!(
                    "failed to set up {name} decompression (dictionary {dictsize}): {e:?}"
                ),
            )
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
) -> Result<(KVec<ExtraDevice>, KVec<DeviceInfo>)> {
    let ondisk = sbi.ondisk_extra_devices();
    let mut devs = KVec::new();
    let mut flat = KVec::new();
    let given = opts.devices.len();
    if given != 0 && usize::from(ondisk) != given {
        sb.log(
            true,
            format_args!("extra devices don't match (ondisk {ondisk}, given {given})"),
        );
        return Err(EINVAL);
    }
    for i in 0..ondisk {
        let info = sbi
            .device(dev, i)
            .inspect_err(|e| report(sb, e))
            .map_err(vfs::to_kernel)?;
        match opts.devices.get(usize::from(i)) {
            None => flat.push(info, GFP_KERNEL)?,
            Some(path) => devs.push(
                ExtraDevice::open(sb, path, dev.is_file(), info)?,
                GFP_KERNEL,
            )?,
        }
    }
    Ok((devs, flat))
}
