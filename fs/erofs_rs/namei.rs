// SPDX-License-Identifier: GPL-2.0-only
//! Name lookup in directories. C counterpart: fs/erofs/namei.c.
#![deny(unsafe_code)]

use crate::erofs_core::{
    dirent,
    Nid, //
};
use crate::inode::iget;
use crate::super_::{
    report,
    to_core,
    to_kernel,
    Inode,
    InodeRef, //
};
use kernel::prelude::*;

/// Finds `name` in `dir` and returns its inode, or `None` for a negative dentry (`erofs_lookup`).
pub(crate) fn lookup(dir: Inode<'_>, name: &[u8]) -> Result<Option<InodeRef>> {
    let sb = dir.sb();
    let vi = dir.info();
    if name.len() > crate::erofs_core::ondisk::EROFS_NAME_LEN {
        return Err(ENAMETOOLONG);
    }
    if vi.size == 0 {
        return Ok(None);
    }
    let sbi = &sb.state().sbi;
    let bsz = sbi.blksz();
    let nblocks = vi.iblks(sbi);
    let found = dirent::lookup(nblocks, vi.nid.0, name, |i, f| {
        let corrupt = crate::erofs_core::Corruption::BogusDirent(vi.nid.0);
        let start = i.checked_mul(bsz).ok_or(corrupt)?;
        // `lookup` asks only for blocks below `nblocks`, which start before the size.
        let rest = vi.size.checked_sub(start).ok_or(corrupt)?;
        // CAST: at most one block.
        let len = rest.min(bsz) as usize;
        let mut out = Ok(None);
        dir.with_cached(start, len, |data| {
            out = f(data);
            Ok(())
        })
        .map_err(to_core)?;
        out
    })
    .inspect_err(|e| report(sb, e))
    .map_err(to_kernel)?;
    match found {
        None => Ok(None),
        Some((nid, _ftype)) => Ok(Some(iget(sb, Nid(nid))?)),
    }
}
