"""End-to-end checks of an mlx-ring server through the official `openai` client.

Usage: openai_client_check.py --base-url http://127.0.0.1:PORT/v1 --model-dir DIR [--compare-mlx-lm]
                              [--mlx-lm-arg ARG ...] [--mlx-lm-model-id ID] [--compare-only]

Runs streaming and non-streaming chat and completions, logprobs, stops and usage through
the `openai` SDK and prints one JSON object: {"checks": [{"name", "ok", "detail"}], ...}.
With --compare-mlx-lm it also starts mlx_lm.server on a free port with the same model and
sends the same greedy requests to both, recording whether the texts are identical;
--mlx-lm-arg passes extra flags to it (e.g. --kv-bits 8, given as two --mlx-lm-arg), and
--compare-only skips the client checks.
Exit status 0 even when checks fail: the Java test reads the JSON and asserts.
"""
import argparse
import json
import os
import socket
import subprocess
import sys
import time
import urllib.request

import openai

QUESTIONS = [
    "What is the capital of France?",
    "Write one sentence about the sea.",
    "List three colors.",
]


def free_port():
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def wait_ready(url, proc, timeout=120):
    deadline = time.time() + timeout
    while time.time() < deadline:
        if proc is not None and proc.poll() is not None:
            raise RuntimeError(f"server exited early with {proc.returncode}")
        try:
            with urllib.request.urlopen(url, timeout=2) as r:
                if r.status == 200:
                    return
        except Exception:
            time.sleep(0.5)
    raise RuntimeError(f"server at {url} not ready after {timeout}s")


def chat(client, model, q, **kw):
    return client.chat.completions.create(
        model=model, messages=[{"role": "user", "content": q}], temperature=0.0, **kw
    )


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--base-url", required=True)
    ap.add_argument("--model-dir", required=True)
    ap.add_argument("--model-id", default="default_model")
    ap.add_argument("--compare-mlx-lm", action="store_true")
    ap.add_argument("--max-tokens", type=int, default=24)
    ap.add_argument("--mlx-lm-arg", action="append", default=[])
    ap.add_argument("--compare-only", action="store_true")
    ap.add_argument("--mlx-lm-model-id", default=None,
                    help="the model mlx_lm.server's requests name (default: --model-dir); default_model makes "
                         "it apply its own --adapter-path, which it skips for a request naming a path")
    args = ap.parse_args()

    client = openai.OpenAI(base_url=args.base_url, api_key="unused", max_retries=0, timeout=300)
    checks = []

    def check(name, fn):
        try:
            detail = fn()
            checks.append({"name": name, "ok": True, "detail": detail})
        except Exception as e:  # noqa: BLE001 - every failure is reported, not raised
            checks.append({"name": name, "ok": False, "detail": f"{type(e).__name__}: {e}"})

    model = args.model_id
    n = args.max_tokens

    def models():
        ids = [m.id for m in client.models.list().data]
        assert ids, "no models listed"
        return ids

    def chat_non_stream():
        r = chat(client, model, QUESTIONS[0], max_tokens=n)
        c = r.choices[0]
        assert r.object == "chat.completion", r.object
        assert c.message.role == "assistant"
        assert c.message.content and "Paris" in c.message.content, c.message.content
        assert c.finish_reason in ("stop", "length"), c.finish_reason
        assert r.usage.prompt_tokens > 0 and r.usage.completion_tokens > 0
        assert r.usage.total_tokens == r.usage.prompt_tokens + r.usage.completion_tokens
        return c.message.content

    def chat_stream():
        parts, finish, usage = [], None, None
        stream = chat(client, model, QUESTIONS[0], max_tokens=n, stream=True,
                      stream_options={"include_usage": True})
        for chunk in stream:
            if chunk.usage is not None:
                usage = chunk.usage
            for c in chunk.choices:
                assert chunk.object == "chat.completion.chunk"
                if c.delta.content:
                    parts.append(c.delta.content)
                if c.finish_reason:
                    finish = c.finish_reason
        text = "".join(parts)
        assert "Paris" in text, text
        assert finish in ("stop", "length"), finish
        assert usage is not None and usage.completion_tokens > 0, usage
        return text

    def stream_equals_non_stream():
        a = chat(client, model, QUESTIONS[1], max_tokens=n).choices[0].message.content
        b = "".join(c.choices[0].delta.content or "" for c in
                    chat(client, model, QUESTIONS[1], max_tokens=n, stream=True) if c.choices)
        assert a == b, (a, b)
        return a

    def completion_non_stream():
        r = client.completions.create(model=model, prompt="The capital of France is", max_tokens=8,
                                      temperature=0.0)
        assert r.object == "text_completion", r.object
        assert r.choices[0].text, r
        return r.choices[0].text

    def completion_stream():
        text = "".join(c.choices[0].text for c in client.completions.create(
            model=model, prompt="The capital of France is", max_tokens=8, temperature=0.0, stream=True)
            if c.choices)
        assert text
        return text

    def logprobs():
        r = chat(client, model, QUESTIONS[2], max_tokens=6, logprobs=True, top_logprobs=3)
        content = r.choices[0].logprobs.content
        assert len(content) == r.usage.completion_tokens, (len(content), r.usage)
        for e in content:
            assert e.logprob <= 0.0
            assert len(e.top_logprobs) == 3
            assert e.top_logprobs[0].logprob >= e.top_logprobs[-1].logprob
        return [round(e.logprob, 4) for e in content]

    def stop():
        base = chat(client, model, QUESTIONS[1], max_tokens=n).choices[0].message.content
        word = base.split()[2] if len(base.split()) > 2 else base[-1]
        r = chat(client, model, QUESTIONS[1], max_tokens=n, stop=[word])
        c = r.choices[0]
        assert word not in c.message.content, (word, c.message.content)
        assert base.startswith(c.message.content), (base, c.message.content)
        assert c.finish_reason == "stop", c.finish_reason
        return {"stop": word, "text": c.message.content}

    def bad_request():
        try:
            client.chat.completions.create(model=model, messages=[], max_tokens=4)
        except openai.BadRequestError as e:
            assert e.status_code == 400
            return str(e.body)
        raise AssertionError("empty messages were accepted")

    if not args.compare_only:
        check("models", models)
        check("chat_non_stream", chat_non_stream)
        check("chat_stream", chat_stream)
        check("stream_equals_non_stream", stream_equals_non_stream)
        check("completion_non_stream", completion_non_stream)
        check("completion_stream", completion_stream)
        check("logprobs", logprobs)
        check("stop", stop)
        check("bad_request", bad_request)

    comparison = []
    if args.compare_mlx_lm:
        port = free_port()
        env = dict(os.environ, HF_HUB_OFFLINE="1", TRANSFORMERS_OFFLINE="1")
        proc = subprocess.Popen(
            [sys.executable, "-m", "mlx_lm", "server", "--model", args.model_dir, "--port", str(port),
             "--host", "127.0.0.1", *args.mlx_lm_arg],
            stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, env=env)
        try:
            wait_ready(f"http://127.0.0.1:{port}/v1/models", proc)
            theirs_model = args.mlx_lm_model_id or args.model_dir
            theirs = openai.OpenAI(base_url=f"http://127.0.0.1:{port}/v1", api_key="unused", max_retries=0,
                                   timeout=300)
            for q in QUESTIONS:
                ours = chat(client, model, q, max_tokens=n).choices[0].message.content
                ref = chat(theirs, theirs_model, q, max_tokens=n).choices[0].message.content
                comparison.append({"question": q, "ours": ours, "mlx_lm": ref, "identical": ours == ref})
            ours = client.completions.create(model=model, prompt="Once upon a time", max_tokens=n,
                                             temperature=0.0).choices[0].text
            ref = theirs.completions.create(model=theirs_model, prompt="Once upon a time", max_tokens=n,
                                            temperature=0.0).choices[0].text
            comparison.append({"question": "completion: Once upon a time", "ours": ours, "mlx_lm": ref,
                               "identical": ours == ref})
        except Exception as e:  # noqa: BLE001
            comparison.append({"error": f"{type(e).__name__}: {e}"})
        finally:
            proc.terminate()
            try:
                proc.wait(timeout=20)
            except subprocess.TimeoutExpired:
                proc.kill()

    print(json.dumps({"openai_version": openai.__version__, "checks": checks, "comparison": comparison}))


if __name__ == "__main__":
    main()
