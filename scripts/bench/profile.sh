#!/usr/bin/env bash
# Per-token decode profile, ours (dev.mlxring.perf.DecodeProfile) then mlx-lm (mlxlm_profile.py),
# on one model:   scripts/bench/profile.sh MODEL_DIR [--prompt-tokens N] [--gen-tokens M] [--runs K]
# Assumes scripts/bench/decode.sh (or the same build) has run once: shim, perf/target/lib.
set -euo pipefail
source "$(dirname "$0")/common.sh"   # $root, cd "$root", JDK 25 on PATH, MAVEN_OPTS
model="$1"; shift
echo "== ours"
java @"$root/jvm.args" -Dmlxring.home="$root" -cp "perf/target/perf-0.1.0-SNAPSHOT.jar:perf/target/lib/*" \
  dev.mlxring.perf.DecodeProfile --model "$model" "$@"
echo "== mlx-lm"
.venv/bin/python scripts/bench/mlxlm_profile.py --model "$model" "$@"
