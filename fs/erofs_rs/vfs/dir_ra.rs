// SPDX-License-Identifier: GPL-2.0-only
//! Directory readahead (C since 6.17): `erofs_readdir` reads ahead `dir_ra_bytes` of a
//! directory's blocks per step (the filesystem holds the setting), through the file's
//! readahead state. C counterpart: fs/erofs/dir.c.

use super::{
    fs::FileSystem,
    DirContext, //
};
use kernel::{
    bindings,
    ffi::c_ulong, //
};

impl<T: FileSystem> DirContext<'_, T> {
    /// Reads ahead `pages` pages of the directory from page `index` on, unless the file's
    /// readahead window holds `index` already (`erofs_readdir`: `ra_has_index()`, then
    /// `page_cache_sync_readahead()`).
    pub(crate) fn sync_readahead(&mut self, index: u64, pages: u64) {
        let (Ok(index), Ok(pages)) = (c_ulong::try_from(index), c_ulong::try_from(pages)) else {
            return;
        };
        let file = self.file;
        // SAFETY: `file` is the live directory file of this `iterate_shared` call (type
        // invariant); its readahead state is the VFS's for such readers, as in C.
        let ra = unsafe { &raw mut (*file).__bindgen_anon_3.f_ra };
        // SAFETY: as above.
        let (start, size) = unsafe { ((*ra).start, (*ra).size) };
        // CAST: `unsigned long` is at least 32 bits wide, as C's `ra_has_index()` widens.
        if index >= start && index < start.wrapping_add(size as c_ulong) {
            return;
        }
        // SAFETY: an open file has its inode and the inode its mapping.
        let mapping = unsafe { (*(*file).f_inode).i_mapping };
        // `DEFINE_READAHEAD(ractl, file, ra, mapping, index)`.
        // SAFETY: all-zero is a valid `readahead_control`, as C's designated initialiser.
        let mut ractl: bindings::readahead_control = unsafe { core::mem::zeroed() };
        ractl.file = file;
        ractl.mapping = mapping;
        ractl.ra = ra;
        ractl._index = index;
        // SAFETY: `ractl` names the live file, its readahead state and the directory's page
        // cache, for this call.
        unsafe { bindings::page_cache_sync_ra(&mut ractl, pages) };
    }
}
