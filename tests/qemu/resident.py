#!/usr/bin/env python3
# SPDX-License-Identifier: GPL-2.0
"""Prints how many of a file's pages are in the page cache its mmap sees (mincore), as
"resident/total": resident.py FILE. With inode_share, that is the shared page cache."""
import ctypes
import mmap
import os
import sys

libc = ctypes.CDLL(None, use_errno=True)
fd = os.open(sys.argv[1], os.O_RDONLY)
size = os.fstat(fd).st_size
n = (size + mmap.PAGESIZE - 1) // mmap.PAGESIZE
# A private mapping that is never written: mincore reports the file's page cache.
m = mmap.mmap(fd, size, access=mmap.ACCESS_COPY)
base = ctypes.addressof(ctypes.c_char.from_buffer(m))
vec = (ctypes.c_ubyte * n)()
if libc.mincore(ctypes.c_void_p(base), ctypes.c_size_t(size), vec) != 0:
    sys.exit(f"mincore: {os.strerror(ctypes.get_errno())}")
print(f"{sum(v & 1 for v in vec)}/{n}")
