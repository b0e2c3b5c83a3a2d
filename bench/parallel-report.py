#!/usr/bin/env python3
# SPDX-License-Identifier: GPL-2.0
"""bench/parallel's summary: summary.md from the results.csv of OUTDIR.

    bench/parallel-report.py OUTDIR SIZE_MB [PIN]

(PIN: 1 if the reader and the unbound workqueues were pinned to CPU 0, as bench/parallel does
by default; 0 if not.)

Per image and read_ahead_kb: each driver's median MiB/s over its rounds, with the spread
(min-max and (max - min) / median), its ratio to C (the mean of the C and C-again medians, or
C's alone), the medians of each vCPU's, the busiest vCPU's and the total instructions per read,
and the busiest vCPU's and the total's ratios to C; then the ratios alone in two overview tables,
and the A/A control (C-again against C).
"""
import csv, os, statistics, sys

out, size_mb = sys.argv[1], int(sys.argv[2])
pin = sys.argv[3] if len(sys.argv) > 3 else "1"
rows = list(csv.DictReader(open(f"{out}/results.csv")))
try:
    radef = open(f"{out}/ra-default").read().strip()
except OSError:
    radef = ""
# The instruction counts, from the counting boot (counts.csv), else from the timed reads.
crows = list(csv.DictReader(open(f"{out}/counts.csv"))) if os.path.exists(f"{out}/counts.csv") else rows
vcols = [c for c in (crows[0].keys() if crows else []) if c.startswith("insns_vcpu")]
counted = bool(crows) and crows[0]["insns_max"] != ""
icells = {}
for r in crows:
    icells.setdefault((r["spec"], r["ra_kb"], r["driver"]), []).append(r)

cells = {}
for r in rows:
    cells.setdefault((r["spec"], r["ra_kb"], r["driver"]), []).append(r)
specs = list(dict.fromkeys(r["spec"] for r in rows))
ras = list(dict.fromkeys(r["ra_kb"] for r in rows))
drivers = list(dict.fromkeys(r["driver"] for r in rows))
others = [d for d in drivers if d not in ("C", "C-again")]


def mibs(r):
    return int(r["bytes"]) / (1 << 20) / float(r["seconds"])


def med(key, f):
    v = [f(r) for r in (icells if getattr(f, "insns", False) else cells).get(key, [])]
    return statistics.median(v) if v else None


def insns(col):
    f = lambda r: int(r[col])
    f.insns = True
    return f


def c_ref(spec, ra, f):
    """C's median: the mean of the C and C-again medians, or whichever there is."""
    v = [m for m in (med((spec, ra, d), f) for d in ("C", "C-again")) if m is not None]
    return statistics.fmean(v) if v else None


def ratio(a, b):
    return f"{a / b:.3f}" if a is not None and b else "-"


def ra_label(ra):
    return f"{ra} (the default)" if ra == radef else ra


def mi(v):
    return f"{v / 1e6:.1f}" if v is not None else "-"


L = ["# Parallel benchmark (multi-threaded TCG, 2 vCPUs, image in guest memory)\n"]
L.append(f"A cold read (1 MiB `read(2)`s, bench/src/coldread.c) of one {size_mb} MiB file of real data per")
L.append("read, from a loop device on a tmpfs file, drop_caches before each; the drivers in interleaved")
L.append("rounds. MiB/s: medians over the rounds, wall-clock (host time: noisy under host load; read the")
L.append("spreads and the A/A control first). Ratios to C: the driver's median over the mean of the C and")
L.append("C-again medians (MiB/s: above 1 is faster than C; instructions: below 1 is fewer than C's).")
if pin == "1":
    L.append("The reader and the unbound workqueues (the loop worker, where the C driver decodes) are pinned")
    L.append("to CPU 0: CPU 1 runs only what a driver sends there.")
else:
    L.append("Unpinned: the scheduler moves the reader and the loop worker between the vCPUs, so a serial")
    L.append("read also spreads its instructions over both.")
if counted:
    L.append("Instructions (millions, medians per read): executed by each vCPU between two marks around the")
    L.append("read (bench/src/vcpu-insns-plugin.c); max: the busiest vCPU's, total: both vCPUs'. Under")
    L.append("parallel decoding the busiest vCPU's count falls while the total stays level. They come from")
    L.append("a second boot with the plugin (one round per cell), the times from a boot without it: its")
    L.append("callbacks slowed the vCPUs so that split reads were no faster on the clock.")
else:
    L.append("No instruction counts: run without the plugin (BENCH_PARALLEL_PLUGIN=0).")
if os.path.exists(f"{out}/images.txt"):
    L.append("\nImages:\n")
    L += [f"- {line.strip()}" for line in open(f"{out}/images.txt") if line.strip()]
L.append("")

L.append("## Overview: ratios to C\n")
for ra in ras:
    L.append(f"### read_ahead_kb {ra_label(ra)}\n")
    hdr = "| image | C MiB/s (C, C-again) |" + "".join(f" {d} MiB/s |" for d in others)
    if counted:
        hdr += "".join(f" {d} busiest insns |" for d in others)
    L.append(hdr)
    L.append("|---|---|" + "---|" * (len(others) * (2 if counted else 1)))
    for spec in specs:
        c = c_ref(spec, ra, mibs)
        if c is None:
            continue
        line = f"| {spec} | {c:.1f} |"
        line += "".join(f" {ratio(med((spec, ra, d), mibs), c)} |" for d in others)
        if counted:
            cm = c_ref(spec, ra, insns("insns_max"))
            line += "".join(f" {ratio(med((spec, ra, d), insns('insns_max')), cm)} |" for d in others)
        L.append(line)
    L.append("")

L.append("## Per image and read_ahead_kb\n")
for spec in specs:
    for ra in ras:
        if not any((spec, ra, d) in cells for d in drivers):
            continue
        L.append(f"### {spec}, read_ahead_kb {ra_label(ra)}\n")
        c = c_ref(spec, ra, mibs)
        hdr = "| driver | reads | MiB/s | min-max | spread | / C |"
        sep = "|---|---|---|---|---|---|"
        if counted:
            hdr += "".join(f" vCPU{i[len('insns_vcpu'):]} M |" for i in vcols) + " max M | total M | max / C | total / C |"
            sep += "---|" * (len(vcols) + 4)
            cm = c_ref(spec, ra, insns("insns_max"))
            ct = c_ref(spec, ra, insns("insns_total"))
        L.append(hdr)
        L.append(sep)
        for d in drivers:
            rs = cells.get((spec, ra, d))
            if not rs:
                continue
            v = [mibs(r) for r in rs]
            m = statistics.median(v)
            line = (f"| {d} | {len(v)} | {m:.1f} | {min(v):.1f}-{max(v):.1f} | "
                    f"{(max(v) - min(v)) / m * 100:.1f}% | {ratio(m, c)} |")
            if counted:
                line += "".join(f" {mi(med((spec, ra, d), insns(col)))} |" for col in vcols)
                mx = med((spec, ra, d), insns("insns_max"))
                tt = med((spec, ra, d), insns("insns_total"))
                line += f" {mi(mx)} | {mi(tt)} | {ratio(mx, cm)} | {ratio(tt, ct)} |"
            L.append(line)
        L.append("")

if "C" in drivers and "C-again" in drivers:
    L.append("## A/A control: C-again / C\n")
    L.append("The same driver in the same rounds: what the ratios above are worth. MiB/s should come out")
    L.append("at 1.00 within the spreads, the instruction counts closer.\n")
    hdr = "| image | read_ahead_kb | MiB/s | spread C | spread C-again |"
    sep = "|---|---|---|---|---|"
    if counted:
        hdr += " busiest insns | total insns |"
        sep += "---|---|"
    L.append(hdr)
    L.append(sep)
    for spec in specs:
        for ra in ras:
            a, b = cells.get((spec, ra, "C")), cells.get((spec, ra, "C-again"))
            if not a or not b:
                continue
            sp = []
            for rs in (a, b):
                v = [mibs(r) for r in rs]
                sp.append(f"{(max(v) - min(v)) / statistics.median(v) * 100:.1f}%")
            line = (f"| {spec} | {ra_label(ra)} | {ratio(med((spec, ra, 'C-again'), mibs), med((spec, ra, 'C'), mibs))} | "
                    f"{sp[0]} | {sp[1]} |")
            if counted:
                for col in ("insns_max", "insns_total"):
                    line += f" {ratio(med((spec, ra, 'C-again'), insns(col)), med((spec, ra, 'C'), insns(col)))} |"
            L.append(line)
    L.append("")

open(f"{out}/summary.md", "w").write("\n".join(L) + "\n")
print("\n".join(L))
