#!/usr/bin/env python3
"""Detokenizer oracle: what mlx-lm's own streaming detokenizers (and mlx_lm.server's
text handling) produce, as JSON. sink-stage's Java detokenizers must agree segment
for segment.

Every mode reads a JSON spec file and prints one JSON object to stdout
(ensure_ascii=True, so any text round-trips exactly).

  detokenize_oracle.py --detok SPEC.json
      SPEC: {"model": DIR,
             "classes": ["auto" | "bpe" | "spm" | "spm_notrim" | "naive", ...],
             "sequences": [[id, ...], ...],
             "token_strings": bool}          # optional: dump convert_ids_to_tokens
      Loads the tokenizer with mlx_lm.tokenizer_utils.load(DIR) (the TokenizerWrapper
      mlx-lm serves with). "auto" is the wrapper's own detokenizer (tokenizer.detokenizer);
      the others build that mlx-lm class over the same tokenizer. For each sequence:
      reset, then add_token + last_segment per id ("steps"), then finalize +
      last_segment ("final"), and the detokenizer's text at the end ("text").
      Output: {"meta": {...}, "results": {class: [{"steps", "final", "text"}, ...]},
               "token_strings": [str | null, ...]}

  detokenize_oracle.py --utf8 SPEC.json
      SPEC: {"hex": ["e4b8", ...]}; output {"decoded": [bytes.fromhex(h).decode("utf-8",
      "replace"), ...]}.

  detokenize_oracle.py --server SPEC.json
      SPEC: {"model": DIR, "cases": [{"prompt": [id...], "stop": [str...],
                                       "gen": [id...], "end": "length" | "eos",
                                       "tools": [...] | null}]}
      Replays mlx_lm.server's single-request path without a model: stream_generate's
      detokenizer use (EOS not added; on "length" the last token is added and the
      detokenizer finalized in the same response), the token-level stop matcher
      (make_stop_sequences), the initial state of a chat prompt (think start after think
      end), and handle_completion's TextStateMachine split / flush / discard with its
      tool-call collection (tool_text per call, appended when a normal segment follows a
      tool one, what is left in the tool state parsed after the loop, finish reason
      "tool_calls" for "stop" once a call was made), parsed with the tokenizer's own
      tool parser the way ToolCallFormatter does (ValueError / JSONDecodeError drop the
      call). Each case is replayed twice:
        "mlx":    exactly as mlx_lm.server 0.32.2 (a stop word's text is stripped and
                  generation goes on unless its canonical token sequence matched; at EOS
                  the held-back text is discarded);
        "openai": the same machinery with a stop word leading to a terminal state (text
                  up to the first match, then stop; a call open at that point is parsed
                  after the loop, as after a token-level stop); EOS discards as in "mlx".
      Each: {"initial_state", "finish_reason", "text_stop", "text", "reasoning",
             "made_tool_call", "tool_errors": int,
             "responses": [{"text", "reasoning", "finish_reason",
                            "tool_calls": [CALL, ...]}, ...],   # calls closed in it
             "final_tool_calls": [CALL, ...],   # parsed after the loop
             "eos_discarded": {"text", "reasoning"}}   # mlx: what an EOS finish threw away
      CALL: {"name", "arguments": TYPED, "id": str | null}, TYPED a value in a typed form
      that keeps Python's types: {"d": [[key, TYPED], ...]} | {"l": [TYPED, ...]} |
      {"s": str} | {"i": "123"} | {"f": float.hex} | {"b": bool} | null.
      "finish_reason" is the final one (after the tool_calls rule).

  detokenize_oracle.py --build-fixtures DIR --model DEFAULT_MODEL_DIR
      Writes tokenizer fixtures under DIR: spm/ (byte-fallback SentencePiece-style BPE,
      decoder Replace+ByteFallback+Fuse+Strip), spm_notrim/ (same without Strip),
      wordpiece/ (WordPiece with clean_up_tokenization_spaces: the naive detokenizer with
      clean-up), think/ (the default model's tokenizer plus <think> and </think> added
      tokens, so mlx-lm infers thinking), tools/ (the default model's tokenizer plus
      <tool_call> and </tool_call> added tokens and a chat template naming "<tool_call>"
      and "tool_call.name", so mlx-lm infers the json_tools parser). Prints {"dirs": {...}}.
"""

import argparse
import json
import shutil
import sys
from pathlib import Path


def _load(model_dir):
    from mlx_lm.tokenizer_utils import load

    return load(Path(model_dir))


def _detokenizer(tw, cls):
    from mlx_lm import tokenizer_utils as tu

    if cls == "auto":
        return tw.detokenizer
    if cls == "bpe":
        return tu.BPEStreamingDetokenizer(tw._tokenizer)
    if cls == "spm":
        return tu.SPMStreamingDetokenizer(tw._tokenizer)
    if cls == "spm_notrim":
        return tu.SPMStreamingDetokenizer(tw._tokenizer, trim_space=False)
    if cls == "naive":
        return tu.NaiveStreamingDetokenizer(tw._tokenizer)
    raise ValueError(f"unknown detokenizer class {cls!r}")


def _meta(tw):
    det = tw._detokenizer
    return {
        "len": len(tw),
        "detokenizer": type(det).__name__,
        "trim_space": getattr(det, "trim_space", None),
        "clean_spaces": getattr(det, "_clean_spaces", None),
        "has_thinking": tw.has_thinking,
        "think_start": tw.think_start,
        "think_end": tw.think_end,
        "think_start_tokens": list(tw.think_start_tokens) if tw.think_start_tokens else None,
        "think_end_tokens": list(tw.think_end_tokens) if tw.think_end_tokens else None,
        "structural_markers": list(tw.structural_markers),
        "has_tool_calling": tw.has_tool_calling,
        "tool_call_start": tw.tool_call_start,
        "tool_call_end": tw.tool_call_end,
        "tool_parser_type": tw._tokenizer.init_kwargs.get("tool_parser_type"),
        "eos_token_ids": sorted(tw.eos_token_ids),
    }


def run_detok(spec):
    tw = _load(spec["model"])
    results = {}
    for cls in spec["classes"]:
        det = _detokenizer(tw, cls)
        out = []
        for seq in spec["sequences"]:
            det.reset()
            steps = []
            for t in seq:
                det.add_token(t)
                steps.append(det.last_segment)
            det.finalize()
            final = det.last_segment
            out.append({"steps": steps, "final": final, "text": det.text})
        results[cls] = out
    res = {"meta": _meta(tw), "results": results}
    if spec.get("token_strings"):
        res["token_strings"] = tw.convert_ids_to_tokens(list(range(len(tw))))
    return res


def run_utf8(spec):
    return {"decoded": [bytes.fromhex(h).decode("utf-8", "replace") for h in spec["hex"]]}


def _openai_state_machine(tw, stop_words):
    """make_text_state_machine, except that a stop word ends the text (destination None)
    instead of being stripped: OpenAI stop semantics on mlx-lm's own matcher."""
    from mlx_lm.generate import TextStateMachine

    transitions = {}
    if tw.has_thinking:
        transitions["normal"] = [(tw.think_start, "reasoning")]
        transitions["reasoning"] = [(tw.think_end, "normal")]
    if tw.has_tool_calling:
        transitions.setdefault("normal", []).append((tw.tool_call_start, "tool"))
        if tw.has_thinking:
            transitions["reasoning"].append((tw.tool_call_start, "tool"))
        transitions["tool"] = [(tw.tool_call_end, "normal")] if tw.tool_call_end else []
    for w in tw.structural_markers:
        transitions.setdefault("normal", []).append((w, "normal"))
    if stop_words:
        for state_name in set(transitions) | {"normal"}:
            for w in stop_words:
                transitions.setdefault(state_name, []).append((w, None))
    return TextStateMachine(transitions or None)


def _typed(v):
    """A JSON form that keeps Python's types (int vs float, key order)."""
    if v is None:
        return None
    if isinstance(v, bool):
        return {"b": v}
    if isinstance(v, int):
        return {"i": str(v)}
    if isinstance(v, float):
        return {"f": v.hex()}
    if isinstance(v, str):
        return {"s": v}
    if isinstance(v, (list, tuple)):
        return {"l": [_typed(x) for x in v]}
    if isinstance(v, dict):
        return {"d": [[k, _typed(x)] for k, x in v.items()]}
    raise TypeError(f"unexpected {type(v).__name__}")


def _format_tool_calls(tw, tool_texts, tools, errors):
    """ToolCallFormatter.__call__ without the id / json.dumps step: parse each text with the
    tokenizer's tool parser, drop it on ValueError / JSONDecodeError."""
    out = []
    for tool_text in tool_texts:
        try:
            parsed = tw.tool_parser(tool_text, tools)
        except (ValueError, json.JSONDecodeError):
            errors.append(tool_text)
            continue
        if not isinstance(parsed, list):
            parsed = [parsed]
        for tc in parsed:
            # ToolCallFormatter._format: tc.pop("id", None) or uuid4() -- a falsy id is replaced.
            out.append({"name": tc.get("name"), "arguments": _typed(tc["arguments"]), "id": tc.get("id") or None})
    return out


def _replay(tw, prompt, stop_words, gen, end, semantics, tools=None):
    from mlx_lm.generate import TextStateMachine, make_stop_sequences, make_text_state_machine

    stop_sequences = make_stop_sequences(tw, stop_words)
    if semantics == "mlx":
        text_sm = make_text_state_machine(tw, stop_words)
    else:
        text_sm = _openai_state_machine(tw, stop_words)

    # ResponseGenerator._tokenize: the initial state of a chat prompt.
    initial_state = "normal"
    if tw.has_thinking:
        think_start = tw.rfind_think_start(prompt)
        think_end = tw.rfind_think_end(prompt)
        if think_start > think_end:
            initial_state = "reasoning"

    eos = sorted(tw.eos_token_ids)[0]

    # stream_generate's use of the detokenizer, token by token.
    def stream():
        detokenizer = tw.detokenizer
        tokens = list(gen) + ([eos] if end == "eos" else [])
        max_tokens = len(gen) if end == "length" else len(tokens) + 1
        token = None
        for n, token in enumerate(tokens):
            if token in tw.eos_token_ids:
                break
            detokenizer.add_token(token)
            if (n + 1) == max_tokens:
                break
            yield detokenizer.last_segment, token, None
        detokenizer.finalize()
        yield (detokenizer.last_segment, token,
               "stop" if token in tw.eos_token_ids else "length")

    # _serve_single: token-level stop words.
    def responses():
        matcher = stop_sequences.matcher()
        for text, token, finish_reason in stream():
            if matcher.advance(token) and not (token in tw.eos_token_ids and semantics != "mlx"):
                finish_reason = "stop"
            yield text, token, finish_reason
            if finish_reason is not None:
                break

    # handle_completion.
    sm_state = text_sm.make_state(initial_state)
    prev_state = initial_state
    finish_reason = "stop"
    made_tool_call = False
    tool_text = ""
    tool_errors = []
    out = []
    all_text = ""
    all_reasoning = ""
    eos_discarded = {"text": "", "reasoning": ""}
    text_stop = False
    for gen_text, token, gen_finish in responses():
        is_eos = token in tw.eos_token_ids
        if gen_finish == "stop":
            if is_eos:
                # What the discard throws away at EOS: this response's text and the buffer.
                probe_state, probe_segments = TextStateMachine.split(sm_state, gen_text)
                probe_state, flushed, probe_current = TextStateMachine.flush(probe_state)
                probe_segments.append((probe_current, flushed))
                for st, t in probe_segments:
                    if st == "reasoning":
                        eos_discarded["reasoning"] += t
                    elif st == "normal":
                        eos_discarded["text"] += t
            sm_state, current_state = TextStateMachine.discard(sm_state)
            segments = [(current_state, "")]
        else:
            sm_state, segments = TextStateMachine.split(sm_state, gen_text)
            if sm_state[0] is None:
                text_stop = True
                gen_finish = "stop"
            elif gen_finish is not None:
                sm_state, flushed, current_state = TextStateMachine.flush(sm_state)
                segments.append((current_state, flushed))
        text = ""
        reasoning = ""
        tool_calls = []
        for current_state, clean_text in segments:
            if current_state is None:
                # openai: a stop word ended the text; the state it ended in stays current.
                continue
            if current_state == "reasoning":
                reasoning += clean_text
            elif current_state == "tool":
                tool_text += clean_text
            elif current_state == "normal":
                if prev_state == "tool":
                    tool_calls.append(tool_text)
                    tool_text = ""
                    made_tool_call = True
                text += clean_text
            prev_state = current_state
        out.append({"text": text, "reasoning": reasoning, "finish_reason": gen_finish,
                    "tool_calls": _format_tool_calls(tw, tool_calls, tools, tool_errors)})
        all_text += text
        all_reasoning += reasoning
        if gen_finish is not None:
            finish_reason = gen_finish
            break
    final_tool_calls = []
    if prev_state == "tool" and tool_text:
        final_tool_calls.append(tool_text)
        made_tool_call = True
    if finish_reason == "stop" and made_tool_call:
        finish_reason = "tool_calls"
    return {
        "initial_state": initial_state,
        "finish_reason": finish_reason,
        "text_stop": text_stop,
        "text": all_text,
        "reasoning": all_reasoning,
        "made_tool_call": made_tool_call,
        "responses": out,
        "final_tool_calls": _format_tool_calls(tw, final_tool_calls, tools, tool_errors),
        "tool_errors": len(tool_errors),
        "eos_discarded": eos_discarded,
    }


def run_server(spec):
    tw = _load(spec["model"])
    cases = [{sem: _replay(tw, c["prompt"], c.get("stop", []), c["gen"], c.get("end", "length"), sem,
                           c.get("tools"))
              for sem in ("mlx", "openai")}
             for c in spec["cases"]]
    return {"meta": _meta(tw), "cases": cases}


def _added_tokens_fixture(src, d, tokens, chat_template=None):
    """The tokenizer of model dir `src` with `tokens` added (not special, not normalized), its
    config files copied and the added tokens recorded; `chat_template` replaces the template."""
    from tokenizers import AddedToken, Tokenizer

    d.mkdir(parents=True, exist_ok=True)
    tok = Tokenizer.from_file(str(src / "tokenizer.json"))
    base = tok.get_vocab_size(with_added_tokens=True)
    tok.add_tokens([AddedToken(t, special=False, normalized=False) for t in tokens])
    tok.save(str(d / "tokenizer.json"))
    for f in ("tokenizer_config.json", "config.json", "generation_config.json",
              "special_tokens_map.json"):
        if (src / f).exists():
            shutil.copy(src / f, d / f)
    cfg = json.loads((d / "tokenizer_config.json").read_text(encoding="utf-8"))
    added = cfg.setdefault("added_tokens_decoder", {})
    for i, content in enumerate(tokens):
        added[str(base + i)] = {"content": content, "lstrip": False, "normalized": False, "rstrip": False,
                                "single_word": False, "special": False}
    if chat_template is not None:
        cfg["chat_template"] = chat_template
    (d / "tokenizer_config.json").write_text(json.dumps(cfg, indent=1), encoding="utf-8")
    return str(d)


def build_fixtures(root, default_model):
    from tokenizers import AddedToken, Tokenizer, decoders, models, normalizers, pre_tokenizers

    root = Path(root)
    dirs = {}

    # SentencePiece-style: byte fallback, ▁ for spaces.
    pieces = ["▁", "▁▁", "▁▁▁▁", "▁hello", "hello", "▁world", "world", "▁the", "the", "日本", "語",
              "▁日本", "é", "▁café", "caf", "a", "b", "c", ",", "▁,", "▁a", "▁b", ".", "!", "?",
              "\n", "😀", "▁😀", "x", "y", "z", "▁x", "ab", "▁ab", "▁<think>", "▁▁x", "<0x41>x"]
    for name, strip in (("spm", True), ("spm_notrim", False)):
        vocab = {"<unk>": 0, "<s>": 1, "</s>": 2}
        for b in range(256):
            vocab[f"<0x{b:02X}>"] = len(vocab)
        for p in pieces:
            vocab.setdefault(p, len(vocab))
        tok = Tokenizer(models.BPE(vocab=vocab, merges=[], unk_token="<unk>", byte_fallback=True,
                                   fuse_unk=True))
        tok.normalizer = normalizers.Sequence([normalizers.Prepend("▁"), normalizers.Replace(" ", "▁")])
        parts = [decoders.Replace("▁", " "), decoders.ByteFallback(), decoders.Fuse()]
        if strip:
            parts.append(decoders.Strip(" ", 1, 0))
        tok.decoder = decoders.Sequence(parts)
        tok.add_special_tokens(["<unk>", "<s>", "</s>"])
        d = root / name
        d.mkdir(parents=True, exist_ok=True)
        tok.save(str(d / "tokenizer.json"))
        (d / "tokenizer_config.json").write_text(json.dumps({
            "tokenizer_class": "PreTrainedTokenizerFast", "bos_token": "<s>", "eos_token": "</s>",
            "unk_token": "<unk>"}))
        dirs[name] = str(d)

    # WordPiece with clean-up: the naive detokenizer, clean_spaces on.
    words = ["[UNK]", "[CLS]", "[SEP]", "hello", "world", ",", ".", "!", "?", "'", "s", "t", "n",
             "##n", "##'", "##t", "don", "it", "a", "b", "##b", "##llo", "he", "日", "本", "語", "x",
             "##x", "re", "##s", "ve", "m", "é", "##é", "😀", "(", ")", "-"]
    tok = Tokenizer(models.WordPiece(vocab={w: i for i, w in enumerate(words)}, unk_token="[UNK]"))
    tok.pre_tokenizer = pre_tokenizers.BertPreTokenizer()
    tok.decoder = decoders.WordPiece(prefix="##", cleanup=False)
    tok.add_special_tokens(["[UNK]", "[CLS]", "[SEP]"])
    d = root / "wordpiece"
    d.mkdir(parents=True, exist_ok=True)
    tok.save(str(d / "tokenizer.json"))
    (d / "tokenizer_config.json").write_text(json.dumps({
        "tokenizer_class": "PreTrainedTokenizerFast", "clean_up_tokenization_spaces": True,
        "unk_token": "[UNK]", "eos_token": "[SEP]"}))
    dirs["wordpiece"] = str(d)

    # The default model's tokenizer with <think> / </think> (not special, as in Qwen3).
    dirs["think"] = _added_tokens_fixture(Path(default_model), root / "think", ("<think>", "</think>"))

    # With <tool_call> / </tool_call> (not special, as in Qwen2.5) and a chat template that
    # names them: mlx-lm infers json_tools.
    tools_template = (
        "{%- if tools %}<|im_start|>system\n# Tools\n<tools>\n{%- for tool in tools %}{{ tool | tojson }}\n"
        "{%- endfor %}</tools>\nCall a function as <tool_call>\n{\"name\": <name>, \"arguments\": <args>}"
        "\n</tool_call><|im_end|>\n{%- endif %}"
        "{%- for message in messages %}<|im_start|>{{ message.role }}\n{{ message.content or '' }}"
        "{%- if message.tool_calls %}{%- for tool_call in message.tool_calls %}"
        "{%- if tool_call.function is defined %}{%- set tool_call = tool_call.function %}{%- endif %}"
        "<tool_call>\n{\"name\": \"{{ tool_call.name }}\", \"arguments\": {{ tool_call.arguments | tojson }}}"
        "\n</tool_call>{%- endfor %}{%- endif %}<|im_end|>\n{%- endfor %}"
        "{%- if add_generation_prompt %}<|im_start|>assistant\n{%- endif %}")
    dirs["tools"] = _added_tokens_fixture(Path(default_model), root / "tools", ("<tool_call>", "</tool_call>"),
                                          chat_template=tools_template)
    return {"dirs": dirs}


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    g = ap.add_mutually_exclusive_group(required=True)
    g.add_argument("--detok")
    g.add_argument("--utf8")
    g.add_argument("--server")
    g.add_argument("--build-fixtures")
    ap.add_argument("--model")
    a = ap.parse_args()
    if a.build_fixtures:
        if not a.model:
            ap.error("--build-fixtures needs --model")
        res = build_fixtures(a.build_fixtures, a.model)
    else:
        path = a.detok or a.utf8 or a.server
        spec = json.loads(Path(path).read_text(encoding="utf-8"))
        if a.detok:
            res = run_detok(spec)
        elif a.utf8:
            res = run_utf8(spec)
        else:
            res = run_server(spec)
    json.dump(res, sys.stdout, ensure_ascii=True)
    sys.stdout.write("\n")


if __name__ == "__main__":
    main()
