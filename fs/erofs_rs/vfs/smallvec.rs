// SPDX-License-Identifier: GPL-2.0-only
//! A vector that keeps its first `N` elements in itself, uninitialised until pushed, and moves
//! them to an allocation only when it grows past them. C counterpart: the on-stack arrays of
//! fs/erofs/zdata.c (`onstack_pages` of `z_erofs_decompress_pcluster`), used when a pcluster's
//! pages fit in them.
//!
//! Short per-pcluster arrays (a decoder's output pages, the pages to `vm_map_ram`) were each a
//! `kmalloc` and a `kfree`; arrays of `Option`s on the stack had to be zero-filled first, and were
//! copied whole when returned.
//!
//! Such a vector is large: keep it where it is made (borrow it; moving it copies `N` elements).

use core::mem::MaybeUninit;
use kernel::prelude::*;

/// A vector of at most `N` elements in place, and any number in an allocation.
///
/// # Invariants
///
/// If `heap` holds elements, they are the vector's, `len` is 0 and no element of `inline` is
/// initialised. Else the elements are `inline[..len]`, initialised and owned by this value, and
/// `len <= N`.
pub(crate) struct SmallVec<T, const N: usize> {
    inline: [MaybeUninit<T>; N],
    len: usize,
    /// `None` until the elements first outgrow `inline` (an empty `KVec` costs its drop a
    /// `krealloc` call: see [`release`]).
    heap: Option<KVec<T>>,
}

impl<T, const N: usize> SmallVec<T, N> {
    /// An empty vector: nothing is written.
    pub(crate) fn new() -> Self {
        // INVARIANT: empty; nothing initialised.
        SmallVec {
            inline: [const { MaybeUninit::uninit() }; N],
            len: 0,
            heap: None,
        }
    }

    /// Appends `v`; when the elements no longer fit in place, they move to an allocation
    /// (`ENOMEM` if it cannot be had: then `v` is dropped and nothing else changes).
    #[inline]
    pub(crate) fn push(&mut self, v: T) -> Result {
        if let Some(h) = self.heap.as_mut().filter(|h| !h.is_empty()) {
            return Ok(h.push(v, GFP_KERNEL)?);
        }
        if let Some(slot) = self.inline.get_mut(self.len) {
            slot.write(v);
            // INVARIANT: `inline[len]` was just initialised; `len` stays at most `N` (`inline`
            // had a slot at it).
            // OVERFLOW: below `N`, as `inline` had a slot at `len`.
            self.len += 1;
            return Ok(());
        }
        // Full in place: everything moves to an allocation, the one `clear` left if it has room
        // for them all and `v`, else a new one for twice as many; `v` goes after them there,
        // within its room.
        self.spill(self.len.saturating_add(1), N.saturating_mul(2))?;
        Ok(self.heap.as_mut().ok_or(ENOMEM)?.push(v, GFP_KERNEL)?)
    }

    /// Makes room for `n` more elements: when they would not all fit in place, the elements
    /// move now to an allocation with room for all of them, which the pushes then fill without
    /// growing it (`ENOMEM` if it cannot be had: then no element changes).
    pub(crate) fn reserve(&mut self, n: usize) -> Result {
        if let Some(h) = self.heap.as_mut().filter(|h| !h.is_empty()) {
            return Ok(h.reserve(n, GFP_KERNEL)?);
        }
        let total = self.len.checked_add(n).ok_or(ENOMEM)?;
        if total <= N {
            return Ok(());
        }
        self.spill(total, total)
    }

    /// Moves the elements in place to an allocation with room for `need` elements (more than
    /// `len`): the one `clear` left if it has that room, else a new one for `alloc` (at least
    /// `need`).
    fn spill(&mut self, need: usize, alloc: usize) -> Result {
        let mut heap = match self.heap.take() {
            // (Empty: a `heap` holding elements is used as it is, never spilled into.)
            Some(h) if h.capacity() >= need => h,
            _ => KVec::with_capacity(alloc.max(need), GFP_KERNEL)?,
        };
        for slot in self.inline.iter().take(self.len) {
            // SAFETY: `inline[..len]` are initialised (type invariant); each is read out once,
            // and `len` is cleared below before anything can see them again. The pushes
            // cannot fail: the capacity is at least `need`, above `len`.
            let e = unsafe { slot.assume_init_read() };
            let _ = heap.push_within_capacity(e);
        }
        // INVARIANT: the elements are in `heap` now (or there were none); none of `inline`
        // counts as initialised.
        self.len = 0;
        self.heap = Some(heap);
        Ok(())
    }

    /// The elements.
    pub(crate) fn as_slice(&self) -> &[T] {
        if let Some(h) = self.heap.as_ref().filter(|h| !h.is_empty()) {
            return h;
        }
        // SAFETY: `inline[..len]` are initialised (type invariant), `len <= N`, and
        // `MaybeUninit<T>` has `T`'s layout.
        unsafe { core::slice::from_raw_parts(self.inline.as_ptr().cast::<T>(), self.len) }
    }

    /// The elements, writable.
    pub(crate) fn as_mut_slice(&mut self) -> &mut [T] {
        if let Some(h) = self.heap.as_mut().filter(|h| !h.is_empty()) {
            return h;
        }
        // SAFETY: as in `as_slice`; `&mut self` makes this the only reference to them.
        unsafe { core::slice::from_raw_parts_mut(self.inline.as_mut_ptr().cast::<T>(), self.len) }
    }

    /// Drops the elements; an allocation is kept, for the next time they outgrow the place.
    pub(crate) fn clear(&mut self) {
        let len = core::mem::replace(&mut self.len, 0);
        for slot in self.inline.iter_mut().take(len) {
            // SAFETY: `inline[..len]` were initialised (type invariant), and `len` is 0 now, so
            // none is dropped again.
            unsafe { slot.assume_init_drop() };
        }
        // INVARIANT: `heap` keeps its allocation, if any, but no element, and `len` is 0: empty,
        // with nothing of `inline` initialised.
        if let Some(h) = self.heap.as_mut() {
            h.clear();
        }
    }
}

impl<T, const N: usize> core::ops::Deref for SmallVec<T, N> {
    type Target = [T];

    fn deref(&self) -> &[T] {
        self.as_slice()
    }
}

impl<T, const N: usize> Drop for SmallVec<T, N> {
    fn drop(&mut self) {
        self.clear();
    }
}

/// Drops `v`; a vector that never allocated is forgotten instead, which is the same (it owns no
/// element and no memory) without the kernel's `Vec` drop calling `krealloc(NULL, 0)`: the
/// empty vectors a read leaves behind (its buffers for cases that did not come up, those
/// emptied by `core::mem::take`) cost a cold random read about 15 such calls.
pub(crate) fn release<T, A: kernel::alloc::Allocator>(v: kernel::alloc::Vec<T, A>) {
    if v.capacity() == 0 && core::mem::size_of::<T>() != 0 {
        core::mem::forget(v);
    }
}

#[kernel::macros::kunit_tests(erofs_rs_smallvec)]
mod tests {
    use super::*;
    use core::sync::atomic::{
        AtomicUsize,
        Ordering, //
    };

    /// Elements in place keep their order; past `N` they all move to the allocation, still in
    /// order; `clear` empties it and the next pushes go in place again.
    #[test]
    fn grows_out_of_place_in_order() -> Result {
        let mut v = SmallVec::<u32, 3>::new();
        assert!(v.is_empty());
        for i in 0..3 {
            v.push(i)?;
        }
        assert_eq!(v.as_slice(), &[0, 1, 2]);
        assert!(v.heap.is_none());
        for i in 3..10 {
            v.push(i)?;
        }
        assert_eq!(v.as_slice(), &[0, 1, 2, 3, 4, 5, 6, 7, 8, 9]);
        assert_eq!(v.len, 0);
        v.as_mut_slice()[9] = 90;
        assert_eq!(v.last(), Some(&90));
        v.clear();
        assert!(v.is_empty());
        v.push(7)?;
        assert_eq!(v.as_slice(), &[7]);
        assert_eq!(v.len, 1);
        // Outgrowing the place again moves them into the allocation `clear` kept.
        for i in 8..12 {
            v.push(i)?;
        }
        assert_eq!(v.as_slice(), &[7, 8, 9, 10, 11]);
        assert_eq!(v.heap.as_ref().map(|h| h.capacity() >= 10), Some(true));
        Ok(())
    }

    /// `reserve` leaves a vector that fits in place as it is; past `N` it moves the elements
    /// into one allocation with room for all that the pushes then fill, in order.
    #[test]
    fn reserve_makes_room_at_once() -> Result {
        let mut v = SmallVec::<u32, 4>::new();
        v.push(1)?;
        v.reserve(3)?;
        assert!(v.heap.is_none());
        v.reserve(10)?;
        assert_eq!(v.len, 0);
        let room = v.heap.as_ref().map_or(0, |h| h.capacity());
        assert!(room >= 11);
        for i in 2..12 {
            v.push(i)?;
        }
        assert_eq!(v.as_slice(), &[1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11]);
        assert_eq!(v.heap.as_ref().map(|h| h.capacity()), Some(room));
        // With the elements out of place, `reserve` grows the allocation.
        v.reserve(100)?;
        assert!(v.heap.as_ref().map_or(0, |h| h.capacity()) >= 111);
        assert_eq!(v.len(), 11);
        // A vector of no place at all still works.
        let mut z = SmallVec::<u32, 0>::new();
        z.push(5)?;
        z.push(6)?;
        assert_eq!(z.as_slice(), &[5, 6]);
        Ok(())
    }

    static DROPS: AtomicUsize = AtomicUsize::new(0);

    struct Counted;

    impl Drop for Counted {
        fn drop(&mut self) {
            DROPS.fetch_add(1, Ordering::Relaxed);
        }
    }

    /// Every element is dropped once, in place or moved out: by `clear` and by the vector's
    /// drop.
    #[test]
    fn drops_each_element_once() -> Result {
        let before = DROPS.load(Ordering::Relaxed);
        {
            let mut v = SmallVec::<Counted, 2>::new();
            v.push(Counted)?;
            v.push(Counted)?;
        }
        assert_eq!(DROPS.load(Ordering::Relaxed) - before, 2);
        {
            let mut v = SmallVec::<Counted, 2>::new();
            for _ in 0..5 {
                v.push(Counted)?;
            }
            assert_eq!(DROPS.load(Ordering::Relaxed) - before, 2);
            v.clear();
            assert_eq!(DROPS.load(Ordering::Relaxed) - before, 7);
            v.push(Counted)?;
        }
        assert_eq!(DROPS.load(Ordering::Relaxed) - before, 8);
        Ok(())
    }

    /// `release` drops what it must: the elements of a vector that allocated (kmemleak, in the
    /// debug guest, sees its memory go).
    #[test]
    fn release_drops_elements() -> Result {
        let before = DROPS.load(Ordering::Relaxed);
        let mut v = KVec::new();
        v.push(Counted, GFP_KERNEL)?;
        release(v);
        assert_eq!(DROPS.load(Ordering::Relaxed) - before, 1);
        release(KVec::<Counted>::new());
        assert_eq!(DROPS.load(Ordering::Relaxed) - before, 1);
        Ok(())
    }
}
