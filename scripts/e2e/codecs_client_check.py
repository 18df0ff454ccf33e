"""End-to-end checks of an mlx-ring server through the official `anthropic` client
(/v1/messages) and the official `openai` client's `responses` (/v1/responses).

Usage: codecs_client_check.py --base-url http://127.0.0.1:PORT [--max-tokens N]

Prints one JSON object: {"anthropic_version", "openai_version", "checks": [{"name", "ok",
"detail"}]}. Exit status 0 even when checks fail: the Java test reads the JSON and asserts.
Greedy requests (temperature 0) make streamed and non-streamed answers comparable.
"""
import argparse
import json

import anthropic
import openai

QUESTION = "What is the capital of France?"
SYSTEM = "You are a helpful assistant."


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--base-url", required=True)
    ap.add_argument("--max-tokens", type=int, default=12)
    args = ap.parse_args()
    n = args.max_tokens

    claude = anthropic.Anthropic(base_url=args.base_url, api_key="unused", max_retries=0, timeout=300)
    oai = openai.OpenAI(base_url=args.base_url + "/v1", api_key="unused", max_retries=0, timeout=300)
    model = "default_model"
    checks = []

    def check(name, fn):
        try:
            checks.append({"name": name, "ok": True, "detail": fn()})
        except Exception as e:  # noqa: BLE001 - every failure is reported, not raised
            checks.append({"name": name, "ok": False, "detail": f"{type(e).__name__}: {e}"})

    def ask(**kw):
        # anthropic 2.x has no temperature argument; the server's default (--temp 0) is greedy
        return claude.messages.create(model=model, max_tokens=n, system=SYSTEM,
                                      messages=[{"role": "user", "content": QUESTION}], **kw)

    answers = {}

    def answer():
        if "messages" not in answers:
            answers["messages"] = ask()
        return answers["messages"]

    # ---- anthropic ----
    def messages_create():
        m = answer()
        assert m.type == "message" and m.role == "assistant", m
        assert m.content and m.content[0].type == "text", m.content
        assert "Paris" in m.content[0].text, m.content[0].text
        assert m.stop_reason in ("end_turn", "max_tokens"), m.stop_reason
        assert m.usage.input_tokens > 0 and m.usage.output_tokens > 0, m.usage
        return {"text": m.content[0].text, "usage": m.usage.model_dump()}

    def messages_stream_helpers():
        texts, events = [], []
        with claude.messages.stream(model=model, max_tokens=n, system=SYSTEM,
                                    messages=[{"role": "user", "content": QUESTION}]) as stream:
            for event in stream:
                events.append(event.type)
                if event.type == "text":
                    texts.append(event.text)
            final = stream.get_final_message()
        streamed = "".join(texts)
        assert events[0] == "message_start", events[:3]
        assert "content_block_start" in events and "content_block_stop" in events, events
        assert events[-2:] == ["message_delta", "message_stop"], events[-3:]
        assert final.content[0].text == streamed, (final.content, streamed)
        once = answer()
        assert once.content[0].text == streamed, (once.content[0].text, streamed)
        assert final.stop_reason == once.stop_reason and final.usage.output_tokens == once.usage.output_tokens
        # The prompt is the same; how much of it the prefix cache served differs between the two
        # calls (Anthropic's input_tokens excludes cache reads), so compare the whole prompt.
        def prompt_tokens(u):
            return u.input_tokens + (u.cache_read_input_tokens or 0)
        assert prompt_tokens(final.usage) == prompt_tokens(once.usage), (final.usage, once.usage)
        return streamed

    def count_tokens():
        c = claude.messages.count_tokens(model=model, system=SYSTEM,
                                         messages=[{"role": "user", "content": QUESTION}])
        m = answer()
        assert c.input_tokens == m.usage.input_tokens + (m.usage.cache_read_input_tokens or 0), (c, m.usage)
        return c.input_tokens

    def stop_sequence():
        base = answer().content[0].text
        word = base.split()[2]
        m = ask(stop_sequences=["zzz-never", word])
        assert m.stop_reason == "stop_sequence", m.stop_reason
        assert m.stop_sequence == word, (m.stop_sequence, word)
        assert base.startswith(m.content[0].text) and word not in m.content[0].text, (base, m.content)
        return {"stop": word, "text": m.content[0].text}

    def errors():
        seen = {}
        try:
            claude.messages.create(model=model, max_tokens=4, messages=[{"role": "user", "content": [
                {"type": "image", "source": {"type": "base64", "media_type": "image/png", "data": "iVBORw0KGgo="}}]}])
            raise AssertionError("an image was accepted")
        except anthropic.BadRequestError as e:
            assert e.status_code == 400 and "image" in str(e), e
            assert e.body["error"]["type"] == "invalid_request_error", e.body
            seen["image"] = e.body["error"]["message"]
        try:
            claude.messages.create(model="claude-none", max_tokens=4, messages=[{"role": "user", "content": "hi"}])
            raise AssertionError("an unknown model was accepted")
        except anthropic.NotFoundError as e:
            assert e.body["error"]["type"] == "not_found_error", e.body
            seen["model"] = e.body["error"]["message"]
        try:
            claude.messages.create(model=model, max_tokens=4, extra_body={"temperature": 3.0},
                                   messages=[{"role": "user", "content": "hi"}])
            raise AssertionError("temperature 3 was accepted")
        except anthropic.BadRequestError as e:
            assert "temperature" in e.body["error"]["message"], e.body
            seen["temperature"] = e.body["error"]["message"]
        return seen

    # ---- openai responses ----
    def response():
        if "responses" not in answers:
            answers["responses"] = oai.responses.create(model=model, instructions=SYSTEM, input=QUESTION,
                                                        max_output_tokens=n, temperature=0.0)
        return answers["responses"]

    def responses_create():
        r = response()
        assert r.object == "response" and r.status in ("completed", "incomplete"), r.status
        assert "Paris" in r.output_text, r.output_text
        assert r.usage.input_tokens > 0 and r.usage.output_tokens > 0, r.usage
        return {"text": r.output_text, "status": r.status}

    def responses_stream():
        kinds, deltas, seqs = [], [], []
        with oai.responses.stream(model=model, instructions=SYSTEM, input=QUESTION, max_output_tokens=n,
                                  temperature=0.0) as stream:
            for event in stream:
                kinds.append(event.type)
                seqs.append(event.sequence_number)
                if event.type == "response.output_text.delta":
                    deltas.append(event.delta)
            final = stream.get_final_response()
        assert seqs == list(range(len(seqs))), seqs
        assert kinds[:2] == ["response.created", "response.in_progress"], kinds[:3]
        assert kinds[-1] in ("response.completed", "response.incomplete"), kinds[-1]
        for k in ("response.output_item.added", "response.content_part.added", "response.output_text.done",
                  "response.output_item.done"):
            assert k in kinds, (k, kinds)
        once = response()
        assert "".join(deltas) == once.output_text, (deltas, once.output_text)
        if final is not None:
            assert final.output_text == once.output_text, (final.output_text, once.output_text)
        return "".join(deltas)

    def responses_chain():
        first = oai.responses.create(model=model, input="My name is Ada. Say hello.", max_output_tokens=6,
                                     temperature=0.0)
        second = oai.responses.create(model=model, previous_response_id=first.id, input="What is my name?",
                                      max_output_tokens=6, temperature=0.0)
        alone = oai.responses.create(model=model, input="What is my name?", max_output_tokens=1, temperature=0.0)
        # the chain renders the first turn (input and output) before the new input
        assert second.usage.input_tokens > alone.usage.input_tokens + first.usage.output_tokens, (
            second.usage, alone.usage, first.usage)
        got = oai.responses.retrieve(first.id)
        assert got.id == first.id and got.output_text == first.output_text
        deleted = oai.responses.delete(first.id)
        try:
            oai.responses.retrieve(first.id)
            raise AssertionError("a deleted response is still stored")
        except openai.NotFoundError:
            pass
        try:
            oai.responses.create(model=model, previous_response_id=first.id, input="x", max_output_tokens=2)
            raise AssertionError("a deleted previous_response_id was accepted")
        except openai.NotFoundError as e:
            assert e.body["param"] == "previous_response_id", e.body
        return {"first": first.output_text, "second": second.output_text, "deleted": str(deleted)}

    def responses_errors():
        try:
            oai.responses.create(model=model, input=[{"role": "user", "content": [
                {"type": "input_image", "image_url": "https://example.com/x.png"}]}], max_output_tokens=4)
            raise AssertionError("an image was accepted")
        except openai.BadRequestError as e:
            assert "image" in e.body["message"], e.body
            return e.body["message"]

    check("messages_create", messages_create)
    check("messages_stream_helpers", messages_stream_helpers)
    check("count_tokens", count_tokens)
    check("stop_sequence", stop_sequence)
    check("messages_errors", errors)
    check("responses_create", responses_create)
    check("responses_stream", responses_stream)
    check("responses_chain", responses_chain)
    check("responses_errors", responses_errors)
    print(json.dumps({"anthropic_version": anthropic.__version__, "openai_version": openai.__version__,
                      "checks": checks}))


if __name__ == "__main__":
    main()
