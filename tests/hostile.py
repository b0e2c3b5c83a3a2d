#!/usr/bin/env python3
# SPDX-License-Identifier: GPL-2.0
"""Structure-aware hostile EROFS images: hostile.py BASE SEED OUT, or hostile.py --classes BASE.

Parses BASE (an image from tests/hostile-bases) as the kernel does: the superblock and its
feature flags, the root, packed and metabox nids, the device table; every inode reachable from
the root (compact and extended), its directory blocks and dirents, its xattr ibody header,
shared xattr ids and inline entries, the long-prefix table, chunk index arrays, and compressed
inodes' map headers and lcluster indexes (tests/corrupt-z.py's decoding). The SEED selects one
mutation class among those BASE has the structures for, and the class's parameters: a few
structural fields set to "interesting" values (0, 1, the maximum, off by one, pointing outside
the device or at another structure), overlapping pclusters, delta cycles, a NONHEAD first
lcluster, wrong CBLKCNT, dirents out of order, bad xattr counts and prefix indexes, chunk
addresses past the device, bad device table, metabox and packed nids, fragment offsets past the
packed inode (or the packed inode made a fragment of itself), or random byte flips. Some seeds
apply two or three mutations. The superblock checksum is fixed up in 9 seeds of 10 (else
nearly every mount fails at the checksum).

Deterministic: the same BASE and SEED give the same image. Prints "CLASS<TAB>what changed".
`--classes BASE` lists the classes that apply to BASE.
"""
import importlib.util
import os
import random
import struct
import sys

_here = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, _here)
from corrupt import SB, fix_csum  # noqa: E402

_spec = importlib.util.spec_from_file_location("corrupt_z", os.path.join(_here, "corrupt-z.py"))
corrupt_z = importlib.util.module_from_spec(_spec)
_spec.loader.exec_module(corrupt_z)
ZInode, NONHEAD, CBLKCNT = corrupt_z.ZInode, corrupt_z.NONHEAD, corrupt_z.CBLKCNT

INCOMPAT_CHUNKED, INCOMPAT_DEVT, INCOMPAT_FRAGMENTS = 0x4, 0x8, 0x20
INCOMPAT_48BIT, INCOMPAT_METABOX = 0x80, 0x100
NID_METABOX = 1 << 63
S_IFMT, S_IFDIR, S_IFREG, S_IFLNK = 0o170000, 0o040000, 0o100000, 0o120000

# Superblock fields: (name, offset, struct format).
SB_FIELDS = [
    ("magic", 0, "<I"), ("feature_compat", 8, "<I"), ("blkszbits", 12, "B"),
    ("sb_extslots", 13, "B"), ("rootnid_2b", 14, "<H"), ("inos", 16, "<Q"),
    ("epoch", 24, "<Q"), ("fixed_nsec", 32, "<I"), ("blocks_lo", 36, "<I"),
    ("meta_blkaddr", 40, "<I"), ("xattr_blkaddr", 44, "<I"), ("feature_incompat", 80, "<I"),
    ("available_compr_algs", 84, "<H"), ("extra_devices", 86, "<H"), ("devt_slotoff", 88, "<H"),
    ("dirblkbits", 90, "B"), ("xattr_prefix_count", 91, "B"), ("xattr_prefix_start", 92, "<I"),
    ("packed_nid", 96, "<Q"), ("xattr_filter_reserved", 104, "B"),
    ("ishare_xattr_prefix_id", 105, "B"), ("build_time", 108, "<I"), ("rootnid_8b", 112, "<Q"),
    ("metabox_nid", 128, "<Q"),
]


def u(fmt, buf, off):
    return struct.unpack_from(fmt, buf, off)[0]


def width(fmt):
    return struct.calcsize(fmt) * 8


class Inode:
    def __init__(self, img, nid, pos, path):
        self.nid, self.pos, self.path = nid, pos, path
        self.fmt, self.icount, self.mode = struct.unpack_from("<HHH", img, pos)
        self.ext = self.fmt & 1
        self.isize = 64 if self.ext else 32
        self.xsize = 12 + 4 * (self.icount - 1) if self.icount else 0
        self.layout = (self.fmt >> 1) & 7
        self.size = u("<Q" if self.ext else "<I", img, pos + 8)
        self.iu = u("<I", img, pos + 16)
        self.tail = pos + self.isize + self.xsize        # inline data / indexes start here

    # (name, offset in the inode, format) of its fields.
    def fields(self):
        if self.ext:
            return [("i_format", 0, "<H"), ("i_xattr_icount", 2, "<H"), ("i_mode", 4, "<H"),
                    ("i_nb", 6, "<H"), ("i_size", 8, "<Q"), ("i_u", 16, "<I"),
                    ("i_ino", 20, "<I"), ("i_uid", 24, "<I"), ("i_gid", 28, "<I"),
                    ("i_mtime", 32, "<Q"), ("i_mtime_nsec", 40, "<I"), ("i_nlink", 44, "<I")]
        return [("i_format", 0, "<H"), ("i_xattr_icount", 2, "<H"), ("i_mode", 4, "<H"),
                ("i_nb", 6, "<H"), ("i_size", 8, "<I"), ("i_mtime", 12, "<I"),
                ("i_u", 16, "<I"), ("i_ino", 20, "<I"), ("i_uid", 24, "<H"), ("i_gid", 26, "<H")]


class Image:
    """The structures of a base image, located by byte offset."""

    def __init__(self, data):
        self.data = data
        sb = {name: u(f, data, SB + off) for name, off, f in SB_FIELDS}
        self.sb = sb
        self.bits = sb["blkszbits"]
        self.blksz = 1 << self.bits
        self.incompat = sb["feature_incompat"]
        # As erofs_read_superblock: with 48BIT and a nonzero rootnid_8b, rb is blocks_hi.
        self.wide = self.incompat & INCOMPAT_48BIT and sb["rootnid_8b"]
        self.blocks = sb["blocks_lo"] | (sb["rootnid_2b"] << 32 if self.wide else 0)
        self.nblocks = len(data) >> self.bits
        self.meta = sb["meta_blkaddr"] << self.bits
        self.root = sb["rootnid_8b"] if self.wide else sb["rootnid_2b"]
        self.inodes, self.dirents, self.dirblocks, self.xattrs = {}, [], [], []
        self.zinodes, self.chunks, self.shared_ids, self.prefixes = [], [], set(), []
        todo = [(self.root, "/")]
        if self.incompat & INCOMPAT_FRAGMENTS and sb["packed_nid"]:
            todo.append((sb["packed_nid"], "<packed>"))
        if self.incompat & INCOMPAT_METABOX:
            todo.append((sb["metabox_nid"], "<metabox>"))
        while todo:
            nid, path = todo.pop()
            if nid in self.inodes or nid & NID_METABOX:      # inside the (compressed) metabox
                continue
            pos = self.meta + nid * 32
            if pos + 64 > len(data):
                continue
            ino = Inode(data, nid, pos, path)
            self.inodes[nid] = ino
            self._xattrs(ino)
            if ino.layout in (1, 3):
                try:
                    zi = ZInode(data, self.bits, path, nid, pos, ino.isize, ino.xsize, ino.size, 0)
                    self.zinodes.append(zi)
                except (struct.error, IndexError):
                    pass
            elif ino.layout == 4:
                self._chunks(ino)
            if ino.mode & S_IFMT == S_IFDIR and ino.layout in (0, 2):
                for child, name in self._dir(ino):
                    todo.append((child, path.rstrip("/") + "/" + name))
        self.packed = self.inodes.get(sb["packed_nid"]) if self.incompat & INCOMPAT_FRAGMENTS else None
        self._prefix_table()
        self.files = [i for i in self.inodes.values() if i.mode & S_IFMT == S_IFREG]
        self.dirs = [i for i in self.inodes.values() if i.mode & S_IFMT == S_IFDIR]

    def _xattrs(self, ino):
        if not ino.icount:
            return
        d, h = self.data, ino.pos + ino.isize
        shared = d[h + 4]
        self.xattrs.append(("header", ino, h))
        for k in range(shared):
            self.xattrs.append(("shared", ino, h + 12 + 4 * k))
            self.shared_ids.add(u("<I", d, h + 12 + 4 * k))
        at, end = h + 12 + 4 * shared, h + ino.xsize
        while at + 4 <= end:
            nlen, idx, vsize = struct.unpack_from("<BBH", d, at)
            self.xattrs.append(("entry", ino, at))
            at += (4 + nlen + vsize + 3) & ~3

    def _chunks(self, ino):
        fmt = ino.iu & 0xFFFF
        unit = 8 if fmt & 0x20 else 4
        pos = (ino.tail + unit - 1) & ~(unit - 1)
        csize = self.blksz << (fmt & 0x1F)
        n = -(-ino.size // csize)
        self.chunks.append((ino, fmt, unit, [pos + unit * k for k in range(n)]))

    def _dir(self, ino):
        d, out = self.data, []
        blkaddr = ino.iu
        nblk = -(-ino.size // self.blksz)
        for b in range(nblk):
            n = min(self.blksz, ino.size - b * self.blksz)
            if ino.layout == 2 and b == nblk - 1:
                at = ino.tail
            else:
                at = (blkaddr + b) * self.blksz
            if at + n > len(d) or n < 12:
                continue
            blk = d[at:at + n]
            count = u("<H", blk, 8) // 12
            if count == 0 or count * 12 > n:
                continue
            ents = []
            for j in range(count):
                cnid, nameoff, ftype = struct.unpack_from("<QHB", blk, 12 * j)
                end = u("<H", blk, 12 * j + 20) if j + 1 < count else n
                name = blk[nameoff:end].rstrip(b"\0").decode(errors="replace")
                ents.append((at + 12 * j, cnid, nameoff, ftype, name))
                if name not in (".", ".."):
                    out.append((cnid, name))
            self.dirblocks.append((ino, at, n, ents))
            self.dirents.extend((ino, at, n, e) for e in ents)
        return out

    def _prefix_table(self):
        sb = self.sb
        if not sb["xattr_prefix_count"]:
            return
        pos = sb["xattr_prefix_start"] << 2
        if self.incompat & INCOMPAT_METABOX:
            return                                           # in the compressed metabox
        if self.packed and sb["feature_compat"] & 0x10 == 0:
            if self.packed.layout not in (0, 2):
                return                                       # in a compressed packed inode
            pos += self.packed.iu << self.bits
        for _ in range(sb["xattr_prefix_count"]):
            if pos + 3 > len(self.data):
                return
            size = u("<H", self.data, pos)
            self.prefixes.append(pos)
            pos += (2 + size + 3) & ~3


def interesting(rng, cur, bits, extra=()):
    top = (1 << bits) - 1
    vals = [0, 1, top, top - 1, (cur + 1) & top, (cur - 1) & top, cur ^ (1 << rng.randrange(bits)),
            1 << (bits - 1), rng.getrandbits(bits), 2, 0x7F & top, 0x80 & top, 0xFF & top] + list(extra)
    return rng.choice(vals) & top


def put(img, off, fmt, val):
    struct.pack_into(fmt, img, off, val & ((1 << width(fmt)) - 1))


class Mutator:
    def __init__(self, im, rng, img):
        self.im, self.rng, self.img = im, rng, img

    def blockish(self):
        """Block addresses worth trying: past the device, its last blocks, metadata blocks."""
        im = self.im
        return [im.nblocks, im.nblocks - 1, im.nblocks + 1, im.blocks, 0, 1,
                im.sb["meta_blkaddr"], 0xFFFFFFFF, 0xFFFFFFFE, 0x7FFFFFFF]

    def nidish(self):
        """Nids worth trying: other inodes (of other types), misaligned ones, past the device."""
        im, rng = self.im, self.rng
        nids = list(im.inodes)
        outside = ((len(im.data) - im.meta) >> 5) + rng.randrange(4)
        return [rng.choice(nids), rng.choice(nids) + 1, rng.choice(nids) - 1, 0, 1, outside,
                (1 << 32) - 1, (1 << 48) + 1, NID_METABOX | rng.choice(nids), im.root, im.sb["packed_nid"]]

    # -- the classes: each returns a description, or None when the image lacks the structure.

    def sb_field(self):
        name, off, fmt = self.rng.choice(SB_FIELDS[1:])
        cur = u(fmt, self.img, SB + off)
        extra = {"blkszbits": [9, 10, 11, 12, 13, 16], "dirblkbits": [1, 2],
                 "sb_extslots": [0, 1, 2, 3], "blocks_lo": self.blockish(),
                 "meta_blkaddr": self.blockish(), "xattr_blkaddr": self.blockish(),
                 "rootnid_2b": self.nidish(), "rootnid_8b": self.nidish(),
                 "packed_nid": self.nidish(), "metabox_nid": self.nidish(),
                 "xattr_prefix_count": [len(self.im.prefixes) + 1, 127, 128],
                 "available_compr_algs": [0, 1, 2, 4, 8, 0xF, 0x10]}.get(name, [])
        val = self.rng.choice(extra) if extra and self.rng.random() < 0.6 else interesting(self.rng, cur, width(fmt), extra)
        put(self.img, SB + off, fmt, val)
        return f"sb {name} {cur:#x} -> {val & ((1 << width(fmt)) - 1):#x}"

    def sb_features(self):
        off = self.rng.choice([8, 80])
        cur = u("<I", self.img, SB + off)
        bit = self.rng.randrange(12 if off == 80 else 8)
        put(self.img, SB + off, "<I", cur ^ (1 << bit))
        return f"sb {'compat' if off == 8 else 'incompat'} bit {bit} toggled: {cur:#x} -> {cur ^ 1 << bit:#x}"

    def root_nid(self):
        im = self.im
        cands = [n for n, i in im.inodes.items() if i.mode & S_IFMT != S_IFDIR] + self.nidish()
        val = self.rng.choice(cands)
        if im.wide or (im.incompat & INCOMPAT_48BIT and self.rng.random() < 0.5):
            put(self.img, SB + 112, "<Q", val)
        else:
            put(self.img, SB + 14, "<H", val)
        return f"root nid {im.root} -> {val:#x}"

    def _inode(self):
        # By kind first (type and data layout), so that the many small files of one directory
        # do not crowd out the rest.
        kinds = {}
        for i in self.im.inodes.values():
            kinds.setdefault((i.mode & S_IFMT, i.layout, i.path.startswith("<")), []).append(i)
        return self.rng.choice(kinds[self.rng.choice(sorted(kinds))])

    def inode_field(self):
        ino = self._inode()
        name, off, fmt = self.rng.choice(ino.fields())
        cur = u(fmt, self.img, ino.pos + off)
        extra = {"i_u": self.blockish(), "i_nb": [1, 0xFFFF],
                 "i_mtime_nsec": [1000000000, 0xFFFFFFFF]}.get(name, [])
        val = interesting(self.rng, cur, width(fmt), extra)
        put(self.img, ino.pos + off, fmt, val)
        return f"nid {ino.nid} {ino.path}: {name} {cur:#x} -> {val:#x}"

    def inode_layout(self):
        ino = self._inode()
        cur = ino.fmt
        r = self.rng.random()
        if r < 0.6:
            val = (cur & ~0xE) | (self.rng.randrange(8) << 1)  # another data layout (5..7 bad)
        elif r < 0.8:
            val = cur ^ 1                                    # compact <-> extended
        else:
            val = cur | (1 << self.rng.randrange(4, 16))     # NLINK_1 / DOT_OMITTED / reserved
        put(self.img, ino.pos, "<H", val)
        return f"nid {ino.nid} {ino.path}: i_format {cur:#x} -> {val:#x}"

    def inode_size(self):
        ino = self._inode()
        bs = self.im.blksz
        vals = [0, 1, ino.size + 1, ino.size - 1, ino.size + bs, bs - 1, bs, bs + 1,
                len(self.im.data), 1 << 31, (1 << 32) - 1]
        if ino.ext:
            vals += [1 << 63, (1 << 64) - 1, 1 << 40, (1 << 63) - 1]
        val = self.rng.choice(vals) & ((1 << (64 if ino.ext else 32)) - 1)
        put(self.img, ino.pos + 8, "<Q" if ino.ext else "<I", val)
        return f"nid {ino.nid} {ino.path}: i_size {ino.size} -> {val:#x}"

    def inode_mode(self):
        ino = self._inode()
        types = [0o010000, 0o020000, 0o040000, 0o060000, 0o100000, 0o120000, 0o140000, 0, 0o170000]
        val = (ino.mode & 0o7777) | self.rng.choice(types)
        put(self.img, ino.pos + 4, "<H", val)
        return f"nid {ino.nid} {ino.path}: i_mode {ino.mode:o} -> {val:o}"

    def inode_xicount(self):
        ino = self._inode()
        vals = [0, 1, 2, 0xFFFF, 0x8000, ino.icount + 1, ino.icount + 64, (self.im.blksz >> 2)]
        val = self.rng.choice(vals) & 0xFFFF
        put(self.img, ino.pos + 2, "<H", val)
        return f"nid {ino.nid} {ino.path}: i_xattr_icount {ino.icount} -> {val}"

    def _dirent(self):
        if not self.im.dirblocks:
            return None
        ino, at, n, ents = self.rng.choice(self.im.dirblocks)
        return ino, at, n, self.rng.choice(ents)

    def dirent_nid(self):
        e = self._dirent()
        if not e:
            return None
        ino, _, _, (at, cnid, _, _, name) = e
        val = self.rng.choice(self.nidish() + [ino.nid])     # the directory itself: a cycle
        put(self.img, at, "<Q", val)
        return f"dir nid {ino.nid} {ino.path}: dirent {name!r} nid {cnid} -> {val:#x}"

    def dir_cycle(self):
        # A subdirectory's dirent pointing at one of its ancestors (or the root).
        cands = [e for e in self.im.dirents if e[3][3] == 2 and e[3][4] not in (".", "..")]
        if not cands:
            return None
        ino, _, _, (at, cnid, _, _, name) = self.rng.choice(cands)
        anc = [i for i in self.im.dirs if ino.path.startswith(i.path.rstrip("/") + "/") or i is ino]
        target = self.rng.choice(anc or [ino])
        put(self.img, at, "<Q", target.nid)
        return f"dir {ino.path}: subdir {name!r} nid {cnid} -> {target.nid} ({target.path})"

    def dirent_nameoff(self):
        if not self.im.dirblocks:
            return None
        ino, at, n, ents = self.rng.choice(self.im.dirblocks)
        j = self.rng.randrange(len(ents))
        cur = ents[j][2]
        vals = [0, 1, 11, 12, n, n - 1, n + 1, 0xFFFF, cur + 1, cur - 1, 12 * len(ents) - 1,
                12 * len(ents) + 12, self.im.blksz]
        if j + 1 < len(ents):
            vals.append(ents[j + 1][2] + 1)                  # past the next name: out of order
        if j > 0:
            vals.append(ents[j - 1][2])                      # the same as the previous name
        val = self.rng.choice(vals) & 0xFFFF
        put(self.img, ents[j][0] + 8, "<H", val)
        return f"dir {ino.path} block at {at}: dirent {j}/{len(ents)} nameoff {cur} -> {val}"

    def dirent_order(self):
        # Names no longer sorted: swap two dirents' nid/nameoff/type records, or rewrite a
        # name's first byte so that it sorts elsewhere (lookup bisects the block).
        cands = [b for b in self.im.dirblocks if len(b[3]) >= 3]
        if not cands:
            return None
        ino, at, n, ents = self.rng.choice(cands)
        i, j = sorted(self.rng.sample(range(len(ents)), 2))
        if self.rng.random() < 0.5:
            a, b = bytes(self.img[ents[i][0]:ents[i][0] + 12]), bytes(self.img[ents[j][0]:ents[j][0] + 12])
            self.img[ents[i][0]:ents[i][0] + 12], self.img[ents[j][0]:ents[j][0] + 12] = b, a
            return f"dir {ino.path} block at {at}: dirents {i} and {j} swapped"
        off = at + ents[i][2]
        val = self.rng.choice([0, 0x2F, 0xFF, 0x7F, ord("z") + 1, ord("."), 0x20])
        old = self.img[off] if off < len(self.img) else 0
        if off < len(self.img):
            self.img[off] = val
        return f"dir {ino.path} block at {at}: name {ents[i][4]!r} byte 0 {old:#x} -> {val:#x}"

    def dirent_ftype(self):
        e = self._dirent()
        if not e:
            return None
        ino, _, _, (at, _, _, ft, name) = e
        val = self.rng.choice([0, 1, 2, 3, 4, 5, 6, 7, 8, 0xFF])
        self.img[at + 10] = val
        self.img[at + 11] = self.rng.choice([0, 0, 0xFF])
        return f"dir {ino.path}: dirent {name!r} file_type {ft} -> {val}"

    def dirent_count(self):
        # The first dirent's nameoff sets the count of dirents in the block.
        if not self.im.dirblocks:
            return None
        ino, at, n, ents = self.rng.choice(self.im.dirblocks)
        val = self.rng.choice([0, 12, 24, 6, 13, n - 12, n, n + 12, 12 * (len(ents) + 1),
                               12 * (len(ents) - 1), 0xFFFF])
        put(self.img, at + 8, "<H", val)
        return f"dir {ino.path} block at {at}: first nameoff {ents[0][2]} -> {val} (count)"

    def xattr(self):
        if not self.im.xattrs:
            return None
        kind, ino, at = self.rng.choice(self.im.xattrs)
        rng = self.rng
        if kind == "header":
            if rng.random() < 0.5:
                val = rng.choice([0xFF, 1, 2, 0x40, self.img[at + 4] + 1, ino.icount, ino.icount - 1])
                self.img[at + 4] = val & 0xFF
                return f"nid {ino.nid} {ino.path}: h_shared_count -> {val & 0xFF}"
            val = rng.choice([0, 0xFFFFFFFF, rng.getrandbits(32)])
            put(self.img, at, "<I", val)
            return f"nid {ino.nid} {ino.path}: h_name_filter -> {val:#x}"
        if kind == "shared":
            cur = u("<I", self.img, at)
            ids = sorted(self.im.shared_ids)
            xa = self.im.sb["xattr_blkaddr"] << self.im.bits
            outside = (len(self.im.data) - xa) >> 2
            val = rng.choice([0xFFFFFFFF, outside, outside - 1, cur + 1, cur - 1, 0, 1 << 30,
                              rng.choice(ids) + 1] + ids)
            put(self.img, at, "<I", val)
            return f"nid {ino.nid} {ino.path}: shared xattr id {cur} -> {val & 0xFFFFFFFF}"
        nlen, idx, vsize = struct.unpack_from("<BBH", self.img, at)
        f = rng.randrange(3)
        if f == 0:
            val = rng.choice([0, 1, 0xFF, nlen + 1, nlen - 1])
            self.img[at] = val & 0xFF
            return f"nid {ino.nid} {ino.path}: xattr entry e_name_len {nlen} -> {val & 0xFF}"
        if f == 1:
            npfx = self.im.sb["xattr_prefix_count"]
            val = rng.choice([0, 7, 0x7F, 0x80 | npfx, 0x80 | (npfx + 1), 0xFF, 0x80, 2, 3])
            self.img[at + 1] = val
            return f"nid {ino.nid} {ino.path}: xattr entry e_name_index {idx:#x} -> {val:#x}"
        val = rng.choice([0xFFFF, vsize + 1, vsize + 4, self.im.blksz, 0x8000, 0])
        put(self.img, at + 2, "<H", val)
        return f"nid {ino.nid} {ino.path}: xattr entry e_value_size {vsize} -> {val & 0xFFFF}"

    def shared_xattr(self):
        if not self.im.shared_ids:
            return None
        sid = self.rng.choice(sorted(self.im.shared_ids))
        at = (self.im.sb["xattr_blkaddr"] << self.im.bits) + 4 * sid
        if at + 4 > len(self.img):
            return None
        f = self.rng.randrange(3)
        val = self.rng.choice([0, 0xFF, 0x80, 0x7F, 1, 0xFFFF, self.im.blksz])
        if f == 2:
            put(self.img, at + 2, "<H", val)
        else:
            self.img[at + f] = val & 0xFF
        return f"shared xattr {sid}: {('e_name_len', 'e_name_index', 'e_value_size')[f]} -> {val & 0xFFFF}"

    def xattr_prefix(self):
        sb = self.im.sb
        if not sb["xattr_prefix_count"]:
            return None
        rng = self.rng
        if not self.im.prefixes or rng.random() < 0.4:
            off, name = rng.choice([(91, "xattr_prefix_count"), (92, "xattr_prefix_start")])
            fmt = "B" if off == 91 else "<I"
            cur = u(fmt, self.img, SB + off)
            val = interesting(rng, cur, width(fmt), [cur + 1, (len(self.im.data) >> 2) + 1])
            put(self.img, SB + off, fmt, val)
            return f"sb {name} {cur} -> {val}"
        at = rng.choice(self.im.prefixes)
        if rng.random() < 0.5:
            val = rng.choice([0, 1, 0xFFFF, 257, 258, u("<H", self.img, at) + 4, self.im.blksz])
            put(self.img, at, "<H", val)
            return f"xattr prefix at {at}: size -> {val}"
        val = rng.choice([0, 7, 0x80, 0xFF, 2, 3])
        self.img[at + 2] = val
        return f"xattr prefix at {at}: base_index -> {val}"

    def chunk(self):
        if not self.im.chunks:
            return None
        ino, fmt, unit, slots = self.rng.choice(self.im.chunks)
        rng = self.rng
        if not slots or rng.random() < 0.25:
            val = rng.choice([fmt ^ 0x20, fmt | 0x1F, fmt + 1, fmt - 1 if fmt & 0x1F else fmt | 0x80,
                              fmt | 0x40, 0xFFFF, fmt | 0x100, 0x20 | 27])
            put(self.img, ino.pos + 16, "<H", val)
            return f"nid {ino.nid} {ino.path}: chunk format {fmt:#x} -> {val & 0xFFFF:#x}"
        k = rng.randrange(len(slots))
        at = slots[k]
        if unit == 4:
            cur = u("<I", self.img, at)
            val = rng.choice(self.blockish() + [cur + 1, u("<I", self.img, rng.choice(slots))])
            put(self.img, at, "<I", val)
            return f"nid {ino.nid} {ino.path}: block map [{k}] {cur} -> {val & 0xFFFFFFFF:#x}"
        f = rng.randrange(3)
        if f == 0:
            val = rng.choice([1, 2, 0xFFFF, 0x8000])
            put(self.img, at + 2, "<H", val)
            return f"nid {ino.nid} {ino.path}: chunk index [{k}] device_id -> {val}"
        if f == 1:
            val = rng.choice([1, 0xFFFF, 0x8000])
            put(self.img, at, "<H", val)
            return f"nid {ino.nid} {ino.path}: chunk index [{k}] startblk_hi -> {val}"
        cur = u("<I", self.img, at + 4)
        val = rng.choice(self.blockish() + [cur + 1, u("<I", self.img, rng.choice(slots) + 4)])
        put(self.img, at + 4, "<I", val)
        return f"nid {ino.nid} {ino.path}: chunk index [{k}] startblk_lo {cur} -> {val & 0xFFFFFFFF:#x}"

    def _zi(self, usable=False):
        c = [z for z in self.im.zinodes if z.usable or not usable]
        return self.rng.choice(c) if c else None

    def zmap_header(self):
        zi = self._zi()
        if not zi:
            return None
        rng, h = self.rng, zi.hpos
        f = rng.randrange(5)
        if f == 0:
            bit = rng.randrange(8)
            put(self.img, h + 4, "<H", zi.advise ^ (1 << bit))
            return f"nid {zi.nid} {zi.path}: h_advise {zi.advise:#x} bit {bit} toggled"
        if f == 1:
            val = rng.choice([0x0F, 0x10, 0x11, 0x22, 0x33, 0x44, 0xFF, zi.algo ^ 1, zi.algo ^ 0x10])
            self.img[h + 6] = val
            return f"nid {zi.nid} {zi.path}: h_algorithmtype {zi.algo:#x} -> {val:#x}"
        if f == 2:
            val = rng.choice([zi.cbits + 1, zi.cbits | 0xF, zi.cbits | 0x80, zi.cbits ^ 0x80, 0x10,
                              (zi.cbits + 8) & 0xFF, 0x40])
            self.img[h + 7] = val & 0xFF
            return f"nid {zi.nid} {zi.path}: h_clusterbits {zi.cbits:#x} -> {val & 0xFF:#x}"
        if f == 3:
            cur = u("<H", self.img, h + 2)
            val = rng.choice([0, 1, self.im.blksz, self.im.blksz + 1, 0xFFFF, cur + 1, cur - 1])
            put(self.img, h + 2, "<H", val)
            return f"nid {zi.nid} {zi.path}: h_idata_size/h_extents {cur} -> {val & 0xFFFF}"
        # The inode's i_u: its compressed block count.
        ino = self.im.inodes[zi.nid]
        cur = ino.iu
        val = rng.choice([0, 1, cur + 1, cur - 1, 0xFFFFFFFF, self.im.nblocks + 1])
        put(self.img, ino.pos + 16, "<I", val)
        return f"nid {zi.nid} {zi.path}: compressed blocks {cur} -> {val & 0xFFFFFFFF}"

    def _set_type(self, zi, lcn, t):
        w = zi.lc[lcn][2]
        if not zi.compact:
            at = w["addr"] - 4
            put(self.img, at, "<H", (u("<H", self.img, at) & ~3) | t)
            return
        at, sh = w["pack"] + w["bit"] // 8, (w["bit"] & 7) + zi.lobits
        v = u("<I", self.img, at)
        put(self.img, at, "<I", (v & ~(3 << sh)) | (t << sh))

    def zidx_type(self):
        zi = self._zi(True)
        if not zi:
            return None
        lcn = 0 if self.rng.random() < 0.4 else self.rng.randrange(zi.nlcn)
        t = self.rng.choice([0, 1, 2, 3])
        self._set_type(zi, lcn, t)
        return f"nid {zi.nid} {zi.path}: lcn {lcn}/{zi.nlcn} type {zi.lc[lcn][0]} -> {t}" + \
            (" (NONHEAD first lcluster)" if lcn == 0 and t == NONHEAD else "")

    def zidx_delta(self):
        # delta0 / delta1 of NONHEADs: 0 (a self loop), 1, past lcn 0, into another NONHEAD
        # run, or a pair pointing at each other (a cycle between delta1 and delta0).
        zi = self._zi(True)
        if not zi:
            return None
        nh = [lcn for lcn, (t, _, _) in enumerate(zi.lc) if t == NONHEAD]
        if not nh:
            return None
        rng = self.rng
        lcn = rng.choice(nh)
        maxv = (1 << zi.lobits) - 1 if zi.compact else 0xFFFF
        if rng.random() < 0.3 and len(nh) >= 2:
            a, b = sorted(rng.sample(nh, 2))
            zi.set_lo(self.img, b, b - a)                   # b looks back to NONHEAD a
            zi.set_lo(self.img, a, min(b - a, maxv))         # a looks back (or on) past b's span
            if not zi.compact:
                put(self.img, zi.lc[a][2]["addr"] + 2, "<H", b - a)
            return f"nid {zi.nid} {zi.path}: NONHEADs {a} and {b} point at each other"
        val = rng.choice([0, 1, 2, lcn, lcn + 1, maxv, maxv & 0x7FF, CBLKCNT | 0, 0x7FF]) & maxv
        if not zi.compact and rng.random() < 0.4:
            put(self.img, zi.lc[lcn][2]["addr"] + 2, "<H", val)
            return f"nid {zi.nid} {zi.path}: lcn {lcn} delta1 -> {val}"
        zi.set_lo(self.img, lcn, val)
        return f"nid {zi.nid} {zi.path}: lcn {lcn} {'delta1' if zi.is_last_in_pack(lcn) else 'delta0'} " \
            f"{zi.lc[lcn][1]} -> {val}"

    def zidx_cblkcnt(self):
        zi = self._zi(True)
        if not zi:
            return None
        cands = [lcn for lcn, (t, lo, _) in enumerate(zi.lc) if t == NONHEAD and lo & CBLKCNT]
        if not cands:
            cands = [lcn for lcn, (t, _, _) in enumerate(zi.lc) if t == NONHEAD]
        if not cands:
            return None
        lcn = self.rng.choice(cands)
        cur = zi.lc[lcn][1]
        n = cur & ~CBLKCNT
        val = CBLKCNT | self.rng.choice([0, 1, n + 1, n - 1 if n else 2, 0x7FF, 256, 257, 64])
        if zi.compact and zi.lobits < 12:
            val &= (1 << zi.lobits) - 1
        zi.set_lo(self.img, lcn, val)
        return f"nid {zi.nid} {zi.path}: lcn {lcn} CBLKCNT {cur:#x} -> {val:#x}"

    def zidx_blkaddr(self):
        # A pcluster's block: past the device, on metadata, overlapping the previous pcluster,
        # or another file's pcluster (dedupe-style sharing between different files).
        zi = self._zi(True)
        if not zi or not zi.heads:
            return None
        rng = self.rng
        k = rng.randrange(len(zi.heads))
        lcn, _, pblk = zi.heads[k]
        at = zi.lc[lcn][2]["addr"]
        cands = self.blockish()
        if k:
            cands += [zi.heads[k - 1][2], zi.heads[k - 1][2] + 1]
        others = [h[2] for z in self.im.zinodes if z.usable and z is not zi for h in z.heads]
        if others:
            cands += [rng.choice(others)] * 3
        val = rng.choice(cands)
        put(self.img, at, "<I", val)
        return f"nid {zi.nid} {zi.path}: pcluster of lcn {lcn} blkaddr {pblk} -> {val & 0xFFFFFFFF:#x}" + \
            (" (compact pack base)" if zi.compact else "")

    def zidx_clusterofs(self):
        zi = self._zi(True)
        if not zi:
            return None
        heads = [lcn for lcn, (t, _, _) in enumerate(zi.lc) if t != NONHEAD]
        if not heads:
            return None
        lcn = self.rng.choice(heads)
        ls = 1 << zi.lbits
        mx = (1 << zi.lobits) - 1 if zi.compact else 0xFFFF
        val = self.rng.choice([0, 1, ls - 1, ls, ls + 1, mx, zi.lc[lcn][1] + 1]) & mx
        zi.set_lo(self.img, lcn, val)
        return f"nid {zi.nid} {zi.path}: lcn {lcn} clusterofs {zi.lc[lcn][1]} -> {val}"

    def zidx_full_flags(self):
        # Full indexes only: PARTIAL_REF and HOLE in a HEAD's di_advise.
        zs = [z for z in self.im.zinodes if z.usable and not z.compact]
        if not zs:
            return None
        zi = self.rng.choice(zs)
        heads = [lcn for lcn, (t, _, _) in enumerate(zi.lc) if t != NONHEAD]
        if not heads:
            return None
        lcn = self.rng.choice(heads)
        at = zi.lc[lcn][2]["addr"] - 4
        bit = self.rng.choice([14, 15, 2, 13])
        put(self.img, at, "<H", u("<H", self.img, at) ^ (1 << bit))
        return f"nid {zi.nid} {zi.path}: lcn {lcn} di_advise bit {bit} toggled"

    def zextents(self):
        # Extent records (full indexes with EXTENTS, e.g. -E48bit): h_extents, and a record's
        # plen (length, format bits, PARTIAL), pstart (past the device, overlapping) or lstart
        # (out of order: the lookup bisects them).
        zs = [z for z in self.im.zinodes if not z.compact and z.advise & 1 and z.cbits < 0x80]
        if not zs:
            return None
        rng = self.rng
        zi = rng.choice(zs)
        recsz = 4 << ((zi.advise >> 1) & 3)
        start = (zi.hpos + 8 + recsz - 1) & ~(recsz - 1)
        nrec = u("<I", self.img, zi.hpos) if recsz > 8 else -(-zi.size >> zi.lbits)
        if rng.random() < 0.2:
            val = rng.choice([0, 1, nrec + 1, nrec - 1, 0xFFFFFFFF, 1 << 20])
            put(self.img, zi.hpos, "<I", val)
            return f"nid {zi.nid} {zi.path}: h_extents {nrec} -> {val & 0xFFFFFFFF}"
        k = rng.randrange(max(1, min(nrec, 4096)))
        at = start + (8 if recsz <= 4 else 0) + k * recsz
        fields = [("plen", 0)] + [(n, o) for n, o in (("pstart_lo", 4), ("pstart_hi", 8), ("lstart_lo", 12),
                                                      ("lstart_hi", 16)) if o < recsz]
        if recsz <= 4:
            fields.append(("pa (u64 before the records)", start - at))
        name, off = rng.choice(fields)
        cur = u("<I", self.img, at + off)
        val = rng.choice([0, 1, cur + 1, cur - 1, 0xFFFFFFFF, cur | 1 << 27, cur ^ 1 << 28, cur | 0x7 << 28,
                          len(self.img), len(self.img) - 1, 1 << 21, self.im.blksz, 0x80000000])
        put(self.img, at + off, "<I", val)
        return f"nid {zi.nid} {zi.path}: extent {k} (recsz {recsz}) {name} {cur:#x} -> {val & 0xFFFFFFFF:#x}"

    def zdata(self):
        zi = self._zi(True)
        if not zi or not zi.heads:
            return None
        rng = self.rng
        k = rng.randrange(len(zi.heads))
        lcn, _, pa, plen = zi.pcluster(k)
        if pa + plen > len(self.img) or plen <= 0:
            return None
        f = rng.randrange(3)
        if f == 0:
            offs = sorted(rng.randrange(pa, pa + plen) for _ in range(rng.choice([1, 4, 16])))
            for o in offs:
                self.img[o] ^= 1 << rng.randrange(8)
            return f"nid {zi.nid} {zi.path}: pcluster of lcn {lcn} at {pa}+{plen}: {len(offs)} bits flipped"
        if f == 1:
            self.img[pa:pa + plen] = bytes(plen)
            return f"nid {zi.nid} {zi.path}: pcluster of lcn {lcn} at {pa}+{plen} zeroed"
        src = rng.randrange(0, max(1, len(self.img) - plen))
        self.img[pa:pa + plen] = self.img[src:src + plen]
        return f"nid {zi.nid} {zi.path}: pcluster of lcn {lcn} at {pa}+{plen} replaced by bytes at {src}"

    def fragment(self):
        # Fragment offsets (in map headers of FRAGMENT_PCLUSTER inodes or whole-file fragment
        # inodes) at or past the end of the packed inode, or the packed nid itself.
        im = self.im
        if not im.incompat & INCOMPAT_FRAGMENTS or not im.packed:
            return None
        zs = [z for z in im.zinodes if z.advise & corrupt_z.FRAGMENT_PCL or z.cbits & 0x80]
        psize = im.packed.size
        pz = [z for z in im.zinodes if z.nid == im.packed.nid]
        if pz and self.rng.random() < 0.25:
            # The packed inode a fragment of itself (its whole data at an offset of its own):
            # Linux 7.3's C driver deadlocks reading a fragment of such an image.
            off = self.rng.choice([0, 0, self.im.blksz, max(psize - 1, 0)])
            put(self.img, pz[0].hpos, "<Q", (1 << 63) | off)
            return f"packed inode nid {im.packed.nid}: a whole-inode fragment of itself at {off:#x}"
        if not zs or self.rng.random() < 0.3:
            val = self.rng.choice(self.nidish())
            put(self.img, SB + 96, "<Q", val)
            return f"sb packed_nid {im.sb['packed_nid']} -> {val:#x}"
        zi = self.rng.choice(zs)
        val = self.rng.choice([psize, psize + 1, psize - 1, 0xFFFFFFFF, 0x7FFFFFFF, 0,
                               psize + self.im.blksz, 1 << 31])
        whole = zi.cbits & 0x80
        put(self.img, zi.hpos, "<I", val)
        if whole and self.rng.random() < 0.5:
            put(self.img, zi.hpos + 4, "<H", self.rng.choice([0xFFFF, 0x1, 0x7FFF]))
        return f"nid {zi.nid} {zi.path}: {'whole-file ' if whole else ''}fragment offset -> {val:#x} " \
            f"(packed inode {psize} bytes)"

    def metabox(self):
        im = self.im
        if not im.incompat & INCOMPAT_METABOX:
            return None
        cur = im.sb["metabox_nid"]
        val = self.rng.choice(self.nidish() + [cur + 1, cur - 1, NID_METABOX | cur, im.root & ~NID_METABOX])
        put(self.img, SB + 128, "<Q", val)
        return f"sb metabox_nid {cur} -> {val:#x}"

    def device_table(self):
        # A device table in an image that has none, or with slots whose block counts or
        # unified addresses are bad; chunk indexes then may name device 1.
        rng = self.rng
        n = rng.choice([1, 1, 2, 255, 0xFFFF])
        slotoff = rng.choice([(SB + 256) // 128, (len(self.img) // 128) + 1, 0, 1, 9, 0xFFFF,
                              (self.im.meta // 128)])
        put(self.img, SB + 86, "<H", n)
        put(self.img, SB + 88, "<H", slotoff)
        put(self.img, SB + 80, "<I", self.im.incompat | INCOMPAT_DEVT)
        at = slotoff * 128
        if at + 128 <= len(self.img) and rng.random() < 0.7:
            slot = bytearray(128)
            slot[0:8] = rng.choice([b"", b"blobdev\0"]).ljust(8, b"\0")
            struct.pack_into("<IIHH", slot, 64, rng.choice([0, 1, 0xFFFFFFFF, self.im.nblocks]),
                             rng.choice([0, 1, self.im.nblocks, 0xFFFFFFFF]), rng.choice([0, 0xFFFF]),
                             rng.choice([0, 0xFFFF]))
            self.img[at:at + 128] = slot
        return f"device table: extra_devices {n}, devt_slotoff {slotoff}"

    def struct_flip(self):
        # Random bit flips inside one structure: an inode (with its xattrs and indexes), a
        # directory block, or the superblock.
        rng = self.rng
        r = rng.random()
        if r < 0.5:
            ino = self._inode()
            start, end = ino.pos, ino.tail + 64
            what = f"nid {ino.nid} {ino.path}"
        elif r < 0.8 and self.im.dirblocks:
            ino, start, n, _ = rng.choice(self.im.dirblocks)
            end, what = start + n, f"dir {ino.path} block at {start}"
        else:
            start, end, what = SB, SB + 144, "superblock"
        end = min(end, len(self.img))
        offs = sorted(rng.randrange(start, end) for _ in range(rng.choice([1, 2, 3, 8])))
        for o in offs:
            self.img[o] ^= 1 << rng.randrange(8)
        return f"{what}: bits flipped at {offs}"

    def flip(self):
        rng = self.rng
        hot = min(len(self.img), max(self.meta_end(), 65536))
        offs = []
        for _ in range(rng.choice([1, 1, 2, 4, 16, 64])):
            o = rng.randrange(SB, hot) if rng.random() < 0.8 else rng.randrange(0, len(self.img))
            self.img[o] ^= 1 << rng.randrange(8)
            offs.append(o)
        return f"{len(offs)} random bit flips, {sum(o < hot for o in offs)} in metadata"

    def meta_end(self):
        return max([i.tail + 64 for i in self.im.inodes.values()] + [b[1] + b[2] for b in self.im.dirblocks])

    def truncate(self):
        rng = self.rng
        cut = rng.choice([rng.randrange(SB + 144, len(self.img)), self.meta_end(),
                          len(self.img) - self.im.blksz, len(self.img) - 1, self.im.blksz * 2])
        cut = max(SB + 144, min(cut, len(self.img) - 1))
        del self.img[cut:]
        return f"image cut at {cut} of {len(self.im.data)}"


# Each class and its weight (how often a seed picks it).
CLASSES = [
    ("sb-field", Mutator.sb_field, 4), ("sb-features", Mutator.sb_features, 2),
    ("root-nid", Mutator.root_nid, 1), ("inode-field", Mutator.inode_field, 4),
    ("inode-layout", Mutator.inode_layout, 2), ("inode-size", Mutator.inode_size, 3),
    ("inode-mode", Mutator.inode_mode, 2), ("inode-xicount", Mutator.inode_xicount, 2),
    ("dirent-nid", Mutator.dirent_nid, 3), ("dir-cycle", Mutator.dir_cycle, 1),
    ("dirent-nameoff", Mutator.dirent_nameoff, 3), ("dirent-order", Mutator.dirent_order, 2),
    ("dirent-ftype", Mutator.dirent_ftype, 1), ("dirent-count", Mutator.dirent_count, 2),
    ("xattr", Mutator.xattr, 4), ("shared-xattr", Mutator.shared_xattr, 2),
    ("xattr-prefix", Mutator.xattr_prefix, 2), ("chunk", Mutator.chunk, 4),
    ("zmap-header", Mutator.zmap_header, 4), ("zidx-type", Mutator.zidx_type, 3),
    ("zidx-delta", Mutator.zidx_delta, 4), ("zidx-cblkcnt", Mutator.zidx_cblkcnt, 3),
    ("zidx-blkaddr", Mutator.zidx_blkaddr, 3), ("zidx-clusterofs", Mutator.zidx_clusterofs, 2),
    ("zidx-full-flags", Mutator.zidx_full_flags, 1), ("zdata", Mutator.zdata, 3),
    ("zextents", Mutator.zextents, 3),
    ("fragment", Mutator.fragment, 3), ("metabox", Mutator.metabox, 3),
    ("device-table", Mutator.device_table, 1), ("struct-flip", Mutator.struct_flip, 4),
    ("flip", Mutator.flip, 5), ("truncate", Mutator.truncate, 1),
]


_parsed = {}


def parse(path):
    """The parsed base image at `path` (cached: the campaign generates many from each)."""
    if path not in _parsed:
        data = open(path, "rb").read()
        _parsed[path] = Image(data)
    return _parsed[path]


def generate(base, seed):
    """(image bytes, class name, description) for `seed` on the base image file `base`."""
    im = parse(base)
    rng = random.Random(seed)
    img = bytearray(im.data)
    m = Mutator(im, rng, img)
    names, whats = [], []
    count = rng.choice([1] * 8 + [2, 3])
    tries = 0
    while len(names) < count and tries < 50:
        tries += 1
        name, fn, _ = rng.choices(CLASSES, weights=[c[2] for c in CLASSES])[0]
        try:
            what = fn(m)
        except (struct.error, IndexError, ValueError):
            what = None                                      # the structure runs off the image
        if what:
            names.append(name)
            whats.append(what)
    csum = rng.random() < 0.9
    if csum:
        fix_csum(img)
    return bytes(img), "+".join(names), "; ".join(whats) + ("" if csum else " [checksum not fixed]")


def main():
    if len(sys.argv) == 3 and sys.argv[1] == "--classes":
        im = parse(sys.argv[2])
        for name, fn, _ in CLASSES:
            ok = sum(1 for s in range(20) if _try(im, fn, s))
            print(f"{name}\t{'yes' if ok else 'no'}")
        return
    if len(sys.argv) != 4:
        sys.exit(__doc__)
    base, seed, out = sys.argv[1], int(sys.argv[2]), sys.argv[3]
    img, name, what = generate(base, seed)
    with open(out, "wb") as f:
        f.write(img)
    print(f"{name}\t{what}")


def _try(im, fn, seed):
    try:
        return fn(Mutator(im, random.Random(seed), bytearray(im.data)))
    except (struct.error, IndexError, ValueError):
        return None


if __name__ == "__main__":
    main()
