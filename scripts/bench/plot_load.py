#!/usr/bin/env python3
"""Throughput against concurrency from LoadHarness's per-phase TSV (scripts/bench/load.sh --phases).

Usage: plot_load.py PHASES.tsv OUT.png

Left: aggregate decode tok/s (content events / phase wall time, median over rounds) per target
against the number of concurrent streams. Right: TTFT p99 (worst over rounds) on a log scale.
"""

import csv
import statistics
import sys
from collections import defaultdict

import matplotlib

matplotlib.use("Agg")
import matplotlib.pyplot as plt  # noqa: E402


def main(argv):
    if len(argv) != 3:
        sys.exit(__doc__)
    tps = defaultdict(lambda: defaultdict(list))
    ttft = defaultdict(lambda: defaultdict(list))
    with open(argv[1], newline="") as f:
        for row in csv.DictReader(f, delimiter="\t"):
            n = int(row["N"])
            tps[row["target"]][n].append(float(row["aggregate_tps"]))
            ttft[row["target"]][n].append(float(row["ttft_p99_ms"]) / 1000.0)
    fig, (left, right) = plt.subplots(1, 2, figsize=(11, 4.2))
    for target in tps:
        ns = sorted(tps[target])
        left.plot(ns, [statistics.median(tps[target][n]) for n in ns], marker="o", label=target)
        right.plot(ns, [max(ttft[target][n]) for n in ns], marker="o", label=target)
    all_ns = sorted({n for t in tps.values() for n in t})
    for ax in (left, right):
        ax.set_xscale("log", base=2)
        ax.set_xticks(all_ns, [str(n) for n in all_ns])
        ax.set_xlabel("concurrent streams")
        ax.grid(True, alpha=0.3)
    left.set_ylabel("aggregate tok/s")
    left.set_title("Decode throughput")
    left.set_ylim(bottom=0)
    right.set_yscale("log")
    right.set_ylabel("TTFT p99 (s)")
    right.set_title("Time to first token, p99")
    left.legend()
    fig.tight_layout()
    fig.savefig(argv[2], dpi=110)
    print(f"[plot] {argv[2]}")


if __name__ == "__main__":
    main(sys.argv)
