#!/usr/bin/env bash
# Waves of concurrent streaming requests against a freshly started server: what the first wave
# costs beside the ones after it. Each wave is one LoadHarness round (N streams, N requests, no
# warm-up); after each, the server process's minor page faults and system CPU seconds so far
# (/proc/PID/stat), and its resident set after the wave, so a wave that spends its time
# zero-filling fresh memory shows as such.
#
#   scripts/bench/cold_waves.sh [--waves W] [--streams N[,N...]] [-- serve flags...]
#   e.g. scripts/bench/cold_waves.sh --waves 6 --streams 32,8,16 -- --numerics fast-q8 --decode-concurrency 32
#   (a list of stream counts is cycled through, wave by wave)
#
# Environment: PORT (18190), JDK_JAVA_OPTIONS passes through to the server (A/B runs).
set -euo pipefail
source "$(dirname "$0")/common.sh"   # $root, cd "$root", JDK 25 on PATH, MAVEN_OPTS

waves=3
streams=32
serve_flags=()
while [[ $# -gt 0 ]]; do
  case "$1" in
    --waves) waves=$2; shift 2 ;;
    --streams) streams=$2; shift 2 ;;
    --) shift; serve_flags=("$@"); break ;;
    *) echo "unknown option $1" >&2; exit 2 ;;
  esac
done
port="${PORT:-18190}"
out=build/bench
mkdir -p "$out"

./mlx-ring setup >&2
./mlx-ring serve --model models/smollm2-135m-instruct --port "$port" "${serve_flags[@]}" > "$out/cold-waves-server.log" 2>&1 &
launcher=$!
trap 'kill $launcher 2>/dev/null || true; wait $launcher 2>/dev/null || true' EXIT
wait_for_health "http://127.0.0.1:$port/health" "$launcher" "$out/cold-waves-server.log"
# The JVM serving the port (the launcher may be a shell around it).
pid=$(pgrep -f -- "--port $port" | while read -r p; do
  [[ "$(cat /proc/$p/comm)" == java ]] && echo "$p"; done | head -1)
[[ -n "$pid" ]] || { echo "no JVM found serving port $port" >&2; exit 1; }
ticks=$(getconf CLK_TCK)

faults() {  # minor faults and system seconds of the whole process
  awk -v t="$ticks" '{ sub(/.*\) /, ""); printf "%d %.2f", $8, $13 / t }' "/proc/$pid/stat"
}

IFS=',' read -r -a stream_list <<< "$streams"
echo "| wave | streams | aggregate tok/s | TTFT p50 ms | TTFT p99 ms | minor faults | system s | RSS after, MB |"
echo "|---:|---:|---:|---:|---:|---:|---:|---:|"
read -r f0 s0 <<< "$(faults)"
for w in $(seq 1 "$waves"); do
  n=${stream_list[$(((w - 1) % ${#stream_list[@]}))]}
  java @"$root/jvm.args" -Dmlxring.home="$root" \
    -cp "perf/target/perf-0.1.0-SNAPSHOT.jar:perf/target/lib/*" dev.mlxring.perf.LoadHarness \
    --target "server=http://127.0.0.1:$port" --concurrency "$n" --requests "$n" --rounds 1 \
    --warmup 0 --max-tokens 64 --out "$out/cold-waves-$w.md" > "$out/cold-waves-$w.log" 2>&1
  read -r f1 s1 <<< "$(faults)"
  row=$(grep '^| server |' "$out/cold-waves-$w.md")
  IFS='|' read -r -a c <<< "$row"
  rss=$(awk '/^VmRSS/ { printf "%d", $2 / 1024 }' "/proc/$pid/status")
  printf '| %d | %d | %s | %s | %s | %d | %.2f | %d |\n' "$w" "$n" "$(echo "${c[9]}" | xargs)" "$(echo "${c[4]}" | xargs)" \
    "$(echo "${c[5]}" | xargs)" $((f1 - f0)) "$(awk -v a="$s1" -v b="$s0" 'BEGIN { print a - b }')" "$rss"
  f0=$f1; s0=$s1
done
