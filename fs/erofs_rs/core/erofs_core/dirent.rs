// SPDX-License-Identifier: MIT OR GPL-2.0-only
//! Directory blocks: dirent iteration and name lookup. C counterparts: fs/erofs/dir.c
//! (`erofs_fill_dentries`) and fs/erofs/namei.c (`erofs_namei`).
//!
//! A directory block holds sorted 12-byte dirents followed by their names; the first dirent's
//! `nameoff` gives the number of dirents. The last name runs to the first NUL or to the end of
//! the block (or of the directory, for its last block).

use crate::erofs_core::{
    ondisk::{
        self,
        Dirent, //
    },
    Corruption,
    Result, //
};
use core::cmp::Ordering;
use zerocopy::FromBytes;

/// Size of one dirent.
pub const DIRENT_SIZE: usize = 12;

/// One directory entry, borrowed from its block.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Entry<'a> {
    /// The name, 1..=255 bytes.
    pub name: &'a [u8],
    /// The inode nid (the metabox bit included).
    pub nid: u64,
    /// `FT_*` file type.
    pub file_type: u8,
}

/// A checked view of one directory block.
#[derive(Debug, Clone, Copy)]
pub struct DirBlock<'a> {
    /// The block, cut to the directory's size.
    data: &'a [u8],
    /// Number of dirents.
    ndirents: usize,
    /// The directory, for errors.
    nid: u64,
}

impl<'a> DirBlock<'a> {
    /// Checks the head of a directory block: `data` is the block cut to `maxsize`, the bytes
    /// the directory holds in it.
    ///
    /// # Errors
    ///
    /// [`Corruption::DirentNameoff0`] when the first `nameoff` is 0, not a multiple of 12 or
    /// past the block.
    pub fn new(data: &'a [u8], nid: u64) -> Result<Self> {
        let nameoff0 = Dirent::ref_from_prefix(data)
            .map(|(de, _)| de.nameoff.get())
            .map_err(|_| Corruption::DirentNameoff0 { nid, nameoff: 0 })?;
        let n = usize::from(nameoff0);
        if n == 0 || n >= data.len() || n % DIRENT_SIZE != 0 {
            return Err(Corruption::DirentNameoff0 {
                nid,
                nameoff: nameoff0,
            }
            .into());
        }
        Ok(DirBlock {
            data,
            ndirents: n / DIRENT_SIZE,
            nid,
        })
    }

    /// Number of dirents in the block.
    pub fn len(&self) -> usize {
        self.ndirents
    }

    /// Whether the block has no dirents (never true for a checked block).
    pub fn is_empty(&self) -> bool {
        self.ndirents == 0
    }

    /// The `i`-th entry, with its name checked (`erofs_fill_dentries`).
    ///
    /// # Errors
    ///
    /// [`Corruption::BogusDirent`] for names that are empty, longer than 255 bytes, out of
    /// order or past the block.
    pub fn get(&self, i: usize) -> Result<Entry<'a>> {
        let bogus = Corruption::BogusDirent(self.nid);
        let de = self.dirent(i)?;
        let nameoff = usize::from(de.nameoff.get());
        let end = if i.saturating_add(1) < self.ndirents {
            usize::from(self.dirent(i.saturating_add(1))?.nameoff.get())
        } else {
            // The trailing name ends at a NUL or at the end of the data.
            let tail = self.data.get(nameoff..).ok_or(bogus)?;
            nameoff.saturating_add(tail.iter().position(|&b| b == 0).unwrap_or(tail.len()))
        };
        let name = self.data.get(nameoff..end).ok_or(bogus)?;
        if name.is_empty() || name.len() > ondisk::EROFS_NAME_LEN {
            return Err(bogus.into());
        }
        Ok(Entry {
            name,
            nid: de.nid.get(),
            file_type: de.file_type,
        })
    }

    /// The raw `i`-th dirent.
    fn dirent(&self, i: usize) -> Result<&'a Dirent> {
        let off = i
            .checked_mul(DIRENT_SIZE)
            .ok_or(Corruption::BogusDirent(self.nid))?;
        let bytes = self
            .data
            .get(off..)
            .ok_or(Corruption::BogusDirent(self.nid))?;
        Dirent::ref_from_prefix(bytes)
            .map(|(de, _)| de)
            .map_err(|_| Corruption::BogusDirent(self.nid).into())
    }

    /// The name of the first dirent, for the binary search over blocks.
    ///
    /// # Errors
    ///
    /// As [`DirBlock::get`].
    pub fn first_name(&self) -> Result<&'a [u8]> {
        Ok(self.get(0)?.name)
    }

    /// Binary search for `name` in this block.
    ///
    /// # Errors
    ///
    /// As [`DirBlock::get`], for the entries the search visits.
    pub fn find(&self, name: &[u8]) -> Result<Option<Entry<'a>>> {
        let (mut lo, mut hi) = (0usize, self.ndirents);
        while lo < hi {
            let mid = lo.midpoint(hi);
            let e = self.get(mid)?;
            match name.cmp(e.name) {
                Ordering::Equal => return Ok(Some(e)),
                Ordering::Greater => lo = mid.saturating_add(1),
                Ordering::Less => hi = mid,
            }
        }
        Ok(None)
    }
}

/// Looks `name` up in a directory of `nblocks` blocks (`erofs_namei`).
///
/// `block(i, f)` calls `f` with block `i` of the directory, cut to the directory size, so the
/// caller keeps control of mapping and unmapping. Blocks are sorted by their names, so a binary
/// search over the first names finds the only block that may hold `name`.
///
/// # Errors
///
/// Corruption of the blocks visited, and the errors of `block`.
pub fn lookup<F>(nblocks: u64, nid: u64, name: &[u8], mut block: F) -> Result<Option<(u64, u8)>>
where
    F: FnMut(u64, &mut dyn FnMut(&[u8]) -> Result<Option<(u64, u8)>>) -> Result<Option<(u64, u8)>>,
{
    let (mut lo, mut hi) = (0u64, nblocks);
    // Invariant: every block before `lo` starts with a name <= `name`, every one from `hi` on
    // with a name > `name`. The candidate is the last block with a first name <= `name`.
    while lo < hi {
        let mid = lo.midpoint(hi);
        let mut ord = Ordering::Less;
        let found = block(mid, &mut |data| {
            let blk = DirBlock::new(data, nid)?;
            let first = blk.first_name()?;
            ord = name.cmp(first);
            if ord == Ordering::Equal {
                let e = blk.get(0)?;
                return Ok(Some((e.nid, e.file_type)));
            }
            Ok(None)
        })?;
        if found.is_some() {
            return Ok(found);
        }
        match ord {
            Ordering::Less => hi = mid,
            _ => lo = mid.saturating_add(1),
        }
    }
    if lo == 0 {
        return Ok(None);
    }
    block(lo.saturating_sub(1), &mut |data| {
        let blk = DirBlock::new(data, nid)?;
        Ok(blk.find(name)?.map(|e| (e.nid, e.file_type)))
    })
}

#[cfg(test)]
mod tests {
    #![allow(
        clippy::indexing_slicing,
        clippy::unwrap_used,
        clippy::arithmetic_side_effects,
        clippy::as_conversions
    )]
    use super::*;
    use crate::erofs_core::Error;

    /// A directory block with the given (sorted) names, nids 100, 101, ...
    fn block(names: &[&str], bsz: usize) -> [u8; 512] {
        assert!(bsz <= 512);
        let mut b = [0u8; 512];
        let mut nameoff = names.len() * 12;
        for (i, n) in names.iter().enumerate() {
            b[i * 12..i * 12 + 8].copy_from_slice(&(100 + i as u64).to_le_bytes());
            b[i * 12 + 8..i * 12 + 10].copy_from_slice(&(nameoff as u16).to_le_bytes());
            b[i * 12 + 10] = ondisk::ft::REG_FILE;
            b[nameoff..nameoff + n.len()].copy_from_slice(n.as_bytes());
            nameoff += n.len();
        }
        b
    }

    #[test]
    fn iterates_and_finds() {
        let b = block(&[".", "..", "a", "bb", "c"], 512);
        let blk = DirBlock::new(&b, 1).unwrap();
        assert_eq!(blk.len(), 5);
        assert_eq!(blk.get(3).unwrap().name, b"bb");
        // The trailing name ends at the first NUL.
        assert_eq!(blk.get(4).unwrap().name, b"c");
        assert_eq!(blk.find(b"bb").unwrap().unwrap().nid, 103);
        assert_eq!(blk.find(b"b").unwrap(), None);
        assert_eq!(blk.find(b"zz").unwrap(), None);
    }

    #[test]
    fn rejects_nameoff0() {
        for bad in [0u16, 7, 512, 600] {
            let mut b = block(&["a"], 512);
            b[8..10].copy_from_slice(&bad.to_le_bytes());
            assert_eq!(
                DirBlock::new(&b, 9).unwrap_err(),
                Error::Corrupted(Corruption::DirentNameoff0 {
                    nid: 9,
                    nameoff: bad
                })
            );
        }
    }

    #[test]
    fn rejects_bogus_names() {
        // Names out of order (a later nameoff before an earlier one).
        let mut b = block(&["a", "b", "c"], 512);
        b[12 + 8..12 + 10].copy_from_slice(&60u16.to_le_bytes());
        let blk = DirBlock::new(&b, 4).unwrap();
        assert_eq!(
            blk.get(1).unwrap_err(),
            Error::Corrupted(Corruption::BogusDirent(4))
        );
        // A trailing name that is empty.
        let mut b = block(&["a", "b"], 512);
        b[24 + 1] = 0;
        b[24] = 0;
        let blk = DirBlock::new(&b, 4).unwrap();
        assert_eq!(
            blk.get(1).unwrap_err(),
            Error::Corrupted(Corruption::BogusDirent(4))
        );
        // A trailing nameoff past the block.
        let mut b = block(&["a", "b"], 512);
        b[12 + 8..12 + 10].copy_from_slice(&700u16.to_le_bytes());
        let blk = DirBlock::new(&b, 4).unwrap();
        assert_eq!(
            blk.get(1).unwrap_err(),
            Error::Corrupted(Corruption::BogusDirent(4))
        );
        // A name longer than 255 bytes.
        let long = "x".repeat(300);
        let b = block(&[long.as_str()], 512);
        let blk = DirBlock::new(&b, 4).unwrap();
        assert_eq!(
            blk.get(0).unwrap_err(),
            Error::Corrupted(Corruption::BogusDirent(4))
        );
    }

    #[test]
    fn lookup_searches_blocks() {
        let blocks = [
            block(&["a", "b"], 512),
            block(&["d", "e"], 512),
            block(&["g", "h"], 512),
        ];
        let find = |name: &[u8]| {
            lookup(3, 1, name, |i, f| f(&blocks[i as usize][..]))
                .unwrap()
                .map(|(nid, _)| nid)
        };
        assert_eq!(find(b"a"), Some(100));
        assert_eq!(find(b"e"), Some(101));
        assert_eq!(find(b"g"), Some(100));
        assert_eq!(find(b"h"), Some(101));
        assert_eq!(find(b"c"), None);
        assert_eq!(find(b"0"), None);
        assert_eq!(find(b"z"), None);
    }
}
