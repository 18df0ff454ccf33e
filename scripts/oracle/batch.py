#!/usr/bin/env python3
"""Live mlx-lm continuous-batching oracle: mlx_lm.generate.BatchGenerator under a scripted
arrival schedule.

Usage:
    batch.py --model DIR --script FILE.json [--out FILE.json] [--sharded]

With --sharded (run under `mlx.launch -n N`) the model is this rank's part, loaded by mlx-lm's
sharded_load (common.sharded_model); every rank runs the schedule, rank 0 writes the document.

FILE.json:
{
  "prefill_step_size": S, "prefill_batch_size": P, "completion_batch_size": C,
  "max_kv_size": M,             # optional: BatchGenerator(max_kv_size=M), every row's caches
                                 # make_prompt_cache(model, M)
  "short_prompts_first": bool,  # optional: mlx-ring's schedule that parks a long prompt's batch
                                 # for rows whose prompts fit in one chunk (see below)
  "decode_only": [step, ...],   # optional: these next() calls are decode-only units: the
                                 # generation batch's next() alone, as BatchGenerator._next runs it
  "rows": [
    {"at": step,                 # inserted just before the step-th next() call (0-based)
     "prompt": [token ids], "max_tokens": N,
     "stop": [token ids],        # one-token stop sequences (default: none)
     "remove_at": step,          # optional: gen.remove([uid]) just before that next() call
                                 # (after that step's inserts): a cancelled row
     "history": H,               # optional: the first H prompt tokens are already in the row's
                                 # cache (a restored prefix, as mlx_lm.server inserts one): one
                                 # model call over them into make_prompt_cache(model), then
                                 # insert(prompt[H:], caches=[cache], all_tokens=[prompt[:H]])
     "sampling": {               # optional; absent or temp 0 = the shared greedy sampler
        "temp", "top_p", "min_p", "min_tokens_to_keep", "top_k",
        "seed",                  # the row's own key stream: mx.random.key(seed)
        "logit_bias": {"id": bias}, "repetition_penalty", "repetition_context_size",
        "presence_penalty", "frequency_penalty"},
     "mask": {"modulus", ...},   # optional: a scripted token constraint (scripted_mask.py) after
                                 # the row's processors; a row whose constraint runs dry ends at
                                 # that step without a token (reported "error", then gen.remove)
     "llguidance": {"kind", ...}}  # optional, instead of "mask": llguidance's own matcher
                                 # (llg_processor.py) after the row's processors; give the row its
                                 # EOS id in "stop" so that it ends there
  ]
}

This builds mlx_lm.generate.BatchGenerator(model, prefill_step_size=S, prefill_batch_size=P,
completion_batch_size=C, max_kv_size=M) (its default greedy sampler; M from the script's optional
"max_kv_size", else None) on the model loaded with
mlx_lm.utils.load_model(Path(DIR)), and then, for step = 0, 1, ...: inserts the rows whose "at"
is that step (one insert() call per row, in script order, with max_tokens, stop_sequences,
samplers and logits_processors for that row), removes the rows whose "remove_at" is that step
(gen.remove([uid])), calls next() once and records every generation response; it stops when
every row has finished or been removed.

mlx-ring's schedule departures, reproduced with mlx-lm's own batch objects so that every forward
is still mlx-lm's (the schedule is ours, the arithmetic theirs):
- decode_only: the step's call runs gen._generation_batch.next() (and BatchGenerator's clear_cache
  every 512 generation steps) instead of gen.next(): no admission, no split, no prompt chunk.
- short_prompts_first: before a full unit, (1) a parked prompt batch resumes once the current one
  is empty; (2) while one is parked, the unit admits nothing; (3) otherwise, when the current
  prompt batch has read a chunk since it became current, one of its rows has more than S prompt
  tokens left to read (sum of its segments - 1) and the queue's head needs at most S, the prompt
  batch (with its _currently_processing) is set aside for an empty one, and the unit admits only
  the queue's leading rows that need at most S. The rows it may not admit are hidden from
  gen._unprocessed_sequences for that call and put back behind the others after it.

Per-row sampling: a row with temp > 0 gets mlx-lm's own make_sampler(...) wrapped so that it
draws from its own key: mx.random.state[0] is set to the row's key (first key(seed)) before the
call and the key it leaves is kept for the row's next call (the per-row key stream mlx-ring gives a seeded row; the
sampler's arithmetic is mlx-lm's). Processors are mlx-lm's make_logits_processors(...).

Output (to --out, or stdout):
{
  "mlx_version", "mlx_lm_version", "model",
  "uids": [uid of row i],
  "steps": [[{"uid", "token", "finish": null|"length"|"stop"|"error",
              "logprobs_sha256": hex, "dtype": str}, ...], ...],  # one list per next() call
                              # (an "error" entry: token -1, logprobs_sha256 "-", dtype null)
  "parked": [rows in a parked prompt batch after each call]     # short_prompts_first's state
}
logprobs_sha256 is the sha256 of the response's logprobs vector's raw little-endian bytes.
"""

import argparse
import hashlib
import json
from pathlib import Path

import mlx.core as mx
from collections import deque

from mlx_lm.generate import BatchGenerator, PromptProcessingBatch, StopSequences
from mlx_lm.models.cache import make_prompt_cache
from mlx_lm.sample_utils import make_logits_processors, make_sampler
from mlx_lm.utils import load_model

from common import apply_adapter, dtype_name, raw_bytes, sharded_model, versions, write_json, writes_output
from llg_processor import LlgProcessor
from scripted_mask import ScriptedMask


def _as_seed(key):
    """The int whose mx.random.seed() installs exactly this key (key(s) = [s >> 32, s & 0xffffffff])."""
    hi, lo = (int(w) for w in key.tolist())
    return (hi << 32) | lo


def keyed_sampler(sampler, seed):
    """mlx-lm's sampler, drawing from the row's own key instead of the shared global one:
    mx.random.state cannot be assigned, so the row's key is installed with mx.random.seed (which
    sets state[0] = key(s)) and the process key is put back the same way afterwards."""
    holder = {"seed": seed}

    def call(logprobs):
        saved = _as_seed(mx.random.state[0])
        mx.random.seed(holder["seed"])
        try:
            y = sampler(logprobs)
            holder["seed"] = _as_seed(mx.random.state[0])
        finally:
            mx.random.seed(saved)
        return y

    return call


def row_sampling(spec):
    """(sampler or None, processors) for one row's "sampling" object."""
    spec = spec or {}
    sampler = None
    if spec.get("temp", 0.0) > 0:
        if "seed" not in spec:
            raise ValueError("a sampling row needs a seed (its own key stream)")
        sampler = keyed_sampler(
            make_sampler(
                spec["temp"],
                spec.get("top_p", 1.0),
                spec.get("min_p", 0.0),
                spec.get("min_tokens_to_keep", 1),
                top_k=spec.get("top_k", 0),
            ),
            spec["seed"],
        )
    bias = spec.get("logit_bias")
    processors = make_logits_processors(
        {int(k): float(v) for k, v in bias.items()} if bias else None,
        spec.get("repetition_penalty"),
        spec.get("repetition_context_size", 20),
        spec.get("presence_penalty"),
        20,
        spec.get("frequency_penalty"),
        20,
    )
    return sampler, processors


def _left_to_read(segments):
    """Prompt tokens a row still has to prefill: all but the last, which the first step feeds."""
    return sum(len(s) for s in segments) - 1


class Schedule:
    """mlx-ring's departures from BatchGenerator's unit (decode-only units, short prompts first)."""

    def __init__(self, gen, step_size, short_first):
        self.gen = gen
        self.step_size = step_size
        self.short_first = short_first
        self.parked = None
        self.chunks_since_current = 0

    def decode_only(self):
        gen = self.gen
        with mx.stream(gen.stream):
            if len(gen._generation_batch) == 0:
                return []
            responses = gen._generation_batch.next()
            gen._counters.generation_steps += 1
            if gen._counters.generation_steps % 512 == 0:
                mx.clear_cache()
            return responses

    def _arrange(self):
        """How many queued rows this unit may admit (None: BatchGenerator's limits only)."""
        gen = self.gen
        if self.parked is not None and len(self.parked[0]) == 0:
            self.parked = None
        if self.parked is not None and len(gen._prompt_batch) == 0:
            gen._prompt_batch, gen._currently_processing = self.parked
            self.parked = None
            self.chunks_since_current = 0
        if self.parked is not None:
            return 0
        if (len(gen._prompt_batch) == 0 or self.chunks_since_current == 0 or not gen._unprocessed_sequences
                or len(gen._generation_batch) >= gen.completion_batch_size):
            return None
        long_row = any(_left_to_read(p[0]) > self.step_size for p in gen._currently_processing)
        short = 0
        for seq in gen._unprocessed_sequences:
            if _left_to_read(seq[1]) > self.step_size:
                break
            short += 1
        if not long_row or short == 0:
            return None
        self.parked = (gen._prompt_batch, gen._currently_processing)
        gen._prompt_batch = PromptProcessingBatch.empty(gen.model, gen.sampler, prefill_step_size=self.step_size)
        gen._currently_processing = []
        self.chunks_since_current = 0
        return short

    def full(self):
        gen = self.gen
        admissible = self._arrange() if self.short_first else None
        hidden = None
        if admissible is not None:
            queue = list(gen._unprocessed_sequences)
            gen._unprocessed_sequences = deque(queue[:admissible])
            hidden = queue[admissible:]
        before = gen._counters.prompt_tokens
        _, responses = gen.next()
        if hidden is not None:
            gen._unprocessed_sequences.extend(hidden)
        if gen._counters.prompt_tokens > before:
            self.chunks_since_current += 1
        return responses


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--model", required=True)
    ap.add_argument("--script", required=True)
    ap.add_argument("--out", default=None)
    ap.add_argument("--sharded", action="store_true")
    ap.add_argument("--adapter", default=None, help="an adapter folder, applied as mlx_lm.utils.load applies adapter_path")
    args = ap.parse_args(argv)

    with open(args.script) as f:
        script = json.load(f)
    model = sharded_model(args.model) if args.sharded else load_model(Path(args.model))[0]
    apply_adapter(model, args.adapter)
    gen = BatchGenerator(
        model,
        prefill_step_size=script["prefill_step_size"],
        prefill_batch_size=script["prefill_batch_size"],
        completion_batch_size=script["completion_batch_size"],
        max_kv_size=script.get("max_kv_size"),
    )
    schedule = Schedule(gen, script["prefill_step_size"], script.get("short_prompts_first", False))
    parked = []
    decode_only = set(script.get("decode_only", []))
    rows = script["rows"]
    uids = [None] * len(rows)
    masks = {}
    produced = {}
    finished = set()
    steps = []
    step = 0
    while True:
        for i, row in enumerate(rows):
            if row["at"] == step:
                sampler, processors = row_sampling(row.get("sampling"))
                mask = ScriptedMask(row["mask"]) if row.get("mask") else None
                if mask is not None:
                    processors = list(processors) + [mask]
                if row.get("llguidance"):
                    if mask is not None:
                        raise ValueError("a row has either a mask or an llguidance constraint")
                    processors = list(processors) + [LlgProcessor(row["llguidance"])]
                stop = StopSequences([(t,) for t in row.get("stop", [])] or None)
                h = row.get("history", 0)
                cache = None
                if h:
                    cache = make_prompt_cache(model)
                    model(mx.array(row["prompt"][:h])[None], cache=cache)
                    mx.eval([c.state for c in cache])
                (uids[i],) = gen.insert(
                    [row["prompt"][h:]],
                    max_tokens=[row["max_tokens"]],
                    caches=[cache],
                    all_tokens=[row["prompt"][:h]],
                    samplers=[sampler],
                    logits_processors=[processors],
                    stop_sequences=[stop],
                )
                masks[uids[i]] = mask
                produced[uids[i]] = 0
        for i, row in enumerate(rows):
            if row.get("remove_at") == step and uids[i] not in finished:
                gen.remove([uids[i]])
                finished.add(uids[i])
        if len(finished) == len(rows) and all(u is not None for u in uids):
            break
        if step > 100000:
            raise RuntimeError("the script does not finish")
        responses = schedule.decode_only() if step in decode_only else schedule.full()
        parked.append(0 if schedule.parked is None else len(schedule.parked[0]))
        out = []
        failed = []
        for r in responses:
            mask = masks.get(r.uid)
            if mask is not None and mask.failed_at(produced[r.uid]):
                out.append({"uid": r.uid, "token": -1, "finish": "error", "logprobs_sha256": "-", "dtype": None})
                if r.finish_reason is None:
                    failed.append(r.uid)
                finished.add(r.uid)
                continue
            produced[r.uid] += 1
            out.append({
                "uid": r.uid,
                "token": int(r.token),
                "finish": r.finish_reason,
                "logprobs_sha256": hashlib.sha256(raw_bytes(r.logprobs)).hexdigest(),
                "dtype": dtype_name(r.logprobs.dtype),
            })
            if r.finish_reason is not None:
                finished.add(r.uid)
        if failed:
            gen.remove(failed)
        steps.append(out)
        step += 1
    gen.close()
    if not writes_output(args.sharded):
        return
    write_json({**versions(), "model": args.model, "uids": uids, "steps": steps, "parked": parked}, args.out)


if __name__ == "__main__":
    main()
