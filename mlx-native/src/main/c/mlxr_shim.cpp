// mlx-ring's C ABI over MLX's C++ API.
//
// Rules of this file:
//  * One extern "C" function per MLX op (or per fused helper that mlx-lm
//    compiles, so the compiled graph is the same one mlx-lm builds).
//  * No C++ exception crosses the boundary: every entry point catches, stores
//    the message in a thread-local buffer (mlxr_last_error) and returns NULL
//    (for array results) or a non-zero code (for int results).
//  * An mlxr_array is a heap-allocated mlx::core::array (a ref-counted handle
//    to a graph node). The caller owns every handle it receives and releases it
//    with mlxr_array_free exactly once; inputs are borrowed.
//  * Dtype codes are MLX's Dtype::Val ordinals (see dtype_of/code_of).

#include <cmath>
#include <cstdint>
#include <cstdlib>
#include <cstring>
#include <optional>
#include <string>
#include <vector>
#include <algorithm>

#include "mlx/mlx.h"

namespace mx = mlx::core;

#include "mlxr_guard.h"

using mlxr::guard_array;
using mlxr::guard_int;

namespace {

thread_local std::string g_last_error;

inline const mx::array& A(mlxr_array a) {
  return *static_cast<mx::array*>(a);
}

inline std::optional<mx::array> opt(mlxr_array a) {
  if (a == nullptr) return std::nullopt;
  return A(a);
}

mx::Dtype dtype_of(int code) {
  switch (code) {
    case 0: return mx::bool_;
    case 1: return mx::uint8;
    case 2: return mx::uint16;
    case 3: return mx::uint32;
    case 4: return mx::uint64;
    case 5: return mx::int8;
    case 6: return mx::int16;
    case 7: return mx::int32;
    case 8: return mx::int64;
    case 9: return mx::float16;
    case 10: return mx::float32;
    case 11: return mx::float64;
    case 12: return mx::bfloat16;
    case 13: return mx::complex64;
  }
  throw std::invalid_argument("unknown dtype code " + std::to_string(code));
}

int code_of(mx::Dtype d) {
  return static_cast<int>(d.val());
}

mx::Shape shape_of(const int32_t* dims, int n) {
  return mx::Shape(dims, dims + n);
}

std::vector<mx::array> arrays_of(const mlxr_array* arrays, int n) {
  std::vector<mx::array> v;
  v.reserve(n);
  for (int i = 0; i < n; i++) v.push_back(A(arrays[i]));
  return v;
}

// mlx-lm's nn.silu and activations.swiglu are both @mx.compile(shapeless=True);
// the nesting below mirrors theirs so MLX traces and fuses the same graph.
std::vector<mx::array> silu_impl(const std::vector<mx::array>& in) {
  return {mx::multiply(in[0], mx::sigmoid(in[0]))};
}

std::vector<mx::array> swiglu_impl(const std::vector<mx::array>& in) {
  static auto silu = mx::compile(silu_impl, /*shapeless=*/true);
  return {mx::multiply(silu({in[0]})[0], in[1])};
}

// mlx.nn.gelu_approx, @mx.compile(shapeless=True):
//   0.5 * x * (1 + mx.tanh(math.sqrt(2 / math.pi) * (x + 0.044715 * x**3)))
// Python scalars become arrays of x's dtype on the array's side of the operator
// (x.__rmul__(0.5) is multiply(x, 0.5)); the operand order is kept so the fused
// kernel MLX generates is the one mlx-lm's trace produces.
std::vector<mx::array> gelu_approx_impl(const std::vector<mx::array>& in) {
  const mx::array& x = in[0];
  auto c = [&](double v) { return mx::array(static_cast<float>(v), x.dtype()); };
  mx::array half_x = mx::multiply(x, c(0.5));
  mx::array cube = mx::power(x, c(3));
  mx::array inner = mx::add(x, mx::multiply(cube, c(0.044715)));
  mx::array t = mx::tanh(mx::multiply(inner, c(std::sqrt(2.0 / M_PI))));
  return {mx::multiply(half_x, mx::add(t, c(1.0)))};
}

// mlx-lm activations.swiglu_oai (GPT-OSS), @mx.compile(shapeless=True) with SwigluOAI's
// defaults alpha=1.702, limit=7.0 (Python floats: constants of the arrays' dtype):
//   gate = mx.minimum(gate, limit); x = mx.clip(x, -limit, limit)
//   return (x + 1.0) * (gate * mx.sigmoid(alpha * gate))
std::vector<mx::array> swiglu_oai_impl(const std::vector<mx::array>& in) {
  const float alpha = 1.702f;
  const float limit = 7.0f;
  mx::array gate = in[0];
  mx::array x = in[1];
  gate = mx::minimum(gate, mx::array(limit, gate.dtype()));
  x = mx::clip(x, mx::array(-limit, x.dtype()), mx::array(limit, x.dtype()));
  mx::array glu = mx::multiply(gate, mx::sigmoid(mx::multiply(gate, mx::array(alpha, gate.dtype()))));
  return {mx::multiply(mx::add(x, mx::array(1.0f, x.dtype())), glu)};
}

// mlx-lm gemma3_text.clip_residual, @mx.compile(shapeless=True): x + y, except
// float16, which adds in float32 and clips to float16's range.
std::vector<mx::array> clip_residual_impl(const std::vector<mx::array>& in) {
  const mx::array& x = in[0];
  const mx::array& y = in[1];
  if (x.dtype() != mx::float16) return {mx::add(x, y)};
  float bound = 65504.0f;  // mx.finfo(mx.float16).max
  mx::array s = mx::add(mx::astype(x, mx::float32), mx::astype(y, mx::float32));
  return {mx::astype(mx::clip(s, mx::array(-bound, mx::float32), mx::array(bound, mx::float32)),
                     mx::float16)};
}

struct WeightMap {
  std::vector<std::pair<std::string, mx::array>> arrays;
  std::vector<std::pair<std::string, std::string>> strings;

  // Sorted by name so that Java sees one order whatever the file's (and
  // unordered_map's) order is.
  WeightMap* sorted() {
    std::sort(arrays.begin(), arrays.end(),
              [](auto& a, auto& b) { return a.first < b.first; });
    std::sort(strings.begin(), strings.end());
    return this;
  }
};

}  // namespace

// For the shim's other translation units (mlxr_sampling.cpp): sets the message
// mlxr_last_error returns.
void mlxr_set_last_error(const char* message) { g_last_error = message; }

extern "C" {

const char* mlxr_last_error() { return g_last_error.c_str(); }

const char* mlxr_version() {
  static std::string v = mx::version();
  return v.c_str();
}

// ---- array lifetime and inspection -------------------------------------

void mlxr_array_free(mlxr_array a) { delete static_cast<mx::array*>(a); }

mlxr_array mlxr_array_copy_handle(mlxr_array a) {
  return guard_array([&] { return A(a); });
}

mlxr_array mlxr_array_from_bytes(const void* data, int64_t length_in_bytes,
                                 const int32_t* shape, int ndim, int dtype) {
  return guard_array([&] {
    auto dt = dtype_of(dtype);
    auto shp = shape_of(shape, ndim);
    int64_t expected = dt.size();
    for (auto d : shp) expected *= d;
    if (expected != length_in_bytes) {
      throw std::invalid_argument(
          "array_from_bytes: " + std::to_string(length_in_bytes) +
          " bytes given, shape and dtype need " + std::to_string(expected));
    }
    // One copy, straight into a buffer from MLX's own allocator: what MLX's raw-pointer
    // constructor does itself when the allocator cannot wrap foreign memory (the CPU allocator
    // never can: Allocator::make_buffer returns null there), without a staging copy of our own
    // before it. The array never aliases `data`, on any backend, so the caller may free or
    // reuse `data` at once, and MLX may write the buffer in place (a donated KV cache).
    auto buffer = mx::allocator::malloc(static_cast<size_t>(length_in_bytes));
    void* dst = buffer.buffer().raw_ptr();
    if (dst == nullptr) throw std::bad_alloc();
    if (length_in_bytes > 0) std::memcpy(dst, data, length_in_bytes);
    return mx::array(std::move(buffer), shp, dt);
  });
}

mlxr_array mlxr_scalar(double value, int dtype) {
  return guard_array([&] { return mx::array(value, dtype_of(dtype)); });
}

int mlxr_array_ndim(mlxr_array a) { return static_cast<int>(A(a).ndim()); }
int mlxr_array_dim(mlxr_array a, int axis) { return A(a).shape(axis); }
int mlxr_array_dtype(mlxr_array a) { return code_of(A(a).dtype()); }
int64_t mlxr_array_size(mlxr_array a) { return A(a).size(); }
int64_t mlxr_array_nbytes(mlxr_array a) { return A(a).nbytes(); }

// Evaluates a and copies its row-major bytes into dst (capacity bytes).
int mlxr_array_to_bytes(mlxr_array a, void* dst, int64_t capacity) {
  return guard_int([&] {
    mx::array x = A(a);
    x.eval();
    if (!x.flags().row_contiguous) {
      x = mx::contiguous(x);
      x.eval();
    }
    if (static_cast<int64_t>(x.nbytes()) > capacity) {
      throw std::invalid_argument("to_bytes: destination holds " +
                                  std::to_string(capacity) + " bytes, array has " +
                                  std::to_string(x.nbytes()));
    }
    std::memcpy(dst, x.data<void>(), x.nbytes());
  });
}

// ---- evaluation, streams, memory ---------------------------------------

int mlxr_eval(const mlxr_array* arrays, int n) {
  return guard_int([&] { mx::eval(arrays_of(arrays, n)); });
}

int mlxr_async_eval(const mlxr_array* arrays, int n) {
  return guard_int([&] { mx::async_eval(arrays_of(arrays, n)); });
}

// mlx-lm runs generation on its own stream (generation_stream); we do the same
// for the calling thread.
int mlxr_use_new_default_stream() {
  return guard_int([&] {
    mx::set_default_stream(mx::new_stream(mx::default_device()));
  });
}

// 1 when MLX's default device is a GPU (the mlx-cuda or Metal build with a
// device present), 0 for the CPU: the device every op without an explicit
// stream runs on, ours and mlx-lm's alike.
int mlxr_default_device_is_gpu() {
  try {
    return mx::default_device().type == mx::Device::DeviceType::gpu ? 1 : 0;
  } catch (...) {
    return 0;
  }
}

int mlxr_synchronize() {
  return guard_int([&] { mx::synchronize(); });
}

// Waits for the work queued on every stream MLX has made (each thread's default
// stream among them), callable from any thread: what the process must do before
// exit(). MLX leaks its scheduler on purpose, so its stream threads outlive the
// static destructors; a task still queued then (the step generate_step evaluates
// ahead and never reads, a collective's send) runs against a destroyed allocator
// cache, ring group or kernel pool and corrupts the heap. Returns how many
// streams could not be waited for (an earlier error on the stream, or a device
// stream this thread cannot reach); mlxr_last_error holds the first reason.
int mlxr_synchronize_all() {
  int failed = 0;
  for (const mx::Stream& s : mx::get_streams()) {
    if (guard_int([&] { mx::synchronize(s); }) != 0) {
      if (failed++ == 0) g_last_error = "stream " + std::to_string(s.index) + ": " + g_last_error;
    }
  }
  return failed;
}

int64_t mlxr_active_memory() { return mx::get_active_memory(); }
int64_t mlxr_peak_memory() { return mx::get_peak_memory(); }
int64_t mlxr_cache_memory() { return mx::get_cache_memory(); }
void mlxr_reset_peak_memory() { mx::reset_peak_memory(); }
void mlxr_clear_cache() { mx::clear_cache(); }
int64_t mlxr_set_cache_limit(int64_t limit) { return mx::set_cache_limit(limit); }
int64_t mlxr_set_memory_limit(int64_t limit) { return mx::set_memory_limit(limit); }

// ---- creation -------------------------------------------------------------

mlxr_array mlxr_zeros(const int32_t* shape, int ndim, int dtype) {
  return guard_array([&] { return mx::zeros(shape_of(shape, ndim), dtype_of(dtype)); });
}

mlxr_array mlxr_arange(double start, double stop, double step, int dtype) {
  return guard_array([&] { return mx::arange(start, stop, step, dtype_of(dtype)); });
}

// ---- element-wise --------------------------------------------------------

#define MLXR_BINARY(name)                                  \
  mlxr_array mlxr_##name(mlxr_array a, mlxr_array b) {     \
    return guard_array([&] { return mx::name(A(a), A(b)); }); \
  }
MLXR_BINARY(add)
MLXR_BINARY(subtract)
MLXR_BINARY(multiply)
MLXR_BINARY(divide)
MLXR_BINARY(power)
MLXR_BINARY(maximum)
MLXR_BINARY(minimum)
MLXR_BINARY(greater)
MLXR_BINARY(greater_equal)
MLXR_BINARY(less)
MLXR_BINARY(equal)
MLXR_BINARY(logical_and)
MLXR_BINARY(floor_divide)
MLXR_BINARY(matmul)
#undef MLXR_BINARY

#define MLXR_UNARY(name)                                  \
  mlxr_array mlxr_##name(mlxr_array a) {                   \
    return guard_array([&] { return mx::name(A(a)); });   \
  }
MLXR_UNARY(sigmoid)
MLXR_UNARY(tanh)
MLXR_UNARY(exp)
MLXR_UNARY(log)
MLXR_UNARY(negative)
MLXR_UNARY(sqrt)
MLXR_UNARY(rsqrt)
MLXR_UNARY(contiguous)
#undef MLXR_UNARY

mlxr_array mlxr_where(mlxr_array cond, mlxr_array x, mlxr_array y) {
  return guard_array([&] { return mx::where(A(cond), A(x), A(y)); });
}

mlxr_array mlxr_astype(mlxr_array a, int dtype) {
  return guard_array([&] { return mx::astype(A(a), dtype_of(dtype)); });
}

mlxr_array mlxr_addmm(mlxr_array c, mlxr_array a, mlxr_array b, float alpha, float beta) {
  return guard_array([&] { return mx::addmm(A(c), A(a), A(b), alpha, beta); });
}

// ---- shape -------------------------------------------------------------

mlxr_array mlxr_reshape(mlxr_array a, const int32_t* shape, int ndim) {
  return guard_array([&] { return mx::reshape(A(a), shape_of(shape, ndim)); });
}

mlxr_array mlxr_transpose(mlxr_array a, const int32_t* axes, int n) {
  return guard_array([&] {
    if (n < 0) return mx::transpose(A(a));
    return mx::transpose(A(a), std::vector<int>(axes, axes + n));
  });
}

mlxr_array mlxr_expand_dims(mlxr_array a, int axis) {
  return guard_array([&] { return mx::expand_dims(A(a), axis); });
}

mlxr_array mlxr_squeeze(mlxr_array a, int axis) {
  return guard_array([&] { return mx::squeeze(A(a), axis); });
}

mlxr_array mlxr_slice(mlxr_array a, const int32_t* start, const int32_t* stop,
                      const int32_t* strides, int ndim) {
  return guard_array([&] {
    return mx::slice(A(a), shape_of(start, ndim), shape_of(stop, ndim),
                     shape_of(strides, ndim));
  });
}

mlxr_array mlxr_slice_update(mlxr_array src, mlxr_array update, const int32_t* start,
                             const int32_t* stop, const int32_t* strides, int ndim) {
  return guard_array([&] {
    return mx::slice_update(A(src), A(update), shape_of(start, ndim),
                            shape_of(stop, ndim), shape_of(strides, ndim));
  });
}

// x.at[<slices>].multiply(v) as mlx's Python binding lowers it for basic slices
// (mlx_multiply_item): slice_update_prod, which is a plain multiply when the
// slice covers the whole array.
mlxr_array mlxr_slice_update_prod(mlxr_array src, mlxr_array update, const int32_t* start,
                                  const int32_t* stop, const int32_t* strides, int ndim) {
  return guard_array([&] {
    return mx::slice_update_prod(A(src), A(update), shape_of(start, ndim),
                                 shape_of(stop, ndim), shape_of(strides, ndim));
  });
}

mlxr_array mlxr_concatenate(const mlxr_array* arrays, int n, int axis) {
  return guard_array([&] { return mx::concatenate(arrays_of(arrays, n), axis); });
}

mlxr_array mlxr_take(mlxr_array a, mlxr_array indices, int axis) {
  return guard_array([&] { return mx::take(A(a), A(indices), axis); });
}

mlxr_array mlxr_take_along_axis(mlxr_array a, mlxr_array indices, int axis) {
  return guard_array([&] { return mx::take_along_axis(A(a), A(indices), axis); });
}

// ---- reductions --------------------------------------------------------

mlxr_array mlxr_argmax(mlxr_array a, int axis, bool keepdims) {
  return guard_array([&] { return mx::argmax(A(a), axis, keepdims); });
}

// axes == NULL reduces over every axis (mlx.core's axis=None).
mlxr_array mlxr_logsumexp(mlxr_array a, const int32_t* axes, int n, bool keepdims) {
  return guard_array([&] {
    if (axes == nullptr) return mx::logsumexp(A(a), keepdims);
    return mx::logsumexp(A(a), std::vector<int>(axes, axes + n), keepdims);
  });
}

mlxr_array mlxr_softmax(mlxr_array a, const int32_t* axes, int n, bool precise) {
  return guard_array([&] {
    if (axes == nullptr) return mx::softmax(A(a), precise);
    return mx::softmax(A(a), std::vector<int>(axes, axes + n), precise);
  });
}

// axes == NULL reduces over every axis (mlx.core's axis=None).
mlxr_array mlxr_sum(mlxr_array a, const int32_t* axes, int n, bool keepdims) {
  return guard_array([&] {
    if (axes == nullptr) return mx::sum(A(a), keepdims);
    return mx::sum(A(a), std::vector<int>(axes, axes + n), keepdims);
  });
}

mlxr_array mlxr_argsort(mlxr_array a, int axis) {
  return guard_array([&] { return mx::argsort(A(a), axis); });
}

// ---- gathered matmuls (mixture-of-experts layers) -------------------------------

// mx.gather_mm(a, b, lhs_indices, rhs_indices, sorted_indices); NULL indices are None.
mlxr_array mlxr_gather_mm(mlxr_array a, mlxr_array b, mlxr_array lhs_indices,
                          mlxr_array rhs_indices, bool sorted_indices) {
  return guard_array([&] {
    return mx::gather_mm(A(a), A(b), opt(lhs_indices), opt(rhs_indices), sorted_indices);
  });
}

// mx.gather_qmm(x, w, scales, biases, lhs_indices, rhs_indices, transpose, group_size,
// bits, mode, global_scale=None, sorted_indices).
mlxr_array mlxr_gather_qmm(mlxr_array x, mlxr_array w, mlxr_array scales, mlxr_array biases,
                           mlxr_array lhs_indices, mlxr_array rhs_indices, bool transpose,
                           int group_size, int bits, const char* mode, bool sorted_indices) {
  return guard_array([&] {
    return mx::gather_qmm(A(x), A(w), A(scales), opt(biases), opt(lhs_indices),
                          opt(rhs_indices), transpose, group_size, bits, mode, std::nullopt,
                          sorted_indices);
  });
}

// ---- quantization ----------------------------------------------------------

mlxr_array mlxr_quantized_matmul(mlxr_array x, mlxr_array w, mlxr_array scales,
                                 mlxr_array biases, bool transpose, int group_size,
                                 int bits, const char* mode) {
  return guard_array([&] {
    return mx::quantized_matmul(A(x), A(w), A(scales), opt(biases), transpose,
                                group_size, bits, mode);
  });
}

mlxr_array mlxr_dequantize(mlxr_array w, mlxr_array scales, mlxr_array biases,
                           int group_size, int bits, const char* mode) {
  return guard_array([&] {
    return mx::dequantize(A(w), A(scales), opt(biases), group_size, bits, mode);
  });
}

// Writes three new handles (weight, scales, biases) into out.
int mlxr_quantize(mlxr_array w, int group_size, int bits, const char* mode,
                  mlxr_array* out) {
  return guard_int([&] {
    auto r = mx::quantize(A(w), group_size, bits, mode);
    if (r.size() != 3) throw std::runtime_error("quantize: mode has no biases");
    for (int i = 0; i < 3; i++) out[i] = new mx::array(r[i]);
  });
}

// ---- fast ------------------------------------------------------------------

mlxr_array mlxr_rms_norm(mlxr_array x, mlxr_array weight, float eps) {
  return guard_array([&] { return mx::fast::rms_norm(A(x), opt(weight), eps); });
}

mlxr_array mlxr_layer_norm(mlxr_array x, mlxr_array weight, mlxr_array bias, float eps) {
  return guard_array([&] { return mx::fast::layer_norm(A(x), opt(weight), opt(bias), eps); });
}

// has_base == false passes base=None (the freqs variants).
mlxr_array mlxr_rope(mlxr_array x, int dims, bool traditional, bool has_base, float base,
                     float scale, int offset, mlxr_array freqs) {
  return guard_array([&] {
    std::optional<float> b = has_base ? std::optional<float>(base) : std::nullopt;
    return mx::fast::rope(A(x), dims, traditional, b, scale, offset, opt(freqs));
  });
}

// As mlxr_rope with one offset per batch row (an int32 array), as BatchKVCache passes it.
mlxr_array mlxr_rope_offsets(mlxr_array x, int dims, bool traditional, bool has_base, float base,
                             float scale, mlxr_array offsets, mlxr_array freqs) {
  return guard_array([&] {
    std::optional<float> b = has_base ? std::optional<float>(base) : std::nullopt;
    return mx::fast::rope(A(x), dims, traditional, b, scale, A(offsets), opt(freqs));
  });
}

// mask_mode: "" (none or mask array given), "causal".
mlxr_array mlxr_sdpa(mlxr_array q, mlxr_array k, mlxr_array v, float scale,
                     const char* mask_mode, mlxr_array mask, mlxr_array sinks) {
  return guard_array([&] {
    std::optional<mx::array> m = opt(mask);
    return mx::fast::scaled_dot_product_attention(A(q), A(k), A(v), scale, mask_mode, m,
                                                  opt(sinks));
  });
}

// ---- compiled helpers (where mlx-lm compiles) ------------------------------

mlxr_array mlxr_swiglu(mlxr_array gate, mlxr_array x) {
  static auto swiglu = mx::compile(swiglu_impl, /*shapeless=*/true);
  return guard_array([&] { return swiglu({A(gate), A(x)})[0]; });
}

mlxr_array mlxr_swiglu_oai(mlxr_array gate, mlxr_array x) {
  static auto swiglu_oai = mx::compile(swiglu_oai_impl, /*shapeless=*/true);
  return guard_array([&] { return swiglu_oai({A(gate), A(x)})[0]; });
}

mlxr_array mlxr_gelu_approx(mlxr_array x) {
  static auto gelu = mx::compile(gelu_approx_impl, /*shapeless=*/true);
  return guard_array([&] { return gelu({A(x)})[0]; });
}

mlxr_array mlxr_clip_residual(mlxr_array x, mlxr_array y) {
  static auto clip = mx::compile(clip_residual_impl, /*shapeless=*/true);
  return guard_array([&] { return clip({A(x), A(y)})[0]; });
}

// ---- io ----------------------------------------------------------------------

void mlxr_weights_free(void* m) { delete static_cast<WeightMap*>(m); }

void* mlxr_load_safetensors(const char* path) {
  try {
    auto loaded = mx::load_safetensors(std::string(path));
    auto* m = new WeightMap();
    for (auto& [k, v] : loaded.first) m->arrays.emplace_back(k, v);
    for (auto& [k, v] : loaded.second) m->strings.emplace_back(k, v);
    return m->sorted();
  } catch (const std::exception& e) {
    g_last_error = e.what();
  }
  return nullptr;
}

// GGUF metadata: strings stay strings, string lists are joined with '\n',
// array values become "#array" entries readable with mlxr_weights_array by
// the key "__metadata__/<name>".
void* mlxr_load_gguf(const char* path) {
  try {
    auto loaded = mx::load_gguf(std::string(path));
    auto* m = new WeightMap();
    for (auto& [k, v] : loaded.first) m->arrays.emplace_back(k, v);
    for (auto& [k, v] : loaded.second) {
      if (auto* s = std::get_if<std::string>(&v)) {
        m->strings.emplace_back(k, *s);
      } else if (auto* l = std::get_if<std::vector<std::string>>(&v)) {
        std::string joined;
        for (size_t i = 0; i < l->size(); i++) {
          if (i) joined += '\n';
          joined += (*l)[i];
        }
        m->strings.emplace_back(k, joined);
      } else if (auto* a = std::get_if<mx::array>(&v)) {
        m->arrays.emplace_back("__metadata__/" + k, *a);
      }
    }
    return m->sorted();
  } catch (const std::exception& e) {
    g_last_error = e.what();
  }
  return nullptr;
}

int mlxr_weights_count(void* m) { return static_cast<WeightMap*>(m)->arrays.size(); }
const char* mlxr_weights_name(void* m, int i) {
  return static_cast<WeightMap*>(m)->arrays[i].first.c_str();
}
mlxr_array mlxr_weights_array(void* m, int i) {
  return guard_array([&] { return static_cast<WeightMap*>(m)->arrays[i].second; });
}
int mlxr_weights_meta_count(void* m) { return static_cast<WeightMap*>(m)->strings.size(); }
const char* mlxr_weights_meta_key(void* m, int i) {
  return static_cast<WeightMap*>(m)->strings[i].first.c_str();
}
const char* mlxr_weights_meta_value(void* m, int i) {
  return static_cast<WeightMap*>(m)->strings[i].second.c_str();
}

int mlxr_save_safetensors(const char* path, const char** names, const mlxr_array* arrays,
                          int n, const char** meta_keys, const char** meta_values, int m) {
  return guard_int([&] {
    std::unordered_map<std::string, mx::array> a;
    for (int i = 0; i < n; i++) a.insert({names[i], A(arrays[i])});
    std::unordered_map<std::string, std::string> meta;
    for (int i = 0; i < m; i++) meta[meta_keys[i]] = meta_values[i];
    mx::save_safetensors(std::string(path), a, meta);
  });
}

}  // extern "C"
