// SPDX-License-Identifier: GPL-2.0-only
//! `erofs-rs`: check EROFS images and extract them in user space, on erofs_rs's format core
//! (the same `erofs-core` the kernel module compiles), on a pool of worker threads.
//!
//! ```text
//! erofs-rs [OPTIONS] fsck IMAGE
//! erofs-rs [OPTIONS] extract IMAGE DIR
//! erofs-rs [OPTIONS] ls|stat|cat IMAGE PATH
//!
//!   --device=FILE        an extra device (blob), in device-table order; repeatable
//!   --offset=N           the filesystem starts N bytes into IMAGE
//!   --workers=N, -j N    worker threads (default: the number of CPUs)
//!   --no-preserve-owner  extract as yourself (the default for ordinary users)
//!   --preserve-owner     chown to the image's owners (the default for root)
//!   --no-xattrs          do not set extended attributes (and ACLs)
//!   -q                   print errors only
//! ```
//!
//! Exit status as fsck.erofs: 0 when the image is consistent (and, for extract, written
//! whole), 1 for any problem found or any failure; every problem names its nid.

mod error;
mod extract;
mod image;
mod lz4;
mod lzma;
mod sys;
mod walk;

use error::{
    Error,
    Result, //
};
use image::{
    Ctx,
    Image,
    Mode,
    Piece, //
};
use std::io::Write;
use std::time::Instant;

const USAGE: &str = "usage: erofs-rs [--device=FILE]... [--offset=N] [--workers=N] [--no-preserve-owner] [--no-xattrs] [-q]
                fsck IMAGE | extract IMAGE DIR | ls IMAGE PATH | stat IMAGE PATH | cat IMAGE PATH";

/// Parsed command line.
struct Args {
    devices: Vec<String>,
    offset: u64,
    workers: usize,
    preserve_owner: bool,
    xattrs: bool,
    quiet: bool,
    pos: Vec<String>,
}

fn parse() -> std::result::Result<Args, String> {
    let mut a = Args {
        devices: Vec::new(),
        offset: 0,
        workers: std::thread::available_parallelism().map_or(1, |n| n.get()),
        preserve_owner: sys::euid() == 0,
        xattrs: true,
        quiet: false,
        pos: Vec::new(),
    };
    let mut it = std::env::args().skip(1);
    while let Some(arg) = it.next() {
        let (key, inline) = match arg.split_once('=') {
            Some((k, v)) if k.starts_with("--") => (k.to_string(), Some(v.to_string())),
            _ if arg.starts_with("-j") && arg.len() > 2 => {
                ("-j".to_string(), Some(arg[2..].to_string()))
            }
            _ => (arg.clone(), None),
        };
        let mut value = |k: &str| -> std::result::Result<String, String> {
            inline
                .clone()
                .or_else(|| it.next())
                .ok_or(format!("{k} needs a value"))
        };
        let num = |k: &str, v: String| {
            v.parse::<u64>()
                .map_err(|_| format!("{k}: not a number: {v}"))
        };
        match key.as_str() {
            "--device" => a.devices.push(value("--device")?),
            "--offset" => a.offset = num("--offset", value("--offset")?)?,
            "--workers" | "-j" => {
                a.workers = num("--workers", value("--workers")?)?.clamp(1, 1024) as usize;
            }
            "--no-preserve-owner" | "--no-preserve" => a.preserve_owner = false,
            "--preserve-owner" | "--preserve" => a.preserve_owner = true,
            "--no-xattrs" => a.xattrs = false,
            "--xattrs" => a.xattrs = true,
            "-q" | "--quiet" => a.quiet = true,
            "-h" | "--help" => return Err(String::new()),
            k if k.starts_with('-') && k.len() > 1 => return Err(format!("unknown option {k}")),
            _ => a.pos.push(arg),
        }
    }
    Ok(a)
}

fn main() {
    // A panic is a bug: report it and exit at once (status 101, as an unwinding panic), so
    // that no other worker waits for the one that died.
    let hook = std::panic::take_hook();
    std::panic::set_hook(Box::new(move |info| {
        hook(info);
        std::process::exit(101);
    }));
    let a = match parse() {
        Ok(a) => a,
        Err(e) => {
            if !e.is_empty() {
                eprintln!("erofs-rs: {e}");
            }
            eprintln!("{USAGE}");
            std::process::exit(if e.is_empty() { 0 } else { 1 });
        }
    };
    let code = match run(&a) {
        Ok(code) => code,
        Err(e) => {
            eprintln!("erofs-rs: {e}");
            1
        }
    };
    std::process::exit(code);
}

fn run(a: &Args) -> Result<i32> {
    let pos: Vec<&str> = a.pos.iter().map(String::as_str).collect();
    let (cmd, image, rest) = match pos.as_slice() {
        [cmd, image, rest @ ..] => (*cmd, *image, rest),
        _ => return Err(Error::msg(USAGE)),
    };
    let want = |n: usize| -> Result<()> {
        if rest.len() == n {
            Ok(())
        } else {
            Err(Error::msg(USAGE))
        }
    };
    match cmd {
        "fsck" | "extract" => {
            let dest = if cmd == "extract" {
                want(1)?;
                Some(std::path::PathBuf::from(rest[0]))
            } else {
                want(0)?;
                None
            };
            let t = Instant::now();
            let img = Image::open(image, a.offset, &a.devices)?;
            let opts = extract::Opts {
                workers: a.workers,
                dest,
                preserve_owner: a.preserve_owner,
                xattrs: a.xattrs,
                quiet: a.quiet,
            };
            let s = extract::run(&img, &opts);
            if !a.quiet || s.errors != 0 {
                eprintln!(
                    "erofs-rs: {cmd} {image}: {} inodes, {} MiB of data, {} problem{} ({:.2} s, {} workers)",
                    s.nodes,
                    s.bytes >> 20,
                    s.errors,
                    if s.errors == 1 { "" } else { "s" },
                    t.elapsed().as_secs_f64(),
                    a.workers
                );
            }
            Ok(i32::from(s.errors != 0))
        }
        "ls" | "stat" | "cat" => {
            want(1)?;
            let img = Image::open(image, a.offset, &a.devices)?;
            let cx = Ctx::new(&img);
            let vi = lookup(&cx, rest[0])?;
            match cmd {
                "ls" => ls(&cx, &vi),
                "stat" => stat(&cx, &vi),
                _ => cat(&cx, &vi),
            }?;
            Ok(0)
        }
        _ => Err(Error::msg(USAGE)),
    }
}

/// Finds `path` from the root.
fn lookup(cx: &Ctx<'_>, path: &str) -> Result<erofs_core::inode::InodeInfo> {
    let mut vi = cx.inode(cx.sbi().root_nid.0)?;
    for comp in path.split('/').filter(|c| !c.is_empty() && *c != ".") {
        if !vi.is_dir() {
            return Err(Error::msg(format!("{path}: not a directory")));
        }
        let mut found = None;
        walk::read_dir(cx, &vi, &mut |name, nid, _| {
            if name == comp.as_bytes() {
                found = Some(nid);
            }
            Ok(())
        })?;
        let nid = found.ok_or_else(|| Error::msg(format!("{path}: no such file or directory")))?;
        vi = cx.inode(nid)?;
    }
    Ok(vi)
}

/// The `ls -l`-like type letter.
fn type_char(m: u16) -> char {
    use erofs_core::ondisk::mode as m_;
    match m & m_::S_IFMT {
        m_::S_IFDIR => 'd',
        m_::S_IFLNK => 'l',
        m_::S_IFCHR => 'c',
        m_::S_IFBLK => 'b',
        m_::S_IFIFO => 'p',
        m_::S_IFSOCK => 's',
        _ => '-',
    }
}

/// `ls`: one line per entry (`nid type+mode uid gid size name`), or the inode itself.
fn ls(cx: &Ctx<'_>, vi: &erofs_core::inode::InodeInfo) -> Result<()> {
    let out = std::io::stdout();
    let mut out = out.lock();
    let line = |out: &mut dyn Write, vi: &erofs_core::inode::InodeInfo, name: &[u8]| {
        let _ = write!(
            out,
            "{}\t{}{:04o}\t{}\t{}\t{}\t",
            vi.nid.0,
            type_char(vi.mode),
            vi.mode & 0o7777,
            vi.uid,
            vi.gid,
            vi.size
        );
        let _ = out.write_all(name);
        let _ = out.write_all(b"\n");
    };
    if !vi.is_dir() {
        line(&mut out, vi, b".");
        return Ok(());
    }
    let mut entries = Vec::new();
    walk::read_dir(cx, vi, &mut |name, nid, _| {
        if name != b"." && name != b".." {
            entries.push((name.to_vec(), nid));
        }
        Ok(())
    })?;
    for (name, nid) in entries {
        let e = cx.inode(nid)?;
        line(&mut out, &e, &name);
    }
    Ok(())
}

/// `stat`: the inode's fields, one `key: value` a line, then its xattrs.
fn stat(cx: &Ctx<'_>, vi: &erofs_core::inode::InodeInfo) -> Result<()> {
    let sbi = cx.sbi();
    println!("nid: {}", vi.nid.0);
    println!("ino: {}", sbi.nid_to_ino(vi.nid.0));
    println!("type: {}", type_char(vi.mode));
    println!("mode: {:04o}", vi.mode & 0o7777);
    println!("uid: {}", vi.uid);
    println!("gid: {}", vi.gid);
    println!("nlink: {}", vi.nlink);
    println!("size: {}", vi.size);
    println!("mtime: {}.{:09}", vi.mtime, vi.mtime_nsec);
    println!("rdev: {}", vi.rdev);
    println!("layout: {:?}", vi.datalayout);
    println!(
        "inode: {} bytes, xattrs {} bytes",
        vi.inode_isize, vi.xattr_isize
    );
    for (name, value) in walk::xattrs(cx, vi)? {
        let v: String = value
            .iter()
            .map(|&b| {
                if b.is_ascii_graphic() || b == b' ' {
                    (b as char).to_string()
                } else {
                    format!("\\x{b:02x}")
                }
            })
            .collect();
        println!("xattr: {}={v}", String::from_utf8_lossy(&name));
    }
    Ok(())
}

/// `cat`: the data of a file (a symlink's target), holes as zeroes.
fn cat(cx: &Ctx<'_>, vi: &erofs_core::inode::InodeInfo) -> Result<()> {
    if vi.is_dir() {
        return Err(Error::nid(vi.nid.0, "is a directory"));
    }
    let zi = cx.zinfo(vi)?;
    let out = std::io::stdout();
    let mut out = out.lock();
    let mut at = 0u64;
    let zero = vec![0u8; 1 << 16];
    let mut werr = |e: std::io::Error| Error::msg(format!("stdout: {e}"));
    cx.for_each_extent(vi, zi.as_ref(), 0, vi.size, Mode::Own, &mut |p| {
        let (la, bytes, hole) = match p {
            Piece::Data(la, b) => (la, b, 0),
            Piece::Hole(la, n) => (la, &[][..], n),
        };
        // Pieces follow each other from 0; skip what was written, fill holes.
        let mut n = hole;
        while n > 0 {
            let k = n.min(zero.len() as u64);
            out.write_all(&zero[..k as usize]).map_err(&mut werr)?;
            n -= k;
            at = la + hole - n;
        }
        if !bytes.is_empty() {
            let end = (la + bytes.len() as u64).min(vi.size);
            if end > at {
                let s = (at.saturating_sub(la)) as usize;
                out.write_all(&bytes[s..(end - la) as usize])
                    .map_err(&mut werr)?;
                at = end;
            }
        }
        Ok(())
    })?;
    out.flush().map_err(werr)?;
    Ok(())
}
