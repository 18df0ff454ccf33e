// fast::rope(x, dims, traditional, base | freqs, scale, offset) on the CPU as
// one primitive, with the bytes of MLX 0.32.4's fallback graph. For x viewed as
// [B, N, T, D] (rank 3 gains N = 1, rank > 4 folds the middle axes into N) and
// offset a scalar or one int32 per batch row:
//
//     positions = (arange(T, float32) + float(offset)) * scale        [B?, T]
//     inv_freq  = 1 / freqs                     (freqs given, float32)
//               | exp(arange(0, -D/2, -1) * float(logf(base) / (dims/2)))
//     theta     = positions[..., None] * inv_freq
//     c, s      = astype(cos(theta), x.dtype), astype(sin(theta), x.dtype)
//     out       = x1 * c - x2 * s  |  x1 * s + x2 * c    (every op in x.dtype)
//
// with x1, x2 the first and second halves of x[..., :dims] (traditional: its
// even and odd elements) and x[..., dims:] passed through. exp, sin and cos are
// MLX's own float implementations (simd/math.h), as its unary kernels run them.

#include <optional>
#include <string>

#include "mlx/mlx.h"
#include "mlxr_fast.h"
#include "mlxr_exact_ops.h"
#include "mlxr_guard.h"

namespace mlxr::fast {

namespace {

namespace simd = mx::simd;

struct RopeParams {
  int dims;
  bool traditional;
  bool has_freqs;
  float base;
  float scale;
  // 0: x is the rope's input as given. H > 0: x is a row-contiguous [B, L, H * D]
  // (a projection's output) and the rope's input is its view
  // transpose(reshape(x, [B, L, H, D]), [0, 2, 1, 3]); the output is [B, H, L, D].
  int heads;
};

// cos and sin of theta for every (offset row, position, frequency), in T.
template <typename T>
void rotation_table(const RopeParams& p, const mx::array& offsets, const mx::array* freqs, int T_len,
                    std::vector<T>& cos_t, std::vector<T>& sin_t) {
  const int half = p.dims / 2;
  std::vector<float> inv_freq(half);
  if (p.has_freqs) {
    const int64_t step = freqs->strides()[0];
    with_float_type(freqs->dtype(), [&](auto ft) {
      using F = decltype(ft);
      const F* f = freqs->data<F>();
      for (int i = 0; i < half; i++) inv_freq[i] = 1.0f / static_cast<float>(f[i * step]);
    });
  } else {
    const float log_base = std::log(p.base) / half;
    float e = 0.0f;  // arange(0, -half, -1): start, then start += step
    for (int i = 0; i < half; i++, e += -1.0f) {
      inv_freq[i] = simd::exp(simd::Simd<float, 1>(e * log_base)).value;
    }
  }
  const int rows = offsets.size() > 1 ? int(offsets.size()) : 1;
  const int32_t* off = offsets.data<int32_t>();
  const int64_t off_step = offsets.ndim() == 0 ? 0 : offsets.strides()[0];
  cos_t.resize(size_t(rows) * T_len * half);
  sin_t.resize(cos_t.size());
  for (int b = 0; b < rows; b++) {
    const float o = static_cast<float>(off[b * off_step]);
    float t_f = 0.0f;  // arange(T, float32)
    for (int t = 0; t < T_len; t++, t_f += 1.0f) {
      const float pos = (t_f + o) * p.scale;
      T* c = cos_t.data() + (size_t(b) * T_len + t) * half;
      T* s = sin_t.data() + (size_t(b) * T_len + t) * half;
      for (int i = 0; i < half; i++) {
        simd::Simd<float, 1> theta(pos * inv_freq[i]);
        c[i] = static_cast<T>(simd::cos(theta).value);
        s[i] = static_cast<T>(simd::sin(theta).value);
      }
    }
  }
}

template <typename T>
void rope_rows(const RopeParams& p, const std::vector<mx::array>& in, mx::array& out) {
  const mx::array& x = in[0];
  const mx::array& offsets = in[1];
  const int H = p.heads;
  const int D = H > 0 ? x.shape(-1) / H : x.shape(-1);
  const int T_len = H > 0 ? x.shape(1) : x.ndim() == 3 ? x.shape(1) : x.shape(-2);
  const int64_t rows = D == 0 ? 0 : int64_t(x.size()) / D;
  const int64_t rows_per_batch = int64_t(x.size()) / std::max(1, x.shape(0)) / std::max(1, D);
  // Output row r = (b, n, t) reads row (b, t, n) of the [B, L, H, D] view, through
  // x's strides: x [B, L, H * D] may be any view (a slice of a fused projection), and
  // its layout is known only now that it is evaluated.
  auto input_row = [&](int64_t r) -> int64_t {
    if (H == 0) return element_offset(x, r * D);
    const int64_t b = r / rows_per_batch, n = (r / T_len) % H, t = r % T_len;
    return b * x.strides()[0] + t * x.strides()[1] + n * D * x.strides()[2];
  };
  std::vector<T> cos_t, sin_t;
  rotation_table<T>(p, offsets, in.size() > 2 ? &in[2] : nullptr, T_len, cos_t, sin_t);
  const bool per_row = offsets.size() > 1;
  const int half = p.dims / 2;
  const int64_t xs = x.strides().back();
  const T* xp = x.data<T>();
  T* op = out.data<T>();
  for (int64_t r = 0; r < rows; r++) {
    const T* xr = xp + input_row(r);
    T* o = op + r * D;
    const int64_t b = r / rows_per_batch;
    const int t = int(r % T_len);
    const size_t at = ((per_row ? size_t(b) : 0) * T_len + t) * half;
    const T* c = cos_t.data() + at;
    const T* s = sin_t.data() + at;
    for (int i = 0; i < half; i++) {
      const int i1 = p.traditional ? 2 * i : i;
      const int i2 = p.traditional ? 2 * i + 1 : i + half;
      const T x1 = xr[i1 * xs];
      const T x2 = xr[i2 * xs];
      const T x1c = x1 * c[i], x2s = x2 * s[i], x1s = x1 * s[i], x2c = x2 * c[i];
      o[i1] = x1c - x2s;
      o[i2] = x1s + x2c;
    }
    for (int j = p.dims; j < D; j++) o[j] = xr[j * xs];
  }
}

class NativeRope : public FastOpPrimitive {
 public:
  NativeRope(mx::Stream s, RopeParams p) : FastOpPrimitive(s), p_(p) {}

  const char* name() const override {
    return "NativeRope";
  }

  bool is_equivalent(const mx::Primitive& other) const override {
    auto* o = dynamic_cast<const NativeRope*>(&other);
    return o != nullptr && o->p_.dims == p_.dims && o->p_.traditional == p_.traditional &&
           o->p_.has_freqs == p_.has_freqs && o->p_.base == p_.base && o->p_.scale == p_.scale &&
           o->p_.heads == p_.heads;
  }

 protected:
  Task task() const override {
    return [p = p_](const std::vector<mx::array>& in, mx::array& out) {
      with_float_type(out.dtype(), [&](auto t) { rope_rows<decltype(t)>(p, in, out); });
    };
  }

 private:
  RopeParams p_;
};

// The cases NativeRope takes: MLX's own checks pass (rope() below lets MLX's
// op report every invalid argument) and the types are the ones it implements.
// For an input of `shape` and `dtype` (x itself, or the view rope_heads stands for).
bool rope_covered(const mx::Shape& shape, mx::Dtype dtype, int dims, const mx::array& offsets,
                  const std::optional<mx::array>& freqs, const mx::Stream& stream) {
  size_t size = 1;
  for (int d : shape) size *= size_t(d);
  if (!on_cpu(stream) || shape.size() < 3 || !is_float(dtype) || size >= (size_t(1) << 31))
    return false;
  if (dims <= 0 || dims % 2 != 0 || dims > shape.back()) return false;
  if (offsets.dtype() != mx::int32 || offsets.ndim() > 1) return false;
  if (offsets.size() != 1 && offsets.size() != size_t(shape[0])) return false;
  if (freqs && (freqs->ndim() != 1 || freqs->shape(0) != dims / 2 || !is_float(freqs->dtype())))
    return false;
  return true;
}

mx::array rope(const mx::array& x, int dims, bool traditional, bool has_base, float base,
               float scale, const mx::array& offsets, const std::optional<mx::array>& freqs) {
  auto stream = mx::default_stream(mx::default_device());
  // base and freqs are exclusive (MLX's op reports both or neither).
  if (has_base == freqs.has_value() || !rope_covered(x.shape(), x.dtype(), dims, offsets, freqs, stream)) {
    std::optional<float> b = has_base ? std::optional<float>(base) : std::nullopt;
    return mx::fast::rope(x, dims, traditional, b, scale, offsets, freqs);
  }
  std::vector<mx::array> inputs = {x, offsets};
  if (freqs) inputs.push_back(*freqs);
  RopeParams p{dims, traditional, freqs.has_value(), has_base ? base : 1.0f, scale, 0};
  return mx::array(x.shape(), x.dtype(), std::make_shared<NativeRope>(stream, p), std::move(inputs));
}

// rope(transpose(reshape(x, [B, L, heads, D]), [0, 2, 1, 3]), ...) for a [B, L, heads * D]
// x: one NativeRope reading x in place where it covers the case (the values are those of
// the three ops, only the view is not materialized), else the three. x's layout is not
// known here (its flags mean nothing until it is evaluated), so the primitive reads it
// through its strides, whatever they turn out to be.
mx::array rope_heads(const mx::array& x, int heads, int dims, bool traditional, bool has_base,
                     float base, float scale, const mx::array& offsets,
                     const std::optional<mx::array>& freqs) {
  auto stream = mx::default_stream(mx::default_device());
  if (x.ndim() != 3 || heads <= 0 || x.shape(2) % heads != 0) {
    throw std::invalid_argument("[rope_heads] x must be [B, L, heads * D], got " +
                                std::to_string(x.ndim()) + " dims");
  }
  const int D = x.shape(2) / heads;
  mx::Shape view_shape = {x.shape(0), heads, x.shape(1), D};
  if (has_base == freqs.has_value() || !rope_covered(view_shape, x.dtype(), dims, offsets, freqs, stream)) {
    mx::array view =
        mx::transpose(mx::reshape(x, {x.shape(0), x.shape(1), heads, D}), {0, 2, 1, 3});
    return rope(view, dims, traditional, has_base, base, scale, offsets, freqs);
  }
  std::vector<mx::array> inputs = {x, offsets};
  if (freqs) inputs.push_back(*freqs);
  RopeParams p{dims, traditional, freqs.has_value(), has_base ? base : 1.0f, scale, heads};
  return mx::array(view_shape, x.dtype(), std::make_shared<NativeRope>(stream, p), std::move(inputs));
}

}  // namespace

void rope_heads_into(const mx::array& x, int heads, int dims, bool traditional, float base, float scale, int offset,
                     const mx::array* freqs, mx::array& out) {
  // as rope_heads builds it: base 1 where the frequencies are given
  const RopeParams p{dims, traditional, freqs != nullptr, freqs != nullptr ? 1.0f : base, scale, heads};
  std::vector<mx::array> in = {x, mx::array(offset, mx::int32)};
  if (freqs != nullptr) in.push_back(*freqs);
  with_float_type(out.dtype(), [&](auto t) { rope_rows<decltype(t)>(p, in, out); });
}

void rope_heads_into(const mx::array& x, int heads, int dims, bool traditional, float base, float scale,
                     const mx::array& offsets, const mx::array* freqs, mx::array& out) {
  const RopeParams p{dims, traditional, freqs != nullptr, freqs != nullptr ? 1.0f : base, scale, heads};
  std::vector<mx::array> in = {x, offsets};
  if (freqs != nullptr) in.push_back(*freqs);
  with_float_type(out.dtype(), [&](auto t) { rope_rows<decltype(t)>(p, in, out); });
}

}  // namespace mlxr::fast

extern "C" {

// mx::fast::rope with an int offset, evaluated by NativeRope where it covers
// the case; otherwise MLX's op as is. has_base == false passes base=None.
mlxr_array mlxr_native_rope(mlxr_array x, int dims, bool traditional, bool has_base, float base,
                            float scale, int offset, mlxr_array freqs) {
  return mlxr::guard_array([&] {
    return mlxr::fast::rope(*static_cast<mlx::core::array*>(x), dims, traditional, has_base, base,
                            scale, mlx::core::array(offset, mlx::core::int32),
                            mlxr::fast::optional_array(freqs));
  });
}

// mlxr_native_rope of transpose(reshape(x, [B, L, heads, D]), [0, 2, 1, 3]) for a
// [B, L, heads * D] x (a projection's output), without the view's two ops where the
// native primitive covers the case. offsets: an int32 array of one offset per batch
// row, or NULL for the int offset.
mlxr_array mlxr_native_rope_heads(mlxr_array x, int heads, int dims, bool traditional,
                                  bool has_base, float base, float scale, int offset,
                                  mlxr_array offsets, mlxr_array freqs) {
  return mlxr::guard_array([&] {
    mlx::core::array off = offsets != nullptr ? *static_cast<mlx::core::array*>(offsets)
                                              : mlx::core::array(offset, mlx::core::int32);
    return mlxr::fast::rope_heads(*static_cast<mlx::core::array*>(x), heads, dims, traditional,
                                  has_base, base, scale, off, mlxr::fast::optional_array(freqs));
  });
}

// As mlxr_native_rope with one offset per batch row (an int32 array).
mlxr_array mlxr_native_rope_offsets(mlxr_array x, int dims, bool traditional, bool has_base,
                                    float base, float scale, mlxr_array offsets,
                                    mlxr_array freqs) {
  return mlxr::guard_array([&] {
    return mlxr::fast::rope(*static_cast<mlx::core::array*>(x), dims, traditional, has_base, base,
                            scale, *static_cast<mlx::core::array*>(offsets),
                            mlxr::fast::optional_array(freqs));
  });
}

}  // extern "C"
