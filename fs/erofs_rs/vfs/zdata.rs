// SPDX-License-Identifier: GPL-2.0-only
//! The parts of the offload ([`Accel`]) that reach into the folios a read fills.

use super::pagecache::{
    CFolio,
    OutFolio, //
};
use kernel::{
    debugfs::Dir,
    prelude::*, //
};

pub(crate) use super::acomp::{
    Accel,
    AccelReq, //
};

/// The parts of [`Accel`] that reach into this file's types: the folios it decodes between.
impl Accel {
    /// Opens acomp driver `name` (NUL-terminated) for a mount whose DEFLATE streams use
    /// `windowbits`, or `None` if it is missing or cannot serve such windows (said in the log)
    /// or memory is short: the mount then decodes in software. Its counters go into debugfs
    /// directory `dir` (file `accel`).
    pub(crate) fn open(dir: &Dir, name: &[u8], windowbits: u8) -> Option<Self> {
        let mut a = Accel::new(name, windowbits)?;
        a.show_in(dir);
        Some(a)
    }

    /// Starts decoding `inlen` bytes of `input` (from byte `in_off` of the first folio) into
    /// `outlen` bytes of `out` (from byte `out_off` of the first), folios in a row of any
    /// order. The request owns `out` until [`AccelReq::wait`] gives the folios back, so
    /// nothing else reads or writes them while the engine may. Each folio must be one no
    /// output map holds (or was forgotten holding), and write every byte the engine puts in
    /// it (a part may, for its own bytes). `Err` gives `out` back if a folio is not such
    /// (`EBUSY`, `EINVAL`), no request slot is free, or the engine cannot take it: decode in
    /// software then.
    pub(crate) fn submit(
        &self,
        input: &[CFolio],
        in_off: usize,
        inlen: usize,
        out: KVec<OutFolio>,
        out_off: usize,
        outlen: usize,
    ) -> Result<AccelReq<'_>, KVec<OutFolio>> {
        if outputs_ok(&out, out_off, outlen).is_err() {
            return Err(out);
        }
        // SAFETY: live folios during the call: `input` referenced by its `CFolio`s, `out`
        // locked by its `OutFolio`s, which the request owns from here until it is waited for
        // (the request references them itself while in flight).
        let req = unsafe {
            self.submit_folios(
                input.iter().map(|f| f.as_ptr()),
                in_off,
                inlen,
                out.iter().map(|f| f.ptr),
                out_off,
                outlen,
            )
        };
        match req {
            Some(r) => Ok(r.owning(out)),
            None => Err(out),
        }
    }
}

/// Whether the engine may write `outlen` bytes into `out` from byte `out_off` of the first
/// folio, on through the next ones from their first byte: each folio is unmapped, gets some of
/// the bytes, and writes all of those it gets ([`OutFolio::owns`]); `EBUSY` for a mapped one,
/// `EINVAL` else.
fn outputs_ok(out: &[OutFolio], out_off: usize, outlen: usize) -> Result {
    let mut left = outlen;
    let mut off = out_off;
    for f in out {
        if f.mapped.get() {
            return Err(EBUSY);
        }
        let n = f.size().checked_sub(off).ok_or(EINVAL)?.min(left);
        if n == 0 {
            return Err(EINVAL);
        }
        f.owns(off, n)?;
        // OVERFLOW: `n <= left`.
        left -= n;
        off = 0;
    }
    if left != 0 {
        return Err(EINVAL);
    }
    Ok(())
}
