// SPDX-License-Identifier: GPL-2.0-only
//! CPU hotplug states (`include/linux/cpuhotplug.h`): callbacks the kernel runs for each CPU
//! that comes online or goes offline, as `zdata.c` keeps its per-CPU workers with them.

use core::marker::PhantomData;
use kernel::{
    bindings,
    ffi::{
        c_int,
        c_uint, //
    },
    prelude::*, //
};

/// What a hotplug state does for one CPU. Both run in the CPU hotplug thread, may sleep, and
/// are serialised with each other and with [`CpuhpState::setup`] and its drop.
pub(crate) trait Hotplug {
    /// `cpu` is online (or was, when the state was set up); an error stops it coming up.
    fn online(cpu: u32) -> Result;
    /// `cpu` is going down (or the state is being removed while it is online).
    fn offline(cpu: u32);
}

/// A dynamic state in the online section (`CPUHP_AP_ONLINE_DYN`), removed on drop.
///
/// # Invariants
///
/// `state` is the number `cpuhp_setup_state` returned for `H`'s callbacks, not yet removed.
pub(crate) struct CpuhpState<H: Hotplug> {
    state: c_int,
    _h: PhantomData<H>,
}

impl<H: Hotplug> CpuhpState<H> {
    /// Sets the state up under `name` (as shown in /sys/devices/system/cpu/hotplug/states):
    /// runs `H::online` on every online CPU now, and later on each one that comes up. If one
    /// fails, the CPUs done so far are taken down again and the error is returned.
    pub(crate) fn setup(name: &'static CStr) -> Result<Self> {
        // SAFETY: `name` lives forever, as the state keeps it; the callbacks are functions of
        // the right type, in the module's text, which stays while the state exists: it is
        // removed on drop, which its owner (the runtime, dropped at module unload) does before
        // the module goes. (A forgotten state would outlive the text, as any leaked
        // registration of a module does.)
        let ret = unsafe {
            bindings::__cpuhp_setup_state(
                bindings::cpuhp_state_CPUHP_AP_ONLINE_DYN,
                name.as_char_ptr(),
                true,
                Some(online::<H>),
                Some(offline::<H>),
                false,
            )
        };
        if ret < 0 {
            return Err(Error::from_errno(ret));
        }
        // INVARIANT: a dynamic state returns its number, which we own.
        Ok(CpuhpState {
            state: ret,
            _h: PhantomData,
        })
    }
}

impl<H: Hotplug> Drop for CpuhpState<H> {
    fn drop(&mut self) {
        // CAST: dynamic state numbers are small non-negative `enum cpuhp_state` values.
        // SAFETY: our state (type invariant), removed once; this runs `H::offline` on every
        // online CPU.
        unsafe { bindings::__cpuhp_remove_state(self.state as bindings::cpuhp_state, true) };
    }
}

/// # Safety
///
/// Called by the CPU hotplug core for a state set up by [`CpuhpState::setup`].
unsafe extern "C" fn online<H: Hotplug>(cpu: c_uint) -> c_int {
    match H::online(cpu) {
        Ok(()) => 0,
        Err(e) => e.to_errno(),
    }
}

/// # Safety
///
/// As for [`online`].
unsafe extern "C" fn offline<H: Hotplug>(cpu: c_uint) -> c_int {
    H::offline(cpu);
    0
}
