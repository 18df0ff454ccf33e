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
# WAIT_MODE (mlx-ring --wait-mode, default blocking), DECODE_CONCURRENCY (the row cap of both servers,
# --decode-concurrency and --prompt-concurrency of each; default 8), MLXLM_NOCACHE=1 (a target:
# mlx_lm.server with --prompt-cache-size 0 on THEIRS_PORT+10, to separate prompt caching from prefill
# speed), MLX_KERNELS=1 (a target: mlx-ring with --cpu-kernels mlx on OURS_PORT+10), SERIAL=1 (a
# target: mlx-ring with --decode-concurrency 1 on OURS_PORT+11: the B=1 scheduler/serial ratio),
# STALL=1 (afterwards, scripts/bench/join_stall.py on mlx-ring and mlx-lm: how long a running
# stream stalls while a long prompt joins; appended to the report; STALL_WORDS, default 200),
# OUT (report path, default build/bench/load.md), PLOT=1 (also draw throughput against concurrency
# to ${OUT%.md}.png; installs requirements-bench.txt into the venv).
#
# After the run the report gets each server's peak resident memory (VmHWM).
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
rows="${DECODE_CONCURRENCY:-8}"
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

names=()
urls=()
start_server() {  # NAME HEALTH_URL BASE_URL COMMAND...
  local name=$1 health=$2 base=$3
  shift 3
  "$@" > "$out/load-$name.log" 2>&1 &
  pids+=($!)
  names+=("$name")
  urls+=("$health")
  targets+=(--target "$name=$base")
}
targets=()
ours=(./mlx-ring serve --model "$model" --wait-mode "$wait_mode" --decode-concurrency "$rows" --prompt-concurrency "$rows")
theirs=(.venv/bin/python -m mlx_lm server --model "$model" --host 127.0.0.1 --decode-concurrency "$rows"
  --prompt-concurrency "$rows")
start_server mlx-ring "http://127.0.0.1:$ours_port/health" "http://127.0.0.1:$ours_port" "${ours[@]}" --port "$ours_port"
start_server mlx-lm "http://127.0.0.1:$theirs_port/v1/models" "http://127.0.0.1:$theirs_port" "${theirs[@]}" \
  --port "$theirs_port"
if [[ "${MLX_KERNELS:-0}" == 1 ]]; then
  p=$((ours_port + 10))
  start_server mlx-ring-mlx-kernels "http://127.0.0.1:$p/health" "http://127.0.0.1:$p" "${ours[@]}" --port "$p" \
    --cpu-kernels mlx
fi
if [[ "${SERIAL:-0}" == 1 ]]; then
  p=$((ours_port + 11))
  start_server mlx-ring-serial "http://127.0.0.1:$p/health" "http://127.0.0.1:$p" ./mlx-ring serve --model "$model" \
    --wait-mode "$wait_mode" --decode-concurrency 1 --port "$p"
fi
if [[ "${MLXLM_NOCACHE:-0}" == 1 ]]; then
  p=$((theirs_port + 10))
  start_server mlx-lm-nocache "http://127.0.0.1:$p/v1/models" "http://127.0.0.1:$p" "${theirs[@]}" --port "$p" \
    --prompt-cache-size 0
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
for i in "${!pids[@]}"; do
  wait_up "${urls[$i]}" "${pids[$i]}" "${names[$i]}"
done
# A server that could not bind its port has exited although another one answers there.
for i in "${!pids[@]}"; do
  kill -0 "${pids[$i]}" 2>/dev/null || { echo "[load] ${names[$i]} exited; see $out/load-${names[$i]}.log" >&2; exit 1; }
done
echo "[load] servers up: ${names[*]} (row cap $rows)" >&2

cpu_s() {  # utime + stime of a process, seconds
  awk -v hz="$(getconf CLK_TCK)" '{ print ($14 + $15) / hz }' "/proc/$1/stat"
}
cpu_ours0=$(cpu_s "${pids[0]}"); cpu_theirs0=$(cpu_s "${pids[1]}")

rc=0
java @"$root/jvm.args" -Dmlxring.home="$root" \
  -cp "perf/target/perf-0.1.0-SNAPSHOT.jar:perf/target/lib/*" \
  dev.mlxring.perf.LoadHarness \
  "${targets[@]}" --concurrency 1,4 --requests 4 --rounds 2 --warmup 2 \
  --out "$report" --raw "${report%.md}-raw.tsv" --phases "${report%.md}-phases.tsv" \
  --command "MODEL=$model DECODE_CONCURRENCY=$rows MLX_KERNELS=${MLX_KERNELS:-0} SERIAL=${SERIAL:-0} STALL=${STALL:-0} MLXLM_NOCACHE=${MLXLM_NOCACHE:-0} scripts/bench/load.sh $*" "$@" || rc=$?

if [[ "${STALL:-0}" == 1 ]]; then
  stall_targets=()
  for i in 0 1; do
    stall_targets+=(--target "${names[$i]}=${targets[$((2 * i + 1))]#*=}")
  done
  .venv/bin/python scripts/bench/join_stall.py "${stall_targets[@]}" --prompt-words "${STALL_WORDS:-200}" \
    --runs 1 --out "$report" >&2 || rc=$?
fi
{
  echo
  echo "Peak resident memory (VmHWM) of each server process over the whole run:"
  echo
  for i in "${!pids[@]}"; do
    kb=$(awk '/VmHWM/ { print $2 }' "/proc/${pids[$i]}/status" 2>/dev/null || echo "")
    # ./mlx-ring execs java, so its pid is the JVM's; mlx_lm.server is the python process itself.
    echo "- ${names[$i]}: $(awk -v k="${kb:-0}" 'BEGIN { printf "%.0f MiB", k / 1024 }')"
  done
} >> "$report"
if [[ "${PLOT:-0}" == 1 ]]; then
  .venv/bin/pip install -q -r requirements-bench.txt >&2
  .venv/bin/python scripts/bench/plot_load.py "${report%.md}-phases.tsv" "${report%.md}.png" >&2
fi

echo "[load] server CPU during the run: mlx-ring $(awk -v a="$cpu_ours0" -v b="$(cpu_s "${pids[0]}")" 'BEGIN{printf "%.1f", b-a}') s," \
  "mlx_lm.server $(awk -v a="$cpu_theirs0" -v b="$(cpu_s "${pids[1]}")" 'BEGIN{printf "%.1f", b-a}') s" >&2
exit $rc
