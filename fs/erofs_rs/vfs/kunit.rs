// SPDX-License-Identifier: GPL-2.0-only
//! KUnit tests of the `vfs/` abstractions that cargo cannot reach: they need a kernel. They
//! run when the module loads on a kernel with KUnit (`CONFIG_KUNIT`), and
//! `tests/qemu/guest-tests.sh` checks their results in the log. The tests of the per-CPU
//! workers and of the read queues sit beside those (in `workers.rs`, `queue.rs`).

#[kernel::macros::kunit_tests(erofs_rs_vfs)]
mod tests {
    use super::super::{
        acomp::{
            Requests,
            Transform, //
        },
        ffi,
        fs::{
            self,
            AddressSpace,
            ReadTarget, //
        },
        kthread::{
            KthreadWork,
            KthreadWorker, //
        },
        pagecache::{
            OutFolio,
            Parts,
            Readahead, //
        },
        workqueue::OwnedQueue,
        FillFolio,
        LockedFolio, //
    };
    use core::sync::atomic::{
        AtomicU32,
        Ordering, //
    };
    use kernel::{
        bindings, new_work,
        page::PAGE_SIZE,
        prelude::*,
        sync::Arc,
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
        let w = KthreadWorker::run_on_cpu(0, c"erofs_rs_kunit")?.into_raw();
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

    /// An order-0 folio for the tests, with one reference of ours.
    ///
    /// # Invariants
    ///
    /// `0` is a live folio on which this value owns one reference.
    struct TestFolio(*mut bindings::folio);

    impl TestFolio {
        /// A new folio, or `ENOMEM`.
        fn new() -> Result<Self> {
            // SAFETY: no preconditions.
            let f = unsafe { ffi::erofs_rs_glue_bounce_alloc() };
            // INVARIANT: a fresh folio with the one reference the allocation gave us.
            (!f.is_null()).then_some(TestFolio(f)).ok_or(ENOMEM)
        }

        /// Calls `f` with the folio's first page, writable.
        fn with_page<R>(&mut self, f: impl FnOnce(&mut [u8]) -> R) -> R {
            // SAFETY: offset 0 is a page boundary of the live folio.
            let addr = unsafe { ffi::erofs_rs_glue_kmap_local_folio(self.0, 0) };
            // SAFETY: `addr` maps the folio's first page, which nobody else uses: the folio is
            // private to the test, and no request of it is in flight while `&mut self` is.
            let page = unsafe { core::slice::from_raw_parts_mut(addr.cast::<u8>(), PAGE_SIZE) };
            let r = f(page);
            // SAFETY: unmaps the mapping made above, once.
            unsafe { bindings::kunmap_local(addr) };
            r
        }

        /// Locks the folio, as a read's, and hands its unlocking to an [`OutFolio`].
        fn out(&self) -> OutFolio {
            // SAFETY: a live folio (type invariant), which nobody else locks.
            unsafe { bindings::__folio_lock(self.0) };
            // SAFETY: a locked, not uptodate folio (fresh, and each test locks it once), whose
            // unlocking passes to the value. It is in no page cache, which only the value's
            // `real_inode` and `cache` need, and the tests call neither.
            unsafe { OutFolio::from_raw(self.0) }
        }

        /// Whether the folio is locked, and whether it is uptodate.
        fn state(&self) -> (bool, bool) {
            // SAFETY: a live folio (type invariant); its flags word, read once.
            let flags = unsafe {
                core::ptr::read_volatile(
                    &raw const (*self.0).__bindgen_anon_1.__bindgen_anon_1.flags.f,
                )
            };
            // SAFETY: a live folio.
            let uptodate = unsafe { ffi::erofs_rs_glue_folio_test_uptodate(self.0) };
            (flags & (1 << bindings::pageflags_PG_locked) != 0, uptodate)
        }

        /// The folio's reference count.
        fn refs(&self) -> i32 {
            // SAFETY: a live folio (type invariant); `_refcount` is an `atomic_t`, read once.
            unsafe {
                core::ptr::read_volatile(
                    &raw const (*self.0)
                        .__bindgen_anon_1
                        .__bindgen_anon_1
                        ._refcount
                        .counter,
                )
            }
        }
    }

    impl Drop for TestFolio {
        fn drop(&mut self) {
            // SAFETY: our reference (type invariant), dropped once.
            unsafe { ffi::erofs_rs_glue_folio_put(self.0) };
        }
    }

    /// A [`Requests`] dropped after the user of one of its slots was forgotten while its
    /// request may be in flight (the `mem::forget` of a `Decompression`) waits for the request,
    /// and only then gives back the references that keep the request's folios alive
    /// (vfs/acomp.rs module doc).
    #[test]
    fn acomp_requests_outlive_forgotten_request() -> Result {
        const N: usize = 100;
        let tfm = match Transform::new(c"deflate") {
            Ok(t) => Arc::new(t, GFP_KERNEL)?,
            // Without a deflate driver there is nothing to offload to, nor to test.
            Err(_) => return Ok(()),
        };
        let requests = KBox::pin_init(Requests::new(tfm), GFP_KERNEL)?;
        let (mut src, mut dst) = (TestFolio::new()?, TestFolio::new()?);
        // A raw DEFLATE stream of one final stored block: BFINAL=1, BTYPE=00, LEN, NLEN, data.
        // CAST: `N` and the indices below are small; a byte pattern of them is the point.
        src.with_page(|p| {
            p[..5].copy_from_slice(&[0x01, N as u8, 0, !(N as u8), 0xff]);
            for (i, b) in p[5..5 + N].iter_mut().enumerate() {
                *b = i as u8 ^ 0x5a;
            }
        });
        dst.with_page(|p| p.fill(0));
        let (src_refs, dst_refs) = (src.refs(), dst.refs());
        let mut slot = requests.get().ok_or(EBUSY)?;
        // SAFETY: both folios are ours, referenced, during the call; the test touches them
        // again only after `drop(requests)` waited for the request.
        // CAST: small constants.
        let started = unsafe {
            slot.decompress(
                core::iter::once(src.0),
                0,
                (5 + N) as u32,
                core::iter::once(dst.0),
                0,
                N as u32,
            )
        };
        // The request holds its own references until it is waited for.
        let held = (src.refs(), dst.refs());
        core::mem::forget(slot);
        // Waits for the request, then frees its buffers and references.
        drop(requests);
        let after = (src.refs(), dst.refs());
        let out_ok =
            dst.with_page(|p| p[..N].iter().enumerate().all(|(i, &b)| b == i as u8 ^ 0x5a));
        assert!(started.is_ok());
        assert_eq!(held, (src_refs + 1, dst_refs + 1));
        assert_eq!(after, (src_refs, dst_refs));
        assert!(out_ok);
        Ok(())
    }

    /// The folio the last [`TestAops`] `read_folio` got, and which of the two ran (1 or 2).
    static AOPS_SEEN: AtomicU32 = AtomicU32::new(0);

    /// A folio handed to a test address space: it unlocks it when dropped, as a folio of
    /// `read_folio` must be (the tests lock folios of their own, outside any page cache).
    struct Seen(*mut bindings::folio);

    // SAFETY: a `Seen` touches the folio only to unlock it, once, on drop; it needs no page
    // cache (the tests below call the trampolines with locked folios of their own, which the
    // trampolines hand to this function and nothing else).
    unsafe impl ReadTarget for Seen {
        unsafe fn from_locked(folio: *mut bindings::folio) -> Self {
            Seen(folio)
        }
    }

    impl Drop for Seen {
        fn drop(&mut self) {
            // SAFETY: a locked folio whose unlocking passed to this value (`from_locked`).
            unsafe { bindings::folio_unlock(self.0) };
        }
    }

    /// Two address spaces whose tables must call their own `read_folio`.
    struct TestAops<const N: u32>;

    impl<const N: u32> AddressSpace for TestAops<N> {
        type Folio<'a> = Seen;

        fn read_folio(_folio: Seen) -> Result {
            AOPS_SEEN.store(N, Ordering::Relaxed);
            if N == 2 {
                return Err(EIO);
            }
            Ok(())
        }

        fn readahead(_rac: Readahead<'_>) {}
    }

    /// A table built from an [`AddressSpace`] calls that type's `read_folio`, which gets the
    /// folio (and unlocks it), and turns its result into an errno; two types get two tables.
    #[test]
    fn aops_table_calls_its_own_type() -> Result {
        let (one, two) = (fs::aops::<TestAops<1>>(), fs::aops::<TestAops<2>>());
        assert!(!core::ptr::eq(one, two));
        // The same table each time it is asked for.
        assert!(core::ptr::eq(one, fs::aops::<TestAops<1>>()));
        let f = TestFolio::new()?;
        let (r1, r2) = (one.read_folio.ok_or(EINVAL)?, two.read_folio.ok_or(EINVAL)?);
        // SAFETY: a fresh folio only this test knows of.
        assert!(unsafe { ffi::erofs_rs_glue_folio_trylock(f.0) });
        // SAFETY: locked above and not uptodate; the trampoline's contract asks for a
        // page-cache folio only for `A::Folio`'s sake, and `Seen` needs none: it only unlocks.
        let ret = unsafe { r1(core::ptr::null_mut(), f.0) };
        // SAFETY: a live folio.
        let unlocked = !unsafe { ffi::erofs_rs_glue_folio_test_locked(f.0) };
        assert_eq!(
            (ret, AOPS_SEEN.load(Ordering::Relaxed), unlocked),
            (0, 1, true)
        );
        // SAFETY: as above.
        assert!(unsafe { ffi::erofs_rs_glue_folio_trylock(f.0) });
        // SAFETY: as above.
        let ret = unsafe { r2(core::ptr::null_mut(), f.0) };
        // SAFETY: as above.
        let unlocked = !unsafe { ffi::erofs_rs_glue_folio_test_locked(f.0) };
        assert_eq!(
            (ret, AOPS_SEEN.load(Ordering::Relaxed), unlocked),
            (EIO.to_errno(), 2, true)
        );
        assert!(one.readahead.is_some() && one.bmap.is_none());
        Ok(())
    }

    /// A folio split into parts ends once all have ended, uptodate only if none failed; parts
    /// side by side of one folio merge back into the whole folio, which then ends it alone;
    /// a count serves one folio only, and parts of two folios, or not side by side, do not
    /// merge.
    #[test]
    fn out_folio_parts_split_and_merge() -> Result {
        let (a, b) = (TestFolio::new()?, TestFolio::new()?);
        let (mut fa, mut fb) = (a.out(), b.out());
        let size = fa.size();
        let mut spare = Some(Parts::new(GFP_KERNEL)?);
        // `fa` keeps 1024.., `p1` writes ..1024.
        let mut p1 = fa.split_off(0, 1024, &mut spare)?;
        let spent = spare.is_none();
        // The count went to `fa`: `fb` needs its own.
        let refused = fb.split_off(0, 1024, &mut spare).err();
        let mut spare_b = Some(Parts::new(GFP_KERNEL)?);
        let pb = fb.split_off(0, 1024, &mut spare_b)?;
        // A middle range is refused; `p2` writes 1024..2048, `fa` keeps 2048...
        let middle = fa.split_off(3000, 3100, &mut None).err();
        let p2 = fa.split_off(1024, 2048, &mut None)?;
        let writes = (
            p1.write(0, &[7; 16]).is_ok(),
            p1.write(1020, &[7; 8]).is_err(),
        );
        let ranges = (p1.range(), p2.range(), fa.range());
        // Parts of two folios, and parts not side by side, do not merge.
        let pb = p1.merge(pb).err();
        let fa = p1.merge(fa).err();
        let (Some(pb), Some(fa)) = (pb, fa) else {
            return Err(EINVAL);
        };
        let first = p1.merge(p2).is_ok();
        let joined = (p1.is_part(), p1.range());
        let second = p1.merge(fa).is_ok();
        let whole = (p1.is_part(), p1.range());
        let before = a.state();
        p1.end_read(true);
        let after = a.state();
        // `b`: one part fails, the others merge but do not make the whole folio again, and
        // the last to end leaves it not uptodate.
        let pc = fb.split_off(size - 1024, size, &mut None)?;
        drop(pc);
        let mut pb = pb;
        let merged_b = pb.merge(fb).is_ok();
        let b_part = (pb.is_part(), pb.range());
        let b_before = b.state();
        pb.end_read(true);
        let b_after = b.state();
        assert!(spent);
        assert_eq!(refused, Some(ENOMEM));
        assert_eq!(middle, Some(EINVAL));
        assert_eq!(writes, (true, true));
        assert_eq!(ranges, ((0, 1024), (1024, 2048), (2048, size)));
        assert!(first);
        assert_eq!(joined, (true, (0, 2048)));
        assert!(second);
        assert_eq!(whole, (false, (0, size)));
        assert_eq!(before, (true, false));
        assert_eq!(after, (false, true));
        assert!(merged_b);
        assert_eq!(b_part, (true, (0, size - 1024)));
        assert_eq!(b_before, (true, false));
        assert_eq!(b_after, (false, false));
        Ok(())
    }

    /// Locks a fresh folio of the tests and hands its unlocking to a [`LockedFolio`], which
    /// borrows `f` (so the folio outlives it).
    fn lock(f: &TestFolio) -> Result<LockedFolio<'_>> {
        // SAFETY: a live folio (type invariant) that only this test knows of.
        if !unsafe { ffi::erofs_rs_glue_folio_trylock(f.0) } {
            return Err(EBUSY);
        }
        // SAFETY: a folio outside any page cache, locked just above and not uptodate (fresh
        // from the allocator), whose unlocking passes to the value; `f`'s reference keeps it
        // live for as long as the value borrows `f`.
        Ok(unsafe { LockedFolio::from_raw(f.0) })
    }

    /// Whether the folio is (locked, uptodate); unlocks it if it is still locked, so a failed
    /// test does not free a locked folio.
    fn state(f: &TestFolio) -> (bool, bool) {
        // SAFETY: a live folio (type invariant).
        let locked = unsafe { ffi::erofs_rs_glue_folio_test_locked(f.0) };
        // SAFETY: as above.
        let uptodate = unsafe { ffi::erofs_rs_glue_folio_test_uptodate(f.0) };
        if locked {
            // SAFETY: locked by `lock` and not unlocked since (the bug this reports); nothing
            // else holds it.
            unsafe { bindings::folio_unlock(f.0) };
        }
        (locked, uptodate)
    }

    /// Fails with `EIO` when asked to: an early return by `?`.
    fn check(fail: bool) -> Result {
        if fail {
            Err(EIO)
        } else {
            Ok(())
        }
    }

    /// What a `read_folio` does: writes the folio, may fail early with `?`, and ends the read.
    fn fill(mut folio: LockedFolio<'_>, fail: bool) -> Result {
        folio.with_page_mut(0, |p| p.fill(0x5a))?;
        check(fail)?;
        folio.end_read(true);
        Ok(())
    }

    /// A locked folio unlocks on every path: not uptodate when a `?` returns early or its
    /// holder drops it, or when the read ends failed; uptodate when it ends well.
    #[test]
    fn locked_folio_unlocks_on_every_path() -> Result {
        let early = TestFolio::new()?;
        let failed = fill(lock(&early)?, true);
        let early = state(&early);
        let ended = TestFolio::new()?;
        let filled = fill(lock(&ended)?, false);
        let ended = state(&ended);
        let dropped = TestFolio::new()?;
        drop(lock(&dropped)?);
        let dropped = state(&dropped);
        let ended_bad = TestFolio::new()?;
        lock(&ended_bad)?.end_read(false);
        let ended_bad = state(&ended_bad);
        assert_eq!(failed, Err(EIO));
        assert_eq!(early, (false, false));
        assert_eq!(filled, Ok(()));
        assert_eq!(ended, (false, true));
        assert_eq!(dropped, (false, false));
        assert_eq!(ended_bad, (false, false));
        Ok(())
    }

    /// A locked folio lends itself to a device read only within its bytes, and one outside any
    /// page cache has no inode to read with.
    #[test]
    fn locked_folio_dest_stays_inside() -> Result {
        let f = TestFolio::new()?;
        let mut folio = lock(&f)?;
        let whole = folio.dest(0, PAGE_SIZE).map(|p| p == f.0);
        let tail = folio.dest(PAGE_SIZE - 512, 512).is_ok();
        let past = folio.dest(512, PAGE_SIZE);
        let wraps = folio.dest(usize::MAX, 2);
        let no_inode = folio.real_inode::<()>().is_none();
        drop(folio);
        let after = state(&f);
        assert_eq!(whole, Ok(true));
        assert!(tail);
        assert_eq!(past, Err(EINVAL));
        assert_eq!(wraps, Err(EINVAL));
        assert!(no_inode);
        assert_eq!(after, (false, false));
        Ok(())
    }
}
