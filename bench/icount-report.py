#!/usr/bin/env python3
# SPDX-License-Identifier: GPL-2.0
"""bench/icount's summary: summary.md (medians, erofs_rs / C, geometric means, counters per MiB
read) and a chart per medium (ratios-MEDIUM.svg) from the results.csv and counters.csv of OUTDIR.

    bench/icount-report.py OUTDIR SIZE_MB

Run again on a directory whose CSVs were joined from several runs (one header each) to
summarise them together.
"""
import csv, math, statistics, sys
from xml.sax.saxutils import escape
out, size_mb = sys.argv[1], int(sys.argv[2])


def chart(title, names, ratios, path):
    """A bar chart (SVG, no plotting library needed) of each column's ratio per image, with
    lines at 1 (the C driver), and at 0.95 and 1.05 (the targets)."""
    colors = {"erofs_rs-workqueue": "#1f77b4", "erofs_rs-kthreads": "#ff7f0e", "C-again": "#999999"}
    cols = [c for c in ratios if ratios[c]]
    vals = [v for c in cols for v in ratios[c]]
    lo = min(0.9, math.floor(min(vals) * 20) / 20)
    hi = max(1.1, math.ceil(max(vals) * 20) / 20)
    left, top, ph, bw = 60, 40, 300, 9
    gw = bw * len(cols) + 8
    width = left + gw * len(names) + 20
    height = top + ph + 90
    y = lambda v: top + ph - (v - lo) / (hi - lo) * ph
    S = [f'<svg xmlns="http://www.w3.org/2000/svg" width="{width}" height="{height}" '
         f'font-family="sans-serif" font-size="11">',
         f'<rect width="{width}" height="{height}" fill="white"/>',
         f'<text x="{left}" y="20" font-size="13">{escape(title)}</text>']
    step = 0.05 if hi - lo <= 0.6 else 0.25
    t = math.ceil(lo / step) * step
    while t <= hi + 1e-9:
        S.append(f'<line x1="{left}" x2="{width - 20}" y1="{y(t):.1f}" y2="{y(t):.1f}" stroke="#eee"/>')
        S.append(f'<text x="{left - 6}" y="{y(t) + 4:.1f}" text-anchor="end">{t:.2f}</text>')
        t += step
    for i, name in enumerate(names):
        x0 = left + i * gw + 4
        for j, c in enumerate(cols):
            v = ratios[c][i]
            ya, yb = sorted((y(v), y(max(lo, min(1.0, hi)))))
            S.append(f'<rect x="{x0 + j * bw}" y="{ya:.1f}" width="{bw - 1}" height="{max(yb - ya, 0.5):.1f}" '
                     f'fill="{colors.get(c, "#2ca02c")}"><title>{escape(name)} {escape(c)}: {v:.3f}</title></rect>')
        S.append(f'<text transform="translate({x0 + gw / 2:.1f},{top + ph + 8}) rotate(60)">{escape(name)}</text>')
    for v, dash in ((1.0, ""), (0.95, ' stroke-dasharray="4 3"'), (1.05, ' stroke-dasharray="4 3"')):
        if lo <= v <= hi:
            S.append(f'<line x1="{left}" x2="{width - 20}" y1="{y(v):.1f}" y2="{y(v):.1f}" stroke="black"{dash}/>')
    for j, c in enumerate(cols):
        S.append(f'<rect x="{left + 200 + j * 150}" y="9" width="10" height="10" fill="{colors.get(c, "#2ca02c")}"/>'
                 f'<text x="{left + 214 + j * 150}" y="18">{escape(c)} / C</text>')
    S.append("</svg>")
    open(path, "w").write("\n".join(S) + "\n")


rows = list(csv.DictReader(open(f"{out}/results.csv")))
cells = {}
for r in rows:
    cells.setdefault((r["medium"], r["image"], r["driver"]), []).append(r)
def med(k, f):
    v = [float(x[f]) for x in cells.get(k, [])]
    return statistics.median(v) if v else float("nan")
def spread(k):
    v = [float(x["ns"]) for x in cells.get(k, [])]
    return (max(v) - min(v)) / statistics.median(v) if v else float("nan")
order = {"ram": 0, "rand": 1, "file": 2, "filedio": 3, "disk": 4}
media = sorted({k[0] for k in cells}, key=lambda m: order.get(m, 9))
images = list(dict.fromkeys(k[1] for k in cells))
cols = ["erofs_rs-workqueue", "erofs_rs-kthreads", "C-again"]
L = []
L.append(f"# Deterministic benchmark (QEMU -icount shift=0,sleep=off, single-threaded TCG)\n")
L.append(f"A cold read (1 MiB `read(2)`s, bench/src/coldread.c) of one {size_mb} MiB file of real data per cell; guest time counts guest")
L.append("instructions. Throughput ratios are C's time / the driver's time (above 1: faster than C).")
L.append("`C-again` is the A/A control: the C driver in the same rounds, compared with itself.")
L.append("Page cache: (Buffers + Cached) after the read minus before, per byte read.\n")
for m in media:
    nrand = next((int(float(x["bytes"])) // 4096 for k, v in cells.items() if k[0] == "rand" for x in v), 0)
    where = {"ram": "image in guest memory (loop on tmpfs)", "file": "image in guest memory, file-backed mount (a ramfs file)",
             "filedio": "image in guest memory, file-backed mount (a ramfs file) with `directio`: kiocb reads",
             "rand": f"random reads: {nrand} `pread`s of 4 KiB at fixed random offsets, image in guest memory"}
    L.append(f"## {where.get(m, 'virtio disk')}\n")
    L.append("| image | C ms | rounds | " + " | ".join(f"{c} / C" for c in cols) + " | spread max | cache/byte C | cache/byte wq | cache/byte kthreads |")
    L.append("|---|---|---|" + "---|" * len(cols) + "---|---|---|---|")
    ratios = {c: [] for c in cols}
    names = []
    for im in images:
        c = med((m, im, "C"), "ns")
        if math.isnan(c):
            continue
        names.append(im)
        line = [im, f"{c / 1e6:.1f}", str(len(cells[(m, im, 'C')]))]
        for col in cols:
            d = med((m, im, col), "ns")
            ratios[col].append(c / d)
            line.append(f"{c / d:.3f} ({d / 1e6:.1f} ms)")
        line.append(f"{max(spread((m, im, d)) for d in ['C'] + cols) * 100:.1f}%")
        for d in ["C", "erofs_rs-workqueue", "erofs_rs-kthreads"]:
            line.append(f"{med((m, im, d), 'cache_bytes') / med((m, im, d), 'bytes'):.2f}")
        L.append("| " + " | ".join(line) + " |")
    gm = [f"{math.exp(statistics.fmean(math.log(x) for x in ratios[c])):.3f}" if ratios[c] else "-" for c in cols]
    worst = [f"{min(ratios[c]):.3f}" if ratios[c] else "-" for c in cols]
    L.append("| **geometric mean** | | | " + " | ".join(gm) + " | | | | |")
    L.append("| **worst cell** | | | " + " | ".join(worst) + " | | | | |\n")
    if names:
        chart(f"C time / driver time: {where.get(m, 'virtio disk')}", names, ratios, f"{out}/ratios-{m}.svg")
        L.append(f"![ratios, {m}](ratios-{m}.svg)\n")
L.append("## Counters (one untimed cold read per driver, virtio disk), per MiB read\n")
L.append("bios: bios submitted; dev KiB: what the device read; vm_map_ram: mappings made; meta reads:")
L.append("read_cache_folio calls (metadata reads through the page cache); work: queue_work_on +")
L.append("kthread_queue_work (every work item queued in the guest, the block layer's included); pages")
L.append("allocated: /proc/vmstat pgalloc_* (256 per MiB are the file's own page cache; the rest are")
L.append("short-lived pages for compressed data, bounce pages, slabs and the reader's own).\n")
L.append("| image | driver | bios | dev KiB | pages allocated | vm_map_ram | meta reads | work |")
L.append("|---|---|---|---|---|---|---|---|")
for r in csv.DictReader(open(f"{out}/counters.csv")):
    mib = float(r["bytes"]) / (1 << 20)
    f = lambda k: f"{float(r[k]) / mib:.1f}"
    work = (float(r["queue_work_on"]) + float(r["kthread_queue_work"])) / mib
    L.append(f"| {r['image']} | {r['driver']} | {f('submit_bio')} | {float(r['dev_bytes']) / 1024 / mib:.0f} | "
             f"{f('pgalloc')} | {f('vm_map_ram')} | {f('read_cache_folio')} | {work:.1f} |")
L.append("")
open(f"{out}/summary.md", "w").write("\n".join(L) + "\n")
print("\n".join(L))
