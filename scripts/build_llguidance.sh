#!/usr/bin/env bash
# Builds build/native/libllguidance.so: llguidance's C API (llguidance.h), the constraint engine
# behind structured outputs, reached from Java through FFM (constraint module). The crate comes
# from crates.io at the version pinned in constraint/src/main/rust/Cargo.toml (and every
# transitive crate at the version pinned in its Cargo.lock); cargo builds it as a cdylib.
#
#   scripts/build_llguidance.sh                  # into build/native/libllguidance.so
#   scripts/build_llguidance.sh --out FILE       # anywhere else (e.g. build/llg/libllguidance.so)
#
# Idempotent: when FILE exists and was built from the same Cargo.toml, Cargo.lock and sources,
# it returns at once. Needs cargo (Rust 1.87 or newer); says so when it is missing.
set -euo pipefail
root="$(cd "$(dirname "$0")/.." && pwd)"
crate_dir="$root/constraint/src/main/rust"
out="$root/build/native/libllguidance.so"
while [[ $# -gt 0 ]]; do
  case "$1" in
    --out) [[ $# -ge 2 ]] || { echo "build_llguidance.sh: --out needs a file" >&2; exit 2; }
      out="$2"; shift 2 ;;
    *) echo "build_llguidance.sh: unknown option $1 (takes --out FILE)" >&2; exit 2 ;;
  esac
done
stamp="${out%.so}.stamp"
want="$(cat "$crate_dir/Cargo.toml" "$crate_dir/Cargo.lock" "$crate_dir"/src/*.rs | sha256sum | cut -c1-16)"
if [[ -f "$out" && -f "$stamp" && "$(cat "$stamp")" == "$want" ]]; then
  exit 0
fi
# rustup installs into $CARGO_HOME/bin (default ~/.cargo/bin), which a non-login shell may lack.
rustup_bin="${CARGO_HOME:-$HOME/.cargo}/bin"
if ! command -v cargo >/dev/null 2>&1 && [[ -x "$rustup_bin/cargo" ]]; then
  export PATH="$rustup_bin:$PATH"
fi
if ! command -v cargo >/dev/null 2>&1; then
  echo "build_llguidance.sh: cargo is not on PATH nor in $rustup_bin; install Rust (cargo 1.87 or" \
       "newer, e.g. from your distribution or rustup) to build libllguidance.so, the structured-output engine" >&2
  exit 1
fi
out_dir="$(dirname "$out")"
mkdir -p "$out_dir"
target_dir="${out%.so}.target"  # per output, beside it, so builds into two folders never mix
echo "[setup] building llguidance ($(sed -n 's/^llguidance = "=\(.*\)"/\1/p' "$crate_dir/Cargo.toml")) with $(cargo --version) into $out"
cargo build --release --locked --lib --manifest-path "$crate_dir/Cargo.toml" --target-dir "$target_dir"
cp "$target_dir/release/libllguidance.so" "$out.tmp"
mv "$out.tmp" "$out"
echo "$want" > "$stamp"
echo "[setup] built $out"
