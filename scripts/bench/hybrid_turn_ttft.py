#!/usr/bin/env python3
"""TTFT of an agent's second turn over HTTP: the prefix restored from the prompt cache against
the same-length prompt recomputed, on one running server.

Usage: hybrid_turn_ttft.py --base URL [--words 3900] [--gen 32] [--new-words 64] [--rounds 3]
                           [--model-id default_model]

Per round, two conversations of fresh random words (so neither shares more than the chat
template's first tokens with anything sent before):
  restored:   turn 1 (a user message of --words words, --gen greedy tokens), then turn 2 = turn 1,
              its answer as the assistant message and a user message of --new-words words;
              turn 2's time to first token is the restored figure.
  recomputed: turn 2 of another conversation built the same way, sent without its turn 1, so the
              server computes the whole prompt.
The order of the two alternates round by round. Both turn-2 requests ask for 1 token, streamed;
TTFT = first content chunk - request sent. `usage.prompt_tokens` and
`usage.prompt_tokens_details.cached_tokens` are recorded, so the restored side shows how much it
reused. Prints one JSON object (each round, the medians and their ratio).
"""

import argparse
import json
import os
import random
import statistics

from stream_chat import stream_chat as chat, words as text


def turn2(base, model_id, rng, words, gen, new_words, with_turn1):
    first_user = text(rng, words)
    answer = None
    if with_turn1:
        _, answer, _ = chat(base, model_id, [{"role": "user", "content": first_user}], gen)
    else:
        answer = text(rng, gen)  # about as many tokens as turn 1 would have generated
    messages = [{"role": "user", "content": first_user}, {"role": "assistant", "content": answer},
                {"role": "user", "content": text(rng, new_words)}]
    ttft, _, usage = chat(base, model_id, messages, 1)
    details = (usage or {}).get("prompt_tokens_details") or {}
    return {"ttft_ms": ttft, "prompt_tokens": (usage or {}).get("prompt_tokens"),
            "cached_tokens": details.get("cached_tokens"), "load_1m": os.getloadavg()[0]}


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--base", required=True)
    ap.add_argument("--model-id", default="default_model")
    ap.add_argument("--words", type=int, default=3900)
    ap.add_argument("--gen", type=int, default=32)
    ap.add_argument("--new-words", type=int, default=64)
    ap.add_argument("--rounds", type=int, default=3)
    ap.add_argument("--seed", type=int, default=11)
    a = ap.parse_args()
    rng = random.Random(a.seed)
    chat(a.base, a.model_id, [{"role": "user", "content": text(rng, 64)}], 4)  # warm-up, unrecorded
    rounds = []
    for r in range(a.rounds):
        order = ("recomputed", "restored") if r % 2 == 0 else ("restored", "recomputed")
        row = {"order": "/".join(order)}
        for side in order:
            row[side] = turn2(a.base, a.model_id, rng, a.words, a.gen, a.new_words, side == "restored")
        row["ratio"] = row["restored"]["ttft_ms"] / row["recomputed"]["ttft_ms"]
        rounds.append(row)
        print(json.dumps(row), flush=True)
    med = {side: statistics.median(x[side]["ttft_ms"] for x in rounds) for side in ("restored", "recomputed")}
    print(json.dumps({"rounds": rounds, "median_ttft_ms": med, "median_ratio": statistics.median(x["ratio"] for x in rounds),
                      "ratio_of_medians": med["restored"] / med["recomputed"]}, indent=1))


if __name__ == "__main__":
    main()
