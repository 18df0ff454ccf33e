#!/usr/bin/env bash
# Paired B=1 decode benchmark of two builds of the MLX shim (a kernel change against the build
# before it), alternating process by process so a shared machine's drift hits both alike. Each
# run is one DecodeProfile process (the engine's pipelined decode loop, greedy) on MODEL; the
# per-token figure is that run's mean over its decode tokens; medians are taken over the runs.
#
#   scripts/bench/shim_ab.sh A.so B.so [--pairs 5] [--model DIR] [--prompt-tokens 64] [--gen-tokens 48]
#
# Build the two .so files first, e.g. `git stash; scripts/build_shim.sh; cp build/native/libmlxr.so
# /tmp/a.so; git stash pop; scripts/build_shim.sh; cp build/native/libmlxr.so /tmp/b.so`.
# Assumes perf/target/lib exists (scripts/bench/decode.sh or `mvn -q -B -DskipTests package -pl perf -am`).
set -euo pipefail
source "$(dirname "$0")/common.sh"   # $root, cd "$root", JDK 25 on PATH
a="$1"; b="$2"; shift 2
pairs=5; model=models/smollm2-135m-instruct; prompt=64; gen=48
while [[ $# -gt 0 ]]; do
  case "$1" in
    --pairs) pairs="$2"; shift 2 ;;
    --model) model="$2"; shift 2 ;;
    --prompt-tokens) prompt="$2"; shift 2 ;;
    --gen-tokens) gen="$2"; shift 2 ;;
    *) echo "unknown flag $1" >&2; exit 2 ;;
  esac
done
one() {
  MLXRING_SHIM="$1" java @"$root/jvm.args" -Dmlxring.home="$root" \
    -cp "perf/target/perf-0.1.0-SNAPSHOT.jar:perf/target/lib/*" dev.mlxring.perf.DecodeProfile \
    --model "$model" --prompt-tokens "$prompt" --gen-tokens "$gen" --runs 1 2>&1 \
    | sed -n 's/.*total \([0-9.]*\) ms (\([0-9.]*\) tok\/s).*/\1 \2/p'
}
out_a=(); out_b=()
for ((i = 1; i <= pairs; i++)); do
  load="$(cut -d' ' -f1 /proc/loadavg)"
  ra="$(one "$a")"; rb="$(one "$b")"
  echo "pair $i (load $load): A ${ra#* } tok/s, B ${rb#* } tok/s"
  out_a+=("${ra#* }"); out_b+=("${rb#* }")
done
median() { printf '%s\n' "$@" | sort -g | awk '{v[NR]=$1} END {print (NR % 2) ? v[(NR+1)/2] : (v[NR/2]+v[NR/2+1])/2}'; }
ma="$(median "${out_a[@]}")"; mb="$(median "${out_b[@]}")"
echo "median decode tok/s: A $ma, B $mb, B/A $(awk -v a="$ma" -v b="$mb" 'BEGIN {printf "%.2f", b/a}')"
