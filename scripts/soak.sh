#!/usr/bin/env bash
# Soak: many streamed requests against `mlx-ring serve` on loopback, most of them disconnected
# mid-stream at random points (before the headers, during prefill, during decode; FIN or RST),
# then checks that nothing leaked (scripts/soak/soak_client.py prints the figures and checks):
#   - the engine is idle: mlxring_live_sessions, _queue_depth, _active_rows, _admitted_sessions = 0
#     (a live session is what holds credits and, while running, a KV cache);
#   - MLX active memory equals its value after the warm-up (tolerance 0 bytes by default);
#   - process RSS grows by at most 64 MiB from the first checkpoint (a tenth of the run) to the end, and the
#     JVM's direct buffers by at most 1 MiB from the warm-up;
#   - a whole request still succeeds afterwards; the server then drains on SIGTERM and exits 0.
#
#   scripts/soak.sh                           # 1000 requests, 4 concurrent, 80% disconnected, max_tokens 2..16 (hours on a busy 2-core box;
#                                             # MODEL=build/soak-model, the tiny llama SoakTest builds, takes minutes)
#   scripts/soak.sh --requests 200 --concurrency 8    # any soak_client.py option
#
# Environment: MODEL (default models/smollm2-135m-instruct), SOAK_PORT (18190), OUT (build/soak).
set -euo pipefail
source "$(dirname "$0")/bench/common.sh"   # $root, cd "$root", JDK 25 on PATH

model="${MODEL:-models/smollm2-135m-instruct}"
port="${SOAK_PORT:-18190}"
out="${OUT:-build/soak}"
mkdir -p "$out"
./mlx-ring setup >&2

./mlx-ring serve --model "$model" --host 127.0.0.1 --port "$port" > "$out/serve.log" 2>&1 &
pid=$!
trap 'kill "$pid" 2>/dev/null || true' EXIT
for _ in $(seq 1 480); do
  curl -sf -m 2 "http://127.0.0.1:$port/health" > /dev/null 2>&1 && break
  kill -0 "$pid" 2>/dev/null || { echo "[soak] serve exited; see $out/serve.log" >&2; exit 1; }
  sleep 0.5
done

status=0
.venv/bin/python scripts/soak/soak_client.py --port "$port" "$@" | tee "$out/soak.json" || status=$?

kill -TERM "$pid"
serve_exit=0
wait "$pid" || serve_exit=$?
trap - EXIT
echo "[soak] serve exited with status $serve_exit after SIGTERM; log: $out/serve.log, figures: $out/soak.json" >&2
[[ $serve_exit -eq 0 ]] || status=1
exit "$status"
