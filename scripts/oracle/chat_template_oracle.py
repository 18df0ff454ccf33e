#!/usr/bin/env python3
"""Chat-template oracle: what transformers' apply_chat_template renders, as JSON.

The Java ChatTemplate (prep-stage, over Jinjava) must agree with this byte for
byte.

  chat_template_oracle.py --model-dir DIR --cases FILE.json

FILE.json is a JSON list of cases:
    [{"name": str,                       # optional, echoed back
      "messages": [{"role": ..., "content": ...}, ...],
      "add_generation_prompt": bool,     # default false
      "tools": [ {...json schema...} ],  # optional
      "kwargs": {"enable_thinking": false, ...},  # optional extra template variables
      "chat_template": str},             # optional: render this template instead of the dir's
     ...]

Output (stdout, one JSON object, ensure_ascii=True so every string round-trips):
    {"transformers_version", "jinja2_version",
     "mode": "tokenizer" | "config-only",
     "results": [{"name", "text": str} | {"name", "error": str, "error_type": str}, ...]}

Two modes, chosen per model dir:
  * tokenizer: DIR has a tokenizer.json, so the full tokenizer loads with
    AutoTokenizer.from_pretrained(DIR, local_files_only=True) and each case is
    tokenizer.apply_chat_template(messages, tools=..., tokenize=False,
    add_generation_prompt=..., **kwargs).
  * config-only: DIR holds only tokenizer_config.json (and maybe
    chat_template.jinja), as the vendored test templates do. No tokenizer can be
    built, so the case is rendered by the very functions apply_chat_template
    calls (transformers.utils.chat_template_utils: _normalize_chat_messages and
    render_jinja_template, i.e. ImmutableSandboxedEnvironment(trim_blocks=True,
    lstrip_blocks=True, extensions=[AssistantTracker, loopcontrols]) with the
    tojson filter and the raise_exception / strftime_now globals), with the same
    template variables: the named special tokens (bos/eos/unk/sep/pad/cls/mask,
    as strings) overlaid by the case's kwargs. Template selection mirrors
    PreTrainedTokenizerBase.get_chat_template (chat_template.jinja wins over the
    config; a list of {name, template} picks "tool_use" when tools are given and
    it exists, else "default").

A case whose template raises (raise_exception, or any other error) gets an
"error" string instead of "text"; the oracle itself still exits 0. HF_HUB_OFFLINE
is forced on: nothing is ever fetched.
"""

import argparse
import json
import os
import sys
from pathlib import Path

os.environ["HF_HUB_OFFLINE"] = "1"
os.environ.setdefault("TRANSFORMERS_VERBOSITY", "error")
os.environ.setdefault("TOKENIZERS_PARALLELISM", "false")

import jinja2  # noqa: E402
import transformers  # noqa: E402
from transformers.utils import chat_template_utils as ctu  # noqa: E402

SPECIAL_TOKEN_ATTRIBUTES = (
    "bos_token", "eos_token", "unk_token", "sep_token", "pad_token", "cls_token", "mask_token",
)


def _token_str(value):
    if isinstance(value, dict):
        return value.get("content")
    return value


class ConfigOnlyRenderer:
    """apply_chat_template(tokenize=False) without a tokenizer: same template, same variables."""

    def __init__(self, model_dir: Path):
        config_file = model_dir / "tokenizer_config.json"
        config = json.loads(config_file.read_text(encoding="utf-8"))
        special_file = model_dir / "special_tokens_map.json"
        if "added_tokens_decoder" not in config and special_file.is_file():
            # transformers' legacy path: special_tokens_map.json overrides the config
            config.update(json.loads(special_file.read_text(encoding="utf-8")))
        self.special_tokens = {}
        for attr in SPECIAL_TOKEN_ATTRIBUTES:
            value = _token_str(config.get(attr))
            if value is not None:
                self.special_tokens[attr] = str(value)

        templates = {}
        jinja_file = model_dir / "chat_template.jinja"
        if jinja_file.is_file():
            templates["default"] = jinja_file.read_text(encoding="utf-8")
        extra_dir = model_dir / "additional_chat_templates"
        if extra_dir.is_dir():
            for f in sorted(extra_dir.glob("*.jinja")):
                templates[f.stem] = f.read_text(encoding="utf-8")
        if len(templates) == 1 and "default" in templates:
            self.chat_template = templates["default"]
        elif templates:
            self.chat_template = templates
        else:
            ct = config.get("chat_template")
            if isinstance(ct, (list, tuple)):
                ct = {t["name"]: t["template"] for t in ct}
            self.chat_template = ct
        if self.chat_template is None:
            raise SystemExit(f"no chat_template in {config_file} (and no chat_template.jinja)")

    def template_for(self, tools):
        if isinstance(self.chat_template, dict):
            if tools is not None and "tool_use" in self.chat_template:
                return self.chat_template["tool_use"]
            if "default" in self.chat_template:
                return self.chat_template["default"]
            raise ValueError(f"multiple chat templates and no default: {sorted(self.chat_template)}")
        return self.chat_template

    def render(self, messages, add_generation_prompt, tools, kwargs, chat_template=None):
        template = chat_template if chat_template is not None else self.template_for(tools)
        if not messages:
            raise ValueError("Cannot apply chat template to an empty conversation. Provide at least one message.")
        conversation = ctu._normalize_chat_messages(messages)
        template_kwargs = {**self.special_tokens, **kwargs}
        rendered, _ = ctu.render_jinja_template(
            conversations=[conversation],
            tools=tools,
            documents=None,
            chat_template=template,
            add_generation_prompt=add_generation_prompt,
            **template_kwargs,
        )
        return rendered[0]


class TokenizerRenderer:
    def __init__(self, model_dir: Path):
        from transformers import AutoTokenizer

        self.tok = AutoTokenizer.from_pretrained(str(model_dir), local_files_only=True)

    def render(self, messages, add_generation_prompt, tools, kwargs, chat_template=None):
        return self.tok.apply_chat_template(
            messages, tools=tools, tokenize=False, add_generation_prompt=add_generation_prompt,
            chat_template=chat_template, **kwargs
        )


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--model-dir", required=True, help="dir with tokenizer_config.json (and tokenizer.json)")
    ap.add_argument("--cases", required=True, help="JSON file: list of cases")
    ap.add_argument("--mode", choices=["auto", "tokenizer", "config-only"], default="auto")
    args = ap.parse_args()

    model_dir = Path(args.model_dir)
    if not (model_dir / "tokenizer_config.json").is_file():
        raise SystemExit(f"{model_dir / 'tokenizer_config.json'} does not exist")
    mode = args.mode
    if mode == "auto":
        mode = "tokenizer" if (model_dir / "tokenizer.json").is_file() else "config-only"
    renderer = TokenizerRenderer(model_dir) if mode == "tokenizer" else ConfigOnlyRenderer(model_dir)

    cases = json.loads(Path(args.cases).read_text(encoding="utf-8"))
    results = []
    for case in cases:
        r = {"name": case.get("name")}
        try:
            r["text"] = renderer.render(
                case["messages"],
                bool(case.get("add_generation_prompt", False)),
                case.get("tools"),
                case.get("kwargs") or {},
                case.get("chat_template"),
            )
        except Exception as e:  # the template raised: report it, the Java side must raise too
            r["error"] = str(e)
            r["error_type"] = type(e).__name__
        results.append(r)

    out = {
        "transformers_version": transformers.__version__,
        "jinja2_version": jinja2.__version__,
        "mode": mode,
        "results": results,
    }
    sys.stdout.write(json.dumps(out, ensure_ascii=True))
    sys.stdout.write("\n")
    return 0


if __name__ == "__main__":
    sys.exit(main())
