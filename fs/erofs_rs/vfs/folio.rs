// SPDX-License-Identifier: GPL-2.0-only
//! Page-cache folios held by reference (`struct folio`): [`Folio`] is always reference
//! counted, so a held folio is an [`ARef<Folio>`] that `folio_put`s on drop, as
//! `rust/kernel/fs/file.rs` does for `struct file`. C counterpart: the `erofs_buf` folio of
//! fs/erofs/data.c.

use super::ffi;
use core::ptr::{
    self,
    NonNull, //
};
use kernel::{
    bindings,
    page::PAGE_SIZE,
    prelude::*,
    sync::aref::{
        ARef,
        AlwaysRefCounted, //
    },
    types::Opaque,
};

/// A folio.
///
/// # Invariants
///
/// Instances are only reached through a reference to a live folio (`&Folio` while someone
/// holds a reference, [`ARef<Folio>`] owning one); the folio is reference counted.
#[repr(transparent)]
pub(crate) struct Folio(Opaque<bindings::folio>);

// SAFETY: the folio's reference count is atomic; `folio_get`/`folio_put` may be called from any
// thread, and the folio is not freed while a reference exists.
unsafe impl AlwaysRefCounted for Folio {
    fn inc_ref(&self) {
        // SAFETY: a shared reference means the refcount is nonzero (type invariant).
        unsafe { ffi::erofs_rs_glue_folio_get(self.as_ptr()) };
    }

    unsafe fn dec_ref(obj: NonNull<Self>) {
        // SAFETY: the caller passes us one reference it owned; `Folio` is transparent over
        // `struct folio`.
        unsafe { ffi::erofs_rs_glue_folio_put(obj.cast().as_ptr()) };
    }
}

// SAFETY: a folio may be referenced and released from any thread (see `AlwaysRefCounted`).
unsafe impl Send for Folio {}
// SAFETY: the methods of `&Folio` only read what the page cache keeps stable under a reference,
// or take the caller's word (`unsafe`) for the contents.
unsafe impl Sync for Folio {}

impl Folio {
    /// The raw pointer.
    pub(crate) fn as_ptr(&self) -> *mut bindings::folio {
        self.0.get()
    }

    /// Borrows the folio at `ptr`.
    ///
    /// # Safety
    ///
    /// `ptr` is a folio that stays live for `'a`: the caller holds a reference to it, or holds
    /// it locked in a page cache (which keeps its own reference while it is there).
    pub(crate) unsafe fn from_ptr<'a>(ptr: *mut bindings::folio) -> &'a Self {
        // SAFETY: `Folio` is transparent over `struct folio`; live for `'a` (contract).
        unsafe { &*ptr.cast::<Self>() }
    }

    /// Takes over a reference to `ptr`.
    ///
    /// # Safety
    ///
    /// `ptr` is a live folio, and the caller owns one reference to it, which passes to the
    /// returned value.
    pub(crate) unsafe fn from_raw(ptr: *mut bindings::folio) -> ARef<Self> {
        // SAFETY: non-null, as a live folio; `Folio` is transparent over `struct folio`; the
        // reference is ours to give (contract).
        unsafe { ARef::from_raw(NonNull::new_unchecked(ptr.cast())) }
    }

    /// Reads page `index` of `mapping` through its `read_folio` (`read_mapping_folio`): the
    /// uptodate folio holding it, referenced. `EINVAL` if the mapping has no `read_folio` (a
    /// special file's `empty_aops`, or a backing file's filesystem without one).
    ///
    /// # Safety
    ///
    /// `mapping` is a live address space, and `file` is null or the open file its `read_folio`
    /// expects.
    pub(crate) unsafe fn read_mapping(
        mapping: *mut bindings::address_space,
        index: u64,
        file: *mut bindings::file,
    ) -> Result<ARef<Self>> {
        let index = usize::try_from(index).map_err(|_| EINVAL)?;
        // `read_cache_folio` without a filler calls `a_ops->read_folio` unchecked.
        // SAFETY: a live mapping (contract) has its operations (`empty_aops` at least), which
        // do not change while it is used.
        if unsafe { (*(*mapping).a_ops).read_folio }.is_none() {
            return Err(EINVAL);
        }
        // SAFETY: `read_mapping_folio` is `read_cache_folio` without a filler; the arguments are
        // valid (contract), and the mapping has a `read_folio` (checked above).
        let f = unsafe { bindings::read_cache_folio(mapping, index, None, file.cast()) };
        let f = kernel::error::from_err_ptr(f)?;
        // SAFETY: `read_cache_folio` returned a referenced folio, now ours.
        Ok(unsafe { Self::from_raw(f) })
    }

    /// Byte position of the folio in its file.
    pub(crate) fn pos(&self) -> u64 {
        // SAFETY: the folio is live (type invariant).
        unsafe { ffi::erofs_rs_glue_folio_pos(self.as_ptr()) }
    }

    /// Size in bytes.
    pub(crate) fn size(&self) -> usize {
        // SAFETY: the folio is live (type invariant).
        unsafe { ffi::erofs_rs_glue_folio_size(self.as_ptr()) }
    }

    /// Whether its contents are valid.
    pub(crate) fn test_uptodate(&self) -> bool {
        // SAFETY: the folio is live (type invariant).
        unsafe { ffi::erofs_rs_glue_folio_test_uptodate(self.as_ptr()) }
    }

    /// The first page of the folio (`folio_page(folio, 0)`).
    pub(crate) fn first_page(&self) -> *mut bindings::page {
        // SAFETY: `struct folio` starts with its head `struct page` (C asserts it with
        // `FOLIO_MATCH`); no memory is read.
        unsafe { ptr::addr_of_mut!((*self.as_ptr()).__bindgen_anon_1.page) }
    }

    /// Copies bytes `off..off + dst.len()` of the folio into `dst`, page by page.
    ///
    /// The copy is the kernel's (`memcpy` as C code gets it, [`copy_piece`]) from the page's
    /// mapping, and no Rust reference to the folio's memory is formed: so this is sound even
    /// while someone writes the folio (another opener of a block device writing its page
    /// cache, or a writer of a backing file), as
    /// `copy_folio_to_iter` of a read(2) racing a write(2) is; `dst` may then get a mix of old
    /// and new bytes, which the caller checks as it checks any image.
    pub(crate) fn copy_to(&self, off: usize, dst: &mut [u8]) -> Result {
        let len = dst.len();
        let to = dst.as_mut_ptr();
        let copy = |done: usize, p: *mut u8, n: usize| {
            // SAFETY: `p` starts `n` readable bytes of a page of the folio mapped for the call,
            // and `to + done` the `n` bytes `dst[done..done + n]` (`for_each_piece` covers
            // `0..len`). They do not overlap (`dst` is ours, the page the cache's). `copy_piece`
            // reads the page outside Rust's memory model, so a concurrent writer makes no Rust
            // reference alias.
            unsafe { copy_piece(to.add(done), p.cast_const(), n) };
        };
        // SAFETY: the folio is live (`&self`), of `self.size()` bytes; `copy` only reads
        // through `p`, outside Rust's memory model (above).
        unsafe { for_each_piece(self.as_ptr(), self.size(), off, len, copy) }
    }

    /// Appends bytes `off..off + len` of the folio to `dst`, as [`Self::copy_to`] copies them,
    /// into `dst`'s room without zeroing it first.
    pub(crate) fn append_to(&self, off: usize, len: usize, dst: &mut KVVec<u8>) -> Result {
        if off.checked_add(len).is_none_or(|end| end > self.size()) {
            return Err(EINVAL);
        }
        dst.reserve(len, GFP_KERNEL)?;
        let room = dst.spare_capacity_mut();
        if room.len() < len {
            return Err(ENOMEM);
        }
        let to = room.as_mut_ptr().cast::<u8>();
        let copy = |done: usize, p: *mut u8, n: usize| {
            // SAFETY: as in `copy_to`, with `to + done` the `n` bytes of `dst`'s room at
            // `done` (`for_each_piece` covers `0..len`, and the room is at least `len` bytes).
            unsafe { copy_piece(to.add(done), p.cast_const(), n) };
        };
        // SAFETY: as in `copy_to`.
        unsafe { for_each_piece(self.as_ptr(), self.size(), off, len, copy) }?;
        // SAFETY: `for_each_piece` checked the range first, then copied all of `0..len` into
        // the first `len` bytes of the room, which are now initialised.
        unsafe { dst.inc_len(len) };
        Ok(())
    }

    /// Calls `f` with bytes `off..off + len` of the folio, which must lie in one page.
    ///
    /// # Safety
    ///
    /// Nobody writes those bytes during the call (the folio is uptodate and read-only, or the
    /// caller holds it locked).
    pub(crate) unsafe fn with_bytes<R>(
        &self,
        off: usize,
        len: usize,
        f: impl FnOnce(&[u8]) -> R,
    ) -> Result<R> {
        let in_page = off % PAGE_SIZE;
        // OVERFLOW: `in_page < PAGE_SIZE`, and `len` is checked against the folio first.
        if off.checked_add(len).is_none_or(|e| e > self.size()) || in_page + len > PAGE_SIZE {
            return Err(EINVAL);
        }
        // SAFETY: `off - in_page` is a page boundary inside the live folio.
        let addr = unsafe { ffi::erofs_rs_glue_kmap_local_folio(self.as_ptr(), off - in_page) };
        // SAFETY: `addr` maps the whole page; `in_page + len <= PAGE_SIZE`; nobody writes it
        // (contract).
        let bytes = unsafe { core::slice::from_raw_parts(addr.cast::<u8>().add(in_page), len) };
        let r = f(bytes);
        // SAFETY: unmaps the mapping made above, once, in LIFO order.
        unsafe { bindings::kunmap_local(addr) };
        Ok(r)
    }
}

/// The inode whose page cache holds `folio` (`folio->mapping->host`).
///
/// # Safety
///
/// `folio` is a live page-cache folio that stays in its page cache for the call (it is locked,
/// or the caller's page-cache operation keeps it).
pub(crate) unsafe fn host(folio: *mut bindings::folio) -> *mut bindings::inode {
    // SAFETY: a page-cache folio's `mapping` is its live address space (contract).
    unsafe { (*(*folio).__bindgen_anon_1.__bindgen_anon_1.mapping).host }
}

/// Copies `n` bytes from `from` to `to` as the kernel's C code copies, outside Rust's memory
/// model (see [`Folio::copy_to`]): a whole page with a constant-size `memcpy` in C
/// (`erofs_rs_glue_memcpy_page`, which GCC expands inline to `rep movsq`, as its inlined
/// copies of `copy_page_to_iter` into kernel pages; clang, the debug kernel's, calls
/// `memcpy`), small pieces of the sizes of metadata windows with constant-size `memcpy`s in C
/// (`erofs_rs_glue_memcpy_small`), any other piece with the out-of-line `memcpy`.
///
/// Not `copy_page` for whole pages: it is `copy_page_regs` where the CPU lacks `REP_GOOD`, as
/// TCG's (1,351 instructions a page under `-icount`, against 605 inline). Nor the
/// out-of-line `memcpy`: `rep movsb` on CPUs with FSRM, which `-icount` counts as one
/// instruction a byte (a file-backed read of an uncompressed file took 1.05 million
/// instructions a MiB in it, against the C driver's 0.16 million in its inlined copies).
///
/// # Safety
///
/// `from` is readable and `to` writable for `n` bytes, and they do not overlap.
unsafe fn copy_piece(to: *mut u8, from: *const u8, n: usize) {
    if n == PAGE_SIZE {
        // SAFETY: a page's worth of bytes, by the contract.
        unsafe { ffi::erofs_rs_glue_memcpy_page(to.cast(), from.cast()) };
    } else if n <= 64 {
        // SAFETY: by the contract.
        unsafe { ffi::erofs_rs_glue_memcpy_small(to.cast(), from.cast(), n) };
    } else {
        // SAFETY: by the contract.
        unsafe { bindings::memcpy(to.cast(), from.cast(), n) };
    }
}

/// Calls `f(done, p, n)` for each page-sized piece of bytes `off..off + len` of a folio of
/// `size` bytes: `p` maps the `n` bytes at `off + done`, through `kmap_local`, for the call.
/// On `Ok`, the pieces covered all of `0..len`, in order; the range is checked before the
/// first call, and an `Err` (a range past the folio) comes before any.
///
/// # Safety
///
/// `folio` is live for the call and `size` is at most its size; `f` may dereference `p` only
/// as the caller's rights to the folio allow (reads of uptodate data, or writes by the folio's
/// locker).
pub(crate) unsafe fn for_each_piece(
    folio: *mut bindings::folio,
    size: usize,
    off: usize,
    len: usize,
    mut f: impl FnMut(usize, *mut u8, usize),
) -> Result {
    if off.checked_add(len).is_none_or(|end| end > size) {
        return Err(EINVAL);
    }
    let mut done = 0usize;
    while done < len {
        let cur = off + done;
        let in_page = cur % PAGE_SIZE;
        let n = (PAGE_SIZE - in_page).min(len - done);
        // SAFETY: `cur - in_page` is a page boundary inside the live folio (`cur < off + len
        // <= size`, at most the folio's size by the contract).
        let addr = unsafe { ffi::erofs_rs_glue_kmap_local_folio(folio, cur - in_page) };
        // SAFETY: `in_page < PAGE_SIZE`, inside the page `addr` maps.
        f(done, unsafe { addr.cast::<u8>().add(in_page) }, n);
        // SAFETY: unmaps the mapping made above, once.
        unsafe { bindings::kunmap_local(addr) };
        done += n;
    }
    Ok(())
}
