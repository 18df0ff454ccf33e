"""Reads tool calls from a server through the official `openai` client, the way an agent harness
does: a non-streaming create, a raw stream whose `delta.tool_calls` are merged by `index`, and the
SDK's own stream helper (`client.chat.completions.stream`, which accumulates and validates them).

Usage: openai_tool_calls.py --base-url http://127.0.0.1:PORT/v1
Prints {"create": R, "raw_stream": R, "stream_helper": R} with R = {"finish_reason", "content",
"tool_calls": [{"id", "name", "arguments"}]}, or {"error": "..."} for a mode that failed.
"""
import argparse
import json

import openai

TOOLS = [{"type": "function", "function": {
    "name": "get_weather", "parameters": {"type": "object", "properties": {"city": {"type": "string"}}}}}]
MESSAGES = [{"role": "user", "content": "Weather?"}]


def summary(finish_reason, content, calls):
    return {"finish_reason": finish_reason, "content": content,
            "tool_calls": [{"id": c["id"], "name": c["name"], "arguments": c["arguments"]} for c in calls]}


def create(client):
    r = client.chat.completions.create(model="tiny", messages=MESSAGES, tools=TOOLS)
    m = r.choices[0].message
    calls = [{"id": c.id, "name": c.function.name, "arguments": c.function.arguments} for c in m.tool_calls or []]
    return summary(r.choices[0].finish_reason, m.content, calls)


def raw_stream(client):
    calls = {}
    content = ""
    finish = None
    for chunk in client.chat.completions.create(model="tiny", messages=MESSAGES, tools=TOOLS, stream=True):
        if not chunk.choices:
            continue
        ch = chunk.choices[0]
        content += ch.delta.content or ""
        for tc in ch.delta.tool_calls or []:
            acc = calls.setdefault(tc.index, {"id": None, "name": "", "arguments": ""})
            acc["id"] = tc.id or acc["id"]
            if tc.function is not None:
                acc["name"] += tc.function.name or ""
                acc["arguments"] += tc.function.arguments or ""
        finish = ch.finish_reason or finish
    return summary(finish, content, [calls[i] for i in sorted(calls)])


def stream_helper(client):
    with client.chat.completions.stream(model="tiny", messages=MESSAGES, tools=TOOLS) as s:
        final = s.get_final_completion()
    m = final.choices[0].message
    calls = [{"id": c.id, "name": c.function.name, "arguments": c.function.arguments} for c in m.tool_calls or []]
    return summary(final.choices[0].finish_reason, m.content, calls)


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--base-url", required=True)
    a = ap.parse_args()
    client = openai.OpenAI(base_url=a.base_url, api_key="unused", max_retries=0, timeout=60)
    out = {}
    for name, fn in (("create", create), ("raw_stream", raw_stream), ("stream_helper", stream_helper)):
        try:
            out[name] = fn(client)
        except Exception as e:  # reported to the Java test, which fails with the message
            out[name] = {"error": f"{type(e).__name__}: {e}"}
    print(json.dumps(out, ensure_ascii=False))


if __name__ == "__main__":
    main()
