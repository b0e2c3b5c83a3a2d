// SPDX-License-Identifier: GPL-2.0-only
//! Mapping folios for the decoders (C: `vm_map_ram` and `kmap_local` in fs/erofs/decompressor.c):
//! a run of pages as one contiguous range ([`PageMap`]), or piece by piece ([`PageRuns`]), and
//! the private order-0 folios a decoder writes into when no page-cache folio wants the bytes
//! ([`BouncePages`], C's `erofs_pagepool`).

use super::pagecache::{
    CFolio,
    OutFolio, //
};
use super::{
    ffi,
    folio,
    smallvec::SmallVec,
    sys, //
};
use core::marker::PhantomData;
use kernel::{
    bindings,
    page::PAGE_SIZE,
    prelude::*, //
};

/// Order-0 folios that decoders may write into when no page-cache folio of the read wants the
/// bytes, reused across the extents of a request.
///
/// # Invariants
///
/// Every pointer of `folios` is an order-0 folio this value owns (one reference), used by
/// nobody else.
pub(crate) struct BouncePages {
    /// In place for the first few (a request mostly needs one or two).
    folios: SmallVec<*mut bindings::folio, BOUNCE_FEW>,
}

/// Bounce folios a [`BouncePages`] keeps without an allocation.
const BOUNCE_FEW: usize = 4;

// SAFETY: the folios are private memory owned by the pool.
unsafe impl Send for BouncePages {}

impl BouncePages {
    /// An empty pool.
    pub(crate) fn new() -> Self {
        BouncePages {
            folios: SmallVec::new(),
        }
    }

    /// Makes sure the pool holds at least `n` folios.
    fn reserve(&mut self, n: usize) -> Result {
        while self.folios.len() < n {
            // SAFETY: no preconditions.
            let f = unsafe { ffi::erofs_rs_glue_bounce_alloc() };
            if f.is_null() {
                return Err(ENOMEM);
            }
            // INVARIANT: a fresh folio, ours; freed below if the push fails.
            if let Err(e) = self.folios.push(f) {
                // SAFETY: we own the only reference.
                unsafe { ffi::erofs_rs_glue_folio_put(f) };
                return Err(e);
            }
        }
        Ok(())
    }
}

impl Drop for BouncePages {
    fn drop(&mut self) {
        for &f in self.folios.iter() {
            // SAFETY: we own one reference to each (type invariant).
            unsafe { ffi::erofs_rs_glue_folio_put(f) };
        }
    }
}

/// Typestate of a [`PageMap`] of a pcluster's compressed input: folios of the managed cache or
/// short-lived ones ([`CFolio`]), read-only through the map.
pub(crate) struct Input;

/// Typestate of a [`PageMap`] of a decoder's output: folios that only this map writes.
pub(crate) struct Output;

/// A virtually contiguous mapping of whole pages, unmapped on drop: their direct-map address
/// when they lie side by side there (one page, or pages the allocator handed out in a row: the
/// C driver's `z_erofs_lz4_prepare_dstpages` shortcut), else a `vm_map_ram` of them. `K` says
/// what it maps ([`Input`] or [`Output`]), and only output maps are writable.
///
/// # Invariants
///
/// `addr` maps `count` pages that stay allocated while this value lives (the borrows of its
/// constructors pin them), through `vm_map_ram` when `vmapped`, else in the direct map. With
/// `K = Output`, no Rust code but this map reads or writes them: they are folios locked by our
/// read whose `mapped` flag this map set (they are in `_outs`), or bounce folios of a pool this
/// map borrows mutably.
pub(crate) struct PageMap<'a, K> {
    addr: *mut u8,
    count: usize,
    vmapped: bool,
    /// The folios whose `mapped` flag this map set, cleared when it drops.
    _outs: Marked<'a>,
    _p: PhantomData<K>,
}

/// A page of an output folio: the folio, and the page's index in it.
pub(crate) type OutPage<'a> = (&'a OutFolio, usize);

impl<'a> PageMap<'a, Output> {
    /// Maps output pages for a decoder: `pages[i]` is the page of a folio of the read that
    /// wants page `i` of the output, or `None` for a page nobody wants (a bounce folio from `pool`
    /// takes its place). Each folio must be locked by this read (which makes us its only
    /// writer), and not in another output map; its pages come in a row, in order, and only once
    /// (`EBUSY` otherwise: two mappings of one page in one map would alias).
    pub(crate) fn output(
        pages: &'a [Option<OutPage<'a>>],
        pool: &'a mut BouncePages,
    ) -> Result<Self> {
        // Every folio of `pages` is marked now, by us; clears them if we fail below.
        let outs = claim(pages, pool)?;
        let folios = PageIter::Out(pages, pool.folios.as_slice());
        // SAFETY: the folios are live for `'a`: locked folios of our read, now marked mapped
        // by us alone (an `OutFolio` is `!Sync`, so `mapped` is only read and set on this
        // thread), each page of them once (checked by `claim`), or bounce folios of `pool`,
        // borrowed mutably for `'a`, each once; every index is below its folio's page count.
        unsafe { map(folios.each(), pages.len(), outs) }
    }

    /// Bytes `range` of the map, writable; `None` if they do not lie in it.
    ///
    /// Only the range a decoder fills is borrowed: an acomp engine may be writing another
    /// pcluster's bytes into the same page (the last page of one pcluster is often the first
    /// of the next, and requests run while the reader decodes others in software).
    pub(crate) fn bytes_mut(&mut self, range: core::ops::Range<usize>) -> Option<&mut [u8]> {
        if range.start > range.end || range.end > self.count * PAGE_SIZE {
            return None;
        }
        // SAFETY: `addr` maps `count` pages (type invariant), and `range` lies in them. No Rust
        // code but this map touches those pages (type invariant, `K = Output`), and `&mut
        // self` makes this the only slice of them; an engine request writes only the bytes of
        // its own pcluster, which the caller's range excludes.
        Some(unsafe {
            core::slice::from_raw_parts_mut(self.addr.add(range.start), range.end - range.start)
        })
    }
}

/// Makes sure `pool` has a bounce folio for each `None` of output pages `pages`, and marks
/// their folios as mapped (see [`PageMap::output`]): each folio's pages come in a row, in
/// order, and only once, and no other map holds it (`EBUSY`); dropping the result clears the
/// marks.
fn claim<'a>(pages: &'a [Option<OutPage<'a>>], pool: &mut BouncePages) -> Result<Marked<'a>> {
    let bounces = pages.iter().filter(|p| p.is_none()).count();
    pool.reserve(bounces)?;
    // The page before, and its folio's number of pages.
    let mut prev: Option<(OutPage<'a>, usize)> = None;
    for (k, p) in pages.iter().enumerate() {
        let Some((o, idx)) = *p else {
            prev = None;
            continue;
        };
        // The next page of the folio the page before it is from: marked already, by us.
        let run =
            prev.filter(|((po, pi), _)| core::ptr::eq(*po, o) && pi.checked_add(1) == Some(idx));
        let next = run.is_some();
        let npages = run.map_or_else(|| o.size() / PAGE_SIZE, |(_, n)| n);
        prev = Some(((o, idx), npages));
        let err = if idx >= npages {
            EINVAL
        } else if next {
            continue;
        } else if o.mapped.get() || o.is_part() {
            // (A part's folio has bytes another read writes: no mapping of all of it.)
            EBUSY
        } else {
            o.mapped.set(true);
            continue;
        };
        // Those before it were all marked here (a second appearance of one of them not
        // right after its previous page would have stopped us there).
        drop(Marked(pages.get(..k).unwrap_or(&[])));
        return Err(err);
    }
    Ok(Marked(pages))
}

/// Pages for a stream decoder, as the runs of them that lie side by side in the direct map,
/// each a piece of the decoder's buffer: no `vm_map_ram` (C feeds its stream decoders page
/// by page, without mapping the pages together). `K` as for [`PageMap`]. For kernels without
/// highmem: [`PageRuns::pieces_mut`] and [`PageRuns::pieces`] fail on a page the direct map
/// does not hold.
///
/// # Invariants
///
/// `pages` are live folios for `'a` and an index below each one's number of pages, no page
/// twice. With `K = Output`, no
/// Rust code but this value reads or writes them, as for a [`PageMap<Output>`]: they are
/// folios locked by our read whose `mapped` flag this value set (`_outs`), or bounce folios
/// of a pool it borrows mutably.
pub(crate) struct PageRuns<'a, K> {
    pages: PageIter<'a>,
    /// The folios whose `mapped` flag this value set, cleared when it drops.
    _outs: Marked<'a>,
    _p: PhantomData<K>,
}

/// The pages of a [`PageRuns`].
enum PageIter<'a> {
    /// Output pages, and the bounce folios taking the place of the `None`s, in order.
    Out(&'a [Option<OutPage<'a>>], &'a [*mut bindings::folio]),
    /// Order-0 device folios.
    In(&'a [CFolio]),
}

impl PageIter<'_> {
    /// Each page, a folio and the index of the page in it, in order; `None` for a missing
    /// bounce folio.
    fn each(&self) -> impl Iterator<Item = Option<(*mut bindings::folio, usize)>> + Clone + '_ {
        let (out, bounce, input) = match self {
            PageIter::Out(o, b) => (*o, *b, &[][..]),
            PageIter::In(i) => (&[][..], &[][..], *i),
        };
        let mut bounce = bounce.iter();
        let out = out.iter().map(move |p| match p {
            Some((o, idx)) => Some((o.ptr, *idx)),
            None => bounce.next().map(|&f| (f, 0)),
        });
        Iterator::chain(out, input.iter().map(|f| Some((f.as_ptr(), 0))))
    }

    /// Calls `f` with each run of pages that lie side by side in the direct map: its address
    /// and its length in bytes. `EINVAL` if a page is in highmem (then `f` may have seen runs
    /// before it), if there are none or if a bounce folio is missing.
    ///
    /// # Safety
    ///
    /// The folios are live, and each index is below its folio's number of pages.
    unsafe fn runs(&self, mut f: impl FnMut(*mut u8, usize) -> Result) -> Result {
        // The run being gathered, and the folio of the page before with its address.
        let mut run: Option<(*mut u8, usize)> = None;
        let mut last: Option<(*mut bindings::folio, *mut u8)> = None;
        for p in self.each() {
            let (folio, idx) = p.ok_or(EINVAL)?;
            let head = match last {
                Some((lf, a)) if lf == folio => a,
                _ => {
                    // SAFETY: a live folio (contract).
                    let a = unsafe { ffi::erofs_rs_glue_folio_address(folio) }.cast::<u8>();
                    if a.is_null() {
                        return Err(EINVAL);
                    }
                    last = Some((folio, a));
                    a
                }
            };
            // A folio outside highmem lies in a row in the direct map; `idx` is one of its
            // pages (contract), so this stays in it.
            let a = head.wrapping_add(idx.checked_mul(PAGE_SIZE).ok_or(EINVAL)?);
            run = match run {
                // Right after the run before: it grows.
                Some((ra, rl)) if ra.addr().checked_add(rl) == Some(a.addr()) => {
                    Some((ra, rl.checked_add(PAGE_SIZE).ok_or(EINVAL)?))
                }
                Some((ra, rl)) => {
                    f(ra, rl)?;
                    Some((a, PAGE_SIZE))
                }
                None => Some((a, PAGE_SIZE)),
            };
        }
        let (ra, rl) = run.ok_or(EINVAL)?;
        f(ra, rl)
    }
}

impl<'a> PageRuns<'a, Output> {
    /// The output pages `pages` for a decoder, as [`PageMap::output`] takes them.
    pub(crate) fn output(
        pages: &'a [Option<OutPage<'a>>],
        pool: &'a mut BouncePages,
    ) -> Result<Self> {
        let outs = claim(pages, pool)?;
        // INVARIANT: live folios for `'a`: locked by our read (its `OutPage`s borrow them), or
        // the pool's, borrowed for `'a` (mutably, so no one else uses them), each once; every
        // index is below its folio's page count, each output page comes once, and its folio is
        // marked by us (`claim`); a bounce folio's index is 0.
        Ok(PageRuns {
            pages: PageIter::Out(pages, pool.folios.as_slice()),
            _outs: outs,
            _p: PhantomData,
        })
    }

    /// Puts bytes `range` of the runs (counted across them, one after the other), writable,
    /// into `v` (empty): the decoder's output buffer in pieces. `EINVAL` for a page in
    /// highmem, or a range past the pages' end.
    ///
    /// Only the range a decoder fills is borrowed, as [`PageMap::bytes_mut`]: an acomp engine
    /// may be writing another pcluster's bytes into the same page.
    pub(crate) fn pieces_mut<'s, const N: usize>(
        &'s mut self,
        range: core::ops::Range<usize>,
        v: &mut SmallVec<&'s mut [u8], N>,
    ) -> Result {
        if range.start > range.end {
            return Err(EINVAL);
        }
        // Where the next run starts.
        let mut pos = 0usize;
        let push = |addr: *mut u8, len: usize| {
            let end = pos.checked_add(len).ok_or(EINVAL)?;
            // The part of `range` in this run, from `lo` to `hi` in it.
            // OVERFLOW: clamped to `pos..=end`.
            let lo = range.start.clamp(pos, end) - pos;
            let hi = range.end.clamp(pos, end) - pos;
            pos = end;
            if lo == hi {
                return Ok(());
            }
            // SAFETY: bytes `lo..hi` of the `len` bytes of the direct map at `addr`, whole
            // pages of live folios, each in one run only; no other Rust code touches them (type
            // invariant), and `&mut self` makes these the only slices of them.
            v.push(unsafe { core::slice::from_raw_parts_mut(addr.add(lo), hi - lo) })
        };
        // SAFETY: live folios, indexes in them (type invariant).
        unsafe { self.pages.runs(push) }?;
        if range.end > pos {
            return Err(EINVAL);
        }
        Ok(())
    }
}

impl<'a> PageRuns<'a, Input> {
    /// The order-0 device folios holding a pcluster, to read it where it is.
    pub(crate) fn input(folios: &'a [CFolio]) -> Result<Self> {
        if folios
            .iter()
            .any(|f| f.size() != PAGE_SIZE || !f.0.test_uptodate())
        {
            return Err(EINVAL);
        }
        // INVARIANT: live for `'a`: referenced by the `CFolio`s, borrowed for `'a`; order-0
        // (checked above), so page 0 is their one page; read-only, so nothing is marked.
        Ok(PageRuns {
            pages: PageIter::In(folios),
            _outs: Marked(&[]),
            _p: PhantomData,
        })
    }

    /// Puts the runs, read-only, into `v` (empty): the stream in pieces; `EINVAL` for a page in
    /// highmem.
    ///
    /// These are device page-cache folios, which another opener of the device may write while
    /// we decode them (see [`PageMap::bytes`]).
    pub(crate) fn pieces<'s, const N: usize>(&'s self, v: &mut SmallVec<&'s [u8], N>) -> Result {
        let push = |addr: *mut u8, len| {
            // SAFETY: `len` bytes of the direct map at `addr`, whole pages of live folios
            // (type invariant), read-only here.
            v.push(unsafe { core::slice::from_raw_parts(addr.cast_const(), len) })
        };
        // SAFETY: live folios, indexes in them (type invariant).
        unsafe { self.pages.runs(push) }
    }
}

impl<'a> PageMap<'a, Input> {
    /// Maps the order-0 device folios holding a pcluster, to read it in place.
    pub(crate) fn input(folios: &'a [CFolio]) -> Result<Self> {
        if folios
            .iter()
            .any(|f| f.size() != PAGE_SIZE || !f.0.test_uptodate())
        {
            return Err(EINVAL);
        }
        let ptrs = folios.iter().map(|f| Some((f.as_ptr(), 0)));
        // SAFETY: live for `'a`: referenced by the `CFolio`s, borrowed for `'a`; order-0, so
        // page 0 is their one page.
        unsafe { map(ptrs, folios.len(), Marked(&[])) }
    }
}

impl<K> PageMap<'_, K> {
    /// The mapped bytes.
    ///
    /// For an [`Input`] map these are device page-cache folios, which another opener of a
    /// block device (or of a backing file) may write while we decode them, as the C driver's
    /// in-place decoding of the same pages allows (see [`CFolio`]).
    pub(crate) fn bytes(&self) -> &[u8] {
        // SAFETY: `addr` maps `count` pages (type invariant), read-only here.
        unsafe { core::slice::from_raw_parts(self.addr, self.count * PAGE_SIZE) }
    }
}

/// Maps the `count` pages `pages` yields side by side, each a folio and the index of the page in
/// it (a `None` fails the map); the map clears the `mapped` flag of `outs` on drop.
///
/// # Safety
///
/// The folios stay live for `'a`, and each index is below its folio's number of pages. With
/// `K = Output`, no Rust code but the returned map reads or writes those pages for `'a`, and
/// no page comes twice; `outs` are the [`OutFolio`]s among the folios, whose `mapped` flag
/// the caller set.
unsafe fn map<'a, K>(
    pages: impl Iterator<Item = Option<(*mut bindings::folio, usize)>> + Clone,
    count: usize,
    outs: Marked<'a>,
) -> Result<PageMap<'a, K>> {
    let n = u32::try_from(count).map_err(|_| EINVAL)?;
    if n == 0 || pages.clone().count() != count {
        return Err(EINVAL);
    }
    // SAFETY: the folios are live and the indexes in them (contract).
    if let Some(addr) = unsafe { direct(pages.clone()) } {
        // INVARIANT: by this function's contract; `direct` checked the pages lie side by side
        // in the direct map from `addr`.
        return Ok(PageMap {
            addr,
            count,
            vmapped: false,
            _outs: outs,
            _p: PhantomData,
        });
    }
    // The page array `vm_map_ram` takes: on the stack for a few pages (a pcluster's output
    // mostly is), as C's `z_erofs_decompress_pcluster` keeps small ones in `onstack_pages`.
    let mut ptrs = SmallVec::<*mut bindings::page, ONSTACK_PAGES>::new();
    // (One allocation for a big pcluster's pages, not one per doubling.)
    ptrs.reserve(count)?;
    for p in pages {
        let (f, idx) = p.ok_or(EINVAL)?;
        // SAFETY: a live folio (contract); `Folio` is transparent over `struct folio`.
        let f = unsafe { &*f.cast::<folio::Folio>() };
        // `folio_page(folio, idx)`: a folio's `struct page`s follow its first one.
        // SAFETY: `idx` is below the folio's number of pages (contract), so the pointer stays
        // in its array of pages.
        ptrs.push(unsafe { f.first_page().add(idx) })?;
    }
    let ptrs = ptrs.as_mut_slice();
    let no_node = bindings::NUMA_NO_NODE;
    // SAFETY: `ptrs` holds `n` pages of live folios.
    let mut addr = unsafe { sys::vm_map_ram(ptrs.as_mut_ptr(), n, no_node) };
    if addr.is_null() {
        // Lazily unmapped areas may hold the space: flush them and retry once, as
        // decompressor.c's `erofs_vm_map_ram` does.
        // SAFETY: no preconditions.
        unsafe { sys::vm_unmap_aliases() };
        // SAFETY: as above.
        addr = unsafe { sys::vm_map_ram(ptrs.as_mut_ptr(), n, no_node) };
    }
    if addr.is_null() {
        return Err(ENOMEM);
    }
    // INVARIANT: by this function's contract.
    Ok(PageMap {
        addr: addr.cast(),
        count,
        vmapped: true,
        _outs: outs,
        _p: PhantomData,
    })
}

/// Pages of a [`PageMap`] whose page array is kept on the stack (128 bytes).
const ONSTACK_PAGES: usize = 16;

/// The direct-map address of the first of `pages` (a folio and a page index in it, each) when
/// each of the others follows the one before it there: always so for pages in a row of one
/// folio, which the direct map holds in a row (the C driver's shortcut for output pages in
/// one large folio), never for highmem ones; `None` also if one is missing.
///
/// # Safety
///
/// The folios are live, and each index is below its folio's number of pages.
unsafe fn direct(
    pages: impl Iterator<Item = Option<(*mut bindings::folio, usize)>>,
) -> Option<*mut u8> {
    let mut first: Option<*mut u8> = None;
    // The folio of the page before, and its address: a large folio's pages come in a row.
    let mut last: Option<(*mut bindings::folio, *mut u8)> = None;
    for (i, p) in pages.enumerate() {
        let (f, idx) = p?;
        let head = match last {
            Some((lf, a)) if lf == f => a,
            _ => {
                // SAFETY: a live folio (contract).
                let a = unsafe { ffi::erofs_rs_glue_folio_address(f) }.cast::<u8>();
                if a.is_null() {
                    return None;
                }
                last = Some((f, a));
                a
            }
        };
        // A folio outside highmem lies in a row in the direct map; `idx` is one of its pages
        // (contract).
        let a = head.wrapping_add(idx.checked_mul(PAGE_SIZE)?);
        match first {
            None => first = Some(a),
            // Addresses compared as integers: no pointer is formed past the first page.
            Some(b) if a.addr().checked_sub(b.addr()) == i.checked_mul(PAGE_SIZE) => {}
            Some(_) => return None,
        }
    }
    first
}

impl<K> Drop for PageMap<'_, K> {
    fn drop(&mut self) {
        if self.vmapped {
            // CAST: `count` came from a u32 in `map`.
            // SAFETY: unmaps the mapping made in `map`, once.
            unsafe { sys::vm_unmap_ram(self.addr.cast_const().cast(), self.count as u32) };
        }
        // `_outs` clears the flags after this, once the pages are unmapped.
    }
}

/// Output folios (those of the `Some`s of the slice) whose `mapped` flag a
/// [`PageMap<Output>`] or [`PageRuns<Output>`] (being made, or made) set; dropping this clears
/// them.
struct Marked<'a>(&'a [Option<OutPage<'a>>]);

impl Drop for Marked<'_> {
    fn drop(&mut self) {
        for (o, _) in self.0.iter().flatten() {
            // INVARIANT: the map that set the flag is gone (or was never made).
            o.mapped.set(false);
        }
    }
}
