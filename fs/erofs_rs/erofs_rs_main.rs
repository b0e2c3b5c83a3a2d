// SPDX-License-Identifier: GPL-2.0-only
//! erofs_rs: an EROFS driver in Rust. The one crate root of the module: the `module!`
//! declaration and the list of driver files, which mirror fs/erofs/*.c by name.

use kernel::prelude::*;

#[path = "core/erofs_core/mod.rs"]
pub mod erofs_core;

mod data;
mod decompressor;
mod decompressor_crypto;
mod dir;
mod inode;
mod ishare;
mod namei;
#[path = "super.rs"]
mod super_;
mod sysfs;
mod vfs;
mod xattr;
mod zdata;

module! {
    type: ErofsRs,
    name: "erofs_rs",
    authors: ["erofs_rs developers"],
    description: "Enhanced Read-Only File System, in Rust",
    license: "GPL",
}

/// The module: it registers the filesystem type on load and unregisters it on unload.
struct ErofsRs {
    _reg: vfs::Registration,
    /// The stream decoders' contexts: dropped after `_reg` has unregistered the filesystem
    /// type, so after every mount that used them.
    _zpools: decompressor::ZPools,
    /// The default offload driver (`/sys/fs/erofs_rs/accel`): made before `_reg` creates the
    /// file, which can set it.
    _accel_default: decompressor_crypto::AccelDefault,
}

impl kernel::Module for ErofsRs {
    fn init(_module: &'static ThisModule) -> Result<Self> {
        let zpools = decompressor::ZPools::new()?;
        // Before `/sys/fs/<fstype>/` exists: its `accel` file sets the default driver.
        let accel_default = decompressor_crypto::AccelDefault::new()?;
        Ok(ErofsRs {
            _reg: vfs::register(&super_::FS_TYPE)?,
            _zpools: zpools,
            _accel_default: accel_default,
        })
    }
}
