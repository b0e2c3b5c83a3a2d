#!/usr/bin/env python3
# SPDX-License-Identifier: GPL-2.0
"""How far erofs_rs's own code can move a throughput ratio: an upper bound from instruction counts.

    bench/bound.py [--per N] [--target R] DIR...

Each DIR is the output of `BENCH_PROFILE_INSNS=1 bench/profile NAME:MKFS-OPTIONS DIR` (with
BENCH_PROFILE_RAND=N for random reads: give the same N as --per; sequential runs count per MiB,
--per 16). Every guest kernel instruction of one cold read per driver is counted there (phase 0:
the C driver, phase 1: erofs_rs on the workqueue). This splits each driver's count into its
module ([erofs] or [erofs_rs] symbols), the decompressors of lib/ (LZ4, xz, zlib, zstd) and
the rest of the kernel, and prints per cell:

- C/rs: C's instructions over erofs_rs's (about the throughput ratio under -icount, where guest
  time counts instructions);
- rs mod = C mod: the ratio if erofs_rs's module ran as many instructions as C's, all else as
  measured;
- rs mod = 0: the ratio if erofs_rs's module ran none at all, all else as measured: no change
  to the driver's own code can do better;

then the geometric means over the cells, and the share of erofs_rs's module instructions that
could be left for the geometric mean of C/rs to reach --target (default 1.05).
"""
import argparse
import bisect
import collections
import math
import os

DECODERS = ("LZ4_", "lzma_", "xz_", "dict_", "rc_", "zlib_", "inflate", "ZSTD_", "HUF_", "FSE_")


def load(d):
    syms = []
    for ln in open(os.path.join(d, "kallsyms.txt")):
        f = ln.split()
        if len(f) >= 3 and f[1] in "tTwW":
            syms.append((int(f[0], 16), f[2], f[3] if len(f) > 3 else ""))
    syms.sort()
    addrs = [a for a, _, _ in syms]
    split = [collections.Counter(), collections.Counter()]
    for ln in open(os.path.join(d, "insns.txt")):
        if ln.startswith("C "):
            continue
        ph, va, n, c = ln.split()
        if ph not in ("0", "1"):
            continue
        i = bisect.bisect_right(addrs, int(va, 16)) - 1
        _, s, mod = syms[i] if i >= 0 else (0, "?", "")
        part = "mod" if mod else "dec" if s.startswith(DECODERS) else "rest"
        split[int(ph)][part] += int(n) * int(c)
    return split


def gmean(v):
    return math.exp(sum(map(math.log, v)) / len(v))


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--per", type=float, default=256)
    ap.add_argument("--target", type=float, default=1.05)
    ap.add_argument("dirs", nargs="+")
    a = ap.parse_args()
    rows = []
    print("| cell | C insns | erofs_rs insns | C module | erofs_rs module | C decoders | erofs_rs "
          "decoders | C rest | erofs_rs rest | C/rs | rs mod = C mod | rs mod = 0 |")
    print("|---|" + "---|" * 11)
    for d in a.dirs:
        c, r = load(d)
        ct, rt = sum(c.values()), sum(r.values())
        if not ct or not rt:
            raise SystemExit(f"{d}: no counts for both drivers")
        rows.append((ct, rt, c["mod"], r["mod"]))
        f = [x / a.per for x in (ct, rt, c["mod"], r["mod"], c["dec"], r["dec"], c["rest"], r["rest"])]
        print(f"| {os.path.basename(os.path.normpath(d))} | " + " | ".join(f"{x:,.0f}" for x in f)
              + f" | {ct / rt:.3f} | {ct / (rt - r['mod'] + c['mod']):.3f} | {ct / (rt - r['mod']):.3f} |")

    def gm(share):
        return gmean([ct / (rt - rm + share * rm) for ct, rt, _, rm in rows])

    same = gmean([ct / (rt - rm + cm) for ct, rt, cm, rm in rows])
    print(f"| **geometric mean** | | | | | | | | | {gm(1):.4f} | {same:.4f} | {gm(0):.4f} |")
    if gm(0) < a.target:
        print(f"\nEven with no instructions in erofs_rs's module the mean stays under {a.target}.")
        return
    lo, hi = 0.0, 1.0
    for _ in range(50):
        mid = (lo + hi) / 2
        lo, hi = (mid, hi) if gm(mid) >= a.target else (lo, mid)
    print(f"\nFor a mean of {a.target}, erofs_rs's module would have to run at most {lo:.1%} of "
          "the instructions it runs now, all else as measured.")


main()
