"""One streamed chat completion over plain urllib, shared by the bench scripts that time a
server from outside it (bench_agreement.py's independent client, hybrid_turn_ttft.py).

TTFT is the first content chunk's arrival less the request's send; usage comes from the
`stream_options.include_usage` chunk. Also the random-word text both scripts build prompts from.
"""

import json
import time
import urllib.request

WORDS = ("the of and to in is it you that he was for on are with as his they be at one have this from or had by"
         " hot word but what some we can out other were all there when up use your how said an each she which"
         " do their time if will way about many then them write would like so these her long make thing see").split()


def words(rng, n):
    """n random words from WORDS, space-separated."""
    return " ".join(rng.choice(WORDS) for _ in range(n))


def stream_chat(base, model_id, messages, max_tokens, timeout_s=1800):
    """Streams one greedy chat completion: (ttft_ms, content, usage); exits naming the server
    when no content comes back."""
    body = {"model": model_id, "messages": messages, "max_tokens": max_tokens, "temperature": 0.0,
            "stream": True, "stream_options": {"include_usage": True}}
    req = urllib.request.Request(base + "/v1/chat/completions", json.dumps(body).encode(),
                                 {"Content-Type": "application/json"})
    sent = time.monotonic()
    first = None
    content = []
    usage = None
    with urllib.request.urlopen(req, timeout=timeout_s) as resp:
        for raw in resp:
            line = raw.decode().strip()
            if not line.startswith("data:") or line[5:].strip() == "[DONE]":
                continue
            event = json.loads(line[5:])
            choices = event.get("choices") or []
            piece = (choices[0].get("delta") or {}).get("content") if choices else None
            if piece:
                if first is None:
                    first = time.monotonic()
                content.append(piece)
            if event.get("usage"):
                usage = event["usage"]
    if first is None:
        raise SystemExit("no content came back from " + base)
    return (first - sent) * 1000.0, "".join(content), usage
