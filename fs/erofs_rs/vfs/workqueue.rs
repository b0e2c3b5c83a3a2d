// SPDX-License-Identifier: GPL-2.0-only
//! A workqueue of the module's own (`alloc_workqueue`), to use through
//! [`kernel::workqueue::Queue`], which only covers the system's queues.

use core::ptr::NonNull;
use kernel::{
    bindings,
    prelude::*,
    workqueue::{
        Queue,
        RawWorkItem, //
    },
};

/// A workqueue this module allocated, destroyed on drop: `destroy_workqueue` drains it first,
/// so every item queued on it has run by then.
///
/// # Invariants
///
/// `ptr` is a live workqueue from `alloc_workqueue`, owned by this value.
pub(crate) struct OwnedQueue {
    ptr: NonNull<bindings::workqueue_struct>,
}

// SAFETY: a workqueue may be used and destroyed from any thread.
unsafe impl Send for OwnedQueue {}
// SAFETY: `&OwnedQueue` only queues work, which the workqueue serialises itself.
unsafe impl Sync for OwnedQueue {}

impl OwnedQueue {
    /// A bound (per-CPU) high-priority workqueue named `name`: an item runs on the CPU that
    /// queued it, ahead of normal work. (The C driver's `z_erofs_workqueue` is `WQ_UNBOUND |
    /// WQ_HIGHPRI`; erofs_rs keeps decompression on the completing CPU.)
    pub(crate) fn new_percpu_highpri(name: &CStr) -> Result<Self> {
        let flags = bindings::wq_flags_WQ_PERCPU | bindings::wq_flags_WQ_HIGHPRI;
        // SAFETY: the format "%s" takes the one string argument given, NUL-terminated.
        let wq = unsafe {
            bindings::alloc_workqueue_noprof(c"%s".as_char_ptr(), flags, 0, name.as_char_ptr())
        };
        // INVARIANT: a fresh workqueue, ours.
        Ok(OwnedQueue {
            ptr: NonNull::new(wq).ok_or(ENOMEM)?,
        })
    }
}

impl OwnedQueue {
    /// Queues `w` (as [`Queue::enqueue`]). Only immediate work: [`Queue`]'s delayed work
    /// would queue itself when its timer fires, maybe after the queue is destroyed, so an
    /// `OwnedQueue` does not lend itself as a `Queue`.
    pub(crate) fn enqueue<W, const ID: u64>(&self, w: W) -> W::EnqueueOutput
    where
        W: RawWorkItem<ID> + Send + 'static,
    {
        // SAFETY: the workqueue lives as long as `self` (type invariant); the `Queue` borrow
        // ends with this call, and `enqueue` queues now, so what it queued is drained by
        // `destroy_workqueue` on drop.
        unsafe { Queue::from_raw(self.ptr.as_ptr()) }.enqueue(w)
    }

    /// Queues `w` on CPU `cpu`'s pool of this per-CPU queue (`queue_work_on`). If that CPU goes
    /// offline meanwhile, the workqueue runs it on another one, unbound.
    pub(crate) fn enqueue_on<W, const ID: u64>(&self, cpu: u32, w: W) -> W::EnqueueOutput
    where
        W: RawWorkItem<ID> + Send + 'static,
    {
        let queue = self.ptr.as_ptr();
        let cpu = core::ffi::c_int::try_from(cpu)
            .unwrap_or(bindings::wq_misc_consts_WORK_CPU_UNBOUND as core::ffi::c_int);
        // SAFETY: `queue_work_on` is given the work pointer `__enqueue` passes, valid until
        // the work runs, and the live workqueue (type invariant), which drains what it queued
        // before it is destroyed (as `enqueue`); a CPU number of the kernel's, or
        // `WORK_CPU_UNBOUND`.
        unsafe { w.__enqueue(move |work| bindings::queue_work_on(cpu, queue, work)) }
    }
}

impl Drop for OwnedQueue {
    fn drop(&mut self) {
        // SAFETY: ours (type invariant), destroyed once. Nothing queues on it any more: the
        // `&self` borrows that could are gone, and only immediate work was queued
        // (`enqueue`), which `destroy_workqueue` drains, work that requeues itself included.
        unsafe { bindings::destroy_workqueue(self.ptr.as_ptr()) };
    }
}
