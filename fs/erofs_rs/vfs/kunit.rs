// SPDX-License-Identifier: GPL-2.0-only
//! KUnit tests of the `vfs/` abstractions that cargo cannot reach: they need a kernel. They
//! run when the module loads on a kernel with KUnit (`CONFIG_KUNIT`), and
//! `tests/qemu/guest-tests.sh` checks their results in the log. The tests of the per-CPU
//! workers and of the decoder pools sit beside those (in `zdata.rs`, `decompressor.rs`).

#[kernel::macros::kunit_tests(erofs_rs_vfs)]
mod tests {
    use super::super::{
        kthread::{
            KthreadWork,
            KthreadWorker, //
        },
        workqueue::OwnedQueue,
    };
    use core::sync::atomic::{
        AtomicU32,
        Ordering, //
    };
    use kernel::{
        bindings, new_work,
        prelude::*,
        workqueue::{
            impl_has_work,
            Work,
            WorkItem, //
        },
    };

    /// How many times the items of [`queued_items_run_once`] ran.
    static WQ_RUNS: AtomicU32 = AtomicU32::new(0);

    #[pin_data]
    struct Item {
        #[pin]
        work: Work<Item>,
    }

    impl_has_work! {
        impl HasWork<Self> for Item { self.work }
    }

    impl WorkItem for Item {
        type Pointer = Pin<KBox<Self>>;

        fn run(_this: Pin<KBox<Self>>) {
            WQ_RUNS.fetch_add(1, Ordering::Relaxed);
        }
    }

    /// Every item queued on the owned workqueue runs exactly once, before the queue is gone.
    #[test]
    fn queued_items_run_once() -> Result {
        WQ_RUNS.store(0, Ordering::Relaxed);
        let q = OwnedQueue::new_percpu_highpri(c"erofs_rs_kunit")?;
        for _ in 0..64 {
            q.enqueue(KBox::pin_init(
                pin_init!(Item { work <- new_work!("erofs_rs_kunit_item") }),
                GFP_KERNEL,
            )?);
        }
        // Destroying the queue drains it.
        drop(q);
        assert_eq!(WQ_RUNS.load(Ordering::Relaxed), 64);
        Ok(())
    }

    /// How many times the items of [`kthread_items_run_once`] ran.
    static KT_RUNS: AtomicU32 = AtomicU32::new(0);

    #[repr(C)]
    #[pin_data]
    struct KItem {
        #[pin]
        kwork: KthreadWork,
    }

    /// # Safety
    ///
    /// `w` is the work of a `KItem` leaked by [`kthread_items_run_once`], run once.
    unsafe extern "C" fn kitem_run(w: *mut bindings::kthread_work) {
        // SAFETY: `kwork` is the first field of a `#[repr(C)]` `KItem` leaked from a box, whose
        // ownership passes to this run.
        drop(unsafe { KBox::from_raw(w.cast::<KItem>()) });
        KT_RUNS.fetch_add(1, Ordering::Relaxed);
    }

    /// Every item queued on a kthread worker runs exactly once, before the worker is gone.
    #[test]
    fn kthread_items_run_once() -> Result {
        KT_RUNS.store(0, Ordering::Relaxed);
        let w = KthreadWorker::run_on_cpu(0)?.into_raw();
        for _ in 0..64 {
            let item = KBox::pin_init(
                pin_init!(KItem { kwork <- KthreadWork::new(kitem_run) }),
                GFP_KERNEL,
            )?;
            // SAFETY: the box stays pinned: `kitem_run` takes it back.
            let raw = KBox::into_raw(unsafe { Pin::into_inner_unchecked(item) });
            // SAFETY: `w` is live until taken back below; the item lives until it ran.
            unsafe { bindings::kthread_queue_work(w, (*raw).kwork.raw()) };
        }
        // SAFETY: `w` came from `into_raw` above; destroying it flushes what is queued.
        drop(unsafe { KthreadWorker::from_raw(w) });
        assert_eq!(KT_RUNS.load(Ordering::Relaxed), 64);
        Ok(())
    }
}
