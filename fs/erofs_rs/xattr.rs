// SPDX-License-Identifier: GPL-2.0-only
//! Extended attributes and the long prefix table. C counterpart: fs/erofs/xattr.c.
#![deny(unsafe_code)]

use crate::data::InodeData;
use crate::erofs_core::{
    self as core_,
    inode::read_inode,
    ondisk,
    sb::SbInfo,
    xattr::{
        self,
        LongPrefix,
        Prefixes, //
    },
    MetaRead,
    Nid,
    Unsupported, //
};
use crate::super_::report;
use crate::vfs::{
    self,
    ffi::EROFS_RS_OPT_USER_XATTR,
    Dentry,
    Device,
    Inode, //
};
use kernel::prelude::*;

/// The long xattr name prefixes of a superblock, read once at mount.
pub(crate) struct PrefixTable {
    /// `(base_index, infix)` per prefix id.
    items: KVec<(u8, KVec<u8>)>,
}

impl PrefixTable {
    /// Reads the table from the packed inode, or from the metadata when the image says the
    /// prefixes are plain (`erofs_xattr_prefixes_init`).
    pub(crate) fn load(sbi: &SbInfo, dev: &Device) -> core_::Result<Self> {
        let mut items = KVec::new();
        let count = sbi.xattr_prefix_count;
        if count == 0 {
            return Ok(PrefixTable { items });
        }
        let pos = u64::from(sbi.xattr_prefix_start) * 4;
        let mut push = |base: u8, infix: &[u8]| -> core_::Result<()> {
            let nomem = core_::Error::Io(ENOMEM.to_errno().wrapping_neg());
            let mut v = KVec::with_capacity(infix.len(), GFP_KERNEL).map_err(|_| nomem)?;
            v.extend_from_slice(infix, GFP_KERNEL).map_err(|_| nomem)?;
            items.push((base, v), GFP_KERNEL).map_err(|_| nomem)
        };
        let plain = sbi.feature_compat & ondisk::EROFS_FEATURE_COMPAT_PLAIN_XATTR_PFX != 0;
        if !plain && sbi.packed_nid != 0 {
            let vi = read_inode(sbi, dev, Nid(sbi.packed_nid)).map_err(|e| match e {
                core_::Error::Unsupported(Unsupported::DataLayout { nid, .. }) => Unsupported::PackedInode(nid).into(),
                e => e,
            })?;
            xattr::read_prefixes(&InodeData { sbi, dev, vi }, pos, count, &mut push)?;
        } else {
            xattr::read_prefixes(dev, pos, count, &mut push)?;
        }
        Ok(PrefixTable { items })
    }
}

impl Prefixes for PrefixTable {
    fn get(&self, idx: u8) -> Option<LongPrefix<'_>> {
        self.items.get(usize::from(idx)).map(|(base_index, infix)| LongPrefix { base_index: *base_index, infix })
    }
}

/// Reads the value of xattr `name` of short prefix `index` into `buf` (or only sizes it)
/// (`erofs_getxattr`).
pub(crate) fn getxattr(inode: Inode<'_>, index: u8, name: &[u8], buf: Option<&mut [u8]>) -> Result<usize> {
    let sb = inode.sb();
    let st = sb.state();
    if index == xattr::EROFS_XATTR_INDEX_USER && st.opt_flags() & EROFS_RS_OPT_USER_XATTR == 0 {
        return Err(EOPNOTSUPP);
    }
    if name.len() > ondisk::EROFS_NAME_LEN {
        return Err(ERANGE);
    }
    let vi = inode.info();
    if vi.xattr_isize == 0 {
        return Err(ENODATA);
    }
    let e = xattr::find(&st.sbi, &st.dev, vi, &st.prefixes, index, name)
        .inspect_err(|e| report(sb, e))
        .map_err(vfs::to_kernel)?
        .ok_or(ENODATA)?;
    let size = usize::from(e.value_size);
    if let Some(buf) = buf {
        let dst = buf.get_mut(..size).ok_or(ERANGE)?;
        st.dev.read_meta(e.value_pos(), dst).inspect_err(|e| report(sb, e)).map_err(vfs::to_kernel)?;
    }
    Ok(size)
}

/// Lists the names the caller may see, NUL-terminated, into `buf` (or only sizes the list)
/// (`erofs_listxattr`).
pub(crate) fn listxattr(dentry: Dentry<'_>, mut buf: Option<&mut [u8]>) -> Result<usize> {
    let inode = dentry.inode();
    let sb = inode.sb();
    let st = sb.state();
    let vi = inode.info();
    let mut ofs = 0usize;
    let mut kerr = None;
    let res = xattr::for_each_entry(&st.sbi, &st.dev, vi, |e| {
        let Some((base, infix)) = xattr::resolve(e, &st.prefixes) else {
            return Ok(false);
        };
        let Some(prefix) = dentry.xattr_prefix(base) else {
            return Ok(false);
        };
        let total = prefix.len() + infix.len() + usize::from(e.name_len) + 1;
        if let Some(buf) = buf.as_deref_mut() {
            let Some(dst) = buf.get_mut(ofs..ofs + total) else {
                kerr = Some(ERANGE);
                return Ok(true);
            };
            let (p, rest) = dst.split_at_mut(prefix.len());
            p.copy_from_slice(prefix);
            let (i, rest) = rest.split_at_mut(infix.len());
            i.copy_from_slice(infix);
            let (n, nul) = rest.split_at_mut(usize::from(e.name_len));
            st.dev.read_meta(e.name_pos, n)?;
            nul.fill(0);
        }
        ofs += total;
        Ok(false)
    });
    if let Some(e) = kerr {
        return Err(e);
    }
    match res {
        Ok(()) => Ok(ofs),
        Err(e) => {
            report(sb, &e);
            Err(vfs::to_kernel(e))
        }
    }
}
