// SPDX-License-Identifier: GPL-2.0-only
//! Directory reading. C counterpart: fs/erofs/dir.c.
//!
//! `ctx->pos` is a byte offset in the directory: a block start plus `12 * i` for the `i`-th
//! dirent, so a reader that stops mid-block resumes at the same entry.
#![deny(unsafe_code)]

use crate::erofs_core::dirent::{
    DirBlock,
    DIRENT_SIZE, //
};
use crate::super_::{
    report,
    to_kernel,
    DirContext, //
};
use crate::vfs::{
    self, //
};
use kernel::{
    page::PAGE_SIZE,
    prelude::*, //
};

/// Emits the entries from `ctx->pos` on (`erofs_readdir`).
pub(crate) fn readdir(mut ctx: DirContext<'_>) -> Result {
    let dir = ctx.inode();
    let sb = dir.sb();
    let vi = dir.info();
    let bsz = sb.state().sbi.blksz();
    let size = vi.size;
    let mut pos = u64::try_from(ctx.pos()).map_err(|_| EINVAL)?;
    let mut initial = true;
    // Directory readahead (C since 6.17): `dir_ra_bytes` per step, 0 for none.
    // CAST: a page size fits in `u64`.
    let page = PAGE_SIZE as u64;
    let ra_pages = u64::from(sb.state().dir_ra_bytes()).div_ceil(page);
    let nr_pages = size.div_ceil(page);
    // Positions are `loff_t`: one past `i64::MAX` is corruption (`size <= i64::MAX`).
    let bogus = || {
        sb.err(format_args!(
            "directory position past i64::MAX @ nid {}",
            vi.nid.0
        ));
        EFSCORRUPTED
    };

    while pos < size {
        if vfs::fatal_signal_pending() {
            return Err(ERESTARTSYS);
        }
        // Read ahead the blocks of large directories (`page_cache_sync_readahead()`).
        if ra_pages != 0 {
            let idx = pos.div_ceil(page);
            let pages = nr_pages.saturating_sub(idx).min(ra_pages);
            if pages > 1 {
                ctx.sync_readahead(idx, pages);
            }
        }
        // OVERFLOW: `bsz` is `1 << blkszbits`, never 0.
        let ofs = pos & (bsz - 1);
        // OVERFLOW: `ofs <= pos`.
        let dbstart = pos - ofs;
        // CAST: at most one block.
        // OVERFLOW: `dbstart <= pos < size`.
        let maxsize = (size - dbstart).min(bsz) as usize;
        let full = dir.with_cached(dbstart, maxsize, |data| {
            let blk = DirBlock::new(data, vi.nid.0)
                .inspect_err(|e| report(sb, e))
                .map_err(to_kernel)?;
            // CAST: `ofs` is below the block size.
            let mut i = (ofs as usize).div_ceil(DIRENT_SIZE);
            if initial {
                // Resume at a dirent boundary, as the C driver rounds up an arbitrary position.
                // OVERFLOW: `i * DIRENT_SIZE < ofs + DIRENT_SIZE`, and `dbstart + ofs = pos`,
                // an `i64`.
                let resume = dbstart + (i * DIRENT_SIZE) as u64;
                ctx.set_pos(i64::try_from(resume).map_err(|_| bogus())?);
            }
            while i < blk.len() {
                let e = blk
                    .get(i)
                    .inspect_err(|e| report(sb, e))
                    .map_err(to_kernel)?;
                let next = ctx
                    .pos()
                    .checked_add(DIRENT_SIZE as i64)
                    .ok_or_else(bogus)?;
                if !ctx.emit(e.name, sb.state().sbi.nid_to_ino(e.nid), e.file_type) {
                    return Ok(true);
                }
                i += 1;
                ctx.set_pos(next);
            }
            Ok(false)
        })?;
        if full {
            return Ok(());
        }
        initial = false;
        // OVERFLOW: `maxsize <= size - dbstart`.
        pos = dbstart + maxsize as u64;
        // CAST: `pos <= size <= i64::MAX`.
        ctx.set_pos(pos as i64);
        vfs::cond_resched();
    }
    if vi.dot_omitted && pos == size {
        let next = ctx.pos().checked_add(1).ok_or_else(bogus)?;
        if !ctx.emit_dot() {
            return Ok(());
        }
        ctx.set_pos(next);
    }
    Ok(())
}
