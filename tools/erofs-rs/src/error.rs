// SPDX-License-Identifier: GPL-2.0-only
//! The tool's error: a message that names the nid when an inode is involved, in the C
//! driver's wording for the core's checks ("bogus dirent @ nid 36").

use std::fmt;

/// An error, ready to print.
#[derive(Debug, Clone)]
pub struct Error {
    /// The inode it concerns, if any.
    pub nid: Option<u64>,
    msg: String,
}

/// The tool's result type.
pub type Result<T> = std::result::Result<T, Error>;

impl Error {
    /// An error without an inode.
    pub fn msg(msg: impl Into<String>) -> Self {
        Error {
            nid: None,
            msg: msg.into(),
        }
    }

    /// An error of inode `nid`.
    pub fn nid(nid: u64, msg: impl Into<String>) -> Self {
        Error {
            nid: Some(nid),
            msg: msg.into(),
        }
    }

    /// A core error, of inode `nid` if known (the core's own nid wins when it has one).
    pub fn core(nid: Option<u64>, e: erofs_core::Error) -> Self {
        let (own, msg) = describe(&e);
        Error {
            nid: own.or(nid),
            msg,
        }
    }

    /// The same error with what was being done in front.
    pub fn context(mut self, what: impl fmt::Display) -> Self {
        self.msg = format!("{what}: {}", self.msg);
        self
    }
}

impl fmt::Display for Error {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self.nid {
            Some(nid) => write!(f, "{} @ nid {nid}", self.msg),
            None => write!(f, "{}", self.msg),
        }
    }
}

/// The core error's nid (if it has one) and its message.
fn describe(e: &erofs_core::Error) -> (Option<u64>, String) {
    use erofs_core::Error as E;
    match e {
        E::Corrupted(c) => match c {
            erofs_core::Corruption::SuperblockChecksum { computed, expected } => (
                None,
                format!("invalid checksum 0x{computed:08x}, 0x{expected:08x} expected"),
            ),
            _ => (c.nid(), c.reason().to_string()),
        },
        E::Unsupported(u) => (None, format!("unsupported: {u:?}")),
        E::NotErofs => (None, "cannot find valid erofs superblock".into()),
        E::BadGeometry => (None, "device too small for its superblock".into()),
        E::Io(code) => (None, std::io::Error::from_raw_os_error(*code).to_string()),
        E::StreamLayout => (None, "decoder error".into()),
        E::NoMemory => (None, "out of memory".into()),
    }
}
