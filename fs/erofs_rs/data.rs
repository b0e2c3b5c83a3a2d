// SPDX-License-Identifier: GPL-2.0-only
//! Reading uncompressed file data into the page cache. C counterpart: fs/erofs/data.c.
//!
//! Each block range of a folio is mapped with `map_blocks` and copied from the primary
//! device's page cache (or zeroed for holes and past EOF).
#![deny(unsafe_code)]

use crate::erofs_core::{
    map::{
        map_blocks,
        MapKind, //
    },
    MetaRead,
    Unsupported, //
};
use crate::super_::report;
use crate::vfs::{
    self,
    LockedFolio, //
};
use kernel::{
    page::PAGE_SIZE,
    prelude::*, //
};

/// Fills a locked folio and unlocks it, uptodate on success (`erofs_read_folio`).
pub(crate) fn read_folio(mut folio: LockedFolio<'_>) -> Result {
    let ret = fill_folio(&mut folio);
    folio.end_read(ret.is_ok());
    ret
}

/// Fills every page of the folio.
fn fill_folio(folio: &mut LockedFolio<'_>) -> Result {
    let inode = folio.inode();
    let sb = inode.sb();
    let st = sb.state();
    let vi = inode.info();
    let fpos = folio.pos();
    let fsize = folio.size();
    let mut off = 0usize;
    while off < fsize {
        let page_pos = fpos.checked_add(off as u64).ok_or(EINVAL)?;
        folio.with_page_mut(off, |page| -> Result {
            let mut done = 0usize;
            while done < PAGE_SIZE {
                let la = page_pos.checked_add(done as u64).ok_or(EINVAL)?;
                if la >= vi.size {
                    page[done..].fill(0);
                    break;
                }
                let map = map_blocks(&st.sbi, &st.dev, vi, la)
                    .inspect_err(|e| report(sb, e))
                    .map_err(vfs::to_kernel)?;
                // Bytes of this extent left in the page, and never past EOF.
                let ext_end = map.la.saturating_add(map.llen).min(vi.size);
                let n = usize::try_from(ext_end.saturating_sub(la)).unwrap_or(usize::MAX).min(PAGE_SIZE - done);
                if n == 0 {
                    // A mapping that does not advance: treat as corruption, never loop.
                    sb.log(true, format_args!("bogus extent @ nid {} for offset {}", vi.nid.0, la));
                    return Err(EFSCORRUPTED);
                }
                let dst = &mut page[done..done + n];
                match map.kind {
                    MapKind::Hole => dst.fill(0),
                    MapKind::Mapped | MapKind::Meta => {
                        if map.device_id != 0 {
                            let e = Unsupported::ExtraDevice(vi.nid.0).into();
                            report(sb, &e);
                            return Err(vfs::to_kernel(e));
                        }
                        let pa = map.pa.checked_add(la - map.la).ok_or(EFSCORRUPTED)?;
                        st.dev.read_meta(pa, dst).inspect_err(|e| report(sb, e)).map_err(vfs::to_kernel)?;
                    }
                }
                done += n;
            }
            Ok(())
        })??;
        off += PAGE_SIZE;
    }
    Ok(())
}
