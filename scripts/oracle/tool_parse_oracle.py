#!/usr/bin/env python3
"""Tool-call parser oracle: what mlx-lm's own tool parsers (mlx_lm/tool_parsers/<type>.py) and
its parser inference (mlx_lm.tokenizer_utils._infer_tool_parser) give, as JSON. sink-stage's
Java ports (dev.mlxring.sink.tools) must agree.

Every mode reads a JSON spec file and prints one JSON object to stdout (ensure_ascii=True, so any
text, lone surrogates included, round-trips exactly).

  tool_parse_oracle.py SPEC.json
      SPEC: {"cases": [{"type": "json_tools", "text": "...", "tools": [...] | null}, ...]}
      For each case, importlib.import_module("mlx_lm.tool_parsers.<type>").parse_tool_call(text,
      tools); a dict result becomes a one-element list (as mlx_lm.server's ToolCallFormatter).
      Output: {"mlx_lm_version", "results": [
                 {"calls": [{"name": V, "arguments": V, "id"?: V}, ...],
                  "markers": [tool_call_start, tool_call_end]}
               | {"error": "ValueError: ...", "kind": "ValueError", "value_error": bool}]}
      A call that is not a dict is {"not_a_dict": V}; a missing key is absent. Values V are
      tagged so that nothing is lost to JSON: null / true / false / "str" / [V, ...] as they are,
      {"int": "123"}, {"float": "<IEEE-754 bits as a signed 64-bit decimal>" | "nan"},
      {"dict": [[K, V], ...]} (insertion order), tuples as lists (json.dumps does the same), and
      {"other": "<type>: <repr>"} for anything json.dumps cannot serialise (set, bytes, complex).
      value_error: whether mlx_lm.server would catch it (ValueError incl. JSONDecodeError).

  tool_parse_oracle.py --infer SPEC.json
      SPEC: {"templates": [str | null, ...], "vocab_tokens": [[token, ...], ...]} (same length)
      For each pair, _infer_tool_parser of a stand-in tokenizer whose chat_template is the
      template and whose get_vocab() holds those tokens.
      Output: {"mlx_lm_version", "results": [type | null, ...]}
"""

import argparse
import importlib
import json
import math
import struct
import sys

import mlx_lm
from mlx_lm.tokenizer_utils import _infer_tool_parser


def tag(v):
    if v is None or isinstance(v, (bool, str)):
        return v
    if isinstance(v, int):
        return {"int": str(v)}
    if isinstance(v, float):
        if math.isnan(v):
            return {"float": "nan"}
        return {"float": str(struct.unpack("<q", struct.pack("<d", v))[0])}
    if isinstance(v, (list, tuple)):
        return [tag(x) for x in v]
    if isinstance(v, dict):
        return {"dict": [[tag(k), tag(x)] for k, x in v.items()]}
    return {"other": f"{type(v).__name__}: {v!r}"}


def parse_cases(spec):
    results = []
    for case in spec["cases"]:
        module = importlib.import_module(f"mlx_lm.tool_parsers.{case['type']}")
        try:
            parsed = module.parse_tool_call(case["text"], case.get("tools"))
        except Exception as e:  # noqa: BLE001 - every failure is reported, caught or not
            results.append({"error": f"{type(e).__name__}: {e}", "kind": type(e).__name__,
                            "value_error": isinstance(e, ValueError)})
            continue
        if not isinstance(parsed, list):
            parsed = [parsed]
        calls = []
        for call in parsed:
            if not isinstance(call, dict):
                calls.append({"not_a_dict": tag(call)})
                continue
            calls.append({k: tag(call[k]) for k in ("name", "arguments", "id") if k in call}
                         | {"keys": sorted(map(str, call))})
        results.append({"calls": calls,
                        "markers": [module.tool_call_start, module.tool_call_end or ""]})
    return results


class _StandIn:
    def __init__(self, chat_template, tokens):
        self.chat_template = chat_template
        self._vocab = {t: i for i, t in enumerate(tokens)}

    def get_vocab(self):
        return dict(self._vocab)


def infer_cases(spec):
    templates = spec["templates"]
    vocabs = spec.get("vocab_tokens") or [[] for _ in templates]
    if len(vocabs) != len(templates):
        raise SystemExit("templates and vocab_tokens differ in length")
    return [_infer_tool_parser(_StandIn(t, v)) for t, v in zip(templates, vocabs)]


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--infer", action="store_true", help="run _infer_tool_parser instead of the parsers")
    ap.add_argument("spec")
    args = ap.parse_args()
    with open(args.spec, encoding="utf-8") as f:
        spec = json.load(f)
    results = infer_cases(spec) if args.infer else parse_cases(spec)
    sys.stdout.write(json.dumps({"mlx_lm_version": mlx_lm.__version__, "results": results},
                                ensure_ascii=True, indent=1) + "\n")


if __name__ == "__main__":
    main()
