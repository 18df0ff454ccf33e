"""Structured outputs against a running mlx-ring server, through the official SDKs unchanged.

Usage: structured_outputs_check.py --base-url http://127.0.0.1:PORT [--objects N] [--concurrency 8]

Checks (each one {"name", "ok", "detail"} in the printed JSON object):
- openai `client.chat.completions.parse(response_format=PydanticModel)`: `.parsed` is the model;
- N objects (default 64) over eight JSON schemas (nested objects, arrays with min/max items, enums,
  $defs/$ref, a pattern, anyOf with null, integer bounds, a const), sampled at temperature 0.9 with
  a seed per request from `--concurrency` concurrent clients: every complete object validates
  against its schema (jsonschema), every cut one ends with finish_reason "length";
- a regex and a choice through vLLM's `structured_outputs` extra field;
- a cut output: finish_reason "length", and `.parse()` raises LengthFinishReasonError rather
  than presenting it as a valid object;
- OpenAI Responses `client.responses.parse(text_format=PydanticModel)`;
- Anthropic Messages with `output_format` (the SDK's extra_body): the text validates.
Exit status 0 even when checks fail: the Java test reads the JSON and asserts.
"""
import argparse
import concurrent.futures
import json
import re
import sys
import time
from typing import List, Literal, Optional

import anthropic
import jsonschema
import openai
from pydantic import BaseModel, Field

MODEL = "default_model"


class City(BaseModel):
    name: str = Field(max_length=24)
    country: str = Field(max_length=24)
    population: int = Field(ge=0, le=100000000)


class Cities(BaseModel):
    cities: List[City] = Field(min_length=1, max_length=2)
    note: Optional[str] = Field(default=None, max_length=30)


SCHEMAS = {
    "nested": {"type": "object", "properties": {
        "person": {"type": "object", "properties": {
            "name": {"type": "string", "maxLength": 20}, "age": {"type": "integer", "minimum": 0, "maximum": 120}},
            "required": ["name", "age"], "additionalProperties": False}},
        "required": ["person"], "additionalProperties": False},
    "array": {"type": "object", "properties": {
        "tags": {"type": "array", "items": {"type": "string", "maxLength": 12}, "minItems": 2, "maxItems": 4}},
        "required": ["tags"], "additionalProperties": False},
    "enum": {"type": "object", "properties": {
        "color": {"enum": ["red", "green", "blue"]}, "size": {"type": "string", "enum": ["S", "M", "L"]}},
        "required": ["color", "size"], "additionalProperties": False},
    "ref": {"$defs": {"point": {"type": "object", "properties": {
        "x": {"type": "integer", "minimum": -100, "maximum": 100}, "y": {"type": "integer", "minimum": -100, "maximum": 100}},
        "required": ["x", "y"], "additionalProperties": False}},
        "type": "object", "properties": {"from": {"$ref": "#/$defs/point"}, "to": {"$ref": "#/$defs/point"}},
        "required": ["from", "to"], "additionalProperties": False},
    "pattern": {"type": "object", "properties": {
        "phone": {"type": "string", "pattern": "^[0-9]{3}-[0-9]{4}$"}, "code": {"type": "string", "pattern": "^[A-Z]{2}[0-9]{2}$"}},
        "required": ["phone", "code"], "additionalProperties": False},
    "nullable": {"type": "object", "properties": {
        "title": {"type": "string", "maxLength": 20}, "subtitle": {"anyOf": [{"type": "string", "maxLength": 20}, {"type": "null"}]}},
        "required": ["title", "subtitle"], "additionalProperties": False},
    "numbers": {"type": "object", "properties": {
        "count": {"type": "integer", "minimum": 1, "maximum": 9}, "ratio": {"type": "number", "minimum": 0, "maximum": 1},
        "ok": {"type": "boolean"}},
        "required": ["count", "ratio", "ok"], "additionalProperties": False},
    "const": {"type": "object", "properties": {
        "kind": {"const": "event"}, "items": {"type": "array", "items": {"enum": [1, 2, 3]}, "maxItems": 3}},
        "required": ["kind", "items"], "additionalProperties": False},
}


def check(results, name, fn):
    t0 = time.time()
    try:
        ok, detail = fn()
    except Exception as e:  # a check that raises failed; the message says how
        ok, detail = False, f"{type(e).__name__}: {e}"
    results.append({"name": name, "ok": bool(ok), "detail": detail, "seconds": round(time.time() - t0, 2)})


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--base-url", required=True)
    ap.add_argument("--objects", type=int, default=64)
    ap.add_argument("--concurrency", type=int, default=8)
    args = ap.parse_args()
    client = openai.OpenAI(base_url=args.base_url + "/v1", api_key="unused", max_retries=0, timeout=600)
    results = []

    def parse():
        r = client.chat.completions.parse(model=MODEL, max_tokens=300, response_format=Cities, messages=[
            {"role": "user", "content": "Name two large cities and their countries as JSON."}])
        parsed = r.choices[0].message.parsed
        return isinstance(parsed, Cities) and r.choices[0].finish_reason == "stop", parsed.model_dump_json() if parsed else r.model_dump_json()
    check(results, "openai_parse_pydantic", parse)

    def many():
        names = list(SCHEMAS)
        jobs = [(names[i % len(names)], i) for i in range(args.objects)]

        def one(job):
            name, seed = job
            r = client.chat.completions.create(model=MODEL, max_tokens=160, temperature=0.9, seed=seed, messages=[
                {"role": "user", "content": f"Give me a JSON object ({name})."}],
                response_format={"type": "json_schema", "json_schema": {"name": name, "strict": True,
                                                                         "schema": SCHEMAS[name]}})
            c = r.choices[0]
            if c.finish_reason == "length":
                return name, "length", None
            try:
                jsonschema.validate(json.loads(c.message.content), SCHEMAS[name])
                return name, "valid", None
            except Exception as e:
                return name, "invalid", f"{c.message.content!r}: {e}"

        with concurrent.futures.ThreadPoolExecutor(args.concurrency) as pool:
            out = list(pool.map(one, jobs))
        valid = sum(1 for _, s, _ in out if s == "valid")
        cut = sum(1 for _, s, _ in out if s == "length")
        bad = [d for _, s, d in out if s == "invalid"]
        return not bad and valid > 0, {"objects": len(out), "valid": valid, "length": cut, "invalid": bad[:3]}
    check(results, "schemas_concurrent", many)

    def regex_and_choice():
        r = client.chat.completions.create(model=MODEL, max_tokens=20, messages=[
            {"role": "user", "content": "A phone number?"}], extra_body={"structured_outputs": {"regex": "[0-9]{3}-[0-9]{4}"}})
        phone = r.choices[0].message.content
        c = client.chat.completions.create(model=MODEL, max_tokens=10, messages=[
            {"role": "user", "content": "Is the sky blue?"}], extra_body={"structured_outputs": {"choice": ["yes", "no"]}})
        answer = c.choices[0].message.content
        return re.fullmatch("[0-9]{3}-[0-9]{4}", phone) is not None and answer in ("yes", "no"), [phone, answer]
    check(results, "regex_and_choice", regex_and_choice)

    def truncated():
        r = client.chat.completions.create(model=MODEL, max_tokens=4, messages=[
            {"role": "user", "content": "Two cities as JSON."}],
            response_format={"type": "json_schema", "json_schema": {"name": "c", "schema": Cities.model_json_schema()}})
        raised = False
        try:
            client.chat.completions.parse(model=MODEL, max_tokens=4, response_format=Cities,
                                          messages=[{"role": "user", "content": "Two cities as JSON."}])
        except openai.LengthFinishReasonError:
            raised = True
        return r.choices[0].finish_reason == "length" and raised, [r.choices[0].finish_reason, r.choices[0].message.content, raised]
    check(results, "truncation_is_length", truncated)

    def responses_parse():
        r = client.responses.parse(model=MODEL, max_output_tokens=300, text_format=Cities,
                                   input="Name two large cities and their countries as JSON.")
        return isinstance(r.output_parsed, Cities), r.output_text
    check(results, "responses_parse_pydantic", responses_parse)

    def anthropic_format():
        a = anthropic.Anthropic(base_url=args.base_url, api_key="unused", max_retries=0, timeout=600)
        schema = SCHEMAS["nested"]
        m = a.messages.create(model=MODEL, max_tokens=120, messages=[{"role": "user", "content": "A person as JSON."}],
                              extra_body={"output_format": {"type": "json_schema", "schema": schema}})
        text = "".join(b.text for b in m.content if b.type == "text")
        jsonschema.validate(json.loads(text), schema)
        return m.stop_reason == "end_turn", text
    check(results, "anthropic_output_format", anthropic_format)

    json.dump({"checks": results}, sys.stdout)


if __name__ == "__main__":
    main()
