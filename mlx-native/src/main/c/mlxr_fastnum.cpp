// The fast numerics tier (--numerics fast): an MLX primitive that evaluates
// affine quantized_matmul(x, w, scales, biases, transpose=True) for 4- and
// 8-bit weights, groups of 32/64/128, by the float32 fused-multiply-add
// kernels of mlxr_fastnum_kernels.h (see mlxr_fastnum.h for the arithmetic).
// Its bytes are not MLX's; FastNumericsOracleTest holds it to a float32
// rendering of the model instead. This file is compiled for baseline x86-64
// and prepares the activations (widened, permuted for the 4-bit decode, group
// sums); the kernel files run only where __builtin_cpu_supports finds their
// instruction set (AVX-512 F/BW/VL + FMA, else AVX2 + FMA + F16C;
// MLXR_KERNEL_ISA=avx2 forces the latter, as for the exact kernels). Cases it
// does not cover get MLX's own op (exact bytes) from mlxr_fastnum_quantized_matmul;
// the Java side sends other widths and group sizes to the exact kernels.
// --numerics fast-q8 takes the same primitive with its activations rounded to
// 8-bit integers (mlxr_fastq8.h), through matmul's Activations::Q8.

#include <algorithm>
#include <atomic>
#include <cstdlib>
#include <cstring>
#include <memory>
#include <mutex>
#include <optional>
#include <string>
#include <type_traits>
#include <unordered_map>
#include <utility>
#include <vector>

#include "mlx/primitives.h"
#include "mlxr_cpu_task.h"
#include "mlxr_fastnum.h"
#include "mlxr_fastq8.h"
#include "mlxr_guard.h"
#include "mlxr_isa.h"
#include "mlxr_qmm.h"
#include "mlxr_qmm_primitive.h"
#include "mlxr_row_major.h"

namespace mx = mlx::core;

namespace mlxr::fastnum {

bool has_fma() {
#if defined(__x86_64__) && (defined(__GNUC__) || defined(__clang__))
  static const bool fma = [] {
    __builtin_cpu_init();
    return __builtin_cpu_supports("fma") != 0;
  }();
  return fma;
#else
  return false;
#endif
}

// The set and FMA (every AVX2 CPU made has FMA, but the kernels use it).
bool cpu_has(Isa isa) {
  return has_fma() && mlxr::cpu_has(isa);
}

// The exact kernels' set when the CPU has FMA, else none; an invalid
// MLXR_KERNEL_ISA is an error of every call, as there.
Isa default_isa() {
  Isa isa = mlxr::default_isa();
  return has_fma() ? isa : Isa::None;
}

int pass_rows_cap() {
  return mlxr::qmm::pass_rows_env();
}

// The fewest rows for the many-rows kernel by default, per instruction set: where it measured
// faster than the row-lane passes with cold weights (scripts/bench/fastnum_kernel_bench.sh,
// docs/benchmarks.md): from 7 rows on AVX-512 and 5 on AVX2, since the many-rows kernel walks K in
// segments (it was 9 and 16 before).
int cols_rows_min(Isa isa) {
  static const int env = [] {
    const char* e = std::getenv("MLXR_FASTNUM_COLS_ROWS");
    return e != nullptr ? std::atoi(e) : 0;
  }();
  return env > 0 ? env : isa == Isa::Avx512 ? 7 : 5;
}

bool covered(int bits, int group_size) {
  return (bits == 4 || bits == 8) && (group_size == 32 || group_size == 64 || group_size == 128);
}

Dt dt_of(mx::Dtype d) {
  return d == mx::float32 ? Dt::F32 : d == mx::float16 ? Dt::F16 : Dt::BF16;
}

// Group parameters keep their dtype (widened in the kernels); only their layout is fixed here.
const void* params(const mx::array& a, std::vector<uint16_t>& halves, std::vector<float>& singles) {
  if (a.dtype() == mx::float32) return row_major<float, float>(a, singles);
  return row_major<uint16_t, uint16_t>(a, halves);
}

// The activations as the kernels read them (mlxr_fastnum.h, Problem::xp/xg),
// from row-contiguous float rows x[M, K].
struct Prepared {
  std::vector<float> xp;  // empty when x itself is in kernel order (8 bits)
  std::vector<float> xg;
  size_t k_stride, g_stride;
};

// Into `out`, whose buffers keep their capacity from call to call (see compute).
void prepare(const float* x, int M, int K, int bits, int group_size, int lanes, bool word_lanes, Prepared& out) {
  const int G = K / group_size;
  out.g_stride = size_t((G + lanes - 1) / lanes) * lanes;
  out.xg.assign(size_t(M) * out.g_stride, 0.0f);
  for (int m = 0; m < M; m++) {
    const float* row = x + size_t(m) * K;
    for (int g = 0; g < G; g++) {
      double s = 0;  // in double: X multiplies the bias, which nearly cancels the scale term
      for (int k = 0; k < group_size; k++) s += row[size_t(g) * group_size + k];
      out.xg[size_t(m) * out.g_stride + g] = float(s);
    }
  }
  out.xp.clear();
  out.k_stride = size_t(K);
  if (word_lanes) {
    const int per_word = 32 / bits, block = per_word * lanes;
    out.k_stride = size_t((K + block - 1) / block) * block;
    out.xp.assign(size_t(M) * out.k_stride, 0.0f);
    for (int m = 0; m < M; m++) {
      const float* row = x + size_t(m) * K;
      float* dst = out.xp.data() + size_t(m) * out.k_stride;
      // Per call on MLX's stream thread (~200 a decode step): nested loops, no division per element.
      for (int b = 0; b * block < K; b++) {
        const float* src = row + size_t(b) * block;
        float* out_block = dst + size_t(b) * block;
        const int words = (K - b * block) / per_word < lanes ? (K - b * block) / per_word : lanes;
        for (int i = 0; i < words; i++) {
          for (int v = 0; v < per_word; v++) out_block[v * lanes + i] = src[per_word * i + v];
        }
      }
    }
  } else if (bits == 4) {
    out.xp.resize(size_t(M) * K);
    const int block = 2 * lanes;
    for (int m = 0; m < M; m++) {
      const float* row = x + size_t(m) * K;
      float* dst = out.xp.data() + size_t(m) * K;
      for (int b = 0; b < K; b += block) {
        for (int i = 0; i < lanes; i++) {
          dst[b + i] = row[b + 2 * i];
          dst[b + lanes + i] = row[b + 2 * i + 1];
        }
      }
    }
  }
}

}  // namespace mlxr::fastnum

namespace mlxr::fastq8 {

bool covered(int bits, int group_size) {
  return (bits == 4 || bits == 8) && (group_size == 32 || group_size == 64 || group_size == 128);
}

bool cpu_has_avx512_vnni() {
#if defined(__x86_64__) && (defined(__GNUC__) || defined(__clang__))
  static const bool vnni = [] {
    __builtin_cpu_init();
    return __builtin_cpu_supports("avx512vnni") != 0;
  }();
  return vnni && fastnum::cpu_has(Isa::Avx512);
#else
  return false;
#endif
}

namespace {

// One weight's widened parameters, and the buffers they were made from: valid while both live.
struct Widened {
  std::weak_ptr<mx::array::Data> scales, biases;
  const void* biases_at;
  int N, K, bits, group_size;
  std::vector<float> floats;
};

struct WidenedCache {
  std::mutex mu;
  std::unordered_map<const void*, Widened> by_scales;  // keyed by the scales' first element
  size_t bytes = 0;
};

WidenedCache& widened_cache() {
  static WidenedCache* cache = new WidenedCache();  // never destroyed: kernel threads may outlive exit's destructors
  return *cache;
}

std::atomic<int>& widened_switch() {
  static std::atomic<int> on{[] {
    const char* e = std::getenv("MLXR_FASTQ8_WIDE_PARAMS");
    return e != nullptr && std::strcmp(e, "0") == 0 ? 0 : 1;
  }()};
  return on;
}

// Whether `held` refers to a's buffer: the same control block (owner order, no atomics, where
// lock() took two per call), which a's reference keeps alive, so an equal one is never expired.
bool live(const std::weak_ptr<mx::array::Data>& held, const mx::array& a) {
  const std::shared_ptr<mx::array::Data>& data = a.data_shared_ptr();
  return !held.owner_before(data) && !data.owner_before(held);
}

// Under the cache's lock.
size_t sweep(WidenedCache& cache) {
  size_t freed = 0;
  for (auto it = cache.by_scales.begin(); it != cache.by_scales.end();) {
    if (it->second.scales.expired() || it->second.biases.expired()) {
      freed += it->second.floats.size() * sizeof(float);
      it = cache.by_scales.erase(it);
    } else {
      ++it;
    }
  }
  cache.bytes -= freed;
  return freed;
}

}  // namespace

std::atomic<int>& ahead_switch() {
  static std::atomic<int> blocks{[] {
    const char* e = std::getenv("MLXR_FASTQ8_AHEAD_BLOCKS");
    const int n = e == nullptr ? -1 : std::atoi(e);
    return n >= 0 ? std::min(n, kMaxAheadBlocks) : mlxr::qmm::parallel_threads();
  }()};
  return blocks;
}

int ahead_blocks() {
  return ahead_switch().load(std::memory_order_relaxed);
}

int set_ahead_blocks(int blocks) {
  return ahead_switch().exchange(std::clamp(blocks, 0, kMaxAheadBlocks));
}

void set_widened_params(bool on) {
  widened_switch().store(on ? 1 : 0);
}

bool widened_params_on() {
  return widened_switch().load() != 0;
}

size_t widened_params_bytes() {
  WidenedCache& cache = widened_cache();
  std::lock_guard<std::mutex> lock(cache.mu);
  return cache.bytes;
}

size_t release_widened_params() {
  WidenedCache& cache = widened_cache();
  std::lock_guard<std::mutex> lock(cache.mu);
  return sweep(cache);
}

const float* widened_params(const mx::array& scales, const mx::array& biases, int K, int bits, int group_size) {
  if (!widened_params_on()) return nullptr;
  const int N = scales.shape(0);
  WidenedCache& cache = widened_cache();
  std::lock_guard<std::mutex> lock(cache.mu);
  auto it = cache.by_scales.find(scales.data<void>());
  if (it != cache.by_scales.end()) {
    const Widened& w = it->second;
    if (live(w.scales, scales) && live(w.biases, biases) && w.biases_at == biases.data<void>() && w.N == N && w.K == K &&
        w.bits == bits && w.group_size == group_size) {
      return w.floats.data();
    }
  }
  sweep(cache);  // a closed model's weights, and a stale entry under this key, go first
  Widened w{scales.data_shared_ptr(), biases.data_shared_ptr(), biases.data<void>(), N, K, bits, group_size,
            std::vector<float>(fastnum::cols_params_floats(N, K, group_size))};
  widen_params(scales.data<void>(), biases.data<void>(), fastnum::dt_of(scales.dtype()), N, K, bits, group_size,
               w.floats.data());
  cache.bytes += w.floats.size() * sizeof(float);
  auto [at, inserted] = cache.by_scales.insert_or_assign(scales.data<void>(), std::move(w));
  (void)inserted;
  return at->second.floats.data();
}

// The n weights (one run sharing bits and group size) by the 8-bit-activation kernels.
void matmul(const float* x, int M, int K, const fastnum::Weight* weights, int n, Isa isa) {
  thread_local Acts acts;  // per calling thread (MLX's stream thread), reused: no allocation once grown
  quantize_avx2(x, M, K, weights[0].bits, weights[0].group_size, acts);
  Problem ps[fastnum::kMaxProblems];
  for (int i = 0; i < n; i++) {
    const fastnum::Weight& w = weights[i];
    ps[i] = Problem{acts.xq.data(), acts.d.data(), acts.sq.data(), acts.xg.data(), w.w, w.scales, w.biases, w.param,
                    w.out, w.out_dt, M, w.N, K, w.bits, w.group_size, w.q8_params};
  }
  const bool ran = isa == Isa::Avx512 && cpu_has_avx512_vnni() ? run_avx512(ps, n) : run_avx2(ps, n);
  if (!ran) throw std::logic_error("[fastq8] called for a case its kernels do not cover");
}

}  // namespace mlxr::fastq8

namespace mlxr::fastnum {

void matmul(const float* x, int M, int K, const Weight* weights, int n, Isa isa, Activations acts) {
  if (acts == Activations::Q8) {
    // K is a multiple of a covered group size (32, 64 or 128), hence of the activations' blocks.
    if (K % fastq8::kBlock != 0) throw std::logic_error("[fastq8] K is not a multiple of 32");
    for (int first = 0; first < n;) {
      int last = first + 1;
      while (last < n && last - first < kMaxProblems && weights[last].bits == weights[first].bits &&
             weights[last].group_size == weights[first].group_size)
        last++;
      fastq8::matmul(x, M, K, weights + first, last - first, isa);
      first = last;
    }
    return;
  }
  const int lanes = isa == Isa::Avx512 ? kLanesAvx512 : kLanesAvx2;
  for (int first = 0; first < n;) {
    // The longest run of weights that share a preparation of the activations.
    int last = first + 1;
    while (last < n && last - first < kMaxProblems && weights[last].bits == weights[first].bits &&
           weights[last].group_size == weights[first].group_size)
      last++;
    const int bits = weights[first].bits, group_size = weights[first].group_size;
    // The many-rows kernel reads the activations as they are; the row-lane passes read them
    // prepared, per calling thread (MLX's stream thread) into reused buffers: a decode step makes
    // ~200 of these calls, which then allocate nothing once the buffers have grown.
    const bool cols = M >= cols_rows_min(isa);
    const bool word_lanes = !cols && isa == Isa::Avx512 && bits == 4 && M < kWordLaneRows;
    thread_local Prepared acts;
    if (!cols) prepare(x, M, K, bits, group_size, lanes, word_lanes, acts);
    Problem ps[kMaxProblems];
    for (int i = first; i < last; i++) {
      const Weight& w = weights[i];
      ps[i - first] = Problem{cols || acts.xp.empty() ? x : acts.xp.data(),
                              cols ? nullptr : acts.xg.data(),
                              cols ? size_t(K) : acts.k_stride,
                              cols ? 0 : acts.g_stride,
                              word_lanes,
                              w.w,
                              w.scales,
                              w.biases,
                              w.param,
                              w.out,
                              w.out_dt,
                              M,
                              w.N,
                              K,
                              bits,
                              group_size,
                              cols};
    }
    bool ran = isa == Isa::Avx512 ? run_avx512(ps, last - first)
               : isa == Isa::Avx2 ? run_avx2(ps, last - first)
                                  : false;
    if (!ran) throw std::logic_error("[fastnum] called for a case its kernels do not cover");
    first = last;
  }
}

// quantized_matmul(x, w, scales, biases, transpose=True) by the fast kernels
// of one instruction set, over MLX's own (validated, dtype-promoted) operands;
// views are copied to row-major order at eval, as the exact primitive does,
// rather than by extra graph nodes (each one more task per matmul on MLX's
// stream thread).
template <Activations Acts>
struct FastKernels {
  static constexpr const char* kName = Acts == Activations::Q8 ? "FastQ8QuantizedMatmul" : "FastQuantizedMatmul";
  static constexpr bool kKeepsWeights = Acts == Activations::Q8;

  static void compute(mx::array& out, const mx::array& x, const mx::array& w, const mx::array& scales,
                      const mx::array& biases, int group_size, int bits, Isa isa) {
    const int K = x.shape(-1);
    const int N = out.shape(-1);
    if (K == 0 || N == 0 || x.size() == 0) {
      if (out.nbytes() > 0) std::memset(out.data<void>(), 0, out.nbytes());
      return;
    }
    std::vector<float> xcopy, s32, b32;
    std::vector<uint32_t> wcopy;
    std::vector<uint16_t> s16, b16;
    Weight weight{row_major<uint32_t, uint32_t>(w, wcopy), params(scales, s16, s32), params(biases, b16, b32),
                  dt_of(scales.dtype()), N, bits, group_size, out.data<void>(), dt_of(out.dtype())};
    if (Acts == Activations::Q8 && scales.flags().row_contiguous && biases.flags().row_contiguous) {
      weight.q8_params = fastq8::widened_params(scales, biases, K, bits, group_size);
    }
    matmul(row_major_floats(x, xcopy), int(x.size() / K), K, &weight, 1, isa, Acts);
  }
};

using FastQuantizedMatmul = QuantizedMatmulPrimitive<FastKernels<Activations::F32>>;
using FastQ8QuantizedMatmul = QuantizedMatmulPrimitive<FastKernels<Activations::Q8>>;

}  // namespace mlxr::fastnum

extern "C" {

// 1 when this CPU has instruction set `isa` with FMA (1 = AVX2 + FMA + F16C,
// 2 = AVX-512 F/BW/VL + FMA).
int mlxr_fastnum_cpu_has(int isa) {
  return isa >= 1 && isa <= 2 && mlxr::fastnum::cpu_has(static_cast<mlxr::Isa>(isa)) ? 1 : 0;
}

// The instruction set fast calls use: 0 none, 1 AVX2, 2 AVX-512; -1 with the
// error message set when MLXR_KERNEL_ISA is invalid.
int mlxr_fastnum_isa() {
  int isa = 0;
  if (mlxr::guard_int([&] { isa = static_cast<int>(mlxr::fastnum::default_isa()); }) != 0) return -1;
  return isa;
}

// 1 when (bits, group_size) is one the fast kernels compute.
int mlxr_fastnum_covers(int bits, int group_size) {
  return mlxr::fastnum::covered(bits, group_size) ? 1 : 0;
}

// mx::quantized_matmul(x, w, scales, biases, transpose=True, group_size, bits,
// "affine") with MLX's validation, dtype promotion and output shape, evaluated
// by the fast kernels when they cover the case (a 2-D weight, floating group
// parameters, a CPU stream, a CPU with the set); else MLX's op as is.
// isa: 0 = the default set (mlxr_fastnum_isa), 1 = AVX2, 2 = AVX-512.
mlxr_array mlxr_fastnum_quantized_matmul_acts(mlxr_array x, mlxr_array w, mlxr_array scales, mlxr_array biases,
                                              int group_size, int bits, int isa_code, int acts_code);

mlxr_array mlxr_fastnum_quantized_matmul(mlxr_array x, mlxr_array w, mlxr_array scales, mlxr_array biases,
                                         int group_size, int bits, int isa_code) {
  return mlxr_fastnum_quantized_matmul_acts(x, w, scales, biases, group_size, bits, isa_code, 0);
}

// The same with the activations as acts_code says: 0 float32 (above), 1 rounded to 8-bit
// integers per block of 32 (--numerics fast-q8, mlxr_fastq8.h).
mlxr_array mlxr_fastnum_quantized_matmul_acts(mlxr_array x, mlxr_array w, mlxr_array scales, mlxr_array biases,
                                              int group_size, int bits, int isa_code, int acts_code) {
  return mlxr::guard_array([&]() -> mx::array {
    using mlxr::Isa;
    if (isa_code < 0 || isa_code > 2) throw std::invalid_argument("isa must be 0, 1 or 2, got " + std::to_string(isa_code));
    if (acts_code < 0 || acts_code > 1) throw std::invalid_argument("acts must be 0 or 1, got " + std::to_string(acts_code));
    Isa isa = isa_code == 0 ? mlxr::fastnum::default_isa() : static_cast<Isa>(isa_code);
    if (isa_code != 0 && !mlxr::fastnum::cpu_has(isa)) {
      throw std::invalid_argument(std::string("isa: this CPU does not have ") +
                                  (isa == Isa::Avx512 ? "AVX-512 with FMA" : "AVX2/FMA/F16C"));
    }
    auto& xa = *static_cast<mx::array*>(x);
    auto& wa = *static_cast<mx::array*>(w);
    auto& sa = *static_cast<mx::array*>(scales);
    auto* ba = static_cast<mx::array*>(biases);
    auto build = [&](const mx::Shape& shape, mx::Stream stream, const mx::array& xin) {
      // x (as MLX's op has it), w, and the group parameters as stored (MLX's graph would
      // astype them to the output's dtype on every call, a full pass; the kernels widen them
      // exactly).
      std::shared_ptr<mx::Primitive> prim;
      if (acts_code == 1) {
        prim = std::make_shared<mlxr::fastnum::FastQ8QuantizedMatmul>(stream, group_size, bits, isa);
      } else {
        prim = std::make_shared<mlxr::fastnum::FastQuantizedMatmul>(stream, group_size, bits, isa);
      }
      return mx::array(shape, xin.dtype(), std::move(prim), {xin, wa, sa, *ba});
    };
    bool kernel = isa != Isa::None && mlxr::fastnum::covered(bits, group_size);
    if (kernel) {
      // The common case without MLX's op (see direct_quantized_matmul).
      if (auto d = mlxr::direct_quantized_matmul(xa, wa, sa, ba, group_size, bits);
          d && d->stream.device.type == mx::Device::DeviceType::cpu) {
        return build(d->out_shape, d->stream, xa);
      }
    }
    std::optional<mx::array> b;
    if (ba != nullptr) b = *ba;
    mx::array ref = mx::quantized_matmul(xa, wa, sa, b, true, group_size, bits, "affine");
    bool ok = kernel && b.has_value() && wa.ndim() == 2 &&
              ref.primitive().stream().device.type == mx::Device::DeviceType::cpu && mlxr::is_float(ref.dtype()) &&
              mlxr::is_float(sa.dtype()) && sa.dtype() == b->dtype() && xa.shape(-1) % group_size == 0 &&
              ref.inputs().size() == 4;
    if (!ok) return ref;
    return build(ref.shape(), ref.primitive().stream(), ref.inputs()[0]);
  });
}

// --numerics fast-q8's widened group parameters (mlxr_fastq8.h): on (1) or off (0) for the calls
// that follow; returns the setting before. The outputs are the same bytes either way.
int mlxr_fastq8_set_widened_params(int on) {
  const int before = mlxr::fastq8::widened_params_on() ? 1 : 0;
  mlxr::fastq8::set_widened_params(on != 0);
  return before;
}

// --numerics fast-q8's prefetch of the weights of a block further on (mlxr_fastq8.h,
// ahead_blocks): blocks >= 0 sets how many blocks on (0: none), < 0 only reads it; returns the
// setting before. The outputs are the same bytes at any setting.
int mlxr_fastq8_ahead_blocks(int blocks) {
  return blocks < 0 ? mlxr::fastq8::ahead_blocks() : mlxr::fastq8::set_ahead_blocks(blocks);
}

// Bytes of widened parameters held now.
long long mlxr_fastq8_widened_params_bytes() {
  return static_cast<long long>(mlxr::fastq8::widened_params_bytes());
}

// Frees the widened parameters of weights whose buffers are gone; returns the bytes freed.
long long mlxr_fastq8_release_widened_params() {
  return static_cast<long long>(mlxr::fastq8::release_widened_params());
}

// 1 when the array is the output of the fast kernels (tests check that a
// covered case did not silently take another op).
int mlxr_is_fastnum_quantized_matmul(mlxr_array a) {
  auto& arr = *static_cast<mx::array*>(a);
  return mlxr::fastnum::FastQuantizedMatmul::computes(arr) || mlxr::fastnum::FastQ8QuantizedMatmul::computes(arr) ? 1 : 0;
}

}  // extern "C"
