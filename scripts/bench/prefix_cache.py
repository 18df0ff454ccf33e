#!/usr/bin/env python3
"""Prefix-cache benchmark: time to first token cold, from a RAM hit and from an SSD restore
after a restart, ours (`./mlx-ring serve --prompt-cache-dir`) against mlx_lm.server's RAM cache.

Usage (scripts/bench/prefix_cache.sh wraps it):
    prefix_cache.py --model DIR --sizes 1024,4096,16384 [--runs 1] [--engines ours,mlxlm]
                    [--out build/bench/prefix_cache] [--label NAME]

Per prompt size N (a deterministic text of about N tokens, a different one per size and run):
  cold  the prompt P, nothing cached (the engine's own fresh entry for it is what follows)
  ram   P + a new suffix S1 (~40 tokens): the cached P is reused, S1 is prefilled
  ssd   (ours only) after SIGTERM and a new `serve` on the same --prompt-cache-dir:
        P + another suffix S2: P is restored from disk, S2 prefilled
Each request is a non-streamed /v1/completions call with max_tokens 1 and temperature 0, so its
latency is the time to the first token (prompt + one decode step); `cached` is the server's own
usage.prompt_tokens_details.cached_tokens. Engines alternate request by request (both servers
are up at once, only one request is in flight). A small warm-up request (unrelated text) runs
after every server start, before anything is timed.

Writes OUT.json (every measurement), OUT.md (the table) and OUT.png (the plot).
"""

import argparse
import json
import os
import random
import re
import shutil
import signal
import socket
import subprocess
import sys
import tempfile
import time
import urllib.request
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent.parent
WORDS = ("river stone market winter engine garden silver window harbor candle forest bridge "
         "mountain letter orange thunder pencil island mirror ladder violet copper meadow lantern "
         "feather canyon planet saddle blanket rocket basket marble tunnel anchor velvet dragon "
         "compass pepper shadow glacier trumpet falcon cotton mosaic quartz ribbon summit tiger").split()


def free_port():
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def post(base, body, timeout=3600):
    req = urllib.request.Request(base + "/v1/completions", data=json.dumps(body).encode(),
                                 headers={"Content-Type": "application/json"})
    t0 = time.perf_counter()
    with urllib.request.urlopen(req, timeout=timeout) as r:
        doc = json.loads(r.read())
    dt = time.perf_counter() - t0
    usage = doc.get("usage", {})
    details = usage.get("prompt_tokens_details") or {}
    return dt, usage.get("prompt_tokens"), details.get("cached_tokens", 0)


def ask(base, prompt):
    return post(base, {"prompt": prompt, "max_tokens": 1, "temperature": 0})


class Text:
    """Deterministic word salad cut to a token count with the model's tokenizer."""

    def __init__(self, model_dir):
        from tokenizers import Tokenizer
        self.tok = Tokenizer.from_file(str(Path(model_dir) / "tokenizer.json"))

    def count(self, s):
        return len(self.tok.encode(s, add_special_tokens=False).ids)

    def make(self, tokens, seed):
        rnd = random.Random(seed)
        words = []  # no fixed lead: prompts of different seeds share (almost) no prefix
        # about 1.3 tokens per word here; grow, then trim to the target
        while self.count(" ".join(words)) < tokens:
            words += [rnd.choice(WORDS) + ("." if rnd.random() < 0.1 else "") for _ in range(max(8, tokens // 8))]
        lo, hi = 1, len(words)
        while lo < hi:
            mid = (lo + hi + 1) // 2
            if self.count(" ".join(words[:mid])) <= tokens:
                lo = mid
            else:
                hi = mid - 1
        return " ".join(words[:lo])


class Ours:
    name = "ours"

    def __init__(self, model, cache_dir, log, extra=()):
        """cache_dir None: the RAM tier only; extra: more serve flags."""
        self.model, self.cache_dir, self.log, self.extra = model, cache_dir, log, list(extra)
        self.proc = None

    def start(self):
        cmd = [str(ROOT / "mlx-ring"), "serve", "--model", str(self.model), "--port", "0", "--max-tokens", "8"]
        if self.cache_dir is not None:
            cmd += ["--prompt-cache-dir", str(self.cache_dir)]
        cmd += self.extra
        self.proc = subprocess.Popen(cmd, stdout=subprocess.PIPE, stderr=open(self.log, "a"), text=True, cwd=ROOT)
        for line in self.proc.stdout:
            m = re.search(r"on http://([^ ]+):(\d+) ", line)
            if m:
                self.base = f"http://{m.group(1)}:{m.group(2)}"
                return
        raise RuntimeError(f"serve exited before serving; see {self.log}")

    def stop(self):
        self.proc.send_signal(signal.SIGTERM)  # drains the spill queue, then exits
        self.proc.wait(timeout=600)


class MlxLm:
    name = "mlxlm"

    def __init__(self, model, log):
        self.model, self.log = model, log
        self.proc = None

    def start(self):
        port = free_port()
        cmd = [sys.executable, "-m", "mlx_lm", "server", "--model", str(self.model), "--port", str(port),
               "--max-tokens", "8"]
        self.proc = subprocess.Popen(cmd, stdout=open(self.log, "a"), stderr=subprocess.STDOUT, cwd=ROOT)
        self.base = f"http://127.0.0.1:{port}"
        deadline = time.time() + 300
        while time.time() < deadline:
            if self.proc.poll() is not None:
                raise RuntimeError(f"mlx_lm.server exited; see {self.log}")
            try:
                urllib.request.urlopen(self.base + "/v1/models", timeout=2).read()
                return
            except OSError:
                time.sleep(0.5)
        raise RuntimeError("mlx_lm.server did not come up")

    def stop(self):
        self.proc.send_signal(signal.SIGTERM)
        try:
            self.proc.wait(timeout=60)
        except subprocess.TimeoutExpired:
            self.proc.kill()


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--model", required=True)
    ap.add_argument("--sizes", default="1024,4096,16384")
    ap.add_argument("--runs", type=int, default=1)
    ap.add_argument("--engines", default="ours,mlxlm")
    ap.add_argument("--out", default="build/bench/prefix_cache")
    ap.add_argument("--label", default=None, help="model label in the table (default: the directory name)")
    ap.add_argument("--merge", nargs="+", default=None, metavar="JSON",
                    help="only report: combine these result files (an engine's rows come from the last file "
                         "that has it; a *.partial.json of an aborted run works too) into OUT.md / OUT.png")
    args = ap.parse_args()
    if args.merge:
        return merge(args)
    sizes = [int(s) for s in args.sizes.split(",")]
    engines = args.engines.split(",")
    label = args.label or Path(args.model).name
    out = Path(args.out)
    out.parent.mkdir(parents=True, exist_ok=True)
    text = Text(args.model)
    work = Path(tempfile.mkdtemp(prefix="mlxring-prefix-bench-"))
    servers = []
    if "ours" in engines:
        servers.append(Ours(args.model, work / "cache", out.with_suffix(".ours.log")))
    if "mlxlm" in engines:
        servers.append(MlxLm(args.model, out.with_suffix(".mlxlm.log")))
    rows = []

    def record(engine, size, run, phase, res):
        dt, prompt, cached = res
        rows.append({"engine": engine, "size": size, "run": run, "phase": phase, "seconds": dt,
                     "prompt_tokens": prompt, "cached_tokens": cached})
        print(f"[{engine}] N={size} run {run} {phase}: {dt:.3f} s, prompt {prompt}, cached {cached}", flush=True)
        out.with_suffix(".partial.json").write_text(json.dumps(rows, indent=1) + "\n")  # survives an abort

    def warm(s):
        ask(s.base, text.make(64, 999_999))

    t_start = time.time()
    try:
        for s in servers:
            s.start()
            warm(s)
        prompts = {(n, r): text.make(n, 1000 * r + n) for n in sizes for r in range(args.runs)}
        suffix1 = " Then the question: " + text.make(40, 7)
        suffix2 = " A different question: " + text.make(40, 8)
        for n in sizes:
            for r in range(args.runs):
                p = prompts[(n, r)]
                for s in servers:
                    record(s.name, n, r, "cold", ask(s.base, p))
                for s in servers:
                    record(s.name, n, r, "ram", ask(s.base, p + suffix1))
        ours = next((s for s in servers if s.name == "ours"), None)
        if ours is not None:
            ours.stop()
            ours.start()
            warm(ours)
            for n in sizes:
                for r in range(args.runs):
                    record("ours", n, r, "ssd", ask(ours.base, prompts[(n, r)] + suffix2))
    finally:
        for s in servers:
            if s.proc is not None and s.proc.poll() is None:
                s.stop()
        shutil.rmtree(work, ignore_errors=True)

    doc = {"model": label, "sizes": sizes, "runs": args.runs, "started": time.strftime("%Y-%m-%d %H:%M UTC",
           time.gmtime(t_start)), "wall_s": time.time() - t_start, "loadavg_end": os.getloadavg(), "rows": rows}
    out.with_suffix(".json").write_text(json.dumps(doc, indent=1) + "\n")
    table = report(doc)
    out.with_suffix(".md").write_text(table)
    print(table)
    plot(doc, out.with_suffix(".png"))


def merge(args):
    docs = []
    for f in args.merge:
        d = json.loads(Path(f).read_text())
        docs.append(d if isinstance(d, dict) else {"rows": d})
    rows = {}
    for d in docs:
        for e in {r["engine"] for r in d["rows"]}:
            rows[e] = [r for r in d["rows"] if r["engine"] == e]
    all_rows = [r for rs in rows.values() for r in rs]
    sizes = sorted({r["size"] for r in all_rows})
    runs = max(r["run"] for r in all_rows) + 1
    starts = ", ".join(d.get("started", "?") for d in docs)
    doc = {"model": args.label or Path(args.model).name, "sizes": sizes, "runs": runs, "started": starts,
           "wall_s": sum(d.get("wall_s", 0) for d in docs),
           "loadavg_end": max((d.get("loadavg_end", [0]) for d in docs), key=lambda x: x[0]), "rows": all_rows,
           "merged_from": args.merge}
    out = Path(args.out)
    out.with_suffix(".json").write_text(json.dumps(doc, indent=1) + "\n")
    table = report(doc)
    out.with_suffix(".md").write_text(table)
    print(table)
    plot(doc, out.with_suffix(".png"))


def median(xs):
    xs = sorted(xs)
    return xs[len(xs) // 2] if len(xs) % 2 else (xs[len(xs) // 2 - 1] + xs[len(xs) // 2]) / 2


def cell(doc, engine, size, phase):
    rs = [r for r in doc["rows"] if r["engine"] == engine and r["size"] == size and r["phase"] == phase]
    if not rs:
        return None, None, None
    return median([r["seconds"] for r in rs]), rs[0]["prompt_tokens"], rs[0]["cached_tokens"]


def report(doc):
    lines = [f"Model `{doc['model']}`, {doc['runs']} run(s) per cell (median), started {doc['started']}, "
             f"{doc['wall_s']:.0f} s, load average at the end {doc['loadavg_end'][0]:.1f}.", "",
             "| prompt tokens | ours cold | ours RAM hit | ours SSD restore (after restart) | SSD / cold "
             "| mlx_lm.server cold | mlx_lm.server RAM hit | cached (ours RAM / SSD / mlx-lm RAM) |",
             "|---:|---:|---:|---:|---:|---:|---:|---|"]
    for n in doc["sizes"]:
        oc, op, _ = cell(doc, "ours", n, "cold")
        orr, _, ocr = cell(doc, "ours", n, "ram")
        os_, _, ocs = cell(doc, "ours", n, "ssd")
        mc, mp, _ = cell(doc, "mlxlm", n, "cold")
        mr, _, mcr = cell(doc, "mlxlm", n, "ram")
        f = lambda x: "—" if x is None else f"{x:.2f} s"  # noqa: E731
        ratio = "—" if oc is None or os_ is None else f"{os_ / oc:.3f}"
        lines.append(f"| {op or mp} | {f(oc)} | {f(orr)} | {f(os_)} | {ratio} | {f(mc)} | {f(mr)} "
                     f"| {ocr if ocr is not None else '—'} / {ocs if ocs is not None else '—'} / "
                     f"{mcr if mcr is not None else '—'} |")
    return "\n".join(lines) + "\n"


def plot(doc, path):
    import matplotlib
    matplotlib.use("Agg")
    import matplotlib.pyplot as plt
    series = [("ours", "cold", "ours cold"), ("ours", "ram", "ours RAM hit"), ("ours", "ssd", "ours SSD restore"),
              ("mlxlm", "cold", "mlx_lm.server cold"), ("mlxlm", "ram", "mlx_lm.server RAM hit")]
    sizes = doc["sizes"]
    fig, ax = plt.subplots(figsize=(8, 4.5))
    width = 0.8 / len(series)
    for i, (e, ph, name) in enumerate(series):
        ys = [cell(doc, e, n, ph)[0] for n in sizes]
        if all(y is None for y in ys):
            continue
        xs = [k + (i - len(series) / 2 + 0.5) * width for k in range(len(sizes))]
        ax.bar([x for x, y in zip(xs, ys) if y is not None], [y for y in ys if y is not None], width, label=name)
    ax.set_xticks(range(len(sizes)))
    ax.set_xticklabels([f"~{n // 1024}k tokens" if n >= 1024 else str(n) for n in sizes])
    ax.set_yscale("log")
    ax.set_ylabel("time to first token (s, log scale)")
    ax.set_title(f"Prefix cache TTFT, {doc['model']} (2 shared cores, under contention)")
    ax.legend(fontsize=8)
    fig.tight_layout()
    fig.savefig(path, dpi=110)


if __name__ == "__main__":
    main()
