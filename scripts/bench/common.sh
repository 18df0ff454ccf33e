# Sourced by the scripts in scripts/bench (after their `set -euo pipefail`): sets $root (the
# repository root) and cds there, puts JDK 25 first on PATH (JAVA_HOME, else
# /usr/lib/jvm/temurin-25-jdk-amd64) and sets MAVEN_OPTS unless it is set already.
root="$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)"
cd "$root"

if [[ -z "${JAVA_HOME:-}" && -d /usr/lib/jvm/temurin-25-jdk-amd64 ]]; then
  export JAVA_HOME=/usr/lib/jvm/temurin-25-jdk-amd64
fi
if [[ -n "${JAVA_HOME:-}" ]]; then
  export PATH="$JAVA_HOME/bin:$PATH"
fi
export MAVEN_OPTS="${MAVEN_OPTS:---sun-misc-unsafe-memory-access=allow}"

# wait_for_health URL PID LOG: polls URL until it answers (up to 2 minutes), failing with LOG's
# name as soon as process PID has exited.
wait_for_health() {
  local url=$1 pid=$2 log=$3
  for _ in $(seq 1 240); do
    curl -sf -m 2 "$url" > /dev/null 2>&1 && return 0
    kill -0 "$pid" 2>/dev/null || { echo "the server exited; see $log" >&2; return 1; }
    sleep 0.5
  done
  echo "the server did not answer $url within 2 minutes; see $log" >&2
  return 1
}
