// SPDX-License-Identifier: GPL-2.0-only
//! Module-wide shared state that its owner publishes for a while: a `static` [`GlobalArc`]
//! that holds an [`Arc`] while a [`Published`] lives, and lends clones of it. C counterpart: a
//! global pointer under a spinlock, set at module init and cleared at exit (as
//! fs/erofs/decompressor.c's `z_erofs_*_mod` pools).
//!
//! Locking: every [`GlobalArc`] of the module is guarded by one spinlock, [`SLOTS`], held only
//! to copy, set or clear a pointer; nothing is freed under it, and nothing else is locked
//! inside it.

use core::{
    cell::UnsafeCell,
    sync::atomic::{
        AtomicU8,
        Ordering, //
    },
};
use kernel::{
    prelude::*,
    sync::{
        global_lock,
        lock::GlobalGuard,
        Arc, //
    },
};

global_lock! {
    // SAFETY: `slots` initialises it once (`SLOTS_STATE`), and nothing locks it before
    // `SLOTS_STATE` says so.
    unsafe(uninit) static SLOTS: SpinLock<()> = ();
}

/// [`SLOTS`] is not initialised yet.
const UNINIT: u8 = 0;
/// [`SLOTS`] is being initialised.
const INITIALISING: u8 = 1;
/// [`SLOTS`] is initialised and may be locked.
const READY: u8 = 2;
/// Where [`SLOTS`] is in its initialisation.
static SLOTS_STATE: AtomicU8 = AtomicU8::new(UNINIT);

/// Locks [`SLOTS`] if it is initialised; with `init`, initialises it first if nobody has.
/// `None` if it is not initialised (or, with `init`, another thread is initialising it).
fn slots(init: bool) -> Option<GlobalGuard<SLOTS>> {
    // ORDERING: pairs with the release below: the lock is initialised.
    match SLOTS_STATE.load(Ordering::Acquire) {
        READY => return Some(SLOTS.lock()),
        UNINIT if init => {}
        _ => return None,
    }
    // ORDERING: acquire pairs with the release below, for a thread that lost the race.
    match SLOTS_STATE.compare_exchange(UNINIT, INITIALISING, Ordering::Acquire, Ordering::Acquire) {
        Ok(_) => {
            // SAFETY: only the one caller that moved the state away from `UNINIT` gets here,
            // and nothing locks `SLOTS` before the state is `READY`, below.
            unsafe { SLOTS.init() };
            // ORDERING: publishes the initialised lock to later callers.
            SLOTS_STATE.store(READY, Ordering::Release);
            Some(SLOTS.lock())
        }
        Err(READY) => Some(SLOTS.lock()),
        Err(_) => None,
    }
}

/// A module-wide slot for an `Arc<T>`, empty until a [`Published`] puts one in, and empty
/// again once it is dropped.
///
/// # Invariants
///
/// `value` is only accessed with [`SLOTS`] locked.
pub(crate) struct GlobalArc<T> {
    value: UnsafeCell<Option<Arc<T>>>,
}

// SAFETY: the `Arc<T>` inside is only reached under `SLOTS` (type invariant), and threads get
// clones of it, so `T` is shared and dropped across threads: sound when `T: Send + Sync`.
unsafe impl<T: Send + Sync> Sync for GlobalArc<T> {}

impl<T: Send + Sync> GlobalArc<T> {
    /// An empty slot, for a `static`.
    pub(crate) const fn new() -> Self {
        // INVARIANT: nothing has access to the value yet.
        GlobalArc {
            value: UnsafeCell::new(None),
        }
    }

    /// A reference to the published value, if any.
    pub(crate) fn get(&'static self) -> Option<Arc<T>> {
        let _g = slots(false)?;
        // SAFETY: `SLOTS` is locked (`_g`), so no other reference to `value` exists (type
        // invariant).
        unsafe { (*self.value.get()).clone() }
    }

    /// Publishes `value` in the slot until the [`Published`] returned is dropped.
    ///
    /// # Errors
    ///
    /// `EBUSY` if the slot holds a value already (or another thread is setting up the first
    /// slot of the module at the same time); `value` is then dropped.
    pub(crate) fn publish(&'static self, value: Arc<T>) -> Result<Published<T>> {
        let Some(_g) = slots(true) else {
            drop(value);
            return Err(EBUSY);
        };
        // SAFETY: `SLOTS` is locked (`_g`), so no other reference to `value` exists (type
        // invariant).
        let slot = unsafe { &mut *self.value.get() };
        if slot.is_some() {
            // The guard goes first, then `value`.
            drop(_g);
            drop(value);
            return Err(EBUSY);
        }
        *slot = Some(value);
        Ok(Published { slot: self })
    }
}

/// The value of a [`GlobalArc`], published while this lives; dropping it empties the slot
/// (the value is freed once no clone of it is left).
///
/// # Invariants
///
/// While it lives, `slot` holds the value this published (only its `Drop` empties it), and
/// [`SLOTS`] is initialised.
pub(crate) struct Published<T: Send + Sync + 'static> {
    slot: &'static GlobalArc<T>,
}

impl<T: Send + Sync + 'static> Drop for Published<T> {
    fn drop(&mut self) {
        let value = {
            let Some(_g) = slots(false) else {
                // Cannot happen: `SLOTS` is initialised (type invariant).
                return;
            };
            // SAFETY: `SLOTS` is locked (`_g`), so no other reference to `value` exists
            // (type invariant of `GlobalArc`).
            unsafe { (*self.slot.value.get()).take() }
        };
        // Freed outside the spinlock.
        drop(value);
    }
}
