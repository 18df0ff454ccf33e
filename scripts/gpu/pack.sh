#!/usr/bin/env bash
# Packs what the lent NVIDIA machine (the `device` tool's nvidia-h200) lacks, for
# scripts/gpu/run_on_device.sh: it has Python 3.12, CUDA 13's libraries (site-packages/nvidia)
# and no Java, no network, and a call carries at most 64 MiB. Run here, on x86-64 Linux:
#
#   scripts/gpu/pack.sh [OUT]          # OUT defaults to build/gpu-carry (ignored by git)
#
# OUT/a  (first call)   libmlx.so.xz.00: the first half of mlx-cuda-13's libmlx.so (stripped of
#                       its static symbol table, which nothing loads, then xz -7), and
#                       jrt.tar.xz: a jlink'ed JDK 25 runtime
# OUT/b  (second call)  libmlx.so.xz.01: the second half; mlx-cuda-rest.tar.xz: the wheel's
#                       headers, bundled BLAS/LAPACK and metadata; wheels/: mlx (cp312) and
#                       mlx-lm, pure Python; app.tar.xz: a home for the JVM (jvm.args, the shim
#                       built against mlx-cuda-13's headers and libmlx, the perf jar and its
#                       runtime classpath stored uncompressed so that xz compresses it, and the
#                       oracle, bench and gpu scripts)
# Both folders also hold run_on_device.sh. Each folder stays under ~60 MB; the two calls must
# land on one warm machine (the second within the ~30 s it stays warm).
#
# Downloads (pip download, kept in build/gpu-dl) the wheels at the pinned mlx / mlx-lm versions
# of requirements.txt. Needs JDK 25 (JAVA_HOME, else /usr/lib/jvm/temurin-25-jdk-amd64), xz,
# a C++ compiler, Maven (reactor build of perf; never mvn install).
set -euo pipefail
root="$(cd "$(dirname "$0")/../.." && pwd)"
cd "$root"
out="${1:-build/gpu-carry}"
dl=build/gpu-dl
export JAVA_HOME="${JAVA_HOME:-/usr/lib/jvm/temurin-25-jdk-amd64}"
export PATH="$JAVA_HOME/bin:$PATH"
export MAVEN_OPTS="${MAVEN_OPTS:---sun-misc-unsafe-memory-access=allow}"
log() { echo "[pack] $*" >&2; }

mlx_version="$(sed -n 's/^mlx==\([0-9.]*\).*/\1/p' requirements.txt)"
mlx_lm_version="$(sed -n 's/^mlx-lm==\([0-9.]*\).*/\1/p' requirements.txt)"
mkdir -p "$dl" "$out/a" "$out/b/wheels"

# 1. wheels for the device's CPython 3.12 on manylinux x86-64
if ! ls "$dl"/mlx_cuda_13-"$mlx_version"-*.whl >/dev/null 2>&1; then
  log "downloading mlx $mlx_version, mlx-cuda-13 $mlx_version, mlx-lm $mlx_lm_version"
  .venv/bin/pip download --disable-pip-version-check --no-deps --only-binary=:all: --python-version 3.12 \
    --implementation cp --platform manylinux_2_35_x86_64 --platform manylinux_2_28_x86_64 \
    --platform manylinux_2_17_x86_64 --platform manylinux2014_x86_64 -d "$dl" \
    "mlx==$mlx_version" "mlx-cuda-13==$mlx_version" "mlx-lm==$mlx_lm_version" >&2
fi
cp "$dl"/mlx-"$mlx_version"-cp312-*.whl "$dl"/mlx_lm-"$mlx_lm_version"-*.whl "$out/b/wheels/"

# 2. mlx-cuda-13 unpacked: libmlx.so stripped and split; the rest as one tar.xz
cuda="$dl/mlx-cuda-13"
if [[ ! -f "$cuda/mlx/lib/libmlx.so" ]]; then
  rm -rf "$cuda" && mkdir -p "$cuda"
  (cd "$cuda" && unzip -q ../mlx_cuda_13-"$mlx_version"-*.whl)
fi
if [[ ! -f "$dl/libmlx.so.xz" ]]; then
  log "stripping and compressing libmlx.so (xz -7, a few minutes)"
  strip --strip-all -o "$dl/libmlx.stripped.so" "$cuda/mlx/lib/libmlx.so"
  xz -7 -T0 -c "$dl/libmlx.stripped.so" > "$dl/libmlx.so.xz.tmp"
  mv "$dl/libmlx.so.xz.tmp" "$dl/libmlx.so.xz"
fi
split -n 2 -d -a 2 "$dl/libmlx.so.xz" "$dl/libmlx.so.xz."
mv "$dl/libmlx.so.xz.00" "$out/a/"
mv "$dl/libmlx.so.xz.01" "$out/b/"
sha256sum "$dl/libmlx.so.xz" | cut -c1-64 > "$out/b/libmlx.so.xz.sha256"
tar -C "$cuda" -cJf "$out/b/mlx-cuda-rest.tar.xz" --exclude=mlx/lib/libmlx.so mlx mlx_cuda_13.libs \
  mlx_cuda_13-"$mlx_version".dist-info

# 3. the shim against mlx-cuda-13's headers and libmlx; the perf jar and its classpath
home="$dl/home"
rm -rf "$home" && mkdir -p "$home/build/native" "$home/perf/target/lib" "$home/scripts"
scripts/build_shim.sh --mlx-dir "$cuda/mlx" --out "$dl/native-cuda/libmlxr.so" >&2
cp "$dl/native-cuda/libmlxr.so" "$home/build/native/"
log "building the reactor up to perf (mvn package)"
mvn -B -q -DskipTests package -pl perf -am >&2
# Jars stored uncompressed: xz then compresses the class files far better than deflate did.
.venv/bin/python - "$home/perf/target" perf/target/perf-0.1.0-SNAPSHOT.jar perf/target/lib/*.jar <<'PY'
import sys, zipfile, os
dest = sys.argv[1]
for src in sys.argv[2:]:
    target = os.path.join(dest, "lib" if "/lib/" in src else "", os.path.basename(src))
    with zipfile.ZipFile(src) as zin, zipfile.ZipFile(target, "w", zipfile.ZIP_STORED) as zout:
        for info in zin.infolist():
            data = zin.read(info.filename)  # before the entry's compress_type changes
            info.compress_type = zipfile.ZIP_STORED
            zout.writestr(info, data)
PY
cp jvm.args "$home/"
cp -r scripts/gpu scripts/oracle scripts/bench "$home/scripts/"
find "$home/scripts" -name __pycache__ -prune -exec rm -rf {} +
tar -C "$home" -cJf "$out/b/app.tar.xz" .

# 4. a JDK 25 runtime with the modules the perf classpath uses
if [[ ! -x "$dl/jrt/bin/java" ]]; then
  log "jlink: JDK 25 runtime"
  rm -rf "$dl/jrt"
  jlink --add-modules java.base,java.logging,java.management,java.naming,java.net.http,java.sql,java.xml,java.desktop,java.instrument,java.scripting,jdk.unsupported,jdk.management,jdk.zipfs,jdk.crypto.ec,jdk.compiler \
    --strip-debug --no-header-files --no-man-pages --output "$dl/jrt"
fi
tar -C "$dl" -cf - jrt | xz -7 -T0 > "$out/a/jrt.tar.xz"

cp scripts/gpu/run_on_device.sh "$out/a/"
cp scripts/gpu/run_on_device.sh "$out/b/"
du -sh "$out/a" "$out/b" >&2
log "done: carry $out/a in one call (run_on_device.sh stage-a), then $out/b (stage-b) on the same warm machine"
