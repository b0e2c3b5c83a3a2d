// SPDX-License-Identifier: GPL-2.0-only
//! Extended attributes and the long prefix table. C counterpart: fs/erofs/xattr.c.
#![deny(unsafe_code)]

use crate::erofs_core::{
    self as core_,
    ondisk,
    sb::METABOX_POS,
    xattr::{
        self,
        LongPrefix,
        Prefixes, //
    },
    MetaRead, //
};
use crate::super_::{
    report,
    to_core,
    to_kernel,
    Dentry,
    Inode,
    MountFlags,
    SuperBlock, //
};
use crate::vfs::{
    self,
    xattr::Namespace, //
};
use kernel::{
    prelude::*,
    sync::SetOnce, //
};

/// The short prefix index (`erofs_xattr_entry::e_name_index`) of the VFS namespace `ns`.
pub(crate) fn index_of(ns: Namespace) -> u8 {
    match ns {
        Namespace::User => xattr::EROFS_XATTR_INDEX_USER,
        Namespace::Trusted => xattr::EROFS_XATTR_INDEX_TRUSTED,
        Namespace::Security => xattr::EROFS_XATTR_INDEX_SECURITY,
        Namespace::AclAccess => xattr::EROFS_XATTR_INDEX_POSIX_ACL_ACCESS,
        Namespace::AclDefault => xattr::EROFS_XATTR_INDEX_POSIX_ACL_DEFAULT,
    }
}

/// The VFS namespace of short prefix index `index`; `None` for those the VFS has no handler
/// of (`lustre.`, unknown ones), whose attributes are not listed (`erofs_xattr_prefix`).
fn namespace_of(index: u8) -> Option<Namespace> {
    match index {
        xattr::EROFS_XATTR_INDEX_USER => Some(Namespace::User),
        xattr::EROFS_XATTR_INDEX_TRUSTED => Some(Namespace::Trusted),
        xattr::EROFS_XATTR_INDEX_SECURITY => Some(Namespace::Security),
        xattr::EROFS_XATTR_INDEX_POSIX_ACL_ACCESS => Some(Namespace::AclAccess),
        xattr::EROFS_XATTR_INDEX_POSIX_ACL_DEFAULT => Some(Namespace::AclDefault),
        _ => None,
    }
}

/// The long xattr name prefixes of a superblock, read once at mount.
pub(crate) struct PrefixTable {
    /// `(base_index, infix)` per prefix id.
    items: KVec<(u8, KVec<u8>)>,
}

impl PrefixTable {
    /// Reads the table (`erofs_xattr_prefixes_init`), once the packed and metabox inodes are
    /// there: from the metabox, or else the packed inode (through their page caches, as either
    /// may be compressed), or from the metadata when the image says the prefixes are plain.
    pub(crate) fn load(sb: SuperBlock<'_>) -> core_::Result<Self> {
        let st = sb.state();
        let dev = sb.device();
        let sbi = &st.sbi;
        let mut items = KVec::new();
        let count = sbi.xattr_prefix_count;
        if count == 0 {
            return Ok(PrefixTable { items });
        }
        // OVERFLOW: a `u32` times 4 fits in a `u64`.
        let pos = u64::from(sbi.xattr_prefix_start) * 4;
        let mut push = |base: u8, infix: &[u8]| -> core_::Result<()> {
            let nomem = to_core(ENOMEM);
            let mut v = KVec::with_capacity(infix.len(), GFP_KERNEL).map_err(|_| nomem)?;
            v.extend_from_slice(infix, GFP_KERNEL).map_err(|_| nomem)?;
            items.push((base, v), GFP_KERNEL).map_err(|_| nomem)
        };
        let plain = sbi.feature_compat & ondisk::EROFS_FEATURE_COMPAT_PLAIN_XATTR_PFX != 0;
        match sb.packed_inode() {
            _ if plain => xattr::read_prefixes(dev, pos, count, &mut push)?,
            _ if sbi.has_metabox() => {
                xattr::read_prefixes(dev, pos | METABOX_POS, count, &mut push)?
            }
            Some(packed) => xattr::read_prefixes(&packed.inode(), pos, count, &mut push)?,
            None => xattr::read_prefixes(dev, pos, count, &mut push)?,
        }
        Ok(PrefixTable { items })
    }
}

impl Prefixes for SetOnce<PrefixTable> {
    fn get(&self, idx: u8) -> Option<LongPrefix<'_>> {
        self.as_ref()?.get(idx)
    }
}

impl Prefixes for PrefixTable {
    fn get(&self, idx: u8) -> Option<LongPrefix<'_>> {
        self.items
            .get(usize::from(idx))
            .map(|(base_index, infix)| LongPrefix {
                base_index: *base_index,
                infix,
            })
    }
}

/// Reads the value of xattr `name` of short prefix `index` into `buf` (or only sizes it)
/// (`erofs_getxattr`).
pub(crate) fn getxattr(
    inode: Inode<'_>,
    index: u8,
    name: &[u8],
    buf: Option<&mut [u8]>,
) -> Result<usize> {
    let st = inode.sb().state();
    if index == xattr::EROFS_XATTR_INDEX_USER && !st.opt_flags().contains(MountFlags::USER_XATTR) {
        return Err(EOPNOTSUPP);
    }
    getxattr_raw(inode, index, name, buf)
}

/// The page-cache-sharing fingerprint of `inode` (`erofs_xattr_fill_inode_fingerprint`): the
/// mount's `domain_id`, a NUL, and the value of the xattr whose long prefix the superblock
/// names; `None` if the inode has none, or a bad one.
pub(crate) fn fingerprint(inode: Inode<'_>) -> Option<KVec<u8>> {
    let st = inode.sb().state();
    let domain = st.domain_id.as_slice();
    let p = st.prefixes.as_ref()?.get(st.sbi.ishare_xattr_prefix_id)?;
    let len = getxattr_raw(inode, p.base_index, p.infix, None).ok()?;
    if len == 0 || len as u64 > st.sbi.blksz() {
        return None;
    }
    // OVERFLOW: `len` is at most a block, `domain` a mount option string.
    let mut fp = KVec::from_elem(0u8, domain.len() + 1 + len, GFP_KERNEL).ok()?;
    fp.get_mut(..domain.len())?.copy_from_slice(domain);
    // OVERFLOW: as above.
    let n = getxattr_raw(inode, p.base_index, p.infix, fp.get_mut(domain.len() + 1..)).ok()?;
    (n == len).then_some(fp)
}

/// [`getxattr`] without the `user_xattr` check (`erofs_getxattr` itself).
fn getxattr_raw(inode: Inode<'_>, index: u8, name: &[u8], buf: Option<&mut [u8]>) -> Result<usize> {
    let sb = inode.sb();
    let st = sb.state();
    let dev = sb.device();
    // In the C driver's order: no xattrs, the name filter, then the name's length.
    let vi = inode.info();
    if vi.xattr_isize == 0 {
        return Err(ENODATA);
    }
    if xattr::filtered_out(&st.sbi, dev, vi, index, name, vfs::xxh32)
        .inspect_err(|e| report(sb, e))
        .map_err(to_kernel)?
    {
        return Err(ENODATA);
    }
    // (An ibody too small for entries fails in `find` first, as in `erofs_init_inode_xattrs`.)
    if name.len() > ondisk::EROFS_NAME_LEN && vi.xattr_isize > ondisk::XATTR_IBODY_HEADER_SIZE {
        return Err(ERANGE);
    }
    let e = xattr::find(&st.sbi, dev, vi, &st.prefixes, index, name)
        .inspect_err(|e| report(sb, e))
        .map_err(to_kernel)?
        .ok_or(ENODATA)?;
    let size = usize::from(e.value_size);
    if let Some(buf) = buf {
        let dst = buf.get_mut(..size).ok_or(ERANGE)?;
        dev.read_meta(e.value_pos(), dst)
            .inspect_err(|e| report(sb, e))
            .map_err(to_kernel)?;
    }
    Ok(size)
}

/// Lists the names the caller may see, NUL-terminated, into `buf` (or only sizes the list)
/// (`erofs_listxattr`).
pub(crate) fn listxattr(dentry: Dentry<'_>, mut buf: Option<&mut [u8]>) -> Result<usize> {
    let inode = dentry.inode();
    let sb = inode.sb();
    let st = sb.state();
    let dev = sb.device();
    let vi = inode.info();
    let mut ofs = 0usize;
    let mut kerr = None;
    let res = xattr::for_each_entry(&st.sbi, dev, vi, |e| {
        let Some((base, infix)) = xattr::resolve(e, &st.prefixes) else {
            return Ok(false);
        };
        let Some(prefix) = namespace_of(base).and_then(|ns| dentry.xattr_prefix(ns)) else {
            return Ok(false);
        };
        // OVERFLOW: a static prefix, an infix of at most 255 bytes, a `u8` name length.
        let total = prefix.len() + infix.len() + usize::from(e.name_len) + 1;
        let Some(end) = ofs.checked_add(total) else {
            kerr = Some(ERANGE);
            return Ok(true);
        };
        if let Some(buf) = buf.as_deref_mut() {
            let Some(dst) = buf.get_mut(ofs..end) else {
                kerr = Some(ERANGE);
                return Ok(true);
            };
            // PANIC: `dst` is `total` bytes long: the prefix, the infix, the name and a NUL.
            let (p, rest) = dst.split_at_mut(prefix.len());
            p.copy_from_slice(prefix);
            let (i, rest) = rest.split_at_mut(infix.len());
            i.copy_from_slice(infix);
            let (n, nul) = rest.split_at_mut(usize::from(e.name_len));
            dev.read_meta(e.name_pos, n)?;
            nul.fill(0);
        }
        ofs = end;
        Ok(false)
    });
    if let Some(e) = kerr {
        return Err(e);
    }
    match res {
        Ok(()) => Ok(ofs),
        Err(e) => {
            report(sb, &e);
            Err(to_kernel(e))
        }
    }
}
