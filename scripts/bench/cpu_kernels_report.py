#!/usr/bin/env python3
"""Report of `scripts/bench/decode.sh --suite` (issue 9's benchmarks): one markdown file and a plot.

Usage: cpu_kernels_report.py --dir DIR --out REPORT.md --plot PLOT.png

Reads what the suite left in DIR:
  bandwidth.txt          read_bandwidth's two lines (1 and 2 threads, best / median GB/s)
  decode-*.md            DecodeBenchmark reports (ours native / mlx against mlx-lm), one per model
  decode-*.dir           the model directory each report measured (its *.safetensors bytes are the
                         weights one decode token reads)
  llama.jsonl            llama-bench -o jsonl lines (prompt and generation tests)
  llama.gguf             the GGUF path llama.cpp read
  qmm-rows.md, qmm-rows-avx2.md   QuantizedMatmulBenchmark tables (M rows vs one)
  batch.txt              BatchDecodeBenchmark's lines
  isa-ab-*.txt           "isa tok/s" lines of the AVX2 / AVX-512 decode A/B, per model
  kernel-f32.txt, kernel-bf16.txt   qmm_kernel_bench's "== isa hot|cold, M=m: X ms" lines
  load.txt               the load average before each step
and writes the B=1 table (each decode figure also as a share of the memory-bandwidth limit:
weight bytes per token / measured read bandwidth), the rows tables, and a bar plot of prefill and
decode tok/s per engine and model (log scale).
"""

import argparse
import json
import re
import statistics
from pathlib import Path


def bandwidth(path: Path):
    """{threads: (best, median)} in GB/s."""
    out = {}
    for line in path.read_text().splitlines():
        m = re.match(r"threads (\d+): best ([\d.]+) GB/s, median ([\d.]+) GB/s", line)
        if m:
            out[int(m.group(1))] = (float(m.group(2)), float(m.group(3)))
    return out


def decode_table(path: Path):
    """DecodeBenchmark's summary rows: [(model, kernels, prefill ours, prefill mlx-lm, decode ours,
    decode mlx-lm, tokens, prefill ratio, decode ratio)] (its ratios, of the unrounded medians), and
    the highest foreign CPU line."""
    rows, foreign = [], None
    for line in path.read_text().splitlines():
        cells = [c.strip().strip("*") for c in line.strip().strip("|").split("|")]
        if len(cells) == 14 and cells[1] in ("native", "mlx", "native fast", "native dequantized"):
            rows.append((cells[0], cells[1], float(cells[5]), float(cells[6]), float(cells[8]), float(cells[9]),
                         cells[13], float(cells[7]), float(cells[10])))
        m = re.match(r"Highest foreign CPU during any run: ([\d.]+) cores", line)
        if m:
            foreign = float(m.group(1))
    return rows, foreign


def weight_bytes(model_dir: Path):
    return sum(f.stat().st_size for f in model_dir.glob("*.safetensors"))


def llama(path: Path):
    """{(n_prompt, n_gen): (avg tok/s, stddev)}"""
    out = {}
    if not path.exists():
        return out
    for line in path.read_text().splitlines():
        line = line.strip()
        if line.startswith("{"):
            r = json.loads(line)
            out[(r["n_prompt"], r["n_gen"])] = (r["avg_ts"], r["stddev_ts"])
    return out


def kernel_bench(path: Path):
    """{(isa, hot|cold): {M: ms}} from qmm_kernel_bench's summary lines."""
    out = {}
    for line in path.read_text().splitlines():
        m = re.match(r"== (\S+) (hot|cold), M=(\d+): ([\d.]+) ms", line)
        if m:
            out.setdefault((m.group(1), m.group(2)), {})[int(m.group(3))] = float(m.group(4))
    return out


def isa_ab(path: Path):
    """{isa: [tok/s, ...]} from "isa tok/s" lines."""
    out = {}
    for line in path.read_text().splitlines():
        parts = line.split()
        if len(parts) == 2:
            out.setdefault(parts[0], []).append(float(parts[1]))
    return out


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--dir", required=True, type=Path)
    ap.add_argument("--out", required=True, type=Path)
    ap.add_argument("--plot", required=True, type=Path)
    a = ap.parse_args()
    d = a.dir
    md = ["## CPU kernels suite (`scripts/bench/decode.sh --suite`)", ""]
    if (d / "load.txt").exists():
        md += ["Load average (1/5/15 min) before each step:", "", "```", (d / "load.txt").read_text().rstrip(), "```", ""]
    bw = bandwidth(d / "bandwidth.txt")
    gbps = bw[2][0] if 2 in bw else bw[1][0]
    md += [f"Read bandwidth (`read_bandwidth 512 10`, best pass): {bw.get(1, ('?',))[0]} GB/s on one thread, "
           f"{bw.get(2, ('?',))[0]} GB/s on two; the limit below uses {gbps} GB/s.", ""]

    md += ["| model | engine | prefill tok/s | decode tok/s | prefill vs mlx-lm | decode vs mlx-lm "
           "| decode limit tok/s | decode % of limit | tokens |",
           "|---|---|---:|---:|---:|---:|---:|---:|---|"]
    plot_groups = []  # (model label, {engine: (prefill, decode)})
    foreign_notes = []
    llama_runs = llama(d / "llama.jsonl")
    limits = {}
    # The default model first, then the bfloat16 one.
    for report in sorted(d.glob("decode-*.md"), key=lambda p: "smollm2" not in p.name):
        rows, foreign = decode_table(report)
        if not rows:
            continue
        model_dir = Path((report.with_suffix(".dir")).read_text().strip())
        wbytes = weight_bytes(model_dir)
        limit = gbps * 1e9 / wbytes
        model = rows[0][0]
        limits[model] = limit
        engines = {}
        mlxlm_p, mlxlm_d = rows[0][3], rows[0][5]
        for (_, kernels, po, pt, go, gt, tokens, pr, gr) in rows:
            engines[f"ours {kernels}"] = (po, go)
            flags = {"native fast": "--cpu-kernels native --numerics fast",
                     "native dequantized": "--cpu-kernels native --dequantized-weights"}.get(kernels,
                                                                                          f"--cpu-kernels {kernels}")
            md.append(f"| {model} | ours `{flags}` | {po:.1f} | {go:.2f} | {pr:.2f}× | "
                      f"{gr:.2f}× | {limit:.0f} | {100 * go / limit:.1f}% | {tokens} |")
        engines["mlx-lm"] = (mlxlm_p, mlxlm_d)
        md.append(f"| {model} | mlx-lm 0.32.2 | {mlxlm_p:.2f} | {mlxlm_d:.2f} | 1 | 1 | {limit:.0f} | "
                  f"{100 * mlxlm_d / limit:.1f}% | — |")
        if model.startswith("smollm2") and llama_runs:
            gguf = Path((d / "llama.gguf").read_text().strip())
            glimit = gbps * 1e9 / gguf.stat().st_size
            prompts = sorted(k[0] for k in llama_runs if k[0] > 0)
            gens = sorted(k[1] for k in llama_runs if k[1] > 0)
            # llama-bench runs -p and -n as separate tests (pp N, tg M); pair them per invocation,
            # the smaller pair being decode.sh's --prompt-tokens 64 --gen-tokens 32.
            for (p_, g_) in zip(prompts, gens):
                pp = llama_runs[(p_, 0)][0]
                tg = llama_runs[(0, g_)][0]
                md.append(f"| {model} (GGUF Q4_1, {gguf.stat().st_size / 1e6:.1f} MB) | llama.cpp `-p {p_} -n {g_}` "
                          f"| {pp:.1f} | {tg:.1f} | {pp / mlxlm_p:.2f}× | {tg / mlxlm_d:.2f}× | {glimit:.0f} | "
                          f"{100 * tg / glimit:.1f}% | — |")
                if p_ == min(prompts):
                    engines["llama.cpp"] = (pp, tg)
        plot_groups.append((f"{model}\n({wbytes / 1e6:.0f} MB of weights)", engines, limit))
        foreign_notes.append(f"{model}: highest foreign CPU during any run {foreign} cores")
    md.append("")
    md += ["Decode limit = read bandwidth / bytes of weights a token reads (the model's safetensors, "
           "or the GGUF file for llama.cpp). " + "; ".join(foreign_notes) + ".", ""]

    for name in ("isa-ab-smollm2.txt", "isa-ab-bf16.txt"):
        p = d / name
        if p.exists():
            ab = isa_ab(p)
            parts = [f"{isa} {statistics.median(v):.2f} tok/s (runs {', '.join(f'{x:.2f}' for x in v)})"
                     for isa, v in ab.items()]
            md += [f"AVX2 vs AVX-512 decode ({name[7:-4]}, `DecodeProfile`, alternating): " + "; ".join(parts) + ".", ""]

    for name, title in (("qmm-rows.md", "quantized_matmul alone, M rows vs one (default ISA)"),
                        ("qmm-rows-avx2.md", "the same with MLXR_KERNEL_ISA=avx2")):
        p = d / name
        if p.exists():
            # Only the wall-time table: the process CPU counter ticks in 10 ms, coarser than a call.
            wall = p.read_text().strip().split("\n\n")[0]
            md += [f"### {title}", "", wall, ""]
    for name, act in (("kernel-f32.txt", "float32"), ("kernel-bf16.txt", "bfloat16")):
        p = d / name
        if not p.exists():
            continue
        kb = kernel_bench(p)
        ms = sorted({m for v in kb.values() for m in v})
        md += [f"### Kernel alone, one thread, {act} activations (`qmm_kernel_bench`, thread CPU ms per "
               "SmolLM2 forward pass of quantized matmuls)", "",
               "| ISA, weights | " + " | ".join(f"M={m}" for m in ms) + " | "
               + " | ".join(f"M={m} / M=1" for m in ms if m > 1) + " |",
               "|---|" + "---:|" * (2 * len(ms) - 1)]
        for (isa, temp), v in kb.items():
            md.append(f"| {isa}, {temp} | " + " | ".join(f"{v[m]:.1f}" for m in ms) + " | "
                      + " | ".join(f"{v[m] / v[1]:.2f}×" for m in ms if m > 1) + " |")
        md.append("")
    if (d / "batch.txt").exists():
        md += ["### In-process batched decode (`BatchDecodeBenchmark`)", "", "```", (d / "batch.txt").read_text().strip(),
               "```", ""]
    a.out.parent.mkdir(parents=True, exist_ok=True)
    a.out.write_text("\n".join(md) + "\n")

    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    order = ["ours native", "ours native dequantized", "ours native fast", "ours mlx", "mlx-lm", "llama.cpp"]
    colors = {"ours native": "#1f77b4", "ours native dequantized": "#17becf", "ours native fast": "#6a51a3",
              "ours mlx": "#9ecae1", "mlx-lm": "#ff7f0e", "llama.cpp": "#2ca02c"}
    fig, axes = plt.subplots(1, 2, figsize=(11, 4.4))
    for ax, which, title in ((axes[0], 1, "decode tok/s (B=1)"), (axes[1], 0, "prefill tok/s (B=1)")):
        width = 0.16
        for gi, (label, engines, limit) in enumerate(plot_groups):
            if which == 1:
                ax.hlines(limit, gi - 0.45, gi + 0.45, colors="grey", linestyles="dashed",
                          label="bandwidth limit" if gi == 0 else None)
            present = [e for e in order if e in engines]
            for ei, e in enumerate(present):
                v = engines[e][which]
                x = gi + (ei - (len(present) - 1) / 2) * width
                ax.bar(x, v, width, color=colors[e], label=e if gi == 0 or e not in plot_groups[0][1] else None)
                ax.text(x, v * 1.08, f"{v:.3g}", ha="center", va="bottom", fontsize=7)
        ax.set_xticks(range(len(plot_groups)), [g[0] for g in plot_groups], fontsize=8)
        ax.set_yscale("log")
        ax.set_title(title)
        ax.grid(axis="y", alpha=0.3)
    handles, labels = [], []
    for ax in axes:
        for h, l in zip(*ax.get_legend_handles_labels()):
            if l not in labels:
                handles.append(h)
                labels.append(l)
    fig.legend(handles, labels, fontsize=8, loc="lower center", ncol=len(labels))
    fig.suptitle("mlx-ring CPU kernels (native = exact, same tokens as mlx-lm; dequantized = --dequantized-weights, "
                 "exact;\nnative fast = --numerics fast) "
                 "vs mlx-lm and llama.cpp, 2-core x86", fontsize=10)
    fig.tight_layout(rect=(0, 0.07, 1, 1))
    a.plot.parent.mkdir(parents=True, exist_ok=True)
    fig.savefig(a.plot, dpi=110)


if __name__ == "__main__":
    main()
