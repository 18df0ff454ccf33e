"""Named adapters of an mlx-ring server through the official `openai` client.

Usage: adapters_client_check.py --base-url http://127.0.0.1:PORT/v1 --base MODEL_ID
                                --adapter NAME [--adapter NAME ...] [--max-tokens N]

For the base model and each adapter (model "<base>:<NAME>"), sends each question greedily,
one request at a time ("sequential"), then all of them at once from one thread per request
("concurrent": rows of one batch naming different adapters); the last adapter is also asked
for through the "adapters" request field (extra_body) instead of the model id. Then:
- "refusals": the HTTP status and message of a request for "<base>:no-such" (model) and of one
  with adapters "no-such" (field), and whether a plain request still answers after them;
- "prefix": a long prompt sent under the first adapter twice and then under the second, with
  each response's usage.prompt_tokens_details.cached_tokens.
Prints one JSON object; exit status 0 even when a request fails (the Java test asserts).
"""
import argparse
import json
import threading

import openai

QUESTIONS = [
    "What is the capital of France?",
    "Write one sentence about the sea.",
    "List three colors.",
]


def ask(client, model, q, max_tokens, extra=None):
    r = client.chat.completions.create(
        model=model,
        messages=[{"role": "user", "content": q}],
        temperature=0.0,
        max_tokens=max_tokens,
        extra_body=extra,
    )
    return r.choices[0].message.content


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--base-url", required=True)
    ap.add_argument("--base", required=True)
    ap.add_argument("--adapter", action="append", required=True)
    ap.add_argument("--max-tokens", type=int, default=16)
    args = ap.parse_args()
    client = openai.OpenAI(base_url=args.base_url, api_key="none", max_retries=0, timeout=300)

    # (label, model id, extra body)
    targets = [("base", args.base, None)]
    targets += [(n, f"{args.base}:{n}", None) for n in args.adapter]
    last = args.adapter[-1]
    targets.append((f"{last}@field", args.base, {"adapters": last}))

    sequential = {}
    for label, model, extra in targets:
        sequential[label] = [ask(client, model, q, args.max_tokens, extra) for q in QUESTIONS]

    concurrent = {label: [None] * len(QUESTIONS) for label, _, _ in targets}
    errors = []
    start = threading.Barrier(len(targets) * len(QUESTIONS))

    def worker(label, model, extra, i):
        try:
            start.wait()
            concurrent[label][i] = ask(client, model, QUESTIONS[i], args.max_tokens, extra)
        except Exception as e:  # recorded, asserted in Java
            errors.append(f"{label}[{i}]: {e!r}")

    threads = [
        threading.Thread(target=worker, args=(label, model, extra, i))
        for label, model, extra in targets
        for i in range(len(QUESTIONS))
    ]
    for t in threads:
        t.start()
    for t in threads:
        t.join()

    refusals = {}
    for name, model, extra in [
        ("model", f"{args.base}:no-such", None),
        ("field", args.base, {"adapters": "no-such"}),
    ]:
        try:
            ask(client, model, QUESTIONS[0], 2, extra)
            refusals[name] = {"status": 200, "message": ""}
        except openai.APIStatusError as e:
            refusals[name] = {"status": e.status_code, "message": str(e)}
    refusals["served_after"] = ask(client, args.base, QUESTIONS[0], 2) is not None

    long_prompt = " ".join(["The quick brown fox jumps over the lazy dog."] * 12)
    prefix = []
    for name in [args.adapter[0], args.adapter[0], args.adapter[1]]:
        r = client.completions.create(
            model=f"{args.base}:{name}", prompt=long_prompt, max_tokens=2, temperature=0.0
        )
        details = getattr(r.usage, "prompt_tokens_details", None)
        cached = None
        if details is not None:
            cached = details.get("cached_tokens") if isinstance(details, dict) else details.cached_tokens
        prefix.append({"adapter": name, "prompt_tokens": r.usage.prompt_tokens, "cached_tokens": cached})

    print(json.dumps({
        "sequential": sequential,
        "concurrent": concurrent,
        "errors": errors,
        "refusals": refusals,
        "prefix": prefix,
    }))


if __name__ == "__main__":
    main()
