#!/usr/bin/env python3
"""Spill throughput and decode while spilling: the SSD tier's write path under a serving load,
against the same load with the SSD tier off.

Usage (scripts/bench/prefix_cache.sh --spill wraps it):
    spill_load.py --model DIR [--prompt-tokens 2048] [--streams 4] [--stream-tokens 160]
                  [--runs 2] [--out build/bench/spill_load]

One `./mlx-ring serve` per measurement (RAM tier of 8 entries; with or without
--prompt-cache-dir), modes alternating off, on, on, off, ... (--runs pairs). Per server:
  1. warm-up, then a long prompt P (~--prompt-tokens) once (cold; now in the RAM tier);
  2. --streams decode streams start at once: streamed /v1/completions of short distinct
     prompts, --stream-tokens tokens each (EOS banned with logit_bias, temperature 0);
  3. while they run, one client sends P + a new short suffix, max_tokens 1, back to back: each
     is a RAM hit on P that finishes at once and publishes a snapshot of P's size — with the
     SSD tier on, each is a spill of that size (the bounded queue drops what it cannot take);
  4. when the streams end the spill client stops and the server gets SIGTERM (it drains the
     queue) and logs its spill totals: spills written, MB and spill-thread seconds.
Decode rate: per stream (completion_tokens - 1) / (last chunk - first chunk), summed over the
streams. The spill requests' own work (restoring P from RAM, capturing the snapshots) loads both
modes alike; the difference is the spill thread (encode, checksum, Chronicle Map writes).

Writes OUT.json (every measurement) and OUT.md (the table); prints the table.
"""

import argparse
import json
import os
import re
import shutil
import sys
import tempfile
import threading
import time
import urllib.request
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
from prefix_cache import ROOT, Ours, Text, post  # noqa: E402

# SmolLM2's tokenizer (the default model and the bench models): <|endoftext|> and <|im_end|>.
EOS_BAN = {"0": -100, "2": -100}


class Server(Ours):
    """Ours with a RAM tier of 8 entries; stop() also reads the spill totals the server logged.

    8: P's entry must survive the streams' own snapshots (one per stream at admission), or a
    spill request finds nothing and prefills P cold (its `cached` then reads 0)."""

    def __init__(self, model, cache_dir, log):
        super().__init__(model, cache_dir, log, ["--prompt-cache-size", "8"])

    def start(self):
        self.log_start = self.log.stat().st_size if self.log.exists() else 0
        super().start()

    def stop(self):
        super().stop()
        with open(self.log) as f:
            f.seek(self.log_start)
            text = f.read()
        m = re.search(r"prompt cache: (\d+) spills written \(([\d.]+) MB in ([\d.]+) s of spill-thread time, "
                      r"([\d.]+) MB/s\), (\d+) dropped", text)
        if m is None:
            return None
        return {"spills": int(m.group(1)), "mb": float(m.group(2)), "spill_s": float(m.group(3)),
                "mb_per_s": float(m.group(4)), "dropped": int(m.group(5))}


def stream(base, prompt, max_tokens, out):
    body = {"prompt": prompt, "max_tokens": max_tokens, "temperature": 0, "stream": True,
            "logit_bias": EOS_BAN, "stream_options": {"include_usage": True}}
    req = urllib.request.Request(base + "/v1/completions", data=json.dumps(body).encode(),
                                 headers={"Content-Type": "application/json"})
    times, usage = [], None
    with urllib.request.urlopen(req, timeout=3600) as r:
        for raw in r:
            line = raw.decode().strip()
            if not line.startswith("data: ") or line == "data: [DONE]":
                continue
            doc = json.loads(line[6:])
            if doc.get("usage"):
                usage = doc["usage"]
            if doc.get("choices"):
                times.append(time.perf_counter())
    out.update({"chunks": len(times), "first": times[0], "last": times[-1],
                "completion_tokens": usage["completion_tokens"] if usage else len(times)})


def measure(model, mode, prompt, args, text, work, log):
    cache_dir = work / f"cache-{time.time_ns()}" if mode == "on" else None
    s = Server(model, cache_dir, log)
    s.start()
    try:
        post(s.base, {"prompt": text.make(64, 999_999), "max_tokens": 1, "temperature": 0})
        post(s.base, {"prompt": prompt, "max_tokens": 1, "temperature": 0})
        results = [{} for _ in range(args.streams)]
        threads = [threading.Thread(target=stream, args=(s.base, text.make(24, 5000 + i), args.stream_tokens, r))
                   for i, r in enumerate(results)]
        spills = []
        done = threading.Event()

        def spill_client():
            k = 0
            while not done.is_set():
                dt, _, cached = post(s.base, {"prompt": prompt + f" {text.make(6, 70_000 + k)}", "max_tokens": 1,
                                              "temperature": 0})
                spills.append({"seconds": dt, "cached": cached, "at": time.perf_counter()})
                k += 1

        t0 = time.perf_counter()
        for t in threads:
            t.start()
        spiller = threading.Thread(target=spill_client)
        spiller.start()
        for t in threads:
            t.join()
        t1 = time.perf_counter()
        done.set()
        spiller.join()
    finally:
        stats = s.stop()
    rates = [(r["completion_tokens"] - 1) / (r["last"] - r["first"]) for r in results]
    window = [x for x in spills if x["at"] <= t1]
    return {"mode": mode, "decode_tok_s": sum(rates), "per_stream_tok_s": rates, "window_s": t1 - t0,
            "spill_requests": len(window), "spill_request_s": [x["seconds"] for x in window],
            "cached": sorted({x["cached"] for x in window}), "server": stats, "loadavg": os.getloadavg()}


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--model", default=str(ROOT / "models/smollm2-135m-instruct"))
    ap.add_argument("--prompt-tokens", type=int, default=2048)
    ap.add_argument("--streams", type=int, default=4)
    ap.add_argument("--stream-tokens", type=int, default=160)
    ap.add_argument("--runs", type=int, default=2, help="pairs of measurements (off/on, then on/off, ...)")
    ap.add_argument("--out", default="build/bench/spill_load")
    args = ap.parse_args()
    out = Path(args.out)
    out.parent.mkdir(parents=True, exist_ok=True)
    text = Text(args.model)
    prompt = text.make(args.prompt_tokens, 4242)
    work = Path(tempfile.mkdtemp(prefix="mlxring-spill-bench-"))
    log = out.with_suffix(".log")
    rows = []
    started = time.strftime("%Y-%m-%d %H:%M UTC", time.gmtime())
    try:
        for r in range(args.runs):
            for mode in (("off", "on") if r % 2 == 0 else ("on", "off")):
                row = measure(args.model, mode, prompt, args, text, work, log)
                row["run"] = r
                rows.append(row)
                srv = row["server"] or {}
                print(f"[{mode}] run {r}: decode {row['decode_tok_s']:.1f} tok/s over {row['window_s']:.1f} s, "
                      f"{row['spill_requests']} spill requests (cached {row['cached']}), server: {srv}, "
                      f"load {row['loadavg'][0]:.1f}", flush=True)
                out.with_suffix(".partial.json").write_text(json.dumps(rows, indent=1) + "\n")
    finally:
        shutil.rmtree(work, ignore_errors=True)
    doc = {"model": Path(args.model).name, "prompt_tokens": args.prompt_tokens, "streams": args.streams,
           "stream_tokens": args.stream_tokens, "started": started, "rows": rows}
    out.with_suffix(".json").write_text(json.dumps(doc, indent=1) + "\n")
    table = report(doc)
    out.with_suffix(".md").write_text(table)
    print(table)


def report(doc):
    lines = [f"Model `{doc['model']}`, P ~{doc['prompt_tokens']} tokens, {doc['streams']} decode streams x "
             f"{doc['stream_tokens']} tokens, started {doc['started']}.", "",
             "| run | SSD tier | decode tok/s (all streams) | spill requests | spills written / dropped "
             "| spilled MB | spill MB/s (spill-thread time) | load avg |",
             "|---:|---|---:|---:|---:|---:|---:|---:|"]
    for r in doc["rows"]:
        s = r["server"]
        spilled = "—" if s is None else f"{s['spills']} / {s['dropped']}"
        mb = "—" if s is None else f"{s['mb']:.0f}"
        rate = "—" if s is None else f"{s['mb_per_s']:.0f}"
        lines.append(f"| {r['run']} | {r['mode']} | {r['decode_tok_s']:.1f} | {r['spill_requests']} | {spilled} "
                     f"| {mb} | {rate} | {r['loadavg'][0]:.1f} |")
    off = [r["decode_tok_s"] for r in doc["rows"] if r["mode"] == "off"]
    on = [r["decode_tok_s"] for r in doc["rows"] if r["mode"] == "on"]
    if off and on:
        lines += ["", f"Mean decode tok/s: SSD off {sum(off) / len(off):.1f}, on {sum(on) / len(on):.1f} "
                      f"(on / off {sum(on) / len(on) / (sum(off) / len(off)):.2f})."]
    return "\n".join(lines) + "\n"


if __name__ == "__main__":
    main()
