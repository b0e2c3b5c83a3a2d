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
use crate::super_::report;
use crate::vfs::{
    self,
    DirContext, //
};
use kernel::prelude::*;

/// Emits the entries from `ctx->pos` on (`erofs_readdir`).
pub(crate) fn readdir(mut ctx: DirContext<'_>) -> Result {
    let dir = ctx.inode();
    let sb = dir.sb();
    let vi = dir.info();
    let bsz = sb.state().sbi.blksz();
    let size = vi.size;
    let mut pos = u64::try_from(ctx.pos()).map_err(|_| EINVAL)?;
    let mut initial = true;

    while pos < size {
        if vfs::fatal_signal_pending() {
            return Err(ERESTARTSYS);
        }
        let ofs = pos & (bsz - 1);
        let dbstart = pos - ofs;
        // CAST: at most one block.
        let maxsize = (size - dbstart).min(bsz) as usize;
        let full = dir.with_cached(dbstart, maxsize, |data| {
            let blk = DirBlock::new(data, vi.nid.0).inspect_err(|e| report(sb, e)).map_err(vfs::to_kernel)?;
            // CAST: `ofs` is below the block size.
            let mut i = (ofs as usize).div_ceil(DIRENT_SIZE);
            if initial {
                // Resume at a dirent boundary, as the C driver rounds up an arbitrary position.
                ctx.set_pos((dbstart + (i * DIRENT_SIZE) as u64) as i64);
            }
            while i < blk.len() {
                let e = blk.get(i).inspect_err(|e| report(sb, e)).map_err(vfs::to_kernel)?;
                if !ctx.emit(e.name, sb.state().sbi.nid_to_ino(e.nid), e.file_type) {
                    return Ok(true);
                }
                i += 1;
                ctx.set_pos(ctx.pos() + DIRENT_SIZE as i64);
            }
            Ok(false)
        })?;
        if full {
            return Ok(());
        }
        initial = false;
        pos = dbstart + maxsize as u64;
        // CAST: `pos <= size <= i64::MAX`.
        ctx.set_pos(pos as i64);
        vfs::cond_resched();
    }
    if vi.dot_omitted && pos == size {
        if !ctx.emit_dot() {
            return Ok(());
        }
        ctx.set_pos(ctx.pos() + 1);
    }
    Ok(())
}
