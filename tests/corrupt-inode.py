#!/usr/bin/env python3
# SPDX-License-Identifier: GPL-2.0
"""Targeted corruption of one inode's xattr area or chunk index: corrupt-inode.py IMG OUT KIND PATH.

KIND is 'xattr-shared-count' (h_shared_count beyond the xattr area), 'xattr-entry' (an inline
entry whose value runs past the area), 'xattr-filter' (a name filter with every bit set: no name
present), or 'chunk-addr' (the first chunk index pointing past the device). The nid comes from dump.erofs; the superblock checksum is fixed up, so only that field
is wrong.
"""
import re
import shutil
import struct
import subprocess
import sys

sys.path.insert(0, __file__.rsplit("/", 1)[0])
from corrupt import fix_csum  # noqa: E402

img, out, kind, path = sys.argv[1:]
info = subprocess.run(["dump.erofs", f"--path={path}", img], capture_output=True, text=True, check=True).stdout
nid = int(re.search(r"NID: (\d+)", info).group(1))
data = bytearray(open(img, "rb").read())
blkszbits = data[1024 + 12]
meta_blkaddr = struct.unpack_from("<I", data, 1024 + 40)[0]
iloc = (meta_blkaddr << blkszbits) + nid * 32
i_format, icount = struct.unpack_from("<HH", data, iloc)
isize = 64 if i_format & 1 else 32
xattr_isize = 0 if icount == 0 else 12 + 4 * (icount - 1)
if kind == "xattr-shared-count":
    data[iloc + isize + 4] = 255
elif kind == "xattr-entry":
    shared = data[iloc + isize + 4]
    entry = iloc + isize + 12 + 4 * shared
    struct.pack_into("<H", data, entry + 2, 0xFFF0)
elif kind == "xattr-filter":
    struct.pack_into("<I", data, iloc + isize, 0xFFFFFFFF)
elif kind == "chunk-addr":
    pos = (iloc + isize + xattr_isize + 7) & ~7
    struct.pack_into("<HHI", data, pos, 0, 0, 0xFFFFFFF0)
else:
    sys.exit(f"unknown kind {kind}")
fix_csum(data)
open(out, "wb").write(data)
print(nid)
