#!/usr/bin/env python3
# SPDX-License-Identifier: GPL-2.0
"""Targeted corruption of compressed (lcluster-indexed) files: corrupt-z.py BASE OUTDIR.

BASE is an image from mkfs.erofs -zlz4[hc]. The script walks its directories, picks a few
compressed files of at least 3 lclusters, decodes their map headers and lcluster indexes as
fs/erofs/zmap.c does, and writes one image OUTDIR/NAME.img per corruption: map header fields
(zhdr-*), index fields (zidx-*) or compressed data (zdata-*). OUTDIR/zexpect lists
"NAME PATH NID KIND": KIND 'fail' means the C driver returns -EFSCORRUPTED (EUCLEAN) for any
read of the whole file, so ours must fail it with EUCLEAN and log "@ nid NID"; 'any' means the
read may fail (with any errno) or return wrong bytes, but must not crash. The superblock
checksum is fixed up. Deterministic: the same base gives the same images.
"""
import os
import random
import struct
import sys

sys.path.insert(0, __file__.rsplit("/", 1)[0])
from corrupt import fix_csum  # noqa: E402

SB = 1024
BIG_PCLUSTER, INCOMPAT_48BIT, COMPR_CFGS = 0x2, 0x80, 0x2
COMPACTED_2B = EXTENTS = 0x1
BIG1, BIG2, INLINE_PCL, FRAGMENT_PCL = 0x2, 0x4, 0x8, 0x20
PLAIN, HEAD1, NONHEAD, HEAD2 = range(4)
CBLKCNT = 1 << 11
BAD_BLKADDR = 0xF0000000


def u(fmt, buf, off):
    return struct.unpack_from(fmt, buf, off)[0]


class ZInode:
    """A compressed inode: its map header and its decoded lcluster indexes."""

    def __init__(self, img, blkszbits, path, nid, pos, isize, xsize, size, need):
        self.path, self.nid, self.size, self.blkszbits = path, nid, size, blkszbits
        self.need = need                                     # see walk()
        self.compact = (u("<H", img, pos) >> 1) & 7 == 3
        self.hpos = (pos + isize + xsize + 7) & ~7           # z_erofs_map_header
        self.advise = u("<H", img, self.hpos + 4)
        self.algo, self.cbits = img[self.hpos + 6], img[self.hpos + 7]
        self.lbits = blkszbits + (self.cbits & 15)
        self.big = bool(self.advise & (BIG1 if self.compact else BIG1 | BIG2))
        self.lobits = max(self.lbits, 12)
        self.nlcn = -(-size >> self.lbits)
        self.usable = (self.cbits < 0x80 and self.lbits <= 12 and self.nlcn >= 3
                       and (self.compact or not self.advise & EXTENTS))
        if self.usable:
            self.lc = [self._raw(img, lcn) for lcn in range(self.nlcn)]
            self._derive(img)

    def _raw(self, img, lcn):
        """(type, lo, where): lo is clusterofs (HEAD) or the delta/CBLKCNT field (NONHEAD)."""
        if not self.compact:                                 # z_erofs_load_full_lcluster
            at = self.hpos + 16 + 8 * lcn
            adv, ofs, d0 = struct.unpack_from("<HHH", img, at)
            t = adv & 3
            where = {"at": at + (4 if t == NONHEAD else 2), "addr": at + 4}
            return t, d0 if t == NONHEAD else ofs, where
        # z_erofs_load_compact_lcluster: 4B packs (2 lclusters), then 2B packs (16), then 4B.
        ebase = self.hpos + 8
        total = -(-self.size >> self.blkszbits)
        c4init = ((32 - ebase % 32) // 4) & 7
        c2b = 0
        if self.advise & COMPACTED_2B and c4init < total:
            c2b = (total - c4init) // 16 * 16
        pos, shift, n = ebase, 2, lcn
        if n >= c4init:
            pos, n = pos + c4init * 4, n - c4init
            if n < c2b:
                shift = 1
            else:
                pos, n = pos + c2b * 2, n - c2b
        pos += n << shift
        vcnt = 2 if shift == 2 else 16
        size = vcnt << shift
        pack = pos & ~(size - 1)
        i = (pos - pack) >> shift
        bit = ((size - 4) * 8 // vcnt) * i
        v = u("<I", img, pack + bit // 8) >> (bit & 7)
        where = {"pack": pack, "bit": bit, "i": i, "vcnt": vcnt, "addr": pack + size - 4}
        return (v >> self.lobits) & 3, v & ((1 << self.lobits) - 1), where

    def _derive(self, img):
        """Each HEAD's (lcn, type, pblk), counting its pack's blocks before it as zmap.c."""
        self.heads = []
        for lcn, (t, lo, w) in enumerate(self.lc):
            if t == NONHEAD:
                continue
            if not self.compact:
                self.heads.append((lcn, t, u("<I", img, w["addr"])))
                continue
            first, i, nblk = lcn - w["i"], w["i"], 0 if self.big else 1
            while i > 0:
                i -= 1
                pt, plo, _ = self.lc[first + i]
                if pt != NONHEAD:
                    nblk += 1 if self.big or i >= 0 else 0
                elif self.big and plo & CBLKCNT:             # skips the pcluster's HEAD too
                    i -= 1
                    nblk += plo & ~CBLKCNT
                elif self.big:                               # plain delta0 (>= 2 here)
                    i -= plo - 2
                else:
                    i -= plo
                    nblk += 1 if i >= 0 else 0
            self.heads.append((lcn, t, u("<I", img, w["addr"]) + nblk))
        # mkfs.erofs ends a file with a HEAD whose clusterofs is the size: no pcluster.
        self.heads = [h for h in self.heads if h[0] << self.lbits | self.lc[h[0]][1] < self.size]

    def nonheads(self, head):
        """The NONHEAD lclusters following the HEAD at lcn `head`."""
        end = next((n for n in range(head + 1, self.nlcn) if self.lc[n][0] != NONHEAD), self.nlcn)
        return list(range(head + 1, end))

    def pcluster(self, k):
        """(head lcn, type, byte offset, byte length) of the k-th pcluster."""
        lcn, t, pblk = self.heads[k]
        blks = 1
        if self.big and lcn + 1 < self.nlcn and self.lc[lcn + 1][0] == NONHEAD \
                and self.lc[lcn + 1][1] & CBLKCNT:
            blks = self.lc[lcn + 1][1] & ~CBLKCNT
        return lcn, t, pblk << self.blkszbits, blks << self.blkszbits

    def compressed(self):
        """Indexes of the pclusters holding compressed data on disk (not the inline/fragment
        tail), of any algorithm (LZ4, LZMA, DEFLATE, ZSTD)."""
        last = len(self.heads) - (1 if self.advise & (INLINE_PCL | FRAGMENT_PCL) else 0)
        return [k for k in range(last) if self.heads[k][1] in (HEAD1, HEAD2)
                and (self.algo >> (4 * (self.heads[k][1] == HEAD2))) & 15 < 4]

    def is_last_in_pack(self, lcn):
        w = self.lc[lcn][2]
        return self.compact and w["i"] + 1 == w["vcnt"]

    def set_lo(self, img, lcn, value):
        """Rewrite the low field of one lcluster index in `img`."""
        w = self.lc[lcn][2]
        if not self.compact:
            struct.pack_into("<H", img, w["at"], value)
            return
        at, sh = w["pack"] + w["bit"] // 8, w["bit"] & 7
        mask = ((1 << self.lobits) - 1) << sh
        struct.pack_into("<I", img, at, (u("<I", img, at) & ~mask) | (value << sh))


def walk(img, blksz, root):
    """Every inode as (path, nid, pos, isize, xattr size, i_format, size, need): `need` is the
    end of the metadata its path depends on (its own inode and indexes, its directories)."""
    meta = u("<I", img, SB + 40) * blksz
    todo, out = [("", root, 0)], []
    while todo:
        path, nid, need = todo.pop()
        pos = meta + nid * 32
        fmt, icount = struct.unpack_from("<HH", img, pos)
        isize = 64 if fmt & 1 else 32
        xsize = 12 + 4 * (icount - 1) if icount else 0
        size = u("<Q" if fmt & 1 else "<I", img, pos + 8)
        layout = (fmt >> 1) & 7
        # Inline data or lcluster indexes (at most 8 bytes per block) follow the inode.
        need = max(need, pos + isize + xsize + 16 + (size // blksz + 1) * 8)
        out.append((path or "/", nid, pos, isize, xsize, fmt, size, need))
        if u("<H", img, pos + 4) & 0o170000 != 0o040000 or layout not in (0, 2):
            continue
        start = u("<I", img, pos + 16) * blksz
        blocks = []
        for off in range(0, size, blksz):                    # FLAT_PLAIN / FLAT_INLINE blocks
            n = min(blksz, size - off)
            at = pos + isize + xsize if layout == 2 and off + blksz >= size else start + off
            blocks.append(img[at:at + n])
            need = max(need, at + n)
        for b in blocks:
            count = u("<H", b, 8) // 12
            for j in range(count):
                cnid, nameoff = struct.unpack_from("<QH", b, 12 * j)
                end = u("<H", b, 12 * j + 20) if j + 1 < count else len(b)
                name = b[nameoff:end].rstrip(b"\0").decode(errors="replace")
                if name not in (".", "..") and not cnid >> 63:   # bit 63: in the metabox
                    todo.append((f"{path}/{name}", cnid, need))
    return out


def main():
    base, outdir = sys.argv[1:]
    data = bytes(open(base, "rb").read())
    bits = data[SB + 12]
    blksz = 1 << bits
    incompat = u("<I", data, SB + 80)
    root = incompat & INCOMPAT_48BIT and u("<Q", data, SB + 112) or u("<H", data, SB + 14)
    algs = u("<H", data, SB + 84) if incompat & COMPR_CFGS else 1
    rng = random.Random(20261201)

    # Compressed files of at least 3 lclusters starting with a compressed pcluster; up to 6.
    cands = []
    for path, nid, pos, isize, xsize, fmt, size, need in walk(data, blksz, root):
        if (fmt >> 1) & 7 in (1, 3) and u("<H", data, pos + 4) & 0o170000 == 0o100000:
            zi = ZInode(data, bits, path, nid, pos, isize, xsize, size, need)
            if zi.usable and zi.compressed()[:1] == [0]:
                cands.append(zi)
    cands.sort(key=lambda z: z.path)
    if not cands:
        sys.exit(f"{base}: no compressed file of 3 lclusters or more")
    cands = [cands[i * len(cands) // min(6, len(cands))] for i in range(min(6, len(cands)))]

    # Each corruption: fn(img, zi) -> (kind, what) after changing img, or None if zi won't do.
    def zhdr_algo(img, zi):
        # Unknown HEAD1 format: z_erofs_fill_inode returns -EOPNOTSUPP.
        img[zi.hpos + 6] = 0x0F
        return "any", "h_algorithmtype 0x0f"

    def zhdr_algo_unavail(img, zi):
        # A known algorithm the superblock does not list: "inconsistent algorithmtype" in
        # z_erofs_map_sanity_check, -EFSCORRUPTED (lcn 0 is a compressed HEAD).
        alg = next((a for a in (1, 2, 3) if not algs >> a & 1), None)
        if alg is None:
            return None
        img[zi.hpos + 6] = alg | alg << 4
        return "fail", f"h_algorithmtype {alg | alg << 4:#x}, sb algorithms {algs:#x}"

    def zhdr_clusterbits(img, zi):
        # lclusterbits = blkszbits + 15: compact indexes give -EINVAL, full ones -EOPNOTSUPP.
        img[zi.hpos + 7] = zi.cbits | 0x0F
        return "any", f"h_clusterbits {zi.cbits:#x} -> {zi.cbits | 0x0F:#x}"

    def zhdr_bigpcl(img, zi):
        # Big pcluster advised without the sb feature, or only HEAD1's on compact indexes:
        # both -EFSCORRUPTED in z_erofs_fill_inode.
        if incompat & BIG_PCLUSTER and not zi.compact:
            return None
        adv = zi.advise | BIG1 if not incompat & BIG_PCLUSTER else (zi.advise | BIG1) & ~BIG2
        struct.pack_into("<H", img, zi.hpos + 4, adv)
        return "fail", f"h_advise {zi.advise:#x} -> {adv:#x}"

    def zidx_lookback(img, zi):
        # Every plain delta0 of one pcluster set to 0x7ff, past lcn 0. (The last entry of a
        # compact pack keeps its delta1; its delta0 is the previous entry's plus 1.) If the
        # pcluster's last lcluster then has a bogus delta0, no extent covers its bytes but one
        # looked up from it (or from the next HEAD, through it): the lookback fails with
        # "bogus lookback distance", -EFSCORRUPTED.
        for k in zi.compressed():
            nh = zi.nonheads(zi.heads[k][0])
            hit = [lcn for lcn in nh if not zi.lc[lcn][1] & CBLKCNT and not zi.is_last_in_pack(lcn)]
            if nh and nh[-1] < 0x7FF and (nh[-1] in hit or nh[-1] - 1 in hit):
                for lcn in hit:
                    zi.set_lo(img, lcn, 0x7FF)
                return "fail", f"delta0 0x7ff at lcn {hit[0]}..{hit[-1]} ({len(hit)} of {len(nh)})"
        return None

    def cblkcnt_target(zi):
        """The first NONHEAD (with CBLKCNT) of the first big pcluster whose compressed length
        z_erofs_get_extent_compressedlen reads from it (big pcluster advised for its HEAD)."""
        for k in zi.compressed():
            lcn, t = zi.heads[k][0] + 1, zi.heads[k][1]
            if zi.advise & (BIG1 if t == HEAD1 else BIG2) and lcn < zi.nlcn \
                    and zi.lc[lcn][0] == NONHEAD and zi.lc[lcn][1] & CBLKCNT:
                return lcn
        return None

    def zidx_cblkcnt(img, zi):
        # 2047 blocks: m_plen > Z_EROFS_PCLUSTER_MAX_SIZE gives -EOPNOTSUPP (or "too much
        # compressed data", -EFSCORRUPTED, for a fully mapped extent), so: any.
        lcn = cblkcnt_target(zi)
        if lcn is None:
            return None
        zi.set_lo(img, lcn, CBLKCNT | 0x7FF)
        return "any", f"lcn {lcn} CBLKCNT {zi.lc[lcn][1] & ~CBLKCNT} -> 2047"

    def zidx_cblkcnt_plain(img, zi):
        # The CBLKCNT flag cleared (plain delta0 1): z_erofs_get_extent_compressedlen finds
        # "bogus CBLKCNT", and the pblk count of later heads "plain d0 == 1": -EFSCORRUPTED.
        lcn = cblkcnt_target(zi)
        if lcn is None:
            return None
        zi.set_lo(img, lcn, 1)
        return "fail", f"lcn {lcn} CBLKCNT {zi.lc[lcn][1] & ~CBLKCNT} -> plain delta0 1"

    def zidx_cblkcnt_nobig(img, zi):
        # CBLKCNT on an inode without big pclusters: -EFSCORRUPTED when loaded; set on every
        # NONHEAD of one pcluster so that each way into its lclusters 1.. loads one.
        if zi.big:
            return None
        for k in zi.compressed():
            nh = zi.nonheads(zi.heads[k][0])
            if nh:
                for lcn in nh:
                    zi.set_lo(img, lcn, zi.lc[lcn][1] | CBLKCNT)
                return "fail", f"CBLKCNT flag at lcn {nh}"
        return None

    def zidx_blkaddr(img, zi):
        # The block address of lcn 0's pcluster beyond the device. The C driver has no check
        # but the I/O fails (EIO on a block device), hence: any.
        struct.pack_into("<I", img, zi.lc[0][2]["addr"], BAD_BLKADDR)
        blocks = len(img) // blksz
        return "any", f"lcn 0 blkaddr {zi.heads[0][2]} -> {BAD_BLKADDR:#x} ({blocks} blocks)"

    def zidx_clusterofs(img, zi):
        # lcn 0's clusterofs >= the lcluster size when the field can hold it (-EFSCORRUPTED in
        # z_erofs_load_lcluster_from_disk), else its maximum: offset 0 then looks back past
        # lcn 0, "bogus lookback distance", -EFSCORRUPTED.
        lsize = 1 << zi.lbits
        val = lsize if not zi.compact or zi.lobits > zi.lbits else lsize - 1
        zi.set_lo(img, 0, val)
        return "fail", f"lcn 0 clusterofs {zi.lc[0][1]} -> {val}"

    def zdata_flip(img, zi):
        # Bytes flipped in the middle of a pcluster's LZ4 stream (after the zero padding).
        pcl = zi.compressed()
        lcn, _, pa, plen = zi.pcluster(pcl[len(pcl) // 2])
        start = next(i for i in range(pa, pa + plen) if img[i])
        offs = sorted(rng.randrange(start + (pa + plen - start) // 4,
                                    pa + plen - (pa + plen - start) // 4) for _ in range(4))
        for off in offs:
            img[off] ^= 0xFF
        return "any", f"pcluster of lcn {lcn} at {pa}+{plen}: bytes {offs} flipped"

    def zdata_zero(img, zi):
        # A pcluster's first block all zero: z_erofs_fixup_insize finds no "compressed data
        # start", -EFSCORRUPTED.
        pcl = zi.compressed()
        lcn, _, pa, plen = zi.pcluster(pcl[min(1, len(pcl) - 1)])
        img[pa:pa + blksz] = bytes(blksz)
        return "fail", f"pcluster of lcn {lcn} at {pa}+{plen}: first block zeroed"

    def zdata_trunc(img, zi):
        # The image cut at the start of the file's last pcluster, if the metadata of its path
        # lies before it (other files may lose theirs). Reads past the device end: any.
        if zi.advise & (INLINE_PCL | FRAGMENT_PCL) or len(zi.heads) < 2:
            return None
        lcn, _, pa, _ = zi.pcluster(len(zi.heads) - 1)
        if pa < zi.need or pa >= len(img):
            return None
        del img[pa:]
        return "any", f"image cut at {pa}, the pcluster of lcn {lcn}"

    corruptions = [zhdr_algo, zhdr_algo_unavail, zhdr_clusterbits, zhdr_bigpcl,
                   zidx_lookback, zidx_cblkcnt, zidx_cblkcnt_plain, zidx_cblkcnt_nobig,
                   zidx_blkaddr, zidx_clusterofs, zdata_flip, zdata_zero, zdata_trunc]
    expect = []
    for n, fn in enumerate(corruptions):
        name = fn.__name__.replace("_", "-")
        # Spread over the files: start at a different one for each corruption.
        for zi in cands[n % len(cands):] + cands[:n % len(cands)]:
            img = bytearray(data)
            res = fn(img, zi)
            if res:
                break
        else:
            print(f"{name}: skipped, no file has the structure", file=sys.stderr)
            continue
        kind, what = res
        fix_csum(img)
        with open(os.path.join(outdir, name + ".img"), "wb") as f:
            f.write(img)
        expect.append(f"{name} {zi.path} {zi.nid} {kind}")
        print(f"{name}: {zi.path} nid {zi.nid} {kind}: {what}")
    with open(os.path.join(outdir, "zexpect"), "w") as f:
        f.write("\n".join(expect) + "\n")


if __name__ == "__main__":
    main()
