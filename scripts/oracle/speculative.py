#!/usr/bin/env python3
"""Live mlx-lm speculative decoding oracle (draft model or prompt lookup).

Usage:
    speculative.py --model DIR --prompts FILE.json --max-tokens N --prefill-step-size S \
                   (--draft-model DIR | --ngram MIN,MAX) --num-draft-tokens K \
                   [--temp T --top-p P --min-p M --top-k K] [--seed K] \
                   [--kv-bits B --kv-group-size G --quantized-kv-start Q] [--plain] [--out FILE.json]

--draft-model: for every prompt this runs mlx-lm's own
    mlx_lm.generate.speculative_generate_step(mx.array(prompt), model, draft_model,
        num_draft_tokens=K, max_tokens=N, sampler=make_sampler(temp, top_p, min_p, top_k=...),
        prefill_step_size=S, kv_bits=..., kv_group_size=..., quantized_kv_start=...)
after mx.random.seed(seed) (when --seed is given), both models loaded with
mlx_lm.utils.load_model.

--ngram MIN,MAX: mlx-lm has no prompt-lookup source, so the draft is a stand-in object
(NgramDraft below) driven by speculative_generate_step's own code with ONE line changed: the
round's proposal length
    num_draft = min(max_tokens - ntoks, num_draft_tokens)
becomes
    num_draft = draft_model.propose(draft_y, min(max_tokens - ntoks, num_draft_tokens))
so a round proposes what the n-gram match yields (0..K tokens; 0 verifies one position, which
mlx-lm's loop handles as it is). The stand-in keeps the row's tokens in a trimmable token log
(its "cache"), finds the n-gram match on them (ngram_proposal below, written here from the rule
alone), and makes each draft _step return the next proposed token without drawing from the
random state (the sampler is wrapped: a draft step's sample is the proposal). The matching rule:
for n from MAX down to MIN, the suffix of the last n tokens; its earliest earlier occurrence
tokens[i:i+n] with i + n < len(tokens); propose tokens[i+n : i+n+k]; first n that matches wins.

Hybrid models (qwen3_5, qwen3_5_moe, qwen3_next): mlx-lm's gated delta net caches cannot be
trimmed, so speculative_generate_step would refuse them; recurrent_rollback.install() (see that
module) makes their ArraysCache trimmable by recording, during mlx-lm's own forwards, the
convolution's input and the recurrence's state after each position, and restoring those after
the last kept position. The model, the verification loop and the arithmetic stay mlx-lm's.

--plain also runs mlx-lm's generate_step (no speculation) on the same prompt and settings, for
the report of how often speculative output equals plain output.

Output (to --out, or stdout):
{
  "mlx_version", "mlx_lm_version", "model", "draft_model" | "ngram", "num_draft_tokens", ...,
  "results": [
    {"prompt": [int], "tokens": [int],
     "from_draft": [bool],            # speculative_generate_step's third value
     "logprobs_sha256": [hex],        # sha256 of each yielded logprobs vector's raw bytes
     "chosen_logprob": [float],       # logprobs[token].item()
     "final_key": [k0, k1],           # mx.random.state[0] after the prompt
     "plain_tokens": [int]}           # only with --plain
  ]
}
"""

import hashlib
import inspect
import json
import sys
from pathlib import Path

import mlx.core as mx
from mlx_lm.generate import generate_step, speculative_generate_step
from mlx_lm.sample_utils import make_sampler
from mlx_lm.utils import load_model

import recurrent_rollback
from common import oracle_args, raw_bytes, read_prompts, versions, write_json

PROPOSAL_LINE = "num_draft = min(max_tokens - ntoks, num_draft_tokens)"
PROPOSAL_PATCH = "num_draft = draft_model.propose(draft_y, min(max_tokens - ntoks, num_draft_tokens))"


def ngram_proposal(tokens, min_n, max_n, k):
    """The prompt-lookup rule of the module docstring, on a plain list."""
    if k <= 0:
        return []
    length = len(tokens)
    for n in range(min(max_n, length - 1), min_n - 1, -1):
        suffix = tokens[length - n:]
        for i in range(0, length - n):
            if tokens[i:i + n] == suffix:
                return tokens[i + n:i + n + k]
    return []


class TokenLog:
    """The stand-in draft's cache: the tokens it was fed, trimmable as a KV cache is."""

    def __init__(self):
        self.tokens = []

    @property
    def offset(self):
        return len(self.tokens)

    @property
    def state(self):
        return []

    def is_trimmable(self):
        return True

    def trim(self, n):
        n = min(len(self.tokens), n)
        if n:
            del self.tokens[-n:]
        return n


class NgramDraft:
    """A draft 'model' whose steps return the round's n-gram proposal, one token per call."""

    def __init__(self, vocab, min_n, max_n):
        self.vocab = vocab
        self.min_n = min_n
        self.max_n = max_n
        self.log = None
        self.queue = []
        self.forced = None

    def make_cache(self):
        self.log = TokenLog()
        return [self.log]

    def propose(self, draft_y, k):
        context = self.log.tokens + [int(t) for t in draft_y.tolist()]
        self.queue = ngram_proposal(context, self.min_n, self.max_n, k)
        if not self.queue:
            # No draft step runs this round, so the pending tokens are never fed: take them now.
            self.log.tokens = context
        return len(self.queue)

    def __call__(self, inputs, cache=None):
        cache[0].tokens.extend(int(t) for t in inputs.reshape(-1).tolist())
        if self.queue:
            self.forced = self.queue.pop(0)
        return mx.zeros((1, inputs.shape[1], self.vocab), dtype=mx.float32)


def forcing_sampler(sampler, draft):
    """The sampler, except that a stand-in draft step's sample is its proposed token (no draw)."""

    def sample(logprobs):
        if draft.forced is not None:
            token, draft.forced = draft.forced, None
            return mx.array([token], mx.uint32)
        return sampler(logprobs)

    return sample


def patched_speculative_step():
    """speculative_generate_step's source with the proposal length asked of the draft per round."""
    source = inspect.getsource(speculative_generate_step)
    if source.count(PROPOSAL_LINE) != 1:
        raise SystemExit("mlx-lm's speculative_generate_step no longer holds the line " + PROPOSAL_LINE)
    module = sys.modules[speculative_generate_step.__module__]
    namespace = dict(vars(module))
    exec(compile(source.replace(PROPOSAL_LINE, PROPOSAL_PATCH), module.__file__, "exec"), namespace)
    return namespace["speculative_generate_step"]


def main(argv=None):
    ap = oracle_args(__doc__)
    ap.add_argument("--draft-model", default=None)
    ap.add_argument("--ngram", default=None, help="MIN,MAX n-gram sizes")
    ap.add_argument("--num-draft-tokens", type=int, required=True)
    ap.add_argument("--temp", type=float, default=0.0)
    ap.add_argument("--top-p", type=float, default=1.0)
    ap.add_argument("--min-p", type=float, default=0.0)
    ap.add_argument("--top-k", type=int, default=0)
    ap.add_argument("--seed", type=int, default=None)
    ap.add_argument("--kv-bits", type=int, default=None)
    ap.add_argument("--kv-group-size", type=int, default=64)
    ap.add_argument("--quantized-kv-start", type=int, default=5000)
    ap.add_argument("--plain", action="store_true")
    ap.add_argument("--out", default=None)
    args = ap.parse_args(argv)
    if (args.draft_model is None) == (args.ngram is None):
        ap.error("give exactly one of --draft-model and --ngram")

    recurrent_rollback.install()
    model, config = load_model(Path(args.model))
    sampler = make_sampler(args.temp, args.top_p, args.min_p, top_k=args.top_k)
    if args.draft_model is not None:
        draft, _ = load_model(Path(args.draft_model))
        step_fn = speculative_generate_step
        run_sampler = sampler
    else:
        min_n, max_n = (int(v) for v in args.ngram.split(","))
        draft = NgramDraft(config["vocab_size"], min_n, max_n)
        step_fn = patched_speculative_step()
        run_sampler = forcing_sampler(sampler, draft)
    kv = dict(kv_bits=args.kv_bits, kv_group_size=args.kv_group_size, quantized_kv_start=args.quantized_kv_start)

    results = []
    for prompt in read_prompts(args.prompts):
        if args.seed is not None:
            mx.random.seed(args.seed)
        tokens, from_draft, digests, chosen = [], [], [], []
        for tok, logprobs, drafted in step_fn(
            mx.array(prompt),
            model,
            draft,
            num_draft_tokens=args.num_draft_tokens,
            max_tokens=args.max_tokens,
            sampler=run_sampler,
            prefill_step_size=args.prefill_step_size,
            **kv,
        ):
            tokens.append(int(tok))
            from_draft.append(bool(drafted))
            digests.append(hashlib.sha256(raw_bytes(logprobs)).hexdigest())
            chosen.append(logprobs[tok].item())
        key = mx.random.state[0]
        mx.eval(key)
        result = {
            "prompt": list(prompt),
            "tokens": tokens,
            "from_draft": from_draft,
            "logprobs_sha256": digests,
            "chosen_logprob": chosen,
            "final_key": [int(v) for v in key.tolist()],
        }
        if args.plain:
            if args.seed is not None:
                mx.random.seed(args.seed)
            result["plain_tokens"] = [int(t) for t, _ in generate_step(
                mx.array(prompt), model, max_tokens=args.max_tokens, sampler=sampler,
                prefill_step_size=args.prefill_step_size, **kv)]
        results.append(result)

    settings = {k: v for k, v in vars(args).items() if k not in ("model", "prompts", "out")}
    write_json({**versions(), "model": args.model, "settings": settings, "results": results}, args.out)


if __name__ == "__main__":
    main()
