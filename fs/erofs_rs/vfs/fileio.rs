// SPDX-License-Identifier: GPL-2.0-only
//! Reading uncompressed files of file-backed mounts ahead (C: fs/erofs/fileio.c,
//! `erofs_fileio_readahead`): the folios of a readahead batch whose bytes follow each other in
//! the backing file go into one file read ([`ReadBio::new_file`], the stand-in for a bio that
//! compressed reads use too), read with a kiocb, asynchronously where the file completes it so
//! (`directio`), and unlocked by its completion.

use super::{
    bio::{
        Completed,
        ReadBio, //
    },
    fs::FileSystem,
    pagecache::OutFolio,
    SuperBlock,
};
use core::{
    marker::PhantomData,
    ptr::NonNull, //
};
use kernel::{
    bindings,
    prelude::*, //
};

/// The file reads of one readahead batch being built (`struct erofs_fileio`).
///
/// # Invariants
///
/// `file` is the referenced backing file of a file-backed superblock that lives for `'a`;
/// `bio`, if any, reads its folios from `file` and ends at byte `next` of it.
pub(crate) struct FileRead<'a> {
    file: *mut bindings::file,
    direct: bool,
    fsoff: u64,
    bio: Option<ReadBio>,
    next: u64,
    _p: PhantomData<&'a ()>,
}

impl<'a> FileRead<'a> {
    /// Reads for file-backed superblock `sb`, with `IOCB_DIRECT` if `direct` and the file allows
    /// it; `None` for a block-device mount.
    pub(crate) fn new<T: FileSystem>(sb: SuperBlock<'a, T>, direct: bool) -> Option<Self> {
        let dev = sb.device();
        // INVARIANT: a file-backed superblock holds its backing file for its life, `'a`.
        dev.is_file().then(|| FileRead {
            file: dev.file,
            direct,
            fsoff: dev.fsoff(),
            bio: None,
            next: 0,
            _p: PhantomData,
        })
    }

    /// Reads all of `folio` from byte `pos` of the image (the backing file's byte `pos` plus
    /// the image's offset in it): after the read being built if it ends there, else in a new
    /// one. The read unlocks the folio, uptodate if it succeeded; on error the folio is
    /// dropped, so unlocked, not uptodate.
    pub(crate) fn add(&mut self, folio: OutFolio, pos: u64) -> Result {
        let pos = pos.checked_add(self.fsoff).ok_or(EINVAL)?;
        // A part's folio is not the read's to fill and unlock whole.
        if folio.is_part() || i64::try_from(pos.saturating_add(folio.size() as u64)).is_err() {
            return Err(EINVAL);
        }
        let len = folio.size();
        if let Some(bio) = self.bio.as_mut() {
            if self.next == pos {
                let f = folio.as_raw();
                // SAFETY: `f` is locked and not uptodate (`OutFolio`'s invariant), the page-cache
                // folio of our inode for the file bytes right after the read's last one; its
                // unlocking passes to the read (forgotten below if added), whose completion
                // unlocks it; the page cache keeps it while it is locked.
                if unsafe { bio.add_folio(f, 0, len) } {
                    folio.into_raw();
                    // OVERFLOW: `pos + len` fits in `loff_t`, checked above.
                    self.next = pos + len as u64;
                    return Ok(());
                }
            }
        }
        self.submit();
        // SAFETY: as above; `file` is referenced for the superblock's life (type invariant),
        // and the read takes a reference of its own.
        let bio = unsafe {
            ReadBio::new_file(
                self.file,
                self.direct,
                pos,
                folio.as_raw(),
                len,
                plain_endio,
                core::ptr::null_mut(),
            )
        }?;
        folio.into_raw();
        self.bio = Some(bio);
        // OVERFLOW: as above.
        self.next = pos + len as u64;
        Ok(())
    }

    /// Submits the read being built.
    pub(crate) fn submit(&mut self) {
        if let Some(bio) = self.bio.take() {
            bio.submit();
        }
    }
}

impl Drop for FileRead<'_> {
    fn drop(&mut self) {
        self.submit();
    }
}

/// A file read of [`FileRead`] completed (`erofs_fileio_ki_complete` without an `end_io` of
/// zdata's): its folios are uptodate if it succeeded, and unlocked.
///
/// # Safety
///
/// `bio` is a read built by [`FileRead::add`], in its `end_io`.
unsafe extern "C" fn plain_endio(bio: *mut bindings::bio) {
    let Some(bio) = NonNull::new(bio) else { return };
    // SAFETY: by the contract, in its `end_io`, once.
    let bio = unsafe { Completed::from_raw(bio) };
    let ok = bio.errno() == 0;
    bio.end_read(ok);
}
