// SPDX-License-Identifier: GPL-2.0-only
//! Tracepoints (`include/trace/events/erofs_rs.h`, defined in `trace.c`), in the `erofs_rs`
//! trace system: the C driver's `erofs_lookup`, `erofs_fill_inode`, `erofs_read_folio`,
//! `erofs_readahead`, `erofs_map_blocks_enter` and `erofs_map_blocks_exit` with its fields and
//! output, and `erofs_rs_decompress` and `erofs_rs_accel`, which it lacks.
//!
//! Each function tests the tracepoint's static key (as the kernel's `declare_trace!` does for
//! tracepoints of the kernel itself) and only calls into C when someone enabled the event. The
//! events take plain values, which every caller can give: the functions are safe.

use super::{
    fs::FileSystem,
    sys,
    Inode,
    SuperBlock, //
};
use kernel::{
    bindings,
    page::PAGE_SHIFT, //
};

/// Whether the tracepoint `$tp` is enabled.
macro_rules! enabled {
    ($tp:ident) => {
        // SAFETY: `$tp` is a `struct tracepoint` that trace.c defines (DEFINE_TRACE through
        // CREATE_TRACE_POINTS) in this module; its static key may always be read.
        unsafe { kernel::static_branch_unlikely!(sys::$tp, bindings::tracepoint, key) }
    };
}

/// The device of `sb`, as the C driver's events record it.
fn dev<T: FileSystem>(sb: &SuperBlock<'_, T>) -> u32 {
    // SAFETY: `sb` is live (its type's invariant); `s_dev` is set before any inode exists and
    // never changes.
    unsafe { (*sb.as_ptr()).s_dev }
}

/// The device and nid of `inode` (the id its file handles name it by).
fn dev_nid<T: FileSystem>(inode: &Inode<'_, T>) -> (u32, u64) {
    (dev(&inode.sb()), T::handle_id(*inode))
}

/// `erofs_lookup`: a lookup of `dentry`'s name in `dir`.
///
/// # Safety
///
/// `dentry` is the live dentry being looked up (its name is stable and NUL-terminated).
pub(crate) unsafe fn lookup<T: FileSystem>(
    dir: &Inode<'_, T>,
    dentry: *const bindings::dentry,
    flags: u32,
) {
    if enabled!(__tracepoint_erofs_lookup) {
        let (dev, nid) = dev_nid(dir);
        // SAFETY: the tracepoint is defined (see `enabled!`); `dentry` is live (contract).
        unsafe { sys::rust_do_trace_erofs_lookup(dev, nid, dentry, flags) };
    }
}

/// `erofs_fill_inode`: `inode` was read from byte `iloc` of the metadata (block size
/// `1 << blkszbits`).
pub(crate) fn fill_inode<T: FileSystem>(inode: &Inode<'_, T>, iloc: u64, blkszbits: u8) {
    if enabled!(__tracepoint_erofs_fill_inode) {
        let (dev, nid) = dev_nid(inode);
        let mask = (1u64 << blkszbits) - 1;
        // CAST: the offset within a block is below the block size.
        let ofs = (iloc & mask) as u32;
        // SAFETY: the tracepoint is defined (see `enabled!`); the arguments are values.
        unsafe { sys::rust_do_trace_erofs_fill_inode(dev, nid, iloc >> blkszbits, ofs) };
    }
}

/// `erofs_read_folio`: `read_folio` of the folio at byte `pos` of `size` bytes (`raw`: an
/// uncompressed inode).
pub(crate) fn read_folio<T: FileSystem>(inode: &Inode<'_, T>, pos: u64, size: usize, raw: bool) {
    if enabled!(__tracepoint_erofs_read_folio) {
        let (dev, nid) = dev_nid(inode);
        let dir = i32::from(inode.mode() & bindings::S_IFMT == bindings::S_IFDIR);
        let order = (size >> PAGE_SHIFT).trailing_zeros();
        // SAFETY: the tracepoint is defined (see `enabled!`); the arguments are values.
        // CAST: `pgoff_t` is `unsigned long`, 64 bits wide on the kernels Rust builds for.
        unsafe {
            sys::rust_do_trace_erofs_read_folio(
                dev,
                nid,
                dir,
                (pos >> PAGE_SHIFT) as usize,
                order,
                raw,
            )
        };
    }
}

/// `erofs_readahead`: readahead of the `len` bytes at byte `pos` (whole pages).
pub(crate) fn readahead<T: FileSystem>(inode: &Inode<'_, T>, pos: u64, len: u64, raw: bool) {
    if enabled!(__tracepoint_erofs_readahead) {
        let (dev, nid) = dev_nid(inode);
        // CAST: a readahead batch has far fewer than 2^32 pages (`readahead_count`'s type).
        let nrpage = (len >> PAGE_SHIFT) as u32;
        // SAFETY: the tracepoint is defined (see `enabled!`); the arguments are values.
        // CAST: as in `read_folio`.
        unsafe {
            sys::rust_do_trace_erofs_readahead(dev, nid, (pos >> PAGE_SHIFT) as usize, nrpage, raw)
        };
    }
}

/// `erofs_map_blocks_enter`: mapping the extent at byte `la` of inode `nid` of `sb` (`flags`:
/// `EROFS_GET_BLOCKS_*`).
pub(crate) fn map_blocks_enter<T: FileSystem>(
    sb: &SuperBlock<'_, T>,
    nid: u64,
    la: u64,
    llen: u64,
    flags: u32,
) {
    if enabled!(__tracepoint_erofs_map_blocks_enter) {
        // SAFETY: the tracepoint is defined (see `enabled!`); the arguments are values.
        unsafe { sys::rust_do_trace_erofs_map_blocks_enter(dev(sb), nid, la, llen, flags) };
    }
}

/// What `erofs_map_blocks_exit` records of a mapping (`struct erofs_map_blocks`).
pub(crate) struct MapExit {
    /// `m_la`, `m_pa`, `m_llen`, `m_plen`.
    pub(crate) la: u64,
    pub(crate) pa: u64,
    pub(crate) llen: u64,
    pub(crate) plen: u64,
    /// `m_flags`: `EROFS_MAP_*`.
    pub(crate) mflags: u32,
}

/// `erofs_map_blocks_exit`: the mapping found for inode `nid` of `sb` (or its error, with
/// `map` as it was).
pub(crate) fn map_blocks_exit<T: FileSystem>(
    sb: &SuperBlock<'_, T>,
    nid: u64,
    flags: u32,
    map: &MapExit,
    ret: i32,
) {
    if enabled!(__tracepoint_erofs_map_blocks_exit) {
        // SAFETY: the tracepoint is defined (see `enabled!`); the arguments are values.
        unsafe {
            sys::rust_do_trace_erofs_map_blocks_exit(
                dev(sb),
                nid,
                flags,
                map.la,
                map.pa,
                map.llen,
                map.plen,
                map.mflags,
                ret,
            )
        };
    }
}

/// Whether `erofs_rs_decompress` is enabled (callers skip gathering its figures otherwise).
pub(crate) fn decompress_enabled() -> bool {
    enabled!(__tracepoint_erofs_rs_decompress)
}

/// What `erofs_rs_decompress` records of one decompression run.
pub(crate) struct DecompressRun {
    /// The mount's `s_dev`.
    pub(crate) dev: u32,
    /// 0 inline (in the reader), 1 workqueue, 2 per-CPU kthread, 3 workqueue in place of a
    /// kthread that was gone.
    pub(crate) placement: u32,
    /// Pclusters decoded, and their compressed and decoded bytes.
    pub(crate) pclusters: u32,
    pub(crate) in_bytes: u64,
    pub(crate) out_bytes: u64,
    /// Last bio completion to the start of decoding (0 inline), and the decoding time.
    pub(crate) queued_ns: u64,
    pub(crate) decode_ns: u64,
}

/// `erofs_rs_decompress`: one decompression run.
pub(crate) fn decompress(r: &DecompressRun) {
    if decompress_enabled() {
        // SAFETY: the tracepoint is defined (see `enabled!`); the arguments are values.
        unsafe {
            sys::rust_do_trace_erofs_rs_decompress(
                r.dev,
                r.placement,
                r.pclusters,
                r.in_bytes,
                r.out_bytes,
                r.queued_ns,
                r.decode_ns,
            )
        };
    }
}

/// An offload step of `erofs_rs_accel`.
#[derive(Clone, Copy)]
pub(crate) enum AccelOp {
    /// Handed to the acomp engine.
    Submit = 0,
    /// The engine completed it (with `err`).
    Complete = 1,
    /// Decoded in software after the engine refused or failed it.
    Fallback = 2,
}

/// `erofs_rs_accel`: one offload step of a DEFLATE pcluster of `in_bytes` into `out_bytes`.
pub(crate) fn accel(op: AccelOp, in_bytes: u64, out_bytes: u64, err: i32) {
    if enabled!(__tracepoint_erofs_rs_accel) {
        // SAFETY: the tracepoint is defined (see `enabled!`); the arguments are values.
        unsafe { sys::rust_do_trace_erofs_rs_accel(op as u32, in_bytes, out_bytes, err) };
    }
}
