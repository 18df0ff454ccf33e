#!/usr/bin/env bash
# The same streaming load against two builds of mlx-ring side by side: the jars of another
# checkout (a worktree at an older commit, built with `mvn -o -q -DskipTests package`) against
# this checkout's, both with the same serve flags over this checkout's venv, shim and model.
# LoadHarness runs the targets one at a time, phase by phase, the order reversed every other
# round, so a change's effect is read against its parent on one warm machine in one run. Where
# ab_checkouts.py counts aggregate tok/s only, one server at a time, this reports LoadHarness's
# TTFT and inter-token latency too, over load_llama.sh's requests.
#
#   scripts/bench/load_ab.sh OTHER_CHECKOUT [--serve "FLAGS"] [LoadHarness options]
#   e.g. git worktree add /tmp/old HEAD~1 && (cd /tmp/old && mvn -o -q -DskipTests package)
#        scripts/bench/load_ab.sh /tmp/old --serve "--numerics fast-q8 --decode-concurrency 32" \
#          --concurrency 16,32 --requests 32 --rounds 3 --warmup 2 --max-tokens 64
#
# Environment: PORT (18195; the other build takes +1), OUT (default build/bench/load-ab.md).
set -euo pipefail
source "$(dirname "$0")/common.sh"   # $root, cd "$root", JDK 25 on PATH, MAVEN_OPTS

other="$(cd "$1" && pwd)"; shift
serve_flags=()
if [[ "${1:-}" == --serve ]]; then
  read -r -a serve_flags <<< "$2"
  shift 2
fi
[[ -f "$other/ingress/target/ingress.jar" ]] || { echo "no jar in $other/ingress/target: build it first" >&2; exit 2; }
port="${PORT:-18195}"
other_port=$((port + 1))
out=build/bench
report="${OUT:-$out/load-ab.md}"
mkdir -p "$out"
this_rev="$(git rev-parse --short HEAD)$(git diff --quiet HEAD -- . ':!build' || echo +)"
other_rev="$(git -C "$other" rev-parse --short HEAD)"

./mlx-ring setup >&2
pids=()
cleanup() {
  for p in "${pids[@]}"; do kill "$p" 2>/dev/null || true; done
  for p in "${pids[@]}"; do wait "$p" 2>/dev/null || true; done
}
trap cleanup EXIT
serve() {  # CHECKOUT PORT LOG
  java @"$root/jvm.args" -Dmlxring.home="$root" -cp "$1/ingress/target/ingress.jar:$1/ingress/target/lib/*" \
    dev.mlxring.ingress.cli.Main serve --model models/smollm2-135m-instruct --port "$2" "${serve_flags[@]}" > "$3" 2>&1 &
  pids+=($!)
}
serve "$root" "$port" "$out/load-ab-this.log"
wait_for_health "http://127.0.0.1:$port/health" "${pids[0]}" "$out/load-ab-this.log"
serve "$other" "$other_port" "$out/load-ab-other.log"
wait_for_health "http://127.0.0.1:$other_port/health" "${pids[1]}" "$out/load-ab-other.log"

java @"$root/jvm.args" -Dmlxring.home="$root" \
  -cp "perf/target/perf-0.1.0-SNAPSHOT.jar:perf/target/lib/*" \
  dev.mlxring.perf.LoadHarness \
  --target "$this_rev=http://127.0.0.1:$port" --target "$other_rev=http://127.0.0.1:$other_port" \
  --out "$report" --raw "${report%.md}-raw.tsv" --phases "${report%.md}-phases.tsv" \
  --command "scripts/bench/load_ab.sh <checkout of $other_rev> --serve '${serve_flags[*]}' $*" "$@"
echo "Servers: mlx-ring serve ${serve_flags[*]}, at $this_rev and $other_rev." >> "$report"
