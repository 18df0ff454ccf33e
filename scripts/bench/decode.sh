#!/usr/bin/env bash
# Side-by-side B=1 prefill/decode benchmark, mlx-ring vs mlx-lm (dev.mlxring.perf.DecodeBenchmark).
#
#   scripts/bench/decode.sh                     # default set: SmolLM2 + the two qwen3 bench models,
#                                               # 128-token prompt, 64 decode tokens, 5 runs each,
#                                               # ours with --cpu-kernels native and mlx, then mlx-lm,
#                                               # report -> build/bench/decode.md
#   scripts/bench/decode.sh --model DIR [--model DIR ...] [--prompt-tokens N] [--gen-tokens M]
#                           [--runs K] [--warmup W] [--seed S] [--out FILE.md]
#                           [--cpu-kernels native,mlx]
#   scripts/bench/decode.sh --qmm [--rows 1,2,4,8] [--reps R]
#                                               # quantized_matmul alone over SmolLM2's shapes:
#                                               # cost of M rows vs one, native vs mlx
#
# Builds what it needs first: the MLX shim, the random-weight qwen3 bench models
# (build/bench/models, idempotent), and the reactor up to perf (perf/target/lib holds the
# runtime classpath). Needs JDK 25 (JAVA_HOME, else /usr/lib/jvm/temurin-25-jdk-amd64).
set -euo pipefail
source "$(dirname "$0")/common.sh"   # $root, cd "$root", JDK 25 on PATH, MAVEN_OPTS

scripts/build_shim.sh
qmm=0
if [[ "${1:-}" == "--qmm" ]]; then qmm=1; shift; fi
if [[ $qmm -eq 0 ]]; then
  .venv/bin/python scripts/bench/make_bench_models.py --out build/bench/models
fi
echo "[bench] building the reactor up to perf" >&2
mvn -q -B -DskipTests package -pl perf -am

if [[ $qmm -eq 1 ]]; then
  exec java @"$root/jvm.args" ${JAVA_OPTS:-} -Dmlxring.home="$root" \
    -cp "perf/target/perf-0.1.0-SNAPSHOT.jar:perf/target/lib/*" \
    dev.mlxring.perf.QuantizedMatmulBenchmark "$@"
fi

args=("$@")
if [[ ${#args[@]} -eq 0 ]]; then
  args=(--model models/smollm2-135m-instruct
        --model build/bench/models/qwen3-bench-bf16
        --model build/bench/models/qwen3-bench-q4
        --prompt-tokens 128 --gen-tokens 64 --runs 5 --warmup 1 --seed 42
        --cpu-kernels native,mlx --out build/bench/decode.md)
fi

# JAVA_OPTS: extra JVM flags for experiments (e.g. -Xlog:jit+compilation=debug), none by default.
exec java @"$root/jvm.args" ${JAVA_OPTS:-} -Dmlxring.home="$root" \
  -cp "perf/target/perf-0.1.0-SNAPSHOT.jar:perf/target/lib/*" \
  dev.mlxring.perf.DecodeBenchmark --command "scripts/bench/decode.sh${*:+ $*}" "${args[@]}"
