// SPDX-License-Identifier: GPL-2.0-only
//! The tree walk and the worker pool: directories are read on the pool as they are found,
//! then files are cut into units of work (small files batched, large ones split at extent
//! boundaries) that the pool runs in any order.

use crate::error::{
    Error,
    Result, //
};
use crate::image::{
    Ctx,
    Image,
    Mode,
    Piece, //
};
use erofs_core::{
    dirent::DirBlock,
    inode::InodeInfo,
    ondisk::{
        ft,
        mode, //
    },
    xattr, //
};
use std::collections::HashSet;
use std::sync::atomic::{
    AtomicUsize,
    Ordering, //
};
use std::sync::{
    Condvar,
    Mutex, //
};

/// Logical bytes of small files batched into one unit of work.
pub const BATCH: u64 = 1 << 20;

/// Logical bytes of one part of a large file.
pub const SPLIT: u64 = 4 << 20;

/// Most parts one file is cut into: a file of a huge (sparse, or corrupt) size gets longer
/// parts rather than a list of parts that grows with its size.
pub const MAX_PARTS: u64 = 4096;

/// Deepest directory nesting accepted (the kernel's path lookup would stop far earlier).
const MAX_DEPTH: usize = 4096;

/// One inode found by the walk, under one of its paths.
#[derive(Clone)]
pub struct Node {
    /// The path from the root, `/`-separated, without a leading `/` (empty for the root).
    pub path: Vec<u8>,
    /// The inode.
    pub vi: InodeInfo,
}

/// Errors gathered from all workers; each is printed once when it happens.
pub struct Errors {
    list: Mutex<Vec<Error>>,
}

impl Errors {
    /// An empty list.
    pub fn new() -> Self {
        Errors {
            list: Mutex::new(Vec::new()),
        }
    }

    /// Records (and prints) an error.
    pub fn push(&self, e: Error) {
        eprintln!("erofs-rs: {e}");
        self.list.lock().unwrap_or_else(|p| p.into_inner()).push(e);
    }

    /// How many errors were recorded.
    pub fn count(&self) -> usize {
        self.list.lock().unwrap_or_else(|p| p.into_inner()).len()
    }
}

/// The `S_IFMT` bits a dirent file type stands for.
fn ft_mode(t: u8) -> Option<u16> {
    Some(match t {
        ft::REG_FILE => mode::S_IFREG,
        ft::DIR => mode::S_IFDIR,
        ft::CHRDEV => mode::S_IFCHR,
        ft::BLKDEV => mode::S_IFBLK,
        ft::FIFO => mode::S_IFIFO,
        ft::SOCK => mode::S_IFSOCK,
        ft::SYMLINK => mode::S_IFLNK,
        _ => return None,
    })
}

/// What [`read_dir`] calls for each dirent: `(name, nid, file_type)`.
pub type OnEntry<'f> = dyn FnMut(&[u8], u64, u8) -> Result<()> + 'f;

/// Calls `f(name, nid, file_type)` for every dirent of directory `vi`, block by block, with
/// bounded buffers (a directory's data is streamed, never read whole).
pub fn read_dir(cx: &Ctx<'_>, vi: &InodeInfo, f: &mut OnEntry<'_>) -> Result<()> {
    let nid = vi.nid.0;
    let zi = cx.zinfo(vi)?;
    let blksz = cx.sbi().blksz() as usize;
    let mut block: Vec<u8> = Vec::with_capacity(blksz);
    let mut next = 0u64;
    let mut handle = |block: &[u8]| -> Result<()> {
        let b = DirBlock::new(block, nid).map_err(|e| Error::core(Some(nid), e))?;
        for i in 0..b.len() {
            let e = b.get(i).map_err(|e| Error::core(Some(nid), e))?;
            f(e.name, e.nid, e.file_type)?;
        }
        Ok(())
    };
    cx.for_each_extent(vi, zi.as_ref(), 0, vi.size, Mode::Own, &mut |p| {
        let (la, bytes) = match p {
            Piece::Hole(la, _) => return Err(Error::nid(nid, format!("directory hole at {la}"))),
            Piece::Data(la, bytes) => (la, bytes),
        };
        // Pieces follow each other; keep only the part past what was consumed.
        if la > next {
            return Err(Error::nid(nid, format!("directory data missing at {next}")));
        }
        let skip = (next - la) as usize;
        let mut rest = bytes.get(skip..).unwrap_or(&[]);
        let end = (la + bytes.len() as u64).min(vi.size);
        let rest_len = (end.saturating_sub(next)) as usize;
        rest = &rest[..rest_len.min(rest.len())];
        while !rest.is_empty() {
            let n = (blksz - block.len()).min(rest.len());
            block.extend_from_slice(&rest[..n]);
            rest = &rest[n..];
            next += n as u64;
            if block.len() == blksz || next == vi.size {
                handle(&block)?;
                block.clear();
            }
        }
        Ok(())
    })?;
    if next != vi.size {
        return Err(Error::nid(nid, "directory data ends early"));
    }
    Ok(())
}

/// The xattrs of an inode, full names and values (`user.`, `trusted.`... prefixes resolved).
pub fn xattrs(cx: &Ctx<'_>, vi: &InodeInfo) -> Result<Vec<(Vec<u8>, Vec<u8>)>> {
    let nid = vi.nid.0;
    let mut out = Vec::new();
    let prefixes = Prefixes(&cx.img.prefixes);
    xattr::for_each_entry(cx.sbi(), cx, vi, |e| {
        let Some((base, infix)) = xattr::resolve(e, &prefixes) else {
            return Ok(false);
        };
        let prefix: &[u8] = match base {
            xattr::EROFS_XATTR_INDEX_USER => b"user.",
            xattr::EROFS_XATTR_INDEX_POSIX_ACL_ACCESS => b"system.posix_acl_access",
            xattr::EROFS_XATTR_INDEX_POSIX_ACL_DEFAULT => b"system.posix_acl_default",
            xattr::EROFS_XATTR_INDEX_TRUSTED => b"trusted.",
            xattr::EROFS_XATTR_INDEX_LUSTRE => b"lustre.",
            xattr::EROFS_XATTR_INDEX_SECURITY => b"security.",
            _ => return Ok(false),
        };
        let mut name = prefix.to_vec();
        name.extend_from_slice(infix);
        let at = name.len();
        name.resize(at + usize::from(e.name_len), 0);
        erofs_core::MetaRead::read_meta(cx, e.name_pos, &mut name[at..])?;
        let mut value = vec![0u8; usize::from(e.value_size)];
        erofs_core::MetaRead::read_meta(cx, e.value_pos(), &mut value)?;
        out.push((name, value));
        Ok(false)
    })
    .map_err(|e| Error::core(Some(nid), e).context("xattrs"))?;
    Ok(out)
}

/// The image's long prefixes, for the core.
struct Prefixes<'a>(&'a [(u8, Vec<u8>)]);

impl xattr::Prefixes for Prefixes<'_> {
    fn get(&self, idx: u8) -> Option<xattr::LongPrefix<'_>> {
        self.0
            .get(usize::from(idx))
            .map(|(b, i)| xattr::LongPrefix {
                base_index: *b,
                infix: i,
            })
    }
}

/// What the walk calls for each directory it found (before its entries are read): the
/// extractor creates it.
pub type OnDir<'f> = dyn Fn(&Node) -> Result<()> + Sync + 'f;

/// Walks the tree from the root on `workers` threads; returns every node (the root first,
/// then in no particular order) and records the problems found in `errors`.
pub fn walk(img: &Image, workers: usize, errors: &Errors, on_dir: &OnDir<'_>) -> Vec<Node> {
    let root_nid = img.sbi.root_nid.0;
    let cx = Ctx::new(img);
    let root = match cx.inode(root_nid) {
        Ok(vi) if vi.is_dir() => vi,
        Ok(_) => {
            errors.push(Error::nid(root_nid, "root is not a directory"));
            return Vec::new();
        }
        Err(e) => {
            errors.push(e.context("root directory"));
            return Vec::new();
        }
    };
    let root = Node {
        path: Vec::new(),
        vi: root,
    };
    if let Err(e) = on_dir(&root) {
        errors.push(e);
        return vec![root];
    }
    // The directories to read: (node, parent nid, depth); how many workers are reading one;
    // how many wait for one (only then is the condition variable signalled: a futex call
    // per directory otherwise).
    let queue = Mutex::new((vec![(root.clone(), root_nid, 0usize)], 0usize, 0usize));
    let cv = Condvar::new();
    let seen = Mutex::new(HashSet::from([root_nid]));
    let nodes = Mutex::new(vec![root]);
    std::thread::scope(|s| {
        for _ in 0..workers.max(1) {
            s.spawn(|| {
                let cx = Ctx::new(img);
                loop {
                    let task = {
                        let mut q = queue.lock().unwrap_or_else(|p| p.into_inner());
                        loop {
                            if let Some(t) = q.0.pop() {
                                q.1 += 1;
                                break Some(t);
                            }
                            if q.1 == 0 {
                                break None;
                            }
                            q.2 += 1;
                            q = cv.wait(q).unwrap_or_else(|p| p.into_inner());
                            q.2 -= 1;
                        }
                    };
                    let Some((dir, parent, depth)) = task else {
                        // The walk is over: wake the others to see it.
                        cv.notify_all();
                        return;
                    };
                    // About one entry per 24 bytes of directory (12 of dirent, the name).
                    let guess = (dir.vi.size / 24).min(4096) as usize;
                    let mut found = Vec::with_capacity(guess);
                    let mut subdirs = Vec::new();
                    if let Err(e) = read_one(&cx, &dir, parent, &mut found, errors) {
                        errors.push(e);
                    }
                    for n in &found {
                        if n.vi.is_dir() {
                            let fresh = seen
                                .lock()
                                .unwrap_or_else(|p| p.into_inner())
                                .insert(n.vi.nid.0);
                            if !fresh {
                                errors.push(Error::nid(
                                    n.vi.nid.0,
                                    "directory reached twice (a loop or a hard link)",
                                ));
                            } else if depth >= MAX_DEPTH {
                                errors.push(Error::nid(n.vi.nid.0, "directories nested too deep"));
                            } else {
                                match on_dir(n) {
                                    Ok(()) => subdirs.push((n.clone(), dir.vi.nid.0, depth + 1)),
                                    Err(e) => errors.push(e),
                                }
                            }
                        }
                    }
                    nodes
                        .lock()
                        .unwrap_or_else(|p| p.into_inner())
                        .append(&mut found);
                    let mut q = queue.lock().unwrap_or_else(|p| p.into_inner());
                    q.0.append(&mut subdirs);
                    q.1 -= 1;
                    let waiting = q.2 != 0;
                    drop(q);
                    if waiting {
                        cv.notify_all();
                    }
                }
            });
        }
    });
    nodes.into_inner().unwrap_or_else(|p| p.into_inner())
}

/// The names of one directory, to find duplicates. EROFS keeps a directory's names sorted
/// (lookups bisect them): while they come in increasing order each is new and is only kept
/// in one buffer, with no hashing and no allocation per name; a name out of order (a
/// corrupted directory) switches to a set of all of them.
#[derive(Default)]
struct Names {
    /// The names so far, end to end, and where each ends.
    arena: Vec<u8>,
    ends: Vec<usize>,
    set: Option<HashSet<Vec<u8>>>,
}

impl Names {
    /// Records `name`; false if it was there already.
    fn insert(&mut self, name: &[u8]) -> bool {
        if let Some(set) = &mut self.set {
            return set.insert(name.to_vec());
        }
        let start = self.ends.len().checked_sub(2).map_or(0, |i| self.ends[i]);
        let last = self.ends.last().map(|&e| &self.arena[start..e]);
        if last.is_none_or(|l| name > l) {
            self.arena.extend_from_slice(name);
            self.ends.push(self.arena.len());
            return true;
        }
        let mut set = HashSet::with_capacity(self.ends.len() + 1);
        let mut from = 0;
        for &e in &self.ends {
            set.insert(self.arena[from..e].to_vec());
            from = e;
        }
        let fresh = set.insert(name.to_vec());
        self.set = Some(set);
        fresh
    }
}

/// Reads directory `dir` (whose parent is `parent`): its children go to `found`.
fn read_one(
    cx: &Ctx<'_>,
    dir: &Node,
    parent: u64,
    found: &mut Vec<Node>,
    errors: &Errors,
) -> Result<()> {
    let nid = dir.vi.nid.0;
    let mut names = Names::default();
    read_dir(cx, &dir.vi, &mut |name, enid, ftype| {
        if ftype > ft::SYMLINK {
            return Err(Error::nid(
                nid,
                format!(
                    "invalid file type {ftype} of {:?}",
                    String::from_utf8_lossy(name)
                ),
            ));
        }
        match name {
            b"." => {
                if enid != nid {
                    errors.push(Error::nid(nid, format!("\".\" points to nid {enid}")));
                }
                return Ok(());
            }
            b".." => {
                if enid != parent {
                    errors.push(Error::nid(
                        nid,
                        format!("\"..\" points to nid {enid}, not {parent}"),
                    ));
                }
                return Ok(());
            }
            _ => {}
        }
        // A name with a slash or a NUL would escape the extraction directory.
        if name.iter().any(|&b| b == b'/' || b == 0) {
            return Err(Error::nid(
                nid,
                format!("invalid name {:?}", String::from_utf8_lossy(name)),
            ));
        }
        if !names.insert(name) {
            return Err(Error::nid(
                nid,
                format!("duplicate name {:?}", String::from_utf8_lossy(name)),
            ));
        }
        // The path, allocated once at its size.
        let mut path = Vec::with_capacity(dir.path.len() + 1 + name.len());
        path.extend_from_slice(&dir.path);
        if !path.is_empty() {
            path.push(b'/');
        }
        path.extend_from_slice(name);
        match cx.inode(enid) {
            Ok(vi) => {
                if ft_mode(ftype).is_some_and(|m| m != vi.file_type()) {
                    errors.push(Error::nid(
                        enid,
                        format!(
                            "file type {ftype} in its dirent differs from mode {:o}",
                            vi.mode
                        ),
                    ));
                }
                found.push(Node { path, vi });
            }
            Err(e) => errors.push(e.context(format!("/{}", String::from_utf8_lossy(&path)))),
        }
        Ok(())
    })
}

/// One piece of work on a file: its data in `start..end` (a part of a large file, or all).
pub struct Part {
    /// Index in the node list.
    pub node: usize,
    /// The range of the file.
    pub start: u64,
    /// The range's end.
    pub end: u64,
    /// Parts of the file (1 for whole files), shared by all of them.
    pub nparts: usize,
}

/// Cuts the nodes' data into units: small files batched up to [`BATCH`] bytes, files over
/// [`SPLIT`] cut into parts of that size (or into [`MAX_PARTS`] longer ones). `nodes` indexes
/// are kept in the given order.
pub fn units(nodes: &[Node], which: &[usize]) -> Vec<Vec<Part>> {
    let mut units = Vec::new();
    let mut batch = Vec::new();
    let mut cost = 0u64;
    for &i in which {
        // Only regular files have data to split; the size of a device node, a fifo or a
        // socket means nothing (a symlink's is checked against 4096 when it is read).
        let vi = &nodes[i].vi;
        let size = if vi.file_type() == mode::S_IFREG {
            vi.size
        } else {
            vi.size.min(SPLIT)
        };
        if size > SPLIT {
            // An i_size up to 2^63 must not make 2^41 parts (memory and time without bound).
            let split = SPLIT.max(size.div_ceil(MAX_PARTS));
            let nparts = size.div_ceil(split) as usize;
            for k in 0..nparts as u64 {
                let start = k * split;
                units.push(vec![Part {
                    node: i,
                    start,
                    end: start.saturating_add(split).min(size),
                    nparts,
                }]);
            }
            continue;
        }
        // Every file costs something: its inode, its metadata calls.
        cost += size + 4096;
        batch.push(Part {
            node: i,
            start: 0,
            end: size,
            nparts: 1,
        });
        if cost >= BATCH {
            units.push(std::mem::take(&mut batch));
            cost = 0;
        }
    }
    if !batch.is_empty() {
        units.push(batch);
    }
    units
}

/// Orders units for `workers` threads taking them in turn: the parts of large files first
/// (the longest units: none is left to finish alone at the end), then the batches cut into
/// `workers` runs of consecutive units, interleaved, so that at any time the workers are in
/// different runs: different directories of the output (whose locks file creation takes),
/// each reading its run of the image in order.
pub fn schedule(units: Vec<Vec<Part>>, workers: usize) -> Vec<Vec<Part>> {
    let (mut out, small): (Vec<_>, Vec<_>) = units
        .into_iter()
        .partition(|u| u.first().is_some_and(|p| p.nparts > 1));
    let run = small.len().div_ceil(workers.max(1)).max(1);
    let mut runs: Vec<_> = Vec::new();
    let mut it = small.into_iter();
    loop {
        let r: Vec<_> = it.by_ref().take(run).collect();
        if r.is_empty() {
            break;
        }
        runs.push(r.into_iter());
    }
    let mut left = runs.len();
    while left > 0 {
        left = 0;
        for r in &mut runs {
            if let Some(u) = r.next() {
                out.push(u);
                left += 1;
            }
        }
    }
    out
}

/// Runs `f` on every unit, on `workers` threads, each with its own reader.
pub fn run<U: Sync>(img: &Image, workers: usize, units: &[U], f: &(dyn Fn(&Ctx<'_>, &U) + Sync)) {
    let next = AtomicUsize::new(0);
    std::thread::scope(|s| {
        for _ in 0..workers.max(1).min(units.len().max(1)) {
            s.spawn(|| {
                let cx = Ctx::new(img);
                loop {
                    // ORDERING: only the counter itself is shared.
                    let i = next.fetch_add(1, Ordering::Relaxed);
                    let Some(u) = units.get(i) else { return };
                    f(&cx, u);
                }
            });
        }
    });
}

#[cfg(test)]
mod tests {
    use super::Names;

    #[test]
    fn names_sorted_and_not() {
        let mut n = Names::default();
        for name in [&b"a"[..], b"ab", b"b", b"ba"] {
            assert!(n.insert(name), "{name:?} is new");
        }
        assert!(n.set.is_none(), "sorted names need no set");
        // Equal to the last one: a duplicate, found by the set that it switches to.
        assert!(!n.insert(b"ba"));
        assert!(n.set.is_some());
        assert!(!n.insert(b"a"));
        assert!(n.insert(b"0"));
        assert!(!n.insert(b"0"));

        // Out of order first, then a duplicate of a name from before the switch.
        let mut n = Names::default();
        assert!(n.insert(b"m"));
        assert!(n.insert(b"x"));
        assert!(n.insert(b"c"));
        assert!(!n.insert(b"m"));
        assert!(!n.insert(b"x"));
        assert!(n.insert(b"y"));
    }
}
