// SPDX-License-Identifier: GPL-2.0-only
//! Where queued work runs: the module's bound high-priority workqueue, and per-CPU SCHED_FIFO
//! kthread workers that mounts may claim ([`PcpuClaim`]), kept one per online CPU across CPU
//! hotplug while any mount uses them (C: `z_erofs_pcpu_workers` and its cpuhp state in
//! fs/erofs/zdata.c), and the module's debugfs directory.

use super::queue::{
    QueueState, //
    ZWork,
};
use super::{
    cpuhp::{
        CpuhpState,
        Hotplug, //
    },
    fs::FileSystem,
    kthread::KthreadWorker,
    workqueue::OwnedQueue,
    New,
    SuperBlock, //
};
use core::sync::atomic::{
    AtomicBool,
    AtomicI64,
    AtomicPtr,
    AtomicU32,
    Ordering, //
};
use kernel::{
    bindings,
    debugfs::Dir,
    new_mutex,
    prelude::*,
    str::CString,
    sync::{
        rcu,
        Mutex, //
    },
};

/// The per-CPU kthread workers (`z_erofs_pcpu_workers`), shared by the mounts with
/// `decomp_pcpu_kthreads`: they start with the first such mount and stop with the last.
#[pin_data]
pub(super) struct Pcpu {
    /// Mounts using the workers, and the hotplug state that keeps one per online CPU.
    #[pin]
    users: Mutex<(u32, Option<CpuhpState<PcpuHotplug>>)>,
    /// The worker of each CPU, or null: written under the hotplug callbacks' serialisation
    /// (and `users`), read under RCU; a worker is destroyed only after a grace period that
    /// follows clearing its slot.
    slots: KVec<AtomicPtr<bindings::kthread_worker>>,
}

impl Pcpu {
    fn new() -> Result<impl PinInit<Self, Error>> {
        // SAFETY: `nr_cpu_ids` is set before modules load and never changes after.
        let n = unsafe { bindings::nr_cpu_ids } as usize;
        let mut slots = KVec::with_capacity(n, GFP_KERNEL)?;
        for _ in 0..n {
            slots.push(AtomicPtr::new(core::ptr::null_mut()), GFP_KERNEL)?;
        }
        Ok(try_pin_init!(Pcpu {
            users <- new_mutex!((0, None), "erofs_rs_pcpu_users"),
            slots,
        }? Error))
    }

    /// Takes a user; the first starts the workers.
    fn get(&self) -> Result {
        let mut g = self.users.lock();
        if g.0 == 0 {
            g.1 = Some(CpuhpState::setup(c"fs/erofs_rs:online")?);
            pr_info!("per-CPU decompression workers started\n");
        }
        g.0 += 1;
        Ok(())
    }

    /// Drops a user; the last stops the workers (each finishes what it has queued first).
    fn put(&self) {
        let mut g = self.users.lock();
        if g.0 == 0 {
            return;
        }
        g.0 -= 1;
        if g.0 == 0 {
            // Runs `PcpuHotplug::offline` on every online CPU.
            g.1 = None;
            pr_info!("per-CPU decompression workers stopped\n");
        }
    }

    /// Queues `work` on CPU `cpu`'s worker; `false` if there is none (the CPU is offline, or
    /// going).
    ///
    /// # Safety
    ///
    /// `work` is initialised and stays valid until its function has run (which owns it
    /// then), and is not queued anywhere.
    pub(super) unsafe fn queue_kwork_on(
        &self,
        cpu: u32,
        work: *mut bindings::kthread_work,
    ) -> bool {
        let _rcu = rcu::read_lock();
        let w = self
            .slots
            .get(cpu as usize)
            .map_or(core::ptr::null_mut(), |s| s.load(Ordering::Acquire));
        if w.is_null() {
            return false;
        }
        // SAFETY: the worker is live: it is destroyed only a grace period after its slot is
        // cleared, and we read the slot under RCU; `work` as the contract says.
        unsafe { bindings::kthread_queue_work(w, work) };
        true
    }

    /// Queues `q` on the current CPU's worker, or gives it back if there is none.
    pub(super) fn queue<W: ZWork>(
        &self,
        q: Pin<KBox<QueueState<W>>>,
    ) -> core::result::Result<(), Pin<KBox<QueueState<W>>>> {
        // SAFETY: the box stays pinned: it is only taken back with `Pin::new_unchecked` below
        // or by `queue_kwork` (`QueueState::from_raw`).
        let raw = KBox::into_raw(unsafe { Pin::into_inner_unchecked(q) });
        // SAFETY: the queue's box is leaked to the work, which `queue_kwork` takes back once;
        // the box keeps the work valid until then, and it is queued nowhere else.
        if unsafe { self.queue_kwork_on(super::cpu::this_cpu(), (*raw).kwork.raw()) } {
            return Ok(());
        }
        // SAFETY: not queued: the box leaked above is still ours, taken back once.
        Err(unsafe { Pin::new_unchecked(KBox::from_raw(raw)) })
    }
}

/// The hotplug callbacks of the per-CPU workers (`erofs_cpu_online`, `erofs_cpu_offline`).
struct PcpuHotplug;

impl Hotplug for PcpuHotplug {
    fn online(cpu: u32) -> Result {
        let rt = runtime_for_hotplug().ok_or(ENODEV)?;
        let slot = rt.pcpu.slots.get(cpu as usize).ok_or(EINVAL)?;
        let w = KthreadWorker::run_on_cpu(cpu, &rt.worker_name)?;
        let raw = w.into_raw();
        if slot
            .compare_exchange(
                core::ptr::null_mut(),
                raw,
                Ordering::AcqRel,
                Ordering::Acquire,
            )
            .is_err()
        {
            // SAFETY: not published: still only ours.
            drop(unsafe { KthreadWorker::from_raw(raw) });
        }
        Ok(())
    }

    fn offline(cpu: u32) {
        let Some(rt) = runtime_for_hotplug() else {
            return;
        };
        let Some(slot) = rt.pcpu.slots.get(cpu as usize) else {
            return;
        };
        let w = slot.swap(core::ptr::null_mut(), Ordering::AcqRel);
        // No new work reaches it after a grace period; what it has queued runs before it goes.
        rcu::synchronize_rcu();
        if !w.is_null() {
            // SAFETY: the slot held the worker's ownership, which the swap took.
            drop(unsafe { KthreadWorker::from_raw(w) });
        }
    }
}

/// A superblock's claim on the per-CPU kthread workers (`decomp_pcpu_kthreads`); dropping it
/// gives it up.
///
/// # Invariants
///
/// While `held` is true, this value holds one user of `rt`'s workers.
pub(crate) struct PcpuClaim {
    rt: &'static Runtime,
    held: AtomicBool,
}

impl PcpuClaim {
    /// No claim yet, for superblock `sb` being filled.
    pub(crate) fn new<T: FileSystem>(sb: &SuperBlock<'_, T, New>) -> Result<Self> {
        Ok(PcpuClaim {
            rt: runtime(sb)?,
            held: AtomicBool::new(false),
        })
    }

    /// Makes or gives up the claim.
    pub(crate) fn set(&self, on: bool) -> Result {
        // ORDERING: the flag only pairs gets with puts; the workers have their own lock.
        if on {
            if !self.held.swap(true, Ordering::AcqRel) {
                if let Err(e) = self.rt.pcpu.get() {
                    self.held.store(false, Ordering::Release);
                    return Err(e);
                }
            }
        } else if self.held.swap(false, Ordering::AcqRel) {
            self.rt.pcpu.put();
        }
        Ok(())
    }
}

impl Drop for PcpuClaim {
    fn drop(&mut self) {
        let _ = self.set(false);
    }
}

/// What compressed reads share module-wide: the workqueue, the per-CPU workers, and the
/// debugfs directory. Made by [`Runtime::start`] before the filesystem is registered, and gone
/// after it is unregistered.
#[pin_data]
pub(crate) struct Runtime {
    /// The name of the workqueue and (with the CPU) of the per-CPU workers: `<module>_worker`.
    worker_name: CString,
    pub(super) wq: OwnedQueue,
    debugfs: Dir,
    #[pin]
    pub(super) pcpu: Pcpu,
    /// Per CPU, until when (`ktime_get()` ns) no part of a split read goes there
    /// ([`Runtime::busy`]).
    busy_until: KVec<AtomicI64>,
    /// Per CPU, the parts of split reads queued or running there.
    parts: KVec<AtomicU32>,
    /// Per CPU, how many times in a row its worker was found slow: each doubles the time it is
    /// left out, up to 64 times [`BUSY_NS`].
    strikes: KVec<AtomicU32>,
}

/// The runtime while the module is loaded.
static RUNTIME: AtomicPtr<Runtime> = AtomicPtr::new(core::ptr::null_mut());

/// The runtime, for live superblock `sb`: a mounted filesystem pins the module, which owns the
/// runtime, so it outlives `sb`.
pub(super) fn runtime<T, S>(_sb: &SuperBlock<'_, T, S>) -> Result<&'static Runtime> {
    let rt = RUNTIME.load(Ordering::Acquire);
    // SAFETY: non-null while the module's `RuntimeHandle` lives, which outlasts every
    // superblock and, by draining, every queue they made.
    (!rt.is_null()).then(|| unsafe { &*rt }).ok_or(ENODEV)
}

/// The module's debugfs directory (`erofs_rs`), in which the filesystem of live superblock `sb`
/// makes its own (empty if debugfs is absent): it lives as long as the module's runtime, so
/// beyond `sb`.
pub(crate) fn debugfs_root<'a, T, S>(sb: &SuperBlock<'a, T, S>) -> Result<&'a Dir> {
    Ok(&runtime(sb)?.debugfs)
}

/// The runtime, in a hotplug callback of the per-CPU workers.
fn runtime_for_hotplug() -> Option<&'static Runtime> {
    let rt = RUNTIME.load(Ordering::Acquire);
    // SAFETY: the workers' hotplug state lives inside the runtime, which is published before it
    // is set up and unpublished only after it is removed (`RuntimeHandle::drop`).
    (!rt.is_null()).then(|| unsafe { &*rt })
}

/// The module's ownership of the [`Runtime`]: dropping it tears the runtime down.
pub(crate) struct RuntimeHandle {
    rt: Pin<KBox<Runtime>>,
}

/// How long a CPU whose worker was slow with a part is left out the first time
/// ([`Runtime::busy`]): each time in a row doubles it (a busy CPU is tried again with a part,
/// which may take a while).
const BUSY_NS: i64 = 5_000_000_000;

impl Runtime {
    /// A value per possible CPU id, each `new()`.
    fn per_cpu<T>(new: impl Fn() -> T) -> Result<KVec<T>> {
        // SAFETY: `nr_cpu_ids` is set before modules load and never changes after.
        let n = unsafe { bindings::nr_cpu_ids } as usize;
        let mut v = KVec::with_capacity(n, GFP_KERNEL)?;
        for _ in 0..n {
            v.push(new(), GFP_KERNEL)?;
        }
        Ok(v)
    }

    /// A part of a split read is queued on CPU `cpu`; returns how many were queued or running
    /// there already (a part late behind those of ours is not a sign of a busy CPU).
    pub(super) fn part_queued(&self, cpu: u32) -> u32 {
        self.parts
            .get(cpu as usize)
            .map_or(0, |n| n.fetch_add(1, Ordering::Relaxed))
    }

    /// A part queued on CPU `cpu` ([`Runtime::part_queued`]) has run.
    pub(super) fn part_done(&self, cpu: u32) {
        if let Some(n) = self.parts.get(cpu as usize) {
            let _ = n.fetch_update(Ordering::Relaxed, Ordering::Relaxed, |v| v.checked_sub(1));
        }
    }

    /// CPU `cpu`'s worker ran a part of a split read in time: it is left out no longer than
    /// [`BUSY_NS`] the next time it is slow.
    pub(super) fn prompt(&self, cpu: u32) {
        if let Some(k) = self.strikes.get(cpu as usize) {
            k.store(0, Ordering::Relaxed);
        }
    }

    /// CPU `cpu`'s worker was slow with a part of a split read (late to begin it, or to end
    /// it), at `now`: something else keeps that CPU busy (a real-time task above the workers,
    /// or many others), so no part goes there for [`BUSY_NS`].
    pub(super) fn busy(&self, cpu: u32, now: i64) {
        let k = self
            .strikes
            .get(cpu as usize)
            .map_or(0, |k| k.fetch_add(1, Ordering::Relaxed).min(6));
        if let Some(t) = self.busy_until.get(cpu as usize) {
            t.store(now.saturating_add(BUSY_NS << k), Ordering::Relaxed);
        }
    }

    /// Whether CPU `cpu` takes parts of split reads at `now` (see [`Runtime::busy`]).
    pub(super) fn takes_parts(&self, cpu: u32, now: i64) -> bool {
        self.busy_until
            .get(cpu as usize)
            .is_some_and(|t| t.load(Ordering::Relaxed) <= now)
    }

    /// Starts the runtime of module `name` and publishes it: its workqueue and workers are
    /// `<name>_worker` (`/<cpu>`), its debugfs directory `<name>`.
    pub(crate) fn start(name: &CStr) -> Result<RuntimeHandle> {
        let worker_name = CString::try_from_fmt(fmt!("{}_worker", name.to_str()?))?;
        let rt = KBox::pin_init(
            try_pin_init!(Runtime {
                // Bound and high priority: the completing CPU decompresses what it read.
                wq: OwnedQueue::new_percpu_highpri(&worker_name)?,
                worker_name,
                debugfs: Dir::new(name),
                pcpu <- Pcpu::new()?,
                busy_until: Self::per_cpu(|| AtomicI64::new(0))?,
                strikes: Self::per_cpu(|| AtomicU32::new(0))?,
                parts: Self::per_cpu(|| AtomicU32::new(0))?,
            }? Error),
            GFP_KERNEL,
        )?;
        RUNTIME.store(core::ptr::from_ref(&*rt).cast_mut(), Ordering::Release);
        Ok(RuntimeHandle { rt })
    }
}

impl Drop for RuntimeHandle {
    fn drop(&mut self) {
        // Every superblock is gone, so every claim on the workers too; should one be left (a
        // test that failed half-way), its hotplug state goes now, while the callbacks can
        // still find the runtime. Dropping the runtime then drains the workqueue.
        self.rt.pcpu.users.lock().1 = None;
        RUNTIME.store(core::ptr::null_mut(), Ordering::Release);
    }
}

#[kunit_tests(erofs_rs_pcpu)]
mod tests {
    use super::*;

    /// Online CPUs, and workers in the slots.
    fn counts(rt: &Runtime) -> (usize, usize) {
        // SAFETY: reads the kernel's count of online CPUs, an atomic.
        let online = unsafe { bindings::__num_online_cpus.counter } as usize;
        let workers = rt
            .pcpu
            .slots
            .iter()
            .filter(|s| !s.load(Ordering::Acquire).is_null())
            .count();
        (online, workers)
    }

    /// The per-CPU workers exist for each online CPU while a mount uses them, and stop with
    /// the last user.
    #[test]
    fn pcpu_workers_follow_users() -> Result {
        let rt = RUNTIME.load(Ordering::Acquire);
        assert!(!rt.is_null());
        // SAFETY: the module is loading and its runtime is up (tests run after `init`).
        let rt = unsafe { &*rt };
        // At load no mount uses them yet.
        assert_eq!(counts(rt).1, 0);
        rt.pcpu.get()?;
        rt.pcpu.get()?;
        let (online, with_two) = counts(rt);
        rt.pcpu.put();
        let with_one = counts(rt).1;
        rt.pcpu.put();
        // Asserted only now: a failed assertion does not return, and would leave the users.
        assert_eq!(with_two, online);
        assert_eq!(with_one, online);
        assert_eq!(counts(rt).1, 0);
        Ok(())
    }
}
