// fast::rms_norm(x, weight, eps) on the CPU as one primitive, with the bytes
// of MLX 0.32.4's fallback graph (which is what MLX evaluates on the CPU):
//
//     x32 = astype(x, float32)
//     y   = x32 * rsqrt(mean(square(x32), -1, keepdims) + eps)
//     out = astype(y, out_type) * astype(weight, out_type)
//
// mean is sum(...) * float(1.0 / n), and MLX's CPU sum (contiguous_reduce with
// simd::max_size 1 on x86) adds the row's squares in order starting from 0 and
// then adds the result to the initial 0; rsqrt is 1 / sqrt(v), two roundings.
// The last multiply is in out_type (rounded to a half type when that is one).

#include <optional>
#include <string>

#include "mlx/mlx.h"
#include "mlxr_fast.h"
#include "mlxr_exact_ops.h"
#include "mlxr_guard.h"

namespace mlxr::fast {

namespace {

namespace simd = mx::simd;

template <typename X, typename W, typename O>
void rms_norm_rows(const mx::array& x, const mx::array& w, mx::array& out, float eps) {
  const int64_t n = x.shape(-1);
  const int64_t rows = n == 0 ? 0 : int64_t(x.size()) / n;
  const int64_t x_step = x.strides().back();
  const int64_t w_step = w.strides()[0];
  const float inv_n = static_cast<float>(1.0 / static_cast<double>(n));
  const X* xp = x.data<X>();
  const W* wp = w.data<W>();
  O* op = out.data<O>();
  for (int64_t r = 0; r < rows; r++) {
    const X* row = xp + element_offset(x, r * n);
    float acc = 0.0f;
    for (int64_t j = 0; j < n; j++) {
      float v = static_cast<float>(row[j * x_step]);
      acc = acc + v * v;
    }
    float total = acc + 0.0f;
    float scale = simd::rsqrt(simd::Simd<float, 1>(total * inv_n + eps)).value;
    O* o = op + r * n;
    for (int64_t j = 0; j < n; j++) {
      float v = static_cast<float>(row[j * x_step]);
      o[j] = static_cast<O>(v * scale) * static_cast<O>(wp[j * w_step]);
    }
  }
}

class NativeRmsNorm : public FastOpPrimitive {
 public:
  NativeRmsNorm(mx::Stream s, float eps) : FastOpPrimitive(s), eps_(eps) {}

  const char* name() const override {
    return "NativeRmsNorm";
  }

  bool is_equivalent(const mx::Primitive& other) const override {
    auto* o = dynamic_cast<const NativeRmsNorm*>(&other);
    return o != nullptr && o->eps_ == eps_;
  }

 protected:
  Task task() const override {
    return [eps = eps_](const std::vector<mx::array>& in, mx::array& out) { rms_norm_into(in[0], in[1], eps, out); };
  }

 private:
  float eps_;
};

}  // namespace

void rms_norm_into(const mx::array& x, const mx::array& w, float eps, mx::array& out) {
  with_float_type(x.dtype(), [&](auto xt) {
    with_float_type(w.dtype(), [&](auto wt) {
      with_float_type(out.dtype(), [&](auto ot) {
        rms_norm_rows<decltype(xt), decltype(wt), decltype(ot)>(x, w, out, eps);
      });
    });
  });
}

}  // namespace mlxr::fast

extern "C" {

// mx::fast::rms_norm, evaluated by NativeRmsNorm where it covers the case (a
// weight, float32/float16/bfloat16 inputs, a CPU default stream); otherwise
// MLX's op as is (which also reports invalid arguments).
mlxr_array mlxr_native_rms_norm(mlxr_array x, mlxr_array weight, float eps) {
  namespace mx = mlx::core;
  using namespace mlxr::fast;
  return mlxr::guard_array([&]() -> mx::array {
    const auto& xa = *static_cast<mx::array*>(x);
    std::optional<mx::array> w;
    if (weight != nullptr) w = *static_cast<mx::array*>(weight);
    auto stream = mx::default_stream(mx::default_device());
    bool covered = w.has_value() && on_cpu(stream) && xa.ndim() >= 1 && indexable(xa) && w->ndim() == 1 &&
                   w->size() == size_t(xa.shape(-1)) && is_float(xa.dtype()) &&
                   is_float(w->dtype());
    if (!covered) return mx::fast::rms_norm(xa, w, eps);
    return mx::array(xa.shape(), mx::result_type(xa, *w),
                     std::make_shared<NativeRmsNorm>(stream, eps), {xa, *w});
  });
}

// 1 when the array is the output of one of the native fast:: primitives
// (tests check that a covered case did not silently take MLX's graph).
int mlxr_is_native_fast_op(mlxr_array a) {
  auto& arr = *static_cast<mlx::core::array*>(a);
  return arr.has_primitive() &&
                 dynamic_cast<mlxr::fast::FastOpPrimitive*>(&arr.primitive()) != nullptr
             ? 1
             : 0;
}

}  // extern "C"
