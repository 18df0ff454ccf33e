"""A token constraint from llguidance's own Python package as an mlx-lm logits processor: the
oracle of mlx-ring's structured outputs (plan-stage ConstraintCompiler over the constraint
module's binding), compared bit for bit by LlguidanceParityTest (ingress).

Spec (JSON object):
  {"kind": "json_schema" | "regex" | "lark" | "llguidance",
   "source": TEXT,                 # the schema (JSON text), regex, Lark grammar or grammar JSON
   "tokenizer_json": PATH,         # the model's Hugging Face tokenizer.json
   "vocab_size": N,                # the model's vocab_size (the logits' last dimension)
   "eos": [ID, ...]}               # exactly one id: llguidance's EOS (its allowed stop token)

The matcher is llguidance.LLMatcher over llguidance.LLTokenizer(tokenizer.json text,
n_vocab=N, eos_token=eos[0]) and the grammar LLMatcher.grammar_from_json_schema /
grammar_from_regex / grammar_from_lark (or the grammar JSON as given): the construction of
constraint_masks.py, which the Java binding matches byte for byte.

As a processor (appended after mlx-lm's own ones) its n-th call (0-based) is the step that
samples the n-th generated token: from the second call on it first consumes tokens[-1], the
token the previous step sampled (generate_step and BatchGenerator pass the row's tokens so far,
ending with it). It then fills the bitmask (llguidance.numpy.fill_next_token_bitmask), unpacks
it to a bool vector over the vocabulary and applies scripted_mask.apply_mask:
    logits = mx.where(mask, logits, -inf)
Once it has consumed EOS the call returns the logits unmasked: the row has ended on its stop
token and that step's token is never used (a complete matcher allows only EOS, and a matcher
that is_stopped() still gets its EOS-only mask). A consumed token the matcher refuses,
or a step with no allowed id, raises (the mask makes neither possible).
"""

import json

import llguidance
import llguidance.numpy as llnp
import numpy as np

from scripted_mask import apply_mask

_TOKENIZERS = {}


def grammar(kind, source):
    if kind == "json_schema":
        return llguidance.LLMatcher.grammar_from_json_schema(source)
    if kind == "regex":
        return llguidance.LLMatcher.grammar_from_regex(source)
    if kind == "lark":
        return llguidance.LLMatcher.grammar_from_lark(source)
    if kind == "llguidance":
        return source
    raise ValueError(f"llg_processor: unknown kind {kind!r}")


def tokenizer(path, vocab_size, eos):
    """One LLTokenizer per (tokenizer.json, vocab_size, eos): building one reads the vocabulary."""
    key = (path, vocab_size, eos)
    if key not in _TOKENIZERS:
        with open(path, encoding="utf-8") as f:
            _TOKENIZERS[key] = llguidance.LLTokenizer(f.read(), n_vocab=vocab_size, eos_token=eos)
    return _TOKENIZERS[key]


class LlgProcessor:
    def __init__(self, spec):
        eos = [int(t) for t in spec["eos"]]
        if len(eos) != 1:
            raise ValueError(f"llg_processor: exactly one eos id, got {eos}")
        self.vocab_size = int(spec["vocab_size"])
        tok = tokenizer(spec["tokenizer_json"], self.vocab_size, eos[0])
        self.matcher = llguidance.LLMatcher(tok, grammar(spec["kind"], spec["source"]), log_level=0)
        if self.matcher.is_error():
            raise ValueError(f"llg_processor: the {spec['kind']} does not compile: {self.matcher.get_error()}")
        self.bitmask = llnp.allocate_token_bitmask(1, self.vocab_size)
        self.eos = set(eos)
        self.calls = 0
        self.ended = False

    def __call__(self, tokens, logits):
        n = self.calls
        self.calls += 1
        if self.ended:
            return logits
        if n > 0:
            token = int(tokens[-1].item())
            if not self.matcher.consume_token(token):
                raise RuntimeError(f"llg_processor: token {token} refused: {self.matcher.get_error()}")
            if token in self.eos:
                self.ended = True
                return logits
        if logits.shape[-1] != self.vocab_size:
            raise ValueError(f"llg_processor: {logits.shape[-1]} logits, vocab_size {self.vocab_size}")
        self.bitmask.fill(0)
        llnp.fill_next_token_bitmask(self.matcher, self.bitmask, 0)
        allowed = np.unpackbits(self.bitmask[0].view(np.uint8), bitorder="little")[: self.vocab_size].astype(bool)
        if not allowed.any():
            raise RuntimeError(f"llg_processor: no token allowed at step {n}: {self.matcher.get_error()}")
        return apply_mask(logits, allowed)


def read_specs(path, count):
    """The --llguidance file: one spec for every prompt, or a list of one spec per prompt."""
    with open(path, encoding="utf-8") as f:
        specs = json.load(f)
    if isinstance(specs, dict):
        return [specs] * count
    if len(specs) != count:
        raise ValueError(f"llg_processor: {len(specs)} specs for {count} prompts")
    return specs
