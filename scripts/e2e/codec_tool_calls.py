"""Tool-use round trips through the official `anthropic` client (/v1/messages) and the official
`openai` client's `responses` (/v1/responses), against a server whose scripted model first
thinks, says "Let me check." and calls get_weather(city="Zürich", days=3), and, once it is given
a tool result, answers "It is sunny in Zürich. STOP here".

Usage: codec_tool_calls.py --base-url http://127.0.0.1:PORT
Prints one JSON object of results per mode; a mode that raised carries {"error": ...}.
"""
import argparse
import json

import anthropic
import openai

CLAUDE_TOOLS = [{"name": "get_weather", "description": "Weather for a city",
                 "input_schema": {"type": "object", "properties": {"city": {"type": "string"},
                                                                   "days": {"type": "integer"}}}}]
OPENAI_TOOLS = [{"type": "function", "name": "get_weather", "description": "Weather for a city",
                 "parameters": {"type": "object", "properties": {"city": {"type": "string"},
                                                                 "days": {"type": "integer"}}}}]
ASK = "What is the weather in Zürich?"


def blocks(message):
    out = []
    for b in message.content:
        if b.type == "text":
            out.append({"type": "text", "text": b.text})
        elif b.type == "thinking":
            out.append({"type": "thinking", "thinking": b.thinking})
        elif b.type == "tool_use":
            out.append({"type": "tool_use", "name": b.name, "input": b.input, "id": b.id})
    return out


def items(response):
    out = []
    for o in response.output:
        if o.type == "message":
            out.append({"type": "message", "text": "".join(c.text for c in o.content)})
        elif o.type == "reasoning":
            out.append({"type": "reasoning", "text": "".join(c.text for c in (o.content or []))})
        elif o.type == "function_call":
            out.append({"type": "function_call", "name": o.name, "arguments": o.arguments, "call_id": o.call_id})
    return out


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--base-url", required=True)
    args = ap.parse_args()
    claude = anthropic.Anthropic(base_url=args.base_url, api_key="unused", max_retries=0, timeout=60)
    oai = openai.OpenAI(base_url=args.base_url + "/v1", api_key="unused", max_retries=0, timeout=60)
    model = "default_model"
    results = {}

    def run(name, fn):
        try:
            results[name] = fn()
        except Exception as e:  # noqa: BLE001 - reported to the Java test
            results[name] = {"error": f"{type(e).__name__}: {e}"}

    def claude_round_trip():
        user = {"role": "user", "content": ASK}
        first = claude.messages.create(model=model, max_tokens=64, tools=CLAUDE_TOOLS, messages=[user])
        use = next(b for b in first.content if b.type == "tool_use")
        # the assistant turn goes back as the client returned it, then the tool's result
        second = claude.messages.create(model=model, max_tokens=64, tools=CLAUDE_TOOLS, messages=[
            user, {"role": "assistant", "content": first.content},
            {"role": "user", "content": [{"type": "tool_result", "tool_use_id": use.id,
                                          "content": [{"type": "text", "text": "sunny, 21 C"}]}]}])
        stopped = claude.messages.create(model=model, max_tokens=64, tools=CLAUDE_TOOLS, stop_sequences=["STOP"],
                                         messages=[user, {"role": "assistant", "content": first.content},
                                                   {"role": "user", "content": [{"type": "tool_result",
                                                                                 "tool_use_id": use.id,
                                                                                 "content": "sunny, 21 C"}]}])
        return {"first": blocks(first), "first_stop": first.stop_reason, "second": blocks(second),
                "second_stop": second.stop_reason, "stopped": blocks(stopped), "stopped_stop": stopped.stop_reason,
                "stop_sequence": stopped.stop_sequence, "usage": first.usage.model_dump()}

    def claude_stream():
        kinds = []
        inputs = []
        with claude.messages.stream(model=model, max_tokens=64, tools=CLAUDE_TOOLS,
                                    messages=[{"role": "user", "content": ASK}]) as stream:
            for event in stream:
                kinds.append(event.type)
                if event.type == "input_json":
                    inputs.append(event.snapshot)
            final = stream.get_final_message()
        return {"events": kinds, "final": blocks(final), "stop": final.stop_reason, "input_snapshots": inputs}

    def responses_round_trip():
        first = oai.responses.create(model=model, input=ASK, tools=OPENAI_TOOLS, max_output_tokens=64)
        call = next(o for o in first.output if o.type == "function_call")
        chained = oai.responses.create(model=model, previous_response_id=first.id, tools=OPENAI_TOOLS,
                                       max_output_tokens=64, input=[{"type": "function_call_output",
                                                                     "call_id": call.call_id,
                                                                     "output": "sunny, 21 C"}])
        # the same turn without the store: the client sends the output items back itself
        manual = oai.responses.create(model=model, tools=OPENAI_TOOLS, max_output_tokens=64, store=False, input=[
            {"role": "user", "content": ASK}, *[o.model_dump(exclude_none=True) for o in first.output],
            {"type": "function_call_output", "call_id": call.call_id, "output": "sunny, 21 C"}])
        return {"first": items(first), "first_status": first.status, "chained": items(chained),
                "chained_text": chained.output_text, "manual_text": manual.output_text}

    def responses_stream():
        kinds, seqs, arg_deltas = [], [], []
        with oai.responses.stream(model=model, input=ASK, tools=OPENAI_TOOLS, max_output_tokens=64) as stream:
            for event in stream:
                kinds.append(event.type)
                seqs.append(event.sequence_number)
                if event.type == "response.function_call_arguments.delta":
                    arg_deltas.append(event.delta)
            final = stream.get_final_response()
        return {"events": kinds, "sequence_numbers": seqs, "arguments": "".join(arg_deltas),
                "final": items(final), "status": final.status}

    run("claude_round_trip", claude_round_trip)
    run("claude_stream", claude_stream)
    run("responses_round_trip", responses_round_trip)
    run("responses_stream", responses_stream)
    print(json.dumps(results, ensure_ascii=False))


if __name__ == "__main__":
    main()
