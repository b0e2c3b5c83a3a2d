// SPDX-License-Identifier: GPL-2.0-only
//! The system calls std has no safe wrapper for: xattrs, mknod, times without following
//! symlinks. Each takes Rust types and returns `io::Result`.

use std::ffi::CString;
use std::io;
use std::os::fd::AsRawFd;
use std::os::unix::ffi::OsStrExt;
use std::path::Path;

fn cpath(p: &Path) -> io::Result<CString> {
    CString::new(p.as_os_str().as_bytes()).map_err(|_| io::Error::from_raw_os_error(libc::EINVAL))
}

fn cname(n: &[u8]) -> io::Result<CString> {
    CString::new(n).map_err(|_| io::Error::from_raw_os_error(libc::EINVAL))
}

fn check(ret: libc::c_int) -> io::Result<()> {
    if ret < 0 {
        Err(io::Error::last_os_error())
    } else {
        Ok(())
    }
}

/// `lsetxattr(2)`.
pub fn lsetxattr(path: &Path, name: &[u8], value: &[u8]) -> io::Result<()> {
    let (p, n) = (cpath(path)?, cname(name)?);
    // SAFETY: `p` and `n` are NUL-terminated and live across the call; `value` is a valid
    // buffer of `value.len()` bytes.
    check(unsafe {
        libc::lsetxattr(
            p.as_ptr(),
            n.as_ptr(),
            value.as_ptr().cast(),
            value.len(),
            0,
        )
    })
}

/// `fsetxattr(2)`.
pub fn fsetxattr(f: &impl AsRawFd, name: &[u8], value: &[u8]) -> io::Result<()> {
    let n = cname(name)?;
    // SAFETY: `n` is NUL-terminated and lives across the call; `value` is a valid buffer of
    // `value.len()` bytes; a bad fd is an error, not UB.
    check(unsafe {
        libc::fsetxattr(
            f.as_raw_fd(),
            n.as_ptr(),
            value.as_ptr().cast(),
            value.len(),
            0,
        )
    })
}

/// `mknod(2)` with the image's `rdev` (the kernel's `new_encode_dev` form).
pub fn mknod(path: &Path, mode: u32, rdev: u32) -> io::Result<()> {
    let p = cpath(path)?;
    let major = (rdev & 0xfff00) >> 8;
    let minor = (rdev & 0xff) | ((rdev >> 12) & 0xfff00);
    let dev = libc::makedev(major, minor);
    // SAFETY: `p` is NUL-terminated and lives across the call.
    check(unsafe { libc::mknod(p.as_ptr(), mode as libc::mode_t, dev) })
}

fn times(sec: i64, nsec: u32) -> [libc::timespec; 2] {
    let t = libc::timespec {
        tv_sec: sec as libc::time_t,
        tv_nsec: libc::c_long::from(nsec.min(999_999_999) as i32),
    };
    [t, t]
}

/// Sets atime and mtime of `path` (not following a symlink) to `sec.nsec`.
pub fn lutimes(path: &Path, sec: i64, nsec: u32) -> io::Result<()> {
    let p = cpath(path)?;
    let ts = times(sec, nsec);
    // SAFETY: `p` is NUL-terminated, `ts` holds two timespecs; both live across the call.
    check(unsafe {
        libc::utimensat(
            libc::AT_FDCWD,
            p.as_ptr(),
            ts.as_ptr(),
            libc::AT_SYMLINK_NOFOLLOW,
        )
    })
}

/// Sets atime and mtime of an open file to `sec.nsec`.
pub fn futimes(f: &impl AsRawFd, sec: i64, nsec: u32) -> io::Result<()> {
    let ts = times(sec, nsec);
    // SAFETY: `ts` holds two timespecs and lives across the call; a bad fd is an error.
    check(unsafe { libc::futimens(f.as_raw_fd(), ts.as_ptr()) })
}

/// Whether `path` (not followed if a symlink) has the extended attribute `name`.
pub fn has_xattr(path: &Path, name: &[u8]) -> bool {
    let (Ok(p), Ok(n)) = (cpath(path), cname(name)) else {
        return false;
    };
    // SAFETY: `p` and `n` are NUL-terminated and live across the call; a null buffer of
    // size 0 asks for the value's size only.
    unsafe { libc::lgetxattr(p.as_ptr(), n.as_ptr(), std::ptr::null_mut(), 0) >= 0 }
}

/// Sets the file mode creation mask.
pub fn umask(mask: u32) {
    // SAFETY: `umask` has no preconditions and cannot fail.
    unsafe { libc::umask(mask as libc::mode_t) };
}

/// The effective group id.
pub fn egid() -> u32 {
    // SAFETY: `getegid` has no preconditions and cannot fail.
    unsafe { libc::getegid() }
}

/// The effective user id.
pub fn euid() -> u32 {
    // SAFETY: `geteuid` has no preconditions and cannot fail.
    unsafe { libc::geteuid() }
}
