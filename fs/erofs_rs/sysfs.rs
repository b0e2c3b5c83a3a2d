// SPDX-License-Identifier: GPL-2.0-only
//! The sysfs files: each mount's `/sys/fs/<fstype>/<disk>/` (`sync_decompress`, `drop_caches`,
//! `dir_ra_bytes`), the module's `/sys/fs/<fstype>/accel` and `features/`, with the C driver's
//! names, modes, values, accepted inputs and errors. The layer builds the directories from
//! this declaration ([`vfs::sysfs::Sysfs`]). C counterpart: fs/erofs/sysfs.c.
//!
//! `accel`: the file and what it means (the offload driver of mounts without `decomp_accel=`)
//! are the driver's, as C keeps the file in sysfs.c and the engines in decompressor_crypto.c;
//! the name it sets is decompressor_crypto.rs's ([`Accel::global_default`]).
#![deny(unsafe_code)]

use crate::decompressor_crypto::Accel;
use crate::super_::{
    Erofs,
    SbOpts,
    Split,
    SuperBlock, //
};
use crate::vfs::sysfs::{
    self,
    Attr,
    ShowBuf,
    Sysfs, //
};
use core::{
    fmt::Write,
    sync::atomic::Ordering, //
};
use kernel::prelude::*;

/// `EROFS_SYNC_DECOMPRESS_FORCE_OFF`: the largest value `sync_decompress` takes.
const SYNC_DECOMPRESS_FORCE_OFF: u32 = 2;

/// The files of a mount's directory (C's `erofs_sb_attrs`).
#[derive(Clone, Copy)]
pub(crate) enum SbAttr {
    /// `sync_decompress`: 0 (auto), 1 (force on) or 2 (force off); the same setting as
    /// debugfs' `sync_decompress`.
    SyncDecompress,
    /// `drop_caches`: 1 to 3, write-only.
    DropCaches,
    /// `dir_ra_bytes`: bytes of directory readahead per step, 0 for none.
    DirRaBytes,
    /// `decomp_split` (erofs_rs only): 0 (auto), 1 (force) or 2 (off); the mount option
    /// `decomp_split=` of the same name.
    DecompSplit,
}

/// The files of the module's directory (C's `erofs_attrs`).
#[derive(Clone, Copy)]
pub(crate) enum ModuleAttr {
    /// `accel`: the acomp drivers (one per line; only the first is used) that mounts without
    /// `decomp_accel=` take; empty disables.
    Accel,
}

/// `drop_caches` bit 0: drops the cached compressed data (C: `invalidate_mapping_pages()` of
/// the managed cache), which erofs_rs keeps in the page caches of the devices: their clean,
/// unused pages go. Bit 1 frees unused pclusters in C (`z_erofs_shrink_scan()`); erofs_rs
/// keeps no pcluster objects between reads, so there is nothing to free.
fn drop_caches(sb: SuperBlock<'_>) {
    sb.device().zcache.drop_unused();
    for d in sb.state().devs.iter() {
        d.dev.drop_clean_pages();
    }
}

impl Sysfs for Erofs {
    type SbAttr = SbAttr;

    /// In C's order.
    const SB_ATTRS: &'static [Attr<SbAttr>] = &[
        Attr::new(SbAttr::SyncDecompress, c"sync_decompress", 0o644),
        Attr::new(SbAttr::DropCaches, c"drop_caches", 0o200),
        Attr::new(SbAttr::DirRaBytes, c"dir_ra_bytes", 0o644),
        Attr::new(SbAttr::DecompSplit, c"decomp_split", 0o644),
    ];

    /// `erofs_attr_show`: `%u\n`.
    fn show(sb: SuperBlock<'_>, attr: SbAttr, out: &mut ShowBuf<'_>) -> Result {
        let v = match attr {
            SbAttr::SyncDecompress => sb.state().sync_decompress().load(Ordering::Relaxed),
            SbAttr::DirRaBytes => sb.state().dir_ra_bytes(),
            SbAttr::DecompSplit => sb.state().opts.load().split.raw(),
            // Write-only: sysfs does not read it (nor would a `kobj_attribute` without
            // `show`).
            SbAttr::DropCaches => return Err(EIO),
        };
        writeln!(out, "{v}").map_err(|_| EINVAL)
    }

    /// `erofs_attr_store`: a number (`kstrtoul(skip_spaces(buf), 0)`) that fits in `unsigned
    /// int` (else `ERANGE`) and is in the file's range (else `EINVAL`).
    fn store(sb: SuperBlock<'_>, attr: SbAttr, input: &CStr) -> Result {
        let input = sysfs::skip_spaces(input);
        match attr {
            SbAttr::SyncDecompress => {
                let t = sysfs::kstrtouint(input, 0)?;
                if t > SYNC_DECOMPRESS_FORCE_OFF {
                    return Err(EINVAL);
                }
                sb.state().sync_decompress().store(t, Ordering::Relaxed);
            }
            SbAttr::DirRaBytes => {
                let t = sysfs::kstrtouint(input, 0)?;
                sb.state().dir_ra_bytes.store(t, Ordering::Relaxed);
            }
            SbAttr::DecompSplit => {
                let split = Split::from_raw(sysfs::kstrtouint(input, 0)?).ok_or(EINVAL)?;
                sb.state().opts.update(|o| SbOpts { split, ..o });
            }
            SbAttr::DropCaches => {
                // C's `attr_drop_caches`: an `unsigned long`, so that a large number is
                // `EINVAL` (not in 1..=3), not `ERANGE`.
                let t = sysfs::kstrtoul(input, 0)?;
                if !(1..=3).contains(&t) {
                    return Err(EINVAL);
                }
                if t & 1 != 0 {
                    drop_caches(sb);
                }
            }
        }
        Ok(())
    }

    type ModuleAttr = ModuleAttr;

    const MODULE_ATTRS: &'static [Attr<ModuleAttr>] =
        &[Attr::new(ModuleAttr::Accel, c"accel", 0o644)];

    /// The name and a newline, or nothing if none is set.
    fn show_module(attr: ModuleAttr, out: &mut ShowBuf<'_>) -> Result {
        match attr {
            ModuleAttr::Accel => {
                if let Some(name) = Accel::global_default() {
                    let n = name.iter().position(|&b| b == 0).unwrap_or(name.len());
                    out.push(name.get(..n).unwrap_or(&[]));
                    out.push(b"\n");
                }
            }
        }
        Ok(())
    }

    /// Sets the name, up to the first newline (C's `strcspn(buf, "\n")`); `EINVAL` if it is too
    /// long.
    fn store_module(attr: ModuleAttr, input: &CStr) -> Result {
        match attr {
            ModuleAttr::Accel => {
                let b = input.to_bytes();
                let n = b.iter().position(|&c| c == b'\n').unwrap_or(b.len());
                Accel::set_global_default(b.get(..n).unwrap_or(&[]))
            }
        }
    }

    /// The on-disk features erofs_rs reads, as fs/erofs/sysfs.c's `erofs_feat_attrs`.
    const FEATURES: &'static [&'static CStr] = &[
        c"compr_cfgs",
        c"big_pcluster",
        c"chunked_file",
        c"device_table",
        c"compr_head2",
        c"sb_chksum",
        c"ztailpacking",
        c"fragments",
        c"dedupe",
        c"xattr_prefixes",
        c"48bit",
        c"metabox",
    ];
}
