// SPDX-License-Identifier: GPL-2.0-only
//! The traits a filesystem implements to be called by the VFS, and the operation tables this
//! layer builds from them, one set per implementing type, as `rust/kernel/block/mq`'s
//! `OperationsVTable<T>` and the Rust VFS series' `fs::Tables<T>` do: the driver says what to
//! do (a trait impl, no `unsafe`, no `extern "C"`), the tables and their trampolines here turn
//! the kernel's raw arguments into the safe types of this layer.
//!
//! - [`FileSystem`]: the superblock operations (`fill_super`, `put_super`, `show_options`,
//!   `statfs`, `reconfigure`), directories (`lookup`, `iterate_shared`), inodes by file handle
//!   (export operations), extended attributes, and the block mapping iomap reads with.
//! - [`AddressSpace`]: the `read_folio` and `readahead` of one kind of page cache; a filesystem
//!   has as many as it has ways to read file data, and picks one per inode
//!   ([`NewInode::set_attrs`](super::NewInode::set_attrs)).
//!
//! Which table an inode gets (`erofs_fill_inode`'s choice by file type and data layout) is the
//! driver's: [`InodeKind`] names the tables, the driver chooses.

use super::{
    fs_context::MountOptions,
    super_block::New, //
};
use super::{
    iomap::{
        Extent,
        InlineSlot, //
    },
    pagecache::{
        OutFolio,
        Readahead, //
    },
    xattr::Namespace,
    Dentry,
    Device,
    DirContext,
    Inode,
    InodeRef,
    LockedFolio,
    SuperBlock, //
};
use kernel::{
    prelude::*,
    seq_file::SeqFile, //
};

/// What `statfs` reports besides what the superblock itself holds (`struct kstatfs`'s fields
/// that depend on the filesystem's data).
pub(crate) struct StatFs {
    /// Size of the filesystem in blocks (`f_blocks`).
    pub(crate) blocks: u64,
    /// Free inodes (`f_ffree`); a read-only filesystem reports what its inode space leaves.
    pub(crate) ffree: u64,
}

/// A filesystem: what the VFS calls on its superblocks, directories and inodes. The layer
/// builds the operation tables ([`Tables`]) from the implementing type.
pub(crate) trait FileSystem: Sized + 'static {
    /// The magic number (`s_magic`, `statfs`'s `f_type`).
    const MAGIC: u32;

    /// The mount options, parsed from its option table into the filesystem context.
    type Options: MountOptions;

    /// What the filesystem keeps per mounted superblock (`s_fs_info`), from
    /// [`SuperBlock::attach`] until `kill_sb`, after the VFS has shut the superblock down.
    type Data: Send + Sync;

    /// What the filesystem keeps per inode besides the VFS inode, written once while the inode
    /// is new ([`NewInode::fill`](super::NewInode::fill)) and read-only afterwards. Inodes are
    /// freed without dropping it, so it owns nothing (`Copy`).
    type INodeData: Copy + Send + Sync;

    /// Reads the superblock from `dev` with the mount options `opts`, and attaches the
    /// filesystem's state and root (`fill_super`).
    fn fill_super(sb: SuperBlock<'_, Self, New>, dev: Device, opts: &Self::Options) -> Result;

    /// Gives back what the superblock holds (its own inodes, sysfs objects) before the VFS
    /// checks that no inode is left (`put_super`).
    fn put_super(sb: SuperBlock<'_, Self>);

    /// Applies new options to a mounted superblock (`reconfigure`, remount).
    fn reconfigure(sb: SuperBlock<'_, Self>, opts: &Self::Options) -> Result;

    /// Writes the options in effect, as `/proc/mounts` shows them (`show_options`).
    fn show_options(m: &SeqFile, sb: SuperBlock<'_, Self>);

    /// What `statfs` reports of the filesystem's data.
    fn statfs(sb: SuperBlock<'_, Self>) -> StatFs;

    /// Finds `name` in `dir`: its inode, or `None` for a negative dentry (`lookup`).
    fn lookup(dir: Inode<'_, Self>, name: &[u8]) -> Result<Option<InodeRef<Self>>>;

    /// Emits the entries of a directory from the context's position on (`iterate_shared`).
    fn readdir(ctx: DirContext<'_, Self>) -> Result;

    /// The 64-bit number a file handle names `inode` by (the export operations' id).
    fn handle_id(inode: Inode<'_, Self>) -> u64;

    /// The inode a file handle's id names, as [`FileSystem::handle_id`] gave it.
    fn inode_by_handle(sb: SuperBlock<'_, Self>, id: u64) -> Result<InodeRef<Self>>;

    /// Whether `listxattr` shows `user.*` attributes on `sb` (`user_xattr`).
    fn user_xattrs(sb: SuperBlock<'_, Self>) -> bool;

    /// The value of extended attribute `name` in namespace `ns`, copied into `buf` unless it
    /// is `None`: its length.
    fn getxattr(
        inode: Inode<'_, Self>,
        ns: Namespace,
        name: &[u8],
        buf: Option<&mut [u8]>,
    ) -> Result<usize>;

    /// The names of the extended attributes of `dentry`'s inode, copied into `buf` unless it
    /// is `None`: their length.
    fn listxattr(dentry: Dentry<'_, Self>, buf: Option<&mut [u8]>) -> Result<usize>;

    /// What `getattr` reports of `inode` besides its VFS fields.
    fn stat(inode: Inode<'_, Self>) -> StatAttrs;

    /// Maps the range at `offset` of `inode` for iomap (`iomap_begin`): where its bytes are,
    /// an inline tail copied into `inline` when there is one.
    fn iomap_map<'a>(
        inode: Inode<'a, Self>,
        offset: u64,
        length: u64,
        inline: Option<&mut InlineSlot<'_>>,
    ) -> Result<Extent<'a>>;
}

/// What `getattr` reports of an inode besides its VFS fields (`erofs_getattr`'s).
pub(crate) struct StatAttrs {
    /// Its data is stored compressed (`STATX_ATTR_COMPRESSED`).
    pub(crate) compressed: bool,
    /// `O_DIRECT` reads of it go straight to the superblock's block device, so `statx` reports
    /// the device's alignment (`STATX_DIOALIGN`; none on other superblocks).
    pub(crate) direct: bool,
}

/// The folio a `read_folio` gets: locked, not uptodate; the value unlocks it when it is done
/// with it.
///
/// # Safety
///
/// [`ReadTarget::from_locked`] takes over the unlocking of a locked folio: a value of the
/// implementing type unlocks the folio exactly once, and touches it only while it is locked.
pub(crate) unsafe trait ReadTarget: Sized {
    /// # Safety
    ///
    /// `folio` is a locked, not uptodate page-cache folio of a live inode whose address space
    /// operations are those of this layer, which nobody else writes or maps until it is
    /// unlocked (the folio `read_folio` gets); its unlocking passes to the returned value.
    unsafe fn from_locked(folio: *mut kernel::bindings::folio) -> Self;
}

// SAFETY: `from_locked`'s contract is `LockedFolio::from_raw`'s for a page-cache folio, and
// the value unlocks it once (on drop, or by ending its read).
unsafe impl ReadTarget for LockedFolio<'_> {
    unsafe fn from_locked(folio: *mut kernel::bindings::folio) -> Self {
        // SAFETY: by this function's contract.
        unsafe { LockedFolio::from_raw(folio) }
    }
}

// SAFETY: `OutFolio::from_raw` takes over the unlocking, which it does once.
unsafe impl ReadTarget for OutFolio {
    unsafe fn from_locked(folio: *mut kernel::bindings::folio) -> Self {
        // SAFETY: by this function's contract.
        unsafe { OutFolio::from_raw(folio) }
    }
}

/// One way of filling a page cache: the `read_folio` and `readahead` of an
/// `address_space_operations` table ([`aops`]).
pub(crate) trait AddressSpace: 'static {
    /// The folio `read_folio` fills, for one call.
    type Folio<'a>: ReadTarget;

    /// Fills and unlocks a locked folio (`read_folio`).
    fn read_folio(folio: Self::Folio<'_>) -> Result;

    /// Reads ahead the folios of `rac` (`readahead`).
    fn readahead(rac: Readahead<'_>);
}

/// The tables an inode gets, by what it is (`erofs_fill_inode`'s switch on the file type).
#[derive(Clone, Copy, PartialEq, Eq)]
pub(crate) enum InodeKind {
    /// A regular file.
    File,
    /// A directory.
    Dir,
    /// A symbolic link, whose target is read from the page cache.
    Symlink,
    /// A device node, fifo or socket (`init_special_inode`), with its kernel `dev_t`.
    Special(u32),
}

/// The operation tables of filesystem `T` ([`FileSystem`]), built at compile time from its
/// trait impl; `T`'s trampolines are in `trampolines.rs`.
pub(crate) struct Tables<T>(core::marker::PhantomData<T>);

/// The `address_space_operations` of [`AddressSpace`] `A`.
pub(crate) fn aops<A: AddressSpace>() -> &'static kernel::bindings::address_space_operations {
    super::trampolines::AopsTable::<A>::get()
}
