// SPDX-License-Identifier: GPL-2.0-only
//! Inode lookup by nid and filling of VFS inodes. C counterpart: fs/erofs/inode.c.
#![deny(unsafe_code)]

use crate::erofs_core::{
    inode::{
        read_inode,
        InodeInfo, //
    },
    ondisk::mode,
    sb::METABOX_POS,
    zmap::{
        fill_inode,
        ZInfo, //
    },
    Error,
    MetaRead,
    Nid, //
};
use crate::super_::{
    report,
    to_core,
    to_kernel,
    Erofs,
    Iget,
    Inode,
    InodeRef,
    SuperBlock, //
};
use crate::vfs::{
    self,
    fs::InodeKind,
    Aops,
    InodeAttrs, //
};
use kernel::prelude::*;

/// What we keep per inode besides the VFS inode (`struct erofs_inode`'s fields): the decoded
/// inode and, for compressed ones, the map header.
#[derive(Clone, Copy)]
pub(crate) struct InodeData {
    /// The decoded on-disk inode.
    vi: InodeInfo,
    /// The compressed-file map header: `None` for other inodes, and for compressed ones whose
    /// header did not parse.
    zi: Option<ZInfo>,
}

impl<'a> Inode<'a> {
    /// The decoded on-disk inode.
    pub(crate) fn info(&self) -> &'a InodeInfo {
        &self.data().vi
    }

    /// The compressed-file map header: `None` for other inodes, and for compressed ones whose
    /// header did not parse (reads fail).
    pub(crate) fn zinfo(&self) -> Option<&'a ZInfo> {
        self.data().zi.as_ref()
    }
}

/// An inode's data (the metabox inode's, or the packed inode's), read through its page cache,
/// as a [`MetaRead`] source; bytes past its size are corruption.
impl MetaRead for Inode<'_> {
    fn read_meta(&self, pos: u64, buf: &mut [u8]) -> crate::erofs_core::Result<()> {
        if pos
            .checked_add(buf.len() as u64)
            .is_none_or(|end| end > self.info().size)
        {
            return Err(Error::Io(EFSCORRUPTED.to_errno().wrapping_neg()));
        }
        self.read_cached(pos, buf).map_err(to_core)
    }
}

/// The VFS fields, operation tables and page-cache operations of inode `vi`
/// (`erofs_fill_inode`): by file type, and for data, by layout and mount kind.
fn vfs_setup(vi: &InodeInfo, file_backed: bool) -> (InodeAttrs, InodeKind, Aops<Erofs>) {
    let attrs = InodeAttrs {
        mode: vi.mode,
        uid: vi.uid,
        gid: vi.gid,
        nlink: vi.nlink,
        size: vi.size,
        mtime: vi.mtime,
        mtime_nsec: vi.mtime_nsec,
        blocks: vi.blocks_512,
    };
    let kind = match vi.mode & mode::S_IFMT {
        mode::S_IFREG => InodeKind::File,
        mode::S_IFDIR => InodeKind::Dir,
        mode::S_IFLNK => InodeKind::Symlink,
        _ => InodeKind::Special(vi.rdev),
    };
    let aops = if vi.is_compressed() {
        Aops::of::<crate::zdata::ZAops>()
    } else if file_backed {
        Aops::of::<crate::data::FileIo>()
    } else {
        Aops::iomap()
    };
    (attrs, kind, aops)
}

/// Returns the inode `nid`, reading it from the image if it is not cached (`erofs_iget`).
pub(crate) fn iget(sb: SuperBlock<'_>, nid: Nid) -> Result<InodeRef> {
    match sb.iget5_locked(nid.0, sb.state().sbi.nid_to_ino(nid.0))? {
        Iget::Cached(inode) => Ok(inode),
        Iget::New(mut new) => {
            let st = sb.state();
            // On error, dropping `new` calls `iget_failed`.
            // An I/O error names the nid, as `erofs_read_inode` does.
            let dev = sb.device();
            let vi = read_inode(&st.sbi, dev, nid)
                .inspect_err(|e| match e {
                    Error::Io(code) => sb.err(format_args!(
                        "failed to read inode meta block (nid: {}): -{code}",
                        nid.0
                    )),
                    _ => report(sb, e),
                })
                .map_err(to_kernel)?;
            // The C driver reads the map header on first use (`z_erofs_fill_inode`), so a bad
            // one fails reads, not lookups: report it now, fail the reads later.
            let zi = if vi.is_compressed() {
                fill_inode(&st.sbi, dev, &vi)
                    .inspect_err(|e| report(sb, e))
                    .ok()
            } else {
                None
            };
            let (attrs, kind, aops) = vfs_setup(&vi, dev.is_file());
            new.set_attrs(&attrs, kind, aops)?;
            let data = InodeData { vi, zi };
            let inode = crate::ishare::fill_inode(sb, new, data)?;
            if let Some(iloc) = st.sbi.iloc(vi.nid) {
                // As `erofs_iloc`: a metabox inode's position within the metabox.
                vfs::trace::fill_inode(&inode.inode(), iloc & !METABOX_POS, st.sbi.blkszbits);
            }
            Ok(inode)
        }
    }
}
