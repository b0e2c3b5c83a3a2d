// SPDX-License-Identifier: GPL-2.0-only
//! Filesystem contexts (`struct fs_context`, include/linux/fs_context.h): the mount options,
//! parsed with `fs_parse()` against the option table [`PARAMETERS`] into a Rust-owned
//! [`MountOpts`], the choice between a block device and a backing file (`get_tree`), and the
//! rules of a remount. C counterpart: fs/erofs/super.c (`erofs_fs_parameters`,
//! `erofs_fc_parse_param`, `erofs_fc_get_tree`, `erofs_fc_reconfigure`,
//! `erofs_init_fs_context`).
//!
//! The option table and the context operations ([`CONTEXT_OPS`]), whose entries are the
//! trampolines at the end of this file, are built here as include/linux/fs_parser.h's
//! `fsparam_*()` macros build them.

use super::{
    sys,
    tables::Table,
    Device,
    SuperBlock, //
};
use core::{
    fmt,
    marker::PhantomData,
    ptr::{
        self,
        NonNull, //
    },
    sync::atomic::{
        AtomicU32,
        Ordering, //
    },
};
use kernel::{
    bindings,
    error::{
        from_err_ptr,
        from_result,
        to_result, //
    },
    ffi::{
        c_char,
        c_int,
        c_void, //
    },
    fs::File,
    prelude::*,
    seq_file::SeqFile,
    str::CString,
    sync::aref::ARef, //
};

/// At most this many `device=` options (`EROFS_RS_MAX_DEVICES` before; the C driver has no
/// limit of its own, but its device table has at most 65535 entries).
const MAX_DEVICES: usize = 64;

/// `decomp_accel_min=` default: compressed size from which DEFLATE pclusters are offloaded.
const ACCEL_MIN_DEFAULT: u32 = 0;

/// The option keys (`Opt_*` of fs/erofs/super.c): what `fs_parse()` returns for an entry of
/// [`PARAMETERS`].
mod key {
    pub(super) const USER_XATTR: u8 = 0;
    pub(super) const ACL: u8 = 1;
    pub(super) const CACHE_STRATEGY: u8 = 2;
    pub(super) const FSOFFSET: u8 = 3;
    pub(super) const DEVICE: u8 = 4;
    pub(super) const DIRECTIO: u8 = 5;
    pub(super) const DECOMP_PCPU_KTHREADS: u8 = 6;
    pub(super) const DECOMP_ACCEL: u8 = 7;
    pub(super) const DECOMP_ACCEL_MIN: u8 = 8;
    pub(super) const DAX: u8 = 9;
    pub(super) const DAX_ENUM: u8 = 10;
    pub(super) const DOMAIN_ID: u8 = 11;
    pub(super) const INODE_SHARE: u8 = 12;
    pub(super) const SOURCE: u8 = 13;
}

/// `__fsparam()`: the entry for option `name` with key `opt`, parsed by `type_` (none for a
/// flag), with `fs_param_*` `flags` and the type's `data` (an enum's values).
const fn fsparam(
    type_: sys::fs_param_type,
    name: &'static CStr,
    opt: u8,
    flags: u32,
    data: *const c_void,
) -> sys::fs_parameter_spec {
    sys::fs_parameter_spec {
        name: kernel::str::as_char_ptr_in_const_context(name),
        type_,
        opt,
        // CAST: the `fs_param_*` flags are small constants of the `unsigned short` field.
        flags: flags as u16,
        data,
    }
}

/// `fsparam_flag()`: `name`, without a value.
const fn fsparam_flag(name: &'static CStr, opt: u8) -> sys::fs_parameter_spec {
    fsparam(None, name, opt, 0, ptr::null())
}

/// `fsparam_flag_no()`: `name` or `noname`.
const fn fsparam_flag_no(name: &'static CStr, opt: u8) -> sys::fs_parameter_spec {
    fsparam(None, name, opt, sys::fs_param_neg_with_no, ptr::null())
}

/// `fsparam_u32()`: `name=` a `u32`.
const fn fsparam_u32(name: &'static CStr, opt: u8) -> sys::fs_parameter_spec {
    fsparam(Some(sys::fs_param_is_u32), name, opt, 0, ptr::null())
}

/// `fsparam_u64()`: `name=` a `u64`.
const fn fsparam_u64(name: &'static CStr, opt: u8) -> sys::fs_parameter_spec {
    fsparam(Some(sys::fs_param_is_u64), name, opt, 0, ptr::null())
}

/// `fsparam_string()`: `name=` a string.
const fn fsparam_string(name: &'static CStr, opt: u8) -> sys::fs_parameter_spec {
    fsparam(Some(sys::fs_param_is_string), name, opt, 0, ptr::null())
}

/// `fsparam_file_or_string()`: `name=` a path, or a file descriptor (`fsconfig()`).
const fn fsparam_file_or_string(name: &'static CStr, opt: u8) -> sys::fs_parameter_spec {
    let type_: sys::fs_param_type = Some(sys::fs_param_is_file_or_string);
    fsparam(type_, name, opt, 0, ptr::null())
}

/// `fsparam_enum()`: `name=` one of the names of `values`.
const fn fsparam_enum<const N: usize>(
    name: &'static CStr,
    opt: u8,
    values: &'static Constants<N>,
) -> sys::fs_parameter_spec {
    let data = values.as_ptr().cast::<c_void>();
    fsparam(Some(sys::fs_param_is_enum), name, opt, 0, data)
}

/// The values of an enum option (`struct constant_table[]`), ending with an empty entry.
type Constants<const N: usize> = Table<[sys::constant_table; N]>;

/// The entry of a [`Constants`] that maps `name` to `value`.
const fn constant(name: &'static CStr, value: u32) -> sys::constant_table {
    sys::constant_table {
        name: kernel::str::as_char_ptr_in_const_context(name),
        // CAST: small constants; `fs_parse()` hands them back as `uint_32`.
        value: value as c_int,
    }
}

/// `cache_strategy=`'s values (`erofs_param_cache_strategy`).
static CACHE_STRATEGY: Constants<4> = Table::new([
    constant(c"disabled", CacheStrategy::DISABLED),
    constant(c"readahead", CacheStrategy::READAHEAD),
    constant(c"readaround", CacheStrategy::READAROUND),
    pin_init::zeroed(),
]);

/// `dax=`'s values (`erofs_dax_param_enums`).
static DAX_ENUM: Constants<3> = Table::new([
    constant(c"always", Dax::ALWAYS),
    constant(c"never", Dax::NEVER),
    pin_init::zeroed(),
]);

/// The mount options (`erofs_fs_parameters`), ending with an empty entry: the filesystem type
/// names it, and `parse_param` parses each option against it.
pub(super) static PARAMETERS: Table<[sys::fs_parameter_spec; 15]> = Table::new([
    fsparam_flag_no(c"user_xattr", key::USER_XATTR),
    fsparam_flag_no(c"acl", key::ACL),
    fsparam_enum(c"cache_strategy", key::CACHE_STRATEGY, &CACHE_STRATEGY),
    fsparam_u64(c"fsoffset", key::FSOFFSET),
    fsparam_string(c"device", key::DEVICE),
    fsparam_flag_no(c"directio", key::DIRECTIO),
    fsparam_flag_no(c"decomp_pcpu_kthreads", key::DECOMP_PCPU_KTHREADS),
    fsparam_string(c"decomp_accel", key::DECOMP_ACCEL),
    fsparam_u32(c"decomp_accel_min", key::DECOMP_ACCEL_MIN),
    fsparam_flag(c"dax", key::DAX),
    fsparam_enum(c"dax", key::DAX_ENUM, &DAX_ENUM),
    fsparam_string(c"domain_id", key::DOMAIN_ID),
    fsparam_flag(c"inode_share", key::INODE_SHARE),
    fsparam_file_or_string(c"source", key::SOURCE),
    pin_init::zeroed(),
]);

/// The operations of our filesystem contexts (`erofs_context_ops`).
static CONTEXT_OPS: Table<sys::fs_context_operations> = Table::new(sys::fs_context_operations {
    parse_param: Some(erofs_rs_fc_parse_param),
    get_tree: Some(erofs_rs_fc_get_tree),
    reconfigure: Some(erofs_rs_fc_reconfigure),
    free: Some(erofs_rs_fc_free),
    ..pin_init::zeroed()
});

/// `cache_strategy=` (`EROFS_ZIP_CACHE_*`).
#[derive(Clone, Copy, PartialEq, Eq, Debug)]
pub(crate) enum CacheStrategy {
    /// `disabled`.
    Disabled,
    /// `readahead`.
    ReadAhead,
    /// `readaround`, the default.
    ReadAround,
}

impl CacheStrategy {
    /// `disabled`'s value in [`CACHE_STRATEGY`].
    const DISABLED: u32 = 0;
    /// `readahead`'s.
    const READAHEAD: u32 = 1;
    /// `readaround`'s.
    const READAROUND: u32 = 2;

    /// The strategy of a value of [`CACHE_STRATEGY`].
    fn from_raw(v: u32) -> Option<Self> {
        match v {
            Self::DISABLED => Some(Self::Disabled),
            Self::READAHEAD => Some(Self::ReadAhead),
            Self::READAROUND => Some(Self::ReadAround),
            _ => None,
        }
    }

    /// The option's spelling, as `/proc/mounts` shows it.
    pub(crate) fn name(self) -> &'static str {
        match self {
            Self::Disabled => "disabled",
            Self::ReadAhead => "readahead",
            Self::ReadAround => "readaround",
        }
    }
}

/// `dax`, `dax=always`, `dax=never` (`EROFS_MOUNT_DAX_ALWAYS`, `EROFS_MOUNT_DAX_NEVER`).
#[derive(Clone, Copy, PartialEq, Eq, Debug)]
pub(crate) enum Dax {
    /// `dax`, `dax=always`.
    Always,
    /// `dax=never`.
    Never,
}

impl Dax {
    /// `always`'s value in [`DAX_ENUM`].
    const ALWAYS: u32 = 1;
    /// `never`'s.
    const NEVER: u32 = 2;
}

/// The on/off mount options (the `EROFS_MOUNT_*` bits of `sbi->opt.mount_opt` but DAX, which
/// is a [`Dax`]).
#[derive(Clone, Copy, PartialEq, Eq, Default, Debug)]
pub(crate) struct MountFlags(u8);

impl MountFlags {
    /// `user_xattr` (`XATTR_USER`).
    pub(crate) const USER_XATTR: Self = Self(1 << 0);
    /// `acl` (`POSIX_ACL`).
    pub(crate) const ACL: Self = Self(1 << 1);
    /// `directio` (`DIRECT_IO`): file-backed mounts read their backing file with O_DIRECT.
    pub(crate) const DIRECT_IO: Self = Self(1 << 2);
    /// `decomp_pcpu_kthreads`: decompression on per-CPU kthreads.
    pub(crate) const PCPU_KTHREADS: Self = Self(1 << 3);
    /// `inode_share` (`INODE_SHARE`), with `domain_id=`.
    pub(crate) const INODE_SHARE: Self = Self(1 << 4);

    /// Whether every flag of `f` is set.
    pub(crate) fn contains(self, f: Self) -> bool {
        self.0 & f.0 == f.0
    }

    /// Sets (`on`) or clears the flags of `f`.
    pub(crate) fn set(&mut self, f: Self, on: bool) {
        if on {
            self.0 |= f.0;
        } else {
            self.0 &= !f.0;
        }
    }
}

impl core::ops::BitOr for MountFlags {
    type Output = Self;

    fn bitor(self, rhs: Self) -> Self {
        Self(self.0 | rhs.0)
    }
}

/// The options a remount replaces (`sbi->opt` of the C driver): plain values.
#[derive(Clone, Copy, PartialEq, Eq, Debug)]
pub(crate) struct SbOpts {
    /// The on/off options.
    pub(crate) flags: MountFlags,
    /// `dax=`, if given.
    pub(crate) dax: Option<Dax>,
    /// `cache_strategy=`.
    pub(crate) cache_strategy: CacheStrategy,
}

impl SbOpts {
    /// The options as one word: the flags in bits 0-7, `dax` in 8-9, the cache strategy in
    /// 10-11.
    const fn pack(self) -> u32 {
        let dax = match self.dax {
            None => 0,
            Some(Dax::Always) => 1,
            Some(Dax::Never) => 2,
        };
        let cache = match self.cache_strategy {
            CacheStrategy::Disabled => 0,
            CacheStrategy::ReadAhead => 1,
            CacheStrategy::ReadAround => 2,
        };
        // CAST: widening.
        (self.flags.0 as u32) | (dax << 8) | (cache << 10)
    }

    /// The options [`SbOpts::pack`] packed.
    const fn unpack(v: u32) -> Self {
        // CAST: the low byte holds the flags (`pack`).
        let flags = MountFlags((v & 0xff) as u8);
        let dax = match (v >> 8) & 3 {
            1 => Some(Dax::Always),
            2 => Some(Dax::Never),
            _ => None,
        };
        let cache_strategy = match (v >> 10) & 3 {
            0 => CacheStrategy::Disabled,
            1 => CacheStrategy::ReadAhead,
            _ => CacheStrategy::ReadAround,
        };
        Self {
            flags,
            dax,
            cache_strategy,
        }
    }
}

// `unpack` inverts `pack` for every value of every field.
const _: () = {
    let daxes = [None, Some(Dax::Always), Some(Dax::Never)];
    let caches = [
        CacheStrategy::Disabled,
        CacheStrategy::ReadAhead,
        CacheStrategy::ReadAround,
    ];
    let mut flags = 0u32;
    while flags <= 0xff {
        let mut d = 0;
        while d < daxes.len() {
            let mut c = 0;
            while c < caches.len() {
                // CAST: `flags <= 0xff`.
                let o = SbOpts {
                    flags: MountFlags(flags as u8),
                    dax: daxes[d],
                    cache_strategy: caches[c],
                };
                assert!(SbOpts::unpack(o.pack()).pack() == o.pack());
                assert!(SbOpts::unpack(o.pack()).flags.0 == o.flags.0);
                c += 1;
            }
            d += 1;
        }
        flags += 1;
    }
};

/// The [`SbOpts`] of a mounted superblock, which a remount replaces while readers look at
/// them: one word, so that a reader sees all of one set.
pub(crate) struct AtomicSbOpts(AtomicU32);

impl AtomicSbOpts {
    /// Holds `o`.
    pub(crate) fn new(o: SbOpts) -> Self {
        Self(AtomicU32::new(o.pack()))
    }

    /// The current options.
    pub(crate) fn load(&self) -> SbOpts {
        // ORDERING: plain option values; readers need no ordering with other memory.
        SbOpts::unpack(self.0.load(Ordering::Relaxed))
    }

    /// Replaces the options.
    pub(crate) fn store(&self, o: SbOpts) {
        // ORDERING: see `load`.
        self.0.store(o.pack(), Ordering::Relaxed);
    }
}

/// `domain_id=`: the string the `fs_parameter` carried, taken over, and freed with
/// `kfree_sensitive` as the C driver frees it.
///
/// # Invariants
///
/// `ptr` is a NUL-terminated string allocated with `kmalloc`, owned by this value.
pub(crate) struct DomainId {
    ptr: NonNull<c_char>,
}

// SAFETY: an owned, immutable heap string: usable and freeable from any thread.
unsafe impl Send for DomainId {}
// SAFETY: shared access only reads it.
unsafe impl Sync for DomainId {}

impl DomainId {
    /// The string, without its NUL.
    pub(crate) fn as_bytes(&self) -> &[u8] {
        // SAFETY: a NUL-terminated string we own (type invariant), live while `self` is.
        unsafe { CStr::from_char_ptr(self.ptr.as_ptr()) }.to_bytes()
    }
}

impl Drop for DomainId {
    fn drop(&mut self) {
        // SAFETY: a `kmalloc`ed string we own (type invariant); freed once, here.
        unsafe { bindings::kfree_sensitive(self.ptr.as_ptr().cast::<c_void>()) };
    }
}

/// The parsed mount options, owned by the fs_context and lent to `fill_super` and
/// `reconfigure` (`struct erofs_mount_opts` and the fs_context parts of `erofs_sb_info`).
pub(crate) struct MountOpts {
    /// What a remount may change.
    pub(crate) sb: SbOpts,
    /// `fsoffset=`: where the image starts in its device or file.
    pub(crate) fsoffset: u64,
    /// The `device=` paths, in order (at most [`MAX_DEVICES`]).
    pub(crate) devices: KVec<CString>,
    /// `decomp_accel=`: the crypto driver to offload DEFLATE to (shorter than
    /// `CRYPTO_MAX_ALG_NAME`).
    pub(crate) accel: Option<CString>,
    /// `decomp_accel_min=`: the smallest pcluster offloaded, in bytes.
    pub(crate) accel_min: u32,
    /// `domain_id=`.
    pub(crate) domain_id: Option<DomainId>,
}

impl MountOpts {
    /// The C driver's defaults (`erofs_default_options`): `user_xattr`, `acl`,
    /// `cache_strategy=readaround`.
    fn new() -> Self {
        MountOpts {
            sb: SbOpts {
                flags: MountFlags::USER_XATTR | MountFlags::ACL,
                dax: None,
                cache_strategy: CacheStrategy::ReadAround,
            },
            fsoffset: 0,
            devices: KVec::new(),
            accel: None,
            accel_min: ACCEL_MIN_DEFAULT,
            domain_id: None,
        }
    }

    /// Applies one option (`erofs_fc_parse_param`).
    fn apply(&mut self, fc: &FcLog<'_>, opt: Opt<'_>) -> Result {
        let flags = &mut self.sb.flags;
        match opt {
            Opt::UserXattr(on) => flags.set(MountFlags::USER_XATTR, on),
            Opt::Acl(on) => flags.set(MountFlags::ACL, on),
            Opt::DirectIo(on) => flags.set(MountFlags::DIRECT_IO, on),
            Opt::PcpuKthreads(on) => flags.set(MountFlags::PCPU_KTHREADS, on),
            Opt::InodeShare => flags.set(MountFlags::INODE_SHARE, true),
            Opt::CacheStrategy(c) => self.sb.cache_strategy = c,
            Opt::Fsoffset(off) => self.fsoffset = off,
            Opt::DecompAccelMin(min) => self.accel_min = min,
            Opt::DecompAccel(name) => {
                // CAST: a `u32` constant (128).
                if name.to_bytes().len() >= sys::CRYPTO_MAX_ALG_NAME as usize {
                    return Err(fc.invalfc(format_args!("decomp_accel: driver name too long")));
                }
                self.accel = Some(CString::try_from(name)?);
            }
            Opt::Dax(mode) => {
                // As erofs_fc_set_dax_mode(): DAX options exist only in kernels with FS_DAX.
                if !cfg!(CONFIG_FS_DAX) {
                    return Err(fc.invalfc(format_args!("dax options not supported")));
                }
                self.sb.dax = Some(mode);
            }
            Opt::DomainId(d) => self.domain_id = Some(d),
            Opt::Device(path) => {
                if self.devices.len() >= MAX_DEVICES {
                    return Err(
                        fc.invalfc(format_args!("too many devices (at most {MAX_DEVICES})"))
                    );
                }
                self.devices.push(CString::try_from(path)?, GFP_KERNEL)?;
            }
        }
        Ok(())
    }

    /// Option combinations refused before the image is read (`erofs_fc_fill_super`).
    fn validate(&self, fc: &FsContext<'_>) -> Result {
        let share = self.sb.flags.contains(MountFlags::INODE_SHARE);
        if share && self.domain_id.is_none() {
            return Err(fc.invalfc(format_args!("domain_id is needed when inode_share is on")));
        }
        if share && self.sb.dax == Some(Dax::Always) {
            return Err(fc.invalfc(format_args!("FSDAX is not allowed when inode_share is on")));
        }
        Ok(())
    }
}

/// One option as `fs_parse()` found it in [`PARAMETERS`], typed by its key.
enum Opt<'a> {
    UserXattr(bool),
    Acl(bool),
    CacheStrategy(CacheStrategy),
    Fsoffset(u64),
    Device(&'a CStr),
    DirectIo(bool),
    PcpuKthreads(bool),
    DecompAccel(&'a CStr),
    DecompAccelMin(u32),
    Dax(Dax),
    DomainId(DomainId),
    InodeShare,
}

/// What `fs_private` of our fs_contexts points to.
struct Context {
    /// The backing file of a file-backed mount, until `fill_super` takes it.
    file: Option<ARef<File>>,
    opts: MountOpts,
}

/// A filesystem context of ours, borrowed for one `fs_context_operations` call.
///
/// # Invariants
///
/// `ptr` is a live `fs_context` of this filesystem type whose `fs_private` points to a
/// [`Context`] made by [`erofs_rs_init_fs_context`], for `'a`; nothing else uses that context
/// meanwhile (the VFS runs one operation of a context at a time).
struct FsContext<'a> {
    ptr: *mut sys::fs_context,
    _p: PhantomData<&'a mut sys::fs_context>,
}

impl<'a> FsContext<'a> {
    /// # Safety
    ///
    /// `ptr` is the argument of a call of one of our `fs_context_operations` (or of
    /// `fill_super` from `get_tree_*`), after `erofs_rs_init_fs_context` succeeded on it, and
    /// no other [`FsContext`] of it is used until the returned one is dropped (except as
    /// [`FsContext::get_tree_bdev`] and [`FsContext::get_tree_nodev`] allow).
    unsafe fn from_raw(ptr: *mut sys::fs_context) -> Self {
        // INVARIANT: by the caller's contract.
        FsContext {
            ptr,
            _p: PhantomData,
        }
    }

    fn ctx(&self) -> &Context {
        // SAFETY: `fs_private` is our `Context` (type invariant), used by no one else now.
        unsafe { &*(*self.ptr).fs_private.cast::<Context>() }
    }

    fn ctx_mut(&mut self) -> &mut Context {
        // SAFETY: as in `ctx`; `&mut self` makes this the only borrow.
        unsafe { &mut *(*self.ptr).fs_private.cast::<Context>() }
    }

    /// The context's log, for messages while its [`Context`] is borrowed.
    fn logger(&self) -> FcLog<'a> {
        // SAFETY: `ptr` is live (type invariant).
        let log = unsafe { (*self.ptr).log };
        // INVARIANT: the log and prefix of a live context live as long as it.
        FcLog {
            log: log.log,
            prefix: log.prefix,
            _p: PhantomData,
        }
    }

    /// `invalfc()`: logs an error with the filesystem's name as prefix; `EINVAL`.
    fn invalfc(&self, args: fmt::Arguments<'_>) -> Error {
        self.logger().invalfc(args)
    }

    /// `invalf()`: logs an error without prefix; `EINVAL`.
    fn invalf(&self, args: fmt::Arguments<'_>) -> Error {
        self.logger().invalf(args)
    }

    /// The source (`fc->source`), if given.
    fn source(&self) -> Option<&CStr> {
        // SAFETY: `ptr` is live (type invariant).
        let s = unsafe { (*self.ptr).source };
        // SAFETY: a non-null `source` is a NUL-terminated string the context owns.
        (!s.is_null()).then(|| unsafe { CStr::from_char_ptr(s) })
    }

    /// Sets or clears `SB_*` flags of the superblock a remount changes.
    fn set_sb_flags(&mut self, flags: u32, on: bool) {
        // SAFETY: `ptr` is live (type invariant) and nothing else touches it meanwhile.
        let f = unsafe { &mut (*self.ptr).sb_flags };
        if on {
            *f |= flags;
        } else {
            *f &= !flags;
        }
    }

    /// `get_tree_bdev_flags(GET_TREE_BDEV_QUIET_LOOKUP)` with our `fill_super`.
    fn get_tree_bdev(&mut self) -> Result {
        // SAFETY: `ptr` is live; `fill_super` makes its own `FsContext` of it while `self` is
        // borrowed mutably here, so the two are never used at once.
        to_result(unsafe {
            sys::get_tree_bdev_flags(self.ptr, Some(fill_super), sys::GET_TREE_BDEV_QUIET_LOOKUP)
        })
    }

    /// `get_tree_nodev()` with our `fill_super`.
    fn get_tree_nodev(&mut self) -> Result {
        // SAFETY: as in `get_tree_bdev`.
        to_result(unsafe { sys::get_tree_nodev(self.ptr, Some(fill_super)) })
    }

    /// `source=`: a path (mount(2), `FSCONFIG_SET_STRING`) or, as `erofs_fc_parse_source()`,
    /// an open regular file (`FSCONFIG_SET_FD`) whose reference the mount takes over.
    ///
    /// # Safety
    ///
    /// `param` is the live argument of `parse_param` on this context.
    unsafe fn parse_source(&mut self, param: *mut sys::fs_parameter) -> Result {
        // SAFETY: `ptr` is live (type invariant).
        if !unsafe { (*self.ptr).source }.is_null() || self.ctx().file.is_some() {
            return Err(self.invalf(format_args!("Multiple sources")));
        }
        // SAFETY: `param` is live (contract).
        let ty = unsafe { (*param).type_() };
        if ty == sys::fs_value_type_fs_value_is_string {
            // SAFETY: a string parameter's string is `kmalloc`ed; the context frees its source
            // with `kfree`, so it can take it over, leaving the parameter none to free.
            unsafe {
                (*self.ptr).source = (*param).__bindgen_anon_1.string;
                (*param).__bindgen_anon_1.string = ptr::null_mut();
            }
            return Ok(());
        }
        if ty != sys::fs_value_type_fs_value_is_file {
            return Err(EINVAL);
        }
        // CAST: PATH_MAX (4096) fits in both.
        let mut buf = KVec::<u8>::with_capacity(bindings::PATH_MAX as usize, GFP_KERNEL)?;
        // SAFETY: a file parameter's file is referenced; `buf` is writable for PATH_MAX bytes.
        let p = unsafe {
            bindings::file_path(
                (*param).__bindgen_anon_1.file,
                buf.as_mut_ptr().cast::<c_char>(),
                bindings::PATH_MAX as c_int,
            )
        };
        let p = from_err_ptr(p)?;
        // SAFETY: `file_path` returned a NUL-terminated string inside `buf`.
        let source = unsafe { bindings::kstrdup(p, bindings::GFP_KERNEL) };
        drop(buf);
        if source.is_null() {
            return Err(ENOMEM);
        }
        // SAFETY: `ptr` is live; the context frees its source with `kfree`, as `kstrdup`
        // allocates; the parameter's file reference passes to us, leaving it none to drop.
        let file = unsafe {
            (*self.ptr).source = source;
            let f = (*param).__bindgen_anon_1.file;
            (*param).__bindgen_anon_1.file = ptr::null_mut();
            f
        };
        let file = NonNull::new(file.cast::<File>()).ok_or(EINVAL)?;
        // SAFETY: we own one reference of the file (just above); `File` is a transparent
        // wrapper of `struct file`, and we never use `fdget_pos` on it.
        self.ctx_mut().file = Some(unsafe { ARef::from_raw(file) });
        Ok(())
    }
}

/// The log of a filesystem context (`struct p_log`): where `errorfc()` and friends write.
///
/// # Invariants
///
/// `log` is null or the live `fc_log` of a context that outlives `'a`, and `prefix` null or
/// a string that does.
struct FcLog<'a> {
    log: *mut sys::fc_log,
    prefix: *const c_char,
    _p: PhantomData<&'a ()>,
}

impl FcLog<'_> {
    /// Logs an error (`logfc(.., 'e', ..)`) with `prefix`.
    fn error(&self, prefix: *const c_char, args: fmt::Arguments<'_>) {
        // CAST: an ASCII letter.
        let level = b'e' as c_char;
        // SAFETY: `log` and `prefix` are null or live (type invariant), and `%pA` takes a
        // pointer to `fmt::Arguments`.
        unsafe {
            sys::logfc(
                self.log,
                prefix,
                level,
                c"%pA".as_char_ptr(),
                ptr::from_ref(&args).cast::<c_void>(),
            )
        };
    }

    /// `invalfc()`: logs an error with the filesystem's name as prefix; `EINVAL`.
    fn invalfc(&self, args: fmt::Arguments<'_>) -> Error {
        self.error(self.prefix, args);
        EINVAL
    }

    /// `invalf()`: logs an error without prefix; `EINVAL`.
    fn invalf(&self, args: fmt::Arguments<'_>) -> Error {
        self.error(ptr::null(), args);
        EINVAL
    }
}

/// Whether `file` may back a mount: a regular file with `read_folio`.
fn file_backable(file: &File) -> bool {
    let f = file.as_ptr();
    // SAFETY: a referenced file has a live inode and mapping with their operations.
    unsafe {
        (u32::from((*(*f).f_inode).i_mode) & bindings::S_IFMT) == bindings::S_IFREG
            && (*(*(*f).f_mapping).a_ops).read_folio.is_some()
    }
}

/// `init_fs_context`: a context with the default options.
///
/// # Safety
///
/// `fc` is a new `fs_context` of our filesystem type.
pub(crate) unsafe extern "C" fn erofs_rs_init_fs_context(fc: *mut bindings::fs_context) -> c_int {
    // CAST: the same C struct, which kernel::bindings has only as an opaque type.
    let fc = fc.cast::<sys::fs_context>();
    let ctx = match KBox::new(
        Context {
            file: None,
            opts: MountOpts::new(),
        },
        GFP_KERNEL,
    ) {
        Ok(c) => c,
        Err(_) => return ENOMEM.to_errno(),
    };
    // SAFETY: `fc` is live (contract); `erofs_rs_fc_free` frees what we store here, and the
    // operations table is a static.
    unsafe {
        (*fc).fs_private = KBox::into_raw(ctx).cast::<c_void>();
        (*fc).ops = CONTEXT_OPS.as_ptr();
    }
    0
}

/// `parse_param`: one option into the context; unknown ones fail with `fs_parse()`'s message.
///
/// # Safety
///
/// `fc` and `param` are the live arguments of `fs_context_operations::parse_param` on one of
/// our contexts.
pub(crate) unsafe extern "C" fn erofs_rs_fc_parse_param(
    fc: *mut sys::fs_context,
    param: *mut sys::fs_parameter,
) -> c_int {
    // SAFETY: by this function's contract.
    let mut fc = unsafe { FsContext::from_raw(fc) };
    let mut result = sys::fs_parse_result::default();
    // SAFETY: `fc` and `param` are live; the table is a static, terminated by an empty entry.
    let opt = unsafe {
        sys::__fs_parse(
            &raw mut (*fc.ptr).log,
            PARAMETERS.as_ptr().cast::<sys::fs_parameter_spec>(),
            param,
            &mut result,
        )
    };
    if opt < 0 {
        return opt;
    }
    let r = &result.__bindgen_anon_1;
    // `fs_parse` fills the member of `result` that the table's type for the key names:
    // `boolean` for flags, `uint_32` for enums and u32, `uint_64` for u64. Each arm below
    // reads only that one; the integers are zero-initialised, so reading them is always
    // defined, but a `bool` must not be read from bytes `fs_parse` did not write as one.
    // SAFETY: called only for the flag keys (`fsparam_flag_no`), whose `boolean` is set.
    let boolean = || unsafe { *r.boolean.as_ref() };
    // SAFETY: an integer member of a zero-initialised union: every bit pattern is valid.
    let uint_32 = unsafe { *r.uint_32.as_ref() };
    // SAFETY: as above.
    let uint_64 = unsafe { *r.uint_64.as_ref() };
    // SAFETY: `param` is live; string parameters (checked by `fs_parse`) carry a
    // NUL-terminated string until it is taken or the parameter is freed after this call.
    let string = || unsafe { CStr::from_char_ptr((*param).__bindgen_anon_1.string) };
    // The keys are the `u8` option numbers of the table.
    let Ok(opt) = u8::try_from(opt) else {
        return EINVAL.to_errno();
    };
    let opt = match opt {
        key::USER_XATTR => Opt::UserXattr(boolean()),
        key::ACL => Opt::Acl(boolean()),
        key::DIRECTIO => Opt::DirectIo(boolean()),
        key::DECOMP_PCPU_KTHREADS => Opt::PcpuKthreads(boolean()),
        key::INODE_SHARE => Opt::InodeShare,
        key::CACHE_STRATEGY => match CacheStrategy::from_raw(uint_32) {
            Some(c) => Opt::CacheStrategy(c),
            None => return EINVAL.to_errno(),
        },
        key::FSOFFSET => Opt::Fsoffset(uint_64),
        key::DECOMP_ACCEL_MIN => Opt::DecompAccelMin(uint_32),
        key::DEVICE => Opt::Device(string()),
        key::DECOMP_ACCEL => Opt::DecompAccel(string()),
        key::DAX => Opt::Dax(Dax::Always),
        key::DAX_ENUM => match uint_32 {
            Dax::ALWAYS => Opt::Dax(Dax::Always),
            Dax::NEVER => Opt::Dax(Dax::Never),
            _ => return EINVAL.to_errno(),
        },
        key::DOMAIN_ID => {
            // SAFETY: `param` is live and carries a `kmalloc`ed string (a string parameter),
            // which we take over, leaving the parameter none to free.
            let s =
                unsafe { ptr::replace(&raw mut (*param).__bindgen_anon_1.string, ptr::null_mut()) };
            match NonNull::new(s) {
                // INVARIANT: a NUL-terminated `kmalloc`ed string, now ours.
                Some(ptr) => Opt::DomainId(DomainId { ptr }),
                None => return EINVAL.to_errno(),
            }
        }
        key::SOURCE => {
            // SAFETY: `param` is the live argument of this call.
            return from_result(|| unsafe { fc.parse_source(param) }.map(|()| 0));
        }
        _ => return EINVAL.to_errno(),
    };
    from_result(|| {
        let log = fc.logger();
        fc.ctx_mut().opts.apply(&log, opt)?;
        Ok(0)
    })
}

/// `get_tree`: as the C driver, a block device if the source is one, else a regular file.
///
/// # Safety
///
/// `fc` is the live argument of `fs_context_operations::get_tree` on one of our contexts.
pub(crate) unsafe extern "C" fn erofs_rs_fc_get_tree(fc: *mut sys::fs_context) -> c_int {
    // SAFETY: by this function's contract.
    let mut fc = unsafe { FsContext::from_raw(fc) };
    from_result(|| {
        if let Some(file) = fc.ctx().file.as_ref() {
            // source= given as a file descriptor: only regular files, as the C driver.
            if !file_backable(file) {
                return Err(fc.invalfc(format_args!("source is unsupported")));
            }
        } else {
            match fc.get_tree_bdev() {
                Err(e) if e == ENOTBLK => {}
                r => return r.map(|()| 0),
            }
            let Some(source) = fc.source() else {
                return Err(fc.invalf(format_args!("No source specified")));
            };
            // CAST: small flag constants.
            let flags = (bindings::O_RDONLY | bindings::O_LARGEFILE) as c_int;
            // SAFETY: `source` is a NUL-terminated path.
            let file = unsafe { bindings::filp_open(source.as_char_ptr(), flags, 0) };
            let file = NonNull::new(from_err_ptr(file)?.cast::<File>()).ok_or(EINVAL)?;
            // SAFETY: `filp_open` returned a reference, now ours; we never use `fdget_pos`
            // on it.
            let file = unsafe { ARef::from_raw(file) };
            let ok = file_backable(&file);
            fc.ctx_mut().file = Some(file);
            if !ok {
                return Err(ENOTBLK);
            }
        }
        let file = fc.ctx().file.as_ref().ok_or(EINVAL)?.as_ptr();
        // File-backed mounts must not nest into each other: bound the stack as the C driver.
        // SAFETY: a referenced file's inode and superblock are live; `fc` is live.
        let stacked = unsafe {
            let isb = (*(*file).f_inode).i_sb;
            ((*isb).s_type == (*fc.ptr).fs_type && (*isb).s_bdev.is_null())
                || (*isb).s_stack_depth != 0
        };
        if stacked {
            // ENOTBLK, as erofs_fc_fill_super.
            fc.logger().error(
                ptr::null(),
                format_args!("file-backed mounts cannot be applied to stacked fses"),
            );
            return Err(ENOTBLK);
        }
        fc.get_tree_nodev()?;
        Ok(0)
    })
}

/// `fill_super` of `get_tree_*`: checks the options and reads the superblock.
///
/// # Safety
///
/// `sb` is the superblock `get_tree_*` is setting up for `fc`, one of our contexts, inside
/// [`FsContext::get_tree_bdev`] or [`FsContext::get_tree_nodev`].
unsafe extern "C" fn fill_super(sb: *mut bindings::super_block, fc: *mut sys::fs_context) -> c_int {
    // SAFETY: by this function's contract, the caller's `FsContext` is not used meanwhile.
    let mut fc = unsafe { FsContext::from_raw(fc) };
    // Ours from here, even on failure.
    let file = fc.ctx_mut().file.take();
    let opts = &fc.ctx().opts;
    if let Err(e) = opts.validate(&fc) {
        return e.to_errno();
    }
    let acl = opts.sb.flags.contains(MountFlags::ACL);
    // SAFETY: `sb` is being set up and not yet visible to anyone else.
    unsafe {
        if acl {
            (*sb).s_flags |= c_ulong_from(sys::EROFS_RS_SB_POSIXACL);
        } else {
            (*sb).s_flags &= !c_ulong_from(sys::EROFS_RS_SB_POSIXACL);
        }
    }
    let file = file.map_or(ptr::null_mut(), |f| {
        ARef::into_raw(f).as_ptr().cast::<bindings::file>()
    });
    // SAFETY: `sb` is live during `fill_super`; its `s_fs_info` is null (`sget_fc` moved our
    // context's, which we never set); this is its only `SuperBlock<New>`.
    let sb = unsafe { SuperBlock::from_raw_new(sb) };
    // SAFETY: `file` is null (block device) or a referenced regular file whose reference
    // passes to the device.
    let dev = unsafe { Device::new(&sb, file, opts.fsoffset) };
    from_result(|| {
        crate::super_::fill_super(sb, dev, opts)?;
        Ok(0)
    })
}

/// `SB_*` flags are `unsigned long` in `super_block`.
fn c_ulong_from(v: u32) -> kernel::ffi::c_ulong {
    // CAST: `unsigned long` is at least 32 bits wide.
    v as kernel::ffi::c_ulong
}

/// `reconfigure` (remount), as `erofs_fc_reconfigure()`: the new options replace the old
/// ones, except devices, `fsoffset=` and `domain_id=`.
///
/// # Safety
///
/// `fc` is the live argument of `fs_context_operations::reconfigure` on one of our contexts,
/// whose `root` is a mounted superblock of ours.
pub(crate) unsafe extern "C" fn erofs_rs_fc_reconfigure(fc: *mut sys::fs_context) -> c_int {
    // SAFETY: by this function's contract.
    let mut fc = unsafe { FsContext::from_raw(fc) };
    let acl = fc.ctx().opts.sb.flags.contains(MountFlags::ACL);
    fc.set_sb_flags(sys::EROFS_RS_SB_POSIXACL, acl);
    fc.set_sb_flags(sys::EROFS_RS_SB_RDONLY, true);
    // SAFETY: a reconfiguration's `root` is the mounted root, whose superblock is live and
    // attached for the whole call.
    let sb = unsafe { SuperBlock::from_raw((*(*fc.ptr).root).d_sb) };
    let opts = &fc.ctx().opts;
    if opts.domain_id.is_some() {
        sb.log(
            false,
            format_args!("ignoring reconfiguration for domain_id."),
        );
    }
    from_result(|| {
        sb.state().reconfigure(opts)?;
        Ok(0)
    })
}

/// `free`: drops the context's options and backing file.
///
/// # Safety
///
/// `fc` is the live argument of `fs_context_operations::free` on one of our contexts.
pub(crate) unsafe extern "C" fn erofs_rs_fc_free(fc: *mut sys::fs_context) {
    // SAFETY: `fc` is live (contract).
    let p = unsafe { (*fc).fs_private }.cast::<Context>();
    if !p.is_null() {
        // SAFETY: `p` came from `KBox::into_raw` in `erofs_rs_init_fs_context`, and `free` is
        // the context's last operation.
        drop(unsafe { KBox::from_raw(p) });
        // SAFETY: `fc` is live.
        unsafe { (*fc).fs_private = ptr::null_mut() };
    }
}

/// `show_options`: the options of a mounted superblock, as `/proc/mounts` shows them.
///
/// # Safety
///
/// `seq` and `root` are the live arguments of `super_operations::show_options` on one of our
/// mounted superblocks.
pub(crate) unsafe extern "C" fn erofs_rs_show_options(
    seq: *mut bindings::seq_file,
    root: *mut bindings::dentry,
) -> c_int {
    // SAFETY: `seq` is live and used only by this thread during the call (contract).
    let m = unsafe { SeqFile::from_raw(seq) };
    // SAFETY: a mounted root's superblock is live and attached during the call.
    let sb = unsafe { SuperBlock::from_raw((*root).d_sb) };
    crate::super_::show_options(m, sb);
    0
}

/// Writes `bytes` as they are to `m` (`seq_write`), for strings that need not be UTF-8.
pub(crate) fn seq_write(m: &SeqFile, bytes: &[u8]) {
    // CAST: `SeqFile` is a transparent wrapper of `struct seq_file`.
    let p = ptr::from_ref(m).cast_mut().cast::<bindings::seq_file>();
    // SAFETY: `m` is a live seq_file used by this thread only (`SeqFile`'s invariants);
    // `bytes` is readable for its length. A full buffer is noted in the seq_file itself.
    unsafe { bindings::seq_write(p, bytes.as_ptr().cast::<c_void>(), bytes.len()) };
}
