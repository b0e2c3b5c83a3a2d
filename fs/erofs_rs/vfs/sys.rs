// SPDX-License-Identifier: GPL-2.0-only
//! The module's own bindings (`vfs::sys`): generated at build time by bindgen from `vfs/bindings_helper.h`
//! (see `Kbuild` and `vfs/bindgen_parameters`), for `glue.h` and for the kernel headers that
//! 7.3's `kernel::bindings` does not cover. Types they mention but do not define come from
//! `kernel::bindings`, so both agree on them. Only `vfs/` uses this module.

#![allow(
    dead_code,
    missing_docs,
    improper_ctypes,
    non_camel_case_types,
    non_snake_case,
    non_upper_case_globals,
    unreachable_pub,
    unsafe_op_in_unsafe_fn,
    unnecessary_transmutes,
    clippy::all,
    clippy::pedantic,
    clippy::undocumented_unsafe_blocks
)]
#![cfg_attr(not(CONFIG_RUSTC_HAS_UNNECESSARY_TRANSMUTES), allow(unknown_lints))]

use kernel::bindings::*;
// What `--with-derive-custom-struct` adds (`bindgen_parameters`), as in kernel::bindings.
use pin_init::MaybeZeroable;

include!("bindings_generated.rs");
