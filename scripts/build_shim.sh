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
obj_dir="${out%.so}.obj"  # per output, so two builds into one folder cannot mix objects
extra_flags="${MLXR_CXXFLAGS:-}"
lib="$mlx_dir/lib/libmlx.so"
src_hash="$(cat "${srcs[@]}" "$src_dir"/*.h 2>/dev/null | sha256sum | cut -c1-16)"

# The libmlx the shim links, by content: hashed once per path, size and mtime (the hash is cached
# beside the stamp), so a moved or copied venv with the same library counts as the same.
lib_key="$lib $(stat -c '%s %Y' "$lib")"
hash_cache="${out%.so}.libmlx-sha256"
lib_hash=""
if [[ -f "$hash_cache" ]] && [[ "$(sed -n 1p "$hash_cache")" == "$lib_key" ]]; then
  lib_hash="$(sed -n 2p "$hash_cache")"
fi
if [[ -z "$lib_hash" ]]; then
  lib_hash="$(sha256sum "$lib" | cut -c1-16)"
  mkdir -p "$out_dir"
  printf '%s\n%s\n' "$lib_key" "$lib_hash" > "$hash_cache"
fi

# Where the shim finds libmlx at run time: relative to itself ($ORIGIN) when it links the project
# venv's mlx from inside the checkout, so a checkout that moves keeps a working shim; else the
# absolute folder (--mlx-dir).
if [[ "$mlx_dir" == "$root/.venv/"* && "$out_dir" == "$root"/* ]]; then
  runpath="\$ORIGIN/$(realpath -s -m --relative-to="$out_dir" "$mlx_dir/lib")"
else
  runpath="$mlx_dir/lib"
fi

# The objects depend on the sources, libmlx (its headers come with it) and the flags, not on any
# path; the library also on its runpath. Neither key names the checkout's folder.
obj_key="src=$src_hash libmlx=$lib_hash flags=$extra_flags"
want="$obj_key runpath=$runpath"
if [[ -f "$out" && -f "$stamp" && "$(cat "$stamp")" == "$want" ]]; then
  exit 0
fi
# A stamp written before the keys above (sources, libmlx's size and the venv's absolute path)
# that still matches vouches for the objects beside it, none newer than it (a later, failed build
# would have left newer ones): they are kept, and only the link is redone.
legacy="$src_hash $(stat -c %s "$lib") $mlx_dir $extra_flags"
if [[ -f "$stamp" && "$(cat "$stamp")" == "$legacy" && -d "$obj_dir" && ! -f "$obj_dir/.key" ]] \
    && [[ -z "$(find "$obj_dir" -name '*.o' -newer "$stamp")" ]]; then
  echo "$obj_key" > "$obj_dir/.key"
fi
mkdir -p "$out_dir"
objs_ok=false
if [[ -f "$obj_dir/.key" && "$(cat "$obj_dir/.key")" == "$obj_key" ]]; then
  objs_ok=true
  for src in "${srcs[@]}"; do
    [[ -f "$obj_dir/$(basename "$src" .cpp).o" ]] || objs_ok=false
  done
fi
if $objs_ok; then
  echo "[setup] linking the MLX shim (its objects are up to date) against $mlx_dir"
else
  echo "[setup] compiling the MLX shim (${#srcs[@]} files in $src_dir) against $mlx_dir"
  # One compiler per source file, as many at once as there are CPUs (the kernel files are slow to
  # compile), then one link. $extra_flags is a list of flags, split on purpose.
  rm -rf "$obj_dir"; mkdir -p "$obj_dir"
  # The per-ISA kernel files take most of the time: they start first, so no core is left
  # compiling one of them alone at the end.
  { printf '%s\n' "${srcs[@]}" | grep -E '_(avx2|avx512)\.cpp$' || true
    printf '%s\n' "${srcs[@]}" | grep -vE '_(avx2|avx512)\.cpp$' || true; } | xargs -P "$(nproc)" -I{} sh -c \
    'c++ -std=c++20 -O2 -ffp-contract=off -fPIC -Wall -Wno-unused-function $4 -I"$1/include" -c "$2" -o "$3/$(basename "$2" .cpp).o"' \
    sh "$mlx_dir" {} "$obj_dir" "$extra_flags"
  echo "$obj_key" > "$obj_dir/.key"
fi
# A shared library may leave its dependencies' dependencies unresolved at link time: mlx-cuda's
# libmlx needs the CUDA libraries, which a build machine without a GPU need not have.
objs=()
for src in "${srcs[@]}"; do objs+=("$obj_dir/$(basename "$src" .cpp).o"); done
c++ -shared "${objs[@]}" -L"$mlx_dir/lib" -lmlx \
  -Wl,--allow-shlib-undefined -Wl,-rpath,"$runpath" -o "$out.tmp"
mv "$out.tmp" "$out"
echo "$want" > "$stamp"
echo "[setup] built $out"
