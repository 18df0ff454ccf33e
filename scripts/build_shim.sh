#!/usr/bin/env bash
# Builds build/native/libmlxr.so against the MLX headers and libmlx.so that the project venv's
# MLX backend wheel carries (mlx-cpu, or mlx-cuda-13 after `./mlx-ring setup --backend cuda`),
# so the shim and mlx-lm share one libmlx.
#
#   scripts/build_shim.sh                               # against the venv's mlx package
#   scripts/build_shim.sh --mlx-dir DIR --out FILE      # against an unpacked wheel's mlx/ folder
#                                                       # (scripts/gpu/pack.sh: the mlx-cuda-13 wheel)
#   MLXR_CXXFLAGS=-DMLXR_FAST_OPS_OFF scripts/build_shim.sh --out /tmp/a.so
#                                                       # extra compiler flags (an A/B build whose
#                                                       # native fast:: entry points take MLX's ops)
set -euo pipefail
root="$(cd "$(dirname "$0")/.." && pwd)"
mlx_dir=""
out="$root/build/native/libmlxr.so"
while [[ $# -gt 0 ]]; do
  case "$1" in
    --mlx-dir) mlx_dir="$2"; shift 2 ;;
    --out) out="$2"; shift 2 ;;
    *) echo "build_shim.sh: unknown option $1 (takes --mlx-dir DIR, --out FILE)" >&2; exit 2 ;;
  esac
done
if [[ -z "$mlx_dir" ]]; then
  py="$root/.venv/bin/python"
  mlx_dir="$("$py" -c 'import mlx, os; print(os.path.dirname(mlx.__file__) if getattr(mlx, "__file__", None) else list(mlx.__path__)[0])')"
fi
[[ -f "$mlx_dir/lib/libmlx.so" && -d "$mlx_dir/include" ]] || { echo "build_shim.sh: no lib/libmlx.so + include/ under $mlx_dir" >&2; exit 1; }
mlx_dir="$(cd "$mlx_dir" && pwd)"
src_dir="$root/mlx-native/src/main/c"
srcs=("$src_dir"/*.cpp)
out_dir="$(dirname "$out")"
stamp="${out%.so}.stamp"
extra_flags="${MLXR_CXXFLAGS:-}"
want="$(cat "${srcs[@]}" "$src_dir"/*.h 2>/dev/null | sha256sum | cut -c1-16) $(stat -c %s "$mlx_dir/lib/libmlx.so") $mlx_dir $extra_flags"
if [[ -f "$out" && -f "$stamp" && "$(cat "$stamp")" == "$want" ]]; then
  exit 0
fi
mkdir -p "$out_dir"
echo "[setup] compiling the MLX shim (${#srcs[@]} files in $src_dir) against $mlx_dir"
# A shared library may leave its dependencies' dependencies unresolved at link time: mlx-cuda's
# libmlx needs the CUDA libraries, which a build machine without a GPU need not have.
# One compiler per source file, as many at once as there are CPUs (the kernel files are slow to
# compile), then one link. $extra_flags is a list of flags, split on purpose.
obj_dir="${out%.so}.obj"  # per output, so two builds into one folder cannot mix objects
rm -rf "$obj_dir"; mkdir -p "$obj_dir"
printf '%s\n' "${srcs[@]}" | xargs -P "$(nproc)" -I{} sh -c \
  'c++ -std=c++20 -O2 -ffp-contract=off -fPIC -Wall -Wno-unused-function $4 -I"$1/include" -c "$2" -o "$3/$(basename "$2" .cpp).o"' \
  sh "$mlx_dir" {} "$obj_dir" "$extra_flags"
c++ -shared "$obj_dir"/*.o -L"$mlx_dir/lib" -lmlx \
  -Wl,--allow-shlib-undefined -Wl,-rpath,"$mlx_dir/lib" -o "$out.tmp"
mv "$out.tmp" "$out"
echo "$want" > "$stamp"
echo "[setup] built $out"
