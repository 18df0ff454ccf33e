#!/usr/bin/env python3
"""Markdown tables from scripts/bench/pipeline.sh's outputs: JMH's JSON (SampleTime percentiles,
-prof gc) and the probe rows PipelineBenchmark appends (per-hand-off latency, per-thread bytes,
process CPU). Usage: pipeline_report.py jmh.json probe.tsv [--command TEXT]"""
import json
import platform
import subprocess
import sys
from collections import defaultdict


def secondary(entry, suffix):
    for k, v in entry.get("secondaryMetrics", {}).items():
        if k.endswith(suffix):
            return v["score"]
    return float("nan")


def config_of(entry):
    p = entry.get("params", {})
    parts = [p.get("waitMode", "?")]
    if "waiter" in p:
        parts.append(p["waiter"])
    if p.get("prepShards", "2") != "2":
        parts.append("prep" + p["prepShards"])
    if "window" in p:
        parts.append(p["window"])
    if "paceUs" in p:
        parts.append(p["paceUs"] + "us")
    return "/".join(parts)


def table_head(out, columns):
    """A Markdown table's header row and its separator (first column left-aligned, the rest right)."""
    out.append("| " + " | ".join(columns) + " |")
    out.append("|---|" + "---:|" * (len(columns) - 1))


def rows_of(entries):
    """(entry, primaryMetric, its scorePercentiles, config) for each JMH entry."""
    for e in entries:
        pm = e["primaryMetric"]
        yield e, pm, pm.get("scorePercentiles"), config_of(e)


def cpu_model():
    try:
        for line in open("/proc/cpuinfo"):
            if line.startswith("model name"):
                return line.split(":", 1)[1].strip()
    except OSError:
        pass
    return platform.processor() or "?"


def main():
    args = sys.argv[1:]
    command = None
    if "--command" in args:
        i = args.index("--command")
        command = args[i + 1]
        del args[i:i + 2]
    jmh = json.load(open(args[0]))
    probe = defaultdict(dict)  # (bench, config) -> {(kind, name): fields}
    try:
        for line in open(args[1]):
            f = line.rstrip("\n").split("\t")
            if len(f) >= 5:
                probe[(f[0], f[1])][(f[2], f[3])] = f[4:]
    except FileNotFoundError:
        pass

    def pr(bench, config, kind, name, idx=1):
        v = probe.get((bench, config), {}).get((kind, name))
        return float(v[idx]) if v else float("nan")

    java = subprocess.run(["java", "-version"], capture_output=True, text=True).stderr.splitlines()
    out = []
    if command:
        out.append(f"Command: `{command}`  ")
    out.append(f"Machine: {cpu_model()}, {subprocess.run(['nproc'], capture_output=True, text=True).stdout.strip()} cores; "
               f"{java[0] if java else 'java ?'}; JMH {jmh[0].get('jmhVersion', '?') if jmh else '?'}, "
               f"{jmh[0].get('forks', '?') if jmh else '?'} fork, warm-up {jmh[0].get('warmupIterations', '?')}x{jmh[0].get('warmupTime', '?')}, "
               f"measurement {jmh[0].get('measurementIterations', '?')}x{jmh[0].get('measurementTime', '?')} per row.\n")

    by = defaultdict(list)
    for e in jmh:
        by[e["benchmark"].rsplit(".", 1)[1]].append(e)

    if by.get("firstSpan"):
        out.append("**(a) submit → first span at the listener** (one request of one token at a time; JMH SampleTime, µs; "
                   "alloc = all threads, bytes per request):\n")
        table_head(out, ["wait mode / caller", "p50 µs", "p90 µs", "p99 µs", "p99.9 µs", "mean µs", "samples",
                         "alloc B/request", "process CPU (cores)"])
        for e, pm, p, c in rows_of(by["firstSpan"]):
            samples = int(sum(cnt for fork in pm.get("rawDataHistogram", []) for it in fork for _, cnt in it))
            out.append(f"| {c} | {p['50.0']/1e3:.1f} | {p['90.0']/1e3:.1f} | {p['99.0']/1e3:.1f} | {p['99.9']/1e3:.1f} | "
                       f"{pm['score']/1e3:.1f} | {samples} | {secondary(e, 'gc.alloc.rate.norm'):.0f} | "
                       f"{pr('firstSpan', c, 'cpu', 'process cores'):.2f} |")
        out.append("")
        hops = ["submit→prep", "prep→plan", "plan→exec open", "exec open→exec token", "exec token→sink", "sink→listener",
                "submit→listener"]
        configs = [config_of(e) for e in by["firstSpan"]]
        out.append("Split by hand-off (timestamps taken inside the stage doubles on each stage's thread; µs, p50 / p99):\n")
        table_head(out, ["hop"] + configs)
        for h in hops:
            cells = []
            for c in configs:
                v = probe.get(("firstSpan", c), {}).get(("latency", h))
                cells.append(f"{float(v[1]):.1f} / {float(v[3]):.1f}" if v else "—")
            out.append(f"| {h} | " + " | ".join(cells) + " |")
        out.append("")

    if by.get("stream"):
        out.append(f"**(b) throughput, exec → listener with no work per token** (one session of 4096 tokens per op, "
                   "SampleTime normalized per token: percentiles are of per-session averages):\n")
        table_head(out, ["wait mode / window", "ns/token p50", "ns/token p99", "ns/token mean", "tokens/s (mean)",
                         "alloc B/token (gc.alloc.rate.norm)", "process CPU (cores)"])
        for e, pm, p, c in rows_of(by["stream"]):
            out.append(f"| {c} | {p['50.0']:.0f} | {p['99.0']:.0f} | {pm['score']:.0f} | {1e9/pm['score']:,.0f} | "
                       f"{secondary(e, 'gc.alloc.rate.norm'):.3f} | {pr('stream', c, 'cpu', 'process cores'):.2f} |")
        out.append("")

    if by.get("paced"):
        out.append("**(b') per-token latency exec → listener, exec busy 1 ms per token** (a stand-in for the forward pass; "
                   "256 tokens per session; exec cost = JMH time per token − pace):\n")
        table_head(out, ["wait mode", "exec→listener p50 µs", "p90 µs", "p99 µs", "p99.9 µs", "max µs", "samples",
                         "exec outside advance() p50 / p99 µs", "JMH ns/token − pace",
                         "alloc B/token (gc.alloc.rate.norm)", "process CPU (cores)"])
        for e, pm, _, c in rows_of(by["paced"]):
            v = probe.get(("paced", c), {}).get(("latency", "exec→listener"))
            pace_ns = float(e["params"].get("paceUs", "0")) * 1e3
            lat = (f"{float(v[1]):.1f} | {float(v[2]):.1f} | {float(v[3]):.1f} | {float(v[4]):.1f} | {float(v[5]):.0f} | {v[0]}"
                   if v else "— | — | — | — | — | —")
            g = probe.get(("paced", c), {}).get(("latency", "exec outside advance"))
            gap = f"{float(g[1]):.2f} / {float(g[3]):.2f}" if g else "—"
            out.append(f"| {c} | {lat} | {gap} | {pm['score'] - pace_ns:.0f} | {secondary(e, 'gc.alloc.rate.norm'):.3f} | "
                       f"{pr('paced', c, 'cpu', 'process cores'):.2f} |")
        out.append("")

    # Where allocation comes from: per-thread bytes per unit, rows above 0.05 B.
    rows = []
    for (bench, c), m in probe.items():
        for (kind, name), f in m.items():
            if kind == "alloc" and name != "all threads" and float(f[1]) > 0.05:
                unit = "request" if bench == "firstSpan" else "token"
                rows.append(f"| {bench} | {c} | {name} | {float(f[1]):.2f} B/{unit} |")
    if rows:
        out.append("Allocation by thread (HotSpot per-thread allocated bytes over the measurement iterations, "
                   "threads above 0.05 B per unit):\n")
        out.append("| benchmark | config | thread | bytes |")
        out.append("|---|---|---|---:|")
        out.extend(sorted(rows))
        out.append("")
    print("\n".join(out))


if __name__ == "__main__":
    main()
