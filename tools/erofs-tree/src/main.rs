// SPDX-License-Identifier: GPL-2.0-only
//! `erofs-tree manifest [--fields LIST] [--mmap] DIR`: one line per entry of DIR, sorted by
//! path, with the fields asked for, so two trees compare with `diff`.
//!
//! Fields: type mode uid gid size nlink mtime ino blocks rdev data dirorder links xattrs statx.
//! `data` is the xxh3 of a file's bytes (read with read(2), or through mmap with --mmap) or a
//! symlink's target; `dirorder` hashes a directory's entries in readdir order with their
//! d_type; `links` names the first path of each inode, so hard-link groups compare; `ino`
//! prints inode numbers (only comparable between two mounts of one image); `statx` prints the
//! statx attributes and their mask (hex) and, for regular files, the direct-I/O alignments.

use std::collections::HashMap;
use std::ffi::OsStr;
use std::fs;
use std::io::{self, Read, Write};
use std::os::unix::ffi::OsStrExt;
use std::os::unix::fs::{FileTypeExt, MetadataExt};
use std::path::{Path, PathBuf};
use xxhash_rust::xxh3::Xxh3;

struct Opts {
    fields: Vec<String>,
    mmap: bool,
}

fn type_char(ft: fs::FileType) -> char {
    if ft.is_dir() {
        'd'
    } else if ft.is_symlink() {
        'l'
    } else if ft.is_file() {
        'f'
    } else if ft.is_char_device() {
        'c'
    } else if ft.is_block_device() {
        'b'
    } else if ft.is_fifo() {
        'p'
    } else if ft.is_socket() {
        's'
    } else {
        '?'
    }
}

fn hash_file(path: &Path, mmap: bool) -> io::Result<String> {
    // One read buffer per thread: allocating and zeroing it per file dominated small trees.
    thread_local!(static BUF: std::cell::RefCell<Vec<u8>> = std::cell::RefCell::new(vec![0u8; 256 << 10]));
    let mut h = Xxh3::new();
    let mut f = fs::File::open(path)?;
    if mmap && f.metadata()?.len() > 0 {
        // SAFETY: the file is on a read-only filesystem and nobody truncates it meanwhile.
        let m = unsafe { memmap2::Mmap::map(&f)? };
        h.update(&m);
    } else {
        BUF.with(|b| -> io::Result<()> {
            let mut buf = b.borrow_mut();
            loop {
                let n = f.read(&mut buf)?;
                if n == 0 {
                    return Ok(());
                }
                h.update(&buf[..n]);
            }
        })?;
    }
    Ok(format!("{:016x}", h.digest()))
}

fn xattrs(path: &Path) -> String {
    use std::ffi::CString;
    let c = CString::new(path.as_os_str().as_bytes()).unwrap();
    let mut names = vec![0u8; 4096];
    // SAFETY: valid path and buffer.
    let n = unsafe { libc::llistxattr(c.as_ptr(), names.as_mut_ptr().cast(), names.len()) };
    if n < 0 {
        return format!("err{}", io::Error::last_os_error().raw_os_error().unwrap_or(0));
    }
    let mut list: Vec<&[u8]> = names[..n as usize].split(|&b| b == 0).filter(|s| !s.is_empty()).collect();
    list.sort();
    let mut h = Xxh3::new();
    for name in &list {
        let cn = CString::new(*name).unwrap();
        let mut val = vec![0u8; 65536];
        // SAFETY: valid path, name and buffer.
        let v = unsafe { libc::lgetxattr(c.as_ptr(), cn.as_ptr(), val.as_mut_ptr().cast(), val.len()) };
        h.update(name);
        h.update(b"=");
        if v >= 0 {
            h.update(&val[..v as usize]);
        }
        h.update(b"\n");
    }
    format!("{}:{:016x}", list.len(), h.digest())
}

fn walk(root: &Path, rel: &Path, out: &mut Vec<(PathBuf, String)>, opts: &Opts, inos: &mut HashMap<(u64, u64), PathBuf>) -> io::Result<()> {
    let path = root.join(rel);
    let md = fs::symlink_metadata(&path)?;
    let ft = md.file_type();
    let mut cols = Vec::new();
    let mut children = Vec::new();
    let mut order = Xxh3::new();
    if ft.is_dir() {
        for e in fs::read_dir(&path)? {
            let e = e?;
            order.update(e.file_name().as_bytes());
            order.update(&[0, type_char(e.file_type()?) as u8, 0]);
            children.push(e.file_name());
        }
    }
    for f in &opts.fields {
        let v = match f.as_str() {
            "type" => type_char(ft).to_string(),
            "mode" => format!("{:o}", md.mode() & 0o7777),
            "uid" => md.uid().to_string(),
            "gid" => md.gid().to_string(),
            "size" => if ft.is_dir() { "-".into() } else { md.size().to_string() },
            "dirsize" => md.size().to_string(),
            "nlink" => if ft.is_dir() { "-".into() } else { md.nlink().to_string() },
            "dirnlink" => md.nlink().to_string(),
            "mtime" => format!("{}.{:09}", md.mtime(), md.mtime_nsec()),
            "ctime" => format!("{}.{:09}", md.ctime(), md.ctime_nsec()),
            "ino" => md.ino().to_string(),
            "blocks" => md.blocks().to_string(),
            "rdev" => if ft.is_char_device() || ft.is_block_device() { format!("{:x}", md.rdev()) } else { "-".into() },
            "data" => {
                if ft.is_file() {
                    hash_file(&path, opts.mmap).unwrap_or_else(|e| format!("ERR:{}", e.raw_os_error().unwrap_or(0)))
                } else if ft.is_symlink() {
                    let t = fs::read_link(&path)?;
                    String::from_utf8_lossy(t.as_os_str().as_bytes()).escape_debug().to_string()
                } else {
                    "-".into()
                }
            }
            "dirorder" => if ft.is_dir() { format!("{}:{:016x}", children.len(), order.digest()) } else { "-".into() },
            "links" => {
                if !ft.is_dir() && md.nlink() > 1 {
                    let first = inos.entry((md.dev(), md.ino())).or_insert_with(|| rel.to_path_buf());
                    first.to_string_lossy().escape_debug().to_string()
                } else {
                    "-".into()
                }
            }
            "xattrs" => xattrs(&path),
            "statx" => statx(&path, ft.is_file()),
            other => panic!("unknown field {other}"),
        };
        cols.push(v);
    }
    out.push((rel.to_path_buf(), cols.join("\t")));
    children.sort();
    for c in children {
        walk(root, &rel.join(OsStr::new(&c)), out, opts, inos)?;
    }
    Ok(())
}

/// The `statx` field: `attributes/attributes_mask`, and `dio:mem/offset` for regular files
/// when the filesystem reports direct-I/O alignment (`-` when it does not).
fn statx(path: &Path, file: bool) -> String {
    use std::ffi::CString;
    let p = CString::new(path.as_os_str().as_bytes()).unwrap();
    // SAFETY: an all-zero `statx` is a valid value of this plain C struct.
    let mut st: libc::statx = unsafe { std::mem::zeroed() };
    let mask = libc::STATX_BASIC_STATS | libc::STATX_DIOALIGN;
    // SAFETY: `p` is a C string and `st` is writable.
    let r = unsafe { libc::statx(libc::AT_FDCWD, p.as_ptr(), libc::AT_SYMLINK_NOFOLLOW, mask, &mut st) };
    if r != 0 {
        return format!("ERR:{}", io::Error::last_os_error().raw_os_error().unwrap_or(0));
    }
    let mut v = format!("{:x}/{:x}", st.stx_attributes, st.stx_attributes_mask);
    if file {
        if st.stx_mask & libc::STATX_DIOALIGN != 0 {
            v += &format!(" dio:{}/{}", st.stx_dio_mem_align, st.stx_dio_offset_align);
        } else {
            v += " dio:-";
        }
    }
    v
}

/// `erofs-tree mount FSTYPE SOURCE DIR [OPTIONS]`: mount(2) read-only, printing `OK` or the
/// errno's name, so tests can assert the exact error.
fn mount(args: &[String]) -> ! {
    use std::ffi::CString;
    let c = |s: &str| CString::new(s).unwrap();
    let (fstype, src, dir) = (c(&args[2]), c(&args[3]), c(&args[4]));
    let opts = args.get(5).map(|o| c(o));
    // SAFETY: valid C strings; the data pointer is null or a C string.
    let r = unsafe {
        libc::mount(
            src.as_ptr(),
            dir.as_ptr(),
            fstype.as_ptr(),
            libc::MS_RDONLY,
            opts.as_ref().map_or(std::ptr::null(), |o| o.as_ptr().cast()),
        )
    };
    if r == 0 {
        println!("OK");
        std::process::exit(0);
    }
    let e = io::Error::last_os_error().raw_os_error().unwrap_or(0);
    let name = match e {
        libc::EINVAL => "EINVAL",
        libc::EUCLEAN => "EUCLEAN",
        libc::EOPNOTSUPP => "EOPNOTSUPP",
        libc::EBADMSG => "EBADMSG",
        libc::EIO => "EIO",
        libc::ENOMEM => "ENOMEM",
        libc::ENOTBLK => "ENOTBLK",
        libc::ENOENT => "ENOENT",
        libc::ENODEV => "ENODEV",
        _ => "",
    };
    println!("ERR {name} {e}");
    std::process::exit(1);
}

/// An errno's name (`E<number>` for the few not listed).
fn errname(e: &io::Error) -> String {
    let n = e.raw_os_error().unwrap_or(0);
    let name = match n {
        libc::EUCLEAN => "EUCLEAN",
        libc::EIO => "EIO",
        libc::EINVAL => "EINVAL",
        libc::EOPNOTSUPP => "EOPNOTSUPP",
        libc::ENOENT => "ENOENT",
        libc::ENOMEM => "ENOMEM",
        libc::EFBIG => "EFBIG",
        libc::EOVERFLOW => "EOVERFLOW",
        libc::ENAMETOOLONG => "ENAMETOOLONG",
        libc::ENOTDIR => "ENOTDIR",
        libc::EBADMSG => "EBADMSG",
        libc::ENODATA => "ENODATA",
        libc::ERANGE => "ERANGE",
        libc::E2BIG => "E2BIG",
        _ => return format!("E{n}"),
    };
    name.into()
}

/// `erofs-tree probe [--mount FSTYPE IMAGE DIR] PATH`: reads PATH whole and prints on one line
/// what happened, so that a test compares two drivers' results with `=` (tests/qemu/regress.sh).
/// With `--mount`, IMAGE is first attached to a free loop device (read-only, detached again on
/// its last close) and mounted read-only at DIR as FSTYPE (`mount=ERR NAME` if that fails), PATH
/// is taken under DIR, DIR is unmounted after (`umount=ERRNO` is added if that fails), and the
/// kernel's log lines from the attach to the detach follow, one per line, after `kmsg: `: one
/// process instead of six, which on the debug kernel costs half a second each.
///
/// The line: `stat=OK|ERRNO`, then
/// for a directory `list=OK:HASH|ERRNO` (its names, inode numbers and each entry's lstat mode
/// or errno), for a regular file `read=OK:HASH:BYTES|ERRNO@BYTES` (read(2) in 1 MiB steps; the
/// bytes read before the error) and `mmap=OK:HASH|SIGBUS|ERRNO` (every byte through a shared
/// mapping, in a child process, so that a SIGBUS ends only the child). At most 16 MiB are read,
/// so that a file whose i_size lies far beyond the device ends.
fn probe_path(path: &str) -> String {
    use std::os::fd::AsRawFd;
    use std::os::unix::fs::DirEntryExt;
    const CAP: u64 = 16 << 20;
    let md = match fs::symlink_metadata(path) {
        Ok(md) => md,
        Err(e) => return format!("stat={}", errname(&e)),
    };
    let mut out = vec!["stat=OK".to_string()];
    if md.is_dir() {
        let list = || -> io::Result<u64> {
            let mut v = Vec::new();
            for e in fs::read_dir(path)? {
                let e = e?;
                v.push((e.file_name(), e.ino()));
            }
            v.sort();
            let mut h = Xxh3::new();
            for (name, ino) in &v {
                let mode = match fs::symlink_metadata(Path::new(path).join(name)) {
                    Ok(m) => format!("{:o}", m.mode()),
                    Err(e) => errname(&e),
                };
                h.update(name.as_bytes());
                h.update(format!("\0{ino}\0{mode}\n").as_bytes());
            }
            Ok(h.digest())
        };
        out.push(match list() {
            Ok(d) => format!("list=OK:{d:016x}"),
            Err(e) => format!("list={}", errname(&e)),
        });
    } else if md.is_file() {
        let mut f = match fs::File::open(path) {
            Ok(f) => f,
            Err(e) => return format!("stat=OK open={}", errname(&e)),
        };
        let (mut h, mut n, mut buf) = (Xxh3::new(), 0u64, vec![0u8; 1 << 20]);
        let mut err = None;
        while n < CAP {
            let want = buf.len().min((CAP - n) as usize);
            match f.read(&mut buf[..want]) {
                Ok(0) => break,
                Ok(k) => {
                    h.update(&buf[..k]);
                    n += k as u64;
                }
                Err(e) if e.kind() == io::ErrorKind::Interrupted => {}
                Err(e) => {
                    err = Some(e);
                    break;
                }
            }
        }
        out.push(match err {
            Some(e) => format!("read={}@{n}", errname(&e)),
            None => format!("read=OK:{:016x}:{n}", h.digest()),
        });
        let size = md.len().min(CAP) as usize;
        if size > 0 {
            let mut p = [0 as libc::c_int; 2];
            // SAFETY: `p` has room for the two descriptors.
            assert_eq!(unsafe { libc::pipe(p.as_mut_ptr()) }, 0);
            // SAFETY: this process has one thread; the child only maps, reads and exits.
            let pid = unsafe { libc::fork() };
            if pid == 0 {
                // SAFETY: a read-only shared mapping of an open file, `size` bytes.
                let m = unsafe { libc::mmap(std::ptr::null_mut(), size, libc::PROT_READ, libc::MAP_SHARED, f.as_raw_fd(), 0) };
                let res = if m == libc::MAP_FAILED {
                    errname(&io::Error::last_os_error())
                } else {
                    // SAFETY: the mapping is `size` bytes long and readable (a failed page
                    // raises SIGBUS, which ends this child).
                    let b = unsafe { std::slice::from_raw_parts(m as *const u8, size) };
                    format!("OK:{:016x}", xxhash_rust::xxh3::xxh3_64(b))
                };
                // SAFETY: writes our buffer to the pipe, then exits without unwinding.
                unsafe {
                    libc::write(p[1], res.as_ptr().cast(), res.len());
                    libc::_exit(0);
                }
            }
            // SAFETY: closes our copy of the write end.
            unsafe { libc::close(p[1]) };
            let mut res = String::new();
            // SAFETY: `p[0]` is the pipe's read end, ours.
            let mut rd = unsafe { <fs::File as std::os::fd::FromRawFd>::from_raw_fd(p[0]) };
            rd.read_to_string(&mut res).ok();
            let mut status = 0;
            // SAFETY: waits for our child.
            unsafe { libc::waitpid(pid, &mut status, 0) };
            if libc::WIFSIGNALED(status) {
                res = match libc::WTERMSIG(status) {
                    libc::SIGBUS => "SIGBUS".into(),
                    libc::SIGSEGV => "SIGSEGV".into(),
                    s => format!("SIG{s}"),
                };
            }
            out.push(format!("mmap={res}"));
        }
    }
    out.join(" ")
}

/// Attaches `image` read-only to a free loop device with autoclear (`losetup -r`, detached on
/// the last close); returns the device's path and its open descriptor.
fn loop_attach(image: &str) -> io::Result<(String, fs::File)> {
    use std::os::fd::AsRawFd;
    const LOOP_CTL_GET_FREE: libc::c_ulong = 0x4C82;
    const LOOP_CONFIGURE: libc::c_ulong = 0x4C0A;
    const LO_FLAGS_READ_ONLY: u32 = 1;
    const LO_FLAGS_AUTOCLEAR: u32 = 4;
    // struct loop_config: fd, block_size, struct loop_info64 (232 bytes: lo_flags at 52),
    // 64 reserved bytes.
    let backing = fs::File::open(image)?;
    let ctl = fs::File::open("/dev/loop-control")?;
    for _ in 0..10 {
        // SAFETY: an ioctl without argument on our open descriptor.
        let n = unsafe { libc::ioctl(ctl.as_raw_fd(), LOOP_CTL_GET_FREE) };
        if n < 0 {
            return Err(io::Error::last_os_error());
        }
        let dev = format!("/dev/loop{n}");
        let lo = fs::File::open(&dev)?;
        let mut cfg = [0u8; 304];
        cfg[..4].copy_from_slice(&(backing.as_raw_fd() as u32).to_ne_bytes());
        cfg[8 + 52..8 + 56].copy_from_slice(&(LO_FLAGS_READ_ONLY | LO_FLAGS_AUTOCLEAR).to_ne_bytes());
        // SAFETY: LOOP_CONFIGURE reads a struct loop_config, which `cfg` holds.
        if unsafe { libc::ioctl(lo.as_raw_fd(), LOOP_CONFIGURE, cfg.as_ptr()) } == 0 {
            return Ok((dev, lo));
        }
        let e = io::Error::last_os_error();
        // Another process took it first: ask for the next free one.
        if e.raw_os_error() != Some(libc::EBUSY) {
            return Err(e);
        }
    }
    Err(io::Error::from_raw_os_error(libc::EBUSY))
}

/// The kernel log from the end it has now: `/dev/kmsg`, non-blocking, its existing records
/// skipped.
fn kmsg_open() -> Option<fs::File> {
    use std::os::unix::fs::OpenOptionsExt;
    let f = fs::OpenOptions::new().read(true).custom_flags(libc::O_NONBLOCK).open("/dev/kmsg").ok()?;
    use std::os::fd::AsRawFd;
    // SAFETY: seeks our own descriptor (SEEK_END: to after the last record).
    unsafe { libc::lseek(f.as_raw_fd(), 0, libc::SEEK_END) };
    Some(f)
}

/// The messages of the records logged since `kmsg_open`, one per line.
fn kmsg_read(f: &mut fs::File) -> Vec<String> {
    let mut out = Vec::new();
    let mut buf = vec![0u8; 8192];
    loop {
        match f.read(&mut buf) {
            Ok(0) => break,
            Ok(n) => {
                // "prio,seq,time,flags;message\n" then " KEY=value" continuation lines.
                let rec = String::from_utf8_lossy(&buf[..n]);
                let (head, msg) = rec.split_once(';').unwrap_or(("", &rec));
                let us: u64 = head.split(',').nth(2).and_then(|t| t.parse().ok()).unwrap_or(0);
                let msg = msg.lines().next().unwrap_or("");
                out.push(format!("[{:5}.{:06}] {msg}", us / 1_000_000, us % 1_000_000));
            }
            // EPIPE: records were overwritten; go on with the next ones.
            Err(e) if e.raw_os_error() == Some(libc::EPIPE) => {}
            Err(_) => break,
        }
    }
    out
}

fn probe(args: &[String]) -> ! {
    use std::ffi::CString;
    if args.len() == 3 {
        println!("{}", probe_path(&args[2]));
        std::process::exit(0);
    }
    let (fstype, image, dir, path) = (&args[3], &args[4], &args[5], &args[6]);
    let mut kmsg = kmsg_open();
    let line = match loop_attach(image) {
        Err(e) => format!("losetup={}", errname(&e)),
        Ok((dev, lo)) => {
            let c = |s: &str| CString::new(s).unwrap();
            let (src, cdir, cfs) = (c(&dev), c(dir), c(fstype));
            // SAFETY: valid C strings, no data.
            let r = unsafe { libc::mount(src.as_ptr(), cdir.as_ptr(), cfs.as_ptr(), libc::MS_RDONLY, std::ptr::null()) };
            let line = if r != 0 {
                format!("mount=ERR {}", errname(&io::Error::last_os_error()))
            } else {
                let mut line = probe_path(&format!("{dir}{path}"));
                // SAFETY: a C string naming our mount.
                if unsafe { libc::umount(cdir.as_ptr()) } != 0 {
                    line += &format!(" umount={}", errname(&io::Error::last_os_error()));
                }
                line
            };
            drop(lo);
            line
        }
    };
    println!("{line}");
    if let Some(k) = kmsg.as_mut() {
        for m in kmsg_read(k) {
            println!("kmsg: {m}");
        }
    }
    std::process::exit(0);
}

/// `erofs-tree handles DIR`: for every entry, the NFS file handle (name_to_handle_at) and,
/// after dropping the dentry and inode caches, what open_by_handle_at finds with it: a file's
/// content hash, or a directory's inode number (which takes the fs's get_parent to reconnect).
fn handles(dir: &str) -> ! {
    use std::ffi::CString;
    use std::os::fd::AsRawFd;
    let mut paths = Vec::new();
    fn collect(p: &Path, out: &mut Vec<PathBuf>) {
        out.push(p.to_path_buf());
        if let Ok(rd) = fs::read_dir(p) {
            let mut v: Vec<_> = rd.filter_map(|e| e.ok()).collect();
            v.sort_by_key(|e| e.file_name());
            for e in v {
                if e.file_type().map(|t| t.is_dir()).unwrap_or(false) {
                    collect(&e.path(), out);
                } else if e.file_type().map(|t| t.is_file()).unwrap_or(false) {
                    out.push(e.path());
                }
            }
        }
    }
    collect(Path::new(dir), &mut paths);
    let mut got = Vec::new();
    for p in &paths {
        let c = CString::new(p.as_os_str().as_bytes()).unwrap();
        let mut buf = [0u8; 8 + 128];
        buf[..4].copy_from_slice(&128u32.to_ne_bytes());
        let mut mount_id: libc::c_int = 0;
        // SAFETY: a file_handle of 128 bytes of room, valid path and out pointer.
        let r = unsafe { libc::syscall(libc::SYS_name_to_handle_at, libc::AT_FDCWD, c.as_ptr(), buf.as_mut_ptr(), &mut mount_id, 0) };
        if r != 0 {
            println!("{}\tname_to_handle_at errno {}", p.display(), io::Error::last_os_error().raw_os_error().unwrap_or(0));
            std::process::exit(1);
        }
        got.push((p.clone(), buf));
    }
    fs::write("/proc/sys/vm/drop_caches", "2").ok();
    let mnt = fs::File::open(dir).unwrap();
    for (p, buf) in got {
        let n = u32::from_ne_bytes(buf[..4].try_into().unwrap()) as usize;
        let hex: String = buf[4..8 + n].iter().map(|b| format!("{b:02x}")).collect();
        // SAFETY: the handle filled above, a directory fd on the same mount.
        let fd = unsafe { libc::syscall(libc::SYS_open_by_handle_at, mnt.as_raw_fd(), buf.as_ptr(), libc::O_RDONLY) };
        if fd < 0 {
            println!("{}\t{hex}\topen_by_handle_at errno {}", p.display(), io::Error::last_os_error().raw_os_error().unwrap_or(0));
            continue;
        }
        // SAFETY: a new fd we own.
        let f = unsafe { <fs::File as std::os::fd::FromRawFd>::from_raw_fd(fd as i32) };
        let md = f.metadata().unwrap();
        let what = if md.is_dir() {
            format!("dir ino {}", md.ino())
        } else {
            let mut h = Xxh3::new();
            let mut r = io::BufReader::new(f);
            let mut v = Vec::new();
            r.read_to_end(&mut v).unwrap();
            h.update(&v);
            format!("file {:016x}", h.digest())
        };
        let rel = p.strip_prefix(dir).unwrap_or(&p);
        println!("{}\t{hex}\t{what}", rel.display());
    }
    std::process::exit(0);
}

/// `erofs-tree hostile FSTYPE IMAGE file|loop DIR`: one image of tests/hostile-campaign. Mounts
/// IMAGE read-only at DIR as FSTYPE (itself, or on a read-only loop device), walks it (lstat,
/// listxattr and every getxattr, a lookup that must fail, readdir in name order, readlink),
/// reads every regular file whole through read(2) and then through a shared mapping (copied
/// into a memfd with pwrite, so that a page that fails to read gives EFAULT, not SIGBUS), and
/// unmounts (lazily if that fails). Prints one JSON object: `{"mount": ERRNO}` when the mount
/// fails, or `{"mount": 0, "errs": {"OP:ERRNO": COUNT, ...}, "entries", "files", "bytes",
/// "capped", "umount": ERRNO}`, errnos as numbers (tests/qemu/hostile-guest.py names them). At
/// most 16 MiB a file, 64 MiB an image, 20,000 entries and 24 levels are walked, so that a
/// forged i_size or a directory loop ends. EROFS_TREE_HOSTILE_STALL_MS=N first sleeps N ms (a
/// hang for tests).
fn hostile(args: &[String]) -> ! {
    use std::collections::BTreeMap;
    use std::ffi::CString;
    use std::os::fd::AsRawFd;
    const FILE_CAP: u64 = 16 << 20;
    const IMAGE_CAP: u64 = 64 << 20;
    const ENTRY_CAP: u64 = 20000;
    const DEPTH_CAP: u32 = 24;
    const CHUNK: usize = 1 << 20;

    struct Walk {
        errs: BTreeMap<String, u64>,
        memfd: libc::c_int,
        entries: u64,
        files: u64,
        bytes: u64,
        capped: u64,
        buf: Vec<u8>,
    }
    fn errno_of(e: &io::Error) -> i32 {
        e.raw_os_error().unwrap_or(0)
    }
    fn cpath(p: &Path) -> CString {
        CString::new(p.as_os_str().as_bytes()).unwrap()
    }
    impl Walk {
        fn err(&mut self, op: &str, e: i32) {
            *self.errs.entry(format!("{op}:{e}")).or_insert(0) += 1;
        }
        fn last_err(&mut self, op: &str) {
            self.err(op, errno_of(&io::Error::last_os_error()));
        }
        fn read_file(&mut self, path: &Path, size: u64) {
            use std::os::unix::fs::OpenOptionsExt;
            let mut f = match fs::OpenOptions::new().read(true).custom_flags(libc::O_NOFOLLOW).open(path) {
                Ok(f) => f,
                Err(e) => return self.err("open", errno_of(&e)),
            };
            self.files += 1;
            let mut got = 0u64;
            loop {
                if got >= FILE_CAP || self.bytes >= IMAGE_CAP {
                    self.capped += 1;
                    break;
                }
                match f.read(&mut self.buf) {
                    Ok(0) => break,
                    Ok(k) => {
                        got += k as u64;
                        self.bytes += k as u64;
                    }
                    Err(e) if e.kind() == io::ErrorKind::Interrupted => {}
                    Err(e) => {
                        self.err("read", errno_of(&e));
                        break;
                    }
                }
            }
            let n = size.min(FILE_CAP) as usize;
            if n == 0 || self.bytes >= IMAGE_CAP {
                return;
            }
            // SAFETY: a new read-only shared mapping of an open file, `n` bytes; it is only
            // handed to the kernel (pwrite), which reports a page that fails as EFAULT.
            let m = unsafe { libc::mmap(std::ptr::null_mut(), n, libc::PROT_READ, libc::MAP_SHARED, f.as_raw_fd(), 0) };
            if m == libc::MAP_FAILED {
                return self.last_err("mmap");
            }
            let mut off = 0;
            while off < n {
                let want = CHUNK.min(n - off);
                // SAFETY: `m + off .. + want` lies inside the mapping; the kernel reads it.
                let w = unsafe { libc::pwrite(self.memfd, m.cast::<u8>().add(off).cast(), want, 0) };
                if w < 0 {
                    self.last_err("mmapread");
                    break;
                }
                self.bytes += w as u64;
                if (w as usize) < want {
                    *self.errs.entry("mmapread:short".into()).or_insert(0) += 1;
                    break;
                }
                off += want;
            }
            // SAFETY: unmaps the mapping made above, which nothing refers to any more.
            unsafe { libc::munmap(m, n) };
        }
        /// listxattr and every getxattr as Python's os.listxattr and os.getxattr call them:
        /// a small buffer first (256 and 128 bytes), the largest one on `ERANGE`, so that a
        /// driver's size checks are taken too; every NUL-terminated name, empty ones included.
        fn xattrs(&mut self, path: &Path) {
            fn sized(first: usize, mut call: impl FnMut(&mut [u8]) -> isize) -> Result<usize, i32> {
                let mut buf = vec![0u8; first];
                loop {
                    let n = call(&mut buf);
                    if n >= 0 {
                        // CAST: not negative.
                        return Ok(n as usize);
                    }
                    let e = errno_of(&io::Error::last_os_error());
                    if e != libc::ERANGE || buf.len() >= 65536 {
                        return Err(e);
                    }
                    buf = vec![0u8; 65536];
                }
            }
            let c = cpath(path);
            let mut list = Vec::new();
            let n = sized(256, |b| {
                // SAFETY: `b` has `b.len()` writable bytes.
                let n = unsafe { libc::llistxattr(c.as_ptr(), b.as_mut_ptr().cast(), b.len()) };
                if n >= 0 {
                    list = b[..(n as usize).min(b.len())].to_vec();
                }
                n
            });
            if let Err(e) = n {
                return self.err("listxattr", e);
            }
            // Each name ends with a NUL; bytes after the last NUL are no name.
            let mut names = list.split(|&b| b == 0).collect::<Vec<_>>();
            names.pop();
            for name in names {
                let cn = CString::new(name).unwrap();
                let r = sized(128, |b| {
                    // SAFETY: C strings; `b` has `b.len()` writable bytes.
                    unsafe { libc::lgetxattr(c.as_ptr(), cn.as_ptr(), b.as_mut_ptr().cast(), b.len()) }
                });
                if let Err(e) = r {
                    self.err("getxattr", e);
                }
            }
        }
        fn node(&mut self, path: &Path, depth: u32) {
            self.entries += 1;
            let md = match fs::symlink_metadata(path) {
                Ok(md) => md,
                Err(e) => return self.err("lstat", errno_of(&e)),
            };
            self.xattrs(path);
            let ft = md.file_type();
            if ft.is_dir() {
                if depth >= DEPTH_CAP {
                    return;
                }
                match fs::symlink_metadata(path.join("zz-not-there")) {
                    Ok(_) => *self.errs.entry("lookup:found-missing".into()).or_insert(0) += 1,
                    Err(e) if errno_of(&e) == libc::ENOENT => {}
                    Err(e) => self.err("lookup", errno_of(&e)),
                }
                let names = fs::read_dir(path).and_then(|d| d.map(|e| e.map(|e| e.file_name())).collect::<io::Result<Vec<_>>>());
                let mut names = match names {
                    Ok(v) => v,
                    Err(e) => return self.err("readdir", errno_of(&e)),
                };
                names.sort_by(|a, b| a.as_bytes().cmp(b.as_bytes()));
                for name in names {
                    if self.entries >= ENTRY_CAP {
                        self.capped += 1;
                        return;
                    }
                    self.node(&path.join(name), depth + 1);
                }
            } else if ft.is_symlink() {
                if let Err(e) = fs::read_link(path) {
                    self.err("readlink", errno_of(&e));
                }
            } else if ft.is_file() {
                self.read_file(path, md.len());
            }
        }
    }

    let (fstype, image, mode, dir) = (&args[2], &args[3], &args[4], &args[5]);
    // For tests/run's check that the campaign tells a hang: a walker that takes this long.
    if let Some(ms) = std::env::var("EROFS_TREE_HOSTILE_STALL_MS").ok().and_then(|v| v.parse().ok()) {
        std::thread::sleep(std::time::Duration::from_millis(ms));
    }
    let mut lo = None;
    let src = if mode == "loop" {
        match loop_attach(image) {
            Ok((dev, f)) => {
                lo = Some(f);
                dev
            }
            Err(e) => {
                println!("{{\"outcome\": \"harness\", \"what\": \"loop\", \"errno\": {}}}", errno_of(&e));
                std::process::exit(0);
            }
        }
    } else {
        image.clone()
    };
    let c = |s: &str| CString::new(s).unwrap();
    let (csrc, cdir, cfs) = (c(&src), c(dir), c(fstype));
    // Mount options from EROFS_TREE_MOUNT_OPTS (tests/hostile-campaign --opts), if any.
    let data = std::env::var("EROFS_TREE_MOUNT_OPTS").ok().filter(|o| !o.is_empty()).map(|o| c(&o));
    let data_ptr = data.as_ref().map_or(std::ptr::null(), |d| d.as_ptr().cast());
    // SAFETY: valid C strings; the data pointer is null or a C string.
    if unsafe { libc::mount(csrc.as_ptr(), cdir.as_ptr(), cfs.as_ptr(), libc::MS_RDONLY, data_ptr) } != 0 {
        println!("{{\"mount\": {}}}", errno_of(&io::Error::last_os_error()));
        std::process::exit(0);
    }
    // SAFETY: a C string for the name; no flags.
    let memfd = unsafe { libc::memfd_create(c"hostile-mmap".as_ptr(), 0) };
    assert!(memfd >= 0, "memfd_create: {}", io::Error::last_os_error());
    let mut w = Walk { errs: BTreeMap::new(), memfd, entries: 0, files: 0, bytes: 0, capped: 0, buf: vec![0u8; CHUNK] };
    let mut sfs = std::mem::MaybeUninit::<libc::statfs>::uninit();
    // SAFETY: `sfs` has room for a struct statfs.
    if unsafe { libc::statfs(cdir.as_ptr(), sfs.as_mut_ptr()) } != 0 {
        w.last_err("statfs");
    }
    w.node(Path::new(dir), 0);
    // SAFETY: a C string naming our mount.
    let um = if unsafe { libc::umount(cdir.as_ptr()) } != 0 {
        let e = errno_of(&io::Error::last_os_error());
        // SAFETY: as above, detached lazily.
        unsafe { libc::umount2(cdir.as_ptr(), libc::MNT_DETACH) };
        e
    } else {
        0
    };
    drop(lo);
    let errs: Vec<String> = w.errs.iter().map(|(k, v)| format!("\"{k}\": {v}")).collect();
    println!(
        "{{\"mount\": 0, \"errs\": {{{}}}, \"entries\": {}, \"files\": {}, \"bytes\": {}, \"capped\": {}, \"umount\": {um}}}",
        errs.join(", "),
        w.entries,
        w.files,
        w.bytes,
        w.capped
    );
    std::process::exit(0);
}

fn main() {
    let args: Vec<String> = std::env::args().collect();
    if args.len() == 3 && args[1] == "handles" {
        handles(&args[2]);
    }
    if (args.len() == 3 || args.len() == 7 && args[2] == "--mount") && args[1] == "probe" {
        probe(&args);
    }
    if args.len() == 6 && args[1] == "hostile" {
        hostile(&args);
    }
    if args.len() >= 5 && args[1] == "mount" {
        mount(&args);
    }
    if args.len() < 3 || args[1] != "manifest" {
        eprintln!("usage: erofs-tree manifest [--fields a,b,c] [--mmap] DIR");
        std::process::exit(2);
    }
    let mut opts = Opts {
        fields: "type,mode,uid,gid,size,nlink,rdev,data,links".split(',').map(String::from).collect(),
        mmap: false,
    };
    let mut dir = None;
    let mut i = 2;
    while i < args.len() {
        match args[i].as_str() {
            "--fields" => {
                i += 1;
                opts.fields = args[i].split(',').map(String::from).collect();
            }
            "--mmap" => opts.mmap = true,
            d => dir = Some(PathBuf::from(d)),
        }
        i += 1;
    }
    let root = dir.expect("no DIR");
    let mut out = Vec::new();
    let mut inos = HashMap::new();
    if let Err(e) = walk(&root, Path::new(""), &mut out, &opts, &mut inos) {
        eprintln!("erofs-tree: {}: {e}", root.display());
        std::process::exit(1);
    }
    out.sort_by(|a, b| a.0.as_os_str().as_bytes().cmp(b.0.as_os_str().as_bytes()));
    let stdout = io::stdout();
    let mut w = io::BufWriter::new(stdout.lock());
    for (p, cols) in out {
        let p = if p.as_os_str().is_empty() { ".".into() } else { p.to_string_lossy().escape_debug().to_string() };
        writeln!(w, "{p}\t{cols}").unwrap();
    }
}
