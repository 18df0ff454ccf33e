#!/usr/bin/env bash
# Where a decode token's CPU time goes, by thread and by kind of work: `perf record` of a window
# of `generate` (greedy, 64-token prompt, 600 tokens) with one shim build, then
# perf_threads.py attributes the samples (CPU ms per generated token, the token count in the
# window estimated from the run's generation_tps).
#
#   scripts/bench/perf_threads.sh SHIM.so OUT_PREFIX [--skip-s 12] [--window-s 8] [--model DIR]
#                                 [--numerics exact|fast]
#
# e.g. SHIM = build/native/libmlxr.so, or an A/B build (see shim_ab.sh). Needs `perf` and
# ingress/target (mvn -o -q -DskipTests package -pl ingress -am). Under contention the figures are
# CPU time actually received, not wall time; report the load beside them.
set -euo pipefail
source "$(dirname "$0")/common.sh"   # $root, cd "$root", JDK 25 on PATH
so="$1"; out="$2"; shift 2
skip=12; window=8; model=models/smollm2-135m-instruct; numerics=exact
while [[ $# -gt 0 ]]; do
  case "$1" in
    --skip-s) skip="$2"; shift 2 ;;
    --window-s) window="$2"; shift 2 ;;
    --model) model="$2"; shift 2 ;;
    --numerics) numerics="$2"; shift 2 ;;
    *) echo "unknown flag $1" >&2; exit 2 ;;
  esac
done
ids="$(python3 -c "print(','.join(str(1000 + 37 * i) for i in range(64)))")"
MLXRING_SHIM="$so" java @"$root/jvm.args" -Dmlxring.home="$root" \
  -cp "ingress/target/ingress.jar:ingress/target/lib/*" dev.mlxring.ingress.cli.Main generate \
  --model "$model" --prompt-tokens "$ids" --max-tokens 600 --numerics "$numerics" --json > "$out.json" 2> "$out.err" &
pid=$!
sleep "$skip"
echo "load $(cut -d' ' -f1-3 /proc/loadavg)"
perf record -F 1999 -p "$pid" -o "$out.data" -- sleep "$window" 2> /dev/null
wait "$pid"
tps="$(python3 -c "import json,sys; print(json.load(open(sys.argv[1]))['generation_tps'])" "$out.json")"
python3 "$(dirname "$0")/perf_threads.py" "$out.data" "$(python3 -c "print($window * $tps)")"
