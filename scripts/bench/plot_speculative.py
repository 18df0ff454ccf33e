#!/usr/bin/env python3
"""Speculative decoding's speed-up against none, from speculative.py's --json files.

Usage: plot_speculative.py OUT.png RUN.json [RUN.json ...]

One group of bars per (workload, numerics), one bar per number of concurrent streams (the files
of one --streams value merge, e.g. one per numerics): the median over rounds of the speculating configuration's tok/s over the
median of `off`'s (the longest k each file measured), with each round's own ratio (speculating
over the same round's `off`) as dots; the dashed line is 1.0 (no gain, no loss). The bar's label
is the acceptance, accepted / proposed tokens over the rounds.
"""

import json
import statistics
import sys

import matplotlib

matplotlib.use("Agg")
import matplotlib.pyplot as plt  # noqa: E402


def main(argv):
    if len(argv) < 3:
        sys.exit(__doc__)
    by_streams = {}  # one run per --streams value; files of the same streams (e.g. per numerics) merge
    for path in argv[2:]:
        run = json.load(open(path))
        by_streams.setdefault(run["streams"], {"streams": run["streams"], "cells": []})["cells"] += run["cells"]
    runs = [by_streams[n] for n in sorted(by_streams)]
    groups = []  # (workload, numerics)
    for run in runs:
        for c in run["cells"]:
            g = (c["workload"], c["numerics"])
            if g not in groups:
                groups.append(g)
    width = 0.8 / len(runs)
    fig, ax = plt.subplots(figsize=(9, 4.2))
    for i, run in enumerate(runs):
        cells = {(c["workload"], c["numerics"], c["k"]): c for c in run["cells"]}
        k = max(c["k"] for c in run["cells"])
        xs, heights, labels, dots = [], [], [], []
        for j, (workload, numerics) in enumerate(groups):
            on, off = cells.get((workload, numerics, k)), cells.get((workload, numerics, 0))
            if not on or not off:
                continue
            x = j + (i - (len(runs) - 1) / 2) * width
            xs.append(x)
            heights.append(statistics.median(on["tok_s"]) / statistics.median(off["tok_s"]))
            labels.append("%d%%" % round(100 * on["accepted"] / on["proposed"]) if on["proposed"] else "none")
            dots.append((x, [a / b for a, b in zip(on["tok_s"], off["tok_s"]) if b > 0]))
        bars = ax.bar(xs, heights, width * 0.9, label="%d stream%s, k≤%d" % (
            run["streams"], "" if run["streams"] == 1 else "s", k))
        ax.bar_label(bars, labels=labels, fontsize=7, padding=2)
        for x, ratios in dots:
            ax.plot([x] * len(ratios), ratios, "k.", markersize=4)
    ax.axhline(1.0, color="gray", linestyle="--", linewidth=1)
    ax.set_xticks(range(len(groups)), ["%s\n%s" % g for g in groups])
    ax.set_ylabel("decode tok/s, speculation ÷ none")
    ax.set_title("Prompt lookup against none (bar: median ratio; dots: rounds; label: accepted)")
    ax.legend(fontsize=8)
    fig.tight_layout()
    fig.savefig(argv[1], dpi=110)


if __name__ == "__main__":
    main(sys.argv)
