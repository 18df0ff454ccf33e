// argmax over the last axis of a float32 array on the CPU as one primitive, with the indices of
// MLX 0.32.4's ArgReduce on the CPU, as ArgMaxExactnessTest measures them against it live: the
// first index of a row's largest value, or, where the row holds a NaN, the first NaN's index
// (numpy's rule). The largest value is found eight lanes wide and then the first index holding it
// (== treats -0 and +0 as one, and so does MLX: the first of them wins); a row with a NaN is
// scanned one value at a time. Used for every greedy step's token: MLX's loop took 0.93 ms of a
// step of 8 rows of a 49,152-entry vocabulary (BatchStepProfile, 3% of the step).

#include <cmath>
#include <string>

#include "mlx/mlx.h"
#include "mlxr_fast.h"
#include "mlxr_fast_exp.h"  // cpu_has_avx2
#include "mlxr_guard.h"

namespace mlxr::fast {

namespace {

// The first NaN's index, or the first index of the largest value of a row without NaN.
uint32_t scalar_argmax(const float* x, int64_t m) {
  uint32_t index = 0;
  float v = x[0];
  for (int64_t j = 0; j < m; j++) {
    if (std::isnan(x[j])) return uint32_t(j);
    if (x[j] > v) {
      v = x[j];
      index = uint32_t(j);
    }
  }
  return index;
}

#if defined(__x86_64__) && (defined(__GNUC__) || defined(__clang__))
__attribute__((target("avx2"))) uint32_t lanes_argmax(const float* x, int64_t m) {
  __m256 best = _mm256_set1_ps(x[0]);
  __m256 nan8 = _mm256_setzero_ps();
  int64_t i = 0;
  for (; i + 8 <= m; i += 8) {
    const __m256 v = _mm256_loadu_ps(x + i);
    best = _mm256_max_ps(v, best);
    nan8 = _mm256_or_ps(nan8, _mm256_cmp_ps(v, v, _CMP_UNORD_Q));
  }
  if (_mm256_movemask_ps(nan8) != 0 || std::isnan(x[0])) return scalar_argmax(x, m);
  alignas(32) float lanes[8];
  _mm256_store_ps(lanes, best);
  float top = lanes[0];
  for (int j = 1; j < 8; j++) top = lanes[j] > top ? lanes[j] : top;
  for (; i < m; i++) {
    if (std::isnan(x[i])) return scalar_argmax(x, m);
    top = x[i] > top ? x[i] : top;
  }
  const __m256 top8 = _mm256_set1_ps(top);
  i = 0;
  for (; i + 8 <= m; i += 8) {
    const int hit = _mm256_movemask_ps(_mm256_cmp_ps(_mm256_loadu_ps(x + i), top8, _CMP_EQ_OQ));
    if (hit != 0) return uint32_t(i + __builtin_ctz(unsigned(hit)));
  }
  for (; i < m; i++) {
    if (x[i] == top) return uint32_t(i);
  }
  return 0;  // not reached: top is one of the row's values
}
#endif

void argmax_rows(const mx::array& in, mx::array& out) {
  const int64_t m = in.shape(-1);
  const int64_t rows = int64_t(in.size()) / m;
  const float* src = in.data<float>();
  uint32_t* dst = out.data<uint32_t>();
  for (int64_t r = 0; r < rows; r++) {
#if defined(__x86_64__) && (defined(__GNUC__) || defined(__clang__))
    dst[r] = lanes_argmax(src + r * m, m);
#else
    dst[r] = scalar_argmax(src + r * m, m);
#endif
  }
}

class NativeArgMax : public FastOpPrimitive {
 public:
  explicit NativeArgMax(mx::Stream s) : FastOpPrimitive(s) {}

  const char* name() const override {
    return "NativeArgMax";
  }

  bool is_equivalent(const mx::Primitive& other) const override {
    return dynamic_cast<const NativeArgMax*>(&other) != nullptr;
  }

 protected:
  Task task() const override {
    return [](const std::vector<mx::array>& in, mx::array& out) { argmax_rows(in[0], out); };
  }
};

}  // namespace

}  // namespace mlxr::fast

extern "C" {

// mx::argmax(a, axis, keepdims), evaluated by NativeArgMax where MLX's own op is its ArgReduce
// primitive over the last axis of a float32 array (made row-contiguous first; squeezed after it
// without keepdims, as MLX's op does) on a CPU stream of a CPU with AVX2; otherwise MLX's op as is (which also reports invalid arguments).
mlxr_array mlxr_native_argmax(mlxr_array a, int axis, bool keepdims) {
  namespace mx = mlx::core;
  using namespace mlxr::fast;
  return mlxr::guard_array([&]() -> mx::array {
    const auto& x = *static_cast<mx::array*>(a);
    // MLX's argmax is its ArgReduce with the axis kept, squeezed after it when keepdims is false.
    mx::array ref = mx::argmax(x, axis, true);
    const bool last = x.ndim() >= 1 && (axis == -1 || axis == int(x.ndim()) - 1);
    // By name: libmlx.so does not export ArgReduce's type information.
    bool covered = last && ref.has_primitive() && std::string(ref.primitive().name()) == "ArgReduce" &&
                   on_cpu(ref.primitive().stream()) && cpu_has_avx2() && ref.dtype() == mx::uint32 &&
                   ref.inputs().size() == 1 && ref.inputs()[0].dtype() == mx::float32 && indexable(ref.inputs()[0]) &&
                   ref.inputs()[0].shape(-1) > 0;
    if (!covered) return mx::argmax(x, axis, keepdims);
    mx::array out = mx::array(ref.shape(), ref.dtype(), std::make_shared<NativeArgMax>(ref.primitive().stream()),
                              {mx::contiguous(ref.inputs()[0])});
    return keepdims ? out : mx::squeeze(out, axis);
  });
}

}  // extern "C"
