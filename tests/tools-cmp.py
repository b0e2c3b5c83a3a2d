#!/usr/bin/env python3
# SPDX-License-Identifier: GPL-2.0
"""Compare erofs-rs's extracted tree with fsck.erofs --extract's, given their manifests:
tools-cmp.py SRC RS_SRC C_SRC RS_ALL C_ALL.

SRC is the source tree's manifest and RS_SRC, C_SRC the two extractions' manifests with the
same fields; RS_ALL and C_ALL have every field both tools set. The trees must be equal, but
for entries where fsck.erofs differs from the source and erofs-rs does not (fsck.erofs 1.9
extracts an all-hole file as empty, and sets no xattrs on tmpfs): those are counted and
printed, not failures.
"""
import sys


def load(path):
    out = {}
    with open(path, encoding="utf-8", errors="surrogateescape") as f:
        for line in f:
            p, _, rest = line.rstrip("\n").partition("\t")
            out[p] = rest
    return out


def main():
    src, rs_src, c_src, rs_all, c_all = (load(p) for p in sys.argv[1:6])
    bad, known = [], []
    for p in sorted(set(rs_all) | set(c_all)):
        if rs_all.get(p) == c_all.get(p):
            continue
        if p in src and rs_src.get(p) == src[p] and c_src.get(p) != src[p]:
            known.append(p)
        else:
            bad.append(p)
    for p in bad[:20]:
        print(f"differs: {p}\n  fsck.erofs: {c_all.get(p)}\n  erofs-rs:   {rs_all.get(p)}")
    if known:
        print(f"{len(known)} entries where fsck.erofs differs from the source and erofs-rs "
              f"does not, e.g. {known[0]}")
    sys.exit(1 if bad else 0)


main()
