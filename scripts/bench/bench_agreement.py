#!/usr/bin/env python3
"""Does `mlx-ring bench serve` measure what an independent client measures on the same server?

Usage: bench_agreement.py --base URL [--model-id ID] [--concurrency 4] [--num-prompts 16]
                          [--max-tokens 32] [--rounds 2] [--out DIR]

--model-id is the `model` both clients send (default `default_model`, which ours and
mlx_lm.server both take as the model they serve).

Writes DIR/prompts.jsonl (random-word prompts, one per line, each with its max_tokens), then,
round by round and alternating who goes first (ABBA), runs
  ./mlx-ring bench serve --target t=URL --max-concurrency C --workload jsonl:DIR/prompts.jsonl ...
and this script's own client: C Python threads, each POSTing the next prompt as a streaming chat
completion (urllib, one connection per request), timing the first content chunk and reading the
usage chunk. Both report aggregate output tok/s (usage completion tokens / wall time of the phase)
and TTFT p50. Prints one JSON object: each round's pair, the medians and their ratios, and
whether they agree (tok/s within 10%, TTFT p50 within 15%). Exit 0 when they agree, 1 otherwise.
"""

import argparse
import json
import os
import random
import statistics
import subprocess
import threading
import time
from pathlib import Path

from stream_chat import stream_chat, words

ROOT = Path(__file__).resolve().parents[2]


def prompts(path, n, max_tokens, seed=7):
    rng = random.Random(seed)
    with open(path, "w") as f:
        for i in range(n):
            text = "Request %d: %s." % (i, words(rng, 60))
            f.write(json.dumps({"prompt": text, "max_tokens": max_tokens}) + "\n")


def own_client(base, lines, concurrency, model_id):
    queue = list(lines)
    lock = threading.Lock()
    ttfts, tokens = [], []

    def worker():
        while True:
            with lock:
                if not queue:
                    return
                item = queue.pop(0)
            ttft_ms, _, usage = stream_chat(base, model_id, [{"role": "user", "content": item["prompt"]}],
                                            item["max_tokens"], timeout_s=600)
            used = usage["completion_tokens"] if usage else 0
            with lock:
                ttfts.append(ttft_ms)
                tokens.append(used)

    start = time.monotonic()
    threads = [threading.Thread(target=worker) for _ in range(concurrency)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    wall = time.monotonic() - start
    return {"output_throughput": sum(tokens) / wall, "median_ttft_ms": statistics.median(ttfts),
            "completed": len(tokens)}


def bench(base, prompts_file, n, concurrency, out, model_id):
    cmd = [str(ROOT / "mlx-ring"), "bench", "serve", "--target", "t=" + base, "--model", "t=" + model_id,
           "--max-concurrency", str(concurrency),
           "--workload", "jsonl:" + str(prompts_file), "--num-prompts", str(n), "--warmup", "0", "--no-plots",
           "--out", str(out)]
    subprocess.run(cmd, check=True, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    row = json.loads((out / "results.json").read_text())["results"][0]
    return {k: row[k] for k in ("output_throughput", "median_ttft_ms", "completed")}


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--base", required=True)
    ap.add_argument("--model-id", default="default_model")
    ap.add_argument("--concurrency", type=int, default=4)
    ap.add_argument("--num-prompts", type=int, default=16)
    ap.add_argument("--max-tokens", type=int, default=32)
    ap.add_argument("--rounds", type=int, default=2)
    ap.add_argument("--out", default=str(ROOT / "build" / "bench-agreement"))
    a = ap.parse_args()
    out = Path(a.out)
    out.mkdir(parents=True, exist_ok=True)
    pf = out / "prompts.jsonl"
    prompts(pf, a.num_prompts, a.max_tokens)
    lines = [json.loads(x) for x in pf.read_text().splitlines()]
    own_client(a.base, lines[:2], 1, a.model_id)  # warm-up, unrecorded
    rounds = []
    for r in range(a.rounds):
        pair = {}
        order = ("bench", "own") if r % 2 == 0 else ("own", "bench")
        for who in order:
            load_before = os.getloadavg()[0]
            if who == "bench":
                pair["bench"] = bench(a.base, pf, a.num_prompts, a.concurrency, out / ("bench-%d" % r), a.model_id)
            else:
                pair["own"] = own_client(a.base, lines, a.concurrency, a.model_id)
            pair[who]["load_1m"] = [load_before, os.getloadavg()[0]]
        rounds.append(pair)
    med = {who: {k: statistics.median(p[who][k] for p in rounds) for k in ("output_throughput", "median_ttft_ms")}
           for who in ("bench", "own")}
    tps_ratio = med["bench"]["output_throughput"] / med["own"]["output_throughput"]
    ttft_ratio = med["bench"]["median_ttft_ms"] / med["own"]["median_ttft_ms"]
    agree = abs(tps_ratio - 1) <= 0.10 and abs(ttft_ratio - 1) <= 0.15
    print(json.dumps({"base": a.base, "concurrency": a.concurrency, "num_prompts": a.num_prompts,
                      "max_tokens": a.max_tokens, "rounds": rounds, "median": med, "tps_ratio": tps_ratio, "ttft_ratio": ttft_ratio,
                      "agree": agree}, indent=1))
    raise SystemExit(0 if agree else 1)


if __name__ == "__main__":
    main()
