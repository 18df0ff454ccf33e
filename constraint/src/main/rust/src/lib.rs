//! libllguidance.so for mlx-ring: llguidance's C API (llguidance.h, every `llg_*` function of the
//! pinned crate) re-exported from one cdylib, so the crate and all its dependencies come from
//! crates.io at the versions pinned in Cargo.toml and Cargo.lock. Built by
//! scripts/build_llguidance.sh; used from Java through FFM (dev.mlxring.constraint).
pub use llguidance::ffi::*;
