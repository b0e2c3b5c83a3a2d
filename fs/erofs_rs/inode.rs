// SPDX-License-Identifier: GPL-2.0-only
//! Inode lookup by nid and filling of VFS inodes. C counterpart: fs/erofs/inode.c.
#![deny(unsafe_code)]

use crate::erofs_core::{
    inode::read_inode,
    zmap::fill_inode,
    Error,
    Nid, //
};
use crate::super_::report;
use crate::vfs::{
    self,
    fs_context::MountFlags,
    Iget,
    InodeRef,
    SuperBlock, //
};
use kernel::prelude::*;

/// Returns the inode `nid`, reading it from the image if it is not cached (`erofs_iget`).
pub(crate) fn iget(sb: SuperBlock<'_>, nid: Nid) -> Result<InodeRef> {
    match sb.iget5_locked(nid.0, sb.state().sbi.nid_to_ino(nid.0))? {
        Iget::Cached(inode) => Ok(inode),
        Iget::New(new) => {
            let st = sb.state();
            // On error, dropping `new` calls `iget_failed`.
            // An I/O error names the nid, as `erofs_read_inode` does.
            let vi = read_inode(&st.sbi, &st.dev, nid)
                .inspect_err(|e| match e {
                    Error::Io(code) => sb.log(
                        true,
                        format_args!("failed to read inode meta block (nid: {}): -{code}", nid.0),
                    ),
                    _ => report(sb, e),
                })
                .map_err(vfs::to_kernel)?;
            // The C driver reads the map header on first use (`z_erofs_fill_inode`), so a bad
            // one fails reads, not lookups: report it now, fail the reads later.
            let zi = if vi.is_compressed() {
                fill_inode(&st.sbi, &st.dev, &vi)
                    .inspect_err(|e| report(sb, e))
                    .ok()
            } else {
                None
            };
            if st.opt_flags().contains(MountFlags::INODE_SHARE) {
                // Regular files with a fingerprint read through a shared page cache.
                return new.fill_with(vi, zi, crate::xattr::fingerprint);
            }
            new.fill(vi, zi)
        }
    }
}
