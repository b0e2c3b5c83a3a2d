// SPDX-License-Identifier: GPL-2.0-only
//! Read queues (C: `struct z_erofs_decompressqueue` and its bio completion, fs/erofs/zdata.c):
//! the bios of one read request in flight, and the work the filesystem runs once the last one
//! completes ([`ZWork`]): in the submitter, on the bound high-priority workqueue, or on this
//! CPU's kthread worker ([`Placement`]), as the filesystem asks. What a queue does it reports to
//! the filesystem ([`ZEvents`]). A superblock counts its queues in flight ([`Inflight`]), and
//! its kill waits for them.

use super::pagecache::{
    CFolio,
    OutFolio, //
};
use super::smallvec::SmallVec;
use super::workers::{
    runtime,
    Runtime, //
};
use super::{
    bio::{
        Completed,
        ReadBio, //
    },
    cpu,
    ffi,
    folio,
    fs::FileSystem,
    kthread::KthreadWork,
    sys,
    trace,
    workqueue::OwnedQueue,
    SuperBlock, //
};
use core::{
    alloc::Layout,
    marker::PhantomData,
    mem::MaybeUninit,
    ptr::NonNull,
    sync::atomic::{
        AtomicBool,
        AtomicI32,
        AtomicI64,
        AtomicPtr,
        AtomicU32,
        AtomicUsize,
        Ordering, //
    },
};
use kernel::{
    bindings, new_spinlock, new_work,
    page::PAGE_SIZE,
    prelude::*,
    sync::{
        aref::ARef,
        Arc,
        Completion,
        SpinLock, //
    },
    types::Opaque,
    workqueue::{
        impl_has_work,
        Work,
        WorkItem, //
    },
};

/// The work a decompression queue runs once its I/O is done.
pub(crate) trait ZWork: Send + Sized + 'static {
    /// What the queue tells of its runs and reads ([`ZEvents`]): the filesystem's statistics.
    type Events: ZEvents;

    /// Runs with the first I/O error (0 if none), in a worker or in the submitter, and the
    /// folios lent to the queue's bios with their tags ([`ZQueue::lend`]), back from them;
    /// returns the work's error, which a sync submitter hands to its caller. Parts of the work
    /// it splits off may go to the workers of other CPUs through `spread`.
    fn run(
        self: KBox<Self>,
        err: i32,
        lent: KVec<(usize, OutFolio)>,
        spread: &mut Spread<'_, Self>,
    ) -> Result;

    /// The pclusters to decode, and their compressed and decoded bytes (for the
    /// `erofs_rs_decompress` tracepoint).
    fn sizes(&self) -> (u32, u64, u64);
}

/// Runs `f` with the task's allocations kept from starting I/O (`memalloc_noio_save`), as the
/// C driver decompresses: the folios being read are locked, and reclaim must not wait on them.
fn noio<R>(f: impl FnOnce() -> R) -> R {
    // SAFETY: restored below, in the same task.
    let flags = unsafe { ffi::erofs_rs_glue_memalloc_noio_save() };
    let r = f();
    // SAFETY: restores what the save above returned, in the same task, in LIFO order with any
    // save `f` made (each restored before it returned).
    unsafe { ffi::erofs_rs_glue_memalloc_noio_restore(flags) };
    r
}

/// What [`ZQueue::bypass`]'s work decoded: pclusters (of the device or inline), their
/// compressed and decoded bytes, and the folios it handed back.
#[derive(Default)]
pub(crate) struct Bypassed {
    pub(crate) pclusters: u32,
    pub(crate) in_bytes: u64,
    pub(crate) out_bytes: u64,
    pub(crate) folios: u32,
}

/// Where a queue's work ran; the value is the `placement` field of the `erofs_rs_decompress`
/// tracepoint.
#[derive(Clone, Copy, PartialEq, Eq)]
pub(crate) enum Placement {
    /// In the submitter: a sync read, or one whose data was all cached.
    Inline = 0,
    /// On the bound high-priority workqueue.
    Workqueue = 1,
    /// On this CPU's kthread worker (a queue made with `pcpu`).
    Kthread = 2,
    /// On the workqueue because this CPU's kthread worker was gone (hotplug).
    KthreadFallback = 3,
    /// In the context that completed the last bio, which was not atomic (a loop device's
    /// worker, dm-verity's verify workqueue): no hop to a worker.
    Completion = 4,
}

/// What a decompression queue reports to its filesystem ([`ZWork::Events`]): where and how
/// fast its work ran, and how its reads were placed. The queue keeps no count of its own; the
/// filesystem keeps what it shows its users.
pub(crate) trait ZEvents: Send + Sync + 'static {
    /// A queue ran its work (or, made and dropped with none, was freed) at `placement`,
    /// `decode_ns` long, `queued_ns` after its last bio completed: the time it waited for a
    /// worker, 0 unless it ran on one ([`Placement::Workqueue`], [`Placement::Kthread`],
    /// [`Placement::KthreadFallback`]).
    fn ran(&self, placement: Placement, queued_ns: u64, decode_ns: u64);

    /// The submitter decoded what needed none of the queue's I/O before it completed
    /// ([`ZQueue::bypass`], at least one pcluster), `decode_ns` long.
    fn bypassed(&self, decoded: &Bypassed, decode_ns: u64);

    /// A page of the device is read into a page of a file folio (in-place I/O,
    /// [`ZQueue::lend`], [`ZQueue::lend_more`]).
    fn read_in_place(&self);

    /// A page of the device is read into a short-lived folio ([`ZQueue::grab_shortlived`]).
    fn read_shortlived(&self);

    /// The last bio of a queue completed in atomic context, so its work goes to a worker.
    /// Called in that context (an interrupt, a softirq): it must not sleep.
    fn completed_in_atomic(&self);

    /// A part of a queue's work was handed to another CPU's worker ([`Spread::send`]).
    fn handed_off(&self);
}

/// The shared part of a decompression queue (`struct z_erofs_decompressqueue`): counts the
/// bios of one read request in flight, and runs its work once the last one completes.
///
/// Ownership passes with `pending`: whoever takes it to zero owns the queue. That is the
/// submitter (I/O done before the commit, or a sync queue after waiting for `done`), or the
/// last bio's completion, which hands it to a worker.
///
/// A queue is counted in its superblock's [`Inflight`] until it is freed (`hold`, a [`Hold`]):
/// the superblock's kill waits for it, so its bios and its work never outlive the superblock,
/// nor the module.
#[pin_data]
pub(super) struct QueueState<W: ZWork> {
    #[pin]
    work: Work<QueueState<W>>,
    #[pin]
    pub(super) kwork: KthreadWork,
    /// Completed by the last bio of a sync queue.
    #[pin]
    done: Opaque<bindings::completion>,
    /// Bios in flight, plus one while the submitter builds them.
    pending: AtomicU32,
    /// The first bio error, 0 if none.
    err: AtomicI32,
    /// The submitter waits and decompresses itself. Set before the submitter's count is given
    /// up (by [`ZQueue::new`], or by the drop of an uncommitted queue), read after.
    sync: AtomicBool,
    /// Run on the per-CPU kthread workers.
    pcpu: bool,
    /// `ktime_get()` when the last bio completed.
    t_ready: AtomicI64,
    rt: &'static Runtime,
    /// The work, set by the commit.
    #[pin]
    req: SpinLock<Option<KBox<W>>>,
    /// The short-lived folios the queue's bios read into, referenced until they complete
    /// (the queue is freed after its last bio); set before the submitter gives up its count.
    #[pin]
    pins: SpinLock<Option<KVec<ARef<folio::Folio>>>>,
    /// The file folios lent to the queue's bios (in-place I/O), tagged; handed to the work, or
    /// dropped (unlocked) with the queue, once no bio is left: set as `pins`.
    #[pin]
    lent: SpinLock<Option<KVec<(usize, OutFolio)>>>,
    /// The managed cache's mapping: the bios end its folios, and those of no page cache; the
    /// lent ones are left to the work. Compared only.
    mc: *const bindings::address_space,
    /// Where the queue reports its runs and reads.
    events: Arc<W::Events>,
    /// The superblock's `s_dev`, for the `erofs_rs_decompress` tracepoint.
    dev: u32,
    /// The superblock's count of this queue: the last field, so that it is given back after
    /// everything above is dropped (the work, the folios).
    hold: Hold,
}

// SAFETY: a queue is handed from the submitter to a bio completion and to a worker by design;
// its completion and kthread work are the kernel's, used under their own locks, and the rest is
// atomics, a spinlock, and `Send` data.
unsafe impl<W: ZWork> Send for QueueState<W> {}
// SAFETY: as above: every shared access goes through atomics, the spinlock, or the kernel's
// completion.
unsafe impl<W: ZWork> Sync for QueueState<W> {}

impl_has_work! {
    impl{W: ZWork} HasWork<Self> for QueueState<W> { self.work }
}

impl<W: ZWork> WorkItem for QueueState<W> {
    type Pointer = Pin<KBox<Self>>;

    fn run(this: Pin<KBox<Self>>) {
        let placement = if this.pcpu {
            Placement::KthreadFallback
        } else {
            Placement::Workqueue
        };
        // A worker's errors were reported and left the folios not uptodate.
        let _ = this.run_now(placement);
    }
}

impl<W: ZWork> QueueState<W> {
    /// Runs the work and frees the queue (`z_erofs_decompressqueue_work`); returns the work's
    /// error.
    fn run_now(self: Pin<KBox<Self>>, placement: Placement) -> Result {
        noio(|| self.run_noio(placement))
    }

    /// [`QueueState::run_now`], allocations kept from starting I/O.
    fn run_noio(self: Pin<KBox<Self>>, placement: Placement) -> Result {
        let t0 = ktime_ns();
        let mut queued_ns = 0;
        if matches!(
            placement,
            Placement::Workqueue | Placement::Kthread | Placement::KthreadFallback
        ) {
            // Negative only if the clock went back: none then.
            queued_ns =
                u64::try_from(t0.saturating_sub(self.t_ready.load(Ordering::Relaxed))).unwrap_or(0);
        }
        let work = self.req.lock().take();
        let mut sizes = (0, 0, 0);
        let mut ret = Ok(());
        let mut spread = Spread::new(&self);
        if let Some(work) = work {
            if trace::decompress_enabled() {
                sizes = work.sizes();
            }
            // No bio is left (we own the queue): the lent folios are back.
            let lent = self.lent.lock().take().unwrap_or_default();
            ret = work.run(self.err.load(Ordering::Relaxed), lent, &mut spread);
            // What went to other CPUs is theirs to report.
            let s = spread.sent;
            sizes = (
                sizes.0.saturating_sub(s.0),
                sizes.1.saturating_sub(s.1),
                sizes.2.saturating_sub(s.2),
            );
        }
        report_run(&*self.events, self.dev, placement, sizes, queued_ns, t0);
        // The parts no worker has begun: here, now, each reported as a run of its own.
        spread.take_back();
        drop(spread);
        Self::free(self);
        ret
    }

    /// Drops the queue, and keeps its memory for the next queue of its superblock
    /// ([`SpareQueue`]).
    fn free(this: Pin<KBox<Self>>) {
        // The superblock's count of queues, beyond the queue's own count in it (given back by
        // the drop below).
        let inflight = this.hold.0.clone();
        // SAFETY: the queue is dropped in place below and its memory is only used again as raw
        // memory: nothing of it moves while pinned.
        let q = KBox::into_raw(unsafe { Pin::into_inner_unchecked(this) });
        // SAFETY: `q` is a live queue of ours (from the box), dropped once.
        unsafe { core::ptr::drop_in_place(q) };
        // SAFETY: the allocation of a `KBox<Self>` whose value was just dropped, ours.
        unsafe { inflight.spare.keep(q) };
    }

    /// Takes the queue back from the raw pointer its owner held.
    ///
    /// # Safety
    ///
    /// `q` came from [`ZQueue::new`]'s `into_raw` and the caller owns it (see [`QueueState`]); it
    /// is not used through the pointer afterwards.
    unsafe fn from_raw(q: *mut Self) -> Pin<KBox<Self>> {
        // SAFETY: by the contract: a pinned box leaked once, taken back once.
        unsafe { Pin::new_unchecked(KBox::from_raw(q)) }
    }

    /// The last bio completed (`z_erofs_decompress_kickoff`): in atomic context (an
    /// interrupt, softirq) hand the queue to a worker; else decompress here, as the C driver
    /// does, which saves small reads a hop to a worker and back.
    ///
    /// # Safety
    ///
    /// As for [`QueueState::from_raw`]: the caller took `pending` to zero.
    unsafe fn kickoff(q: *mut Self) {
        // SAFETY: the queue is live: it is ours.
        // ORDERING: `sync` was stored before the submitter's AcqRel decrement, which the last
        // one synchronises with.
        let (sync, pcpu, rt) = unsafe { ((*q).sync.load(Ordering::Relaxed), (*q).pcpu, (*q).rt) };
        if sync {
            // The submitter waits for `done` and then owns the queue: no touching it after.
            // SAFETY: `done` was initialised with the queue.
            unsafe { bindings::complete((*q).done.get()) };
            return;
        }
        // SAFETY: ours, as above.
        let this = unsafe { Self::from_raw(q) };
        // SAFETY: no preconditions.
        if !unsafe { ffi::erofs_rs_glue_bio_in_atomic() } {
            // Preemptible task context: the work may sleep and allocate here (`run_now` saves
            // `memalloc_noio` around it). Its errors were reported and left the folios not
            // uptodate.
            let _ = this.run_now(Placement::Completion);
            return;
        }
        this.events.completed_in_atomic();
        this.t_ready.store(ktime_ns(), Ordering::Relaxed);
        let this = if pcpu {
            match rt.pcpu.queue(this) {
                Ok(()) => return,
                // This CPU's worker is gone (hotplug) or stopping: the workqueue takes it.
                Err(this) => this,
            }
        } else {
            this
        };
        rt.wq.enqueue(this);
    }
}

/// A part of a queue's work handed to another CPU's worker ([`Spread::send`]): a queue of its
/// own with no I/O, whose work is counted in the superblock's [`Inflight`] until it has run (so
/// the superblock's kill waits for it). Shared by the worker it was queued on and the sender,
/// which takes the work back and runs it itself if that worker has not begun it by the time
/// the sender is done with its own part ([`Spread::take_back`]), and then takes it off that
/// worker's queue: a CPU kept busy by another task (a SCHED_FIFO hog) holds up neither the
/// read nor the umount. Whoever takes `req` first runs it.
#[pin_data]
struct Part<W: ZWork> {
    #[pin]
    work: Work<Part<W>>,
    #[pin]
    kwork: KthreadWork,
    /// The work, and the superblock's count of it, until the worker or the sender takes them.
    #[pin]
    req: SpinLock<Option<(KBox<W>, Hold)>>,
    /// Queued on a kthread worker (`kwork`), else on the workqueue (`work`).
    on_kthread: AtomicBool,
    /// When the sender was done with its own work and found this part begun, and how long
    /// its own work took (`ktime_get()` ns; 0 until then): a part that ends much later than
    /// its sender tells its CPU is busy with something else.
    sender_done: AtomicI64,
    sender_took: AtomicI64,
    /// Queued on the per-CPU kthreads (else the workqueue).
    pcpu: bool,
    /// The CPU it was queued on, `ktime_get()` then, and how many parts were queued or running
    /// there before it ([`Runtime::part_queued`]).
    cpu: u32,
    t_ready: i64,
    ahead: u32,
    rt: &'static Runtime,
    events: Arc<W::Events>,
    /// The superblock's `s_dev`, for the `erofs_rs_decompress` tracepoint.
    dev: u32,
}

impl_has_work! {
    impl{W: ZWork} HasWork<Self> for Part<W> { self.work }
}

impl<W: ZWork> WorkItem for Part<W> {
    type Pointer = Arc<Self>;

    fn run(this: Arc<Self>) {
        let placement = if this.pcpu {
            Placement::KthreadFallback
        } else {
            Placement::Workqueue
        };
        this.run_here(placement);
    }
}

impl<W: ZWork> Part<W> {
    /// Runs the work here if nobody took it yet, as a queue's run: with allocations kept from
    /// starting I/O, reported to the events and the tracepoint at `placement` (a worker's
    /// placement counts the time it waited since it was queued). Returns whether it did.
    fn run_here(&self, placement: Placement) -> bool {
        let Some((work, hold)) = self.req.lock().take() else {
            return false;
        };
        noio(|| {
            let t0 = ktime_ns();
            // Late for nothing of ours: no other part was ahead of it on that CPU.
            let alone = self.ahead == 0;
            let queued_ns = if placement == Placement::Inline {
                // Taken back: its CPU did not begin it in all the time the sender took, which
                // was long.
                if alone && t0.saturating_sub(self.t_ready) > PART_LATE_NS {
                    self.rt.busy(self.cpu, t0);
                }
                0
            } else {
                let q = t0.saturating_sub(self.t_ready);
                if alone && q > PART_LATE_NS {
                    self.rt.busy(self.cpu, t0);
                }
                u64::try_from(q).unwrap_or(0)
            };
            let sizes = if trace::decompress_enabled() {
                work.sizes()
            } else {
                (0, 0, 0)
            };
            // A part does not split again. (Its errors were reported, and left its folios not
            // uptodate: nobody waits for its result.)
            let mut none = Spread::none(&self.events);
            let _ = work.run(0, KVec::new(), &mut none);
            report_run(&*self.events, self.dev, placement, sizes, queued_ns, t0);
            // Ended later after its sender than twice the sender's whole run took (parts are
            // cut to about equal work, a job at most apart): this CPU's worker
            // was kept from running by something else (a real-time task lets a worker of the
            // workqueue run only in the fair server's slices).
            // ORDERING: a heuristic: a stale value misses one case, or finds none.
            let (sd, st) = (
                self.sender_done.load(Ordering::Relaxed),
                self.sender_took.load(Ordering::Relaxed),
            );
            let late = sd != 0 && ktime_ns().saturating_sub(sd) > st.max(PART_LATE_NS) * 2;
            if alone && late {
                self.rt.busy(self.cpu, ktime_ns());
            } else if placement != Placement::Inline && queued_ns <= PART_LATE_NS as u64 {
                self.rt.prompt(self.cpu);
            }
            self.rt.part_done(self.cpu);
        });
        // The superblock's count, given back once the work has run and reported.
        drop(hold);
        true
    }

    /// Takes the part off the queue it was queued on, if it is still waiting there, and drops
    /// the reference the queueing holds: after its work was taken back, so that a worker kept
    /// from running does not keep the part (nor its worker's teardown) waiting.
    fn cancel(this: &Arc<Self>) {
        let p = Arc::as_ptr(this);
        // ORDERING: set before the part was queued, on this thread.
        let cancelled = if this.on_kthread.load(Ordering::Relaxed) {
            // SAFETY: the part's `kwork`, initialised and live while `this` is; it was queued
            // on a kthread worker, which lives until it has run what was queued on it.
            unsafe { bindings::kthread_cancel_work_sync(this.kwork.raw()) }
        } else {
            // SAFETY: the part's `work`, initialised and live while `this` is.
            unsafe { bindings::cancel_work(Work::raw_get(core::ptr::addr_of!(this.work))) }
        };
        if cancelled {
            // SAFETY: the queueing leaked one reference (`Arc::into_raw`, by `part_kwork`'s
            // queueing or the workqueue's `RawWorkItem` for `Arc`), which the cancelled run
            // would have taken back: ours now, dropped once.
            drop(unsafe { Arc::from_raw(p) });
        }
    }
}

/// A kthread worker ran a part.
///
/// # Safety
///
/// `w` is the `kwork` of a part that [`Spread::send`] queued with one reference of its `Arc`
/// passed to this run.
unsafe extern "C" fn part_kwork<W: ZWork>(w: *mut bindings::kthread_work) {
    // SAFETY: `w` is the `kwork` field of a live `Part<W>` (`KthreadWork` is transparent).
    let p = unsafe { w.byte_sub(core::mem::offset_of!(Part<W>, kwork)) }.cast::<Part<W>>();
    // SAFETY: the reference `Arc::into_raw` leaked for this run (the contract), taken once.
    let part = unsafe { Arc::from_raw(p) };
    part.run_here(Placement::Kthread);
}

/// A part begun this long after it was queued tells its CPU is busy with something else
/// ([`Runtime::busy`]): a worker wakes in tens of microseconds on an idle CPU (a few
/// milliseconds for an idle vCPU under TCG).
const PART_LATE_NS: i64 = 20_000_000;

/// The most parts a run keeps to take back ([`Spread::take_back`]); more are left to their
/// workers.
const SPREAD_KEPT: usize = 8;

/// Hands parts of a queue's work to the workers of other CPUs, while the queue runs it
/// ([`ZWork::run`]): one large read decoded on several CPUs (the C driver decodes a read on
/// one). Each part runs on the chosen CPU's kthread worker if the queue runs on the per-CPU
/// kthreads and that CPU has one, else on the bound workqueue's pool of that CPU
/// (`queue_work_on`), reporting its run to the same [`ZEvents`] and to the
/// `erofs_rs_decompress` tracepoint; once the queue's own work is done, the parts no worker
/// has begun are run by the queue's runner ([`Spread::take_back`]).
pub(crate) struct Spread<'q, W: ZWork> {
    /// The superblock's count of live queues, which each part joins; `None`: nothing is handed
    /// off (a sync queue, whose submitter takes the work's error, which must be that of all
    /// of it; or a part).
    inflight: Option<&'q Arc<Inflight>>,
    events: &'q Arc<W::Events>,
    rt: Option<&'static Runtime>,
    /// The parts run on the per-CPU kthreads.
    pcpu: bool,
    dev: u32,
    /// The CPU that took the last part; the first goes to the one after this CPU.
    last: u32,
    /// This CPU when the run began: never given a part.
    here: u32,
    /// The sizes ([`ZWork::sizes`]) of the parts handed off, while the tracepoint is on: the
    /// queue's own record leaves them out.
    sent: (u32, u64, u64),
    /// The parts handed off, to take back if no worker began them.
    kept: SmallVec<Arc<Part<W>>, SPREAD_KEPT>,
    /// Parts go to CPUs whose workers were slow lately too ([`Spread::insist`]).
    insist: bool,
    /// `ktime_get()` when the run began.
    t0: i64,
}

impl<'q, W: ZWork> Spread<'q, W> {
    fn new(q: &'q QueueState<W>) -> Self {
        // ORDERING: `sync` is set before the queue is handed over (see `QueueState`).
        let sync = q.sync.load(Ordering::Relaxed);
        // (A sync queue, every random read's, hands nothing off: which CPU this is, and when,
        // do not matter to it.)
        let (here, t0) = if sync {
            (0, 0)
        } else {
            (cpu::this_cpu(), ktime_ns())
        };
        Spread {
            inflight: (!sync).then_some(&q.hold.0),
            events: &q.events,
            rt: Some(q.rt),
            pcpu: q.pcpu,
            dev: q.dev,
            last: here,
            here,
            sent: (0, 0, 0),
            kept: SmallVec::new(),
            insist: false,
            t0,
        }
    }

    /// One that hands nothing off (for a part's run).
    fn none(events: &'q Arc<W::Events>) -> Self {
        Spread {
            inflight: None,
            events,
            rt: None,
            pcpu: false,
            dev: 0,
            last: 0,
            here: 0,
            sent: (0, 0, 0),
            kept: SmallVec::new(),
            insist: false,
            t0: ktime_ns(),
        }
    }

    /// For work that runs without a queue, in the reader (a file-backed mount that reads its
    /// backing file's page cache), on superblock `sb`: its parts report to `events`, and run on
    /// the per-CPU kthreads if `pcpu`. (Not for a read whose caller takes its error: see
    /// [`Spread::send`].) The caller runs [`Spread::take_back`] after its own part.
    pub(crate) fn for_reader<T: FileSystem>(
        sb: SuperBlock<'q, T>,
        events: &'q Arc<W::Events>,
        pcpu: bool,
    ) -> Result<Self> {
        let here = cpu::this_cpu();
        // SAFETY: `sb` is live for `'q`; `s_dev` is set before `fill_super` runs and never
        // changes.
        let dev = unsafe { (*sb.as_ptr()).s_dev };
        Ok(Spread {
            inflight: Some(sb.inflight()),
            events,
            rt: Some(runtime(&sb)?),
            pcpu,
            dev,
            last: here,
            here,
            sent: (0, 0, 0),
            kept: SmallVec::new(),
            insist: false,
            t0: ktime_ns(),
        })
    }

    /// How many other CPUs are online now (hotplug may change that at once) and take parts
    /// (their workers were not slow with one lately: [`Runtime::busy`]): at most how many
    /// parts are worth handing off; 0 if none may be.
    pub(crate) fn others(&self) -> u32 {
        let (Some(_), Some(rt)) = (self.inflight, self.rt) else {
            return 0;
        };
        let now = ktime_ns();
        cpu::count_online(self.here, |c| self.insist || rt.takes_parts(c, now))
    }

    /// Hands parts to every online CPU, also those whose workers were slow with one lately
    /// (for tests, which must see reads split whatever the host's load).
    pub(crate) fn insist(&mut self) {
        self.insist = true;
    }

    /// Runs `part` on the next online CPU after the one that took the last part (wrapping,
    /// never this one), or here later ([`Spread::take_back`]) if that CPU's worker has not
    /// begun it by then. Its error goes nowhere: it reports its own, as work on a worker does.
    /// Gives it back if nothing may be handed off ([`Spread::others`] is 0), there is no other
    /// online CPU or no memory for the part, or the superblock is being killed: the caller then
    /// runs it itself.
    pub(crate) fn send(&mut self, part: KBox<W>) -> core::result::Result<(), KBox<W>> {
        let (Some(inflight), Some(rt)) = (self.inflight, self.rt) else {
            return Err(part);
        };
        // Not to a CPU whose worker was slow to begin a part lately.
        let now = ktime_ns();
        let insist = self.insist;
        let Some(cpu) =
            cpu::next_online(self.last, self.here, |c| insist || rt.takes_parts(c, now))
        else {
            return Err(part);
        };
        let Ok(hold) = Hold::new(inflight) else {
            return Err(part);
        };
        let (pcpu, events, dev) = (self.pcpu, self.events.clone(), self.dev);
        // Counted until its work is taken (`Part::run_here`, which every part's work reaches).
        let ahead = rt.part_queued(cpu);
        let p = Arc::pin_init(
            pin_init!(Part {
                work <- new_work!("erofs_rs_zq_part"),
                kwork <- KthreadWork::new(part_kwork::<W>),
                req <- new_spinlock!(None, "erofs_rs_zq_part"),
                on_kthread: AtomicBool::new(pcpu),
                sender_done: AtomicI64::new(0),
                sender_took: AtomicI64::new(0),
                pcpu,
                cpu,
                t_ready: now,
                ahead,
                rt,
                events,
                dev,
            }),
            GFP_KERNEL,
        );
        let Ok(p) = p else {
            rt.part_done(cpu);
            return Err(part);
        };
        if trace::decompress_enabled() {
            let n = part.sizes();
            self.sent = (
                self.sent.0.saturating_add(n.0),
                self.sent.1.saturating_add(n.1),
                self.sent.2.saturating_add(n.2),
            );
        }
        // (Set once the part exists: a failed allocation gives the work back whole.)
        *p.req.lock() = Some((part, hold));
        // Kept to take back; if there is no room, its worker alone runs it.
        let _ = self.kept.push(p.clone());
        self.last = cpu;
        self.events.handed_off();
        if pcpu {
            let raw = Arc::into_raw(p);
            // SAFETY: `raw` holds a reference of the part, which `part_kwork` takes back once
            // it runs; its `kwork` lives as long as that reference.
            if unsafe { rt.pcpu.queue_kwork_on(cpu, (*raw).kwork.raw()) } {
                return Ok(());
            }
            // That CPU's worker is gone (hotplug): its workqueue pool takes it.
            // SAFETY: not queued: the reference is still ours.
            let p = unsafe { Arc::from_raw(raw) };
            // ORDERING: read by `cancel` on this thread.
            p.on_kthread.store(false, Ordering::Relaxed);
            let _ = rt.wq.enqueue_on(cpu, p);
        } else {
            // (A new part is in no queue: never refused.)
            let _ = rt.wq.enqueue_on(cpu, p);
        }
        Ok(())
    }

    /// Runs here the parts handed off that no worker has begun, and takes them off their
    /// queues: called once the queue's own work is done.
    pub(crate) fn take_back(&mut self) {
        let now = ktime_ns();
        for p in self.kept.as_slice() {
            // ORDERING: see `Part::run_here`.
            p.sender_took
                .store(now.saturating_sub(self.t0), Ordering::Relaxed);
            p.sender_done.store(now, Ordering::Relaxed);
            if p.run_here(Placement::Inline) {
                Part::cancel(p);
            }
        }
        self.kept.clear();
    }
}

/// Reports a run of a queue's (or a part's) work begun at `t0`, which waited `queued_ns` for a
/// worker, at `placement`, of `sizes` (pclusters, compressed and decoded bytes): to the
/// `erofs_rs_decompress` tracepoint of device `dev` and to `events`.
fn report_run<E: ZEvents>(
    events: &E,
    dev: u32,
    placement: Placement,
    sizes: (u32, u64, u64),
    queued_ns: u64,
    t0: i64,
) {
    let decode_ns = u64::try_from(ktime_ns().saturating_sub(t0)).unwrap_or(0);
    trace::decompress(&trace::DecompressRun {
        dev,
        placement: placement as u32,
        pclusters: sizes.0,
        in_bytes: sizes.1,
        out_bytes: sizes.2,
        queued_ns,
        decode_ns,
    });
    events.ran(placement, queued_ns, decode_ns);
}

/// `ktime_get()` in nanoseconds.
fn ktime_ns() -> i64 {
    // SAFETY: no preconditions.
    unsafe { bindings::ktime_get() }
}

/// A kthread worker ran a queue.
///
/// # Safety
///
/// `w` is the `kwork` of a queue [`Pcpu::queue`] queued, which passed it its ownership.
unsafe extern "C" fn queue_kwork<W: ZWork>(w: *mut bindings::kthread_work) {
    // SAFETY: `w` is the `kwork` field of a live `QueueState<W>` (`KthreadWork` is transparent).
    let q =
        unsafe { w.byte_sub(core::mem::offset_of!(QueueState<W>, kwork)) }.cast::<QueueState<W>>();
    // SAFETY: the queue's ownership passed to this run (the contract).
    // (A worker's errors were reported and left the folios not uptodate.)
    let _ = unsafe { QueueState::from_raw(q) }.run_now(Placement::Kthread);
}

/// A bio of a queue completed (`z_erofs_endio`).
///
/// # Safety
///
/// `bio` is a bio built by [`ZQueue`], whose private pointer is its `QueueState<W>`.
unsafe extern "C" fn queue_endio<W: ZWork>(bio: *mut bindings::bio) {
    let Some(bio) = NonNull::new(bio) else { return };
    // SAFETY: by the contract, in its `end_io`, once.
    let bio = unsafe { Completed::from_raw(bio) };
    let q = bio.private().cast::<QueueState<W>>();
    let err = bio.errno();
    // SAFETY: the queue lives while this bio is counted in `pending`, until the decrement.
    let qr = unsafe { &*q };
    // Lent folios stay locked: the work ends them.
    bio.end_read_owned(err == 0, qr.mc);
    if err != 0 {
        let _ = qr
            .err
            .compare_exchange(0, err, Ordering::Relaxed, Ordering::Relaxed);
    }
    // ORDERING: AcqRel: the owner-to-be sees every completion's `err` and the commit's work.
    if qr.pending.fetch_sub(1, Ordering::AcqRel) == 1 {
        // SAFETY: we took `pending` to zero: the queue is ours.
        unsafe { QueueState::kickoff(q) };
    }
}

/// A decompression queue being filled with bios (`struct z_erofs_decompressqueue`). Dropping
/// it uncommitted still submits and finishes its I/O, with no work to run.
///
/// # Invariants
///
/// `q` is a queue leaked from a pinned box, whose submitter's count in `pending` this value
/// holds; `target` is the live primary device (block device or backing file) of the
/// superblock the queue was made for, which lives for `'a` and, the queue being counted in
/// that superblock's [`Inflight`] until it is freed after its last bio, beyond the queue's
/// I/O; `dev_end` its size in bytes, and `mapping` the page cache of the superblock's managed
/// cache, live while `q` is not null: the queue's count in the superblock's [`Inflight`] keeps
/// its kill waiting (the drain comes before `put_super`, which releases the managed cache).
pub(crate) struct ZQueue<'a, W: ZWork> {
    q: *mut QueueState<W>,
    target: Target,
    dev_end: u64,
    mapping: *mut bindings::address_space,
    /// The bio being built, and the device byte right after its last folio.
    bio: Option<ReadBio>,
    next_pos: u64,
    /// Bios are readahead (`REQ_RAHEAD`).
    rahead: bool,
    /// [`ZQueue::grab`] found a folio of the managed cache uptodate.
    hit: bool,
    /// References to the short-lived folios of the bios, handed to the queue by
    /// [`ZQueue::finish`].
    /// (`None` until the first: an empty vector's drop is not free, see `release`.)
    pins: Option<KVec<ARef<folio::Folio>>>,
    /// The folios lent to the bios ([`ZQueue::lend`]), handed to the queue likewise.
    lent: Option<KVec<(usize, OutFolio)>>,
    /// How many folios the submitter means to pin or lend ([`ZQueue::plan_room`]): the room
    /// `pins` and `lent` take at their first push, rather than growing one at a time.
    room_hint: usize,
    _p: PhantomData<&'a ()>,
}

/// The most entries [`ZQueue::plan_room`] makes room for at once (a page of `lent` entries).
const ROOM_HINT_MAX: usize = 256;

/// What a queue's bios read from.
#[derive(Clone, Copy)]
enum Target {
    /// The block device of a block-device mount.
    Bdev(*mut bindings::block_device),
    /// The backing file of a file-backed mount (fs/erofs/fileio.c), read with `IOCB_DIRECT`
    /// if `direct` (`directio`).
    File {
        file: *mut bindings::file,
        direct: bool,
    },
}

/// How a committed queue goes on.
pub(crate) enum Committed {
    /// The work ran in the caller, with this result (`z_erofs_runqueue`'s, which the C
    /// driver's `read_folio` returns).
    Ran(Result),
    /// A worker runs it when the last bio completes.
    Queued,
}

impl<'a, W: ZWork> ZQueue<'a, W> {
    /// A new queue on the primary device of superblock `sb`: its block device, or its backing
    /// file, read with `IOCB_DIRECT` if `direct`. A `sync` queue runs in the caller of
    /// [`ZQueue::commit`]; else in a worker, the per-CPU kthreads if `pcpu`. It reports its
    /// runs and reads to `events`.
    ///
    /// The queue counts itself in the superblock's [`Inflight`] until its work has run and it is
    /// freed, which its kill path waits for: its bios never outlive the superblock, nor (it
    /// being mounted until then) the module; `EIO` once that drain is done.
    pub(crate) fn new<T: FileSystem>(
        sb: SuperBlock<'a, T>,
        events: Arc<W::Events>,
        sync: bool,
        pcpu: bool,
        direct: bool,
    ) -> Result<Self> {
        // First: nothing below may outlive a superblock being killed.
        let hold = Hold::new(sb.inflight())?;
        // SAFETY: `sb` is live for `'a`; `s_dev` is set before `fill_super` runs and never
        // changes.
        let s_dev = unsafe { (*sb.as_ptr()).s_dev };
        let dev = sb.device();
        // A superblock has one from `fill_super` to `put_super` (or to a failed `fill_super`,
        // before any read).
        // SAFETY: `hold`, which the queue keeps until it is freed (after the last use of
        // `mc` by this value, whose `q` is then null), keeps the kill of the superblock waiting
        // in its drain, before `put_super` releases the slot.
        let mc = unsafe { dev.zcache.mapping_unreferenced() };
        if mc.is_null() {
            return Err(EIO);
        }
        let (target, dev_end) = if dev.is_file() {
            let file = dev.file;
            // SAFETY: a file-backed superblock holds its referenced backing file for its life.
            let end = unsafe { super::super_block::file_bytes(file) };
            (Target::File { file, direct }, end)
        } else {
            // SAFETY: a block-device superblock has a live `s_bdev` for its life.
            let bdev = unsafe { (*sb.as_ptr()).s_bdev };
            // SAFETY: as above.
            (Target::Bdev(bdev), unsafe {
                ffi::erofs_rs_glue_bdev_nr_bytes(bdev)
            })
        };
        let rt = runtime(&sb)?;
        let spare = hold.0.spare.take::<QueueState<W>>();
        let init = pin_init!(QueueState {
            work <- new_work!("erofs_rs_zq"),
            kwork <- KthreadWork::new(queue_kwork::<W>),
            // SAFETY: initialises the completion in place.
            done <- Opaque::ffi_init(|c| unsafe { bindings::init_completion(c) }),
            pending: AtomicU32::new(1),
            err: AtomicI32::new(0),
            sync: AtomicBool::new(sync),
            pcpu,
            t_ready: AtomicI64::new(0),
            rt,
            req <- new_spinlock!(None, "erofs_rs_zq_req"),
            pins <- new_spinlock!(None, "erofs_rs_zq_pins"),
            lent <- new_spinlock!(None, "erofs_rs_zq_lent"),
            mc: mc.cast_const(),
            events,
            dev: s_dev,
            hold,
        });
        let q = match spare {
            Some(mem) => match mem.write_pin_init(init) {
                Ok(q) => q,
                Err(e) => match e {},
            },
            None => KBox::pin_init(init, GFP_KERNEL)?,
        };
        // SAFETY: the box stays pinned: it is only ever taken back with `QueueState::from_raw`.
        let q = KBox::into_raw(unsafe { Pin::into_inner_unchecked(q) });
        // INVARIANT: a fresh queue holding the submitter's count, and a count in `sb`'s
        // `Inflight` until it is freed; `sb`'s device, its size, and its cache.
        Ok(ZQueue {
            q,
            target,
            dev_end,
            mapping: mc,
            bio: None,
            next_pos: 0,
            rahead: false,
            hit: false,
            pins: None,
            lent: None,
            room_hint: 1,
            _p: PhantomData,
        })
    }

    /// Says that about `n` folios will be read into short-lived folios or lent
    /// ([`ZQueue::grab_shortlived`], [`ZQueue::lend`]): the queue makes room for them at once.
    pub(crate) fn plan_room(&mut self, n: usize) {
        self.room_hint = n.max(1);
    }

    /// `v`, made on first use, with room for one more entry: for `hint` entries (at most
    /// [`ROOM_HINT_MAX`]) if it has none yet, or just the one if that cannot be had.
    fn room<T>(v: &mut Option<KVec<T>>, hint: usize) -> Result<&mut KVec<T>> {
        let v = v.get_or_insert_with(KVec::new);
        if v.capacity() == 0 && v.reserve(hint.min(ROOM_HINT_MAX), GFP_KERNEL).is_ok() {
            return Ok(v);
        }
        v.reserve(1, GFP_KERNEL)?;
        Ok(v)
    }

    /// Marks the bios of this queue as readahead (`REQ_RAHEAD`), as the C driver's
    /// `z_erofs_submit_queue` does for `z_erofs_readahead`.
    pub(crate) fn set_readahead(&mut self) {
        self.rahead = true;
    }

    /// Whether [`ZQueue::grab`] found a folio cached (uptodate): without that, no pcluster
    /// read into this queue's folios can be whole before its I/O.
    pub(crate) fn hit(&self) -> bool {
        self.hit
    }

    /// Submits the bio being built, then, if any read of the queue is in flight, runs `f` (the
    /// decoding of what needs none of them, `z_erofs_runqueue`'s bypass queue) now, with its
    /// allocations kept from starting I/O as in the queue's own run, and records it as a run in
    /// the reader ([`ZEvents::bypassed`] and the `erofs_rs_decompress` tracepoint, from the
    /// pclusters, compressed and decoded bytes `f` returns). Without I/O it does nothing: the
    /// commit runs the whole work here at once. A readahead's bios wait in its block plug until
    /// it returns, as the C driver's do.
    pub(crate) fn bypass(&mut self, f: impl FnOnce() -> Bypassed) {
        self.submit();
        // ORDERING: our count keeps `pending` above zero; bios completing meanwhile only lower
        // it, and the queue's work is not run before the commit either way.
        if self.state().pending.load(Ordering::Relaxed) <= 1 {
            return;
        }
        let t0 = ktime_ns();
        let b = noio(f);
        let decode_ns = u64::try_from(ktime_ns().saturating_sub(t0)).unwrap_or(0);
        if b.pclusters != 0 {
            let q = self.state();
            q.events.bypassed(&b, decode_ns);
            trace::decompress(&trace::DecompressRun {
                dev: q.dev,
                placement: Placement::Inline as u32,
                pclusters: b.pclusters,
                in_bytes: b.in_bytes,
                out_bytes: b.out_bytes,
                queued_ns: 0,
                decode_ns,
            });
        }
    }

    fn state(&self) -> &QueueState<W> {
        // SAFETY: the queue lives while we hold the submitter's count (type invariant).
        unsafe { &*self.q }
    }

    /// Submits the bio being built.
    fn submit(&mut self) {
        if let Some(bio) = self.bio.take() {
            // ORDERING: our own count keeps `pending` above zero: no one can own the queue yet.
            self.state().pending.fetch_add(1, Ordering::Relaxed);
            bio.submit();
        }
    }

    fn fail(&self, err: Error) {
        let _ = self.state().err.compare_exchange(
            0,
            err.to_errno(),
            Ordering::Relaxed,
            Ordering::Relaxed,
        );
    }

    /// Gets the device page-cache folio holding page `index` of the device (the image offset
    /// included), referenced; when it is not uptodate, it is queued for reading too. Before
    /// blocking on a folio lock the bio being built is submitted, so a folio this queue itself
    /// locked can never deadlock it.
    pub(crate) fn grab(&mut self, index: u64) -> Result<CFolio> {
        let mapping = self.mapping;
        let index = usize::try_from(index).map_err(|_| EINVAL)?;
        // One lookup that finds or adds the folio, locked, as the C driver adds a new folio
        // to the managed cache without looking it up first: a lookup before it cost a cold
        // read a second walk of the cache's xarray per page. A cached folio is unlocked at once.
        // SAFETY: `mapping` is live (type invariant).
        let gfp = unsafe { ffi::erofs_rs_glue_mapping_gfp_mask(mapping) } & !sys::EROFS_RS_GFP_FS;
        let lock = sys::EROFS_RS_FGP_LOCK | sys::EROFS_RS_FGP_CREAT;
        // SAFETY: as above.
        let mut f = unsafe {
            sys::__filemap_get_folio_mpol(
                mapping,
                index,
                lock | sys::EROFS_RS_FGP_NOWAIT,
                gfp,
                core::ptr::null_mut(),
            )
        };
        if kernel::error::from_err_ptr(f).is_err() {
            self.submit();
            // SAFETY: as above.
            f = unsafe {
                sys::__filemap_get_folio_mpol(mapping, index, lock, gfp, core::ptr::null_mut())
            };
        }
        let f = kernel::error::from_err_ptr(f)?;
        // SAFETY: `f` is a locked, referenced folio of `mapping`.
        if unsafe { ffi::erofs_rs_glue_folio_test_uptodate(f) } {
            self.hit = true;
            // SAFETY: we locked it above.
            unsafe { bindings::folio_unlock(f) };
        } else {
            // SAFETY: `f` is live, referenced.
            let (pos, size) = unsafe {
                (
                    ffi::erofs_rs_glue_folio_pos(f),
                    ffi::erofs_rs_glue_folio_size(f),
                )
            };
            // SAFETY: the locked, not uptodate folio of the managed cache for device byte `pos`,
            // read whole, whose unlocking passes to the bio.
            unsafe { self.add(f, 0, size, pos, true) };
        }
        // SAFETY: the reference the lookup returned is ours.
        // INVARIANT: a folio of the managed cache.
        let f = unsafe { folio::Folio::from_raw(f) };
        let pos = f.pos();
        Ok(CFolio(f, pos))
    }

    /// Gets page `index` of the device for a pcluster the managed cache does not keep
    /// (`z_erofs_fill_bio_vec` without `tocache`): the device's folio if the page cache has it
    /// (read, or being read: then as [`ZQueue::grab`]), else a short-lived folio outside any
    /// page cache, queued for reading, freed with the last reference (the returned one).
    pub(crate) fn grab_shortlived(&mut self, index: u64) -> Result<CFolio> {
        let pos = index.checked_mul(PAGE_SIZE as u64).ok_or(EINVAL)?;
        if self.cached(index) {
            return self.grab(index);
        }
        // SAFETY: no preconditions; the read may sleep here as in `grab`.
        let page = unsafe { bindings::alloc_pages(sys::EROFS_RS_GFP_NOFS, 0) };
        if page.is_null() {
            return Err(ENOMEM);
        }
        // An order-0 page is its own folio (`page_folio`).
        let f = page.cast::<bindings::folio>();
        // SAFETY: a fresh folio that nobody else can see: its lock is free, and taking it does
        // not sleep.
        unsafe { bindings::__folio_lock(f) };
        // SAFETY: `alloc_pages`'s reference passes to `held`.
        let held = unsafe { folio::Folio::from_raw(f) };
        // The queue keeps a reference until its I/O is done, whenever the caller drops its own.
        let kept = Self::room(&mut self.pins, self.room_hint)
            .and_then(|p| p.push(held.clone(), GFP_KERNEL).map_err(Error::from));
        if let Err(e) = kept {
            // SAFETY: we locked it above, and it is in no bio.
            unsafe { bindings::folio_unlock(f) };
            return Err(e);
        }
        // SAFETY: locked, not uptodate, referenced by the queue until its I/O is done, read
        // whole (one page); its unlocking passes to the bio.
        unsafe { self.add(f, 0, PAGE_SIZE, pos, true) };
        self.state().events.read_shortlived();
        // INVARIANT: a short-lived folio that only this queue's bio writes, before it is marked
        // uptodate, holding device byte `pos`.
        Ok(CFolio(held, pos))
    }

    /// Whether [`ZQueue::lend`] can read into file folios: on a block device.
    pub(crate) fn lends(&self) -> bool {
        matches!(self.target, Target::Bdev(_))
    }

    /// Whether the managed cache holds page `index` of the device (read or being read).
    pub(crate) fn cached(&self, index: u64) -> bool {
        let Ok(idx) = usize::try_from(index) else {
            return false;
        };
        // SAFETY: `mapping` is live (type invariant).
        let f = unsafe {
            sys::__filemap_get_folio_mpol(self.mapping, idx, 0, 0, core::ptr::null_mut())
        };
        let Ok(f) = kernel::error::from_err_ptr(f) else {
            return false;
        };
        // SAFETY: the lookup returned a reference, now ours, dropped here.
        drop(unsafe { folio::Folio::from_raw(f) });
        true
    }

    /// Reads page `index` of the device into page `page` of `folio`, a folio of the file being
    /// read, for a pcluster that is decoded over it (in-place I/O: `z_erofs_fill_bio_vec` given
    /// a file page). The queue keeps the folio, tagged `tag`, until its bios are done, and hands
    /// it to the work ([`ZWork::run`]), or unlocks it (not uptodate) if the queue has no work;
    /// no bio ends it. [`ZQueue::lend_more`] reads into its other pages. Only on a block device:
    /// else `folio` comes back, as when there is no memory to keep it or `page` is not one of
    /// its pages.
    pub(crate) fn lend(
        &mut self,
        tag: usize,
        folio: OutFolio,
        page: usize,
        index: u64,
    ) -> core::result::Result<(), OutFolio> {
        let Some(pos) = index.checked_mul(PAGE_SIZE as u64) else {
            return Err(folio);
        };
        // (Not a part: a bio would write all of the page, and another read may hold the
        // folio's other bytes.)
        if !matches!(self.target, Target::Bdev(_))
            || page >= folio.size() / PAGE_SIZE
            || folio.is_part()
        {
            return Err(folio);
        }
        let Ok(lent) = Self::room(&mut self.lent, self.room_hint) else {
            return Err(folio);
        };
        let f = folio.as_raw();
        if let Err(e) = lent.push_within_capacity((tag, folio)) {
            return Err(e.0 .1);
        }
        // SAFETY: a locked folio of a page cache of ours (never the managed cache's mapping,
        // nor none), held by the `OutFolio` just kept in `lent`: it stays locked and referenced
        // by that page cache until `lent` is dropped or handed to the work, which happens only
        // once `pending` is 0, i.e. after every bio naming it has completed (`finish`, and the
        // queue's drop, which finishes). The bio does not end it. `page` is one of its pages
        // (checked above).
        // OVERFLOW: `page` is below the folio's page count.
        unsafe { self.add(f, page * PAGE_SIZE, PAGE_SIZE, pos, false) };
        self.state().events.read_in_place();
        Ok(())
    }

    /// Reads page `index` of the device into page `page` of the folio lent as `tag`
    /// ([`ZQueue::lend`]); `EINVAL` if there is no such folio or page.
    pub(crate) fn lend_more(&mut self, tag: usize, page: usize, index: u64) -> Result {
        let pos = index.checked_mul(PAGE_SIZE as u64).ok_or(EINVAL)?;
        // From the back: the folio lent last, as a pcluster's pages follow each other.
        let (_, folio) = self
            .lent
            .as_deref()
            .unwrap_or(&[])
            .iter()
            .rev()
            .find(|(t, _)| *t == tag)
            .ok_or(EINVAL)?;
        if page >= folio.size() / PAGE_SIZE {
            return Err(EINVAL);
        }
        let f = folio.as_raw();
        // SAFETY: as in `lend`: a folio of ours kept locked in `lent` until every bio naming it
        // has completed; `page` is one of its pages (checked above).
        // OVERFLOW: `page` is below the folio's page count.
        unsafe { self.add(f, page * PAGE_SIZE, PAGE_SIZE, pos, false) };
        self.state().events.read_in_place();
        Ok(())
    }

    /// Reads bytes `off..off + size` of the locked folio `f` from byte `pos` of the device, up
    /// to the device's end (the rest of them is zeroed); the bio unlocks the folio if `owned`.
    ///
    /// # Safety
    ///
    /// `f` is a referenced, locked, not uptodate folio, and `off..off + size` lies in it. If
    /// `owned`, it is read whole (`off` 0, `size` its size) and its unlocking passes to this
    /// call: the device's page-cache folio at `pos`, or a short-lived folio nobody else sees,
    /// referenced until the queue's I/O is done. Else it is a folio of another page cache that
    /// its locker keeps locked until the queue's bios are done.
    unsafe fn add(
        &mut self,
        f: *mut bindings::folio,
        off: usize,
        size: usize,
        pos: u64,
        owned: bool,
    ) {
        let dev = self.dev_end;
        let mut len = size;
        if pos.saturating_add(size as u64) > dev {
            // Whole sectors of a device. A file is read a whole folio, as the C driver reads
            // whole pages (a direct read of a length off the file's block size would fail);
            // the read stops at the file's end, and its completion zeroes the rest.
            len = if pos >= dev {
                0
            } else {
                match self.target {
                    // CAST: less than `size` here.
                    Target::Bdev(_) => {
                        (dev - pos).next_multiple_of(bindings::SECTOR_SIZE.into()) as usize
                    }
                    Target::File { .. } => size,
                }
            };
        }
        if len == 0 {
            // Wholly past the device's end: we never ask for that; fail it as I/O would.
            if owned {
                // SAFETY: ours to unlock (the contract).
                unsafe { bindings::folio_unlock(f) };
            }
            self.fail(EIO);
            return;
        }
        if len < size {
            // SAFETY: we hold the folio locked; `off + len..off + size` is inside it (contract).
            // OVERFLOW: as that.
            unsafe { ffi::erofs_rs_glue_folio_zero_segment(f, off + len, off + size) };
        }
        if let Some(bio) = self.bio.as_mut() {
            // SAFETY: the folio follows the bio's last byte when `next_pos == pos`.
            if self.next_pos != pos || !unsafe { bio.add_folio(f, off, len) } {
                self.submit();
            }
        }
        if self.bio.is_none() {
            // SAFETY: the device lives with the superblock, beyond the I/O (type invariant: the
            // queue holds the superblock until its last bio completed), and a file read takes a
            // reference of its own to the file; `pos` is below its size (`len > 0`), so within
            // `loff_t`; the folio as above, of our managed cache or short-lived; the completion
            // takes the bio and finds this queue, which `pending` keeps alive.
            let bio = unsafe {
                match self.target {
                    Target::Bdev(bdev) => ReadBio::new(
                        bdev,
                        pos,
                        f,
                        off,
                        len,
                        queue_endio::<W>,
                        self.q.cast(),
                        self.rahead,
                    ),
                    // (Only owned folios, read whole: `lend` refuses a file.)
                    Target::File { file, direct } => ReadBio::new_file(
                        file,
                        direct,
                        pos,
                        f,
                        len,
                        queue_endio::<W>,
                        self.q.cast(),
                    ),
                }
            };
            match bio {
                Ok(bio) => self.bio = Some(bio),
                Err(e) => {
                    if owned {
                        // SAFETY: not in a bio: still ours to unlock.
                        unsafe { bindings::folio_unlock(f) };
                    }
                    self.fail(e);
                    return;
                }
            }
        }
        self.next_pos = pos + len as u64;
        if len < size {
            // The device ends here: nothing can follow.
            self.submit();
        }
    }

    /// Ends submission and hands `work` over: it runs now, here, if no I/O is pending or the
    /// queue is sync (after waiting for it); else in a worker after the last bio.
    pub(crate) fn commit(mut self, work: KBox<W>) -> Committed {
        *self.state().req.lock() = Some(work);
        self.finish()
    }

    /// Submits what is left and gives up the submitter's count.
    fn finish(&mut self) -> Committed {
        self.submit();
        let q = core::mem::replace(&mut self.q, core::ptr::null_mut());
        if q.is_null() {
            return Committed::Ran(Ok(()));
        }
        let pins = self.pins.take();
        let lent = self.lent.take();
        // SAFETY: we still hold our count (type invariant).
        // (What is replaced is `None`: nothing to free under the lock.)
        *unsafe { &*q }.pins.lock() = pins;
        // SAFETY: as above.
        *unsafe { &*q }.lent.lock() = lent;
        // SAFETY: we still hold our count (type invariant).
        let (sync, last) = unsafe {
            (
                (*q).sync.load(Ordering::Relaxed),
                (*q).pending.fetch_sub(1, Ordering::AcqRel) == 1,
            )
        };
        if !last {
            if !sync {
                // The last bio hands it to a worker, which may already be running and freeing
                // it: `q` must not be touched again.
                return Committed::Queued;
            }
            // SAFETY: a sync queue is not freed by its bios: the last one completes `done`.
            unsafe { bindings::wait_for_completion_io((*q).done.get()) };
        }
        // SAFETY: no I/O is pending and no worker has it: it is ours.
        Committed::Ran(unsafe { QueueState::from_raw(q) }.run_now(Placement::Inline))
    }
}

impl<W: ZWork> Drop for ZQueue<'_, W> {
    fn drop(&mut self) {
        // An uncommitted queue with no work (an error while submitting): wait for its bios
        // here and free it, as a sync queue. A committed one left `q` null.
        if !self.q.is_null() {
            // ORDERING: published by `finish`'s AcqRel decrement of `pending`.
            self.state().sync.store(true, Ordering::Relaxed);
        }
        let _ = self.finish();
    }
}

/// The decompression queues of a superblock that are alive, from [`ZQueue::new`] until each has
/// run its work and is freed; the superblock's kill path waits for them ([`Inflight::drain`])
/// before it closes the devices their bios read and frees what their work ends. The mounted
/// superblock keeps the module loaded until then; what a worker runs of it after the count is
/// given back, module exit waits for (it destroys the workqueue and the kthread workers).
///
/// (The C driver has no such count: there, the locked folios of the read keep umount waiting,
/// as its inode eviction waits for them. Here a [`ZWork`] need hold none, and a queue's bios
/// may read only into short-lived folios and those of the managed cache.)
///
/// # Invariants
///
/// `count` is the number of live [`Hold`]s on this value, plus one while `held` is true. Once
/// it is zero it stays zero (no hold is taken from zero), and `drained` is completed.
#[pin_data]
pub(super) struct Inflight {
    /// The live holds, and the superblock's own count.
    count: AtomicUsize,
    /// The superblock's own count, given up by its drain.
    held: AtomicBool,
    /// Completed when `count` reaches zero.
    #[pin]
    drained: Completion,
    /// The memory of the last queue freed, for the next one.
    spare: SpareQueue,
}

/// The memory of a freed queue of a superblock, kept for its next queue: a queue's box was a
/// `kmalloc` and a `kfree` per read (about 200 instructions of a cold random 4 KiB read of an
/// LZ4 image), where the C driver keeps a sync read's queue on the stack.
///
/// # Invariants
///
/// `ptr` is null or a `Kmalloc` allocation that this value owns, holding no value, of the
/// size and alignment of the [`Layout`] written at its start.
struct SpareQueue {
    ptr: AtomicPtr<Layout>,
}

impl SpareQueue {
    /// Nothing kept.
    fn new() -> Self {
        // INVARIANT: null.
        SpareQueue {
            ptr: AtomicPtr::new(core::ptr::null_mut()),
        }
    }

    /// The memory kept, for a `T`, if it has `T`'s layout (else it is freed).
    fn take<T>(&self) -> Option<KBox<MaybeUninit<T>>> {
        // ORDERING: pairs with the `Release` of `keep`: the layout written there is seen.
        let p = self.ptr.swap(core::ptr::null_mut(), Ordering::Acquire);
        if p.is_null() {
            return None;
        }
        // SAFETY: the allocation is ours now (type invariant), and starts with its layout.
        let layout = unsafe { p.read() };
        if layout != Layout::new::<T>() {
            // SAFETY: a `Kmalloc` allocation we own, holding no value (type invariant).
            unsafe { bindings::kfree(p.cast()) };
            return None;
        }
        // SAFETY: a `Kmalloc` allocation of `T`'s layout that we own: the box of a `T` not
        // initialised.
        Some(unsafe { KBox::from_raw(p.cast::<MaybeUninit<T>>()) })
    }

    /// Keeps `mem` (or frees it if memory is kept already: the one kept before goes).
    ///
    /// # Safety
    ///
    /// `mem` is the allocation of a `KBox<T>` whose value was dropped, and the caller's.
    unsafe fn keep<T>(&self, mem: *mut T) {
        const {
            assert!(
                size_of::<T>() >= size_of::<Layout>() && align_of::<T>() >= align_of::<Layout>()
            )
        };
        let p = mem.cast::<Layout>();
        // SAFETY: `mem` is ours, with room for a `Layout` at its start, aligned for it (above).
        unsafe { p.write(Layout::new::<T>()) };
        // INVARIANT: a `Kmalloc` allocation of `T`'s layout (a `KBox<T>`'s), holding no value.
        // ORDERING: `Release`: `take` sees the layout; `Acquire`: the one replaced is whole.
        let old = self.ptr.swap(p, Ordering::AcqRel);
        if !old.is_null() {
            // SAFETY: the allocation kept before, now ours (type invariant).
            unsafe { bindings::kfree(old.cast()) };
        }
    }
}

impl Drop for SpareQueue {
    fn drop(&mut self) {
        let p = *self.ptr.get_mut();
        if !p.is_null() {
            // SAFETY: a `Kmalloc` allocation we own, holding no value (type invariant).
            unsafe { bindings::kfree(p.cast()) };
        }
    }
}

impl Inflight {
    /// No queue yet; the superblock's own count.
    pub(super) fn new() -> impl PinInit<Self> {
        // INVARIANT: no hold; `held`, counted.
        pin_init!(Inflight {
            count: AtomicUsize::new(1),
            held: AtomicBool::new(true),
            drained <- Completion::new(),
            spare: SpareQueue::new(),
        })
    }

    /// Counts one queue more, unless the count was drained (`refcount_inc_not_zero`).
    fn get(&self) -> bool {
        // ORDERING: taking a count orders nothing; giving one back does (`put`).
        let mut c = self.count.load(Ordering::Relaxed);
        loop {
            // (More queues than `usize` counts cannot be allocated; refused all the same.)
            let Some(n) = c.checked_add(1) else {
                return false;
            };
            if c == 0 {
                return false;
            }
            match self
                .count
                .compare_exchange_weak(c, n, Ordering::Relaxed, Ordering::Relaxed)
            {
                Ok(_) => return true,
                Err(now) => c = now,
            }
        }
    }

    /// Gives a count back; the last one completes `drained`.
    ///
    /// # Safety
    ///
    /// The caller holds a count, which it gives up.
    unsafe fn put(&self) {
        // ORDERING: AcqRel: what each holder did before giving its count back happens before
        // the last decrement, which the drain's wait then synchronises with.
        if self.count.fetch_sub(1, Ordering::AcqRel) == 1 {
            self.drained.complete_all();
        }
    }

    /// Gives up the superblock's own count (the first call), then waits until no queue is left,
    /// and makes [`ZQueue::new`] fail from then on: for the superblock's kill path, before its
    /// devices close. Called with one of those queues alive in the caller, it waits forever.
    pub(super) fn drain(&self) {
        // ORDERING: the swap only makes sure the count is given up once.
        if self.held.swap(false, Ordering::AcqRel) {
            // SAFETY: `held` was true: the superblock's count, given up once, here.
            unsafe { self.put() };
        }
        self.drained.wait_for_completion();
    }
}

/// A queue's count in its superblock's [`Inflight`]; given back when dropped.
///
/// # Invariants
///
/// This value holds one count of `self.0`.
struct Hold(Arc<Inflight>);

impl Hold {
    /// Counts a queue of the superblock whose count of queues is `inflight`; `EIO` if its
    /// queues were drained (it is being killed).
    fn new(inflight: &Arc<Inflight>) -> Result<Self> {
        if !inflight.get() {
            return Err(EIO);
        }
        // INVARIANT: the count just taken.
        Ok(Hold(inflight.clone()))
    }
}

impl Drop for Hold {
    fn drop(&mut self) {
        // SAFETY: ours (type invariant), given up once. The count, and with it `drained`,
        // lives until our reference goes, after this.
        unsafe { self.0.put() };
    }
}

#[kunit_tests(erofs_rs_zq)]
mod queue_tests {
    use super::*;
    use kernel::time::{
        delay::fsleep,
        Delta, //
    };

    /// Set by [`Late`] just before it gives its count back.
    static LATE_DONE: AtomicBool = AtomicBool::new(false);

    /// A queue's count, given back from a worker a while after the drain started: a queue
    /// whose work holds no folio, which nothing but its count ties to the superblock.
    #[pin_data]
    struct Late {
        #[pin]
        work: Work<Late>,
        hold: Hold,
    }

    impl_has_work! {
        impl HasWork<Self> for Late { self.work }
    }

    impl WorkItem for Late {
        type Pointer = Pin<KBox<Self>>;

        fn run(this: Pin<KBox<Self>>) {
            fsleep(Delta::from_millis(50));
            LATE_DONE.store(true, Ordering::Relaxed);
            drop(this);
        }
    }

    /// The drain waits for a hold given back later in a worker, then no hold can be taken,
    /// and a second drain returns at once with the count still zero.
    #[test]
    fn drain_waits_for_queues() -> Result {
        LATE_DONE.store(false, Ordering::Relaxed);
        let inflight = Arc::pin_init(Inflight::new(), GFP_KERNEL)?;
        // Two holds, one given back at once.
        drop(Hold::new(&inflight)?);
        let hold = Hold::new(&inflight)?;
        let late = KBox::pin_init(
            pin_init!(Late {
                work <- new_work!("erofs_rs_kunit_late"),
                hold,
            }),
            GFP_KERNEL,
        )?;
        let q = OwnedQueue::new_percpu_highpri(c"erofs_rs_kunit_zq")?;
        q.enqueue(late);
        inflight.drain();
        // ORDERING: the drain synchronised with the hold's release, after the store.
        let waited = LATE_DONE.load(Ordering::Relaxed);
        let refused = Hold::new(&inflight).err();
        inflight.drain();
        let count = inflight.count.load(Ordering::Relaxed);
        drop(q);
        assert!(waited);
        assert_eq!(refused, Some(EIO));
        assert_eq!(count, 0);
        Ok(())
    }
}
