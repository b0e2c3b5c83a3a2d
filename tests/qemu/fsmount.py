#!/usr/bin/env python3
# SPDX-License-Identifier: GPL-2.0
"""Mounts with the new mount API, the image given as a file descriptor (FSCONFIG_SET_FD).

    fsmount.py FSTYPE IMAGE TARGET [OPTION[=VALUE]...]

Prints "OK", or "ERR <errno name> <errno>" and the fs_context's messages (from reading the
fsopen descriptor) on failure, and exits 0 either way: the caller compares.
"""
import ctypes
import errno
import os
import sys

libc = ctypes.CDLL(None, use_errno=True)
SYS_fsopen, SYS_fsconfig, SYS_fsmount, SYS_move_mount = 430, 431, 432, 429
FSCONFIG_SET_FLAG, FSCONFIG_SET_STRING, FSCONFIG_SET_FD, FSCONFIG_CMD_CREATE = 0, 1, 5, 6
MOVE_MOUNT_F_EMPTY_PATH = 4


def call(nr, *args):
    ret = libc.syscall(nr, *args)
    if ret < 0:
        raise OSError(ctypes.get_errno(), os.strerror(ctypes.get_errno()))
    return ret


def messages(fsfd):
    out = []
    while True:
        try:
            out.append(os.read(fsfd, 1024).decode(errors="replace"))
        except OSError:
            return out


fstype, image, target = sys.argv[1:4]
fsfd = call(SYS_fsopen, fstype.encode(), 0)
imgfd = os.open(image, os.O_RDONLY)
try:
    call(SYS_fsconfig, fsfd, FSCONFIG_SET_FD, b"source", None, imgfd)
    for opt in sys.argv[4:]:
        key, _, value = opt.partition("=")
        if value:
            call(SYS_fsconfig, fsfd, FSCONFIG_SET_STRING, key.encode(), value.encode(), 0)
        else:
            call(SYS_fsconfig, fsfd, FSCONFIG_SET_FLAG, key.encode(), None, 0)
    call(SYS_fsconfig, fsfd, FSCONFIG_CMD_CREATE, None, None, 0)
    mfd = call(SYS_fsmount, fsfd, 0, 0)
    call(SYS_move_mount, mfd, b"", -100, target.encode(), MOVE_MOUNT_F_EMPTY_PATH)
    os.close(mfd)
    print("OK")
except OSError as e:
    print("ERR", errno.errorcode.get(e.errno, "?"), e.errno, *messages(fsfd))
finally:
    os.close(imgfd)
    os.close(fsfd)
