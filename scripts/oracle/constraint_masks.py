#!/usr/bin/env python3
"""Constraint-mask oracle: the token masks llguidance's own Python package computes, as JSON.

The Java binding (constraint module: ConstraintTokenizer, CompiledConstraint, ConstraintMatcher
over libllguidance.so) must write the same mask bytes at every step. Usage:

  constraint_masks.py REQUEST.json

REQUEST.json:
  {"tokenizer_json": PATH,       # a Hugging Face tokenizer.json
   "vocab_size": N,              # ids a mask covers (the model's vocab_size)
   "eos_token": ID,              # llguidance's EOS id
   "cases": [{"kind": "json_schema" | "regex" | "lark" | "llguidance",
              "source": TEXT,    # the schema (JSON text), regex, Lark grammar or grammar JSON
              "tokens": [ID, ...]}, ...]}

The tokenizer is llguidance.LLTokenizer over the tokenizer.json text (llguidance's Hugging Face
front end: canonical tokenization by the Rust tokenizers library); each case gets an LLMatcher
over LLMatcher.grammar_from_json_schema / grammar_from_regex / grammar_from_lark (or the grammar
JSON as given). Output, one JSON object on stdout:

  {"llguidance_version": STR,
   "cases": [{"compile_error": STR | null,
              "masks": [HEX, ...],      # mask before tokens[0], ..., after the last consumed token:
                                        # int32 words in native (little-endian) byte order, as
                                        # llguidance.numpy.fill_next_token_bitmask writes them
              "accepting": [BOOL, ...], # is_accepting() at the same points
              "consumed": K,            # tokens consumed before the first refusal (or all)
              "error": STR | null}]}    # the matcher's error after a refusal
"""

import json
import sys
from importlib.metadata import version

import llguidance
import llguidance.numpy as llnp

from llg_processor import grammar  # the same grammar constructors as the generation oracle


def run_case(tok, vocab_size: int, case: dict) -> dict:
    matcher = llguidance.LLMatcher(tok, grammar(case["kind"], case["source"]), log_level=0)
    if matcher.is_error():
        return {"compile_error": matcher.get_error(), "masks": [], "accepting": [], "consumed": 0, "error": None}
    bitmask = llnp.allocate_token_bitmask(1, vocab_size)
    masks, accepting = [], []
    consumed, error = 0, None

    def record():
        bitmask.fill(0)
        llnp.fill_next_token_bitmask(matcher, bitmask, 0)
        masks.append(bitmask[0].tobytes().hex())
        accepting.append(bool(matcher.is_accepting()))

    record()
    for t in case["tokens"]:
        if not matcher.consume_token(t):
            error = matcher.get_error()
            break
        consumed += 1
        record()
    return {"compile_error": None, "masks": masks, "accepting": accepting, "consumed": consumed, "error": error}


def main() -> int:
    if len(sys.argv) != 2:
        raise SystemExit("usage: constraint_masks.py REQUEST.json")
    with open(sys.argv[1], encoding="utf-8") as f:
        req = json.load(f)
    with open(req["tokenizer_json"], encoding="utf-8") as f:
        tokenizer_json = f.read()
    tok = llguidance.LLTokenizer(tokenizer_json, n_vocab=req["vocab_size"], eos_token=req["eos_token"])
    out = {"llguidance_version": version("llguidance"),
           "cases": [run_case(tok, req["vocab_size"], c) for c in req["cases"]]}
    json.dump(out, sys.stdout)
    return 0


if __name__ == "__main__":
    sys.exit(main())
