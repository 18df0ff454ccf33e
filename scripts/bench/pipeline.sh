#!/usr/bin/env bash
# Pipeline overhead with the model excluded (JMH, dev.mlxring.perf.pipeline.PipelineBenchmark):
# submit -> first span latency (with a per-hand-off split), per-token throughput and per-token
# exec -> listener latency, per wait mode, with allocation (-prof gc) and per-stage-thread bytes.
#
#   scripts/bench/pipeline.sh                        # BLOCKING and YIELDING, report -> build/bench/pipeline/pipeline.md
#   scripts/bench/pipeline.sh -p waitMode=BUSY_SPIN  # any extra JMH options (e.g. a benchmark regex, -p, -i, -r)
#   OUT=build/bench/pipeline-busy scripts/bench/pipeline.sh firstSpan -p waitMode=BUSY_SPIN   # elsewhere
#
# ~3 minutes with the defaults (8 benchmark/parameter combinations, 1 fork, 3x2 s warm-up, 5x2 s
# measurement each). Needs JDK 25 (JAVA_HOME, else /usr/lib/jvm/temurin-25-jdk-amd64).
set -euo pipefail
source "$(dirname "$0")/common.sh"   # $root, cd "$root", JDK 25 on PATH, MAVEN_OPTS

echo "[bench] building the reactor up to perf" >&2
mvn -q -B -DskipTests package -pl perf -am

out="$(realpath -m "${OUT:-build/bench/pipeline}")"   # OUT=dir keeps a supplementary run apart
mkdir -p "$out"
rm -f "$out/probe.tsv" "$out/jmh.json"

args=("$@")
bench='dev.mlxring.perf.pipeline.PipelineBenchmark'
# A benchmark regex among the arguments replaces the default (the whole class).
if [[ ${#args[@]} -gt 0 && "${args[0]}" != -* ]]; then
  bench="${args[0]}"
  args=("${args[@]:1}")
fi

java @"$root/jvm.args" -Dmlxring.home="$root" \
  -cp "perf/target/perf-0.1.0-SNAPSHOT.jar:perf/target/lib/*" \
  org.openjdk.jmh.Main "$bench" -prof gc -rf json -rff "$out/jmh.json" \
  -jvmArgsAppend "-Dmlxring.pipeline.probe=$out/probe.tsv" "${args[@]}" | tee "$out/jmh.log"

python3 scripts/bench/pipeline_report.py "$out/jmh.json" "$out/probe.tsv" \
  --command "scripts/bench/pipeline.sh $*" > "$out/pipeline.md"
echo "[bench] report written to $out/pipeline.md" >&2
cat "$out/pipeline.md"
