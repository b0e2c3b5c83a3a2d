// SPDX-License-Identifier: GPL-2.0-only
//! The managed cache of compressed data (C: `MNGD_MAPPING(sbi)` of fs/erofs/zdata.c). Ours is
//! the primary block device's page cache: compressed folios of the pclusters that
//! `cache_strategy=` keeps stay there; those it does not keep are read into short-lived
//! folios ([`ZQueue::grab_shortlived`](super::zdata::ZQueue::grab_shortlived)).
//! `drop_caches` empties it ([`Device::drop_managed_cache`]).

use super::Device;
use kernel::bindings;

impl Device {
    /// Drops every unused folio of the managed cache (`drop_caches` bit 1 of the C driver's
    /// sysfs: `invalidate_mapping_pages(MNGD_MAPPING(sbi), 0, -1)`): the clean folios of the
    /// block device's page cache that nobody holds, locks or maps. Ours is the device's page
    /// cache, so unused metadata folios go too; they are read again when needed. Nothing for
    /// file-backed mounts, whose compressed data is read through the backing file's page
    /// cache.
    pub(crate) fn drop_managed_cache(&self) {
        if self.is_file() {
            return;
        }
        // SAFETY: `mapping` is the live bdev mapping of our superblock (type invariant);
        // `invalidate_mapping_pages` only drops folios it can lock, that are clean, unmapped
        // and referenced by nobody but the page cache.
        unsafe { bindings::invalidate_mapping_pages(self.mapping, 0, usize::MAX) };
    }
}
