#!/usr/bin/env python3
"""plot_bench.py -- figures from a spmvport-bench CSV.

usage: plot_bench.py BENCH.csv OUTDIR

Writes into OUTDIR (created if needed):
  gbps.png        (a) effective GB/s (compulsory byte model) per matrix and format, with the measured read
                      bandwidth ceiling (ceiling = gbps / pct_ceiling * 100); one panel per device and precision
  speedup.png     (b) speedup against the vendor library (best of ALG1/ALG2) per format, log scale, 1.0 line
  break_even.png  (c) preprocessing break-even (SpMVs of the vendor library) per format, log scale; "never" marked

Only rows with status ok are plotted. Empty fields are skipped. A figure without data (e.g. (b) and (c) on a
CPU-only CSV, which has no vendor baseline) is skipped with a note; figure (a) is always written.
Needs matplotlib (Debian: python3-matplotlib); the Agg backend is used, so no display is needed.
"""
import csv
import math
import os
import sys

import matplotlib

matplotlib.use("Agg")
import matplotlib.pyplot as plt  # noqa: E402 (after the backend is chosen)
from matplotlib import ticker  # noqa: E402
from matplotlib.patches import Patch  # noqa: E402


# ---- reading ------------------------------------------------------------------------------------------------------

def number(text):
    """The float in a CSV field, or None when it is empty or not a finite number."""
    try:
        value = float(text)
    except (TypeError, ValueError):
        return None
    return value if math.isfinite(value) else None


def read_rows(path):
    with open(path, newline="") as f:
        rows = list(csv.DictReader(f))
    for r in rows:  # a --variant is a series of its own: "amf_csr[amf_fixed_fold=2]"
        if r.get("variant"):
            r["format"] = f"{r['format']}[{r['variant']}]"
    return [r for r in rows if r.get("status") == "ok"], len(rows)


def ordered_unique(values):
    seen, out = set(), []
    for v in values:
        if v not in seen:
            seen.add(v)
            out.append(v)
    return out


def panels_of(rows):
    """(device, precision) pairs in the order they appear: one panel each."""
    return ordered_unique((r.get("device", ""), r.get("precision", "")) for r in rows)


# ---- drawing helpers ----------------------------------------------------------------------------------------------

def grouped_bars(ax, groups, series, value_of, rows):
    """Bars: one group per entry of `groups` (x axis), one bar per entry of `series` within it. Returns the
    legend handles: one per series, even one without a bar, so that colours match the slots in every panel."""
    width = 0.8 / max(len(series), 1)
    handles = []
    for k, name in enumerate(series):
        xs, ys = [], []
        for g, group in enumerate(groups):
            value = value_of(rows, group, name)
            if value is not None:
                xs.append(g - 0.4 + width * (k + 0.5))
                ys.append(value)
        colour = "C%d" % (k % 10)
        ax.bar(xs, ys, width, color=colour)
        handles.append(Patch(facecolor=colour, label=name))
    ax.set_xticks(range(len(groups)))
    ax.set_xticklabels(groups, rotation=30, ha="right", fontsize=8)
    return handles


def lookup(rows, matrix, fmt, field, device, precision):
    for r in rows:
        if (r["matrix"], r["format"], r.get("device", ""), r.get("precision", "")) == (matrix, fmt, device, precision):
            return number(r.get(field))
    return None


def log_axis(ax):
    """Log y axis with plain numbers at 1-2-5 steps: ratios read better as 0.5, 2 than as 10^-0.3."""
    ax.set_yscale("log")
    ax.yaxis.set_major_locator(ticker.LogLocator(base=10, subs=(1.0, 2.0, 5.0)))
    ax.yaxis.set_major_formatter(ticker.FormatStrFormatter("%g"))
    ax.yaxis.set_minor_locator(ticker.NullLocator())


def legend_outside(ax, handles):
    """The legend right of the axes, so that it never hides a bar."""
    if handles:
        ax.legend(handles=handles, fontsize=7, loc="upper left", bbox_to_anchor=(1.01, 1.0), borderaxespad=0)


def save(fig, outdir, name):
    path = os.path.join(outdir, name)
    fig.tight_layout()
    fig.savefig(path, dpi=110)
    plt.close(fig)
    print("wrote", path)


def note(text):
    print("note:", text)


# ---- (a) GB/s and the ceiling --------------------------------------------------------------------------------------

def ceiling_of(rows):
    """The read bandwidth the run measured, recovered from gbps / pct_ceiling; None if never recorded."""
    values = sorted(number(r.get("gbps")) / number(r.get("pct_ceiling")) * 100.0 for r in rows
                    if number(r.get("gbps")) and number(r.get("pct_ceiling")))
    return values[len(values) // 2] if values else None


def figure_gbps(rows, outdir):
    panels = panels_of(rows) or [("", "")]
    fig, axes = plt.subplots(len(panels), 1, figsize=(12, 4.2 * len(panels)), squeeze=False)
    for ax, (device, precision) in zip(axes[:, 0], panels):
        mine = [r for r in rows if (r.get("device", ""), r.get("precision", "")) == (device, precision)]
        if not mine:
            ax.text(0.5, 0.5, "no result with status ok in this CSV", ha="center", va="center",
                    transform=ax.transAxes)
            ax.set_axis_off()
            continue
        matrices = ordered_unique(r["matrix"] for r in mine)
        formats = ordered_unique(r["format"] for r in mine)
        handles = grouped_bars(ax, matrices, formats,
                     lambda rs, m, f: lookup(rs, m, f, "gbps", device, precision), mine)
        ceiling = ceiling_of(mine)
        if ceiling is not None:
            ax.axhline(ceiling, color="black", linestyle="--", linewidth=1)
            ax.text(len(matrices) - 0.5, ceiling, " read ceiling %.0f GB/s" % ceiling, va="bottom", ha="right",
                    fontsize=8)
        else:
            note("no pct_ceiling in %s %s: no ceiling line" % (device, precision))
        ax.set_ylabel("GB/s (compulsory byte model)")
        ax.set_title("%s, %s: effective bandwidth" % (device or "device ?", precision or "?"))
        legend_outside(ax, handles)
    save(fig, outdir, "gbps.png")


# ---- (b) speedup against the vendor library ---------------------------------------------------------------------------

def figure_speedup(rows, outdir):
    rows = [r for r in rows if r["format"] != "vendor" and number(r.get("speedup_vs_vendor"))]
    if not rows:
        note("no speedup_vs_vendor data (no vendor baseline, e.g. a CPU-only CSV): speedup.png skipped")
        return
    panels = panels_of(rows)
    fig, axes = plt.subplots(len(panels), 1, figsize=(12, 4.2 * len(panels)), squeeze=False)
    for ax, (device, precision) in zip(axes[:, 0], panels):
        mine = [r for r in rows if (r.get("device", ""), r.get("precision", "")) == (device, precision)]
        formats = ordered_unique(r["format"] for r in mine)
        matrices = ordered_unique(r["matrix"] for r in mine)
        handles = grouped_bars(ax, formats, matrices,
                     lambda rs, f, m: lookup(rs, m, f, "speedup_vs_vendor", device, precision), mine)
        log_axis(ax)
        ax.axhline(1.0, color="black", linewidth=1)
        ax.set_ylabel("speedup vs vendor (best of ALG1/ALG2)")
        ax.set_title("%s, %s: speedup against the vendor library" % (device, precision))
        legend_outside(ax, handles)
    save(fig, outdir, "speedup.png")


# ---- (c) preprocessing break-even -------------------------------------------------------------------------------------------

def figure_break_even(rows, outdir):
    rows = [r for r in rows if r["format"] != "vendor" and r.get("break_even", "") != ""]
    if not rows:
        note("no break_even data (no vendor baseline, or the column is missing): break_even.png skipped")
        return
    panels = panels_of(rows)
    fig, axes = plt.subplots(len(panels), 1, figsize=(12, 4.2 * len(panels)), squeeze=False)
    for ax, (device, precision) in zip(axes[:, 0], panels):
        mine = [r for r in rows if (r.get("device", ""), r.get("precision", "")) == (device, precision)]
        formats = ordered_unique(r["format"] for r in mine)
        matrices = ordered_unique(r["matrix"] for r in mine)
        handles = grouped_bars(ax, formats, matrices,
                     lambda rs, f, m: lookup(rs, m, f, "break_even", device, precision), mine)
        width = 0.8 / len(matrices)
        for r in mine:  # slower than the vendor library: preprocessing never pays off; marked in the bar's slot
            if r["break_even"] == "never":
                x = formats.index(r["format"]) - 0.4 + width * (matrices.index(r["matrix"]) + 0.5)
                ax.annotate("never", (x, 0.02), xycoords=("data", "axes fraction"), rotation=90, fontsize=6,
                            ha="center", va="bottom", color="dimgray")
        if any(number(r["break_even"]) for r in mine):
            log_axis(ax)
        ax.set_ylabel("break-even (SpMVs of the vendor library)")
        ax.set_title("%s, %s: (build + upload) / (vendor ms - ms)" % (device, precision))
        legend_outside(ax, handles)
    save(fig, outdir, "break_even.png")


# ---- main -----------------------------------------------------------------------------------------------------------

def main(argv):
    if len(argv) != 3 or argv[1] in ("-h", "--help"):
        print(__doc__.strip(), file=sys.stderr if len(argv) != 2 else sys.stdout)
        return 0 if len(argv) == 2 else 2
    csv_path, outdir = argv[1], argv[2]
    try:
        rows, total = read_rows(csv_path)
    except (OSError, csv.Error) as e:
        print("plot_bench.py: cannot read %s: %s" % (csv_path, e), file=sys.stderr)
        return 1
    os.makedirs(outdir, exist_ok=True)
    print("%s: %d rows, %d with status ok" % (csv_path, total, len(rows)))
    figure_gbps(rows, outdir)
    figure_speedup(rows, outdir)
    figure_break_even(rows, outdir)
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))
