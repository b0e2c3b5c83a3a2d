// SPDX-License-Identifier: GPL-2.0-only
//! Kthread workers (`include/linux/kthread.h`): a kernel thread bound to one CPU that runs
//! queued [`KthreadWork`] items in order, as `zdata.c`'s `z_erofs_pcpu_workers` use them.

use core::{
    marker::PhantomData,
    ptr::NonNull, //
};
use kernel::{
    bindings,
    error::from_err_ptr,
    prelude::*,
    str::CString,
    types::Opaque, //
};

/// A kthread worker bound to one CPU, owned: dropping it flushes the work queued on it, stops
/// its thread and frees it (`kthread_destroy_worker`).
///
/// # Invariants
///
/// `ptr` is a live worker made by `kthread_create_worker_on_cpu`, whose thread was woken, and
/// this value is the one that destroys it.
pub(crate) struct KthreadWorker {
    ptr: NonNull<bindings::kthread_worker>,
}

// SAFETY: a kthread worker is a kernel object that any thread may queue work on
// (`kthread_queue_work` takes the worker's lock) or destroy.
unsafe impl Send for KthreadWorker {}
// SAFETY: as above; `&KthreadWorker` only queues work.
unsafe impl Sync for KthreadWorker {}

impl KthreadWorker {
    /// Starts a worker bound to `cpu`, named `<name>/<cpu>` (the C driver's are
    /// `erofs_worker/<cpu>`), and makes it SCHED_FIFO at the lowest real-time priority
    /// (`sched_set_fifo_low`), as `erofs_init_percpu_worker` does. `EINVAL` unless `cpu` is a
    /// possible CPU.
    pub(crate) fn run_on_cpu(cpu: u32, name: &CStr) -> Result<Self> {
        // `kthread_create_worker_on_cpu` indexes per-CPU data and masks by `cpu` unchecked.
        let id = kernel::cpu::CpuId::from_u32(cpu).ok_or(EINVAL)?;
        // SAFETY: `__cpu_possible_mask` is the kernel's static mask, set up at boot and only
        // read afterwards.
        let possible =
            unsafe { kernel::cpumask::Cpumask::from_raw(&raw const bindings::__cpu_possible_mask) };
        if !possible.test(id) {
            return Err(EINVAL);
        }
        let cpu = i32::try_from(cpu).map_err(|_| EINVAL)?;
        // The callee's format: "name.*%u", the CPU filled in; a name has no `%` of its own.
        if name.to_bytes().contains(&b'%') {
            return Err(EINVAL);
        }
        let namefmt = CString::try_from_fmt(fmt!("{}/%u", name.to_str()?))?;
        // SAFETY: `cpu` is a possible CPU (checked above); the format, NUL-terminated, holds
        // exactly one conversion, the `%u` the callee fills with `cpu`, and is copied into the
        // thread's name.
        let w = unsafe { bindings::kthread_create_worker_on_cpu(cpu, 0, namefmt.as_char_ptr()) };
        let w = NonNull::new(from_err_ptr(w)?).ok_or(ENOMEM)?;
        // SAFETY: a fresh worker: its `task` is its stopped thread, which we wake and tune once
        // (`kthread_run_worker_on_cpu`, then `erofs_init_percpu_worker`).
        unsafe {
            let task = (*w.as_ptr()).task;
            bindings::wake_up_process(task);
            bindings::sched_set_fifo_low(task);
        }
        // INVARIANT: a live, woken worker that only this value destroys.
        Ok(KthreadWorker { ptr: w })
    }

    /// Gives up ownership: the worker lives on until [`KthreadWorker::from_raw`] takes it
    /// back. Meanwhile work may be queued on it with `kthread_queue_work`.
    pub(crate) fn into_raw(self) -> *mut bindings::kthread_worker {
        let p = self.ptr.as_ptr();
        core::mem::forget(self);
        p
    }

    /// Takes back a worker given up by [`KthreadWorker::into_raw`].
    ///
    /// # Safety
    ///
    /// `ptr` came from `into_raw` and is taken back once.
    pub(crate) unsafe fn from_raw(ptr: *mut bindings::kthread_worker) -> Self {
        // INVARIANT: by the contract, a live worker whose ownership returns here.
        KthreadWorker {
            // SAFETY: `into_raw` gave out a `NonNull`'s pointer.
            ptr: unsafe { NonNull::new_unchecked(ptr) },
        }
    }
}

impl Drop for KthreadWorker {
    fn drop(&mut self) {
        // SAFETY: we own the worker (type invariant); it is destroyed once, here, after the
        // work queued on it ran.
        unsafe { bindings::kthread_destroy_worker(self.ptr.as_ptr()) };
    }
}

/// A `struct kthread_work`, initialised with its function (`kthread_init_work`).
///
/// # Invariants
///
/// The inner work is initialised: zeroed, its list node empty, and `func` set.
#[repr(transparent)]
pub(crate) struct KthreadWork {
    inner: Opaque<bindings::kthread_work>,
    _pin: PhantomData<core::marker::PhantomPinned>,
}

// SAFETY: the work is handed between threads by design; the worker runs it under its lock.
unsafe impl Send for KthreadWork {}
// SAFETY: `&KthreadWork` only gives the raw pointer, used under the worker's lock.
unsafe impl Sync for KthreadWork {}

impl KthreadWork {
    /// A work item running `func` with a pointer to its `struct kthread_work`.
    pub(crate) fn new(
        func: unsafe extern "C" fn(*mut bindings::kthread_work),
    ) -> impl PinInit<Self> {
        // SAFETY: the closure initialises the whole slot, as `kthread_init_work` does, and
        // never fails.
        unsafe {
            pin_init::pin_init_from_closure(move |slot: *mut Self| {
                let w = Opaque::cast_into(core::ptr::addr_of!((*slot).inner));
                // SAFETY: `slot` is valid for writes; all-zero is the base `kthread_init_work`
                // starts from, then the node points to itself and `func` is set.
                w.write_bytes(0, 1);
                bindings::INIT_LIST_HEAD(core::ptr::addr_of_mut!((*w).node));
                (*w).func = Some(func);
                Ok(())
            })
        }
    }

    /// The raw work.
    pub(crate) fn raw(&self) -> *mut bindings::kthread_work {
        self.inner.get()
    }
}
