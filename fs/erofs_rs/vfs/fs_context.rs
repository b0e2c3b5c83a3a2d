// SPDX-License-Identifier: GPL-2.0-only
//! Filesystem contexts (`struct fs_context`, include/linux/fs_context.h): a filesystem's mount
//! options ([`MountOptions`]), parsed with `fs_parse()` against its option table
//! ([`ParamTable`], built from [`Param`]s as include/linux/fs_parser.h's `fsparam_*()` macros
//! build them) into a value the context owns; `source=` as a path or a file descriptor; the
//! choice between a block device and a backing file (`get_tree`); and the context operations
//! ([`ContextOps`]), whose entries are the trampolines at the end of this file. C counterpart:
//! fs/fs_context.c and fs/fs_parser.c as a filesystem uses them (fs/erofs/super.c's
//! `erofs_fc_get_tree`, `erofs_fc_parse_source`, `erofs_init_fs_context`); the options
//! themselves are the filesystem's.

use super::{
    fs::FileSystem,
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
    sync::aref::ARef, //
};

/// How `parse_param` hands an option's value to [`MountOptions::apply`], by the type its
/// [`Param`] gave it.
#[derive(Clone, Copy, PartialEq, Eq)]
enum Kind {
    /// `fsparam_flag()` and `fsparam_flag_no()`: [`Value::Flag`].
    Flag,
    /// `fsparam_u32()`: [`Value::U32`].
    U32,
    /// `fsparam_u64()`: [`Value::U64`].
    U64,
    /// `fsparam_enum()`: [`Value::Enum`], the value of the name given.
    Enum,
    /// `fsparam_string()`: [`Value::Str`].
    Str,
    /// `source=` (`fsparam_file_or_string()`): taken by the context itself, as the VFS's
    /// `vfs_parse_fs_param_source()` and `erofs_fc_parse_source()` take it.
    Source,
}

/// One mount option: its entry of the C table (`struct fs_parameter_spec`, as
/// include/linux/fs_parser.h's `fsparam_*()` macros build it) and how its value is handed on.
pub(crate) struct Param {
    spec: sys::fs_parameter_spec,
    kind: Kind,
}

impl Param {
    /// `__fsparam()`: the entry for option `name` with key `key`, parsed by `type_` (none for
    /// a flag), with `fs_param_*` `flags` and the type's `data` (an enum's values).
    const fn new(
        kind: Kind,
        type_: sys::fs_param_type,
        name: &'static CStr,
        key: u8,
        flags: u32,
        data: *const c_void,
    ) -> Self {
        Param {
            spec: sys::fs_parameter_spec {
                name: kernel::str::as_char_ptr_in_const_context(name),
                type_,
                opt: key,
                // CAST: the `fs_param_*` flags are small constants of the `unsigned short`.
                flags: flags as u16,
                data,
            },
            kind,
        }
    }

    /// The empty entry that ends a [`ParamTable`] (C's `{}`).
    pub(crate) const END: Self = Param {
        spec: pin_init::zeroed(),
        kind: Kind::Flag,
    };

    /// `fsparam_flag()`: `name`, without a value.
    pub(crate) const fn flag(name: &'static CStr, key: u8) -> Self {
        Self::new(Kind::Flag, None, name, key, 0, ptr::null())
    }

    /// `fsparam_flag_no()`: `name` or `noname`.
    pub(crate) const fn flag_no(name: &'static CStr, key: u8) -> Self {
        let neg = sys::fs_param_neg_with_no;
        Self::new(Kind::Flag, None, name, key, neg, ptr::null())
    }

    /// `fsparam_u32()`: `name=` a `u32`.
    pub(crate) const fn u32(name: &'static CStr, key: u8) -> Self {
        let ty: sys::fs_param_type = Some(sys::fs_param_is_u32);
        Self::new(Kind::U32, ty, name, key, 0, ptr::null())
    }

    /// `fsparam_u64()`: `name=` a `u64`.
    pub(crate) const fn u64(name: &'static CStr, key: u8) -> Self {
        let ty: sys::fs_param_type = Some(sys::fs_param_is_u64);
        Self::new(Kind::U64, ty, name, key, 0, ptr::null())
    }

    /// `fsparam_string()`: `name=` a string.
    pub(crate) const fn string(name: &'static CStr, key: u8) -> Self {
        let ty: sys::fs_param_type = Some(sys::fs_param_is_string);
        Self::new(Kind::Str, ty, name, key, 0, ptr::null())
    }

    /// `source=`: a path, or a file descriptor (`fsconfig(FSCONFIG_SET_FD)`) of a regular file
    /// to mount; the context keeps it ([`FsContext`]), `apply` never sees it.
    pub(crate) const fn source(name: &'static CStr, key: u8) -> Self {
        let ty: sys::fs_param_type = Some(sys::fs_param_is_file_or_string);
        Self::new(Kind::Source, ty, name, key, 0, ptr::null())
    }

    /// `fsparam_enum()`: `name=` one of the names of `values`.
    pub(crate) const fn enumeration<const N: usize>(
        name: &'static CStr,
        key: u8,
        values: &'static Constants<N>,
    ) -> Self {
        let ty: sys::fs_param_type = Some(sys::fs_param_is_enum);
        let data = values.0.as_ptr().cast::<c_void>();
        Self::new(Kind::Enum, ty, name, key, 0, data)
    }
}

/// The values of an enum option (`struct constant_table[]`), ending with an empty entry.
#[repr(transparent)]
pub(crate) struct Constants<const N: usize>(Table<[sys::constant_table; N]>);

impl<const N: usize> Constants<N> {
    /// The entry that ends the table (C's `{}`).
    pub(crate) const END: (&'static CStr, u32) = (c"", 0);

    /// The table of `names` (name, value), the last of which is [`Constants::END`].
    pub(crate) const fn new(names: [(&'static CStr, u32); N]) -> Self {
        // A table the C code can walk: it ends with the empty entry (built below).
        assert!(
            N >= 1 && names[N - 1].0.is_empty(),
            "end the table with END"
        );
        let mut t: [sys::constant_table; N] = [const { pin_init::zeroed() }; N];
        let mut i = 0;
        // The last entry stays empty.
        while i + 1 < N {
            t[i] = sys::constant_table {
                name: kernel::str::as_char_ptr_in_const_context(names[i].0),
                // CAST: small constants; `fs_parse()` hands them back as `uint_32`.
                value: names[i].1 as c_int,
            };
            i += 1;
        }
        Constants(Table::new(t))
    }
}

/// A filesystem's option table (`struct fs_parameter_spec[]`, ending with an empty entry),
/// and how each option's value is handed to [`MountOptions::apply`].
pub(crate) struct ParamTable<const N: usize> {
    specs: Table<[sys::fs_parameter_spec; N]>,
    kinds: [(u8, Kind); N],
}

impl<const N: usize> ParamTable<N> {
    /// The table of `params`, the last of which is [`Param::END`]. Their keys are what
    /// [`MountOptions::apply`] gets.
    pub(crate) const fn new(params: [Param; N]) -> Self {
        // A table `fs_parse()` can walk: it ends with the empty entry (built below); and one
        // key per option, so that a key says how its value is read (`Params::kind`).
        assert!(
            N >= 1 && params[N - 1].spec.name.is_null(),
            "end the table with Param::END"
        );
        let mut i = 0;
        while i + 1 < N {
            let mut j = i + 1;
            while j + 1 < N {
                assert!(
                    params[i].spec.opt != params[j].spec.opt,
                    "two options with one key"
                );
                j += 1;
            }
            i += 1;
        }
        let mut specs: [sys::fs_parameter_spec; N] = [const { pin_init::zeroed() }; N];
        let mut kinds = [(0u8, Kind::Flag); N];
        let mut i = 0;
        // The last entry stays empty.
        while i + 1 < N {
            // SAFETY: a bitwise copy of a struct of plain values (`PlainC`: no drop, no
            // references), read from a live element.
            specs[i] = unsafe { ptr::read(&raw const params[i].spec) };
            kinds[i] = (params[i].spec.opt, params[i].kind);
            i += 1;
        }
        ParamTable {
            specs: Table::new(specs),
            kinds,
        }
    }

    /// The table, for the filesystem type and for `fs_parse()`.
    pub(crate) const fn params(&'static self) -> Params {
        Params {
            specs: self.specs.as_ptr().cast::<sys::fs_parameter_spec>(),
            kinds: &self.kinds,
        }
    }
}

/// A [`ParamTable`] of any size.
#[derive(Clone, Copy)]
pub(crate) struct Params {
    /// The C table, terminated by an empty entry, in static storage.
    specs: *const sys::fs_parameter_spec,
    kinds: &'static [(u8, Kind)],
}

impl Params {
    /// The C table, for `file_system_type::parameters`.
    pub(super) const fn as_ptr(&self) -> *const sys::fs_parameter_spec {
        self.specs
    }

    /// How the option of `key` is handed on.
    fn kind(&self, key: u8) -> Option<Kind> {
        self.kinds.iter().find(|(k, _)| *k == key).map(|(_, k)| *k)
    }
}

/// The value of one option, as `fs_parse()` checked it against its [`Param`].
pub(crate) enum Value<'a> {
    /// A flag: `false` for its `no` form.
    Flag(bool),
    U32(u32),
    U64(u64),
    /// An enum option: the value of the name given.
    Enum(u32),
    Str(ParamStr<'a>),
}

/// The string of a string option, which can be taken over ([`ParamStr::take`]).
///
/// # Invariants
///
/// `param` is the live argument of the `parse_param` call this value is handed to, a string
/// parameter whose string is not null.
pub(crate) struct ParamStr<'a> {
    param: *mut sys::fs_parameter,
    _p: PhantomData<&'a mut sys::fs_parameter>,
}

impl ParamStr<'_> {
    /// The string.
    pub(crate) fn as_cstr(&self) -> &CStr {
        // SAFETY: a string parameter carries a NUL-terminated string until it is taken or
        // freed after the call (type invariant).
        unsafe { CStr::from_char_ptr((*self.param).__bindgen_anon_1.string) }
    }

    /// Takes the string over, leaving the parameter none to free; `None` if it was empty of
    /// one after all.
    pub(crate) fn take(self) -> Option<ParamString> {
        // SAFETY: `param` is live and carries a `kmalloc`ed string (type invariant), which we
        // take over.
        let s = unsafe {
            ptr::replace(
                &raw mut (*self.param).__bindgen_anon_1.string,
                ptr::null_mut(),
            )
        };
        // INVARIANT: a NUL-terminated `kmalloc`ed string, now ours.
        NonNull::new(s).map(|ptr| ParamString { ptr })
    }
}

/// The string of an option, taken over from its parameter, and freed with `kfree_sensitive`
/// (as the C driver frees `domain_id`).
///
/// # Invariants
///
/// `ptr` is a NUL-terminated string allocated with `kmalloc`, owned by this value.
pub(crate) struct ParamString {
    ptr: NonNull<c_char>,
}

// SAFETY: an owned, immutable heap string: usable and freeable from any thread.
unsafe impl Send for ParamString {}
// SAFETY: shared access only reads it.
unsafe impl Sync for ParamString {}

impl ParamString {
    /// The string, without its NUL.
    pub(crate) fn as_bytes(&self) -> &[u8] {
        // SAFETY: a NUL-terminated string we own (type invariant), live while `self` is.
        unsafe { CStr::from_char_ptr(self.ptr.as_ptr()) }.to_bytes()
    }
}

impl Drop for ParamString {
    fn drop(&mut self) {
        // SAFETY: a `kmalloc`ed string we own (type invariant); freed once, here.
        unsafe { bindings::kfree_sensitive(self.ptr.as_ptr().cast::<c_void>()) };
    }
}

/// A filesystem's mount options: parsed one by one from its [`ParamTable`] into a value the
/// filesystem context owns, checked before `fill_super`, lent to it and to `reconfigure`.
pub(crate) trait MountOptions: Sized + Send + Sync + 'static {
    /// The option table.
    const PARAMS: Params;

    /// The defaults.
    fn new() -> Self;

    /// Applies option `key` of the table with `value` (`parse_param`); refusals are logged to
    /// `log`.
    fn apply(&mut self, log: &FcLog<'_>, key: u8, value: Value<'_>) -> Result;

    /// Option combinations refused before the image is read.
    fn validate(&self, log: &FcLog<'_>) -> Result;

    /// Whether POSIX ACLs are on (`SB_POSIXACL`).
    fn posix_acl(&self) -> bool;

    /// Where the filesystem starts in its device or backing file, in bytes.
    fn device_offset(&self) -> u64;
}

/// The operations of the filesystem contexts of filesystem `T` (`erofs_context_ops`).
struct ContextOps<T>(PhantomData<T>);

impl<T: FileSystem> ContextOps<T> {
    const OPS: sys::fs_context_operations = sys::fs_context_operations {
        parse_param: Some(erofs_rs_fc_parse_param::<T>),
        get_tree: Some(erofs_rs_fc_get_tree::<T>),
        reconfigure: Some(erofs_rs_fc_reconfigure::<T>),
        free: Some(erofs_rs_fc_free::<T>),
        ..pin_init::zeroed()
    };

    /// The table.
    const fn get() -> &'static sys::fs_context_operations {
        &Self::OPS
    }
}

/// What `fs_private` of the contexts of filesystem `T` points to.
struct Context<T: FileSystem> {
    /// The backing file of a file-backed mount, until `fill_super` takes it.
    file: Option<ARef<File>>,
    opts: T::Options,
}

/// A filesystem context of filesystem `T`, borrowed for one `fs_context_operations` call.
///
/// # Invariants
///
/// `ptr` is a live `fs_context` of filesystem `T` whose `fs_private` points to a
/// [`Context<T>`] made by [`erofs_rs_init_fs_context`], for `'a`; nothing else uses that
/// context meanwhile (the VFS runs one operation of a context at a time).
struct FsContext<'a, T: FileSystem> {
    ptr: *mut sys::fs_context,
    _p: PhantomData<(&'a mut sys::fs_context, T)>,
}

impl<'a, T: FileSystem> FsContext<'a, T> {
    /// # Safety
    ///
    /// `ptr` is the argument of a call of one of `T`'s `fs_context_operations` (or of
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

    fn ctx(&self) -> &Context<T> {
        // SAFETY: `fs_private` is the `Context<T>` `erofs_rs_init_fs_context::<T>` made (type
        // invariant), used by no one else now.
        unsafe { &*(*self.ptr).fs_private.cast::<Context<T>>() }
    }

    fn ctx_mut(&mut self) -> &mut Context<T> {
        // SAFETY: as in `ctx`; `&mut self` makes this the only borrow.
        unsafe { &mut *(*self.ptr).fs_private.cast::<Context<T>>() }
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

    /// `get_tree_bdev_flags(GET_TREE_BDEV_QUIET_LOOKUP)` with `T`'s `fill_super`.
    fn get_tree_bdev(&mut self) -> Result {
        // SAFETY: `ptr` is live; `fill_super` makes its own `FsContext` of it while `self` is
        // borrowed mutably here, so the two are never used at once.
        to_result(unsafe {
            sys::get_tree_bdev_flags(
                self.ptr,
                Some(fill_super::<T>),
                sys::GET_TREE_BDEV_QUIET_LOOKUP,
            )
        })
    }

    /// `get_tree_nodev()` with `T`'s `fill_super`.
    fn get_tree_nodev(&mut self) -> Result {
        // SAFETY: as in `get_tree_bdev`.
        to_result(unsafe { sys::get_tree_nodev(self.ptr, Some(fill_super::<T>)) })
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
pub(crate) struct FcLog<'a> {
    log: *mut sys::fc_log,
    prefix: *const c_char,
    _p: PhantomData<&'a ()>,
}

impl FcLog<'_> {
    /// Logs an error (`logfc(.., 'e', ..)`), with the context's prefix if `prefixed`.
    fn error(&self, prefixed: bool, args: fmt::Arguments<'_>) {
        // CAST: an ASCII letter.
        let level = b'e' as c_char;
        let prefix = if prefixed { self.prefix } else { ptr::null() };
        // SAFETY: `log` is null or live, and `prefix` null or `self.prefix`, a string that
        // outlives `self` (type invariant); `%pA` takes a pointer to `fmt::Arguments`, which
        // `args` is for the call.
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
    pub(crate) fn invalfc(&self, args: fmt::Arguments<'_>) -> Error {
        self.error(true, args);
        EINVAL
    }

    /// `invalf()`: logs an error without prefix; `EINVAL`.
    fn invalf(&self, args: fmt::Arguments<'_>) -> Error {
        self.error(false, args);
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
/// `fc` is a new `fs_context` of `T`'s filesystem type (`T`'s `init_fs_context`).
pub(crate) unsafe extern "C" fn erofs_rs_init_fs_context<T: FileSystem>(
    fc: *mut bindings::fs_context,
) -> c_int {
    // CAST: the same C struct, which kernel::bindings has only as an opaque type.
    let fc = fc.cast::<sys::fs_context>();
    let ctx = match KBox::new(
        Context::<T> {
            file: None,
            opts: T::Options::new(),
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
        (*fc).ops = ContextOps::<T>::get();
    }
    0
}

/// `parse_param`: one option into the context; unknown ones fail with `fs_parse()`'s message.
///
/// # Safety
///
/// `fc` and `param` are the live arguments of `fs_context_operations::parse_param` on a
/// context of `T`.
unsafe extern "C" fn erofs_rs_fc_parse_param<T: FileSystem>(
    fc: *mut sys::fs_context,
    param: *mut sys::fs_parameter,
) -> c_int {
    // SAFETY: by this function's contract.
    let mut fc = unsafe { FsContext::<T>::from_raw(fc) };
    let params = <T::Options as MountOptions>::PARAMS;
    let mut result = sys::fs_parse_result::default();
    // SAFETY: `fc` and `param` are live; the table is a static, terminated by an empty entry.
    let key =
        unsafe { sys::__fs_parse(&raw mut (*fc.ptr).log, params.as_ptr(), param, &mut result) };
    if key < 0 {
        return key;
    }
    // The keys are the `u8` option numbers of the table.
    let Some((key, kind)) = u8::try_from(key)
        .ok()
        .and_then(|k| Some((k, params.kind(k)?)))
    else {
        return EINVAL.to_errno();
    };
    let r = &result.__bindgen_anon_1;
    // `fs_parse` fills the member of `result` that the table's type for the key names:
    // `boolean` for flags, `uint_32` for enums and u32, `uint_64` for u64. Each arm below
    // reads only that one; the integers are zero-initialised, so reading them is always
    // defined, but a `bool` must not be read from bytes `fs_parse` did not write as one.
    let value = match kind {
        // SAFETY: a flag's `boolean` is set (`fs_parse` sets it to `!negated` for flags).
        Kind::Flag => Value::Flag(unsafe { *r.boolean.as_ref() }),
        // SAFETY: an integer member of a zero-initialised union: every bit pattern is valid.
        Kind::U32 => Value::U32(unsafe { *r.uint_32.as_ref() }),
        // SAFETY: as above.
        Kind::Enum => Value::Enum(unsafe { *r.uint_32.as_ref() }),
        // SAFETY: as above.
        Kind::U64 => Value::U64(unsafe { *r.uint_64.as_ref() }),
        Kind::Str => {
            // SAFETY: `param` is live (contract).
            let is_string = unsafe { (*param).type_() } == sys::fs_value_type_fs_value_is_string;
            // SAFETY: as above; a string parameter's string is its union's member (read only
            // if it is one).
            if !is_string || unsafe { (*param).__bindgen_anon_1.string }.is_null() {
                return EINVAL.to_errno();
            }
            // INVARIANT: the live argument of this call, a string parameter with a string.
            Value::Str(ParamStr {
                param,
                _p: PhantomData,
            })
        }
        Kind::Source => {
            // SAFETY: `param` is the live argument of this call.
            return from_result(|| unsafe { fc.parse_source(param) }.map(|()| 0));
        }
    };
    from_result(|| {
        let log = fc.logger();
        fc.ctx_mut().opts.apply(&log, key, value)?;
        Ok(0)
    })
}

/// `get_tree`: as the C driver, a block device if the source is one, else a regular file.
///
/// # Safety
///
/// `fc` is the live argument of `fs_context_operations::get_tree` on a context of `T`.
unsafe extern "C" fn erofs_rs_fc_get_tree<T: FileSystem>(fc: *mut sys::fs_context) -> c_int {
    // SAFETY: by this function's contract.
    let mut fc = unsafe { FsContext::<T>::from_raw(fc) };
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
                false,
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
/// `sb` is the superblock `get_tree_*` is setting up for `fc`, a context of `T`, inside
/// [`FsContext::get_tree_bdev`] or [`FsContext::get_tree_nodev`].
unsafe extern "C" fn fill_super<T: FileSystem>(
    sb: *mut bindings::super_block,
    fc: *mut sys::fs_context,
) -> c_int {
    // SAFETY: by this function's contract, the caller's `FsContext` is not used meanwhile.
    let mut fc = unsafe { FsContext::<T>::from_raw(fc) };
    // Ours from here, even on failure.
    let file = fc.ctx_mut().file.take();
    let opts = &fc.ctx().opts;
    if let Err(e) = opts.validate(&fc.logger()) {
        return e.to_errno();
    }
    let acl = opts.posix_acl();
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
    // SAFETY: `sb` is a superblock of `T` (the type of `T`'s context, contract), live during
    // `fill_super`; its `s_fs_info` is null (`sget_fc` moved the context's, which we never
    // set); this is its only `SuperBlock<New>`.
    let sb = unsafe { SuperBlock::from_raw_new(sb) };
    // SAFETY: `get_tree` calls `get_tree_bdev` only while the context has no file, and
    // `get_tree_nodev` only with one (a regular file, `file_backable`): `file` is null for a
    // block-device superblock, else a referenced regular file whose reference passes to the
    // device.
    let dev = unsafe { Device::new(&sb, file, opts.device_offset()) };
    from_result(|| {
        sb.prepare()?;
        T::fill_super(sb, dev, opts)?;
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
/// `fc` is the live argument of `fs_context_operations::reconfigure` on a context of `T`,
/// whose `root` is the root of a mounted superblock of `T`.
unsafe extern "C" fn erofs_rs_fc_reconfigure<T: FileSystem>(fc: *mut sys::fs_context) -> c_int {
    // SAFETY: by this function's contract.
    let mut fc = unsafe { FsContext::<T>::from_raw(fc) };
    let acl = fc.ctx().opts.posix_acl();
    fc.set_sb_flags(sys::EROFS_RS_SB_POSIXACL, acl);
    fc.set_sb_flags(sys::EROFS_RS_SB_RDONLY, true);
    // SAFETY: a reconfiguration's `root` is the mounted root (contract), whose superblock, of
    // `T`, is live and attached (mounted) for the whole call.
    let sb = unsafe { SuperBlock::from_raw((*(*fc.ptr).root).d_sb) };
    let opts = &fc.ctx().opts;
    from_result(|| {
        T::reconfigure(sb, opts)?;
        Ok(0)
    })
}

/// `free`: drops the context's options and backing file.
///
/// # Safety
///
/// `fc` is the live argument of `fs_context_operations::free` on a context of `T`.
unsafe extern "C" fn erofs_rs_fc_free<T: FileSystem>(fc: *mut sys::fs_context) {
    // SAFETY: `fc` is live (contract).
    let p = unsafe { (*fc).fs_private }.cast::<Context<T>>();
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
/// `seq` and `root` are the live arguments of `super_operations::show_options` on a mounted
/// superblock of `T`.
pub(crate) unsafe extern "C" fn erofs_rs_show_options<T: FileSystem>(
    seq: *mut bindings::seq_file,
    root: *mut bindings::dentry,
) -> c_int {
    // SAFETY: `seq` is live and used only by this thread during the call (contract).
    let m = unsafe { SeqFile::from_raw(seq) };
    // SAFETY: a mounted root's superblock, of `T` (contract), is live and attached during the
    // call.
    let sb = unsafe { SuperBlock::from_raw((*root).d_sb) };
    T::show_options(m, sb);
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
