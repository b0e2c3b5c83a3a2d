#!/usr/bin/env python3
# SPDX-License-Identifier: GPL-2.0
"""The guest side of tests/hostile-campaign, and its summary on the host.

  hostile-guest.py run --bases DIR --out FILE --tree EROFS_TREE [--seeds A:B] [--replay FILE]
                       [--fstype T] [--timeout SEC] [--leak-every N]
  hostile-guest.py summary FILE

`run` (in a scripts/vm-run guest, as root): for each seed (the --replay list's "BASE SEED"
lines first, then A..B-1 round-robin over the sorted bases), generate the image with
tests/hostile.py into ramfs (tmpfs cannot back a file mount); then a child process,
`erofs-tree hostile` (tools/erofs-tree, compiled: a Python walker cost the debug guest about
a second an image), attaches it (even seeds: file-backed mount; odd: a read-only loop device),
mounts it, walks it (readdir, lstat, a failing lookup, xattrs, readlink), reads every file
whole through read(2) and through mmap (the mapping copied by the kernel with pwrite(2), so a
page that fails to read gives EFAULT instead of SIGBUS), unmounts and detaches. The child has
a timeout (a hang), and the kernel log it produced is read from /dev/kmsg: a kernel report
(scripts/vm-run's patterns) is recorded with its seed. One JSON line per image goes to FILE,
after a "start" line, so that a seed that kills the guest is known. At the end it unmounts
everything, unloads the module (which fails on leaked inodes or pins) and lets vm-run's
kmemleak scan run.

`summary`: counts per outcome and per mutation class, the seeds that need a look.
"""
import collections
import ctypes
import errno
import json
import os
import re
import subprocess
import sys
import time

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.dirname(HERE))

MNT_DETACH = 2
# scripts/vm-run's patterns, if the guest can read them (it writes them to $VMRUN_DIR).
BAD = (r"\bBUG\b|Oops|WARNING:|KASAN|KFENCE|hung_task|blocked for more than|soft lockup|"
       r"Kernel panic|general protection fault|kernel BUG|UBSAN|rust_panic|panicked at|"
       r"possible circular locking|inconsistent lock state|possible recursive locking|"
       r"suspicious RCU usage|sleeping function called from invalid context|scheduling while atomic")

libc = ctypes.CDLL(None, use_errno=True)


def sys_umount(target, flags=0):
    r = libc.umount2(target.encode(), flags)
    return 0 if r == 0 else ctypes.get_errno()


def one_image(tree, img, mode, mnt, fstype, timeout):
    """Mount, walk, read, unmount, in a child process (`erofs-tree hostile`, which walks and
    reads as the docstring above says): its result dict, or an "outcome" of "hang" (the child
    did not finish in `timeout` seconds; "stuck" if it could not even be killed) or
    "harness"."""
    try:
        p = subprocess.Popen([tree, "hostile", fstype, img, mode, mnt], stdout=subprocess.PIPE,
                             stderr=subprocess.PIPE)
    except OSError as e:
        return {"outcome": "harness", "what": f"cannot run {tree}: {e}"}
    try:
        out, err = p.communicate(timeout=timeout)
    except subprocess.TimeoutExpired:
        p.kill()
        try:
            p.wait(5)
            return {"outcome": "hang"}
        except subprocess.TimeoutExpired:
            return {"outcome": "hang", "stuck": True}
        finally:
            p.stdout.close()
            p.stderr.close()
    try:
        res = json.loads(out)
    except ValueError:
        return {"outcome": "harness", "what": f"walker exit {p.returncode}: " + (out + err)[:300].decode(errors="replace")}
    name = lambda e: errno.errorcode.get(e, str(e))
    if "errno" in res:
        res["errno"] = name(res["errno"])
    if "mount" in res:
        res["mount"] = name(res["mount"]) if res["mount"] else "OK"
    if res.get("umount") == 0:
        del res["umount"]
    elif "umount" in res:
        res["umount"] = name(res["umount"])
    if "errs" in res:
        errs = {}
        for k, v in res["errs"].items():
            op, _, e = k.partition(":")
            errs[f"{op}:{name(int(e)) if e.isdigit() else e}"] = v
        res["errs"] = errs
    return res


class Kmsg:
    def __init__(self):
        self.fd = os.open("/dev/kmsg", os.O_RDONLY | os.O_NONBLOCK)
        os.lseek(self.fd, 0, os.SEEK_END)

    def drain(self):
        out = []
        while True:
            try:
                rec = os.read(self.fd, 8192)
            except BlockingIOError:
                return out
            except OSError as e:
                if e.errno == errno.EPIPE:                   # records overwritten meanwhile
                    out.append("[kmsg: records lost]")
                    continue
                raise
            if not rec:
                return out
            head, _, msg = rec.decode(errors="replace").partition(";")
            out.append(msg.split("\n", 1)[0])


def classify(res, lines, bad):
    reports = [ln for ln in lines if bad.search(ln)]
    fs = [ln for ln in lines if re.match(r"erofs(_rs)?[: ]", ln)]
    res["dmesg"] = fs[:3]
    if reports:
        res["report"] = reports[:8]
        return "kernel-report"
    if "outcome" in res:
        return res["outcome"]
    if res.get("mount") != "OK":
        if not fs:
            return "mount-fail-silent"
        return "mount-fail-nid" if any("nid" in ln for ln in fs) else "mount-fail-msg"
    if res.get("umount"):
        return "umount-fail"
    return "mounted-errors" if res.get("errs") else "mounted-ok"


def run(args):
    import hostile
    opt = dict(zip(args[::2], args[1::2]))
    bases = sorted(os.path.join(opt["--bases"], f) for f in os.listdir(opt["--bases"]) if f.endswith(".erofs"))
    by_name = {os.path.basename(b)[:-6]: b for b in bases}
    fstype = opt.get("--fstype", "erofs_rs")
    # Mount options for every image (--opts, e.g. decomp_split=force), passed to the walker.
    os.environ["EROFS_TREE_MOUNT_OPTS"] = opt.get("--opts", "")
    timeout = float(opt.get("--timeout", "60"))
    leak_every = int(opt.get("--leak-every", "0"))
    tree = opt["--tree"]
    todo = []
    if opt.get("--replay") and os.path.exists(opt["--replay"]):
        for ln in open(opt["--replay"]):
            ln = ln.split("#", 1)[0].split()
            if len(ln) >= 2:
                todo.append((by_name[ln[0]], int(ln[1]), "replay"))
    if opt.get("--seeds"):
        a, b = map(int, opt["--seeds"].split(":"))
        todo += [(bases[s % len(bases)], s, "run") for s in range(a, b)]
    pat = BAD
    vd = os.environ.get("VMRUN_DIR")
    if vd and os.path.exists(os.path.join(vd, "badpattern")):
        pat = open(os.path.join(vd, "badpattern")).read().strip()
    bad = re.compile(pat)
    # erofs_rs registers as "erofs" unless told otherwise; the C driver is "erofs".
    os.system("modprobe erofs_rs fstype=erofs_rs" if fstype == "erofs_rs" else f"modprobe {fstype}")
    if not re.search(rf"\b{fstype}$", open("/proc/filesystems").read(), re.M):
        print(f"hostile-guest: no {fstype} filesystem type after modprobe", file=sys.stderr)
        return 2
    out = open(opt["--out"], "a", buffering=1)
    kmsg = Kmsg()
    kmsg.drain()
    # The image file must be on a filesystem with read_folio for a file-backed mount (tmpfs
    # has none; 9p writes are slow): ramfs.
    imgdir = "/run/hostile-img"
    os.makedirs(imgdir, exist_ok=True)
    if libc.mount(b"ramfs", imgdir.encode(), b"ramfs", 0, None):
        print(f"hostile-guest: cannot mount ramfs: errno {ctypes.get_errno()}", file=sys.stderr)
        return 2
    img_path = os.path.join(imgdir, "hostile.img")
    mnt_n, stuck, leaks_seen = 0, 0, 0
    mnt = f"/mnt/hostile{mnt_n}"
    os.makedirs(mnt, exist_ok=True)
    t_start = time.time()
    t_prev = t_start
    for n, (base, seed, why) in enumerate(todo):
        tg = time.time()
        data, cls, what = hostile.generate(base, seed)
        tg = time.time() - tg
        mode = "file" if seed % 2 == 0 else "loop"
        with open(img_path, "wb") as f:
            f.write(data)
        bname = os.path.basename(base)[:-6]
        out.write(json.dumps({"start": seed, "base": bname, "why": why}) + "\n")
        t0 = time.time()
        res = one_image(tree, img_path, mode, mnt, fstype, timeout)
        if res.get("stuck"):
            stuck += 1
        if res.get("outcome") == "hang":
            # The mount point may stay busy: use a new one.
            sys_umount(mnt, MNT_DETACH)
            mnt_n += 1
            mnt = f"/mnt/hostile{mnt_n}"
            os.makedirs(mnt, exist_ok=True)
        lines = kmsg.drain()
        res["outcome"] = classify(res, lines, bad)
        res.update(seed=seed, base=bname, cls=cls, what=what, mode=mode, why=why, ms=int((time.time() - t0) * 1000),
                   gen_ms=int(tg * 1000), loop_ms=int((time.time() - t_prev) * 1000))
        t_prev = time.time()
        out.write(json.dumps(res) + "\n")
        if (n + 1) % 100 == 0 or res["outcome"] in ("kernel-report", "hang"):
            print(f"[hostile] {n + 1}/{len(todo)} images, {time.time() - t_start:.0f} s; seed {seed}: "
                  f"{res['outcome']}", flush=True)
        if leak_every and (n + 1) % leak_every == 0 and os.path.exists("/sys/kernel/debug/kmemleak"):
            with open("/sys/kernel/debug/kmemleak", "w") as f:
                f.write("scan")
            found = open("/sys/kernel/debug/kmemleak").read().count("unreferenced object")
            if found > leaks_seen:
                out.write(json.dumps({"leak": found - leaks_seen, "after": seed, "images": n + 1}) + "\n")
                leaks_seen = found
    # Module unload: fails if a superblock, inode or folio pin leaked.
    ok = True
    if fstype == "erofs_rs":
        ok = os.system("rmmod erofs_rs") == 0
    out.write(json.dumps({"end": len(todo), "rmmod": ok, "stuck": stuck,
                          "secs": round(time.time() - t_start, 1)}) + "\n")
    return 0 if ok and not stuck else 1


def summary(path):
    recs, started, ends, leaks = [], {}, [], []
    for ln in open(path):
        try:
            d = json.loads(ln)
        except ValueError:
            continue
        if "start" in d:
            started[d["start"]] = d
        elif "end" in d:
            ends.append(d)
        elif "leak" in d:
            leaks.append(d)
        elif "outcome" in d:
            recs.append(d)
            started.pop(d["seed"], None)
    # A seed started but never finished: the guest died on it (tests/hostile-campaign adds
    # "crash" records for those; any left here are the last run's).
    for s, d in started.items():
        if not any(r["seed"] == s and r["outcome"] == "crash" for r in recs):
            recs.append({"seed": s, "base": d.get("base", "?"), "outcome": "crash", "cls": "?"})
    oc = collections.Counter(r["outcome"] for r in recs)
    print(f"{len(recs)} images")
    print("outcomes:")
    for k, v in oc.most_common():
        print(f"  {k:20s} {v}")
    errnos = collections.Counter(r.get("mount") for r in recs if r["outcome"].startswith("mount-fail"))
    print("mount errnos: " + ", ".join(f"{k} {v}" for k, v in errnos.most_common()))
    # What the failed mounts logged, with numbers and device names taken out.
    msgs = collections.Counter()
    for r in recs:
        if r["outcome"] in ("mount-fail-msg", "mount-fail-nid"):
            m = [ln for ln in r.get("dmesg", []) if "metabox) in use" not in ln][-1:] or ["?"]
            msgs[(r["outcome"][11:], re.sub(r"\(device [^)]*\)|0x[0-9a-f]+|\d+", "N", m[0]))] += 1
    print("failed mounts' last log line (nid/msg, count):")
    for (k, m), v in msgs.most_common(25):
        print(f"  {k:3s} {v:5d} {m[:110]}")
    reads = collections.Counter()
    for r in recs:
        for k, v in (r.get("errs") or {}).items():
            reads[k] += v
    print("errors of mounted images (op:errno count): " + ", ".join(f"{k} {v}" for k, v in reads.most_common(20)))
    bycls = collections.defaultdict(collections.Counter)
    for r in recs:
        for c in r.get("cls", "?").split("+"):
            bycls[c][r["outcome"]] += 1
    print("per class (images: outcomes):")
    for c in sorted(bycls):
        print(f"  {c:16s} {sum(bycls[c].values()):5d}: " + ", ".join(f"{k} {v}" for k, v in bycls[c].most_common()))
    bybase = collections.Counter(r.get("base", "?") for r in recs)
    print("per base: " + ", ".join(f"{k} {v}" for k, v in sorted(bybase.items())))
    ms = sorted(r["ms"] for r in recs if "ms" in r)
    if ms:
        print(f"per image: median {ms[len(ms) // 2]} ms, 99th percentile {ms[len(ms) * 99 // 100]} ms, max {ms[-1]} ms")
    for e in ends:
        print(f"guest session: {e['end']} images in {e['secs']} s, rmmod {'OK' if e['rmmod'] else 'FAILED'}, "
              f"{e['stuck']} stuck")
    for lk in leaks:
        print(f"kmemleak: {lk['leak']} new unreferenced objects after seed {lk['after']}")
    bad = [r for r in recs if r["outcome"] in ("kernel-report", "hang", "crash", "mount-fail-silent",
                                               "umount-fail", "harness")]
    if bad:
        print("seeds to look at (base seed outcome):")
        for r in bad[:200]:
            print(f"  {r['base']} {r['seed']} {r['outcome']} {r.get('cls', '')} {r.get('mount', '')} "
                  f"{(r.get('report') or r.get('dmesg') or [''])[0][:100]}")
    fatal = sum(oc[k] for k in ("kernel-report", "hang", "crash", "umount-fail", "harness"))
    fatal += sum(1 for e in ends if not e["rmmod"] or e["stuck"]) + len(leaks)
    return 1 if fatal else 0


if __name__ == "__main__":
    if len(sys.argv) >= 2 and sys.argv[1] == "run":
        sys.exit(run(sys.argv[2:]))
    if len(sys.argv) == 3 and sys.argv[1] == "summary":
        sys.exit(summary(sys.argv[2]))
    sys.exit(__doc__)
