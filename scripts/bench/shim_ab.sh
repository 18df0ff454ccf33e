#!/usr/bin/env bash
# Paired B=1 decode benchmark of two builds of the MLX shim (a kernel change against the build
# before it), alternating process by process so a shared machine's drift hits both alike. Each
# run is one DecodeProfile process (the engine's pipelined decode loop, greedy) on MODEL; the
# per-token figure is that run's mean over its decode tokens; medians are taken over the runs.
#
#   scripts/bench/shim_ab.sh A.so B.so [--pairs 5] [--model DIR] [--prompt-tokens 64] [--gen-tokens 48]
#                            [--max-quiet-wait-s 0] [--numerics exact|fast]
#
# --max-quiet-wait-s S: before each run wait (at most S seconds) until the machine's other processes
# use less than 0.15 cores (busy time in /proc/stat over one second); each line then reports the
# foreign cores measured just before the run, and each line also gives the foreign cores during each
# run (the machine's busy time less the run's own CPU time): a pair with either well above 0 was contended.
#
# Build the two .so files first, e.g. `git stash; scripts/build_shim.sh; cp build/native/libmlxr.so
# /tmp/a.so; git stash pop; scripts/build_shim.sh; cp build/native/libmlxr.so /tmp/b.so`.
# Assumes perf/target/lib exists (scripts/bench/decode.sh or `mvn -q -B -DskipTests package -pl perf -am`).
set -euo pipefail
source "$(dirname "$0")/common.sh"   # $root, cd "$root", JDK 25 on PATH
a="$1"; b="$2"; shift 2
pairs=5; model=models/smollm2-135m-instruct; prompt=64; gen=48; quiet_wait=0; numerics=exact
while [[ $# -gt 0 ]]; do
  case "$1" in
    --pairs) pairs="$2"; shift 2 ;;
    --model) model="$2"; shift 2 ;;
    --prompt-tokens) prompt="$2"; shift 2 ;;
    --gen-tokens) gen="$2"; shift 2 ;;
    --max-quiet-wait-s) quiet_wait="$2"; shift 2 ;;
    --numerics) numerics="$2"; shift 2 ;;
    *) echo "unknown flag $1" >&2; exit 2 ;;
  esac
done
# One run: prints "ms-per-token tok/s foreign-cores-during-run". The foreign cores are the machine's
# busy time over the run (/proc/stat) less this run's own CPU time (/usr/bin/time), per second of wall.
one() {
  local s1 s2 t
  read -r -a s1 < /proc/stat
  t="$(mktemp)"
  local r
  r="$(MLXRING_SHIM="$1" /usr/bin/time -f "%e %U %S" -o "$t" java @"$root/jvm.args" -Dmlxring.home="$root" \
    -cp "perf/target/perf-0.1.0-SNAPSHOT.jar:perf/target/lib/*" dev.mlxring.perf.DecodeProfile \
    --model "$model" --prompt-tokens "$prompt" --gen-tokens "$gen" --numerics "$numerics" --runs 1 2>&1 \
    | sed -n 's/.*total \([0-9.]*\) ms (\([0-9.]*\) tok\/s).*/\1 \2/p')"
  read -r -a s2 < /proc/stat
  local foreign
  foreign="$(awk -v hz="$(getconf CLK_TCK)" -v u1="${s1[1]}" -v n1="${s1[2]}" -v y1="${s1[3]}" -v q1="${s1[6]}" -v r1="${s1[7]}" \
      -v u2="${s2[1]}" -v n2="${s2[2]}" -v y2="${s2[3]}" -v q2="${s2[6]}" -v r2="${s2[7]}" \
      '{ busy = ((u2-u1)+(n2-n1)+(y2-y1)+(q2-q1)+(r2-r1)) / hz; f = (busy - $2 - $3) / $1; printf "%.2f", f < 0 ? 0 : f }' "$t")"
  rm -f "$t"
  echo "$r $foreign"
}
# Cores busy over one second, from /proc/stat (nothing of ours runs while it is measured).
busy_cores() {
  local a b
  read -r -a a < /proc/stat; sleep 1; read -r -a b < /proc/stat
  awk -v u1="${a[1]}" -v n1="${a[2]}" -v s1="${a[3]}" -v i1="${a[4]}" -v w1="${a[5]}" -v q1="${a[6]}" -v r1="${a[7]}" \
      -v u2="${b[1]}" -v n2="${b[2]}" -v s2="${b[3]}" -v i2="${b[4]}" -v w2="${b[5]}" -v q2="${b[6]}" -v r2="${b[7]}" \
      -v hz="$(getconf CLK_TCK)" 'BEGIN { printf "%.2f", ((u2-u1)+(n2-n1)+(s2-s1)+(q2-q1)+(r2-r1)) / hz }'
}
wait_quiet() {
  local waited=0 busy
  busy="$(busy_cores)"
  while (( waited < quiet_wait )) && awk -v b="$busy" 'BEGIN { exit !(b >= 0.15) }'; do
    busy="$(busy_cores)"; waited=$((waited + 1))
  done
  echo "$busy"
}
out_a=(); out_b=()
for ((i = 1; i <= pairs; i++)); do
  load="$(cut -d' ' -f1 /proc/loadavg)"
  fa="$(wait_quiet)"; ra="$(one "$a")"
  fb="$(wait_quiet)"; rb="$(one "$b")"
  read -r _ ta da <<< "$ra"; read -r _ tb db <<< "$rb"
  echo "pair $i (load $load, foreign cores before A $fa, before B $fb; during A $da, during B $db): A $ta tok/s, B $tb tok/s"
  out_a+=("$ta"); out_b+=("$tb")
done
median() { printf '%s\n' "$@" | sort -g | awk '{v[NR]=$1} END {print (NR % 2) ? v[(NR+1)/2] : (v[NR/2]+v[NR/2+1])/2}'; }
ma="$(median "${out_a[@]}")"; mb="$(median "${out_b[@]}")"
echo "median decode tok/s: A $ma, B $mb, B/A $(awk -v a="$ma" -v b="$mb" 'BEGIN {printf "%.2f", b/a}')"
