#!/usr/bin/env python3
# SPDX-License-Identifier: GPL-2.0
"""Turn bench/run's results.csv (and bench/latency's latency.csv, if present) into summary.md
and PNG charts: report.py OUTDIR DATA_MB."""
import csv
import math
import os
import platform
import subprocess
import sys

out, size_mb = sys.argv[1], sys.argv[2]
rows = [r for r in csv.DictReader(open(os.path.join(out, "results.csv"))) if r["bw_kib_s"] not in ("", "error")]
DRIVERS = ["C", "erofs_rs-workqueue", "erofs_rs-kthreads", "erofs_rs-accel"]
images, jobs = [], []
for r in rows:
    if r["image"] not in images:
        images.append(r["image"])
    if r["job"] not in jobs:
        jobs.append(r["job"])
# Every round's run of a cell (results.csv has one line per run, `round` numbering them).
runs = {}
for r in rows:
    runs.setdefault((r["image"], r["driver"], r["job"]), {})[r.get("round") or "1"] = r


def median(v):
    v = sorted(v)
    n = len(v)
    return None if not n else (v[n // 2] if n % 2 else (v[n // 2 - 1] + v[n // 2]) / 2)


def vals(img, drv, job, key):
    return [float(r[key]) for r in runs.get((img, drv, job), {}).values() if r[key]]


def val(img, drv, job, key):
    """The median over the rounds."""
    return median(vals(img, drv, job, key))


def spread(img, drv, job):
    """(max - min) / median of the bandwidths over the rounds."""
    v = vals(img, drv, job, "bw_kib_s")
    m = median(v)
    return (max(v) - min(v)) / m if m else None


def round_ratios(img, drv, job):
    """The driver's bandwidth over C's, round by round (runs of one round are neighbours)."""
    a, c = runs.get((img, drv, job), {}), runs.get((img, "C", job), {})
    return {k: float(a[k]["bw_kib_s"]) / float(c[k]["bw_kib_s"])
            for k in a if k in c and float(c[k]["bw_kib_s"]) > 0}


def geomean(v):
    return math.exp(sum(math.log(x) for x in v) / len(v)) if v else None


def sh(cmd):
    try:
        return subprocess.run(cmd, shell=True, capture_output=True, text=True, timeout=20).stdout.strip()
    except Exception:
        return "?"


cpu = sh("grep -m1 'model name' /proc/cpuinfo | cut -d: -f2").strip()
qemu = sh("qemu-system-x86_64 --version | head -n1")
accel = "KVM" if os.path.exists(os.path.join(os.environ.get("EROFS_RS_CACHE", "/var/cache/erofs_rs"), "kvm-works")) else "TCG"
lines = []
w = lines.append
w("# erofs_rs vs the C EROFS driver: fio in a QEMU guest\n")
w(f"- Host: {cpu}, {os.cpu_count()} CPUs, {platform.system()} {platform.release()}")
w(f"- Guest: Linux 7.3.4 (scripts/build-kernel, configs/erofs_rs.config), 2 vCPUs, 2 GiB, {qemu}, accelerator {accel}")
w(f"- Data: one {size_mb} MiB file of real bytes (Python, shared libraries, documentation); images:")
imgtxt = os.path.join(out, "images.txt")
if os.path.exists(imgtxt):
    for line in open(imgtxt):
        w(f"  - {line.strip()}")
w("- Each image is a virtio disk, mounted in turn by each driver in the same boot; page cache dropped before every job.")
w("- Under TCG absolute speeds mean little: read the ratios. `cpu ms`: CPU time of the whole guest during the job "
  "(decompression workers included).\n")
nrounds = max((len(v) for v in runs.values()), default=0)
w(f"Each cell: the median of {nrounds} interleaved runs (every image and driver once per round). "
  "Ratios: the medians' ratio, with the range of the round-by-round ratios in brackets; spread: "
  "(max - min) / median of a driver's runs.\n")
w("| image | job | C KiB/s | rs-wq KiB/s | rs-kthr KiB/s | rs-accel KiB/s | wq / C | kthr / C | accel / wq | spread C | spread wq | spread kthr | C p99 us | rs-wq p99 us | rs-kthr p99 us | C cpu ms | rs-wq cpu ms | rs-kthr cpu ms | rs-accel cpu ms |")
w("|---|---|---|---|---|---|---|---|---|---|---|---|---|---|---|---|---|---|---|")
fmt = lambda x, f="{:.0f}": "-" if x is None else f.format(x)
pct = lambda x: "-" if x is None else f"{x * 100:.0f}%"


def rng(img, drv, job):
    rr = round_ratios(img, drv, job)
    return f" ({min(rr.values()):.2f}-{max(rr.values()):.2f})" if len(rr) > 1 else ""


cols = {"erofs_rs-workqueue": [], "erofs_rs-kthreads": []}
per_round = {d: {} for d in cols}
for img in images:
    for job in jobs:
        c, a, k, x = (val(img, d, job, "bw_kib_s") for d in DRIVERS)
        if c is None and a is None and k is None:
            continue
        ra = a / c if a and c else None
        rk = k / c if k and c else None
        rx = x / a if x and a else None
        for d, r in (("erofs_rs-workqueue", ra), ("erofs_rs-kthreads", rk)):
            if r:
                cols[d].append((r, img, job))
                for rnd, v in round_ratios(img, d, job).items():
                    per_round[d].setdefault(rnd, []).append(v)
        p99 = [val(img, d, job, "lat_p99_us") for d in DRIVERS[:3]]
        cms = [val(img, d, job, "cpu_ms") for d in DRIVERS]
        sp = [spread(img, d, job) for d in DRIVERS[:3]]
        w(f"| {img} | {job} | {fmt(c)} | {fmt(a)} | {fmt(k)} | {fmt(x)} | {fmt(ra, '{:.2f}')}{rng(img, DRIVERS[1], job) if ra else ''} | "
          f"{fmt(rk, '{:.2f}')}{rng(img, DRIVERS[2], job) if rk else ''} | {fmt(rx, '{:.2f}')} | "
          + " | ".join(pct(x) for x in sp) + " | "
          + " | ".join(fmt(x) for x in p99) + " | " + " | ".join(fmt(x) for x in cms) + " |")
w("")
for d, v in cols.items():
    if not v:
        continue
    g = geomean([r for r, _, _ in v])
    worst = min(v)
    rounds = [geomean(x) for _, x in sorted(per_round[d].items()) if len(x) == len(v)]
    rtxt = (f"; computed round by round: {min(rounds):.3f}-{max(rounds):.3f} over {len(rounds)} rounds"
            if len(rounds) > 1 else "")
    w(f"- {d} / C over {len(v)} cells: geometric mean {g:.3f}{rtxt}; median {sorted(v)[len(v) // 2][0]:.2f}; "
      f"worst cell {worst[0]:.2f} ({worst[1]} {worst[2]}).")

lat = os.path.join(out, "latency.md")
if os.path.exists(lat):
    w("\n" + open(lat).read().replace("# ", "## ", 1))

try:
    import matplotlib
    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    for job in [j for j in ("seq-1m", "seq-4k", "rand-4k", "small-rand-4k") if j in jobs]:
        fig, ax = plt.subplots(figsize=(max(6, len(images) * 0.7), 4))
        width = 0.2
        for n, d in enumerate(DRIVERS):
            ys = [val(i, d, job, "bw_kib_s") or 0 for i in images]
            # Error bars: the lowest and highest of the rounds.
            lo = [(y - min(vals(i, d, job, "bw_kib_s") or [y])) / 1024 for i, y in zip(images, ys)]
            hi = [(max(vals(i, d, job, "bw_kib_s") or [y]) - y) / 1024 for i, y in zip(images, ys)]
            ax.bar([x + (n - 1.5) * width for x in range(len(images))], [y / 1024 for y in ys], width,
                   yerr=[lo, hi], capsize=2, label=d)
        ax.set_xticks(range(len(images)))
        ax.set_xticklabels(images, rotation=45, ha="right")
        ax.set_ylabel("MiB/s")
        ax.set_title(f"{job}: median throughput, min-max of {nrounds} rounds ({accel})")
        ax.legend()
        fig.tight_layout()
        fig.savefig(os.path.join(out, f"throughput-{job}.png"), dpi=90)
        plt.close(fig)
        w(f"\n![{job}](throughput-{job}.png)")
    raw = os.path.join(out, "latency-raw.csv")
    if os.path.exists(raw):
        series = {}
        for r in csv.DictReader(open(raw)):
            series.setdefault((r["scenario"], r["driver"]), []).append(float(r["us"]))
        fig, axes = plt.subplots(1, 2, figsize=(11, 4), sharey=True)
        for ax, sc in zip(axes, ("idle", "hog")):
            for (s, d), v in sorted(series.items()):
                if s != sc or not v:
                    continue
                v.sort()
                ax.plot(v, [(i + 1) / len(v) for i in range(len(v))], label=d)
            ax.set_xscale("log")
            ax.set_xlabel("queued -> started (us, log)")
            ax.set_title(f"decompression scheduling latency, {sc}")
            ax.grid(True, which="both", alpha=0.3)
            ax.legend()
        axes[0].set_ylabel("fraction of queues")
        fig.tight_layout()
        fig.savefig(os.path.join(out, "latency-cdf.png"), dpi=90)
        plt.close(fig)
        w("\n![latency](latency-cdf.png)")
except ImportError:
    w("\n(matplotlib missing: no charts)")

open(os.path.join(out, "summary.md"), "w").write("\n".join(lines) + "\n")
print("\n".join(lines))
