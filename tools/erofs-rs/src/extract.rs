// SPDX-License-Identifier: GPL-2.0-only
//! `fsck` and `extract`: walk the tree on the pool, then decode every file in units of work,
//! writing each piece where it belongs (positional writes), so the result does not depend on
//! the order the workers take units in.
//!
//! Order of the phases: directories are created as the walk finds them (mode 0700, so that
//! they can be filled); then units write files, create symlinks and special files, and set
//! their owner, mode, xattrs and times; then hard links; then directories get their
//! metadata, deepest first.

use crate::error::{
    Error,
    Result, //
};
use crate::image::{
    Ctx,
    Image,
    Mode,
    Sink, //
};
use crate::sys;
use crate::walk::{
    self,
    Errors,
    Node,
    Part, //
};
use erofs_core::{
    inode::InodeInfo,
    ondisk::mode, //
};
use std::collections::HashMap;
use std::ffi::OsStr;
use std::fs::{
    self,
    File,
    OpenOptions, //
};
use std::io;
use std::os::unix::ffi::{
    OsStrExt,
    OsStringExt, //
};
use std::os::unix::fs::{
    DirBuilderExt,
    FileExt,
    MetadataExt,
    OpenOptionsExt,
    PermissionsExt, //
};
use std::path::{
    Path,
    PathBuf, //
};
use std::sync::atomic::{
    AtomicBool,
    AtomicUsize,
    Ordering, //
};
use std::sync::{
    Arc,
    Mutex, //
};

/// Most bytes of consecutive pieces gathered into one write.
const WBUF: usize = 1 << 20;

thread_local! {
    /// Each worker's write buffer, kept across files.
    static WBUF_POOL: std::cell::RefCell<Vec<u8>> = const { std::cell::RefCell::new(Vec::new()) };
}

/// What to do and how.
pub struct Opts {
    /// Worker threads.
    pub workers: usize,
    /// Where to extract to; `None` checks only (fsck).
    pub dest: Option<PathBuf>,
    /// chown to the image's owners.
    pub preserve_owner: bool,
    /// Set xattrs (and ACLs).
    pub xattrs: bool,
    /// No messages but the summary.
    pub quiet: bool,
}

/// The state of a file written in several parts: the file, opened by the first part to
/// run, and how many parts are left (the last one sets the metadata).
struct Shared {
    file: Mutex<Option<(Arc<File>, bool)>>,
    left: AtomicUsize,
}

/// What the walk and the units need.
struct Job<'a> {
    opts: &'a Opts,
    nodes: &'a [Node],
    shared: HashMap<usize, Shared>,
    errors: &'a Errors,
    /// Bytes of file data decoded (for the summary).
    bytes: AtomicUsize,
    /// The owner a file created here gets, when the files created are known to get exactly
    /// the owner and the mode asked for (a fresh tree under a destination that neither is
    /// set-group-ID nor has a default ACL; umask 0): then a file whose owner is that one
    /// and whose mode has no set-ID or sticky bits needs no chown and no chmod.
    fresh: Option<(u32, u32)>,
}

/// The summary of a run.
pub struct Summary {
    /// Inodes walked (each path of a hard link counts).
    pub nodes: usize,
    /// Problems found.
    pub errors: usize,
    /// File bytes decoded.
    pub bytes: usize,
}

fn os(p: &[u8]) -> &OsStr {
    OsStr::from_bytes(p)
}

/// `d.join(rel)` for a relative `rel` (empty: `d/`), in one allocation of the exact size
/// (`join` copies `d`, then grows the copy for `rel`: two allocations a file).
fn under(d: &Path, rel: &[u8]) -> PathBuf {
    let d = d.as_os_str().as_bytes();
    let slash = !d.ends_with(b"/");
    let mut p = Vec::with_capacity(d.len() + usize::from(slash) + rel.len());
    p.extend_from_slice(d);
    if slash {
        p.push(b'/');
    }
    p.extend_from_slice(rel);
    PathBuf::from(std::ffi::OsString::from_vec(p))
}

/// Runs fsck (without `opts.dest`) or extract.
pub fn run(img: &Image, opts: &Opts) -> Summary {
    let errors = Errors::new();
    let dest = opts.dest.as_deref();
    if let Some(d) = dest {
        if let Err(e) = fs::create_dir_all(d) {
            errors.push(Error::msg(format!("{}: {e}", d.display())));
            return Summary {
                nodes: 0,
                errors: 1,
                bytes: 0,
            };
        }
    }
    // Modes are given whole at creation (files get theirs then, see `Job::fresh`).
    let mut fresh = None;
    if let Some(d) = dest {
        sys::umask(0);
        let plain = fs::metadata(d).is_ok_and(|m| m.mode() & libc::S_ISGID == 0)
            && !sys::has_xattr(d, b"system.posix_acl_default");
        if plain {
            fresh = Some((sys::euid(), sys::egid()));
        }
    }
    // Whether every directory was created here (none was there before).
    let dirs_fresh = AtomicBool::new(true);
    let on_dir = |n: &Node| -> Result<()> {
        let Some(d) = dest else { return Ok(()) };
        if n.path.is_empty() {
            return Ok(());
        }
        let p = under(d, &n.path);
        match fs::DirBuilder::new().mode(0o700).create(&p) {
            Ok(()) => Ok(()),
            Err(e) if e.kind() == io::ErrorKind::AlreadyExists && p.is_dir() => {
                // ORDERING: read after the walk, which joins the threads.
                dirs_fresh.store(false, Ordering::Relaxed);
                Ok(())
            }
            Err(e) => Err(Error::nid(n.vi.nid.0, format!("{}: {e}", p.display()))),
        }
    };
    let mut nodes = walk::walk(img, opts.workers, &errors, &on_dir);
    if !dirs_fresh.load(Ordering::Relaxed) {
        fresh = None;
    }
    // fsck decodes the packed inode whole too, as fsck.erofs does, not only the fragments
    // files use.
    if dest.is_none() {
        if let Some(vi) = img.packed_inode() {
            nodes.push(Node {
                path: b"(packed inode)".to_vec(),
                vi,
            });
        }
    }

    // Each inode once: the first of its paths (in path order) gets the data, the others are
    // hard links to it. Sorted by nid, the paths of one inode are neighbours: only those
    // groups are compared by path (no hash of every inode, no sort of every path).
    let (mut dirs, mut files): (Vec<usize>, Vec<usize>) =
        (0..nodes.len()).partition(|&i| nodes[i].vi.is_dir());
    dirs.sort_unstable_by(|&a, &b| nodes[a].path.cmp(&nodes[b].path));
    files.sort_unstable_by_key(|&i| nodes[i].vi.nid.0);
    let mut links = Vec::new();
    let mut data = Vec::with_capacity(files.len());
    for group in files.chunk_by(|&a, &b| nodes[a].vi.nid.0 == nodes[b].vi.nid.0) {
        let Some(&first) = group
            .iter()
            .min_by(|&&a, &&b| nodes[a].path.cmp(&nodes[b].path))
        else {
            continue;
        };
        data.push(first);
        links.extend(group.iter().filter(|&&i| i != first).map(|&i| (first, i)));
    }
    // Units in inode order, which is the image's order for most of the data, then
    // scheduled for the workers.
    let units = walk::schedule(walk::units(&nodes, &data), opts.workers);
    let mut shared = HashMap::new();
    for u in &units {
        for p in u {
            if p.nparts > 1 {
                shared.entry(p.node).or_insert_with(|| Shared {
                    file: Mutex::new(None),
                    left: AtomicUsize::new(p.nparts),
                });
            }
        }
    }
    let job = Job {
        opts,
        nodes: &nodes,
        shared,
        errors: &errors,
        bytes: AtomicUsize::new(0),
        fresh,
    };
    walk::run(img, opts.workers, &units, &|cx, unit: &Vec<Part>| {
        for p in unit {
            if let Err(e) = job.part(cx, p) {
                job.errors
                    .push(e.context(format!("/{}", String::from_utf8_lossy(&nodes[p.node].path))));
            }
        }
    });

    if let Some(d) = dest {
        for &(p, o) in &links {
            let (from, to) = (under(d, &nodes[p].path), under(d, &nodes[o].path));
            let _ = fs::remove_file(&to);
            if let Err(e) = fs::hard_link(&from, &to) {
                errors.push(Error::nid(
                    nodes[o].vi.nid.0,
                    format!("{}: {e}", to.display()),
                ));
            }
        }
    }
    // Directories deepest first: a read-only directory is finished after its children. In
    // chunks of 64, so that the workers finish together (the benchmark tree: 20, not 5).
    dirs.reverse();
    let chunks: Vec<&[usize]> = dirs.chunks(64).collect();
    walk::run(img, opts.workers, &chunks, &|cx, chunk: &&[usize]| {
        for &i in *chunk {
            let n = &nodes[i];
            let r = match dest {
                Some(d) => job.set_meta(
                    cx,
                    &n.vi,
                    Target::Path(&under(d, &n.path), !n.path.is_empty()),
                ),
                None => job.check_xattrs(cx, &n.vi),
            };
            if let Err(e) = r {
                job.errors
                    .push(e.context(format!("/{}", String::from_utf8_lossy(&n.path))));
            }
        }
    });
    Summary {
        nodes: nodes.len(),
        errors: errors.count(),
        bytes: job.bytes.load(Ordering::Relaxed),
    }
}

/// The sink of one part of a regular file: consecutive pieces are decoded into one buffer
/// and written together at their position (nothing is written for fsck).
struct FileSink<'f> {
    /// The output file; `None` for fsck.
    file: Option<&'f File>,
    nid: u64,
    size: u64,
    /// The buffer: `buf[..fill]` holds the data for file position `pos` on; it only grows
    /// (to WBUF, or to the largest extent), its bytes past `fill` are stale.
    buf: Vec<u8>,
    fill: usize,
    pos: u64,
    /// The end of the last write.
    end: u64,
    /// Bytes of data decoded.
    bytes: usize,
}

impl FileSink<'_> {
    /// Writes out what the buffer holds.
    fn flush(&mut self) -> Result<()> {
        if let (Some(f), true) = (self.file, self.fill > 0) {
            f.write_all_at(&self.buf[..self.fill], self.pos)
                .map_err(|e| Error::nid(self.nid, format!("write: {e}")))?;
            self.end = self.end.max(self.pos + self.fill as u64);
        }
        self.fill = 0;
        Ok(())
    }
}

impl Sink for FileSink<'_> {
    fn room(&mut self, la: u64, len: usize) -> Result<&mut [u8]> {
        if self.fill > 0 && (self.pos + self.fill as u64 != la || self.fill + len > WBUF) {
            self.flush()?;
        }
        if self.fill == 0 {
            self.pos = la;
        }
        let end = self.fill + len;
        if self.buf.len() < end {
            // Zeroed once, when the buffer grows; then overwritten in place.
            self.buf.resize(end, 0);
        }
        Ok(&mut self.buf[self.fill..end])
    }

    fn filled(&mut self, la: u64, len: usize) -> Result<()> {
        let len = (len as u64).min(self.size.saturating_sub(la)) as usize;
        self.bytes += len;
        if self.file.is_some() {
            self.fill += len;
        }
        Ok(())
    }

    fn hole(&mut self, _la: u64, _len: u64) -> Result<()> {
        // Holes stay holes: the next piece is not contiguous, so the buffer is written first.
        Ok(())
    }
}

/// Where metadata goes.
enum Target<'p> {
    /// An open regular file, and whether it was created with the inode's mode and owner
    /// (see `Job::fresh`).
    File(&'p File, bool),
    /// A path (not followed if it is a symlink), and whether it was created here (owned by
    /// whoever `Job::fresh` says).
    Path(&'p Path, bool),
}

impl Job<'_> {
    /// Does one part of one inode.
    fn part(&self, cx: &Ctx<'_>, p: &Part) -> Result<()> {
        let node = &self.nodes[p.node];
        let vi = &node.vi;
        let nid = vi.nid.0;
        let dest = self.opts.dest.as_deref();
        let path = dest.map(|d| under(d, &node.path));
        match vi.file_type() {
            mode::S_IFREG => {
                let zi = cx.zinfo(vi)?;
                let file = match &path {
                    Some(path) => Some(self.open(p, path, vi)?),
                    None => None,
                };
                let (file, fresh) = match file {
                    Some((f, fresh)) => (Some(f), fresh),
                    None => (None, false),
                };
                // Extents are decoded straight into the write buffer, consecutive ones
                // (small pclusters) gathered into one write of up to WBUF bytes.
                let mut sink = FileSink {
                    file: file.as_deref(),
                    nid,
                    size: vi.size,
                    buf: WBUF_POOL.with(|b| std::mem::take(&mut *b.borrow_mut())),
                    fill: 0,
                    pos: 0,
                    end: 0,
                    bytes: 0,
                };
                let r = cx
                    .read_extents(vi, zi.as_ref(), p.start, p.end, Mode::Own, &mut sink)
                    .and_then(|()| sink.flush());
                let (n, end) = (sink.bytes, sink.end);
                WBUF_POOL.with(|b| *b.borrow_mut() = sink.buf);
                r?;
                // A file written in one part gets its size here, when it ends in a hole
                // (the others at creation).
                if let (Some(f), 1) = (&file, p.nparts) {
                    if end < vi.size {
                        f.set_len(vi.size)
                            .map_err(|e| Error::nid(nid, format!("truncate: {e}")))?;
                    }
                }
                self.bytes.fetch_add(n, Ordering::Relaxed);
                let last = match self.shared.get(&p.node) {
                    // ORDERING: the last part sees the file complete: the writes happen
                    // before the decrement of each part (AcqRel).
                    Some(s) => s.left.fetch_sub(1, Ordering::AcqRel) == 1,
                    None => true,
                };
                if last {
                    match &file {
                        Some(f) => self.set_meta(cx, vi, Target::File(f, fresh))?,
                        None => self.check_xattrs(cx, vi)?,
                    }
                }
                Ok(())
            }
            mode::S_IFLNK => {
                if vi.size == 0 || vi.size > 4096 {
                    return Err(Error::nid(nid, format!("symlink of {} bytes", vi.size)));
                }
                let zi = cx.zinfo(vi)?;
                let mut target = vec![0u8; vi.size as usize];
                cx.read_range(vi, zi.as_ref(), 0, &mut target)?;
                self.bytes.fetch_add(target.len(), Ordering::Relaxed);
                let Some(path) = &path else {
                    return self.check_xattrs(cx, vi);
                };
                let mk = || std::os::unix::fs::symlink(os(&target), path);
                mk().or_else(|e| {
                    if e.kind() == io::ErrorKind::AlreadyExists {
                        fs::remove_file(path).and_then(|()| mk())
                    } else {
                        Err(e)
                    }
                })
                .map_err(|e| Error::nid(nid, format!("{}: {e}", path.display())))?;
                self.set_meta(cx, vi, Target::Path(path, true))
            }
            mode::S_IFCHR | mode::S_IFBLK | mode::S_IFIFO | mode::S_IFSOCK => {
                let Some(path) = &path else {
                    return self.check_xattrs(cx, vi);
                };
                let rdev = if matches!(vi.file_type(), mode::S_IFCHR | mode::S_IFBLK) {
                    vi.rdev
                } else {
                    0
                };
                let mk = || sys::mknod(path, u32::from(vi.mode), rdev);
                mk().or_else(|e| {
                    if e.kind() == io::ErrorKind::AlreadyExists {
                        fs::remove_file(path).and_then(|()| mk())
                    } else {
                        Err(e)
                    }
                })
                .map_err(|e| Error::nid(nid, format!("{}: {e}", path.display())))?;
                self.set_meta(cx, vi, Target::Path(path, true))
            }
            t => Err(Error::nid(nid, format!("unknown file type {t:o}"))),
        }
    }

    /// Opens (creating it, for the first part to run) the regular file of part `p`; tells
    /// whether it was created with the inode's mode (and, see `Job::fresh`, owner).
    fn open(&self, p: &Part, path: &Path, vi: &InodeInfo) -> Result<(Arc<File>, bool)> {
        let create = || -> Result<(Arc<File>, bool)> {
            let err = |e: io::Error| Error::nid(vi.nid.0, format!("{}: {e}", path.display()));
            let opts = |new: bool, mode: u32| {
                let mut o = OpenOptions::new();
                o.write(true).mode(mode).custom_flags(libc::O_NOFOLLOW);
                if new {
                    o.create_new(true);
                } else {
                    o.create(true).truncate(true);
                }
                o
            };
            // A new file, with its permission bits (a file is writable through the
            // descriptor that created it, whatever its mode); else the one there, emptied.
            let (f, fresh) = match self.fresh {
                Some(_) => match opts(true, u32::from(vi.mode) & 0o777).open(path) {
                    Ok(f) => (f, true),
                    Err(e) if e.kind() == io::ErrorKind::AlreadyExists => {
                        (opts(false, 0o600).open(path).map_err(err)?, false)
                    }
                    Err(e) => return Err(err(e)),
                },
                None => (opts(false, 0o600).open(path).map_err(err)?, false),
            };
            // Holes stay holes: only data is written, and the file gets its size from the
            // writes, or from a truncate after them (see `part`). A file in several parts
            // gets it now, before any part may end it.
            if p.nparts > 1 {
                f.set_len(vi.size).map_err(err)?;
            }
            Ok((Arc::new(f), fresh))
        };
        match self.shared.get(&p.node) {
            None => create(),
            Some(s) => {
                let mut g = s.file.lock().unwrap_or_else(|e| e.into_inner());
                if let Some((f, fresh)) = &*g {
                    return Ok((f.clone(), *fresh));
                }
                let (f, fresh) = create()?;
                *g = Some((f.clone(), fresh));
                Ok((f, fresh))
            }
        }
    }

    /// fsck: reads every xattr of the inode.
    fn check_xattrs(&self, cx: &Ctx<'_>, vi: &InodeInfo) -> Result<()> {
        walk::xattrs(cx, vi).map(|_| ())
    }

    /// Sets owner, mode, xattrs and times, in that order (chown clears set-id bits, and an
    /// ACL must come after the mode it refines).
    fn set_meta(&self, cx: &Ctx<'_>, vi: &InodeInfo, t: Target<'_>) -> Result<()> {
        let nid = vi.nid.0;
        let xattrs = walk::xattrs(cx, vi)?;
        let what = |e: io::Error, op: &str| -> Error {
            match &t {
                Target::Path(p, _) => Error::nid(nid, format!("{op} {}: {e}", p.display())),
                Target::File(..) => Error::nid(nid, format!("{op}: {e}")),
            }
        };
        let symlink = vi.file_type() == mode::S_IFLNK;
        // A file created with its mode, owned as asked: nothing to change (chown would only
        // clear set-ID bits, which it has none of). What else was created here needs its
        // mode set (after the chown), but no chown to the owner it has.
        let (owned, moded) = match (&t, self.fresh) {
            (Target::File(_, true), Some(owner)) if vi.mode & 0o7000 == 0 => {
                (owner == (vi.uid, vi.gid), true)
            }
            (Target::Path(_, true), Some(owner)) => (owner == (vi.uid, vi.gid), false),
            _ => (false, false),
        };
        if self.opts.preserve_owner && !owned {
            match &t {
                Target::File(f, _) => std::os::unix::fs::fchown(f, Some(vi.uid), Some(vi.gid)),
                Target::Path(p, _) => std::os::unix::fs::lchown(p, Some(vi.uid), Some(vi.gid)),
            }
            .map_err(|e| what(e, "chown"))?;
        }
        if !symlink && !moded {
            let perm = fs::Permissions::from_mode(u32::from(vi.mode) & 0o7777);
            match &t {
                Target::File(f, _) => f.set_permissions(perm),
                Target::Path(p, _) => fs::set_permissions(p, perm),
            }
            .map_err(|e| what(e, "chmod"))?;
        }
        if self.opts.xattrs {
            for (name, value) in &xattrs {
                let r = match &t {
                    Target::File(f, _) => sys::fsetxattr(*f, name, value),
                    Target::Path(p, _) => sys::lsetxattr(p, name, value),
                };
                if let Err(e) = r {
                    // Unprivileged or on a filesystem without that namespace: a warning, as
                    // tar gives.
                    if !self.opts.quiet {
                        eprintln!(
                            "erofs-rs: warning: setxattr {} @ nid {nid}: {e}",
                            String::from_utf8_lossy(name)
                        );
                    }
                }
            }
        }
        match &t {
            Target::File(f, _) => sys::futimes(*f, vi.mtime, vi.mtime_nsec),
            Target::Path(p, _) => sys::lutimes(p, vi.mtime, vi.mtime_nsec),
        }
        .map_err(|e| what(e, "utimes"))
    }
}
