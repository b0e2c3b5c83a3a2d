#!/usr/bin/env python3
# SPDX-License-Identifier: GPL-2.0
"""zpeek.py FILE OFFSET: reads one page of FILE at OFFSET with readahead off (FADV_RANDOM)
and prints "MD5 PHYSICAL LOGICAL LENGTH": the page's md5 and, from FIEMAP, the extent that
holds it (for a compressed file: where its pcluster starts on the device, and the extent's
logical start and length). zpeek.py --drop FILE: drops FILE's page cache (FADV_DONTNEED)."""
import fcntl
import hashlib
import os
import struct
import sys

FS_IOC_FIEMAP = 0xC020660B
EXT = 56  # struct fiemap_extent

if sys.argv[1] == "--drop":
    fd = os.open(sys.argv[2], os.O_RDONLY)
    os.posix_fadvise(fd, 0, 0, os.POSIX_FADV_DONTNEED)
    sys.exit(0)
path, off = sys.argv[1], int(sys.argv[2])
fd = os.open(path, os.O_RDONLY)
os.posix_fadvise(fd, 0, 0, os.POSIX_FADV_RANDOM)
page = os.pread(fd, 4096, off)
req = bytearray(struct.pack("=QQIIII", off, 4096, 0, 0, 1, 0) + bytes(EXT))
fcntl.ioctl(fd, FS_IOC_FIEMAP, req)
if struct.unpack_from("=I", req, 20)[0] != 1:
    sys.exit("fiemap: no extent")
logical, physical, length = struct.unpack_from("=QQQ", req, 32)
print(hashlib.md5(page).hexdigest(), physical, logical, length)
