#!/usr/bin/env bash
# Streaming load, mlx-ring vs mlx_lm.server on the same model (dev.mlxring.perf.LoadHarness):
# N concurrent streaming chat clients, TTFT, inter-token latency, aggregate tok/s.
#
#   scripts/bench/load.sh                    # default model, N = 1 and 4, 4 requests per phase,
#                                            # 2 rounds, max_tokens 64 -> build/bench/load.md (+ load-raw.tsv)
#   scripts/bench/load.sh [LoadHarness options]   e.g. --concurrency 1,2,4 --requests 8 --rounds 1
#                                            # (later options override the defaults)
#
# Environment: MODEL (default models/smollm2-135m-instruct), OURS_PORT (18181), THEIRS_PORT (18182),
# WAIT_MODE (mlx-ring --wait-mode, default blocking), MLXLM_NOCACHE=1 (a third target: mlx_lm.server
# with --prompt-cache-size 0 on THEIRS_PORT+1, to separate prompt caching from prefill speed),
# OUT (report path, default build/bench/load.md).
#
# Both servers are started here on 127.0.0.1 and stay up for the whole run; the harness loads one
# at a time (the other is idle), alternating them phase by phase, target order reversed every
# other round. Both are stopped on exit. ~4 minutes with the defaults on a 2-core CPU box (SmolLM2-135M
# decodes at ~10 tok/s there, so requests are few: p99 over 8 requests per cell is their maximum).
set -euo pipefail
source "$(dirname "$0")/common.sh"   # $root, cd "$root", JDK 25 on PATH, MAVEN_OPTS

model="${MODEL:-models/smollm2-135m-instruct}"
ours_port="${OURS_PORT:-18181}"
theirs_port="${THEIRS_PORT:-18182}"
wait_mode="${WAIT_MODE:-blocking}"
out=build/bench
report="${OUT:-$out/load.md}"
mkdir -p "$out"

# Everything built before any clock starts: venv, shim, all jars (perf included), default model.
./mlx-ring setup >&2

pids=()
cleanup() {
  for p in "${pids[@]}"; do
    kill "$p" 2>/dev/null || true
  done
  for p in "${pids[@]}"; do
    wait "$p" 2>/dev/null || true
  done
}
trap cleanup EXIT

./mlx-ring serve --model "$model" --port "$ours_port" --wait-mode "$wait_mode" > "$out/load-mlx-ring.log" 2>&1 &
pids+=($!)
.venv/bin/python -m mlx_lm server --model "$model" --host 127.0.0.1 --port "$theirs_port" > "$out/load-mlx-lm.log" 2>&1 &
pids+=($!)
targets=(--target "mlx-ring=http://127.0.0.1:$ours_port" --target "mlx-lm=http://127.0.0.1:$theirs_port")
if [[ "${MLXLM_NOCACHE:-0}" == 1 ]]; then
  .venv/bin/python -m mlx_lm server --model "$model" --host 127.0.0.1 --port "$((theirs_port + 1))" \
    --prompt-cache-size 0 > "$out/load-mlx-lm-nocache.log" 2>&1 &
  pids+=($!)
  targets+=(--target "mlx-lm-nocache=http://127.0.0.1:$((theirs_port + 1))")
fi

wait_up() {  # URL PID NAME
  for _ in $(seq 1 240); do
    if curl -sf -m 2 "$1" > /dev/null 2>&1; then return 0; fi
    kill -0 "$2" 2>/dev/null || { echo "[load] $3 exited; see its log in $out" >&2; exit 1; }
    sleep 0.5
  done
  echo "[load] $3 did not come up within 120 s" >&2
  exit 1
}
wait_up "http://127.0.0.1:$ours_port/health" "${pids[0]}" mlx-ring
wait_up "http://127.0.0.1:$theirs_port/v1/models" "${pids[1]}" mlx_lm.server
if [[ ${#pids[@]} -gt 2 ]]; then
  wait_up "http://127.0.0.1:$((theirs_port + 1))/v1/models" "${pids[2]}" "mlx_lm.server (no prompt cache)"
fi
echo "[load] both servers up: mlx-ring pid ${pids[0]} :$ours_port, mlx_lm.server pid ${pids[1]} :$theirs_port" >&2

cpu_s() {  # utime + stime of a process, seconds
  awk -v hz="$(getconf CLK_TCK)" '{ print ($14 + $15) / hz }' "/proc/$1/stat"
}
cpu_ours0=$(cpu_s "${pids[0]}"); cpu_theirs0=$(cpu_s "${pids[1]}")

rc=0
java @"$root/jvm.args" -Dmlxring.home="$root" \
  -cp "perf/target/perf-0.1.0-SNAPSHOT.jar:perf/target/lib/*" \
  dev.mlxring.perf.LoadHarness \
  "${targets[@]}" --concurrency 1,4 --requests 4 --rounds 2 --warmup 2 \
  --out "$report" --raw "${report%.md}-raw.tsv" \
  --command "MODEL=$model WAIT_MODE=$wait_mode MLXLM_NOCACHE=${MLXLM_NOCACHE:-0} scripts/bench/load.sh $*" "$@" || rc=$?

echo "[load] server CPU during the run: mlx-ring $(awk -v a="$cpu_ours0" -v b="$(cpu_s "${pids[0]}")" 'BEGIN{printf "%.1f", b-a}') s," \
  "mlx_lm.server $(awk -v a="$cpu_theirs0" -v b="$(cpu_s "${pids[1]}")" 'BEGIN{printf "%.1f", b-a}') s" >&2
exit $rc
