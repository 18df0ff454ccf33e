// mlx-ring's sampling entry points: the functions mlx-lm's sample_utils.py
// compiles, and the indexing / random ops that its logits processors and
// samplers use.
//
// Same rules as mlxr_shim.cpp: one extern "C" function per MLX op or per
// compiled mlx-lm helper; no C++ exception crosses the boundary (errors go to
// the shim's thread-local message, read with mlxr_last_error); the caller owns
// every handle it receives, inputs are borrowed.
//
// How the compiled helpers mirror Python:
//   mlx-lm decorates apply_top_k, apply_min_p, apply_top_p, apply_xtc and
//   categorical_sampling with
//       @partial(mx.compile, inputs=mx.random.state, outputs=mx.random.state)
//   The Python compile wrapper then calls mx::detail::compile with the flat
//   array arguments followed by the random key as inputs, the function's
//   outputs followed by the (possibly advanced) random key as outputs, and the
//   non-array arguments (top_p, temp, top_k, the special-token list, ...) as
//   the cache constants. Inside the trace, each mx.random.* call without an
//   explicit key draws `next()` from the state: (state, subkey) = split(state).
//   The functions below build that same traced function, with the key an
//   explicit input and the new key an explicit output, so MLX traces, fuses
//   and caches the same graph mlx-lm runs. Scalars become arrays the way the
//   Python binding converts them: a Python float next to an array becomes
//   array((float) value, array.dtype) when that dtype is floating, float32
//   otherwise.

#include <cmath>
#include <cstdint>
#include <cstring>
#include <functional>
#include <limits>
#include <string>
#include <vector>

#include "mlx/compile_impl.h"
#include "mlx/mlx.h"

namespace mx = mlx::core;

#include "mlxr_guard.h"

using mlxr::guard_array;
using mlxr::guard_int;

namespace {

inline const mx::array& A(mlxr_array a) {
  return *static_cast<mx::array*>(a);
}

std::vector<mx::array> arrays_of(const mlxr_array* arrays, int n) {
  std::vector<mx::array> v;
  v.reserve(n);
  for (int i = 0; i < n; i++) v.push_back(A(arrays[i]));
  return v;
}

// A Python float next to an array of dtype `like` (python/src/utils.cpp
// to_array): cast to float first, then to the array's dtype if floating.
mx::array py_float(double v, mx::Dtype like) {
  mx::Dtype t = mx::issubdtype(like, mx::floating) ? like : mx::float32;
  return mx::array(static_cast<float>(v), t);
}

// x[..., start:] along the last axis (start may be negative, as in Python).
mx::array slice_last_from(const mx::array& x, int start) {
  int n = x.ndim();
  int size = x.shape(n - 1);
  int s = start < 0 ? std::max(start + size, 0) : std::min(start, size);
  mx::Shape starts(n, 0);
  mx::Shape stops = x.shape();
  mx::Shape strides(n, 1);
  starts[n - 1] = s;
  return mx::slice(x, starts, stops, strides);
}

// x[..., :stop] along the last axis (stop >= 0).
mx::array slice_last_to(const mx::array& x, int stop) {
  int n = x.ndim();
  mx::Shape starts(n, 0);
  mx::Shape stops = x.shape();
  mx::Shape strides(n, 1);
  stops[n - 1] = std::min(stop, x.shape(n - 1));
  return mx::slice(x, starts, stops, strides);
}

uint64_t bits_of(double d) {
  uint64_t u;
  std::memcpy(&u, &d, sizeof u);
  return u;
}

using TraceFn = std::function<std::vector<mx::array>(const std::vector<mx::array>&)>;

// Cache identities of the compiled helpers (one per mlx-lm function).
char g_top_k_id, g_min_p_id, g_top_p_id, g_xtc_id, g_categorical_id;

std::uintptr_t id_of(const char& c) {
  return reinterpret_cast<std::uintptr_t>(&c);
}

// Calls the compiled form of `fn` on {x, key}; writes {result, new key}.
void call_compiled(TraceFn fn, const char& id, std::vector<uint64_t> constants,
                   mlxr_array x, mlxr_array key, mlxr_array* out) {
  auto compiled = mx::detail::compile(std::move(fn), id_of(id), /*shapeless=*/false,
                                      std::move(constants));
  auto r = compiled({A(x), A(key)});
  if (r.size() != 2) throw std::runtime_error("compiled sampler returned " +
                                              std::to_string(r.size()) + " arrays");
  out[0] = new mx::array(r[0]);
  out[1] = new mx::array(r[1]);
}

// Python's mx.random.<fn>() without a key inside the trace: next() on the state.
mx::array next_key(mx::array& state) {
  auto [new_state, subkey] = mx::random::split(state);
  state = new_state;
  return subkey;
}

// The structure constants the Python wrapper hashes for f(array, <scalars>):
// a list marker, an array marker, then the scalars (see PyCompiledFun). Only
// their uniqueness matters here: they key the compile cache.
constexpr uint64_t kListId = 18446744073709551533UL;
constexpr uint64_t kArrayId = 18446744073709551557UL;

}  // namespace

extern "C" {

// ---- random --------------------------------------------------------------------

// mx.random.key(seed): the key mx.random.seed(seed) installs as the state.
mlxr_array mlxr_random_key(uint64_t seed) {
  return guard_array([&] { return mx::random::key(seed); });
}

// mx.random.split(key) as the key sequence uses it: out = {new state, subkey}.
int mlxr_random_split(mlxr_array key, mlxr_array* out) {
  return guard_int([&] {
    auto [a, b] = mx::random::split(A(key));
    out[0] = new mx::array(a);
    out[1] = new mx::array(b);
  });
}

// ---- indexing ops (what `a[:, idx]`, `a[:, idx] = v` and `a.at[:, idx].add(v)`
//      lower to in python/src/indexing.cpp) ------------------------------------------

mlxr_array mlxr_gather(mlxr_array a, const mlxr_array* indices, int n, const int32_t* axes,
                       const int32_t* slice_sizes, int nslice) {
  return guard_array([&] {
    return mx::gather(A(a), arrays_of(indices, n), std::vector<int>(axes, axes + n),
                      mx::Shape(slice_sizes, slice_sizes + nslice));
  });
}

mlxr_array mlxr_scatter(mlxr_array a, const mlxr_array* indices, int n, mlxr_array updates,
                        const int32_t* axes) {
  return guard_array([&] {
    return mx::scatter(A(a), arrays_of(indices, n), A(updates),
                       std::vector<int>(axes, axes + n));
  });
}

mlxr_array mlxr_scatter_add(mlxr_array a, const mlxr_array* indices, int n,
                            mlxr_array updates, const int32_t* axes) {
  return guard_array([&] {
    return mx::scatter_add(A(a), arrays_of(indices, n), A(updates),
                           std::vector<int>(axes, axes + n));
  });
}

mlxr_array mlxr_broadcast_to(mlxr_array a, const int32_t* shape, int ndim) {
  return guard_array([&] { return mx::broadcast_to(A(a), mx::Shape(shape, shape + ndim)); });
}

mlxr_array mlxr_argpartition(mlxr_array a, int kth, int axis) {
  return guard_array([&] { return mx::argpartition(A(a), kth, axis); });
}

// ---- compiled sample_utils helpers -----------------------------------------------
// Each writes two new handles into out: {result, new random key}.

// apply_top_k(logprobs, top_k)
int mlxr_apply_top_k(mlxr_array logprobs, int top_k, mlxr_array key, mlxr_array* out) {
  return guard_int([&] {
    int vocab = A(logprobs).shape(-1);
    if (!(0 < top_k && top_k < vocab)) {
      throw std::invalid_argument("`top_k` has to be an integer in the (0, " +
                                  std::to_string(vocab) + ") interval, but is " +
                                  std::to_string(top_k) + ".");
    }
    TraceFn fn = [top_k](const std::vector<mx::array>& in) -> std::vector<mx::array> {
      const auto& lp = in[0];
      auto mask_idx = slice_last_from(mx::argpartition(mx::negative(lp), top_k - 1, -1), top_k);
      auto masked = mx::put_along_axis(
          lp, mask_idx, mx::array(-std::numeric_limits<float>::infinity(), lp.dtype()), -1);
      return {masked, in[1]};
    };
    call_compiled(std::move(fn), g_top_k_id,
                  {kListId, kArrayId, static_cast<uint64_t>(top_k)}, logprobs, key, out);
  });
}

// apply_min_p(logprobs, min_p, min_tokens_to_keep)
int mlxr_apply_min_p(mlxr_array logprobs, double min_p, int min_tokens_to_keep, mlxr_array key,
                     mlxr_array* out) {
  return guard_int([&] {
    if (!(0 <= min_p && min_p <= 1.0)) {
      throw std::invalid_argument("`min_p` has to be a float in the [0, 1] interval, but is " +
                                  std::to_string(min_p));
    }
    if (min_tokens_to_keep < 1) {
      throw std::invalid_argument(
          "`min_tokens_to_keep` has to be a positive integer, but is " +
          std::to_string(min_tokens_to_keep));
    }
    double log_min_p = std::log(min_p);  // math.log(min_p): computed in double, as Python
    int k = min_tokens_to_keep;
    TraceFn fn = [log_min_p, k](const std::vector<mx::array>& in) -> std::vector<mx::array> {
      const auto& lp = in[0];
      auto top_logprobs = mx::max(lp, std::vector<int>{-1}, /*keepdims=*/true);
      auto scaled_min_p = mx::add(top_logprobs, py_float(log_min_p, top_logprobs.dtype()));
      auto tokens_to_remove = mx::less(lp, scaled_min_p);
      if (k > 1) {
        auto top_indices = slice_last_from(mx::argpartition(lp, -k, -1), -k);
        tokens_to_remove = mx::put_along_axis(tokens_to_remove, top_indices, mx::array(false), -1);
      }
      return {mx::where(tokens_to_remove, py_float(-INFINITY, lp.dtype()), lp), in[1]};
    };
    call_compiled(std::move(fn), g_min_p_id,
                  {kListId, kArrayId, bits_of(min_p), static_cast<uint64_t>(k)}, logprobs, key,
                  out);
  });
}

// apply_top_p(logprobs, top_p)
int mlxr_apply_top_p(mlxr_array logprobs, double top_p, mlxr_array key, mlxr_array* out) {
  return guard_int([&] {
    TraceFn fn = [top_p](const std::vector<mx::array>& in) -> std::vector<mx::array> {
      const auto& lp = in[0];
      auto sorted_logprobs = mx::sort(lp, -1);
      auto sorted_probs = mx::exp(mx::astype(sorted_logprobs, mx::float32));
      auto mass_above = mx::cumsum(sorted_probs, -1, /*reverse=*/true, /*inclusive=*/false);
      auto total_mass = mx::add(slice_last_to(mass_above, 1), slice_last_to(sorted_probs, 1));
      // top_p * total_mass: array.__rmul__ -> multiply(total_mass, array(top_p))
      auto bound = mx::multiply(total_mass, py_float(top_p, total_mass.dtype()));
      auto num_dropped =
          mx::sum(mx::greater_equal(mass_above, bound), std::vector<int>{-1}, /*keepdims=*/true);
      auto threshold = mx::take_along_axis(sorted_logprobs, num_dropped, -1);
      return {mx::where(mx::less(lp, threshold), py_float(-INFINITY, lp.dtype()), lp), in[1]};
    };
    call_compiled(std::move(fn), g_top_p_id, {kListId, kArrayId, bits_of(top_p)}, logprobs, key,
                  out);
  });
}

// apply_xtc(logits, xtc_probability, xtc_threshold, xtc_special_tokens)
int mlxr_apply_xtc(mlxr_array logits, double xtc_probability, double xtc_threshold,
                   const int32_t* special_tokens, int n_special, mlxr_array key,
                   mlxr_array* out) {
  return guard_int([&] {
    if (!(0 <= xtc_threshold && xtc_threshold <= 0.5)) {
      throw std::invalid_argument(
          "`threshold` has to be a float in the [0, 0.5] interval, but is " +
          std::to_string(xtc_threshold));
    }
    if (!(0 <= xtc_probability && xtc_probability <= 1.0)) {
      throw std::invalid_argument(
          "`probability` has to be a float in the [0, 1] interval, but is " +
          std::to_string(xtc_probability));
    }
    std::vector<int32_t> special(special_tokens, special_tokens + n_special);
    TraceFn fn = [xtc_probability, xtc_threshold,
                  special](const std::vector<mx::array>& in) -> std::vector<mx::array> {
      const auto& x = in[0];
      mx::array state = in[1];
      auto probs = mx::softmax(x, std::vector<int>{-1}, /*precise=*/false);
      auto above = mx::greater(probs, py_float(xtc_threshold, probs.dtype()));
      auto smallest_above = mx::min(mx::where(above, probs, py_float(INFINITY, probs.dtype())),
                                    std::vector<int>{-1}, /*keepdims=*/true);
      auto mask = mx::greater(probs, smallest_above);
      if (!special.empty()) {
        // mask[..., xtc_special_tokens] = False, as python/src/indexing.cpp
        // lowers it for a 2-D mask: (arange(rows) as [rows, 1], list as [1, m]).
        int rows = mask.shape(0);
        int m = static_cast<int>(special.size());
        auto row_idx = mx::reshape(mx::arange(0.0, static_cast<double>(rows), 1.0, mx::uint32),
                                   {rows, 1});
        auto col_idx = mx::reshape(mx::array(special.data(), {m}, mx::int32), {1, m});
        auto idx = mx::broadcast_arrays({row_idx, col_idx});
        auto up = mx::broadcast_to(mx::array(false), idx[0].shape());
        mx::Shape up_shape = idx[0].shape();
        up_shape.push_back(1);
        up_shape.push_back(1);
        mask = mx::scatter(mask, idx, mx::reshape(up, up_shape), std::vector<int>{0, 1});
      }
      // mx.random.uniform(0, 1): Python ints become int32 arrays.
      auto u = mx::random::uniform(mx::array(static_cast<int64_t>(0), mx::int32),
                                   mx::array(static_cast<int64_t>(1), mx::int32), mx::Shape{},
                                   mx::float32, next_key(state));
      auto skip = mx::greater(u, py_float(xtc_probability, u.dtype()));
      auto cut = mx::where(mask, py_float(-INFINITY, x.dtype()), x);
      return {mx::where(skip, x, cut), state};
    };
    std::vector<uint64_t> constants = {kListId, kArrayId, bits_of(xtc_probability),
                                       bits_of(xtc_threshold), kListId};
    for (int32_t t : special) constants.push_back(static_cast<uint64_t>(static_cast<int64_t>(t)));
    call_compiled(std::move(fn), g_xtc_id, std::move(constants), logits, key, out);
  });
}

// categorical_sampling(logits, temp)
int mlxr_categorical_sampling(mlxr_array logits, double temp, mlxr_array key, mlxr_array* out) {
  return guard_int([&] {
    double inv_temp = 1.0 / temp;  // (1.0 / temp) in double, as Python
    TraceFn fn = [inv_temp](const std::vector<mx::array>& in) -> std::vector<mx::array> {
      const auto& x = in[0];
      mx::array state = in[1];
      auto scaled = mx::multiply(x, py_float(inv_temp, x.dtype()));
      auto sampled = mx::random::categorical(scaled, -1, next_key(state));
      return {sampled, state};
    };
    call_compiled(std::move(fn), g_categorical_id, {kListId, kArrayId, bits_of(temp)}, logits,
                  key, out);
  });
}

}  // extern "C"
