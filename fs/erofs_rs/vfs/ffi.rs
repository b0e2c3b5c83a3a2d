// SPDX-License-Identifier: GPL-2.0-only
//! The C side of the boundary (`glue.h`), as bindgen generates it at build time
//! (`vfs/sys.rs`), under the names `vfs/` uses. Only `vfs/` calls these.

pub(crate) use super::sys::*;
