"""Forced tool use through the official SDKs, unchanged, against an mlx-ring server whose model
has a tool-call format.

Usage: forced_tools_check.py --base-url http://127.0.0.1:PORT

Checks ({"name", "ok", "detail"} each, printed as one JSON object; exit status 0 regardless):
- anthropic `messages.create(tools=..., tool_choice={"type": "tool", "name": "get_weather"})`:
  tool_use blocks of get_weather only (parallel calls are allowed by default), each input valid
  against its schema, stop_reason tool_use;
- anthropic `tool_choice={"type": "any"}`: a tool_use block of a defined tool;
- openai `chat.completions.create(tool_choice={"type": "function", "function": {"name": ...}})`:
  calls of it only, with valid arguments, finish_reason tool_calls;
- openai `responses.create(tool_choice={"type": "function", "name": ...})`: function_call items of it only.
"""
import argparse
import json
import sys

import anthropic
import jsonschema
import openai

SCHEMA = {"type": "object", "properties": {"city": {"type": "string", "maxLength": 24},
                                           "days": {"type": "integer", "minimum": 1, "maximum": 14}},
          "required": ["city", "days"], "additionalProperties": False}
QUESTION = "What will the weather be like in Lyon over the next three days?"


def check(results, name, fn):
    try:
        ok, detail = fn()
    except Exception as e:  # the check failed; the message says how
        ok, detail = False, f"{type(e).__name__}: {e}"
    results.append({"name": name, "ok": bool(ok), "detail": detail})


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--base-url", required=True)
    args = ap.parse_args()
    a = anthropic.Anthropic(base_url=args.base_url, api_key="unused", max_retries=0, timeout=600)
    o = openai.OpenAI(base_url=args.base_url + "/v1", api_key="unused", max_retries=0, timeout=600)
    a_tools = [{"name": "get_time", "description": "The time", "input_schema": {"type": "object"}},
               {"name": "get_weather", "description": "The forecast", "input_schema": SCHEMA}]
    o_tools = [{"type": "function", "function": {"name": t["name"], "description": t["description"],
                                                  "parameters": t["input_schema"]}} for t in a_tools]
    results = []

    def anthropic_tool():
        m = a.messages.create(model="default_model", max_tokens=160, tools=a_tools,
                              tool_choice={"type": "tool", "name": "get_weather"},
                              messages=[{"role": "user", "content": QUESTION}])
        uses = [b for b in m.content if b.type == "tool_use"]
        for u in uses:  # parallel calls are allowed (disable_parallel_tool_use is false by default)
            jsonschema.validate(u.input, SCHEMA)
        return len(uses) >= 1 and all(u.name == "get_weather" for u in uses) and m.stop_reason == "tool_use", \
            m.model_dump()
    check(results, "anthropic_tool_choice_tool", anthropic_tool)

    def anthropic_any():
        m = a.messages.create(model="default_model", max_tokens=160, tools=a_tools, tool_choice={"type": "any"},
                              messages=[{"role": "user", "content": QUESTION}])
        uses = [b for b in m.content if b.type == "tool_use"]
        return len(uses) >= 1 and uses[0].name in ("get_time", "get_weather") and m.stop_reason == "tool_use", \
            m.model_dump()
    check(results, "anthropic_tool_choice_any", anthropic_any)

    def openai_named():
        r = o.chat.completions.create(model="default_model", max_tokens=160, tools=o_tools,
                                      tool_choice={"type": "function", "function": {"name": "get_weather"}},
                                      messages=[{"role": "user", "content": QUESTION}])
        c = r.choices[0]
        calls = c.message.tool_calls or []
        for call in calls:
            jsonschema.validate(json.loads(call.function.arguments), SCHEMA)
        return len(calls) >= 1 and all(call.function.name == "get_weather" for call in calls) \
            and c.finish_reason == "tool_calls", r.model_dump()
    check(results, "openai_chat_named_tool", openai_named)

    def responses_named():
        r = o.responses.create(model="default_model", max_output_tokens=160, input=QUESTION,
                               tools=[{"type": "function", "name": "get_weather", "parameters": SCHEMA}],
                               tool_choice={"type": "function", "name": "get_weather"})
        calls = [i for i in r.output if i.type == "function_call"]
        for call in calls:
            jsonschema.validate(json.loads(call.arguments), SCHEMA)
        return len(calls) >= 1 and all(call.name == "get_weather" for call in calls), r.model_dump()
    check(results, "openai_responses_named_tool", responses_named)

    json.dump({"checks": results}, sys.stdout, default=str)


if __name__ == "__main__":
    main()
