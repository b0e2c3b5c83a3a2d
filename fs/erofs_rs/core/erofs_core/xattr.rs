// SPDX-License-Identifier: MIT OR GPL-2.0-only
//! Extended attributes: inline and shared entries, long name prefixes. C counterpart:
//! fs/erofs/xattr.c.
//!
//! An inode with xattrs has, right after it, an ibody header (name filter, shared count), the
//! ids of its shared xattrs (4-byte units past `xattr_blkaddr`), then its inline entries up to
//! `xattr_isize`. Each entry is a 4-byte head, the name and the value, padded to 4 bytes.

use crate::erofs_core::{
    inode::InodeInfo,
    ondisk,
    sb::{
        SbInfo,
        METABOX_POS, //
    },
    Corruption,
    MetaRead,
    Result,
    Unsupported, //
};

/// Name index of `user.` xattrs.
pub const EROFS_XATTR_INDEX_USER: u8 = 1;
/// Name index of `system.posix_acl_access`.
pub const EROFS_XATTR_INDEX_POSIX_ACL_ACCESS: u8 = 2;
/// Name index of `system.posix_acl_default`.
pub const EROFS_XATTR_INDEX_POSIX_ACL_DEFAULT: u8 = 3;
/// Name index of `trusted.` xattrs.
pub const EROFS_XATTR_INDEX_TRUSTED: u8 = 4;
/// Name index of `lustre.` xattrs (never listed, as in the C driver).
pub const EROFS_XATTR_INDEX_LUSTRE: u8 = 5;
/// Name index of `security.` xattrs.
pub const EROFS_XATTR_INDEX_SECURITY: u8 = 6;
/// `e_name_index` bit 7: the low bits index the long prefix table.
pub const EROFS_XATTR_LONG_PREFIX: u8 = 0x80;
/// Mask of the long prefix index.
pub const EROFS_XATTR_LONG_PREFIX_MASK: u8 = 0x7f;

/// Seed of the name filter's xxHash32, to which the short prefix index is added
/// (`EROFS_XATTR_FILTER_SEED`).
pub const EROFS_XATTR_FILTER_SEED: u32 = 0x25BB_E08F;

/// Size of an entry head (`struct erofs_xattr_entry`).
const ENTRY_SIZE: u64 = 4;

/// A long xattr name prefix: a short prefix index plus an infix (`erofs_xattr_long_prefix`).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct LongPrefix<'a> {
    /// The short prefix index.
    pub base_index: u8,
    /// What follows the short prefix.
    pub infix: &'a [u8],
}

/// Resolves long prefixes by index; the kernel keeps the table the superblock points to.
pub trait Prefixes {
    /// The long prefix `idx`, if the table has it.
    fn get(&self, idx: u8) -> Option<LongPrefix<'_>>;
}

/// No long prefixes: for images without `XATTR_PREFIXES`.
pub struct NoPrefixes;

impl Prefixes for NoPrefixes {
    fn get(&self, _idx: u8) -> Option<LongPrefix<'_>> {
        None
    }
}

/// One entry as found on disk, with positions to read its name and value.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct EntryRef {
    /// `e_name_index` as stored.
    pub name_index: u8,
    /// Name length.
    pub name_len: u8,
    /// Value length.
    pub value_size: u16,
    /// Byte position of the name; the value follows it.
    pub name_pos: u64,
}

impl EntryRef {
    /// Byte position of the value.
    pub fn value_pos(&self) -> u64 {
        self.name_pos.saturating_add(u64::from(self.name_len))
    }

    /// Size of the whole entry, padded to 4 bytes.
    fn size(&self) -> u64 {
        // At most 4 + 255 + 65535: no overflow.
        ENTRY_SIZE
            .saturating_add(u64::from(self.name_len))
            .saturating_add(u64::from(self.value_size))
            .next_multiple_of(4)
    }
}

/// Reads the entry head at `pos`.
fn entry_at(meta: &impl MetaRead, pos: u64) -> Result<EntryRef> {
    let mut h = [0u8; 4];
    meta.read_meta(pos, &mut h)?;
    let [name_len, name_index, v0, v1] = h;
    Ok(EntryRef {
        name_index,
        name_len,
        value_size: u16::from_le_bytes([v0, v1]),
        name_pos: pos.saturating_add(ENTRY_SIZE),
    })
}

/// Calls `f` on every xattr entry of `vi`, inline ones first, then shared ones
/// (`erofs_xattr_iter_inline` and `erofs_xattr_iter_shared`). `f` returns `Ok(true)` to stop.
///
/// # Errors
///
/// [`Corruption::BogusXattr`] when the ibody header, an entry or a shared id points outside
/// the xattr area; the backend's and `f`'s errors.
pub fn for_each_entry(
    sbi: &SbInfo,
    meta: &impl MetaRead,
    vi: &InodeInfo,
    mut f: impl FnMut(&EntryRef) -> Result<bool>,
) -> Result<()> {
    let nid = vi.nid.0;
    let bogus = Corruption::BogusXattr(nid);
    let isize = u64::from(vi.xattr_isize);
    if isize == 0 {
        return Ok(());
    }
    if isize == u64::from(ondisk::XATTR_IBODY_HEADER_SIZE) {
        // An empty ibody header is undefined on disk, and the C driver refuses it too.
        return Err(Unsupported::XattrIbody(nid).into());
    }
    if isize < u64::from(ondisk::XATTR_IBODY_HEADER_SIZE) {
        return Err(bogus.into());
    }
    let start = sbi
        .iloc(vi.nid)
        .and_then(|p| p.checked_add(u64::from(vi.inode_isize)))
        .ok_or(bogus)?;
    let mut head = [0u8; 12];
    meta.read_meta(start, &mut head)?;
    let shared_count = u64::from(head[4]);
    // At most 12 + 4 * 255: no overflow.
    let header =
        u64::from(ondisk::XATTR_IBODY_HEADER_SIZE).saturating_add(shared_count.saturating_mul(4));
    if header > isize {
        return Err(bogus.into());
    }
    // Inline entries.
    let end = start.checked_add(isize).ok_or(bogus)?;
    let mut pos = start.checked_add(header).ok_or(bogus)?;
    while pos < end {
        let e = entry_at(meta, pos)?;
        let next = pos.checked_add(e.size()).ok_or(bogus)?;
        if next > end {
            return Err(bogus.into());
        }
        if f(&e)? {
            return Ok(());
        }
        pos = next;
    }
    // Shared entries, in the metabox with `SHARED_EA_IN_METABOX`.
    let shared_base = sbi
        .pos(sbi.xattr_blkaddr)
        .filter(|&p| p < METABOX_POS)
        .ok_or(bogus)?;
    let shared_base = if sbi.has_shared_ea_in_metabox() {
        shared_base | METABOX_POS
    } else {
        shared_base
    };
    for i in 0..shared_count {
        let mut id = [0u8; 4];
        let idpos = start
            .checked_add(
                u64::from(ondisk::XATTR_IBODY_HEADER_SIZE).saturating_add(i.saturating_mul(4)),
            )
            .ok_or(bogus)?;
        meta.read_meta(idpos, &mut id)?;
        let epos = u64::from(u32::from_le_bytes(id))
            .checked_mul(4)
            .and_then(|o| shared_base.checked_add(o))
            .ok_or(bogus)?;
        let e = entry_at(meta, epos)?;
        if f(&e)? {
            return Ok(());
        }
    }
    Ok(())
}

/// Whether the inode's name bloom filter rules out `name` (without its prefix) of short
/// prefix `index`, which `erofs_getxattr` checks before it looks at any entry.
///
/// The filter is the ibody header's `h_name_filter`: bit `xxh32(name, SEED + index) % 32` set
/// means no such name. Only images with `XATTR_FILTER` and a zero `xattr_filter_reserved` have
/// one. `xxh32(bytes, seed)` is the kernel's (or a test's) xxHash32.
///
/// # Errors
///
/// [`Corruption::BogusXattr`] if the header cannot be located, and the backend's errors.
pub fn filtered_out(
    sbi: &SbInfo,
    meta: &impl MetaRead,
    vi: &InodeInfo,
    index: u8,
    name: &[u8],
    xxh32: impl Fn(&[u8], u32) -> u32,
) -> Result<bool> {
    if !sbi.has_xattr_filter()
        || sbi.xattr_filter_reserved != 0
        || vi.xattr_isize <= ondisk::XATTR_IBODY_HEADER_SIZE
    {
        return Ok(false);
    }
    let bogus = Corruption::BogusXattr(vi.nid.0);
    let start = sbi
        .iloc(vi.nid)
        .and_then(|p| p.checked_add(u64::from(vi.inode_isize)))
        .ok_or(bogus)?;
    let mut head = [0u8; 12];
    meta.read_meta(start, &mut head)?;
    // `erofs_init_inode_xattrs` checks the shared count before the filter is used.
    if u32::from(head[4]).saturating_mul(4)
        > vi.xattr_isize
            .saturating_sub(ondisk::XATTR_IBODY_HEADER_SIZE)
    {
        return Err(bogus.into());
    }
    let filter = u32::from_le_bytes([head[0], head[1], head[2], head[3]]);
    let bit = xxh32(name, EROFS_XATTR_FILTER_SEED.wrapping_add(u32::from(index))) & 31;
    Ok(filter & (1u32 << bit) != 0)
}

/// Resolves an entry's name index into `(base_index, infix)`; `None` for a long prefix the
/// table lacks (such entries are skipped, as in the C driver).
pub fn resolve<'p>(e: &EntryRef, prefixes: &'p impl Prefixes) -> Option<(u8, &'p [u8])> {
    if e.name_index & EROFS_XATTR_LONG_PREFIX != 0 {
        let p = prefixes.get(e.name_index & EROFS_XATTR_LONG_PREFIX_MASK)?;
        Some((p.base_index, p.infix))
    } else {
        Some((e.name_index, &[]))
    }
}

/// Finds the xattr `name` (without its prefix) of short prefix `index` (`erofs_getxattr`).
///
/// # Errors
///
/// As [`for_each_entry`].
pub fn find(
    sbi: &SbInfo,
    meta: &impl MetaRead,
    vi: &InodeInfo,
    prefixes: &impl Prefixes,
    index: u8,
    name: &[u8],
) -> Result<Option<EntryRef>> {
    let mut found = None;
    let mut buf = [0u8; 255];
    for_each_entry(sbi, meta, vi, |e| {
        let Some((base, infix)) = resolve(e, prefixes) else {
            return Ok(false);
        };
        if base != index || usize::from(e.name_len).saturating_add(infix.len()) != name.len() {
            return Ok(false);
        }
        let (want_infix, want_rest) = name.split_at(infix.len());
        if want_infix != infix {
            return Ok(false);
        }
        let got = buf
            .get_mut(..usize::from(e.name_len))
            .ok_or(Corruption::BogusXattr(vi.nid.0))?;
        meta.read_meta(e.name_pos, got)?;
        if got == want_rest {
            found = Some(*e);
            return Ok(true);
        }
        Ok(false)
    })?;
    Ok(found)
}

/// Reads the long prefix table of `count` entries at `pos` through `meta` (the packed inode's
/// data or the metadata), calling `f(base_index, infix)` for each (`erofs_xattr_prefixes_init`).
///
/// # Errors
///
/// [`Corruption::BogusXattr`] (with nid 0) for prefixes of impossible length.
pub fn read_prefixes(
    meta: &impl MetaRead,
    mut pos: u64,
    count: u8,
    mut f: impl FnMut(u8, &[u8]) -> Result<()>,
) -> Result<()> {
    let bogus = Corruption::BogusXattr(0);
    let mut buf = [0u8; 256];
    for _ in 0..count {
        pos = pos.checked_next_multiple_of(4).ok_or(bogus)?;
        let mut len = [0u8; 2];
        meta.read_meta(pos, &mut len)?;
        let len = usize::from(u16::from_le_bytes(len));
        // One base index byte plus an infix of at most 255 bytes.
        if !(1..=256).contains(&len) {
            return Err(bogus.into());
        }
        pos = pos.checked_add(2).ok_or(bogus)?;
        let item = buf.get_mut(..len).ok_or(bogus)?;
        meta.read_meta(pos, item)?;
        let (base, infix) = item.split_first().ok_or(bogus)?;
        f(*base, infix)?;
        pos = pos
            .checked_add(u64::try_from(len).map_err(|_| bogus)?)
            .ok_or(bogus)?;
    }
    Ok(())
}
