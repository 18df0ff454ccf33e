#!/usr/bin/env python3
"""Live mlx_lm.server oracle for prompt segments: its batched loop's prefix-cache handling.

Usage:
    prompt_segments.py --model DIR --script FILE.json [--out FILE.json]
    prompt_segments.py --model DIR --tokenize FILE.json [--out FILE.json]

--tokenize FILE.json: a JSON list of cases {"messages": [...], "tools": [...]?,
"chat_template_kwargs": {...}?}; each is split by mlx_lm.server's own
ResponseGenerator._tokenize (called on a stand-in for the generator that holds only what it reads:
no processor, empty --chat-template-args). Output {"cases": [{"prompt": [int],
"segments": [[length, type], ...]}]}. Only the tokenizer is loaded (DIR needs no weights).

--script FILE.json:
{"prefill_step_size": S, "prefill_batch_size": P, "completion_batch_size": C,
 "prompt_cache_size": N,                     # LRUPromptCache(max_size=N)
 "requests": [{"at": step,                   # arrives just before the step-th next() (0-based)
               "messages": [...], "max_tokens": M,
               "remove_at": step}]}          # optional: the client leaves (batch_generator.remove)

For step = 0, 1, ...: every request arriving at that step is handled as ResponseGenerator._generate
handles a batchable chat request when a batch generator exists — _tokenize; fetch_nearest_cache;
the segments the cached prefix covers dropped (their types with them), the one it ends in
shortened; BatchGenerator.insert_segments(segments, caches=[cache], all_tokens=[prompt[:cached]])
with greedy sampling and no stop sequences — then the removals, then one next(), after which, as
the server does: the caches of rows whose prompt response has end_of_segment and not
end_of_prompt (while they have segment types left) go into the prompt cache with
cache_type=segment_types.pop(), and every finished row's cache with cache_type="assistant".

Output (to --out, or stdout):
{"mlx_version", "mlx_lm_version", "model",
 "requests": [{"prompt": [int], "segments": [[length, type]], "cached_tokens": int,
               "tokens": [int], "logprobs_sha256": [hex], "dtype": str}],
 "steps": [{"cache": {"assistant": [len, ...], "user": [...], "system": [...]}}]}
   # after each next(): the prompt cache's entries per type (token counts, sorted)
"""

import argparse
import hashlib
import json
from pathlib import Path
from types import SimpleNamespace

import mlx.core as mx
from mlx_lm.generate import BatchGenerator, StopSequences
from mlx_lm.models.cache import LRUPromptCache
from mlx_lm.server import CompletionRequest, ResponseGenerator
from mlx_lm.utils import load, load_tokenizer

from common import dtype_name, raw_bytes, versions, write_json

# What ResponseGenerator._tokenize reads of self: the model provider's processor (vision) and the
# --chat-template-args.
_GENERATOR = SimpleNamespace(model_provider=SimpleNamespace(processor=None,
                                                            cli_args=SimpleNamespace(chat_template_args={})))


def tokenize(tokenizer, case):
    request = CompletionRequest("chat", "", json.loads(json.dumps(case["messages"])), case.get("tools"), None)
    args = SimpleNamespace(chat_template_kwargs=case.get("chat_template_kwargs"))
    prompt, segments, types, _, _ = ResponseGenerator._tokenize(_GENERATOR, tokenizer, request, args)
    return list(prompt), [list(s) for s in segments], list(types)


def run_script(model, tokenizer, script):
    cache = LRUPromptCache(max_size=script["prompt_cache_size"])
    key = "model"
    gen = BatchGenerator(model, completion_batch_size=script["completion_batch_size"],
                         prefill_batch_size=script["prefill_batch_size"],
                         prefill_step_size=script["prefill_step_size"])
    requests = script["requests"]
    out = [None] * len(requests)
    uid_of = [None] * len(requests)
    results = {}  # uid -> {"i", "segment_types"}
    done = set()
    steps = []
    step = 0
    while True:
        for i, r in enumerate(requests):
            if r["at"] != step:
                continue
            prompt, segments, types = tokenize(tokenizer, r)
            shown = [[len(s), t] for s, t in zip(segments, types)]
            c, rest = cache.fetch_nearest_cache(key, prompt)
            cached = len(prompt) - len(rest)
            n = cached
            while n > 0:
                if n >= len(segments[0]):
                    n -= len(segments.pop(0))
                    types.pop(0)
                else:
                    segments[0] = segments[0][n:]
                    break
            (uid,) = gen.insert_segments(segments=[segments], max_tokens=[r["max_tokens"]], caches=[c],
                                         all_tokens=[prompt[:cached]], stop_sequences=[StopSequences(None)])
            uid_of[i] = uid
            results[uid] = {"i": i, "segment_types": types[::-1]}
            out[i] = {"prompt": prompt, "segments": shown, "cached_tokens": cached, "tokens": [],
                      "logprobs_sha256": [], "dtype": None}
        for i, r in enumerate(requests):
            if r.get("remove_at") == step and uid_of[i] is not None and uid_of[i] not in done:
                gen.remove([uid_of[i]])
                done.add(uid_of[i])
                results.pop(uid_of[i], None)
        if len(done) == len(requests):
            break
        if step > 100000:
            raise RuntimeError("the script does not finish")
        prompt_responses, gen_responses = gen.next()
        eos = [p.uid for p in prompt_responses
               if p.end_of_segment and not p.end_of_prompt and results[p.uid]["segment_types"]]
        for uid, (c, tokens) in gen.extract_cache(eos).items():
            cache.insert_cache(key, tokens[:], c, cache_type=results[uid]["segment_types"].pop())
        for g in gen_responses:
            o = out[results[g.uid]["i"]]
            o["tokens"].append(int(g.token))
            o["logprobs_sha256"].append(hashlib.sha256(raw_bytes(g.logprobs)).hexdigest())
            o["dtype"] = dtype_name(g.logprobs.dtype)
            if g.finish_reason is not None:
                cache.insert_cache(key, g.all_tokens[:], g.prompt_cache, cache_type="assistant")
                done.add(g.uid)
                del results[g.uid]
        steps.append({"cache": {t: sorted(len(tokens) for _, tokens in cache._lru._lrus[t])
                                for t in ("assistant", "user", "system")}})
        step += 1
    gen.close()
    return out, steps


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--model", required=True)
    group = ap.add_mutually_exclusive_group(required=True)
    group.add_argument("--script")
    group.add_argument("--tokenize")
    ap.add_argument("--out", default=None)
    args = ap.parse_args(argv)

    if args.tokenize:
        tokenizer = load_tokenizer(Path(args.model))
        with open(args.tokenize) as f:
            cases = json.load(f)
        results = []
        for case in cases:
            prompt, segments, types = tokenize(tokenizer, case)
            results.append({"prompt": prompt, "segments": [[len(s), t] for s, t in zip(segments, types)]})
        write_json({**versions(), "model": args.model, "cases": results}, args.out)
        return
    model, tokenizer = load(args.model)
    with open(args.script) as f:
        script = json.load(f)
    requests, steps = run_script(model, tokenizer, script)
    write_json({**versions(), "model": args.model, "requests": requests, "steps": steps}, args.out)


if __name__ == "__main__":
    main()
