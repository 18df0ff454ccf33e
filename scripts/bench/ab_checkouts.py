#!/usr/bin/env python3
"""Two checkouts of mlx-ring served side by side: aggregate decode tok/s at given stream counts.

For a refactor that must not cost speed (before/after): starts the serve command of A's jars,
measures, stops it, then B, alternating A B B A ... for --rounds rounds, one server at a time.
Each level sends N streaming chat requests at once (distinct prompts, greedy, --max-tokens
each) and counts content tokens from first request to last token.

    scripts/bench/ab_checkouts.py --a /path/before --b /path/after [--streams 1,8]
        [--max-tokens 64] [--rounds 3] [--model models/smollm2-135m-instruct] [--flags "..."]

Prints per round and the median ratio B/A per level.
"""

import argparse
import json
import statistics
import sys
import threading
import time
import urllib.request
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
from serve_client import served  # noqa: E402

QUESTIONS = [
    "Tell me about the history of the bicycle.",
    "Explain how a refrigerator works.",
    "Describe a walk through a forest in autumn.",
    "What are the main ideas of stoic philosophy?",
    "Write a short story about a lighthouse keeper.",
    "How do volcanoes form?",
    "Explain the rules of chess briefly.",
    "Describe the life cycle of a butterfly.",
    "What makes a good cup of coffee?",
    "Explain how the internet routes a packet.",
    "Tell me about the moons of Jupiter.",
    "Describe the taste of a ripe mango.",
    "Why do cats purr?",
    "Explain photosynthesis to a child.",
    "What is the tallest mountain and how was it measured?",
    "Describe a busy train station at rush hour.",
]


def launcher(checkout):
    """The checkout's own jars, started as its mlx-ring script starts them (its set-up is not run:
    build each checkout's jars first, `mvn -q -B -DskipTests package`)."""
    root = Path(checkout).resolve()
    cp = "%s/ingress/target/ingress.jar:%s/ingress/target/lib/*" % (root, root)
    return ["/usr/lib/jvm/temurin-25-jdk-amd64/bin/java", "@%s/jvm.args" % root, "-Dmlxring.home=%s" % root,
            "-cp", cp, "dev.mlxring.ingress.cli.Main"]


def stream(base, question, max_tokens, out, i):
    body = {"model": "default_model", "messages": [{"role": "user", "content": question}], "max_tokens": max_tokens,
            "temperature": 0, "stream": True, "stream_options": {"include_usage": True}}
    req = urllib.request.Request(base + "/v1/chat/completions", json.dumps(body).encode(),
                                 {"Content-Type": "application/json"})
    tokens, last = 0, None
    with urllib.request.urlopen(req, timeout=1800) as resp:
        for raw in resp:
            line = raw.decode().strip()
            if not line.startswith("data:") or line[5:].strip() == "[DONE]":
                continue
            chunk = json.loads(line[5:])
            if chunk.get("usage"):
                tokens = chunk["usage"]["completion_tokens"]
            if chunk.get("choices"):
                last = time.monotonic()
    out[i] = (tokens, last)


def level(base, n, max_tokens):
    out = [None] * n
    start = time.monotonic()
    threads = [threading.Thread(target=stream, args=(base, QUESTIONS[i % len(QUESTIONS)], max_tokens, out, i))
               for i in range(n)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    total = sum(o[0] for o in out)
    end = max(o[1] for o in out)
    return total / (end - start)


def main(argv=None):
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--a", required=True, help="checkout A (e.g. before)")
    p.add_argument("--b", required=True, help="checkout B (e.g. after)")
    p.add_argument("--streams", default="1,8")
    p.add_argument("--max-tokens", type=int, default=64)
    p.add_argument("--rounds", type=int, default=3)
    p.add_argument("--model", default="models/smollm2-135m-instruct")
    p.add_argument("--flags", default="", help="extra serve flags for both")
    p.add_argument("--port", type=int, default=8392)
    a = p.parse_args(argv)
    levels = [int(x) for x in a.streams.split(",")]
    flags = a.flags.split()
    results = {"A": {n: [] for n in levels}, "B": {n: [] for n in levels}}
    for rnd in range(a.rounds):
        order = ["A", "B"] if rnd % 2 == 0 else ["B", "A"]
        for which in order:
            checkout = a.a if which == "A" else a.b
            with served(str(Path(checkout) / a.model), a.port, flags, launcher=launcher(checkout),
                        cwd=Path(checkout).resolve(), ready_s=600) as base:
                level(base, 1, 8)  # warm-up
                for n in levels:
                    tps = level(base, n, a.max_tokens)
                    results[which][n].append(tps)
                    print("round %d %s streams %d: %.1f tok/s" % (rnd + 1, which, n, tps), flush=True)
    for n in levels:
        ma, mb = statistics.median(results["A"][n]), statistics.median(results["B"][n])
        print("streams %d: A median %.1f (%s), B median %.1f (%s), B/A %.3f" % (
            n, ma, " ".join("%.1f" % x for x in results["A"][n]), mb,
            " ".join("%.1f" % x for x in results["B"][n]), mb / ma))


if __name__ == "__main__":
    main()
