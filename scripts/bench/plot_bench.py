#!/usr/bin/env python3
"""PNG plots of a `mlx-ring bench serve` results folder (results.json, schema_version 1).

Usage: plot_bench.py RESULTS.json OUT_DIR

Writes into OUT_DIR:
  throughput.png  output tok/s (pooled over rounds; the bar spans the rounds' lowest and highest)
                  and TTFT p50/p99 against concurrency or request rate, one line per target
  latency_cdf.png the empirical CDFs of TTFT, TPOT and E2E latency over every completed request,
                  one panel per metric, one line per target and level
Prints the files written, one a line.
"""

import json
import sys
from collections import defaultdict
from pathlib import Path

import matplotlib
import matplotlib.ticker

matplotlib.use("Agg")
import matplotlib.pyplot as plt  # noqa: E402


def level_of(row, field):
    v = row.get(field)
    return float("inf") if v == "inf" else float(v)


def main(argv):
    if len(argv) != 3:
        sys.exit(__doc__)
    doc = json.loads(Path(argv[1]).read_text())
    if doc.get("schema_version") != 1:
        sys.exit("plot_bench.py reads schema_version 1, got %r" % doc.get("schema_version"))
    out = Path(argv[2])
    out.mkdir(parents=True, exist_ok=True)
    field = doc["config"]["level_field"]
    xlabel = "max concurrency (closed loop)" if field == "max_concurrency" else "request rate (req/s)"

    by_target = defaultdict(list)
    for row in doc["results"]:
        by_target[row["target"]].append(row)
    fig, (ax1, ax2) = plt.subplots(1, 2, figsize=(11, 4.2))
    for target, rows in by_target.items():
        rows.sort(key=lambda r: level_of(r, field))
        xs = [level_of(r, field) for r in rows]
        finite = [x if x != float("inf") else max([v for v in xs if v != float("inf")] or [1]) * 2 for x in xs]
        ys = [r["output_throughput"] for r in rows]
        lo = [y - (r["output_throughput_spread"]["min"] or y) for y, r in zip(ys, rows)]
        hi = [(r["output_throughput_spread"]["max"] or y) - y for y, r in zip(ys, rows)]
        ax1.errorbar(finite, ys, yerr=[lo, hi], marker="o", capsize=3, label=target)
        ax2.plot(finite, [r["median_ttft_ms"] for r in rows], marker="o", label=target + " p50")
        ax2.plot(finite, [r["p99_ttft_ms"] for r in rows], marker="x", linestyle="--", label=target + " p99")
    ax1.set_xlabel(xlabel)
    ax1.set_ylabel("output tok/s (all requests)")
    ax1.set_title("Throughput")
    ax2.set_xlabel(xlabel)
    ax2.set_ylabel("TTFT (ms)")
    ax2.set_yscale("log")
    ax2.set_title("Time to first token")
    for ax in (ax1, ax2):
        ax.grid(True, alpha=0.3)
        ax.legend(fontsize=8)
        if field == "max_concurrency":
            ax.set_xscale("log", base=2)
            ax.xaxis.set_major_formatter(matplotlib.ticker.ScalarFormatter())
    fig.suptitle(doc["config"]["workload"] + ", " + doc["config"]["endpoint_type"] + " API", fontsize=10)
    fig.tight_layout()
    fig.savefig(out / "throughput.png", dpi=110)
    print(out / "throughput.png")

    samples = defaultdict(lambda: defaultdict(list))
    for q in doc["requests"]:
        if not q["ok"]:
            continue
        key = "%s @ %s" % (q["target"], q.get(field))
        for metric in ("ttft_ms", "tpot_ms", "e2el_ms"):
            if q.get(metric) is not None:
                samples[metric][key].append(q[metric])
    fig, axes = plt.subplots(1, 3, figsize=(14, 4.2))
    for ax, (metric, title) in zip(axes, (("ttft_ms", "TTFT"), ("tpot_ms", "TPOT"), ("e2el_ms", "E2E latency"))):
        for key, values in sorted(samples[metric].items()):
            values.sort()
            n = len(values)
            ax.step(values, [(i + 1) / n for i in range(n)], where="post", label=key)
        ax.set_xscale("log")
        ax.set_xlabel(title + " (ms, log scale)")
        ax.set_ylabel("fraction of requests")
        ax.set_title(title + " CDF")
        ax.grid(True, alpha=0.3)
        if samples[metric]:
            ax.legend(fontsize=7)
    fig.tight_layout()
    fig.savefig(out / "latency_cdf.png", dpi=110)
    print(out / "latency_cdf.png")


if __name__ == "__main__":
    main(sys.argv)
