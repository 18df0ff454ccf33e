#!/usr/bin/env bash
# Builds build/native/libmlxr.so against the MLX headers and libmlx.so that the
# project venv's mlx-cpu wheel carries, so the shim and mlx-lm share one libmlx.
set -euo pipefail
root="$(cd "$(dirname "$0")/.." && pwd)"
py="$root/.venv/bin/python"
mlx_dir="$("$py" -c 'import mlx, os; print(os.path.dirname(mlx.__file__) if getattr(mlx, "__file__", None) else list(mlx.__path__)[0])')"
src_dir="$root/mlx-native/src/main/c"
srcs=("$src_dir"/*.cpp)
out_dir="$root/build/native"
out="$out_dir/libmlxr.so"
stamp="$out_dir/libmlxr.stamp"
want="$(cat "${srcs[@]}" "$src_dir"/*.h 2>/dev/null | sha256sum | cut -c1-16) $(stat -c %s "$mlx_dir/lib/libmlx.so")"
if [[ -f "$out" && -f "$stamp" && "$(cat "$stamp")" == "$want" ]]; then
  exit 0
fi
mkdir -p "$out_dir"
echo "[setup] compiling the MLX shim (${#srcs[@]} files in $src_dir) against $mlx_dir"
c++ -std=c++20 -O2 -ffp-contract=off -fPIC -shared -Wall -Wno-unused-function \
  -I"$mlx_dir/include" "${srcs[@]}" -L"$mlx_dir/lib" -lmlx \
  -Wl,-rpath,"$mlx_dir/lib" -o "$out.tmp"
mv "$out.tmp" "$out"
echo "$want" > "$stamp"
echo "[setup] built $out"
