#!/usr/bin/env python3
"""Where a served load's exec time goes, unit by unit.

Reads the lines a server started with -Dmlxring.unitTrace=true writes to stderr (one per batch
unit: "UNIT t=… gap=… took=… gen=… pre=… pend=… prefill=… out=… fin=… genAfter=…") and sums the
units' time by what they did and what the unit before them did:

  read       the unit could read a prompt chunk (prompts pending and the policy let it)
  deconly    a decode-only unit (the prefill share held the chunk back)
  join       rows joined the generating rows at the end of the unit (genAfter > gen)
  afterjoin  the unit after a join (its step runs the merged caches)
  fin        a row finished in the unit
  afterfin   the unit after a finish (its step runs the filtered caches)
  plain      none of these: a decode step of the generating rows

  scripts/bench/unit_trace.py SERVER_STDERR [--skip N]

A unit that read some row's first token submits its next forward only after its tokens are
published (ExecutionBatch.submitHeldStep), outside the traced unit: that wait shows in the next
unit's gap, not in this unit's took.

--skip drops the first N units (warm-up). Prints, per category, the units, their total and
median time and the median count of generating rows, then the plain units' median time by rows,
then each category's mean time per unit by phase (the trace's phase fields, UnitPhases:
snapSubmit, step (of which stepWait: the next forward's submission waiting for the one in flight,
and stepRead), admit, join, prompt, snapCopy, publish; and fused, the fast tier's fused blocks'
time, when the server also ran with MLXR_FAST_BLOCK_PHASES=1).
"""
import argparse
import statistics as st


PHASES = ["snapSubmit", "step", "stepWait", "stepRead", "admit", "join", "prompt", "snapCopy", "publish", "fused"]


def parse(path, skip):
    units = []
    for line in open(path):
        if not line.startswith("UNIT "):
            continue
        d = dict(kv.split("=", 1) for kv in line.split()[1:])
        units.append({
            "took": float(d["took"]), "gap": float(d["gap"]), "gen": int(d["gen"]),
            "pend": d["pend"] == "true", "prefill": d["prefill"] == "true",
            "fin": int(d["fin"]), "after": int(d["genAfter"]),
            "phases": {k: float(d[k]) for k in PHASES if k in d},
        })
    return units[skip:]


def categories(units):
    prev = None
    for u in units:
        c = []
        if u["pend"] and u["prefill"]:
            c.append("read")
        if not u["prefill"]:
            c.append("deconly")
        if prev and prev["fin"] > 0:
            c.append("afterfin")
        if prev and prev["after"] > prev["gen"]:
            c.append("afterjoin")
        if u["fin"] > 0:
            c.append("fin")
        if u["after"] > u["gen"]:
            c.append("join")
        yield "+".join(c) or "plain", u
        prev = u


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("trace")
    ap.add_argument("--skip", type=int, default=0)
    a = ap.parse_args()
    units = parse(a.trace, a.skip)
    by = {}
    for k, u in categories(units):
        by.setdefault(k, []).append(u)
    total = sum(u["took"] for u in units)
    print(f"{'units':30s} {'n':>5s} {'total s':>8s} {'share':>6s} {'median ms':>10s} {'rows':>5s}")
    for k, v in sorted(by.items(), key=lambda x: -sum(u["took"] for u in x[1])):
        t = sum(u["took"] for u in v)
        print(f"{k:30s} {len(v):5d} {t / 1000:8.2f} {t / total:6.1%} {st.median(u['took'] for u in v):10.1f} "
              f"{st.median(u['gen'] for u in v):5.0f}")
    print(f"{len(units)} units, {total / 1000:.2f} s inside units, {sum(u['gap'] for u in units) / 1000:.2f} s between them")
    plain = {}
    for k, u in categories(units):
        if k == "plain":
            plain.setdefault(u["gen"], []).append(u["took"])
    print("plain unit median ms by generating rows:",
          ", ".join(f"{g}: {st.median(v):.1f} ({len(v)})" for g, v in sorted(plain.items())))
    if any(u["phases"] for u in units):
        print()
        print(f"{'mean ms per unit':30s} " + " ".join(f"{p:>10s}" for p in PHASES))
        for k, v in sorted(by.items(), key=lambda x: -sum(u["took"] for u in x[1])):
            print(f"{k:30s} " + " ".join(
                f"{sum(u['phases'].get(p, 0) for u in v) / len(v):10.1f}" for p in PHASES))


if __name__ == "__main__":
    main()
