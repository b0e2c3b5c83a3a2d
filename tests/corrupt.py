#!/usr/bin/env python3
# SPDX-License-Identifier: GPL-2.0
"""Make corrupted copies of an EROFS image: corrupt.py BASE OUTDIR N.

Targeted ones (named sb-*) change one superblock field with the checksum fixed up, so the
field itself is what the driver must reject; random ones (rnd-*) flip bytes in the metadata
(the first blocks: superblock, inodes, directories) and in the rest of the image. A file
OUTDIR/expect lists "name errno-or-any" for the guest to check.
"""
import os
import random
import struct
import sys

SB = 1024
CRC_SEED = 0x5045B54A


def _crc32c_table():
    table = []
    for n in range(256):
        for _ in range(8):
            n = (n >> 1) ^ (0x82F63B78 if n & 1 else 0)
        table.append(n)
    return table


_CRC32C = _crc32c_table()


def crc32c(crc, data):
    # The kernel's crc32c(): no pre/post inversion. Byte-wise with a table (tests/hostile.py
    # fixes up thousands of superblocks, in the guest).
    t = _CRC32C
    for b in data:
        crc = (crc >> 8) ^ t[(crc ^ b) & 0xFF]
    return crc


def fix_csum(img):
    compat = struct.unpack_from("<I", img, SB + 8)[0]
    if not compat & 1:
        return
    blkszbits = img[SB + 12]
    blksz = 1 << blkszbits
    length = blksz - SB if blksz > SB else blksz
    struct.pack_into("<I", img, SB + 4, 0)
    struct.pack_into("<I", img, SB + 4, crc32c(CRC_SEED, bytes(img[SB + 8:SB + length])))


def main():
    base, outdir, n = sys.argv[1], sys.argv[2], int(sys.argv[3])
    data = bytearray(open(base, "rb").read())
    rng = random.Random(20261129)
    expect = []

    def write(name, img, errno):
        with open(os.path.join(outdir, name + ".erofs"), "wb") as f:
            f.write(img)
        expect.append(f"{name} {errno}")

    # Targeted superblock corruptions: (name, offset, format, value, expected mount errno).
    targeted = [
        ("sb-magic", 0, "<I", 0x12345678, "EINVAL", False),
        ("sb-blkszbits-big", 12, "B", 13, "EINVAL", True),
        ("sb-blkszbits-small", 12, "B", 8, "EINVAL", True),
        ("sb-dirblkbits", 90, "B", 1, "EINVAL", True),
        ("sb-extslots", 13, "B", 250, "EINVAL", True),
        ("sb-unknown-incompat", 80, "<I", 0x8000, "EINVAL", True),
        # Compression features with no algorithm: the C driver mounts such an image.
        ("sb-compr-no-algs", 80, "<I", 0x3, "any", True),
        # An algorithm bit Linux 7.3 does not know: "unidentified algorithms", EOPNOTSUPP.
        ("sb-unknown-algs", [(80, "<I", 0x3), (84, "<H", 0x30)], None, None, "EOPNOTSUPP", True),
        ("sb-rootnid-huge", 14, "<H", 0xFFFF, "any", True),
        ("sb-meta-blkaddr", 40, "<I", 0x7FFFFFFF, "any", True),
        ("sb-checksum", 4, "<I", 0xDEADBEEF, "EBADMSG", False),
    ]
    if struct.unpack_from("<I", data, SB + 80)[0] & 0x100:
        # Metabox images: a metabox inode inside the metabox (a self-loop), or too short a
        # superblock to hold metabox_nid, fail with EUCLEAN; a nid past the metadata any way.
        targeted += [
            ("sb-metabox-loop", 128, "<Q", 1 << 63 | 5, "EUCLEAN", True),
            ("sb-metabox-short", 13, "B", 0, "EUCLEAN", True),
            ("sb-metabox-huge", 128, "<Q", (1 << 63) - 1, "any", True),
            ("sb-metabox-zero", 128, "<Q", 0, "any", True),
        ]
    for name, off, fmt, val, errno, fix in targeted:
        img = bytearray(data)
        for o, f, v in off if isinstance(off, list) else [(off, fmt, val)]:
            struct.pack_into(f, img, SB + o, v)
        if fix:
            fix_csum(img)
        write(name, img, errno)

    # Random flips: in metadata (first 64 KiB past the superblock) and anywhere.
    for i in range(n):
        img = bytearray(data)
        hot = min(len(img), 65536)
        for _ in range(rng.choice([1, 1, 2, 4, 16])):
            if rng.random() < 0.8:
                off = rng.randrange(SB + 144, hot)
            else:
                off = rng.randrange(0, len(img))
            img[off] ^= 1 << rng.randrange(8)
        fix_csum(img)
        write(f"rnd-{i:03d}", img, "any")

    # Truncated images.
    for frac in (0.1, 0.5, 0.9):
        write(f"trunc-{int(frac * 100)}", data[: max(SB + 144, int(len(data) * frac)) & ~511], "any")

    with open(os.path.join(outdir, "expect"), "w") as f:
        f.write("\n".join(expect) + "\n")


if __name__ == "__main__":
    main()
