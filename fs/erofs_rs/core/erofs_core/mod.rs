// SPDX-License-Identifier: MIT OR GPL-2.0-only
//! The EROFS format core: pure functions over bytes, shared by the kernel module and Cargo.
//!
//! It has no `unsafe`, no allocation, no logging and no I/O of its own: metadata comes through
//! [`MetaRead`], which the caller implements over its page cache or a file, and the bytes a
//! stream decoder copies aside go to a [`stream::Spill`] buffer of the caller's.
#![forbid(unsafe_code)]

pub mod buf;
pub mod decompress;
pub mod dirent;
pub mod error;
pub mod inode;
pub mod map;
pub mod ondisk;
pub mod sb;
pub mod stream;
pub mod xattr;
pub mod zmap;

pub use error::{
    Corruption,
    Errno,
    Error,
    Result,
    Unsupported, //
};

/// A source of metadata bytes: the primary device, addressed in bytes.
pub trait MetaRead {
    /// Copies `buf.len()` bytes at byte position `pos` of the device into `buf`.
    ///
    /// # Errors
    ///
    /// [`Error::Io`] when the backend fails, or when `pos..pos + buf.len()` is not on the device.
    fn read_meta(&self, pos: u64, buf: &mut [u8]) -> Result<()>;
}

/// An inode number as the image stores it: the inode's 32-byte slot past `meta_blkaddr`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord)]
pub struct Nid(pub u64);
