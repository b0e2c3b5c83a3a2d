// SPDX-License-Identifier: GPL-2.0-only
//! CPU counts that 7.3's `kernel::cpu` lacks. C counterpart: include/linux/cpumask.h.

use kernel::bindings;

/// The number of possible CPUs (`num_possible_cpus()`).
pub(crate) fn num_possible_cpus() -> u32 {
    // SAFETY: `__num_possible_cpus` is set while the possible mask is built at boot, before
    // any module loads, and is only read afterwards.
    unsafe { bindings::__num_possible_cpus }
}
