// SPDX-License-Identifier: GPL-2.0-only
//! CPU counts that 7.3's `kernel::cpu` lacks. C counterpart: include/linux/cpumask.h.

use kernel::bindings;

/// The number of possible CPUs (`num_possible_cpus()`).
pub(crate) fn num_possible_cpus() -> u32 {
    // SAFETY: `__num_possible_cpus` is set while the possible mask is built at boot, before
    // any module loads, and is only read afterwards.
    unsafe { bindings::__num_possible_cpus }
}

/// Whether CPU `cpu` is online (`cpu_online()`): a snapshot, which hotplug may change at once.
pub(crate) fn cpu_online(cpu: u32) -> bool {
    // SAFETY: `nr_cpu_ids` is set before modules load and never changes after.
    if cpu >= unsafe { bindings::nr_cpu_ids } {
        return false;
    }
    let bits = core::mem::size_of::<core::ffi::c_ulong>() as u32 * 8;
    // SAFETY: `__cpu_online_mask` is a static of the kernel holding at least `nr_cpu_ids`
    // bits; hotplug changes its words with atomic bit operations, so it is read atomically.
    let word = unsafe {
        let w = core::ptr::addr_of_mut!(bindings::__cpu_online_mask.bits)
            .cast::<core::ffi::c_ulong>()
            .add((cpu / bits) as usize);
        core::sync::atomic::AtomicUsize::from_ptr(w.cast())
            .load(core::sync::atomic::Ordering::Relaxed)
    };
    word & (1 << (cpu % bits)) != 0
}

/// The number of online CPUs (`num_online_cpus()`): a snapshot.
pub(crate) fn num_online_cpus() -> u32 {
    // SAFETY: `__num_online_cpus` is an `atomic_t` of the kernel, written by hotplug with
    // atomic operations.
    let n = unsafe {
        core::sync::atomic::AtomicI32::from_ptr(core::ptr::addr_of_mut!(
            bindings::__num_online_cpus.counter
        ))
        .load(core::sync::atomic::Ordering::Relaxed)
    };
    u32::try_from(n).unwrap_or(1)
}

/// The first online CPU after `cpu`, wrapping around, other than `except`, for which `ok`
/// holds (`cpumask_next_wrap` over the online mask); `None` if there is none.
pub(crate) fn next_online(cpu: u32, except: u32, ok: impl Fn(u32) -> bool) -> Option<u32> {
    // SAFETY: as in `cpu_online`.
    let n = unsafe { bindings::nr_cpu_ids };
    (1..=n)
        .map(|k| (cpu % n.max(1) + k) % n.max(1))
        .find(|&c| c != except && cpu_online(c) && ok(c))
}

/// How many CPUs are online, other than `except`, for which `ok` holds: a snapshot.
pub(crate) fn count_online(except: u32, ok: impl Fn(u32) -> bool) -> u32 {
    // SAFETY: as in `cpu_online`.
    let n = unsafe { bindings::nr_cpu_ids };
    let found = (0..n)
        .filter(|&c| c != except && cpu_online(c) && ok(c))
        .count();
    u32::try_from(found).unwrap_or(u32::MAX)
}

/// The CPU running this code (`raw_smp_processor_id()`): a hint, as the task may move at once.
pub(crate) fn this_cpu() -> u32 {
    // SAFETY: no preconditions.
    unsafe { bindings::raw_smp_processor_id() }
}
