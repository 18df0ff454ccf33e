"""How two loaded models share the cores: one `serve` with two pinned copies of a model (`--models`
FILE naming the same folder twice, so each has its own engine pipeline, exec thread and batch),
and N concurrent streaming chat requests to the first alone against N to each of the two at once,
phase by phase, the order reversed every other round. Aggregate tok/s = content events / phase wall
time, per model and together.

    .venv/bin/python scripts/bench/two_models.py [--streams 4] [--rounds 3] [--max-tokens 64]
                                                 [--model models/smollm2-135m-instruct] [--port 18191]

Prints one line per phase and a summary: together ÷ alone for the total (how much the second
model's rows add) and for each model (what each keeps of the cores).
"""

import argparse
import json
import os
import random
import statistics
import subprocess
import sys
import tempfile
import threading
import time
import urllib.request

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from stream_chat import stream_chat, words  # noqa: E402

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))


def wait_up(base, proc, timeout_s=300):
    end = time.monotonic() + timeout_s
    while time.monotonic() < end:
        if proc.poll() is not None:
            sys.exit("two_models: the server exited (exit code %s)" % proc.returncode)
        try:
            with urllib.request.urlopen(base + "/health", timeout=2):
                return
        except OSError:
            time.sleep(0.5)
    sys.exit("two_models: the server did not come up in %d s" % timeout_s)


def phase(base, models, streams, max_tokens, rng):
    """streams concurrent requests to each of models at once: {model: content events}, wall s."""
    events = {m: 0 for m in models}
    lock = threading.Lock()
    errors = []

    def one(model, prompt):
        try:
            _, content, usage = stream_chat(base, model, [{"role": "user", "content": prompt}], max_tokens)
            with lock:
                events[model] += usage["completion_tokens"] if usage else len(content)
        except Exception as e:  # noqa: BLE001 - reported below
            errors.append("%s: %s" % (model, e))

    threads = [threading.Thread(target=one, args=(m, "Tell me about " + words(rng, 40)))
               for m in models for _ in range(streams)]
    start = time.monotonic()
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    wall = time.monotonic() - start
    if errors:
        sys.exit("two_models: %d request(s) failed: %s" % (len(errors), errors[0]))
    return events, wall


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--model", default="models/smollm2-135m-instruct")
    ap.add_argument("--streams", type=int, default=4)
    ap.add_argument("--rounds", type=int, default=3)
    ap.add_argument("--max-tokens", type=int, default=64)
    ap.add_argument("--port", type=int, default=18191)
    a = ap.parse_args()
    model_dir = os.path.abspath(os.path.join(ROOT, a.model))
    with tempfile.TemporaryDirectory() as tmp:
        spec = os.path.join(tmp, "models.json")
        with open(spec, "w") as f:
            json.dump({"a": {"path": model_dir, "pinned": True}, "b": {"path": model_dir, "pinned": True}}, f)
        log = open(os.path.join(ROOT, "build", "bench", "two-models-server.log"), "w")
        proc = subprocess.Popen([os.path.join(ROOT, "mlx-ring"), "serve", "--model", model_dir, "--models", spec,
                                 "--port", str(a.port)], cwd=ROOT, stdout=log, stderr=subprocess.STDOUT)
        base = "http://127.0.0.1:%d" % a.port
        try:
            wait_up(base, proc)
            rng = random.Random(7)
            for m in ("a", "b"):  # warm-up, not recorded
                phase(base, [m], 1, 8, rng)
            alone, together, alone_a, tog_a, tog_b = [], [], [], [], []
            print("load average at start: %.2f" % os.getloadavg()[0])
            for r in range(a.rounds):
                order = [("alone", ["a"]), ("together", ["a", "b"])]
                if r % 2:
                    order.reverse()
                for name, models in order:
                    events, wall = phase(base, models, a.streams, a.max_tokens, rng)
                    per = {m: events[m] / wall for m in models}
                    total = sum(per.values())
                    print("round %d, %-8s: %s, total %.1f tok/s (%.1f s)" % (
                        r + 1, name, ", ".join("%s %.1f" % (m, v) for m, v in per.items()), total, wall))
                    if name == "alone":
                        alone.append(total)
                        alone_a.append(per["a"])
                    else:
                        together.append(total)
                        tog_a.append(per["a"])
                        tog_b.append(per["b"])
            med = statistics.median
            print("load average at end: %.2f" % os.getloadavg()[0])
            print("median tok/s: one model %d streams %.1f | two models %d streams each: total %.1f "
                  "(a %.1f, b %.1f) | together / alone: total %.2f, each %.2f / %.2f" % (
                      a.streams, med(alone), a.streams, med(together), med(tog_a), med(tog_b),
                      med(together) / med(alone), med(tog_a) / med(alone_a), med(tog_b) / med(alone_a)))
        finally:
            proc.terminate()
            proc.wait(timeout=60)


if __name__ == "__main__":
    main()
