// SPDX-License-Identifier: MIT OR GPL-2.0-only
//! The Cargo root of the EROFS format core; the kernel module mounts the same files itself.
#![no_std]

#[cfg(test)]
extern crate std;

pub mod erofs_core;
pub use erofs_core::*;
