#!/usr/bin/env bash
# Runs mlx-ring and mlx-lm on the lent NVIDIA machine from what scripts/gpu/pack.sh packed.
# Everything lands in $STAGE (/tmp/mlxr-gpu), which lives as long as the warm machine.
#
#   bash build/gpu-carry/a/run_on_device.sh stage-a        # call 1, carry build/gpu-carry/a
#   bash build/gpu-carry/b/run_on_device.sh stage-b [TASK...] # call 2, carry build/gpu-carry/b
#   bash build/gpu-carry/b/run_on_device.sh TASK...         # later calls (same warm machine)
#
# Tasks (each logs to $OUT/<task>.log when $OUT is set, and goes on after a failure):
#   info      versions, GPU, MLX's default device
#   parity    tiny parity models (mlx-lm's classes): greedy.py (mlx-lm generate_step, run twice:
#             is mlx-lm itself deterministic here?) vs our GenerateStep
#             (dev.mlxring.perf.GreedyParityCheck), 64 greedy tokens + first-step logits bytes
#   decode    ~1.24 B random llama (bf16, 4-bit), made here: DecodeBenchmark, B=1, ours vs mlx-lm
#   probe     run-to-run determinism of MLX's matmul / quantized_matmul on this GPU (scripts/gpu/determinism_probe.py)
#   batch     the same models: BatchDecodeBenchmark (ours, BatchGenerator) and
#             scripts/gpu/mlxlm_batch_bench.py (mlx-lm's BatchGenerator) at 8 and 32 rows
# Environment: PARITY_MODELS (default: 12 tiny cells, see task_parity), DECODE_RUNS (5),
# BATCH_ROWS (8,32), BENCH_MODELS (llama-1b-bf16,llama-1b-q4).
set -uo pipefail
here="$(cd "$(dirname "$0")" && pwd)"
STAGE="${STAGE:-/tmp/mlxr-gpu}"
home="$STAGE/home"
site="$STAGE/site"
mkdir -p "$STAGE"
say() { echo "[gpu] $*" >&2; }

stage_a() {
  cp "$here/libmlx.so.xz.00" "$STAGE/" && tar -C "$STAGE" -xJf "$here/jrt.tar.xz" && say "stage a in place: $(ls "$STAGE")"
}

stage_b() {
  cp "$here/libmlx.so.xz.01" "$STAGE/" || return 1
  [[ -f "$STAGE/libmlx.so.xz.00" ]] || { say "stage a is missing (a fresh machine): run stage-a first"; return 1; }
  local sum
  sum="$(cat "$STAGE"/libmlx.so.xz.00 "$STAGE"/libmlx.so.xz.01 | sha256sum | cut -c1-64)"
  [[ "$sum" == "$(cat "$here/libmlx.so.xz.sha256")" ]] || { say "libmlx parts do not match their checksum"; return 1; }
  python3 -m pip install -q --no-index --no-deps --no-compile --no-cache-dir --upgrade --target "$site" "$here"/wheels/*.whl || return 1
  tar -C "$site" -xJf "$here/mlx-cuda-rest.tar.xz" || return 1
  mkdir -p "$site/mlx/lib"
  cat "$STAGE"/libmlx.so.xz.00 "$STAGE"/libmlx.so.xz.01 | xz -d > "$site/mlx/lib/libmlx.so" || return 1
  mkdir -p "$home" && tar -C "$home" -xJf "$here/app.tar.xz" || return 1
  # ProjectHome.python(): the benchmarks start mlx-lm through <home>/.venv/bin/python.
  mkdir -p "$home/.venv/bin"
  cat > "$home/.venv/bin/python" <<EOF
#!/bin/sh
export PYTHONPATH="$site\${PYTHONPATH:+:\$PYTHONPATH}"
exec python3 "\$@"
EOF
  chmod +x "$home/.venv/bin/python"
  say "stage b in place"
}

setup_env() {
  local sp
  sp="$(python3 -c 'import site; print(site.getsitepackages()[0])')"
  # Every lib folder of the image's CUDA 13 wheels (libmlx's own RPATH expects them beside it).
  local libs
  libs="$(find "$sp/nvidia" -maxdepth 3 -type d -name lib 2>/dev/null | paste -sd:)"
  export LD_LIBRARY_PATH="$site/mlx/lib:$libs${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}"
  export PYTHONPATH="$site${PYTHONPATH:+:$PYTHONPATH}"
  export MLXRING_HOME="$home" JAVA_HOME="$STAGE/jrt" PATH="$STAGE/jrt/bin:$PATH"
}

java_main() {
  local main="$1"
  shift
  java @"$home/jvm.args" -Dmlxring.home="$home" \
    -cp "$home/perf/target/perf-0.1.0-SNAPSHOT.jar:$home/perf/target/lib/*" "$main" "$@"
}

task_info() {
  nvidia-smi --query-gpu=name,memory.total,driver_version --format=csv
  python3 -c 'import mlx.core as mx, mlx_lm, sys; print("python", sys.version.split()[0], "mlx", mx.__version__, "mlx-lm", mlx_lm.__version__, "default device", mx.default_device()); a = mx.ones((4, 4)); print("mx sum on gpu:", (a @ a).sum().item())'
  java -version 2>&1 | head -1
}

task_parity() {
  local work="$STAGE/parity" m rc=0
  mkdir -p "$work"
  local models="${PARITY_MODELS:-llama-bf16,llama-f32,llama-q4,llama-q8,qwen2-bf16,qwen2-q4,qwen3-bf16,qwen3-q4,qwen3-q8,gemma3-bf16,phi3-bf16,phi3-q4}"
  (cd "$home/scripts/oracle" && python3 make_tiny_models.py --out "$work/models" --only "$models" --no-check) || return 1
  (cd "$home/scripts/oracle" && python3 prompts.py --vocab 512 --seed 7 --long 70 --out "$work/prompts.json") || return 1
  for m in ${models//,/ }; do
    say "parity: $m"
    # mlx-lm twice: a GPU kernel that is not run-to-run deterministic leaves no single answer to match.
    for r in 1 2; do
      (cd "$home/scripts/oracle" && python3 greedy.py --model "$work/models/$m" --prompts "$work/prompts.json" \
        --max-tokens 64 --prefill-step-size 32 --out "$work/expected-$m.$r.json") || { rc=1; continue 2; }
    done
    python3 "$home/scripts/gpu/oracle_consistency.py" "$work/expected-$m.1.json" "$work/expected-$m.2.json"
    java_main dev.mlxring.perf.GreedyParityCheck --model "$work/models/$m" --expected "$work/expected-$m.1.json" || rc=1
  done
  return $rc
}

task_probe() {
  python3 "$home/scripts/gpu/determinism_probe.py"
}

bench_models() {
  (cd "$home/scripts/gpu" && python3 make_gpu_bench_models.py --out "$STAGE/bench-models" \
    --only "${BENCH_MODELS:-llama-1b-bf16,llama-1b-q4}")
}

task_decode() {
  bench_models || return 1
  local args=() m
  for m in $(echo "${BENCH_MODELS:-llama-1b-bf16,llama-1b-q4}" | tr , ' '); do args+=(--model "$STAGE/bench-models/$m"); done
  java_main dev.mlxring.perf.DecodeBenchmark "${args[@]}" --prompt-tokens 128 --gen-tokens 128 \
    --runs "${DECODE_RUNS:-5}" --warmup 1 --seed 42 --cpu-kernels mlx --max-quiet-wait-s 5 --quiet-cores 64 \
    --out "${OUT:-$STAGE}/decode.md" --command "scripts/gpu/run_on_device.sh decode"
}

task_batch() {
  bench_models || return 1
  local m rc=0 rows="${BATCH_ROWS:-8,32}"
  for m in $(echo "${BENCH_MODELS:-llama-1b-bf16,llama-1b-q4}" | tr , ' '); do
    say "batch: $m, ours (BatchGenerator)"
    java_main dev.mlxring.perf.BatchDecodeBenchmark --model "$STAGE/bench-models/$m" --rows "1,$rows" \
      --prompt-tokens 64 --gen-tokens 64 --runs 3 --prefill-step-size 128 || rc=1
    say "batch: $m, mlx-lm (BatchGenerator)"
    python3 "$home/scripts/gpu/mlxlm_batch_bench.py" --model "$STAGE/bench-models/$m" --rows "$rows" \
      --prompt-tokens 64 --gen-tokens 64 --runs 3 --prefill-step-size 128 || rc=1
  done
  return $rc
}

cmd="${1:-}"
case "$cmd" in
  stage-a) stage_a; exit $? ;;
  stage-b) stage_b || exit 1; shift ;;
  "") say "usage: run_on_device.sh stage-a | stage-b [TASK...] | TASK..."; exit 2 ;;
esac
setup_env
rc=0
for t in "$@"; do
  say "task $t ($(date -u +%T))"
  if [[ -n "${OUT:-}" ]]; then
    "task_$t" 2>&1 | tee "$OUT/$t.log"
    s=${PIPESTATUS[0]}
  else
    "task_$t"
    s=$?
  fi
  say "task $t: exit $s ($(date -u +%T))"
  [[ $s -eq 0 ]] || rc=1
done
exit $rc
