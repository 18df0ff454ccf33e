"""Helpers shared by the oracle scripts (scripts/oracle) and the benchmark scripts (scripts/bench).

The oracle scripts are run as `python scripts/oracle/X.py` (dev.mlxring.mlx.PythonScript, the
prep-stage PythonOracle), so this directory is on sys.path and `import common` works; a script
under scripts/bench puts scripts/oracle on sys.path first.

- Output: `versions()` (the mlx / mlx-lm version header of every JSON document), `dtype_name`,
  `raw_bytes` and `encode_array` (an array's raw little-endian bytes as MLX holds them),
  `write_json` (a document to --out or stdout).
- Oracles over generate_step (greedy.py, sample.py): `oracle_args`, `read_prompts`.
- Random-weight models (make_tiny_models.py, make_bench_models.py): `seed_for`, `reinit`,
  `cast_like_convert`, `build_model_dir`, and the arguments and `.complete` markers
  (`model_args`, `models_to_build`, `write_marker`).
"""

import argparse
import base64
import contextlib
import copy
import hashlib
import importlib
import json
import shutil
import sys
import zlib
from pathlib import Path

import mlx.core as mx
import numpy as np
from mlx.utils import tree_flatten, tree_map_with_path, tree_unflatten

import mlx_lm
from mlx_lm.utils import quantize_model, save_config, save_model

# ---------------------------------------------------------------------------
# Output
# ---------------------------------------------------------------------------

_UINT_VIEW = {2: mx.uint16, 4: mx.uint32, 8: mx.uint64, 1: mx.uint8}
_NP_UINT = {2: "<u2", 4: "<u4", 8: "<u8", 1: "u1"}


def versions():
    """The leading keys of every document the scripts write."""
    return {"mlx_version": mx.__version__, "mlx_lm_version": mlx_lm.__version__}


def dtype_name(dt):
    s = str(dt)
    return s[len("mlx.core."):] if s.startswith("mlx.core.") else s


def raw_bytes(x):
    """The array's raw little-endian bytes exactly as MLX holds them (bf16/f16 through a uint16
    view, f32 through a uint32 view)."""
    mx.eval(x)
    size = x.dtype.size
    return np.array(x.view(_UINT_VIEW[size]), copy=True).astype(_NP_UINT[size], copy=False).tobytes()


def greedy_steps(stream):
    """A generate_step stream run to its end: its tokens, the SHA-256 of each step's logprobs'
    raw bytes (hex), and the logprobs' dtype name (None when it yields nothing)."""
    tokens, shas, dtype = [], [], None
    for tok, logprobs in stream:
        tokens.append(int(tok))
        shas.append(hashlib.sha256(raw_bytes(logprobs)).hexdigest())
        dtype = dtype_name(logprobs.dtype)
    return tokens, shas, dtype


def prompt_cache_requests(serve, fresh, n):
    """The prompt-cache oracles' four requests, served in order through serve(prompt) -> tokens,
    with fresh(k) drawing k new token ids: A = n fresh ids; A + its answer + 7 fresh; A[:n // 2 + 3]
    + 9 fresh; that request's prompt and answer less its last 3 ids. Returns the third request's
    prompt and answer, for a request the caller adds."""
    a = fresh(n)
    gen0 = serve(a)
    serve(a + gen0 + fresh(7))
    p2 = a[: n // 2 + 3] + fresh(9)
    gen2 = serve(p2)
    serve((p2 + gen2)[:-3])
    return p2, gen2


def encode_array(x):
    return {
        "dtype": dtype_name(x.dtype),
        "shape": list(x.shape),
        "b64": base64.b64encode(raw_bytes(x)).decode("ascii"),
    }


def write_json(doc, out=None, atomic=True):
    """json.dumps(doc, indent=1) + newline to the file `out` (through `out`.tmp, renamed, when
    `atomic`), or to stdout when `out` is None or empty."""
    text = json.dumps(doc, indent=1) + "\n"
    if not out:
        sys.stdout.write(text)
    elif atomic:
        tmp = Path(out + ".tmp")
        tmp.write_text(text)
        tmp.replace(out)
    else:
        with open(out, "w") as f:
            f.write(text)


# ---------------------------------------------------------------------------
# Oracles over generate_step
# ---------------------------------------------------------------------------


def oracle_args(doc):
    """The argument parser of an oracle over generate_step: --model --prompts --max-tokens
    --prefill-step-size (the script adds its own arguments after these)."""
    ap = argparse.ArgumentParser(description=doc, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--model", required=True)
    ap.add_argument("--prompts", required=True)
    ap.add_argument("--max-tokens", type=int, required=True)
    ap.add_argument("--prefill-step-size", type=int, required=True)
    return ap


def read_prompts(path):
    """The token-id lists of a prompts file ({"prompts": [[ids...], ...]}, see prompts.py)."""
    with open(path) as f:
        return [[int(t) for t in p] for p in json.load(f)["prompts"]]


def sharded_model(path):
    """This rank's part of the model at `path`, loaded by mlx-lm's own
    mlx_lm.utils.sharded_load(path) (load_model(lazy=True), model.shard(group) over
    mx.distributed.init(), eval of the parameters, the closing all_sum), as mlx_lm.server loads
    a model when it runs under mlx.launch. Run the script with `mlx.launch -n N`.

    sharded_load also loads a tokenizer; the oracles work on token ids and the tiny models have
    none, so that one step (mlx_lm.utils.load_tokenizer) is skipped; nothing else is touched."""
    import mlx_lm.utils as utils

    group = mx.distributed.init()
    if group.size() < 2:
        raise SystemExit("--sharded needs a distributed group of >= 2 ranks (run under mlx.launch -n 2)")
    real = utils.load_tokenizer
    utils.load_tokenizer = lambda *args, **kwargs: None
    try:
        model, _ = utils.sharded_load(str(path))
    finally:
        utils.load_tokenizer = real
    return model


def writes_output(sharded):
    """Whether this process writes the document: always, except the ranks other than 0 of a
    sharded run (every rank computes the same tokens; one answers)."""
    return not sharded or mx.distributed.init().rank() == 0


# ---------------------------------------------------------------------------
# Random-weight models
# ---------------------------------------------------------------------------

MARKER = ".complete"
RESID_GAIN = 8.0


def seed_for(name):
    """A model's seed, derived from its name: the same whether it is built alone or with others."""
    return zlib.crc32(name.encode()) & 0x7FFFFFFF


def reinit(model, seed):
    """Re-initialise every parameter deterministically (float32).

    - RMSNorm weights (any *norm.weight): 1 + 0.1 * N(0,1)
    - embeddings: N(0,1) * 0.5   (so hidden states are O(1) after the norm)
    - linear weights (and SwitchLinear's stacked expert weights): N(0,1) / sqrt(fan_in); the residual-writing projections
      (o_proj, down_proj) get an extra gain of RESID_GAIN so that the layers
      dominate the token's own embedding in the residual stream -- otherwise
      greedy decoding of a random model (tied embeddings above all) echoes the
      last token forever
    - biases: N(0,1) * 0.2; attention sinks (gpt_oss): N(0,1)
    """
    key = mx.random.key(seed)
    flat = sorted(tree_flatten(model.parameters()), key=lambda kv: kv[0])
    keys = mx.random.split(key, len(flat))
    new = []
    for i, (path, p) in enumerate(flat):
        noise = mx.random.normal(p.shape, dtype=mx.float32, key=keys[i])
        if path.endswith("norm.weight") or (p.ndim == 1 and "_layernorm_" in path):  # gemma4's *_layernorm_1/2
            v = 1.0 + 0.1 * noise
        elif path.endswith("embed_tokens.weight"):
            v = 0.5 * noise
        elif path.endswith(".layer_scalar"):  # gemma4_text's per-layer output scale (ones at init)
            v = mx.ones(p.shape, dtype=mx.float32)
        elif path.endswith((".router.scale", ".router.per_expert_scale")):  # gemma4_text's router scales
            v = 1.0 + 0.1 * noise
        elif path.endswith(".sinks"):  # gpt_oss's per-head attention sink logits
            v = noise
        elif path.endswith(".A_log"):  # gated delta net (qwen3_5): exp(A_log) around 1
            v = 0.5 * noise
        elif path.endswith(".dt_bias"):
            v = 0.2 * noise
        elif path.endswith("conv1d.weight"):  # depthwise [C, K, 1]: fan-in is the kernel
            v = noise / (p.shape[1] ** 0.5)
        elif path.endswith("linear_attn.out_proj.weight"):  # writes the residual
            v = RESID_GAIN * noise / (p.shape[-1] ** 0.5)
        elif path.endswith(".bias"):
            v = 0.2 * noise
        elif path.endswith(("o_proj.weight", "down_proj.weight")):
            v = RESID_GAIN * noise / (p.shape[-1] ** 0.5)
        elif path.endswith(".weight") and p.ndim in (2, 3):  # 3: stacked experts [E, out, in]
            v = noise / (p.shape[-1] ** 0.5)
        else:
            raise ValueError(f"unexpected parameter {path} {p.shape}")
        new.append((path, v.astype(mx.float32)))
    model.update(tree_unflatten(new))
    mx.eval(model.parameters())


def cast_like_convert(model, dtype):
    """Same cast mlx_lm.convert applies for --dtype."""
    cast_predicate = getattr(model, "cast_predicate", lambda _: True)

    def set_dtype(k, v):
        if cast_predicate(k) and mx.issubdtype(v.dtype, mx.floating):
            return v.astype(dtype)
        return v

    model.update(tree_map_with_path(set_dtype, model.parameters()))
    mx.eval(model.parameters())


def build_model_dir(out_dir: Path, family, config, seed, dtype, quant, prepare=None):
    """mlx_lm.models.<family>.Model(ModelArgs.from_dict(config)), re-initialised from `seed`, cast
    to `dtype` like `mlx_lm.convert --dtype`, then, when `quant` ({"bits", "group_size"}) is given,
    quantized exactly like `mlx_lm.convert -q --q-bits B --q-group-size G` (affine; embeddings
    included: quantize_model's default predicate); written with mlx_lm.utils.save_model +
    save_config (the layout mlx_lm.utils.load_model reads) into a sibling temporary directory that
    then replaces `out_dir`. `config` itself is left as it is. `prepare(model)`, when given, runs
    after the re-initialisation (e.g. dropping a module the checkpoint does not carry). Returns the
    model."""
    config = copy.deepcopy(config)
    module = importlib.import_module(f"mlx_lm.models.{family}")
    mx.random.seed(seed)
    model = module.Model(module.ModelArgs.from_dict(config))
    reinit(model, seed)
    if prepare is not None:
        prepare(model)
    config["torch_dtype"] = dtype_name(dtype)
    cast_like_convert(model, dtype)
    if quant is not None:
        # quantize_model prints an [INFO] line; keep stdout clean.
        with contextlib.redirect_stdout(sys.stderr):
            model, config = quantize_model(model, config, quant["group_size"], quant["bits"], mode="affine")

    tmp = out_dir.with_name("." + out_dir.name + ".tmp")
    if tmp.exists():
        shutil.rmtree(tmp)
    tmp.mkdir(parents=True)
    save_model(tmp, model)
    save_config(config, config_path=tmp / "config.json")
    if out_dir.exists():
        shutil.rmtree(out_dir)
    tmp.rename(out_dir)
    return model


def model_args(doc):
    """The argument parser of a model-building script: --out, --only, --force."""
    ap = argparse.ArgumentParser(description=doc, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--out", required=True, help="output directory")
    ap.add_argument("--only", default=None, help="comma-separated model names (default: all)")
    ap.add_argument("--force", action="store_true", help="rebuild even if complete")
    return ap


def models_to_build(ap, args, known, recipe_version):
    """Creates --out and yields (name, directory) for each model --only selects (all of `known`
    without it; an unknown name is a usage error) that is not complete, or every one with --force.
    A directory is complete when its marker (written last) names `recipe_version`."""
    out = Path(args.out)
    out.mkdir(parents=True, exist_ok=True)
    names = list(known)
    if args.only:
        names = [n.strip() for n in args.only.split(",") if n.strip()]
        unknown = [n for n in names if n not in known]
        if unknown:
            ap.error(f"unknown model(s) {unknown}; known: {list(known)}")
    for name in names:
        d = out / name
        if not args.force and _marker_version(d) == recipe_version:
            print(f"[skip] {name}: complete", file=sys.stderr)
            continue
        yield name, d


def _marker_version(model_dir: Path):
    marker = model_dir / MARKER
    if not marker.exists():
        return None
    try:
        body = json.loads(marker.read_text())
    except (OSError, ValueError):
        return None
    return body.get("recipe_version") if body else None


def write_marker(model_dir: Path, recipe_version, name, **extra):
    """Marks model_dir complete (last step of its build); the marker records the versions."""
    info = {"recipe_version": recipe_version, **versions(), "name": name, **extra}
    (model_dir / MARKER).write_text(json.dumps(info, indent=1) + "\n")


def apply_adapter(model, adapter_path):
    """mlx_lm.utils.load's adapter step: load_adapters(model, adapter_path) then model.eval()
    (nothing when adapter_path is None). --adapter on greedy.py, sample.py and batch.py."""
    if adapter_path is None:
        return
    from mlx_lm.tuner.utils import load_adapters

    load_adapters(model, adapter_path)
    model.eval()
