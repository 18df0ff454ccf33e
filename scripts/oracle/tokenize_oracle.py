#!/usr/bin/env python3
"""Tokenizer oracle: what the Python `tokenizers` library says, as JSON.

The Java HfTokenizer (tokenizer module, over DJL's native tokenizers) must agree with
this byte for byte. Two modes:

  tokenize_oracle.py --tokenizer DIR_OR_TOKENIZER_JSON --corpus FILE.json
      Loads tokenizer.json with tokenizers.Tokenizer.from_file (no transformers
      layer: no clean_up_tokenization_spaces, no chat template) and prints one
      JSON object to stdout. FILE.json is either a JSON list of strings or an
      object:
        {"texts": [str, ...],         # strings to encode/decode
         "id_range": [start, end],    # optional: per-id token/decode, end exclusive
         "prefix_decode_limit": n}    # optional: for encodings of <= n ids, decode every prefix
      Output:
        {"tokenizers_version", "vocab_size", "vocab_size_base",
         "truncation", "padding",     # what tokenizer.json configured (normally null)
         "results": [{"text", "ids_special", "ids_plain",
                      "decode_special_skip", "decode_special_noskip",
                      "decode_plain_skip", "decode_plain_noskip",
                      "prefix_decodes_noskip": [str, ...]}  # decode(ids_special[:k]), k=1..n
                     , ...],
         "ids": {"start", "end", "tokens": [str|null], "decode_noskip": [str],
                 "decode_skip": [str]}}
      JSON is written with ensure_ascii=True, so any text round-trips exactly.
      If tokenizer.json configures truncation or padding, they are switched off
      (and reported): the engine never truncates or pads a prompt, and neither
      does transformers for a plain tokenizer(text) call.

  tokenize_oracle.py --build-fixture DIR
      Trains a tiny byte-level BPE (GPT-2 / SmolLM2 style) on a built-in corpus
      and writes DIR/tokenizer.json, tokenizer_config.json, config.json and
      generation_config.json. Special tokens <|endoftext|>, <|im_start|>,
      <|im_end|>, plus one NON-special added token <think> (so skip_special_tokens
      has something to keep). The post-processor prepends <|endoftext|> as BOS so
      add_special_tokens=True differs from False.
"""

import argparse
import json
import sys
from pathlib import Path

import tokenizers
from tokenizers import Tokenizer


def _tokenizer_path(arg: str) -> Path:
    p = Path(arg)
    return p / "tokenizer.json" if p.is_dir() else p


def run_corpus(tokenizer_arg: str, corpus_file: str) -> dict:
    tok = Tokenizer.from_file(str(_tokenizer_path(tokenizer_arg)))
    spec = json.loads(Path(corpus_file).read_text(encoding="utf-8"))
    if isinstance(spec, list):
        spec = {"texts": spec}
    texts = spec.get("texts", [])
    prefix_limit = int(spec.get("prefix_decode_limit", 0))

    out = {
        "tokenizers_version": tokenizers.__version__,
        "vocab_size": tok.get_vocab_size(with_added_tokens=True),
        "vocab_size_base": tok.get_vocab_size(with_added_tokens=False),
        "truncation": tok.truncation,
        "padding": tok.padding,
        "results": [],
    }
    tok.no_truncation()
    tok.no_padding()
    for text in texts:
        ids_special = tok.encode(text, add_special_tokens=True).ids
        ids_plain = tok.encode(text, add_special_tokens=False).ids
        r = {
            "text": text,
            "ids_special": ids_special,
            "ids_plain": ids_plain,
            "decode_special_skip": tok.decode(ids_special, skip_special_tokens=True),
            "decode_special_noskip": tok.decode(ids_special, skip_special_tokens=False),
            "decode_plain_skip": tok.decode(ids_plain, skip_special_tokens=True),
            "decode_plain_noskip": tok.decode(ids_plain, skip_special_tokens=False),
        }
        if len(ids_special) <= prefix_limit:
            r["prefix_decodes_noskip"] = [
                tok.decode(ids_special[:k], skip_special_tokens=False)
                for k in range(1, len(ids_special) + 1)
            ]
        out["results"].append(r)

    if "id_range" in spec:
        start, end = spec["id_range"]
        ids = list(range(start, end))
        out["ids"] = {
            "start": start,
            "end": end,
            "tokens": [tok.id_to_token(i) for i in ids],
            "decode_noskip": [tok.decode([i], skip_special_tokens=False) for i in ids],
            "decode_skip": [tok.decode([i], skip_special_tokens=True) for i in ids],
        }
    return out


_FIXTURE_CORPUS = [
    "The quick brown fox jumps over the lazy dog.",
    "Hello, world! How are you doing today?",
    "  leading spaces, trailing spaces  ",
    "tabs\tand\nnewlines\r\n and   multiple    spaces",
    "Numbers: 0 1 2 3 12345 3.14159 -42 1e10",
    "def add(a, b):\n    return a + b\n",
    "for (int i = 0; i < n; i++) { sum += a[i]; }",
    "Café, naïve, résumé, Ångström, São Paulo, Straße",
    "日本語のテキストと中文文本",
    "Emoji: 😀 👍🏽 👩‍💻 🇫🇷 ❤️",
    "<|im_start|>user\nhi<|im_end|>\n<|im_start|>assistant\nhello<|im_end|>",
    "<think>step by step</think> answer",
]


def build_fixture(out_dir: str) -> None:
    from tokenizers import AddedToken, decoders, models, pre_tokenizers, processors, trainers

    d = Path(out_dir)
    d.mkdir(parents=True, exist_ok=True)
    specials = ["<|endoftext|>", "<|im_start|>", "<|im_end|>"]

    tok = Tokenizer(models.BPE())
    tok.pre_tokenizer = pre_tokenizers.ByteLevel(add_prefix_space=False, use_regex=True)
    tok.decoder = decoders.ByteLevel()
    trainer = trainers.BpeTrainer(
        vocab_size=400,
        min_frequency=1,
        special_tokens=specials,
        initial_alphabet=pre_tokenizers.ByteLevel.alphabet(),
        show_progress=False,
    )
    tok.train_from_iterator(_FIXTURE_CORPUS * 4, trainer=trainer)
    tok.add_tokens([AddedToken("<think>", special=False), AddedToken("</think>", special=False)])
    bos = "<|endoftext|>"
    tok.post_processor = processors.Sequence([
        processors.ByteLevel(trim_offsets=False),
        processors.TemplateProcessing(
            single=f"{bos} $A",
            pair=f"{bos} $A {bos} $B",
            special_tokens=[(bos, tok.token_to_id(bos))],
        ),
    ])
    tok.save(str(d / "tokenizer.json"))

    eos_id = tok.token_to_id("<|im_end|>")
    eot_id = tok.token_to_id("<|endoftext|>")
    (d / "tokenizer_config.json").write_text(json.dumps({
        "bos_token": "<|endoftext|>",
        "eos_token": {"__type": "AddedToken", "content": "<|im_end|>", "special": True},
        "add_bos_token": True,
        "clean_up_tokenization_spaces": False,
    }, indent=2), encoding="utf-8")
    (d / "config.json").write_text(json.dumps({"eos_token_id": eos_id}, indent=2), encoding="utf-8")
    (d / "generation_config.json").write_text(
        json.dumps({"eos_token_id": [eos_id, eot_id]}, indent=2), encoding="utf-8")
    print(json.dumps({"fixture": str(d), "vocab_size": tok.get_vocab_size(True)}))


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--tokenizer", help="model dir containing tokenizer.json, or the file itself")
    ap.add_argument("--corpus", help="JSON corpus file (list of strings or spec object)")
    ap.add_argument("--build-fixture", metavar="DIR", help="train and save a tiny byte-level BPE fixture")
    args = ap.parse_args()

    if args.build_fixture:
        build_fixture(args.build_fixture)
        return 0
    if not (args.tokenizer and args.corpus):
        ap.error("need --tokenizer and --corpus (or --build-fixture DIR)")
    result = run_corpus(args.tokenizer, args.corpus)
    sys.stdout.write(json.dumps(result, ensure_ascii=True))
    sys.stdout.write("\n")
    return 0


if __name__ == "__main__":
    sys.exit(main())
