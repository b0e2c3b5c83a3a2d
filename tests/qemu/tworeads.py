#!/usr/bin/env python3
# SPDX-License-Identifier: GPL-2.0
"""tworeads.py FILE SOURCE TRIALS MODE [LATENCY]: pairs of cold reads of FILE that want one
pcluster, each read checked against the same bytes of SOURCE; prints how many reads there were
and how many differed. With LATENCY (the mount's decompress_latency), up to twice TRIALS more
pairs while it counts no `shared` pcluster: in threads mode, who comes second is timing.

threads: two threads start a 64 KiB read each at once, 64-384 KiB apart (mostly inside one large
pcluster); who comes second, and whether the first is still reading the pcluster, is timing.
ahead: in extents (FIEMAP) of at least 5 MiB, a readahead of 64 KiB 128 KiB into the extent
(POSIX_FADV_WILLNEED: the read is started, and decoded later by a worker), then at once page
faults 4.25 MiB further on, past what readahead adds after the first (at most 4 MiB), each a
`read_folio` (MADV_RANDOM): they want the pcluster the first read is reading. Readahead is
otherwise off (FADV_RANDOM)."""
import fcntl
import mmap
import os
import random
import struct
import sys
import threading

FS_IOC_FIEMAP = 0xC020660B
EXT = 56  # struct fiemap_extent
LEN = 65536


def extents(path):
    """(logical, length) of FILE's extents, from FIEMAP."""
    out = []
    start = 0
    with open(path, 'rb') as f:
        while True:
            buf = bytearray(struct.pack('=QQLLLL', start, 2**64 - 1 - start, 0, 0, 64, 0) + bytes(64 * EXT))
            fcntl.ioctl(f.fileno(), FS_IOC_FIEMAP, buf)
            n = struct.unpack_from('=L', buf, 20)[0]
            if n == 0:
                return out
            for i in range(n):
                la, _pa, ln, _r0, _r1, flags = struct.unpack_from('=QQQQQL', buf, 32 + i * EXT)
                out.append((la, ln))
                start = la + ln
                if flags & 1:  # FIEMAP_EXTENT_LAST
                    return out


def cold(path):
    os.sync()
    with open('/proc/sys/vm/drop_caches', 'w') as d:
        d.write('3\n')
    fd = os.open(path, os.O_RDONLY)
    os.posix_fadvise(fd, 0, 0, os.POSIX_FADV_RANDOM)
    return fd


path, src, trials = sys.argv[1], sys.argv[2], int(sys.argv[3])
mode = sys.argv[4] if len(sys.argv) > 4 else 'threads'
lat = sys.argv[5] if len(sys.argv) > 5 else None


def shared():
    """The `shared` count of LATENCY (1 without one: no more pairs)."""
    if lat is None:
        return 1
    with open(lat) as f:
        for line in f:
            if line.startswith('shared '):
                return int(line.split()[1])
    return 0


with open(src, 'rb') as s:
    want = s.read()
random.seed(1)
bad = 0
big = [e for e in extents(path) if e[1] >= 5 << 20]
if mode == 'ahead' and not big:
    sys.exit('no extent of 5 MiB')
k = 0
while k < trials or (k < 3 * trials and shared() == 0):
    k += 1
    fd = cold(path)
    if mode == 'ahead':
        la = big[k % len(big)][0]
        offs = [(la + (128 << 10)) & ~4095, (la + (128 << 10) + (4352 << 10)) & ~4095]
        m = mmap.mmap(fd, 0, prot=mmap.PROT_READ)
        m.madvise(mmap.MADV_RANDOM)
        os.posix_fadvise(fd, offs[0], LEN, os.POSIX_FADV_WILLNEED)
        b = m[offs[1]:offs[1] + LEN]
        got = [os.pread(fd, LEN, offs[0]), b]
        m.close()
    else:
        x = random.randrange(0, max(1, len(want) - 640 * 1024)) & ~4095
        offs = [x, x + random.choice([65536, 131072, 262144, 393216])]
        got = [b'', b'']
        both = threading.Barrier(2)

        def read(i):
            both.wait()
            got[i] = os.pread(fd, LEN, offs[i])

        ts = [threading.Thread(target=read, args=(i,)) for i in range(2)]
        for t in ts:
            t.start()
        for t in ts:
            t.join()
    bad += sum(got[i] != want[offs[i]:offs[i] + LEN] for i in range(2))
    os.close(fd)
print(2 * k, bad)
