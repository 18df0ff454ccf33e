#!/usr/bin/env python3
"""mlx-lm side of the B=1 prefill/decode benchmark.

Usage:
    mlxlm_bench.py --model DIR --prompt-tokens N --gen-tokens M --runs K --seed S
                   [--prompt-file FILE.json] [--warmup W] [--prefill-step-size P] [--serve]

Loads DIR with mlx_lm.utils.load_model (works for tokenizer-less directories),
builds the prompt (N token ids) and runs mlx-lm's own
    mlx_lm.generate.generate_step(mx.array(prompt), model, max_tokens=M,
                                  prefill_step_size=P)
with its default greedy sampler (argmax), its generation_stream and a fresh
prompt cache, consuming it exactly like mlx_lm.generate.stream_generate does
and with stream_generate's timing definitions (the detokenizer and the EOS
check are left out: no tokenizer, and both engines must produce exactly M
tokens):
    tic = perf_counter(); for n, (token, _) in enumerate(generate_step(...)):
        n == 0:     prompt_time = perf_counter() - tic; tic = perf_counter()
        n + 1 == M: stop
    prompt_tps     = N / prompt_time        (time to the first token)
    generation_tps = M / (perf_counter() - tic)  (first token -> last token)
The peak memory counter is reset before each run (mx.reset_peak_memory) and
read after it (mx.get_peak_memory, bytes). After each run the generator is
closed and the stream synchronized, outside the timed region, so the one
decode step generate_step has already queued does not spill into whatever
runs next.

The prompt: with --prompt-file, the ids in that JSON file ({"prompt": [...]}
or a bare list; must hold N ids); otherwise N ids from splitmix64(seed S):
id_i = splitmix64_next() mod vocab_size (unsigned) -- the generator the Java
benchmark uses too.

W warm-up runs (default 1, not reported) come first. Output, one JSON object
per line on stdout: first a header
    {"kind": "header", "mlx_version", "mlx_lm_version", "model", "prompt": [ids], ...}
then per run
    {"kind": "run", "run": i, "prompt_tokens", "generation_tokens", "prompt_tps",
     "generation_tps", "prompt_time_s", "generation_time_s", "peak_memory", "tokens": [ids]}
Without --serve the K runs follow each other. With --serve the script prints
the header after its warm-up and then does one run per line "run" read from
stdin (until "quit" or EOF), so a driver can alternate it with another engine
while the model stays loaded.
"""

import argparse
import json
import sys
import time
from pathlib import Path

import mlx.core as mx

import mlx_lm
from mlx_lm.generate import generate_step
from mlx_lm.utils import load_model

MASK64 = (1 << 64) - 1


def splitmix64_prompt(seed, n, vocab):
    state = seed & MASK64
    out = []
    for _ in range(n):
        state = (state + 0x9E3779B97F4A7C15) & MASK64
        z = state
        z = ((z ^ (z >> 30)) * 0xBF58476D1CE4E5B9) & MASK64
        z = ((z ^ (z >> 27)) * 0x94D049BB133111EB) & MASK64
        z = z ^ (z >> 31)
        out.append(z % vocab)
    return out


def one_run(model, prompt_ids, max_tokens, prefill_step_size):
    prompt = mx.array(prompt_ids)
    mx.reset_peak_memory()
    tokens = []
    gen = generate_step(prompt, model, max_tokens=max_tokens, prefill_step_size=prefill_step_size)
    # --- stream_generate's timing ---
    tic = time.perf_counter()
    prompt_time = 0.0
    for n, (token, _logprobs) in enumerate(gen):
        if n == 0:
            prompt_time = time.perf_counter() - tic
            tic = time.perf_counter()
        tokens.append(token)
        if (n + 1) == max_tokens:
            break
    generation_time = time.perf_counter() - tic
    # --- end of the timed region ---
    gen.close()
    mx.synchronize()
    peak = mx.get_peak_memory()
    return {
        "kind": "run",
        "prompt_tokens": len(prompt_ids),
        "generation_tokens": len(tokens),
        "prompt_tps": len(prompt_ids) / prompt_time,
        "generation_tps": len(tokens) / generation_time,
        "prompt_time_s": prompt_time,
        "generation_time_s": generation_time,
        "peak_memory": int(peak),
        "tokens": [int(t) for t in tokens],
    }


def emit(obj):
    sys.stdout.write(json.dumps(obj, separators=(",", ":")) + "\n")
    sys.stdout.flush()


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--model", required=True)
    ap.add_argument("--prompt-tokens", type=int, required=True)
    ap.add_argument("--gen-tokens", type=int, required=True)
    ap.add_argument("--runs", type=int, default=5)
    ap.add_argument("--seed", type=int, default=42)
    ap.add_argument("--prompt-file", default=None)
    ap.add_argument("--warmup", type=int, default=1)
    ap.add_argument("--prefill-step-size", type=int, default=2048)
    ap.add_argument("--serve", action="store_true", help="one run per stdin line 'run'")
    args = ap.parse_args(argv)
    if args.gen_tokens < 2:
        ap.error("--gen-tokens must be >= 2 (generation tok/s needs a first and a last token)")
    if args.prompt_tokens < 1:
        ap.error("--prompt-tokens must be >= 1")

    t0 = time.perf_counter()
    model, config = load_model(Path(args.model))
    load_s = time.perf_counter() - t0
    vocab = int(config["vocab_size"])

    if args.prompt_file:
        doc = json.loads(Path(args.prompt_file).read_text())
        prompt_ids = [int(t) for t in (doc["prompt"] if isinstance(doc, dict) else doc)]
        if len(prompt_ids) != args.prompt_tokens:
            raise SystemExit(f"{args.prompt_file} holds {len(prompt_ids)} ids, --prompt-tokens is {args.prompt_tokens}")
    else:
        prompt_ids = splitmix64_prompt(args.seed, args.prompt_tokens, vocab)
    bad = [t for t in prompt_ids if not 0 <= t < vocab]
    if bad:
        raise SystemExit(f"prompt ids outside [0, {vocab}): {bad[:5]}")

    for _ in range(args.warmup):
        one_run(model, prompt_ids, args.gen_tokens, args.prefill_step_size)

    emit({
        "kind": "header",
        "mlx_version": mx.__version__,
        "mlx_lm_version": mlx_lm.__version__,
        "python_version": sys.version.split()[0],
        "model": args.model,
        "vocab_size": vocab,
        "load_s": load_s,
        "warmup": args.warmup,
        "prefill_step_size": args.prefill_step_size,
        "prompt": prompt_ids,
    })

    if args.serve:
        i = 0
        for line in sys.stdin:
            cmd = line.strip()
            if cmd == "quit":
                break
            if cmd != "run":
                raise SystemExit(f"unknown command {cmd!r} (expected 'run' or 'quit')")
            r = one_run(model, prompt_ids, args.gen_tokens, args.prefill_step_size)
            r["run"] = i
            emit(r)
            i += 1
    else:
        for i in range(args.runs):
            r = one_run(model, prompt_ids, args.gen_tokens, args.prefill_step_size)
            r["run"] = i
            emit(r)


if __name__ == "__main__":
    main()
