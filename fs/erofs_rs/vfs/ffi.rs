// SPDX-License-Identifier: GPL-2.0-only
//! Declarations of the C functions of `glue.c` (see `glue.h`). Only `vfs/` calls them.

use kernel::bindings;
use kernel::ffi::{
    c_int,
    c_void, //
};

/// Mount options as `glue.c` parses them (`struct erofs_rs_mount_opts` in `glue.h`).
#[repr(C)]
#[derive(Clone, Copy)]
pub(crate) struct MountOpts {
    /// `EROFS_RS_OPT_*` bits.
    pub(crate) flags: u32,
    /// `EROFS_RS_CACHE_*`.
    pub(crate) cache_strategy: u32,
    /// Byte offset of the image in its device or file.
    pub(crate) fsoffset: u64,
    /// Number of `device=` options.
    pub(crate) ndevices: u32,
    /// `decomp_accel_min=`: the smallest compressed pcluster offloaded, in bytes.
    pub(crate) accel_min: u32,
    /// The `device=` paths, NUL-terminated, valid during `fill_super`.
    pub(crate) devices: *const *const u8,
    /// `decomp_accel=`, NUL-terminated, or null; valid during `fill_super`.
    pub(crate) accel: *const u8,
    /// `domain_id=`, NUL-terminated, or null; valid during `fill_super`.
    pub(crate) domain_id: *const u8,
}

/// One extent for iomap (`struct erofs_rs_extent` in `glue.h`).
#[repr(C)]
#[derive(Clone, Copy)]
pub(crate) struct Extent {
    /// Logical start.
    pub(crate) la: u64,
    /// Logical length.
    pub(crate) llen: u64,
    /// Byte address on the device (the image offset included).
    pub(crate) pa: u64,
    /// `EROFS_RS_EXT_*`.
    pub(crate) kind: u32,
    /// Zero.
    pub(crate) reserved: u32,
    /// The extra device holding `pa`, or null for the primary one.
    pub(crate) file: *mut bindings::file,
}

/// A hole.
pub(crate) const EROFS_RS_EXT_HOLE: u32 = 0;
/// Data blocks on the device.
pub(crate) const EROFS_RS_EXT_MAPPED: u32 = 1;
/// Inline data in the metadata.
pub(crate) const EROFS_RS_EXT_META: u32 = 2;

/// `directio` is on (file-backed mounts read the backing file with O_DIRECT).
pub(crate) const EROFS_RS_OPT_DIRECT_IO: u32 = 0x4;

/// `decomp_pcpu_kthreads` is on: decompression runs on the per-CPU kthread workers.
pub(crate) const EROFS_RS_OPT_PCPU_KTHREADS: u32 = 0x8;

/// `dax` or `dax=always` (only kernels with `FS_DAX` accept it).
pub(crate) const EROFS_RS_OPT_DAX_ALWAYS: u32 = 0x10;

/// `inode_share` (with `domain_id=`): page-cache sharing between inodes of equal content.
pub(crate) const EROFS_RS_OPT_INODE_SHARE: u32 = 0x40;

/// A decompression queue (`struct erofs_rs_zq`, opaque).
#[repr(C)]
pub(crate) struct ZqRaw {
    _private: [u8; 0],
}

/// A mount's acomp offload engine (`struct erofs_rs_accel`, opaque).
#[repr(C)]
pub(crate) struct AccelRaw {
    _private: [u8; 0],
}

/// One offload request in flight (`struct erofs_rs_aslot`, opaque).
#[repr(C)]
pub(crate) struct AslotRaw {
    _private: [u8; 0],
}

/// Per-mount decompression statistics (`struct erofs_rs_zstats`, opaque).
#[repr(C)]
pub(crate) struct ZStatsRaw {
    _private: [u8; 0],
}

/// `user_xattr` is on.
pub(crate) const EROFS_RS_OPT_USER_XATTR: u32 = 0x1;

// Pointers to bindgen structs that contain zero-sized arrays (e.g. `its_array`) trip
// `improper_ctypes`; only pointers cross this boundary, never the structs by value.
#[allow(improper_ctypes)]
extern "C" {
    pub(crate) fn erofs_rs_glue_init(info_size: usize) -> c_int;
    pub(crate) fn erofs_rs_glue_exit();

    pub(crate) fn erofs_rs_glue_sb_info(sb: *mut bindings::super_block) -> *mut c_void;
    pub(crate) fn erofs_rs_glue_sb_prepare(sb: *mut bindings::super_block) -> c_int;
    pub(crate) fn erofs_rs_glue_sb_attach(sb: *mut bindings::super_block, sbi: *mut c_void);
    pub(crate) fn erofs_rs_glue_sb_set_blocksize(sb: *mut bindings::super_block, bits: u32) -> c_int;
    pub(crate) fn erofs_rs_glue_sb_set_uuid(sb: *mut bindings::super_block, uuid: *const u8);
    pub(crate) fn erofs_rs_glue_sb_mapping(
        sb: *mut bindings::super_block,
        file: *mut bindings::file,
    ) -> *mut bindings::address_space;
    pub(crate) fn erofs_rs_glue_bdev_read(sb: *mut bindings::super_block, pos: u64, buf: *mut c_void, len: usize) -> c_int;
    pub(crate) fn erofs_rs_glue_sb_device_bytes(
        sb: *mut bindings::super_block,
        file: *mut bindings::file,
    ) -> u64;
    pub(crate) fn erofs_rs_glue_set_root(sb: *mut bindings::super_block, root: *mut bindings::inode) -> c_int;
    pub(crate) fn erofs_rs_glue_fput(file: *mut bindings::file);
    pub(crate) fn erofs_rs_glue_open_device(
        sb: *mut bindings::super_block,
        path: *const u8,
        file_mode: bool,
    ) -> *mut bindings::file;
    pub(crate) fn erofs_rs_glue_file_bytes(file: *mut bindings::file) -> u64;
    pub(crate) fn erofs_rs_glue_release_device(file: *mut bindings::file, sb: *mut bindings::super_block);
    pub(crate) fn erofs_rs_glue_file_read_direct(file: *mut bindings::file, pos: u64, buf: *mut c_void, len: usize) -> isize;
    pub(crate) fn erofs_rs_glue_file_mapping(file: *mut bindings::file) -> *mut bindings::address_space;
    pub(crate) fn erofs_rs_glue_statfs(dentry: *mut bindings::dentry, buf: *mut bindings::kstatfs, blocks: u64, inos: u64);
    pub(crate) fn erofs_rs_glue_dentry_sb(dentry: *mut bindings::dentry) -> *mut bindings::super_block;
    pub(crate) fn erofs_rs_glue_crc32c(crc: u32, p: *const c_void, len: usize) -> u32;
    pub(crate) fn erofs_rs_glue_xxh32(p: *const c_void, len: usize, seed: u32) -> u32;
    pub(crate) fn erofs_rs_glue_ishare_fill(inode: *mut bindings::inode, fp: *const c_void, fp_size: u32) -> bool;
    pub(crate) fn erofs_rs_glue_real_inode(inode: *mut bindings::inode, need_iput: *mut bool) -> *mut bindings::inode;

    pub(crate) fn erofs_rs_glue_iget_locked(
        sb: *mut bindings::super_block,
        ino: u64,
        is_new: *mut bool,
    ) -> *mut bindings::inode;
    pub(crate) fn erofs_rs_glue_iget_failed(inode: *mut bindings::inode);
    pub(crate) fn erofs_rs_glue_unlock_new_inode(inode: *mut bindings::inode);
    pub(crate) fn erofs_rs_glue_iput(inode: *mut bindings::inode);
    pub(crate) fn erofs_rs_glue_igrab(inode: *mut bindings::inode) -> *mut bindings::inode;
    pub(crate) fn erofs_rs_glue_inode_info(inode: *mut bindings::inode) -> *mut c_void;
    pub(crate) fn erofs_rs_glue_inode_sb(inode: *mut bindings::inode) -> *mut bindings::super_block;
    pub(crate) fn erofs_rs_glue_inode_fill(
        inode: *mut bindings::inode,
        mode: u16,
        uid: u32,
        gid: u32,
        nlink: u32,
        size: u64,
        mtime: i64,
        mtime_nsec: u32,
        rdev: u32,
        blocks: u64,
        compressed: bool,
    );
    pub(crate) fn erofs_rs_glue_inode_mapping(inode: *mut bindings::inode) -> *mut bindings::address_space;

    pub(crate) fn erofs_rs_glue_dentry_name(dentry: *mut bindings::dentry, len: *mut u32) -> *const u8;
    pub(crate) fn erofs_rs_glue_d_splice_alias(
        inode: *mut bindings::inode,
        dentry: *mut bindings::dentry,
    ) -> *mut bindings::dentry;

    pub(crate) fn erofs_rs_glue_file_inode(file: *mut bindings::file) -> *mut bindings::inode;
    pub(crate) fn erofs_rs_glue_dir_pos(ctx: *mut bindings::dir_context) -> i64;
    pub(crate) fn erofs_rs_glue_dir_set_pos(ctx: *mut bindings::dir_context, pos: i64);
    pub(crate) fn erofs_rs_glue_dir_emit(
        ctx: *mut bindings::dir_context,
        name: *const u8,
        len: u32,
        ino: u64,
        ftype: u8,
    ) -> bool;
    pub(crate) fn erofs_rs_glue_dir_emit_dot(file: *mut bindings::file, ctx: *mut bindings::dir_context) -> bool;
    pub(crate) fn erofs_rs_glue_fatal_signal_pending() -> bool;
    pub(crate) fn erofs_rs_glue_cond_resched();

    pub(crate) fn erofs_rs_glue_folio_inode(folio: *mut bindings::folio) -> *mut bindings::inode;
    pub(crate) fn erofs_rs_glue_folio_pos(folio: *mut bindings::folio) -> u64;
    pub(crate) fn erofs_rs_glue_folio_size(folio: *mut bindings::folio) -> usize;
    pub(crate) fn erofs_rs_glue_kmap_local_folio(folio: *mut bindings::folio, offset: usize) -> *mut c_void;
    pub(crate) fn erofs_rs_glue_kunmap(addr: *mut c_void);
    pub(crate) fn erofs_rs_glue_folio_end_read(folio: *mut bindings::folio, success: bool);
    pub(crate) fn erofs_rs_glue_read_mapping_folio(
        mapping: *mut bindings::address_space,
        index: u64,
        file: *mut bindings::file,
    ) -> *mut bindings::folio;
    pub(crate) fn erofs_rs_glue_folio_put(folio: *mut bindings::folio);

    pub(crate) fn erofs_rs_glue_xattr_prefix(idx: u32, dentry: *mut bindings::dentry) -> *const u8;
    pub(crate) fn erofs_rs_glue_dentry_inode(dentry: *mut bindings::dentry) -> *mut bindings::inode;
    pub(crate) fn erofs_rs_glue_log(sb: *mut bindings::super_block, err: bool, msg: *const u8, len: usize);

    pub(crate) fn erofs_rs_glue_zstats_create(sb: *mut bindings::super_block) -> *mut ZStatsRaw;
    pub(crate) fn erofs_rs_glue_zstats_destroy(stats: *mut ZStatsRaw);
    pub(crate) fn erofs_rs_glue_zstats_sync_small(stats: *mut ZStatsRaw) -> bool;
    pub(crate) fn erofs_rs_glue_pcpu_get() -> c_int;
    pub(crate) fn erofs_rs_glue_pcpu_put();
    pub(crate) fn erofs_rs_glue_zq_alloc(
        sb: *mut bindings::super_block,
        stats: *mut ZStatsRaw,
        sync: bool,
        pcpu: bool,
    ) -> *mut ZqRaw;
    pub(crate) fn erofs_rs_glue_zq_grab(
        q: *mut ZqRaw,
        mapping: *mut bindings::address_space,
        index: u64,
        need_io: *mut bool,
    ) -> *mut bindings::folio;
    pub(crate) fn erofs_rs_glue_zq_add(q: *mut ZqRaw, folio: *mut bindings::folio);
    pub(crate) fn erofs_rs_glue_zq_set_req(
        q: *mut ZqRaw,
        req: *mut c_void,
        run: Option<unsafe extern "C" fn(*mut c_void, c_int)>,
    );
    pub(crate) fn erofs_rs_glue_zq_commit(q: *mut ZqRaw) -> bool;
    pub(crate) fn erofs_rs_glue_zq_wait(q: *mut ZqRaw);
    pub(crate) fn erofs_rs_glue_zq_run_inline(q: *mut ZqRaw);
    pub(crate) fn erofs_rs_glue_folio_test_uptodate(folio: *mut bindings::folio) -> bool;
    pub(crate) fn erofs_rs_glue_vmap_folios(folios: *mut *mut bindings::folio, count: u32) -> *mut c_void;
    pub(crate) fn erofs_rs_glue_vunmap(addr: *mut c_void, count: u32);
    pub(crate) fn erofs_rs_glue_bounce_alloc() -> *mut bindings::folio;
    pub(crate) fn erofs_rs_glue_zalg_config(alg: c_int, dictsize: u32) -> c_int;
    pub(crate) fn erofs_rs_glue_zalg_decompress(
        alg: c_int,
        src: *const c_void,
        inlen: u32,
        dst: *mut c_void,
        outlen: u32,
        partial: bool,
        reason: *mut *const u8,
    ) -> c_int;
    pub(crate) fn erofs_rs_glue_grab_folio_nowait(inode: *mut bindings::inode, index: u64) -> *mut bindings::folio;
    pub(crate) fn erofs_rs_glue_lz4_decompress(
        src: *const c_void,
        dst: *mut c_void,
        srclen: c_int,
        outlen: c_int,
        partial: bool,
    ) -> c_int;
    pub(crate) fn erofs_rs_glue_readahead_folio(rac: *mut bindings::readahead_control) -> *mut bindings::folio;
    pub(crate) fn erofs_rs_glue_readahead_pos(rac: *mut bindings::readahead_control) -> u64;
    pub(crate) fn erofs_rs_glue_readahead_length(rac: *mut bindings::readahead_control) -> u64;
    pub(crate) fn erofs_rs_glue_readahead_expand(rac: *mut bindings::readahead_control, start: u64, len: u64);
    pub(crate) fn erofs_rs_glue_readahead_inode(rac: *mut bindings::readahead_control) -> *mut bindings::inode;
    pub(crate) fn erofs_rs_glue_accel_open(stats: *mut ZStatsRaw, name: *const u8, windowbits: u32) -> *mut AccelRaw;
    pub(crate) fn erofs_rs_glue_accel_close(a: *mut AccelRaw);
    pub(crate) fn erofs_rs_glue_accel_submit(
        a: *mut AccelRaw,
        input: *mut *mut bindings::folio,
        nin: u32,
        in_off: u32,
        inlen: u32,
        out: *mut *mut bindings::folio,
        nout: u32,
        out_off: u32,
        outlen: u32,
    ) -> *mut AslotRaw;
    pub(crate) fn erofs_rs_glue_accel_wait(sl: *mut AslotRaw, outlen: u32) -> c_int;
    pub(crate) fn erofs_rs_glue_accel_fallback(a: *mut AccelRaw);
    pub(crate) fn erofs_rs_glue_accel_default(buf: *mut u8, len: usize);
}
