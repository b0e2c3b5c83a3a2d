// SPDX-License-Identifier: GPL-2.0-only
//! Module parameters that sysfs shows and the module may update, which the `module!` macro's
//! `params:` cannot express. C counterpart: `module_param()` and `MODULE_PARM_DESC()` of
//! include/linux/moduleparam.h.
//!
//! 7.3's `module!` parameters (rust/kernel/module_param.rs) are set once at load and never
//! appear in sysfs (`perm: 0`, no `get` operation), and their value cannot change after load.
//! The decoder-pool sizes (`lzma_streams`...) are read-only in sysfs but show the number in use
//! once the module has chosen it, so they are declared here instead, with the kernel's own
//! `param_ops_uint`: `/sys/module/erofs_rs/parameters/*` and `modinfo` read as they did when
//! they were declared in C.

use core::sync::atomic::{
    AtomicU32,
    Ordering, //
};
use kernel::{
    bindings,
    ModuleMetadata, //
};

/// The value of a `uint` module parameter (`module_param(name, uint, perm)`).
///
/// The kernel's `param_ops_uint` reads and writes it as a plain `unsigned int` through the
/// parameter's `arg` pointer: at module load (before `init`, nothing else runs yet) and from
/// sysfs under the module's parameter lock (`kernel_param_lock`); [`UintParam::set`] takes the
/// same lock, so no read of the kernel races with a write of ours.
///
/// # Invariants
///
/// Only the kernel's parameter code (under the rules above) and this type's methods access the
/// value.
#[repr(transparent)]
pub(crate) struct UintParam(AtomicU32);

// The kernel accesses it as an `unsigned int`.
const _: () = assert!(core::mem::size_of::<UintParam>() == core::mem::size_of::<u32>());

impl UintParam {
    /// A parameter whose value is `v` until the module is loaded with another one.
    pub(crate) const fn new(v: u32) -> Self {
        // INVARIANT: nothing has access to the value yet.
        UintParam(AtomicU32::new(v))
    }

    /// The current value.
    pub(crate) fn get(&self) -> u32 {
        // ORDERING: the value is a plain number that guards no other memory; the load-time
        // write happens before module init, and later ones come from `set`.
        self.0.load(Ordering::Relaxed)
    }

    /// Sets the value that sysfs shows from now on.
    pub(crate) fn set(&self, v: u32) {
        let module = <crate::LocalModule as ModuleMetadata>::THIS_MODULE.as_ptr();
        // SAFETY: `module` is this module, which is live while its code runs; the lock is
        // released below.
        unsafe { bindings::kernel_param_lock(module) };
        // ORDERING: as in `get`; sysfs reads hold the lock taken above.
        self.0.store(v, Ordering::Relaxed);
        // SAFETY: taken above.
        unsafe { bindings::kernel_param_unlock(module) };
    }

    /// The `arg` of the parameter's `kernel_param`.
    #[doc(hidden)]
    pub(crate) const fn as_arg(&'static self) -> *mut kernel::ffi::c_void {
        self.0.as_ptr().cast()
    }
}

/// Copies `s` into a NUL-terminated `.modinfo` string of `N` bytes (`s.len() + 1`).
#[doc(hidden)]
pub(crate) const fn modinfo<const N: usize>(s: &str) -> [u8; N] {
    let b = s.as_bytes();
    let mut out = [0u8; N];
    let mut i = 0;
    // PANIC: a bad `N` is a compile-time error, as this only runs in constant evaluation.
    while i < b.len() {
        out[i] = b[i];
        i += 1;
    }
    out
}

/// Declares a `uint` module parameter `$name` with permissions `$perm` and description
/// `$desc`: a `static $name: UintParam` with its `kernel_param` (section `__param`) and its
/// `parmtype=` and `parm=` `.modinfo` lines, as C's
/// `module_param($name, uint, $perm); MODULE_PARM_DESC($name, $desc);` makes. For a loadable
/// module only (`MODULE`), which this is.
///
/// The invoking file may deny `unsafe_code` (driver files do): the only unsafe parts, the
/// `#[link_section]` statics, are written here, and the macro's caller chooses none of their
/// contents but a name, the permissions and a description.
macro_rules! module_param_uint {
    ($(#[$meta:meta])* $name:ident, $perm:expr, $desc:literal) => {
        $(#[$meta])*
        #[expect(
            non_upper_case_globals,
            reason = "a parameter's static is named as its sysfs file, in lower case as in C"
        )]
        pub(crate) static $name: $crate::vfs::param::UintParam =
            $crate::vfs::param::UintParam::new(0);

        // The kernel finds a module's parameters in its `__param` section, an array of
        // `kernel_param` (this one's is built below, for a `uint` at `$name`), and their
        // descriptions in `.modinfo`, as NUL-terminated `key=value` strings.
        #[expect(
            unsafe_code,
            reason = "sections the module loader reads; their contents are built here"
        )]
        const _: () = {
            #[link_section = "__param"]
            #[used(compiler)]
            static PARAM: ::kernel::module_param::KernelParam =
                ::kernel::module_param::KernelParam::new(::kernel::bindings::kernel_param {
                    name: ::kernel::str::as_char_ptr_in_const_context(::kernel::c_str!(
                        ::core::stringify!($name)
                    )),
                    mod_: <$crate::LocalModule as ::kernel::ModuleMetadata>::THIS_MODULE.as_ptr(),
                    ops: &raw const ::kernel::bindings::param_ops_uint,
                    perm: $perm,
                    level: -1,
                    flags: 0,
                    __bindgen_anon_1: ::kernel::bindings::kernel_param__bindgen_ty_1 {
                        arg: $name.as_arg(),
                    },
                });

            const PARMTYPE: &str = ::core::concat!("parmtype=", ::core::stringify!($name), ":uint");
            #[link_section = ".modinfo"]
            #[used(compiler)]
            static MODINFO_PARMTYPE: [u8; PARMTYPE.len() + 1] =
                $crate::vfs::param::modinfo(PARMTYPE);

            const PARM: &str = ::core::concat!("parm=", ::core::stringify!($name), ":", $desc);
            #[link_section = ".modinfo"]
            #[used(compiler)]
            static MODINFO_PARM: [u8; PARM.len() + 1] = $crate::vfs::param::modinfo(PARM);
        };
    };
}
pub(crate) use module_param_uint;
