// SPDX-License-Identifier: GPL-2.0-only
//! Page-cache sharing (`inode_share`): which regular files read through a shared inode, so
//! that files of the same content, in mounts of the same domain, are cached once. C
//! counterpart: fs/erofs/ishare.c (`erofs_ishare_fill_inode`); the pseudo filesystem, the
//! shared inodes and their backing files are kernel mechanism, in `vfs/ishare.rs`.
#![deny(unsafe_code)]

use crate::inode::InodeData;
use crate::super_::{
    InodeRef,
    MountFlags,
    NewInode,
    SuperBlock, //
};
use kernel::prelude::*;

/// Stores `data` in the new inode and unlocks it; on a mount with `inode_share`, a regular
/// file with a fingerprint reads through the shared inode of that fingerprint
/// ([`crate::xattr::fingerprint`]: the mount's `domain_id` and the file's fingerprint xattr).
pub(crate) fn fill_inode(
    sb: SuperBlock<'_>,
    new: NewInode<'_>,
    data: InodeData,
) -> Result<InodeRef> {
    if sb.state().opt_flags().contains(MountFlags::INODE_SHARE) {
        new.fill_with(data, crate::xattr::fingerprint)
    } else {
        new.fill(data)
    }
}
