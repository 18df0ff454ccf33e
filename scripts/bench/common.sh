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
