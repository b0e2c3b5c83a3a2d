// SPDX-License-Identifier: GPL-2.0-only
//! Reading uncompressed file data into the page cache. C counterpart: fs/erofs/data.c.
//!
//! Each extent a folio meets is mapped once with `map_blocks` and copied from the primary
//! device's page cache (or zeroed for holes and past EOF). On file-backed mounts, readahead
//! keeps the extent last mapped across its folios, and reads the folios that lie whole in one
//! from the backing file with kiocbs, batched, with `directio` (`vfs/fileio.rs`, C:
//! fs/erofs/fileio.c), or copies them from its page cache; block-device mounts read through
//! iomap.
#![deny(unsafe_code)]

use crate::erofs_core::{
    self as core_,
    map::{
        map_blocks,
        MapKind, //
    },
    sb::METABOX_POS,
    zmap::{
        MAP_MAPPED,
        MAP_META, //
    },
    MetaRead, //
};
use crate::super_::{
    report,
    to_core,
    to_kernel,
    Inode,
    MountFlags, //
};
use crate::vfs::{
    self,
    fileio::FileRead,
    iomap::{
        Extent,
        ExtentKind, //
    },
    pagecache::Readahead,
    Device,
    FillFolio,
    LockedFolio, //
};
use kernel::{
    page::PAGE_SIZE,
    prelude::*, //
};

/// The image's metadata (`erofs_bread` through `erofs_init_metabuf`): from the primary
/// device's page cache, or, at positions with [`METABOX_POS`], from the metabox inode's.
impl MetaRead for Device {
    fn read_meta(&self, pos: u64, buf: &mut [u8]) -> core_::Result<()> {
        if pos & METABOX_POS != 0 {
            // `erofs_init_metabuf(.., in_metabox)`: no metabox inode (yet) means corruption.
            return self.metabox.read(pos & !METABOX_POS, buf).map_err(to_core);
        }
        self.read(pos, buf).map_err(to_core)
    }
}

/// Appends the `len` bytes of metadata at `pos` to `dst`, as [`MetaRead::read_meta`] reads
/// them; from the device's page cache without zeroing `dst`'s room first. On error, `dst` may
/// have grown.
pub(crate) fn append_meta(
    dev: &Device,
    pos: u64,
    len: usize,
    dst: &mut KVVec<u8>,
) -> core_::Result<()> {
    if pos & METABOX_POS == 0 {
        return dev.append(pos, len, dst).map_err(to_core);
    }
    let start = dst.len();
    let grown = start.checked_add(len).ok_or(to_core(ENOMEM))?;
    dst.resize(grown, 0, GFP_KERNEL)
        .map_err(|_| to_core(ENOMEM))?;
    dev.read_meta(pos, dst.get_mut(start..).ok_or(to_core(EINVAL))?)
}

/// Starts reading the page of metadata at `pos` into the block device's page cache, without
/// waiting (nothing for the metabox, whose pages its inode reads).
pub(crate) fn prefetch_meta(dev: &Device, pos: u64) {
    if pos & METABOX_POS == 0 {
        dev.prefetch(pos);
    }
}

/// `erofs_map_blocks`: the core's mapping of byte `la` of `inode` (`llen`: how much the
/// caller wants from there), between the C driver's `erofs_map_blocks_enter` and `_exit`
/// events.
fn map_traced(inode: &Inode<'_>, la: u64, llen: u64) -> Result<core_::map::Map> {
    let sb = inode.sb();
    let st = sb.state();
    let dev = sb.device();
    let nid = inode.info().nid.0;
    vfs::trace::map_blocks_enter(&sb, nid, la, llen, 0);
    let r = map_blocks(&st.sbi, dev, inode.info(), la)
        .inspect_err(|e| report(sb, e))
        .map_err(to_kernel);
    let exit = match &r {
        Ok(m) => vfs::trace::MapExit {
            la: m.la,
            pa: m.pa,
            llen: m.llen,
            plen: m.llen,
            mflags: match m.kind {
                MapKind::Hole => 0,
                MapKind::Mapped => MAP_MAPPED,
                MapKind::Meta => MAP_MAPPED | MAP_META,
            },
        },
        Err(_) => vfs::trace::MapExit {
            la,
            pa: 0,
            llen,
            plen: 0,
            mflags: 0,
        },
    };
    let ret = r.as_ref().err().map_or(0, |e| e.to_errno());
    vfs::trace::map_blocks_exit(&sb, nid, 0, &exit, ret);
    r
}

/// The page-cache operations of uncompressed files of file-backed mounts (fs/erofs/fileio.c's
/// `erofs_fileio_aops`): `read_folio` copies from the backing file's page cache, `readahead`
/// reads the backing file into the folios with kiocbs.
pub(crate) struct FileIo;

impl vfs::fs::AddressSpace for FileIo {
    type Folio<'a> = LockedFolio<'a>;

    fn read_folio(folio: LockedFolio<'_>) -> Result {
        read_folio(folio)
    }

    fn readahead(rac: Readahead<'_>) {
        readahead(rac)
    }
}

/// Fills a locked folio and unlocks it, uptodate on success (`erofs_read_folio`).
pub(crate) fn read_folio(mut folio: LockedFolio<'_>) -> Result {
    let ret = fill_folio(&mut folio);
    folio.end_read(ret.is_ok());
    ret
}

/// `readahead` of file-backed mounts (`erofs_fileio_readahead`): the extent last mapped is kept
/// across the batch's folios, as `erofs_fileio_scan_folio` keeps its map. A folio that lies
/// whole, before EOF, in one mapped extent within the primary device goes, with `directio`,
/// into the batch's direct reads of the backing file, which unlock it when they complete, and
/// is copied from the backing file's page cache without; any other (a hole, an inline tail, an
/// extra device, the EOF folio, a folio across extents) is filled as `read_folio` fills it. A
/// folio whose extent fails to map is left not uptodate (the error is reported once): the VFS
/// reads it again with `read_folio`.
pub(crate) fn readahead(mut rac: Readahead<'_>) {
    let Some(real) = rac.real_inode() else { return };
    let inode = real.inode();
    let sb = inode.sb();
    let st = sb.state();
    let dev = sb.device();
    let vi = inode.info();
    let (start, len) = rac.range();
    vfs::trace::readahead(&inode, start, len, true);
    // Without `directio`, folios are copied from the backing file's page cache (`read_folio`'s
    // path), never read with a kiocb: a buffered `read_iter` may take the backing inode's
    // `i_rwsem` (netfs does), under our `invalidate_lock`, where writers of the backing
    // filesystem take `mmap_lock` under it (lockdep reports that cycle for the C driver's
    // file-backed reads of 9p files). With `directio` the reads are the C driver's kiocbs:
    // direct where the file allows `O_DIRECT`, buffered otherwise (9p: then they take that
    // lock too, as C's do; the guest tests keep `directio` off the debug kernel for it).
    // Direct reads take it too on ext4 and XFS (shared): a writer of the backing file whose
    // source buffer maps a file of this mount would fault into this read while holding it
    // exclusive, a deadlock the C driver's directio has as well.
    let direct = st.opt_flags().contains(MountFlags::DIRECT_IO);
    let mut rd = if direct {
        FileRead::new(sb, true)
    } else {
        None
    };
    let mut last: Option<core_::map::Map> = None;
    while let Some(mut folio) = rac.next_folio() {
        let pos = folio.pos();
        let end = pos.saturating_add(folio.size() as u64);
        let inside = |m: &core_::map::Map| m.la <= pos && end <= m.la.saturating_add(m.llen);
        let covers = |m: &core_::map::Map| m.la <= pos && pos < m.la.saturating_add(m.llen);
        // A folio that lies whole, before EOF, in one mapped extent of the primary device.
        let mut at = None;
        if end <= vi.size {
            if !last.as_ref().is_some_and(covers) {
                // OVERFLOW: `end >= pos`, a saturating sum (here too below).
                match map_traced(&inode, pos, end - pos) {
                    Ok(m) => last = Some(m),
                    Err(_) => {
                        // `map_traced` reported it.
                        last = None;
                        folio.end_read(false);
                        continue;
                    }
                }
            }
            // Past the device's end, `read_folio`'s path reports it (a short file read would
            // read zeroes).
            let fits = |pa: u64| pa.checked_add(end - pos).is_some_and(|e| e <= dev.bytes());
            at = last
                .as_ref()
                .filter(|m| m.kind == MapKind::Mapped && inside(m))
                // OVERFLOW: `m.la <= pos`, checked by `inside`.
                .and_then(|m| m.pa.checked_add(pos - m.la).map(|pa| (m.device_id, pa)))
                .and_then(|(id, pa)| st.map_dev(id, pa).ok())
                .and_then(|(dev, pa)| dev.is_none().then_some(pa))
                .filter(|&pa| fits(pa));
        }
        let ok = match (at, rd.as_mut()) {
            (Some(pa), Some(rd)) => {
                // On error the folio was unlocked, not uptodate: the VFS reads it again.
                let _ = rd.add(folio, pa);
                continue;
            }
            (Some(pa), None) => fill_mapped(&inode, &mut folio, pa).is_ok(),
            (None, _) => fill_from(&inode, &mut folio, &mut last).is_ok(),
        };
        folio.end_read(ok);
    }
}

/// Fills a folio that lies whole in a mapped extent of the primary device, from byte `pa` of
/// the image on, copied page by page from the backing file's page cache (no `directio`);
/// `inode` is the folio's real inode.
fn fill_mapped(inode: &Inode<'_>, folio: &mut impl FillFolio, pa: u64) -> Result {
    let sb = inode.sb();
    let dev = sb.device();
    let size = folio.size();
    dev.read_data(pa, folio, 0, size, false)
        .map_err(to_core)
        .inspect_err(|e| report(sb, e))
        .map_err(to_kernel)
}

/// Calls `f` with bytes `from..to` of the page at byte `off` of `folio`, writable.
fn with_piece<R>(
    folio: &mut impl FillFolio,
    off: usize,
    from: usize,
    to: usize,
    f: impl FnOnce(&mut [u8]) -> R,
) -> Result<R> {
    folio.with_page_mut(off, |page| page.get_mut(from..to).map(f).ok_or(EINVAL))?
}

/// Fills every page of the folio (`read_folio`).
fn fill_folio(folio: &mut impl FillFolio) -> Result {
    let real = folio.real_inode().ok_or(EIO)?;
    let inode = real.inode();
    vfs::trace::read_folio(&inode, folio.pos(), folio.size(), true);
    fill_from(&inode, folio, &mut None)
}

/// Fills every page of the folio of `inode` (its real inode), mapping each extent it meets
/// once, not once a page (`erofs_fileio_scan_folio`): `last` is the extent mapped last, which
/// readahead keeps across its folios.
fn fill_from(
    inode: &Inode<'_>,
    folio: &mut impl FillFolio,
    last: &mut Option<core_::map::Map>,
) -> Result {
    let sb = inode.sb();
    let st = sb.state();
    let dev = sb.device();
    let vi = inode.info();
    let fpos = folio.pos();
    let fsize = folio.size();
    let direct = st.opt_flags().contains(MountFlags::DIRECT_IO);
    let mut off = 0usize;
    while off < fsize {
        let page_pos = fpos.checked_add(off as u64).ok_or(EINVAL)?;
        let mut done = 0usize;
        while done < PAGE_SIZE {
            let la = page_pos.checked_add(done as u64).ok_or(EINVAL)?;
            if la >= vi.size {
                with_piece(folio, off, done, PAGE_SIZE, |tail| tail.fill(0))?;
                break;
            }
            let covers = |m: &core_::map::Map| m.la <= la && la < m.la.saturating_add(m.llen);
            let map = match last.take().filter(covers) {
                Some(m) => last.insert(m),
                // OVERFLOW: `off < fsize` and `done < PAGE_SIZE`, the loop conditions.
                None => last.insert(map_traced(inode, la, (fsize - off - done) as u64)?),
            };
            // Bytes of this extent left in the page, and never past EOF.
            let ext_end = map.la.saturating_add(map.llen).min(vi.size);
            // OVERFLOW: `done < PAGE_SIZE`, the loop condition.
            let n = usize::try_from(ext_end.saturating_sub(la))
                .unwrap_or(usize::MAX)
                .min(PAGE_SIZE - done);
            if n == 0 || map.la > la {
                // A mapping that does not advance or does not cover `la`: treat as
                // corruption, never loop.
                sb.err(format_args!(
                    "bogus extent @ nid {} for offset {}",
                    vi.nid.0, la
                ));
                return Err(EFSCORRUPTED);
            }
            // OVERFLOW: `map.la <= la`, checked above.
            let pa = map.pa.checked_add(la - map.la).ok_or(EFSCORRUPTED)?;
            // OVERFLOW: `n <= PAGE_SIZE - done`.
            let end = done + n;
            let res = match map.kind {
                MapKind::Hole => {
                    with_piece(folio, off, done, end, |hole| hole.fill(0))?;
                    Ok(())
                }
                MapKind::Mapped => match st.map_dev(map.device_id, pa)? {
                    // OVERFLOW: `off + done` lies in the folio (the loop conditions).
                    (None, pa) => dev
                        .read_data(pa, folio, off + done, n, direct)
                        .map_err(to_core),
                    (Some(d), pa) => with_piece(folio, off, done, end, |dst| {
                        d.dev.read(pa, dst).map_err(to_core)
                    })?,
                },
                MapKind::Meta => with_piece(folio, off, done, end, |dst| dev.read_meta(pa, dst))?,
            };
            res.inspect_err(|e| report(sb, e)).map_err(to_kernel)?;
            done = end;
        }
        // OVERFLOW: `off < fsize`, a folio size.
        off += PAGE_SIZE;
    }
    Ok(())
}

/// Maps `offset` for iomap (`erofs_iomap_begin`); inline tails are copied into `inline_buf`
/// when the caller reads them.
pub(crate) fn iomap_map<'a>(
    inode: Inode<'a>,
    offset: u64,
    length: u64,
    inline_buf: Option<&mut vfs::iomap::InlineSlot<'_>>,
) -> Result<Extent<'a>> {
    let sb = inode.sb();
    let st = sb.state();
    let dev = sb.device();
    let vi = inode.info();
    if vi.is_compressed() {
        return crate::zdata::iomap_report(inode, offset, length);
    }
    let map = map_traced(&inode, offset, length)?;
    let mut ext = Extent {
        la: map.la,
        llen: map.llen,
        pa: 0,
        kind: ExtentKind::Hole,
        dev: None,
    };
    if map.llen == 0 {
        // Past EOF: a hole as long as asked, as the C driver leaves m_llen (FIEMAP would
        // otherwise step through a huge range a block at a time).
        ext.llen = length.max(1);
        ext.la = offset;
        return Ok(ext);
    }
    match map.kind {
        MapKind::Hole => {}
        MapKind::Mapped => {
            ext.kind = ExtentKind::Mapped;
            match st.map_dev(map.device_id, map.pa)? {
                (None, pa) => ext.pa = pa.checked_add(dev.fsoff()).ok_or(EFSCORRUPTED)?,
                (Some(d), pa) => {
                    ext.pa = pa;
                    ext.dev = Some(&d.dev);
                }
            }
        }
        MapKind::Meta => {
            ext.kind = ExtentKind::Meta;
            // Inline data in the metabox has no device address (`IOMAP_NULL_ADDR`).
            ext.pa = if map.pa & core_::sb::METABOX_POS != 0 {
                u64::MAX
            } else {
                map.pa.checked_add(dev.fsoff()).ok_or(EFSCORRUPTED)?
            };
            if let Some(slot) = inline_buf {
                // The core checked that the tail stays in its block, so it fits in a page.
                let n = usize::try_from(map.llen).map_err(|_| EFSCORRUPTED)?;
                let dst = slot.buf()?.get_mut(..n).ok_or(EFSCORRUPTED)?;
                dev.read_meta(map.pa, dst)
                    .inspect_err(|e| report(sb, e))
                    .map_err(to_kernel)?;
            }
        }
    }
    Ok(ext)
}
