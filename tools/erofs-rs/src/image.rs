// SPDX-License-Identifier: GPL-2.0-only
//! An opened image and the per-worker reader over it: metadata through a small block cache,
//! file data through the core's maps (`map::map_blocks`, `zmap::map_blocks`) and the core's
//! decompression rules (`decompress`), with decoders from libraries.
//!
//! All reads are `pread(2)`s of the image (and the extra devices): nothing is mapped, so the
//! memory used is what the workers buffer, not the image.

use crate::error::{
    Error,
    Result, //
};
use erofs_core::{
    decompress::{
        fixup_insize,
        fixup_scan,
        partial_decoding,
        transform_plain, //
    },
    inode::{
        read_inode,
        InodeInfo, //
    },
    map::{
        map_blocks as map_flat,
        MapKind, //
    },
    ondisk,
    sb::{
        DeviceInfo,
        SbInfo,
        METABOX_POS, //
    },
    xattr,
    zmap::{
        self,
        ZInfo,
        ZMap, //
    },
    MetaRead,
    Nid, //
};
use std::cell::RefCell;
use std::fs::File;
use std::os::unix::fs::FileExt;

/// Most decoded bytes one read buffers at once for uncompressed extents.
const FLAT_CHUNK: usize = 1 << 20;

/// Bytes of one metadata cache line.
const LINE: usize = 4096;

/// Metadata cache lines per worker.
const LINES: usize = 64;

/// One device: a file, where the filesystem starts in it, and how many bytes follow.
struct Dev {
    file: File,
    off: u64,
    len: u64,
}

impl Dev {
    fn open(path: &str, off: u64) -> Result<Dev> {
        let file = File::open(path).map_err(|e| Error::msg(format!("{path}: {e}")))?;
        let len = file
            .metadata()
            .map_err(|e| Error::msg(format!("{path}: {e}")))?
            .len()
            .saturating_sub(off);
        Ok(Dev { file, off, len })
    }

    /// Reads `buf.len()` bytes at `pos` of the device, which must lie on it.
    fn read(&self, pos: u64, buf: &mut [u8]) -> erofs_core::Result<()> {
        let end = pos.checked_add(buf.len() as u64);
        if end.is_none_or(|e| e > self.len) {
            return Err(erofs_core::Error::Io(libc::EIO));
        }
        self.file
            .read_exact_at(buf, pos + self.off)
            .map_err(|e| erofs_core::Error::Io(e.raw_os_error().unwrap_or(libc::EIO)))
    }
}

/// An extra device: opened from `--device`, or inside the primary one (`uniaddr`).
struct Extra {
    info: DeviceInfo,
    dev: Option<Dev>,
}

/// The opened image: superblock, devices, and what every reader needs (the metabox's data,
/// the packed inode, the long xattr prefixes).
pub struct Image {
    /// The superblock.
    pub sbi: SbInfo,
    main: Dev,
    extra: Vec<Extra>,
    /// The metabox inode's data, decoded whole at open (inode metadata only).
    metabox: Option<Vec<u8>>,
    /// The packed inode, for fragments.
    packed: Option<(InodeInfo, Option<ZInfo>)>,
    /// Long xattr name prefixes: `(base_index, infix)`.
    pub prefixes: Vec<(u8, Vec<u8>)>,
}

/// The kernel's crc32c (reflected Castagnoli, no inversions), for the superblock only.
fn crc32c(mut crc: u32, data: &[u8]) -> u32 {
    for &b in data {
        crc ^= u32::from(b);
        for _ in 0..8 {
            crc = (crc >> 1) ^ if crc & 1 != 0 { 0x82F6_3B78 } else { 0 };
        }
    }
    crc
}

impl Image {
    /// Opens `path` (the filesystem starting `offset` bytes in), with extra devices in the
    /// order of the device table.
    pub fn open(path: &str, offset: u64, devices: &[String]) -> Result<Image> {
        let main = Dev::open(path, offset)?;
        // The superblock block: 1024 bytes in, up to the end of the first 4 KiB (the page
        // size the core allows, as on x86-64), or less on a short image.
        let mut sbdata = vec![0u8; 4096 - 1024];
        let avail = main.len.saturating_sub(1024).min(sbdata.len() as u64) as usize;
        sbdata.truncate(avail);
        main.read(1024, &mut sbdata)
            .map_err(|e| Error::core(None, e).context("cannot read the superblock"))?;
        let mut sbi = SbInfo::parse(&sbdata, 12, crc32c).map_err(|e| Error::core(None, e))?;
        let mut img = Image {
            sbi: sbi.clone(),
            main,
            extra: Vec::new(),
            metabox: None,
            packed: None,
            prefixes: Vec::new(),
        };
        {
            let cx = Ctx::new(&img);
            sbi.load_compr_cfgs(&cx).map_err(|e| Error::core(None, e))?;
        }
        img.sbi = sbi;
        let n = img.sbi.ondisk_extra_devices();
        if devices.len() > usize::from(n) {
            return Err(Error::msg(format!(
                "{} devices given, the image has {n}",
                devices.len()
            )));
        }
        for i in 0..n {
            let info = {
                let cx = Ctx::new(&img);
                img.sbi
                    .device(&cx, i)
                    .map_err(|e| Error::core(None, e).context("device table"))?
            };
            let dev = match devices.get(usize::from(i)) {
                Some(p) => Some(Dev::open(p, 0)?),
                None => None,
            };
            img.extra.push(Extra { info, dev });
        }
        if img.sbi.has_metabox() {
            let nid = img.sbi.metabox_nid;
            let data = {
                let cx = Ctx::new(&img);
                let vi =
                    read_inode(&img.sbi, &cx, Nid(nid)).map_err(|e| Error::core(Some(nid), e))?;
                let zi = cx.zinfo(&vi)?;
                // The data is allocated whole: its size must be one the device can hold
                // (decoded data at most 256 times the device for a compressed metabox), not
                // any i_size up to 2^63, which would abort on the allocation.
                let limit = if zi.is_some() {
                    img.main.len.saturating_mul(256)
                } else {
                    img.main.len
                };
                if vi.size > limit {
                    return Err(Error::nid(
                        nid,
                        format!(
                            "metabox of {} bytes on a device of {}",
                            vi.size, img.main.len
                        ),
                    ));
                }
                let mut data = vec![
                    0u8;
                    usize::try_from(vi.size)
                        .map_err(|_| Error::nid(nid, "metabox too large"))?
                ];
                cx.read_range(&vi, zi.as_ref(), 0, &mut data)?;
                data
            };
            img.metabox = Some(data);
        }
        if img.sbi.has_fragments() && img.sbi.packed_nid != 0 {
            let nid = img.sbi.packed_nid;
            let packed = {
                let cx = Ctx::new(&img);
                let vi =
                    read_inode(&img.sbi, &cx, Nid(nid)).map_err(|e| Error::core(Some(nid), e))?;
                let zi = cx.zinfo(&vi)?;
                (vi, zi)
            };
            img.packed = Some(packed);
        }
        if img.sbi.xattr_prefix_count != 0 {
            let mut items = Vec::new();
            {
                let cx = Ctx::new(&img);
                let pos = u64::from(img.sbi.xattr_prefix_start) * 4;
                let mut push = |base: u8, infix: &[u8]| -> erofs_core::Result<()> {
                    items.push((base, infix.to_vec()));
                    Ok(())
                };
                let plain =
                    img.sbi.feature_compat & ondisk::EROFS_FEATURE_COMPAT_PLAIN_XATTR_PFX != 0;
                let count = img.sbi.xattr_prefix_count;
                let r = if plain {
                    xattr::read_prefixes(&cx, pos, count, &mut push)
                } else if img.sbi.has_metabox() {
                    xattr::read_prefixes(&cx, pos | METABOX_POS, count, &mut push)
                } else if let Some((vi, zi)) = &img.packed {
                    let m = InodeMeta {
                        cx: &cx,
                        vi,
                        zi: zi.as_ref(),
                    };
                    xattr::read_prefixes(&m, pos, count, &mut push)
                } else {
                    xattr::read_prefixes(&cx, pos, count, &mut push)
                };
                r.map_err(|e| Error::core(None, e).context("long xattr prefixes"))?;
            }
            img.prefixes = items;
        }
        Ok(img)
    }

    /// The packed inode (fragments), if the image has one.
    pub fn packed_inode(&self) -> Option<InodeInfo> {
        self.packed.as_ref().map(|(vi, _)| *vi)
    }

    /// Finds the device and position of data at `pa` of device `device_id`, as the kernel's
    /// `erofs_map_dev`: extra devices given on the command line, else inside the primary
    /// device at their unified address.
    fn data_dev(&self, device_id: u16, pa: u64, nid: u64) -> Result<(&Dev, u64)> {
        let bad = || Error::nid(nid, "extent address overflows");
        if device_id != 0 {
            let e = self
                .extra
                .get(usize::from(device_id - 1))
                .ok_or_else(|| Error::nid(nid, format!("no device {device_id}")))?;
            return match &e.dev {
                Some(d) => Ok((d, pa)),
                None => {
                    let base = self.sbi.pos(e.info.uniaddr).ok_or_else(bad)?;
                    Ok((&self.main, pa.checked_add(base).ok_or_else(bad)?))
                }
            };
        }
        for e in &self.extra {
            let Some(d) = &e.dev else { continue };
            if e.info.uniaddr == 0 {
                continue;
            }
            let start = self.sbi.pos(e.info.uniaddr).ok_or_else(bad)?;
            let end = start.saturating_add(self.sbi.pos(e.info.blocks).ok_or_else(bad)?);
            if (start..end).contains(&pa) {
                return Ok((d, pa - start));
            }
        }
        Ok((&self.main, pa))
    }
}

/// The decoders of one worker, created on first use.
#[derive(Default)]
struct Decoders {
    lzma: Option<crate::lzma::Lzma>,
    deflate: Option<libdeflater::Decompressor>,
    zstd: Option<zstd_safe::DCtx<'static>>,
}

/// The per-worker buffers and cache; the worker's whole buffered data.
struct Bufs {
    /// Metadata cache: line number (position / LINE) and its bytes, direct-mapped.
    tags: [u64; LINES],
    lines: Vec<u8>,
    /// An inline pcluster.
    cbuf: Vec<u8>,
    /// Pclusters on a device, read ahead.
    ra: ReadAhead,
    /// The decoded extent.
    obuf: Vec<u8>,
    /// Scratch for decoders that cannot stop early (partial decoding).
    scratch: Vec<u8>,
    /// The last decoded extent of the packed inode: its `la`, length, and bytes.
    packed_la: u64,
    packed_len: usize,
    packed: Vec<u8>,
}

/// Most bytes of pclusters read ahead at once.
const RA_MAX: usize = 128 << 10;

/// Read-ahead of pclusters: a window of a device that grows (doubling, up to [`RA_MAX`])
/// while the pclusters asked for follow each other, so that small pclusters cost one
/// `pread` for many; a jump reads the pcluster alone. The window stops at what the caller
/// says may follow (the rest of the file's compressed blocks): files that lie apart do not
/// read each other's data.
#[derive(Default)]
struct ReadAhead {
    buf: Vec<u8>,
    /// The device the window is of (its address, as an identity), and where it starts.
    dev: usize,
    pos: u64,
    /// Valid bytes of `buf`.
    len: usize,
    /// The end of the last pcluster asked for, and the window size that read it.
    next: u64,
    size: usize,
}

impl ReadAhead {
    /// The `len` bytes at `pos` of `dev`, reading ahead at most `ahead` bytes from `pos`.
    fn read(&mut self, dev: &Dev, pos: u64, len: usize, ahead: u64) -> erofs_core::Result<&[u8]> {
        let id = std::ptr::from_ref(dev) as usize;
        let end = pos
            .checked_add(len as u64)
            .ok_or(erofs_core::Error::Io(libc::EIO))?;
        let hit = id == self.dev && self.pos <= pos && end <= self.pos + self.len as u64;
        if !hit {
            let seq = id == self.dev && pos == self.next;
            self.size = if seq {
                (self.size * 2).clamp(len.min(RA_MAX), RA_MAX).max(len)
            } else {
                len
            };
            // Within the device: a read-ahead never fails where the pcluster alone would not.
            let n = (dev.len.saturating_sub(pos))
                .min(self.size as u64)
                .min(ahead) as usize;
            let n = n.max(len);
            self.len = 0;
            self.dev = id;
            self.pos = pos;
            dev.read(pos, grow(&mut self.buf, n))?;
            self.len = n;
        }
        self.next = end;
        let o = (pos - self.pos) as usize;
        Ok(&self.buf[o..o + len])
    }
}

/// A worker's reader over an [`Image`]: implements the core's [`MetaRead`].
pub struct Ctx<'a> {
    /// The image.
    pub img: &'a Image,
    bufs: RefCell<Bufs>,
    dec: RefCell<Decoders>,
}

impl Ctx<'_> {
    /// Metadata at `off` of the metabox inode's data (EUCLEAN if the image has none, EIO
    /// past its end).
    fn read_metabox(&self, off: u64, buf: &mut [u8]) -> erofs_core::Result<()> {
        let mbox = self
            .img
            .metabox
            .as_ref()
            .ok_or(erofs_core::Error::Io(libc::EUCLEAN))?;
        let src = usize::try_from(off)
            .ok()
            .and_then(|o| mbox.get(o..o.checked_add(buf.len())?))
            .ok_or(erofs_core::Error::Io(libc::EIO))?;
        buf.copy_from_slice(src);
        Ok(())
    }
}

impl MetaRead for Ctx<'_> {
    fn read_meta(&self, pos: u64, buf: &mut [u8]) -> erofs_core::Result<()> {
        if pos & METABOX_POS != 0 {
            return self.read_metabox(pos & !METABOX_POS, buf);
        }
        let dev = &self.img.main;
        if pos
            .checked_add(buf.len() as u64)
            .is_none_or(|e| e > dev.len)
        {
            return Err(erofs_core::Error::Io(libc::EIO));
        }
        // Most reads (an inode, an index entry) lie in one line that is cached.
        let (line, o) = (pos / LINE as u64, (pos % LINE as u64) as usize);
        if o + buf.len() <= LINE {
            let slot = (line % LINES as u64) as usize;
            let b = self.bufs.borrow();
            if b.tags[slot] == line {
                buf.copy_from_slice(&b.lines[slot * LINE + o..slot * LINE + o + buf.len()]);
                return Ok(());
            }
        }
        let mut b = self.bufs.borrow_mut();
        let b = &mut *b;
        let mut done = 0usize;
        while done < buf.len() {
            let p = pos + done as u64;
            let line = p / LINE as u64;
            let slot = (line % LINES as u64) as usize;
            let lstart = line * LINE as u64;
            let llen = (dev.len - lstart).min(LINE as u64) as usize;
            let lbuf = &mut b.lines[slot * LINE..slot * LINE + llen];
            if b.tags[slot] != line {
                b.tags[slot] = u64::MAX;
                dev.read(lstart, lbuf)?;
                b.tags[slot] = line;
            }
            let o = (p - lstart) as usize;
            let n = (llen - o).min(buf.len() - done);
            buf[done..done + n].copy_from_slice(&lbuf[o..o + n]);
            done += n;
        }
        Ok(())
    }
}

/// The data of an inode as a [`MetaRead`], for the long prefix table in the packed inode.
struct InodeMeta<'c, 'a> {
    cx: &'c Ctx<'a>,
    vi: &'c InodeInfo,
    zi: Option<&'c ZInfo>,
}

impl MetaRead for InodeMeta<'_, '_> {
    fn read_meta(&self, pos: u64, buf: &mut [u8]) -> erofs_core::Result<()> {
        let end = pos.checked_add(buf.len() as u64);
        if end.is_none_or(|e| e > self.vi.size) {
            return Err(erofs_core::Error::Io(libc::EIO));
        }
        self.cx
            .read_range(self.vi, self.zi, pos, buf)
            .map_err(|_| erofs_core::Error::Io(libc::EIO))
    }
}

/// How [`Ctx::read_extents`] treats compressed extents at the ends of its range.
#[derive(Clone, Copy, PartialEq, Eq)]
pub enum Mode {
    /// Every extent that overlaps the range, decoded up to the range's end only.
    Clip,
    /// Only extents that start in the range, decoded whole: consecutive ranges decode each
    /// extent exactly once.
    Own,
    /// Every extent that overlaps the range, decoded whole.
    Whole,
}

/// What a compressed extent decodes to, for the callers of [`Ctx::for_each_extent`].
pub enum Piece<'b> {
    /// Bytes at a logical position.
    Data(u64, &'b [u8]),
    /// A hole (reads as zeroes) from a logical position, of a length.
    Hole(u64, u64),
}

/// Where [`Ctx::read_extents`] puts an inode's data: the reader asks for room for each piece,
/// decodes (or reads) the piece straight into it, then says it is there. No buffer of the
/// reader's own lies between the decoder and the sink.
pub trait Sink {
    /// Room for the `len` bytes of data at logical position `la`, all of which the reader
    /// overwrites (its old contents do not matter).
    fn room(&mut self, la: u64, len: usize) -> Result<&mut [u8]>;
    /// The `len` bytes at `la` are in the room the last [`Sink::room`] gave.
    fn filled(&mut self, la: u64, len: usize) -> Result<()>;
    /// A hole (reads as zeroes) of `len` bytes at `la`.
    fn hole(&mut self, la: u64, len: u64) -> Result<()>;
}

/// A [`Sink`] over a buffer that hands each piece to a closure.
struct Pieces<'f, 'g> {
    f: &'f mut dyn FnMut(Piece<'_>) -> Result<()>,
    buf: &'g mut Vec<u8>,
}

impl Sink for Pieces<'_, '_> {
    fn room(&mut self, _la: u64, len: usize) -> Result<&mut [u8]> {
        Ok(grow(self.buf, len))
    }

    fn filled(&mut self, la: u64, len: usize) -> Result<()> {
        (self.f)(Piece::Data(la, &self.buf[..len]))
    }

    fn hole(&mut self, la: u64, len: u64) -> Result<()> {
        (self.f)(Piece::Hole(la, len))
    }
}

/// The packed inode's extent cache as a [`Sink`]: keeps the (first) extent decoded.
struct PackedSink<'g> {
    buf: &'g mut Vec<u8>,
    got: Option<(u64, usize)>,
}

impl Sink for PackedSink<'_> {
    fn room(&mut self, _la: u64, len: usize) -> Result<&mut [u8]> {
        Ok(grow(self.buf, len))
    }

    fn filled(&mut self, la: u64, len: usize) -> Result<()> {
        self.got = Some((la, len));
        Ok(())
    }

    fn hole(&mut self, la: u64, len: u64) -> Result<()> {
        let len = len.min(FLAT_CHUNK as u64) as usize;
        grow(self.buf, len).fill(0);
        self.got = Some((la, len));
        Ok(())
    }
}

impl<'a> Ctx<'a> {
    /// A reader with empty buffers.
    pub fn new(img: &'a Image) -> Self {
        Ctx {
            img,
            bufs: RefCell::new(Bufs {
                tags: [u64::MAX; LINES],
                lines: vec![0u8; LINE * LINES],
                cbuf: Vec::new(),
                ra: ReadAhead::default(),
                obuf: Vec::new(),
                scratch: Vec::new(),
                packed_la: u64::MAX,
                packed_len: 0,
                packed: Vec::new(),
            }),
            dec: RefCell::new(Decoders::default()),
        }
    }

    /// The superblock.
    pub fn sbi(&self) -> &SbInfo {
        &self.img.sbi
    }

    /// Reads inode `nid`.
    pub fn inode(&self, nid: u64) -> Result<InodeInfo> {
        read_inode(&self.img.sbi, self, Nid(nid)).map_err(|e| Error::core(Some(nid), e))
    }

    /// The compression state of a compressed inode (`None` for the others).
    pub fn zinfo(&self, vi: &InodeInfo) -> Result<Option<ZInfo>> {
        if !vi.is_compressed() {
            return Ok(None);
        }
        zmap::fill_inode(&self.img.sbi, self, vi)
            .map(Some)
            .map_err(|e| Error::core(Some(vi.nid.0), e))
    }

    /// Reads `dst.len()` bytes of the inode's data from `la` (within the file).
    pub fn read_range(
        &self,
        vi: &InodeInfo,
        zi: Option<&ZInfo>,
        la: u64,
        dst: &mut [u8],
    ) -> Result<()> {
        let end = la + dst.len() as u64;
        dst.fill(0);
        self.for_each_extent(vi, zi, la, end, Mode::Clip, &mut |p| {
            if let Piece::Data(pla, bytes) = p {
                // Clip to the range asked for: extents may start before `la`.
                let s = pla.max(la);
                let e = (pla + bytes.len() as u64).min(end);
                if s < e {
                    dst[(s - la) as usize..(e - la) as usize]
                        .copy_from_slice(&bytes[(s - pla) as usize..(e - pla) as usize]);
                }
            }
            Ok(())
        })
    }

    /// Calls `f` with the data of the inode in `start..end` (clipped to the size), extent by
    /// extent, in order, each in a buffer of the reader's; see [`Ctx::read_extents`].
    pub fn for_each_extent(
        &self,
        vi: &InodeInfo,
        zi: Option<&ZInfo>,
        start: u64,
        end: u64,
        mode: Mode,
        f: &mut dyn FnMut(Piece<'_>) -> Result<()>,
    ) -> Result<()> {
        // The buffer is taken out for the call: `f` may use this reader again (a nested
        // call then finds an empty buffer and grows its own).
        let mut buf = std::mem::take(&mut self.bufs.borrow_mut().obuf);
        let r = self.read_extents(vi, zi, start, end, mode, &mut Pieces { f, buf: &mut buf });
        self.bufs.borrow_mut().obuf = buf;
        r
    }

    /// Gives `sink` the data of the inode in `start..end` (clipped to the size), extent by
    /// extent, in order; see [`Mode`] for compressed extents. Pieces may start before `start`
    /// and, but with [`Mode::Clip`], end after `end`. No borrow of the reader's buffers is
    /// held while the sink runs.
    pub fn read_extents(
        &self,
        vi: &InodeInfo,
        zi: Option<&ZInfo>,
        start: u64,
        end: u64,
        mode: Mode,
        sink: &mut dyn Sink,
    ) -> Result<()> {
        let end = end.min(vi.size);
        let nid = vi.nid.0;
        let sbi = &self.img.sbi;
        let mut la = start;
        let Some(zi) = zi else {
            // Uncompressed: clip exactly, read in chunks straight into the sink.
            while la < end {
                let m = map_flat(sbi, self, vi, la).map_err(|e| Error::core(Some(nid), e))?;
                if m.llen == 0 || m.la > la {
                    return Err(Error::nid(nid, format!("no extent maps byte {la}")));
                }
                let mend = m.la.saturating_add(m.llen).min(end);
                if mend <= la {
                    return Err(Error::nid(nid, format!("no extent maps byte {la}")));
                }
                match m.kind {
                    MapKind::Hole => sink.hole(la, mend - la)?,
                    MapKind::Mapped | MapKind::Meta => {
                        while la < mend {
                            let n = ((mend - la) as usize).min(FLAT_CHUNK);
                            let pa = m.pa + (la - m.la);
                            let buf = sink.room(la, n)?;
                            if m.kind == MapKind::Meta {
                                self.read_meta(pa, buf).map_err(|e| {
                                    Error::core(Some(nid), e).context("inline data")
                                })?;
                            } else {
                                let (dev, p) = self.img.data_dev(m.device_id, pa, nid)?;
                                dev.read(p, buf).map_err(|e| {
                                    Error::core(Some(nid), e).context(format!("data at {pa}+{n}"))
                                })?;
                            }
                            sink.filled(la, n)?;
                            la += n as u64;
                        }
                    }
                }
                la = mend;
            }
            return Ok(());
        };
        // The file's compressed bytes not yet read (an upper bound for a part that starts
        // inside the file): how far reading ahead may go.
        let mut ahead = vi.blocks_512.saturating_mul(512);
        while la < end {
            let m = zmap::map_blocks(sbi, self, vi, zi, la, true)
                .map_err(|e| Error::core(Some(nid), e))?;
            if m.llen == 0 || m.la > la || m.la.checked_add(m.llen).is_none() {
                return Err(Error::nid(nid, format!("no extent maps byte {la}")));
            }
            let mend = (m.la + m.llen).min(vi.size);
            if mend <= la {
                return Err(Error::nid(nid, format!("no extent maps byte {la}")));
            }
            if mode == Mode::Own && m.la < start {
                // The previous range decodes this extent.
                la = mend;
                continue;
            }
            let want_end = if mode == Mode::Clip {
                mend.min(end)
            } else {
                mend
            };
            if m.is_fragment() {
                // The extent's data from `la` on is at `pa` of the packed inode.
                self.read_fragment(vi, &m, la, want_end - la, sink)?;
            } else if !m.is_mapped() {
                sink.hole(la, mend - la)?;
            } else {
                // The extent's last byte must map back to it: a lookback from inside the
                // pcluster (as the kernel does, reading at lcluster granularity) finds the
                // same head, or the indexes are inconsistent.
                if mend - m.la > 1 << zi.z_lclusterbits {
                    let q = zmap::map_blocks(sbi, self, vi, zi, mend - 1, false)
                        .map_err(|e| Error::core(Some(nid), e))?;
                    if (q.la, q.pa, q.plen) != (m.la, m.pa, m.plen) {
                        return Err(Error::nid(
                            nid,
                            format!(
                                "byte {} of the extent at {} maps to another extent",
                                mend - 1,
                                m.la
                            ),
                        ));
                    }
                }
                // Decode from the extent's start up to what is wanted, into the sink.
                let outlen = (want_end - m.la) as usize;
                self.decode(vi, &m, sink.room(m.la, outlen)?, ahead)?;
                ahead = ahead.saturating_sub(m.plen);
                sink.filled(m.la, outlen)?;
            }
            la = mend;
        }
        Ok(())
    }

    /// Gives `sink` `want` bytes of a fragment extent (from `la`) out of the packed inode.
    fn read_fragment(
        &self,
        vi: &InodeInfo,
        m: &ZMap,
        la: u64,
        want: u64,
        sink: &mut dyn Sink,
    ) -> Result<()> {
        let nid = vi.nid.0;
        let (pvi, pzi) = self
            .img
            .packed
            .as_ref()
            .ok_or_else(|| Error::nid(nid, "fragment without a packed inode"))?;
        if pvi.nid == vi.nid {
            // It would be read from itself, fragment within fragment, without end.
            return Err(Error::nid(nid, "fragment in the packed inode itself"));
        }
        let mut pos = m.pa;
        let pend = pos
            .checked_add(want)
            .filter(|&e| e <= pvi.size)
            .ok_or_else(|| {
                Error::nid(
                    nid,
                    format!("fragment {}+{want} beyond the packed inode", m.pa),
                )
            })?;
        let mut out = la;
        // The packed inode's extents are decoded whole and kept, one at a time: files whose
        // fragments share a pcluster decode it once. The cache is taken out for the call.
        let (mut pla, mut plen, mut piece) = {
            let mut b = self.bufs.borrow_mut();
            let pla = std::mem::replace(&mut b.packed_la, u64::MAX);
            (pla, b.packed_len, std::mem::take(&mut b.packed))
        };
        let r = (|| -> Result<()> {
            while pos < pend {
                if !(pla <= pos && pos < pla.saturating_add(plen as u64)) {
                    pla = u64::MAX;
                    let mut ps = PackedSink {
                        buf: &mut piece,
                        got: None,
                    };
                    self.read_extents(pvi, pzi.as_ref(), pos, pos + 1, Mode::Whole, &mut ps)
                        .map_err(|e| {
                            e.context(format!("packed inode, for a fragment of nid {nid}"))
                        })?;
                    let (gla, glen) = ps
                        .got
                        .ok_or_else(|| Error::nid(nid, "fragment not in the packed inode"))?;
                    if !(gla <= pos && pos < gla + glen as u64) {
                        return Err(Error::nid(nid, "fragment not in the packed inode"));
                    }
                    (pla, plen) = (gla, glen);
                }
                let o = (pos - pla) as usize;
                let n = (plen - o).min((pend - pos) as usize);
                sink.room(out, n)?.copy_from_slice(&piece[o..o + n]);
                sink.filled(out, n)?;
                pos += n as u64;
                out += n as u64;
            }
            Ok(())
        })();
        let mut b = self.bufs.borrow_mut();
        (b.packed_la, b.packed_len, b.packed) = (pla, plen, piece);
        r
    }

    /// Decodes the first `out.len()` bytes of the extent `m` into `out`; `ahead` bytes of the
    /// file's pclusters may lie from the pcluster on (for [`ReadAhead`]).
    fn decode(&self, vi: &InodeInfo, m: &ZMap, out: &mut [u8], ahead: u64) -> Result<()> {
        let nid = vi.nid.0;
        let plen = usize::try_from(m.plen).map_err(|_| Error::nid(nid, "pcluster too large"))?;
        let r = if m.is_meta() {
            let mut cbuf = std::mem::take(&mut self.bufs.borrow_mut().cbuf);
            let src = grow(&mut cbuf, plen);
            let r = self
                .read_meta_direct(m.pa, src)
                .map_err(|e| Error::core(Some(nid), e).context("inline pcluster"))
                .and_then(|()| self.decode_src(vi, m, src, out));
            self.bufs.borrow_mut().cbuf = cbuf;
            r
        } else {
            let (dev, p) = self.img.data_dev(0, m.pa, nid)?;
            let mut ra = std::mem::take(&mut self.bufs.borrow_mut().ra);
            let r = ra
                .read(dev, p, plen, ahead)
                .map_err(|e| {
                    Error::core(Some(nid), e).context(format!("pcluster at {}+{}", m.pa, m.plen))
                })
                .and_then(|src| self.decode_src(vi, m, src, out));
            self.bufs.borrow_mut().ra = ra;
            r
        };
        r.map_err(|e| e.context(format!("extent at {} of nid {nid}", m.la)))
    }

    /// Metadata without the cache (inline pclusters lie in one block: read them directly).
    fn read_meta_direct(&self, pos: u64, buf: &mut [u8]) -> erofs_core::Result<()> {
        if pos & METABOX_POS != 0 {
            return self.read_metabox(pos & !METABOX_POS, buf);
        }
        self.img.main.read(pos, buf)
    }

    fn decode_src(&self, vi: &InodeInfo, m: &ZMap, src: &[u8], out: &mut [u8]) -> Result<()> {
        let nid = vi.nid.0;
        let sbi = &self.img.sbi;
        let blksz = sbi.blksz();
        let outlen = out.len();
        let alg = m.algorithmformat;
        if alg == ondisk::Z_EROFS_COMPRESSION_SHIFTED
            || alg == ondisk::Z_EROFS_COMPRESSION_INTERLACED
        {
            let interlaced = alg == ondisk::Z_EROFS_COMPRESSION_INTERLACED;
            return transform_plain(interlaced, src, out, m.la, blksz, nid)
                .map_err(|e| Error::core(Some(nid), e));
        }
        let pad = padding(src, fixup_scan(m, blksz), nid).map_err(|e| Error::core(Some(nid), e))?;
        let stream = &src[pad..];
        let partial = partial_decoding(m, outlen as u64);
        let mut dec = self.dec.borrow_mut();
        let fail = |what: &str| Error::nid(nid, format!("{} ({})", what, alg_name(alg)));
        match alg {
            ondisk::Z_EROFS_COMPRESSION_LZ4 => {
                // As the kernel: exactly `outlen` bytes, or a corrupted stream.
                let n = crate::lz4::decode(stream, out, partial);
                if n < 0 {
                    return Err(fail("corrupted compressed data"));
                }
                if n as usize != outlen {
                    return Err(fail("unexpected end of stream"));
                }
            }
            ondisk::Z_EROFS_COMPRESSION_LZMA => {
                let l = dec.lzma.get_or_insert_with(crate::lzma::Lzma::new);
                let dict = sbi.lzma_dict_size.max(4096);
                l.decode(stream, out, !partial, dict).map_err(fail)?;
            }
            ondisk::Z_EROFS_COMPRESSION_DEFLATE => {
                let d = dec
                    .deflate
                    .get_or_insert_with(libdeflater::Decompressor::new);
                match d.deflate_decompress(stream, out) {
                    Ok(n) if n == outlen => {}
                    Ok(_) => return Err(fail("unexpected end of stream")),
                    Err(libdeflater::DecompressionError::InsufficientSpace) if partial => {
                        // libdeflate cannot stop early: decode the whole pcluster aside (it
                        // may hold more than the extent) and keep the prefix.
                        let whole = ondisk::Z_EROFS_PCLUSTER_MAX_DSIZE as usize;
                        let mut scratch = std::mem::take(&mut self.bufs.borrow_mut().scratch);
                        let r = d
                            .deflate_decompress(stream, grow(&mut scratch, whole))
                            .map_err(|_| fail("corrupted compressed data"))
                            .and_then(|n| {
                                if n < outlen {
                                    return Err(fail("unexpected end of stream"));
                                }
                                out.copy_from_slice(&scratch[..outlen]);
                                Ok(())
                            });
                        self.bufs.borrow_mut().scratch = scratch;
                        r?;
                    }
                    Err(_) => return Err(fail("corrupted compressed data")),
                }
            }
            ondisk::Z_EROFS_COMPRESSION_ZSTD => {
                if dec.zstd.is_none() {
                    let mut z = zstd_safe::DCtx::create();
                    // EROFS windows are at most 1 MiB (`windowlog` <= 10, plus 10).
                    z.set_parameter(zstd_safe::DParameter::WindowLogMax(20))
                        .map_err(|_| fail("cannot set up the decoder"))?;
                    dec.zstd = Some(z);
                }
                let z = dec.zstd.as_mut().ok_or_else(|| fail("no decoder"))?;
                z.reset(zstd_safe::ResetDirective::SessionOnly)
                    .map_err(|_| fail("cannot reset the decoder"))?;
                let mut input = zstd_safe::InBuffer::around(stream);
                let mut output = zstd_safe::OutBuffer::around(&mut out[..]);
                loop {
                    let before = (input.pos(), output.pos());
                    let r = z
                        .decompress_stream(&mut output, &mut input)
                        .map_err(|_| fail("corrupted compressed data"))?;
                    if output.pos() == outlen {
                        break;
                    }
                    if r == 0 || (input.pos(), output.pos()) == before {
                        return Err(fail("unexpected end of stream"));
                    }
                }
            }
            _ => return Err(Error::nid(nid, format!("unsupported algorithm {alg}"))),
        }
        Ok(())
    }
}

/// [`fixup_insize`] (the zero padding before the compressed data, up to 4 KiB of it), with
/// the zeroes skipped 16 bytes at a time first: the same result, the same errors.
fn padding(src: &[u8], scan: usize, nid: u64) -> erofs_core::Result<usize> {
    let scan = scan.min(src.len());
    let zero = src[..scan]
        .chunks_exact(16)
        .take_while(|c| c.iter().fold(0, |a, &b| a | b) == 0)
        .count()
        * 16;
    // Leave the core at least one byte to look at: it tells padding-only from data.
    let skip = zero.min(scan.saturating_sub(1));
    Ok(skip + fixup_insize(&src[skip..], scan - skip, nid)?)
}

/// The first `len` bytes of `v`, growing it if needed.
fn grow(v: &mut Vec<u8>, len: usize) -> &mut [u8] {
    if v.len() < len {
        v.resize(len, 0);
    }
    &mut v[..len]
}

/// The name of a `Z_EROFS_COMPRESSION_*` algorithm.
pub fn alg_name(alg: u8) -> &'static str {
    match alg {
        ondisk::Z_EROFS_COMPRESSION_LZ4 => "lz4",
        ondisk::Z_EROFS_COMPRESSION_LZMA => "lzma",
        ondisk::Z_EROFS_COMPRESSION_DEFLATE => "deflate",
        ondisk::Z_EROFS_COMPRESSION_ZSTD => "zstd",
        ondisk::Z_EROFS_COMPRESSION_SHIFTED => "shifted",
        ondisk::Z_EROFS_COMPRESSION_INTERLACED => "interlaced",
        _ => "unknown",
    }
}
