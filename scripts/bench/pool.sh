#!/usr/bin/env bash
# docs/benchmarks.md's model-pool figures (ingress ModelPoolBench, outside the suite):
#   - per model size (tiny gemma3 and qwen3_moe, SmolLM2-135M, and random-weight 0.82 B llamas at
#     4 bits and bfloat16 that scripts/bench/make_pool_models.py builds into build/bench/pool-models
#     on first use, ~3 minutes): the load seconds the pool records,
#     the first streamed chunk of a request to the model cold (load included) and then warm;
#   - RSS against --memory-budget under a flood: 24 concurrent 600-token prompts on a fresh server
#     process per budget (room for the flooded model and 1, 2.5, 5, 10 requests' peaks), its VmRSS
#     sampled every 2 ms; RSS − baseline (the process right after start, before any request)
#     against the room the budget leaves (see docs/api.md, "Many models").
#
#   scripts/bench/pool.sh            # -> build/bench/pool.log (and stdout); ~8 minutes on 2 cores
#
# Environment: ROUNDS (cold/warm rounds, default 3), ROOMS (the flood's rooms, default 1,2.5,5,10). Needs the tiny models ModelPoolServerTest builds
# under build/pool-test/models (run it once first) and the default model. Run it at normal priority
# on a machine as quiet as you can get: the report starts and ends with the load average.
# Each flood row is followed by the server's MLX gauges after the flood (mlxring_mlx_peak_memory_bytes:
# MLX's own peak). Where the rest of the RSS is: run scripts/bench/rss_split.py build/pool-flood --nmt
# beside it (anonymous vs file, glibc arenas, the JVM's native memory; the server JVM takes more
# flags from -Dmlxring.bench.serverJvm, e.g. -XX:NativeMemoryTracking=summary).
set -euo pipefail
source "$(dirname "$0")/common.sh"   # $root, cd "$root", JDK 25 on PATH, MAVEN_OPTS

out="build/bench/pool.log"
mkdir -p build/bench
[[ -d build/pool-test/models/gemma3-serve ]] || {
  echo "pool.sh: build/pool-test/models is missing: run ModelPoolServerTest once first" >&2; exit 1; }
.venv/bin/python scripts/bench/make_pool_models.py --out build/bench/pool-models >&2
{
  echo "# scripts/bench/pool.sh at $(git rev-parse --short HEAD), $(date -u +%FT%TZ)"
  echo "# $(grep -m1 'model name' /proc/cpuinfo), $(nproc) CPUs, load $(cut -d' ' -f1-3 /proc/loadavg)"
  mvn -B -q -pl ingress -am test -Dtest='ModelPoolBench' -Dmlxring.bench.pool=true \
      -Dmlxring.bench.rounds="${ROUNDS:-3}" -Dmlxring.bench.rooms="${ROOMS:-1,2.5,5,10}" -Dsurefire.failIfNoSpecifiedTests=false 2>&1 \
    | grep -E '^(round|load average|\|)' || true
  echo "# end: load $(cut -d' ' -f1-3 /proc/loadavg)"
} | tee "$out"
