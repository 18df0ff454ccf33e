#!/usr/bin/env python3
"""Prompt lookup's ceiling on the speculative.py workloads, from the greedy tokens alone.

Usage: speculative_offline.py [--model DIR] [--max-tokens 300] [--tokens FILE.json]
                              [--costs C1,C2,...] [--decide C1,C2,...]

A greedy request's tokens do not depend on what was proposed, so one plain greedy run (mlx-lm's
generate_step, the oracle our output equals) fixes every round a proposal rule would have: for
each rule below this replays the rounds over those tokens with the server's lookup rule
(PromptLookupSource: n-gram sizes 3 down to 1, the earliest match, the tokens after it) and
reports proposed and accepted tokens, rounds, and the speed-up a round cost table predicts:
tokens / sum over rounds of cost(positions), cost(n) = a forward of n positions in plain steps
(ForwardCosts.EXACT_CPU_COSTS, measured with VerifyForwardProfile). Host work per round is not
counted, so the predictions are ceilings of each rule on this cost table. `oracle` picks, per
round, the k with the best tokens per cost knowing the outcome: no rule reaches it.

--tokens FILE caches the greedy runs (written when absent, read when present). --costs replaces
the cost table the rounds are priced at (cost(1), cost(2), ...: another tier or CPU), --decide the
one the cost-model rules choose their lengths by (default: --costs), so a table's choices can be
priced at another machine's costs.
"""

import argparse
import json
from pathlib import Path

HERE = Path(__file__).resolve().parent
ROOT = HERE.parent.parent
COSTS = [1.00, 1.15, 1.72, 1.79, 2.57, 2.57, 2.49, 2.49]  # ForwardCosts.EXACT_CPU_COSTS
DECIDE = COSTS  # the table CostModel chooses by


def greedy_runs(model_dir, max_tokens):
    import mlx.core as mx
    from mlx_lm import load
    from mlx_lm.generate import generate_step

    from speculative import workloads

    model, tok = load(model_dir)
    runs = {}
    for name, messages in workloads().items():
        prompt = tok.apply_chat_template(messages, add_generation_prompt=True)
        out = []
        for t, _ in generate_step(mx.array(prompt), model, max_tokens=max_tokens):
            if int(t) in tok.eos_token_ids:
                break
            out.append(int(t))
        runs[name] = {"prompt": list(prompt), "output": out}
    return runs


def lookup(tokens, k, min_n=1, max_n=3):
    """PromptLookupSource.propose: the earliest earlier occurrence of the longest matching suffix."""
    length = len(tokens)
    for n in range(min(max_n, length - 1), min_n - 1, -1):
        suffix = tokens[length - n:]
        for i in range(0, length - n):
            if tokens[i:i + n] == suffix:
                return tokens[i + n:i + n + k]
    return []


class Fixed:
    def __init__(self, k):
        self.k = k

    def next(self):
        return self.k

    def record(self, proposed, accepted):
        pass


class PlusOne:
    """The rule before ProposalLength: 1 after a rejection, one more after a whole round, up to k."""

    def __init__(self, k):
        self.k, self.cur = k, 1

    def next(self):
        return self.cur

    def record(self, proposed, accepted):
        if proposed:
            self.cur = min(self.cur + 1, self.k) if accepted == proposed else 1


class CostModel:
    """ProposalLength, line for line."""

    MAX_STREAK, PRIOR_WEIGHT = 3, 2.0

    def __init__(self, k):
        self.k = k
        self.acc = [0] * (self.MAX_STREAK + 1)
        self.rej = [0] * (self.MAX_STREAK + 1)
        self.streak = 0

    def acceptance(self):
        p = 0.5
        for s in range(self.streak + 1):
            p = (self.acc[s] + self.PRIOR_WEIGHT * p) / (self.acc[s] + self.rej[s] + self.PRIOR_WEIGHT)
        return p

    def next(self):
        p, best, best_rate, expected, power = self.acceptance(), 1, 0.0, 1.0, 1.0
        for k in range(1, min(self.k, len(DECIDE) - 1) + 1):
            power *= p
            expected += power
            if expected / DECIDE[k] > best_rate:
                best, best_rate = k, expected / DECIDE[k]
        return best

    def record(self, proposed, accepted):
        if not proposed:
            return
        self.acc[self.streak] += accepted
        if accepted < proposed:
            self.rej[self.streak] += 1
            self.streak = 0
        else:
            self.streak = min(self.streak + 1, self.MAX_STREAK)


def replay(run, rule):
    """(predicted speed-up, proposed, accepted, rounds) of `rule` over the run's greedy tokens."""
    context, out = list(run["prompt"]), run["output"]
    pos = cost = proposed = accepted = rounds = 0
    while pos < len(out):
        if rule == "oracle":
            best = None
            for k in range(0, len(COSTS)):
                p = lookup(context, k)[:len(out) - pos - 1] if k else []
                a = next((i for i in range(len(p)) if p[i] != out[pos + i]), len(p))
                if best is None or (a + 1) / COSTS[len(p)] > best[0]:
                    best = ((a + 1) / COSTS[len(p)], p, a)
            _, proposal, a = best
        else:
            proposal = lookup(context, rule.next())[:len(out) - pos - 1]
            a = next((i for i in range(len(proposal)) if proposal[i] != out[pos + i]), len(proposal))
            rule.record(len(proposal), a)
        cost += COSTS[len(proposal)]
        proposed += len(proposal)
        accepted += a
        rounds += 1
        context += out[pos:pos + a + 1]
        pos += a + 1
    return len(out) / cost, proposed, accepted, rounds


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--model", default=str(ROOT / "models" / "smollm2-135m-instruct"))
    ap.add_argument("--max-tokens", type=int, default=300)
    ap.add_argument("--tokens")
    ap.add_argument("--costs", help="cost(1),cost(2),...: the rounds' prices in plain steps")
    ap.add_argument("--decide", help="the table the cost-model rules choose by (default: --costs)")
    a = ap.parse_args()
    global COSTS, DECIDE
    if a.costs:
        COSTS = [float(c) for c in a.costs.split(",")]
    DECIDE = [float(c) for c in a.decide.split(",")] if a.decide else COSTS
    cache = Path(a.tokens) if a.tokens else None
    if cache and cache.exists():
        runs = json.loads(cache.read_text())
    else:
        runs = greedy_runs(a.model, a.max_tokens)
        if cache:
            cache.write_text(json.dumps(runs))
    rules = [("fixed k=1", lambda: Fixed(1)), ("fixed k=3", lambda: Fixed(3)), ("fixed k=7", lambda: Fixed(7)),
             ("+1 per whole round, k<=3", lambda: PlusOne(3)), ("+1 per whole round, k<=7", lambda: PlusOne(7)),
             ("cost model, k<=3", lambda: CostModel(3)), ("cost model, k<=7", lambda: CostModel(7)),
             ("oracle (outcome known), k<=7", lambda: "oracle")]
    print("| workload | rule | predicted speed-up | accepted / proposed | rounds |")
    print("|---|---|---:|---|---:|")
    for name, run in runs.items():
        for label, make in rules:
            speed, proposed, accepted, rounds = replay(run, make())
            print("| %s | %s | %.2fx | %d/%d = %.0f%% | %d |" % (
                name, label, speed, accepted, proposed, 100.0 * accepted / max(1, proposed), rounds))


if __name__ == "__main__":
    main()
