#!/usr/bin/env python3
"""bench_to_markdown.py BENCH.csv [--formats A,B,...]: the markdown tables of docs/performance.md from a CSV of
spmvport-bench. One table per precision: per matrix and format, ms, GB/s, % of the measured read ceiling,
speedup against the vendor library (best of ALG1/ALG2) and host build ms; the best own format per matrix in bold.
Standard library only."""
import csv
import sys
from collections import OrderedDict


def num(s, fmt):
    try:
        return fmt.format(float(s))
    except (TypeError, ValueError):
        return ""


def main(argv):
    if len(argv) < 2:
        print(__doc__, file=sys.stderr)
        return 2
    rows = list(csv.DictReader(open(argv[1], newline="")))
    if "--formats" in argv[2:]:  # keep these formats only (e.g. the CSR kernels and the vendor baseline)
        keep = argv[argv.index("--formats") + 1].split(",")
        rows = [r for r in rows if r["format"] in keep]
    if not rows:
        print("no rows", file=sys.stderr)
        return 1
    device = rows[0].get("device", "")
    print(f"Device: {device} ({rows[0].get('backend', '')}). Ceiling: read-only kernel measured in the same run.\n")
    for prec in ("f64", "f32"):
        sel = [r for r in rows if r["precision"] == prec]
        if not sel:
            continue
        print(f"### {prec}\n")
        print("| matrix | rows | nnz | format | status | ms | GB/s | % ceiling | x vendor | build ms | options |")
        print("| --- | ---: | ---: | --- | --- | ---: | ---: | ---: | ---: | ---: | --- |")
        by_matrix = OrderedDict()
        for r in sel:
            by_matrix.setdefault(r["matrix"], []).append(r)
        for matrix, rs in by_matrix.items():
            own = [r for r in rs if r["status"] == "ok" and r["format"] not in ("vendor", "auto") and r["ms"]]
            best = min(own, key=lambda r: float(r["ms"])) if own else None
            for r in rs:
                if r["status"] == "unsupported":
                    continue
                name = r["format"] if r["format"] != "auto" else f"auto ({r.get('built_format', '')})"
                if r.get("variant"):
                    name += f" [{r['variant']}]"
                if r is best:
                    name = f"**{name}**"
                print(f"| {matrix} | {r['rows']} | {r['nnz']} | {name} | {r['status']} | {num(r['ms'], '{:.4f}')} | "
                      f"{num(r['gbps'], '{:.0f}')} | {num(r['pct_ceiling'], '{:.1f}')} | "
                      f"{num(r['speedup_vs_vendor'], '{:.2f}')} | {num(r['build_ms'], '{:.1f}')} | "
                      f"{r.get('plan_options', '')} |")
        print()
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))
