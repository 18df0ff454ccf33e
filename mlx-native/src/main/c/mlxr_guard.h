// Shared by the shim's translation units: the error convention of the C ABI.
// Every entry point runs its body through guard_array / guard_int so no C++
// exception crosses into Java: the message goes to the thread-local buffer
// that mlxr_last_error returns, and the call answers NULL / -1.
#pragma once

#include "mlx/mlx.h"

typedef void* mlxr_array;

// Defined in mlxr_shim.cpp: stores the message mlxr_last_error returns.
void mlxr_set_last_error(const char* message);

namespace mlxr {

template <typename F>
mlxr_array guard_array(F&& f) {
  try {
    return new mlx::core::array(f());
  } catch (const std::exception& e) {
    mlxr_set_last_error(e.what());
  } catch (...) {
    mlxr_set_last_error("unknown C++ exception in MLX");
  }
  return nullptr;
}

template <typename F>
int guard_int(F&& f) {
  try {
    f();
    return 0;
  } catch (const std::exception& e) {
    mlxr_set_last_error(e.what());
  } catch (...) {
    mlxr_set_last_error("unknown C++ exception in MLX");
  }
  return -1;
}

}  // namespace mlxr
