// SPDX-License-Identifier: GPL-2.0-only
//! The offload of DEFLATE pclusters to a crypto-API (acomp) engine: which engine a mount
//! opens (`decomp_accel=`, or the module-wide `/sys/fs/erofs_rs/accel`), whether it can serve
//! the image's windows, the per-mount counters and their debugfs file, and the submit and
//! wait that zdata.rs calls. C counterpart: fs/erofs/decompressor_crypto.c (the Intel QAT
//! path). The acomp service itself (transforms, requests, their buffers) is the layer's
//! ([`vfs::acomp`](crate::vfs::acomp)).
//!
//! Lifetimes: an [`Accel`] holds its engine in an [`Arc`], shared with its debugfs file; the
//! engine's [`Requests`] wait for any request still in flight when dropped.
//!
//! Locks: the module-wide default name has its own mutex, held only to copy the name.
#![deny(unsafe_code)]

use crate::vfs::{
    acomp::{
        Decompression,
        Requests,
        Transform,
        NAME_LEN, //
    },
    global::{
        GlobalArc,
        Published, //
    },
    pagecache::{
        CFolio,
        OutFolio, //
    },
    trace::{
        self,
        AccelOp, //
    },
};
use core::fmt;
use kernel::{
    debugfs::{
        Dir,
        File, //
    },
    new_mutex,
    prelude::*,
    str::CStr,
    sync::{
        atomic::{
            Atomic,
            Relaxed, //
        },
        Arc,
        Mutex, //
    },
};

/// A mount's engine: the requests and the counters its debugfs file shows.
#[pin_data]
struct Engine {
    #[pin]
    requests: Requests,
    offloaded: Atomic<i64>,
    fallback: Atomic<i64>,
    errors: Atomic<i64>,
    bytes_in: Atomic<i64>,
    bytes_out: Atomic<i64>,
}

/// A mount's crypto-API (acomp) engine for DEFLATE pclusters (`decomp_accel=`), closed on
/// drop: one transform with a fixed set of requests; a reader submits several pclusters and
/// waits for them in file order. The driver decides which pclusters go, and decodes in
/// software whatever the engine refuses or fails. Its counters are in the mount's debugfs
/// directory (`accel`), whose file holds a reference on the engine while it exists.
pub(crate) struct Accel {
    // Declared first: the file goes before our reference on the engine.
    _dbg: Option<Pin<KBox<File<Arc<Engine>>>>>,
    engine: Arc<Engine>,
}

impl Accel {
    /// Room for an acomp driver's name and its NUL (`CRYPTO_MAX_ALG_NAME`).
    pub(crate) const NAME_LEN: usize = NAME_LEN;

    /// Opens acomp driver `name` (NUL-terminated) for a mount whose DEFLATE streams use
    /// `windowbits`, or `None` if it is missing or cannot serve such windows (said in the log)
    /// or memory is short: the mount then decodes in software. Its counters go into the
    /// debugfs directory `dir` (a missing debugfs, or memory too short for the file, leaves
    /// the engine without one).
    pub(crate) fn open(dir: &Dir, name: &[u8], windowbits: u8) -> Option<Self> {
        if name.last() != Some(&0) {
            return None;
        }
        let name = CStr::from_bytes_until_nul(name).ok()?;
        let tfm = match Transform::new(name) {
            Ok(tfm) => tfm,
            Err(e) => {
                pr_warn!(
                    "acomp driver {} unavailable ({}): DEFLATE decodes in software\n",
                    name,
                    e.to_errno()
                );
                return None;
            }
        };
        // The kernel's software driver inflates with 2 KiB windows (crypto/deflate.c,
        // DEFLATE_DEF_WINBITS 11): a stream with longer back-references is not for it (on 7.3,
        // feeding it one faults in zlib_inflate).
        if tfm.driver_name() == c"deflate-generic" && windowbits > 11 {
            pr_warn!(
                "{} inflates with 2 KiB windows, this image's DEFLATE uses {} KiB: DEFLATE decodes in software\n",
                tfm.driver_name(),
                1u32.checked_shl(u32::from(windowbits)).unwrap_or(0) >> 10
            );
            return None;
        }
        let tfm = Arc::new(tfm, GFP_KERNEL).ok()?;
        let engine = Arc::pin_init(
            try_pin_init!(Engine {
                requests <- Requests::new(tfm),
                offloaded: Atomic::new(0),
                fallback: Atomic::new(0),
                errors: Atomic::new(0),
                bytes_in: Atomic::new(0),
                bytes_out: Atomic::new(0),
            }),
            GFP_KERNEL,
        )
        .ok()?;
        let dbg = KBox::pin_init(
            dir.read_callback_file(c"accel", engine.clone(), &show_engine),
            GFP_KERNEL,
        )
        .ok();
        Some(Accel { _dbg: dbg, engine })
    }

    /// Starts decoding `inlen` bytes of `input` (from byte `in_off` of the first folio) into
    /// `outlen` bytes of `out` (from byte `out_off` of the first), folios in a row of any
    /// order, as [`Requests::submit`], and counts it. `Err` gives `out` back if the engine
    /// cannot take it now: decode in software then.
    pub(crate) fn submit(
        &self,
        input: &[CFolio],
        in_off: usize,
        inlen: usize,
        out: KVec<OutFolio>,
        out_off: usize,
        outlen: usize,
    ) -> Result<AccelReq<'_>, KVec<OutFolio>> {
        let (Ok(inlen), Ok(outlen)) = (u32::try_from(inlen), u32::try_from(outlen)) else {
            return Err(out);
        };
        let e = &*self.engine;
        let req = e
            .requests
            .submit(input, in_off, inlen, out, out_off, outlen)?;
        e.offloaded.add(1, Relaxed);
        e.bytes_in.add(i64::from(inlen), Relaxed);
        trace::accel(AccelOp::Submit, inlen.into(), outlen.into(), 0);
        Ok(AccelReq {
            engine: e,
            req: Some(req),
            outlen,
        })
    }

    /// Counts a pcluster meant for the engine that was decoded in software.
    pub(crate) fn note_fallback(&self) {
        trace::accel(AccelOp::Fallback, 0, 0, 0);
        self.engine.fallback.add(1, Relaxed);
    }

    /// The name of the global accelerator (`/sys/fs/erofs_rs/accel`), NUL-terminated, if set.
    pub(crate) fn global_default() -> Option<[u8; NAME_LEN]> {
        let name = *ACCEL_DEFAULT.get()?.lock();
        (name[0] != 0).then_some(name)
    }

    /// Sets the name of the global accelerator to `name` (without a NUL), empty for none:
    /// `EINVAL` if it is [`Accel::NAME_LEN`] bytes or longer, `EBUSY` while no
    /// [`AccelDefault`] lives.
    pub(crate) fn set_global_default(name: &[u8]) -> Result {
        if name.len() >= NAME_LEN {
            return Err(EINVAL);
        }
        let global = ACCEL_DEFAULT.get().ok_or(EBUSY)?;
        let mut dst = global.lock();
        if let Some(d) = dst.get_mut(..name.len()) {
            d.copy_from_slice(name);
        }
        // `name.len() < NAME_LEN`: the name keeps a NUL within the array.
        if let Some(nul) = dst.get_mut(name.len()) {
            *nul = 0;
        }
        Ok(())
    }
}

/// An offload request in flight, and the output folios it owns until [`AccelReq::wait`] gives
/// them back ([`Decompression`]). Dropping it waits for the engine, counts the outcome, then
/// drops the folios (they end not uptodate).
pub(crate) struct AccelReq<'a> {
    engine: &'a Engine,
    /// `None` once waited for.
    req: Option<Decompression<'a>>,
    outlen: u32,
}

impl AccelReq<'_> {
    /// Waits for the request: `Ok` if the engine produced exactly the output asked for; and
    /// the output folios, in the order given, whatever the outcome.
    pub(crate) fn wait(mut self) -> (Result, KVec<OutFolio>) {
        self.finish().unwrap_or((Err(EINVAL), KVec::new()))
    }

    /// Waits for the request and counts its outcome; `None` if it was waited for already.
    fn finish(&mut self) -> Option<(Result, KVec<OutFolio>)> {
        let (done, out) = self.req.take()?.wait();
        let (dlen, err) = match done {
            Ok(dlen) => (dlen, 0),
            Err(err) => (0, err.to_errno()),
        };
        trace::accel(AccelOp::Complete, 0, dlen.into(), err);
        let ret = match done {
            Ok(dlen) if dlen == self.outlen => Ok(()),
            Ok(_) => Err(EIO),
            Err(err) => Err(err),
        };
        let e = self.engine;
        if ret.is_err() {
            e.errors.add(1, Relaxed);
        } else {
            e.bytes_out.add(i64::from(self.outlen), Relaxed);
        }
        Some((ret, out))
    }
}

impl Drop for AccelReq<'_> {
    fn drop(&mut self) {
        let _ = self.finish();
    }
}

/// The text of the debugfs file `accel`.
fn show_engine(e: &Arc<Engine>, f: &mut fmt::Formatter<'_>) -> fmt::Result {
    write!(
        f,
        "driver {}\noffloaded {}\nfallback {}\nerrors {}\nbytes_in {}\nbytes_out {}\n",
        e.requests.transform().driver_name().to_str().unwrap_or("?"),
        e.offloaded.load(Relaxed),
        e.fallback.load(Relaxed),
        e.errors.load(Relaxed),
        e.bytes_in.load(Relaxed),
        e.bytes_out.load(Relaxed)
    )
}

/// The global accelerator name (NUL-terminated within the array), while [`AccelDefault`]
/// publishes it.
static ACCEL_DEFAULT: GlobalArc<Mutex<[u8; NAME_LEN]>> = GlobalArc::new();

/// The module's default acomp driver for mounts without `decomp_accel=`
/// (`/sys/fs/erofs_rs/accel`), owned by the module: until it is made, and after it is dropped,
/// the name reads as empty and cannot be set.
pub(crate) struct AccelDefault(
    /// The name, published in [`ACCEL_DEFAULT`] until this is dropped.
    #[expect(dead_code, reason = "held for its `Drop`, which unpublishes the name")]
    Published<Mutex<[u8; NAME_LEN]>>,
);

impl AccelDefault {
    /// Publishes an empty name; make it before `/sys/fs/erofs_rs/accel` exists.
    ///
    /// # Errors
    ///
    /// `ENOMEM`, or `EBUSY` if another [`AccelDefault`] lives.
    pub(crate) fn new() -> Result<Self> {
        let name = Arc::pin_init(
            new_mutex!(
                [0; NAME_LEN],
                "erofs_rs::decompressor_crypto::ACCEL_DEFAULT"
            ),
            GFP_KERNEL,
        )?;
        Ok(AccelDefault(ACCEL_DEFAULT.publish(name)?))
    }
}
