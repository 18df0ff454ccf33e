// What mlx-lm's gated delta net layers (models/gated_delta.py, qwen3_next.py, qwen3_5.py) run on
// the CPU, as the graphs MLX traces and fuses for them: the depthwise convolution over the conv
// state, the compiled activations (nn.silu, nn.softplus, activations.precise_swiglu), the
// compiled gate (compute_g) and the compiled recurrence step (_gated_delta_step_ops, the ops path
// gated_delta_update takes off the GPU). Each compiled helper nests as the Python one does, with
// Python scalars as arrays of the operand's dtype, so the kernels MLX generates are theirs.
#include "mlxr_guard.h"

namespace mx = mlx::core;

namespace {

const mx::array& A(mlxr_array a) { return *static_cast<mx::array*>(a); }

// mlx.nn.silu, @mx.compile(shapeless=True): x * sigmoid(x).
std::vector<mx::array> silu_impl(const std::vector<mx::array>& in) {
  return {mx::multiply(in[0], mx::sigmoid(in[0]))};
}

const std::function<std::vector<mx::array>(const std::vector<mx::array>&)>& silu_fn() {
  static auto f = mx::compile(silu_impl, /*shapeless=*/true);
  return f;
}

// mlx.nn.softplus, @mx.compile(shapeless=True): logaddexp(x, 0), the 0 an array of x's dtype.
std::vector<mx::array> softplus_impl(const std::vector<mx::array>& in) {
  return {mx::logaddexp(in[0], mx::array(0.0f, in[0].dtype()))};
}

// gated_delta.compute_g, @mx.compile(shapeless=True):
//   exp(-exp(A_log.astype(float32)) * softplus(a + dt_bias))
std::vector<mx::array> compute_g_impl(const std::vector<mx::array>& in) {
  static auto softplus = mx::compile(softplus_impl, /*shapeless=*/true);
  const mx::array& a_log = in[0];
  const mx::array& a = in[1];
  const mx::array& dt_bias = in[2];
  mx::array decay = mx::negative(mx::exp(mx::astype(a_log, mx::float32)));
  return {mx::exp(mx::multiply(decay, softplus({mx::add(a, dt_bias)})[0]))};
}

// activations.precise_swiglu(h, gate, x), @mx.compile(shapeless=True):
//   (silu(gate.astype(float32)) * x.astype(float32)).astype(h.dtype)
std::vector<mx::array> precise_swiglu_impl(const std::vector<mx::array>& in) {
  mx::array gate = silu_fn()({mx::astype(in[1], mx::float32)})[0];
  mx::array x = mx::astype(in[2], mx::float32);
  return {mx::astype(mx::multiply(gate, x), in[0].dtype())};
}

// gated_delta._gated_delta_step_ops, @mx.compile: one recurrent step.
//   q, k [B, H, Dk]; v [B, H, Dv]; g [B, H] or [B, H, Dk]; beta [B, H]; state [B, H, Dv, Dk];
//   mask [B] (the masked trace only). Returns y.astype(q.dtype) [B, H, Dv] and the new state.
std::vector<mx::array> step_impl(const std::vector<mx::array>& in) {
  const mx::array& q = in[0];
  const mx::array& k = in[1];
  const mx::array& v = in[2];
  const mx::array& g = in[3];
  const mx::array& beta = in[4];
  mx::array state = in[5];
  mx::array old_state = state;
  mx::array decay = g.ndim() == 2 ? mx::expand_dims(g, {-2, -1}) : mx::expand_dims(g, -2);
  state = mx::multiply(state, decay);
  mx::array k_row = mx::expand_dims(k, -2);
  mx::array kv_mem = mx::sum(mx::multiply(state, k_row), -1);
  mx::array delta = mx::multiply(mx::subtract(v, kv_mem), mx::expand_dims(beta, -1));
  state = mx::add(state, mx::multiply(k_row, mx::expand_dims(delta, -1)));
  mx::array y = mx::sum(mx::multiply(state, mx::expand_dims(q, -2)), -1);
  if (in.size() > 6) {
    mx::array mask = mx::expand_dims(in[6], {1, 2, 3});
    state = mx::where(mask, state, old_state);
  }
  return {mx::astype(y, q.dtype()), state};
}

}  // namespace

extern "C" {

// mx.conv1d(x, w, stride, padding, dilation, groups) (nn.Conv1d without bias).
mlxr_array mlxr_conv1d(mlxr_array x, mlxr_array w, int stride, int padding, int dilation, int groups) {
  return mlxr::guard_array([&] { return mx::conv1d(A(x), A(w), stride, padding, dilation, groups); });
}

// mlx.nn.silu (compiled).
mlxr_array mlxr_silu(mlxr_array x) {
  return mlxr::guard_array([&] { return silu_fn()({A(x)})[0]; });
}

// activations.precise_swiglu(h, gate, x) (compiled).
mlxr_array mlxr_precise_swiglu(mlxr_array h, mlxr_array gate, mlxr_array x) {
  static auto f = mx::compile(precise_swiglu_impl, /*shapeless=*/true);
  return mlxr::guard_array([&] { return f({A(h), A(gate), A(x)})[0]; });
}

// gated_delta.compute_g(A_log, a, dt_bias) (compiled).
mlxr_array mlxr_gdn_compute_g(mlxr_array a_log, mlxr_array a, mlxr_array dt_bias) {
  static auto f = mx::compile(compute_g_impl, /*shapeless=*/true);
  return mlxr::guard_array([&] { return f({A(a_log), A(a), A(dt_bias)})[0]; });
}

// gated_delta._gated_delta_step_ops(q, k, v, g, beta, state, mask) (compiled; mask may be NULL,
// which traces the unmasked graph as Python's mask=None does). Writes y and the new state to
// out[0], out[1]; returns 0, or -1 with the error in mlxr_last_error.
int mlxr_gdn_step(mlxr_array q, mlxr_array k, mlxr_array v, mlxr_array g, mlxr_array beta,
                  mlxr_array state, mlxr_array mask, mlxr_array* out) {
  static auto unmasked = mx::compile(step_impl);
  static auto masked = mx::compile(step_impl);
  return mlxr::guard_int([&] {
    std::vector<mx::array> in{A(q), A(k), A(v), A(g), A(beta), A(state)};
    std::vector<mx::array> r;
    if (mask == nullptr) {
      r = unmasked(in);
    } else {
      in.push_back(A(mask));
      r = masked(in);
    }
    out[0] = new mx::array(r[0]);
    out[1] = new mx::array(r[1]);
  });
}

}  // extern "C"
