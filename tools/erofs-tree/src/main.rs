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

fn main() {
    let args: Vec<String> = std::env::args().collect();
    if args.len() == 3 && args[1] == "handles" {
        handles(&args[2]);
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
