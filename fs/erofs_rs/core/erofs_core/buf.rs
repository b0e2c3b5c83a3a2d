// SPDX-License-Identifier: MIT OR GPL-2.0-only
//! A window of metadata kept between reads. C counterpart: `struct erofs_buf`
//! (fs/erofs/data.c), which keeps the last metadata page mapped so that consecutive index
//! loads of one extent lookup (`z_erofs_load_lcluster_from_disk`) do not each look it up again.

use super::{
    MetaRead,
    Result, //
};
use core::cell::RefCell;

/// A [`MetaRead`] that reads whole aligned windows of `inner` into a buffer and serves reads
/// that fall inside the window it holds from there.
///
/// Reads that cross a window's edge, or whose window cannot be read whole (the end of the
/// device, or of the metabox inode), go to `inner` unchanged, so every read returns what
/// `inner` returns for it.
pub struct MetaBuf<'a, M: MetaRead + ?Sized> {
    inner: &'a M,
    win: RefCell<Window<'a>>,
}

struct Window<'a> {
    buf: &'a mut [u8],
    /// The position of `buf[0]`, when `buf` holds a window.
    base: Option<u64>,
}

impl<'a, M: MetaRead + ?Sized> MetaBuf<'a, M> {
    /// Reads `inner` through windows of `buf.len()` bytes, which must be a power of two (any
    /// other length, or an empty buffer, sends every read to `inner`).
    pub fn new(inner: &'a M, buf: &'a mut [u8]) -> Self {
        MetaBuf {
            inner,
            win: RefCell::new(Window { buf, base: None }),
        }
    }

    /// The position of the window it holds, if it holds one: the last window read.
    pub fn window(&self) -> Option<u64> {
        self.win.try_borrow().ok().and_then(|w| w.base)
    }

    /// Copies `out.len()` bytes at `pos` out of the window, reading the window first if it is
    /// another; `false` if the read does not fit in one window or the window cannot be read.
    fn copy_out_of_window(&self, w: &mut Window<'_>, pos: u64, out: &mut [u8]) -> bool {
        let Ok(size) = u64::try_from(w.buf.len()) else {
            return false;
        };
        let Some(mask) = size.checked_sub(1).filter(|_| size.is_power_of_two()) else {
            return false;
        };
        let base = pos & !mask;
        let off = pos & mask;
        let end = u64::try_from(out.len())
            .ok()
            .and_then(|len| off.checked_add(len))
            .filter(|&e| e <= size);
        let (Ok(off), Some(Ok(end))) = (usize::try_from(off), end.map(usize::try_from)) else {
            return false;
        };
        if w.base != Some(base) {
            w.base = None;
            if self.inner.read_meta(base, w.buf).is_err() {
                return false;
            }
            w.base = Some(base);
        }
        match w.buf.get(off..end) {
            Some(src) => {
                copy_small(out, src);
                true
            }
            None => false,
        }
    }
}

/// `out.copy_from_slice(src)`, the sizes of index reads (8 and 32 bytes) as fixed-size copies,
/// which compile inline: the out-of-line `memcpy` of the kernel is `rep movsb` on CPUs with
/// FSRM, which QEMU's `-icount` counts as one instruction a byte (about 50 a cold random read
/// of an LZ4 image). `out` and `src` have the same length (inlined where the caller's
/// slicing shows it, so that no panic path is left).
#[inline(always)]
fn copy_small(out: &mut [u8], src: &[u8]) {
    if let (Ok(o), Ok(s)) = (
        <&mut [u8; 8]>::try_from(&mut *out),
        <&[u8; 8]>::try_from(src),
    ) {
        *o = *s;
    } else if let (Ok(o), Ok(s)) = (
        <&mut [u8; 32]>::try_from(&mut *out),
        <&[u8; 32]>::try_from(src),
    ) {
        *o = *s;
    } else {
        out.copy_from_slice(src);
    }
}

impl<M: MetaRead + ?Sized> MetaRead for MetaBuf<'_, M> {
    fn read_meta(&self, pos: u64, out: &mut [u8]) -> Result<()> {
        // (`try_borrow_mut` cannot fail: nothing borrows the window across a call.)
        if let Ok(mut w) = self.win.try_borrow_mut() {
            if self.copy_out_of_window(&mut w, pos, out) {
                return Ok(());
            }
        }
        self.inner.read_meta(pos, out)
    }
}

#[cfg(test)]
mod tests {
    #![allow(
        clippy::indexing_slicing,
        clippy::unwrap_used,
        clippy::arithmetic_side_effects,
        clippy::cast_possible_truncation,
        clippy::as_conversions
    )]
    use super::*;
    use crate::erofs_core::Error;
    use core::cell::Cell;

    /// What the test backend fails with: a backend's errno (EIO), opaque to the core.
    const BACKEND_EIO: i32 = 5;

    /// `len` bytes of `i as u8`, counting the reads that reach it.
    struct Counting {
        len: u64,
        reads: Cell<usize>,
    }

    impl MetaRead for Counting {
        fn read_meta(&self, pos: u64, buf: &mut [u8]) -> Result<()> {
            self.reads.set(self.reads.get() + 1);
            if pos + buf.len() as u64 > self.len {
                return Err(Error::Io(BACKEND_EIO));
            }
            for (i, b) in buf.iter_mut().enumerate() {
                *b = (pos + i as u64) as u8;
            }
            Ok(())
        }
    }

    fn read(m: &impl MetaRead, pos: u64, len: usize) -> Result<std::vec::Vec<u8>> {
        let mut v = std::vec![0u8; len];
        m.read_meta(pos, &mut v).map(|()| v)
    }

    #[test]
    fn reads_in_one_window_reach_the_device_once() {
        let dev = Counting {
            len: 10000,
            reads: Cell::new(0),
        };
        let mut w = [0u8; 4096];
        let m = MetaBuf::new(&dev, &mut w);
        for pos in [4100, 4200, 4096, 8184] {
            assert_eq!(read(&m, pos, 8).unwrap(), read(&dev, pos, 8).unwrap());
        }
        // One window read, plus the four direct reads for comparison.
        assert_eq!(dev.reads.get(), 5);
    }

    #[test]
    fn reads_across_windows_or_past_the_end_go_to_the_device() {
        let dev = Counting {
            len: 10000,
            reads: Cell::new(0),
        };
        let mut w = [0u8; 4096];
        let m = MetaBuf::new(&dev, &mut w);
        // Across the edge of two windows: the device's bytes.
        assert_eq!(read(&m, 4092, 8).unwrap(), read(&dev, 4092, 8).unwrap());
        // The last window is short (10000 < 12288): read directly, same bytes and errors.
        assert_eq!(read(&m, 9990, 10).unwrap(), read(&dev, 9990, 10).unwrap());
        assert_eq!(read(&m, 9995, 10), Err(Error::Io(BACKEND_EIO)));
    }

    #[test]
    fn a_buffer_that_is_not_a_power_of_two_is_not_used() {
        let dev = Counting {
            len: 10000,
            reads: Cell::new(0),
        };
        let mut w = [0u8; 3000];
        let m = MetaBuf::new(&dev, &mut w);
        assert_eq!(read(&m, 100, 8).unwrap(), read(&dev, 100, 8).unwrap());
        assert_eq!(dev.reads.get(), 2);
    }
}
