// Exact x86 kernels for MLX's affine quantized_matmul(transpose=True).
//
// On x86 MLX's CPU backend runs quantized_matmul as the scalar `_qmm_t` loop
// (simd::max_size is 1 there): for each output element, in order over K,
//     w   = T(T(scale * T(q)) + bias)
//     t   = T(x * w)
//     sum = T(sum + t)
// with every product/sum computed in float and rounded to T (identity for
// float32; the emulated float16 / bfloat16 conversions otherwise), no FMA.
// These kernels keep exactly that per-element arithmetic and change only the
// schedule: eight output columns per AVX2 lane group, columns split across a
// small worker pool, and for M > 1 each decoded weight reused by every row.
// So the output bytes equal MLX's (tested by QuantizedMatmulExactnessTest).
//
// Only the SIMD functions are compiled for AVX2+F16C (per-function target
// attributes); they run only when __builtin_cpu_supports says the CPU has
// them, so the shim stays one binary for any x86-64. FMA is deliberately not
// enabled for them (and the shim builds with -ffp-contract=off): a fused
// multiply-add rounds once where MLX rounds twice. Every case these kernels do
// not cover (other bits, group sizes, modes, transpose=False, batched weights,
// non-CPU streams, CPUs without AVX2/F16C, non-x86) goes to MLX's own op.

#include <algorithm>
#include <atomic>
#include <chrono>
#include <condition_variable>
#include <cstdlib>
#include <cstring>
#include <functional>
#include <mutex>
#include <optional>
#include <string>
#include <thread>
#include <utility>
#include <vector>

#include "mlx/allocator.h"
#include "mlx/backend/cpu/encoder.h"
#include "mlx/primitives.h"
#include "mlxr_guard.h"

#if defined(__x86_64__) && (defined(__GNUC__) || defined(__clang__))
#define MLXR_QMM_X86 1
#include <immintrin.h>
#include <sched.h>
#else
#define MLXR_QMM_X86 0
#endif

namespace mx = mlx::core;

namespace mlxr::qmm {

// ---- worker pool -----------------------------------------------------------

// A fixed pool that runs `chunks` independent pieces of one kernel call on the
// calling thread (MLX's stream thread) plus size()-1 workers. Chunks are
// claimed from one atomic word that also carries the call's generation and
// chunk count, so a late worker can never run a piece of a finished call.
// Idle workers spin briefly (the next matmul of a forward pass follows within
// microseconds) and then sleep on a condition variable, so an idle engine
// costs no CPU. One call at a time: a call that finds the pool busy (another
// MLX stream's thread is in it) runs its chunks on its own thread.
class WorkerPool {
 public:
  static WorkerPool& instance() {
    static WorkerPool pool;
    return pool;
  }

  int size() const {
    return static_cast<int>(workers_.size()) + 1;
  }

  void run(int chunks, const std::function<void(int)>& body) {
    std::unique_lock<std::mutex> busy(run_mutex_, std::try_to_lock);
    if (workers_.empty() || chunks <= 1 || !busy.owns_lock()) {
      for (int i = 0; i < chunks; i++) body(i);
      return;
    }
    uint64_t gen = ++generation_count_ & 0xffffffffu;
    body_ = &body;
#if MLXR_QMM_X86
    mxcsr_ = _mm_getcsr();
#endif
    done_.store(0);
    claim_.store((gen << 32) | (uint64_t(chunks) << 16));
    generation_.store(gen);
    if (sleepers_.load() > 0) {
      std::lock_guard<std::mutex> lock(mutex_);
      cv_.notify_all();
    }
    work(gen);
    int spins = 0;
    while (done_.load(std::memory_order_acquire) < chunks) {
      if (++spins > 4096) std::this_thread::yield();
      pause();
    }
  }

 private:
  WorkerPool() : spin_(spin_wanted()) {
    int n = threads_wanted();
    for (int i = 1; i < n; i++) workers_.emplace_back([this] { loop(); });
  }

  ~WorkerPool() {
    stop_.store(true);
    generation_.store(~uint64_t(0));
    {
      std::lock_guard<std::mutex> lock(mutex_);
      cv_.notify_all();
    }
    for (auto& t : workers_) t.join();
  }

  // The CPUs this process may run on (MLXR_KERNEL_THREADS overrides, read
  // once at start-up): MLX's stream thread waits inside run() while the pool
  // works, so size() threads compute and none oversubscribes the cores.
  static int threads_wanted() {
    if (const char* env = std::getenv("MLXR_KERNEL_THREADS")) {
      int n = std::atoi(env);
      if (n >= 1) return std::min(n, 64);
    }
    int n = static_cast<int>(std::thread::hardware_concurrency());
#if MLXR_QMM_X86
    cpu_set_t set;
    if (sched_getaffinity(0, sizeof(set), &set) == 0) n = CPU_COUNT(&set);
#endif
    return std::clamp(n, 1, 16);
  }

  // How long an idle worker spins before it sleeps (MLXR_KERNEL_SPIN_US, read
  // once; default 100 us): long enough to bridge the other ops between two
  // matmuls of a forward pass, short enough not to hold a core once it ends.
  static std::chrono::microseconds spin_wanted() {
    if (const char* env = std::getenv("MLXR_KERNEL_SPIN_US")) {
      int us = std::atoi(env);
      if (us >= 0) return std::chrono::microseconds(std::min(us, 100000));
    }
    return std::chrono::microseconds(100);
  }

  static void pause() {
#if MLXR_QMM_X86
    _mm_pause();
#endif
  }

  void work(uint64_t gen) {
    for (;;) {
      uint64_t v = claim_.load();
      for (;;) {
        uint64_t idx = v & 0xffff;
        if ((v >> 32) != gen || idx >= ((v >> 16) & 0xffff)) return;
        if (claim_.compare_exchange_weak(v, v + 1)) break;
      }
      // A claimed chunk of `gen` keeps run(gen) from returning, so body_ is
      // still that call's.
      (*body_)(static_cast<int>(v & 0xffff));
      done_.fetch_add(1, std::memory_order_release);
    }
  }

  void loop() {
    uint64_t seen = 0;
    for (;;) {
      auto start = std::chrono::steady_clock::now();
      int spins = 0;
      while (generation_.load() == seen) {
        pause();
        if ((++spins & 255) == 0 &&
            std::chrono::steady_clock::now() - start > spin_) {
          std::unique_lock<std::mutex> lock(mutex_);
          sleepers_.fetch_add(1);
          cv_.wait(lock, [&] { return generation_.load() != seen; });
          sleepers_.fetch_sub(1);
        }
      }
      if (stop_.load()) return;
      seen = generation_.load();
#if MLXR_QMM_X86
      if (_mm_getcsr() != mxcsr_) _mm_setcsr(mxcsr_);
#endif
      work(seen);
    }
  }

  const std::chrono::microseconds spin_;
  std::vector<std::thread> workers_;
  std::atomic<uint64_t> claim_{0};
  std::atomic<uint64_t> generation_{0};
  std::atomic<int> done_{0};
  std::atomic<int> sleepers_{0};
  std::atomic<bool> stop_{false};
  uint64_t generation_count_ = 0;
  const std::function<void(int)>* body_ = nullptr;
  unsigned mxcsr_ = 0;
  std::mutex mutex_;
  std::mutex run_mutex_;
  std::condition_variable cv_;
};

// ---- kernels ---------------------------------------------------------------

enum class Act { F32, F16, BF16 };

enum class Param { F32, F16, BF16 };

// One call's operands, every array row-contiguous, the activations widened to
// float. The group parameters stay in their stored dtype (the model's, often
// float16) and are widened per tile inside the kernel: MLX's graph would
// astype them to the activations' dtype on every call, a full pass over them,
// and the widening is exact either way.
struct Problem {
  const float* x;       // [M, K]
  const uint32_t* w;    // [N, K * bits / 32]
  const void* scales;   // [N, K / group_size] of param
  const void* biases;   // [N, K / group_size] of param
  Param param;
  void* out;            // [M, N] of the activation dtype
  int M, N, K;
};

#if MLXR_QMM_X86

#define MLXR_SIMD __attribute__((target("avx2,f16c"), always_inline)) inline
#define MLXR_SIMD_FN __attribute__((target("avx2,f16c")))

// T(v) for the activation type: identity for float32; float16 through F16C
// (round to nearest even, equal to MLX's software conversion for every
// non-NaN value; NaN stays NaN with its sign); bfloat16 as MLX's integer
// round-to-nearest-even, NaN -> 0x7FC0.
template <Act A>
MLXR_SIMD __m256 round_to(__m256 v) {
  if constexpr (A == Act::F32) {
    return v;
  } else if constexpr (A == Act::F16) {
    return _mm256_cvtph_ps(_mm256_cvtps_ph(v, _MM_FROUND_TO_NEAREST_INT | _MM_FROUND_NO_EXC));
  } else {
    __m256i u = _mm256_castps_si256(v);
    __m256i lsb = _mm256_and_si256(_mm256_srli_epi32(u, 16), _mm256_set1_epi32(1));
    __m256i r = _mm256_add_epi32(_mm256_add_epi32(u, lsb), _mm256_set1_epi32(0x7fff));
    r = _mm256_and_si256(r, _mm256_set1_epi32(int(0xffff0000u)));
    __m256 nan = _mm256_cmp_ps(v, v, _CMP_UNORD_Q);
    return _mm256_blendv_ps(_mm256_castsi256_ps(r), _mm256_castsi256_ps(_mm256_set1_epi32(0x7fc00000)), nan);
  }
}

// Operand order, which decides the sign of a NaN result when both operands
// are NaN (x86 returns the first one). It is not in MLX's source but in how
// GCC allocated registers for the shipped libmlx, measured by probing
// mx.quantized_matmul with opposite-sign NaNs at every position of a group
// (QuantizedMatmulExactnessTest.nanOperandOrderAsMlx repeats the probe):
// float16 computes x * w and t + sum everywhere; float32 computes w * x, and
// sum + t or t + sum depending on the position p in the group as below.
// bfloat16 rounds every NaN to the one encoding 0x7FC0, so its order is moot.
template <Act A, int bits, int group_size>
constexpr bool sum_first(int p) {
  if constexpr (A != Act::F32) {
    return false;
  } else if constexpr (bits == 8 || (bits == 4 && group_size != 32)) {
    return true;
  } else if constexpr (group_size == 32) {
    return p < 2;
  } else {
    return (p & 3) < 2;
  }
}

// a + b and a * b with `a` as the first source operand, which x86 returns
// when both are NaN. Inline assembly because GCC treats vector + and * as
// commutative and may swap the operands of _mm256_add_ps / _mm256_mul_ps.
MLXR_SIMD __m256 add_first(__m256 a, __m256 b) {
  __m256 r;
  asm("vaddps %2, %1, %0" : "=x"(r) : "x"(a), "x"(b));
  return r;
}

MLXR_SIMD __m256 mul_first(__m256 a, __m256 b) {
  __m256 r;
  asm("vmulps %2, %1, %0" : "=x"(r) : "x"(a), "x"(b));
  return r;
}

template <Act A>
MLXR_SIMD __m256 times_x(__m256 x, __m256 w) {
  return A == Act::F32 ? mul_first(w, x) : mul_first(x, w);
}

MLXR_SIMD __m256 plus_sum(__m256 sum, __m256 t, bool sum_goes_first) {
  return sum_goes_first ? add_first(sum, t) : add_first(t, sum);
}

// T(T(scale * q) + bias): q is never NaN; the product goes first.
template <Act A>
MLXR_SIMD __m256 dequantized(__m256 scale, __m256 q, __m256 bias) {
  return round_to<A>(add_first(round_to<A>(_mm256_mul_ps(scale, q)), bias));
}

// Writes `lanes` (<= 8) outputs, already rounded to T, in T's encoding.
template <Act A>
MLXR_SIMD void store_lanes(void* out, size_t index, __m256 v, int lanes) {
  if constexpr (A == Act::F32) {
    float* o = static_cast<float*>(out) + index;
    if (lanes == 8) {
      _mm256_storeu_ps(o, v);
    } else {
      alignas(32) float tmp[8];
      _mm256_store_ps(tmp, v);
      std::memcpy(o, tmp, lanes * sizeof(float));
    }
  } else {
    alignas(16) uint16_t h[8];
    if constexpr (A == Act::F16) {
      _mm_store_si128(reinterpret_cast<__m128i*>(h),
                      _mm256_cvtps_ph(v, _MM_FROUND_TO_NEAREST_INT | _MM_FROUND_NO_EXC));
      int nan = _mm256_movemask_ps(_mm256_cmp_ps(v, v, _CMP_UNORD_Q));
      // MLX writes a float16 NaN as its sign | 0x7D00; F16C writes 0x7E00.
      for (int l = 0; nan != 0 && l < 8; l++) {
        if (nan & (1 << l)) h[l] = uint16_t((h[l] & 0x8000) | 0x7d00);
      }
    } else {
      // v is already bfloat16-exact: its upper halves are the encoding.
      __m256i u = _mm256_srli_epi32(_mm256_castps_si256(v), 16);
      __m128i packed = _mm_packus_epi32(_mm256_castsi256_si128(u), _mm256_extracti128_si256(u, 1));
      _mm_store_si128(reinterpret_cast<__m128i*>(h), packed);
    }
    std::memcpy(static_cast<uint16_t*>(out) + index, h, lanes * sizeof(uint16_t));
  }
}

// Row offsets (in 32-bit words) of the eight columns of a tile; columns past
// N repeat the last one (computed, never stored).
MLXR_SIMD __m256i tile_rows(int n0, int N, int row_words, int base_row) {
  alignas(32) int idx[8];
  for (int l = 0; l < 8; l++) idx[l] = (std::min(n0 + l, N - 1) - base_row) * row_words;
  return _mm256_load_si256(reinterpret_cast<const __m256i*>(idx));
}

// Group parameters of a tile, transposed to [group][lane].
MLXR_SIMD float param_at(const void* base, Param param, size_t i) {
  switch (param) {
    case Param::F32: return static_cast<const float*>(base)[i];
    case Param::F16: return _cvtsh_ss(static_cast<const uint16_t*>(base)[i]);
    default: {
      uint32_t u = uint32_t(static_cast<const uint16_t*>(base)[i]) << 16;
      float f;
      std::memcpy(&f, &u, sizeof f);
      return f;
    }
  }
}

MLXR_SIMD void tile_params(const Problem& p, int n0, int groups, float* sc, float* bi) {
  for (int l = 0; l < 8; l++) {
    size_t row = size_t(std::min(n0 + l, p.N - 1)) * groups;
    for (int g = 0; g < groups; g++) {
      sc[g * 8 + l] = param_at(p.scales, p.param, row + g);
      bi[g * 8 + l] = param_at(p.biases, p.param, row + g);
    }
  }
}

constexpr int kTiles = 4;        // 8-column tiles interleaved per unit (independent sum chains)
constexpr int kUnitCols = 8 * kTiles;
constexpr int kRows = 4;         // activation rows per pass of the M > 1 kernel
constexpr int kSingleRowMaxM = 8;  // up to this many rows, the M == 1 kernel runs once per row

// One k-step of one tile in the M == 1 kernel: the next `bits` of each lane's
// packed word are that lane's weight at this position of K.
template <Act A, int bits, bool sum_goes_first>
MLXR_SIMD void single_row_step(__m256i& v, __m256& acc, __m256i mask, const float* s,
                               const float* b, __m256 xk) {
  __m256 q = _mm256_cvtepi32_ps(_mm256_and_si256(v, mask));
  v = _mm256_srli_epi32(v, bits);
  __m256 wq = dequantized<A>(_mm256_load_ps(s), q, _mm256_load_ps(b));
  __m256 tk = round_to<A>(times_x<A>(xk, wq));
  acc = round_to<A>(plus_sum(acc, tk, sum_goes_first));
}

// The kTiles (= 4) tiles' k-steps for the `per_word` positions held by one
// packed word of each lane, positions unrolled so each one's operand order
// (sum_first) is a compile-time constant.
template <Act A, int bits, int group_size, int e0, int... e>
MLXR_SIMD void single_row_word(__m256i& v0, __m256i& v1, __m256i& v2, __m256i& v3,
                               __m256& a0, __m256& a1, __m256& a2, __m256& a3, __m256i mask,
                               const float* s, const float* b, const float* xw, int j,
                               std::integer_sequence<int, e0, e...>) {
  constexpr int per_word = 32 / bits;
  // The position in the group decides the operand order; words are the
  // group's j-th, so p = j * per_word + e and only e varies at compile time.
  // Every sum_first pattern has a period dividing per_word except 4-bit g32's
  // (p < 2), which only the first word of a group can hit.
  const __m256 xk = _mm256_set1_ps(xw[e0]);
  if (j == 0) {
    constexpr bool sf = sum_first<A, bits, group_size>(e0);
    single_row_step<A, bits, sf>(v0, a0, mask, s, b, xk);
    single_row_step<A, bits, sf>(v1, a1, mask, s + 8, b + 8, xk);
    single_row_step<A, bits, sf>(v2, a2, mask, s + 16, b + 16, xk);
    single_row_step<A, bits, sf>(v3, a3, mask, s + 24, b + 24, xk);
  } else {
    constexpr bool sf = sum_first<A, bits, group_size>(per_word + e0);
    single_row_step<A, bits, sf>(v0, a0, mask, s, b, xk);
    single_row_step<A, bits, sf>(v1, a1, mask, s + 8, b + 8, xk);
    single_row_step<A, bits, sf>(v2, a2, mask, s + 16, b + 16, xk);
    single_row_step<A, bits, sf>(v3, a3, mask, s + 24, b + 24, xk);
  }
  if constexpr (sizeof...(e) > 0) {
    single_row_word<A, bits, group_size>(v0, v1, v2, v3, a0, a1, a2, a3, mask, s, b, xw, j,
                                         std::integer_sequence<int, e...>());
  }
}

// 8x8 transpose of 32-bit elements: r[i] holds row i's eight words on entry,
// r[j] holds word j of the eight rows on return.
MLXR_SIMD void transpose8(__m256i* r) {
  __m256i t0 = _mm256_unpacklo_epi32(r[0], r[1]), t1 = _mm256_unpackhi_epi32(r[0], r[1]);
  __m256i t2 = _mm256_unpacklo_epi32(r[2], r[3]), t3 = _mm256_unpackhi_epi32(r[2], r[3]);
  __m256i t4 = _mm256_unpacklo_epi32(r[4], r[5]), t5 = _mm256_unpackhi_epi32(r[4], r[5]);
  __m256i t6 = _mm256_unpacklo_epi32(r[6], r[7]), t7 = _mm256_unpackhi_epi32(r[6], r[7]);
  __m256i u0 = _mm256_unpacklo_epi64(t0, t2), u1 = _mm256_unpackhi_epi64(t0, t2);
  __m256i u2 = _mm256_unpacklo_epi64(t1, t3), u3 = _mm256_unpackhi_epi64(t1, t3);
  __m256i u4 = _mm256_unpacklo_epi64(t4, t6), u5 = _mm256_unpackhi_epi64(t4, t6);
  __m256i u6 = _mm256_unpacklo_epi64(t5, t7), u7 = _mm256_unpackhi_epi64(t5, t7);
  r[0] = _mm256_permute2x128_si256(u0, u4, 0x20);
  r[1] = _mm256_permute2x128_si256(u1, u5, 0x20);
  r[2] = _mm256_permute2x128_si256(u2, u6, 0x20);
  r[3] = _mm256_permute2x128_si256(u3, u7, 0x20);
  r[4] = _mm256_permute2x128_si256(u0, u4, 0x31);
  r[5] = _mm256_permute2x128_si256(u1, u5, 0x31);
  r[6] = _mm256_permute2x128_si256(u2, u6, 0x31);
  r[7] = _mm256_permute2x128_si256(u3, u7, 0x31);
}

// Eight consecutive group parameters of one weight row, widened exactly to float.
MLXR_SIMD __m256i params8(const void* base, Param param, size_t i) {
  switch (param) {
    case Param::F32:
      return _mm256_loadu_si256(reinterpret_cast<const __m256i*>(static_cast<const float*>(base) + i));
    case Param::F16:
      return _mm256_castps_si256(_mm256_cvtph_ps(
          _mm_loadu_si128(reinterpret_cast<const __m128i*>(static_cast<const uint16_t*>(base) + i))));
    default:
      return _mm256_slli_epi32(_mm256_cvtepu16_epi32(_mm_loadu_si128(
          reinterpret_cast<const __m128i*>(static_cast<const uint16_t*>(base) + i))), 16);
  }
}

// A unit's group parameters as [group][tile][lane] floats (one group's are 256
// adjacent bytes): eight groups of eight rows at a time through transpose8,
// the rest one by one. Rows past N repeat the last row.
MLXR_SIMD void unit_params(const Problem& p, int n_base, int groups, float* sc, float* bi) {
  for (int t = 0; t < kTiles; t++) {
    size_t row[8];
    for (int l = 0; l < 8; l++) row[l] = size_t(std::min(n_base + t * 8 + l, p.N - 1)) * groups;
    int g = 0;
    for (; g + 8 <= groups; g += 8) {
      __m256i vs[8], vb[8];
      for (int l = 0; l < 8; l++) {
        vs[l] = params8(p.scales, p.param, row[l] + g);
        vb[l] = params8(p.biases, p.param, row[l] + g);
      }
      transpose8(vs);
      transpose8(vb);
      for (int k = 0; k < 8; k++) {
        _mm256_store_si256(reinterpret_cast<__m256i*>(sc + ((g + k) * kTiles + t) * 8), vs[k]);
        _mm256_store_si256(reinterpret_cast<__m256i*>(bi + ((g + k) * kTiles + t) * 8), vb[k]);
      }
    }
    for (; g < groups; g++) {
      for (int l = 0; l < 8; l++) {
        sc[(g * kTiles + t) * 8 + l] = param_at(p.scales, p.param, row[l] + g);
        bi[(g * kTiles + t) * 8 + l] = param_at(p.biases, p.param, row[l] + g);
      }
    }
  }
}

// Word `wi` (0-based along the packed row) of all four tiles, taken from v[t].
template <Act A, int bits, int group_size>
MLXR_SIMD void single_row_words(__m256i v0, __m256i v1, __m256i v2, __m256i v3, __m256& a0,
                                __m256& a1, __m256& a2, __m256& a3, __m256i mask, const float* sc,
                                const float* bi, const float* xr, int wi) {
  constexpr int per_word = 32 / bits;
  constexpr int words = group_size / per_word;
  const int g = wi / words;
  single_row_word<A, bits, group_size>(v0, v1, v2, v3, a0, a1, a2, a3, mask, sc + size_t(g) * kTiles * 8,
                                       bi + size_t(g) * kTiles * 8, xr + size_t(wi) * per_word, wi % words,
                                       std::make_integer_sequence<int, per_word>());
}

// M == 1 (decode): one unit of kTiles tiles, weights decoded and consumed at
// once. Weights are read as 32 contiguous bytes of each of a tile's eight rows
// and transposed in registers (transpose8) into one word per lane: on the
// machines measured, AVX2 gathers cost more than all the arithmetic. A row's
// last words that do not fill eight are gathered. The four tiles' sum chains
// are independent and interleave per position to hide the add latency.
template <Act A, int bits, int group_size>
MLXR_SIMD_FN void unit_single_row(const Problem& p, int unit, int m) {
  static_assert(kTiles == 4, "single_row_word names four tiles");
  const int groups = p.K / group_size;
  const int row_words = p.K * bits / 32;
  const int n_base = unit * kUnitCols;
  const uint32_t* base = p.w + size_t(n_base) * row_words;
  thread_local std::vector<float> params;
  params.resize(size_t(2) * kTiles * groups * 8 + 16);
  float* sc = reinterpret_cast<float*>((reinterpret_cast<uintptr_t>(params.data()) + 31) & ~uintptr_t(31));
  float* bi = sc + size_t(kTiles) * groups * 8;
  unit_params(p, n_base, groups, sc, bi);
  const uint32_t* rowp[kUnitCols];
  for (int r = 0; r < kUnitCols; r++) rowp[r] = base + size_t(std::min(n_base + r, p.N - 1) - n_base) * row_words;
  const __m256i mask = _mm256_set1_epi32((1 << bits) - 1);
  __m256 a0 = _mm256_setzero_ps(), a1 = a0, a2 = a0, a3 = a0;
  const float* xr = p.x + size_t(m) * p.K;
  alignas(32) __m256i tw[kTiles][8];
  int w0 = 0;
  for (; w0 + 8 <= row_words; w0 += 8) {
    for (int t = 0; t < kTiles; t++) {
      for (int l = 0; l < 8; l++) {
        tw[t][l] = _mm256_loadu_si256(reinterpret_cast<const __m256i*>(rowp[t * 8 + l] + w0));
      }
      transpose8(tw[t]);
    }
#pragma GCC unroll 8
    for (int j = 0; j < 8; j++) {
      single_row_words<A, bits, group_size>(tw[0][j], tw[1][j], tw[2][j], tw[3][j], a0, a1, a2, a3, mask,
                                            sc, bi, xr, w0 + j);
    }
  }
  if (w0 < row_words) {
    __m256i r0 = tile_rows(std::min(n_base, p.N - 1), p.N, row_words, n_base);
    __m256i r1 = tile_rows(std::min(n_base + 8, p.N - 1), p.N, row_words, n_base);
    __m256i r2 = tile_rows(std::min(n_base + 16, p.N - 1), p.N, row_words, n_base);
    __m256i r3 = tile_rows(std::min(n_base + 24, p.N - 1), p.N, row_words, n_base);
    const int* wp = reinterpret_cast<const int*>(base);
    for (; w0 < row_words; w0++) {
      single_row_words<A, bits, group_size>(
          _mm256_i32gather_epi32(wp + w0, r0, 4), _mm256_i32gather_epi32(wp + w0, r1, 4),
          _mm256_i32gather_epi32(wp + w0, r2, 4), _mm256_i32gather_epi32(wp + w0, r3, 4), a0, a1, a2, a3,
          mask, sc, bi, xr, w0);
    }
  }
  __m256 acc[kTiles] = {a0, a1, a2, a3};
  for (int t = 0; t < kTiles; t++) {
    int n0 = n_base + t * 8;
    if (n0 >= p.N) break;
    store_lanes<A>(p.out, size_t(m) * p.N + n0, acc[t], std::min(8, p.N - n0));
  }
}

// M > 1: decode the unit's weights once ([tile][k][lane], each value already
// T(T(scale*q) + bias)), then run every row over them, kRows rows at a time.
template <Act A, int bits, int group_size>
MLXR_SIMD_FN void unit_many_rows(const Problem& p, int unit) {
  const int groups = p.K / group_size;
  const int row_words = p.K * bits / 32;
  const int n_base = unit * kUnitCols;
  const uint32_t* base = p.w + size_t(n_base) * row_words;
  thread_local std::vector<float> scratch;
  scratch.resize(size_t(kTiles) * p.K * 8 + size_t(2) * groups * 8);
  float* wd = scratch.data();
  float* sc = wd + size_t(kTiles) * p.K * 8;
  float* bi = sc + size_t(groups) * 8;
  // The tile's packed words as [word][lane], read as in unit_single_row (eight
  // contiguous words of each row transposed in registers, a short tail gathered).
  thread_local std::vector<uint32_t> words_scratch;
  words_scratch.resize(size_t(row_words) * 8);
  uint32_t* tw = words_scratch.data();
  int tiles = std::min(kTiles, (p.N - n_base + 7) / 8);
  for (int t = 0; t < tiles; t++) {
    int n0 = n_base + t * 8;
    __m256i rows = tile_rows(n0, p.N, row_words, n_base);
    const uint32_t* rowp[8];
    for (int l = 0; l < 8; l++) rowp[l] = base + size_t(std::min(n0 + l, p.N - 1) - n_base) * row_words;
    int w0 = 0;
    for (; w0 + 8 <= row_words; w0 += 8) {
      __m256i r[8];
      for (int l = 0; l < 8; l++) r[l] = _mm256_loadu_si256(reinterpret_cast<const __m256i*>(rowp[l] + w0));
      transpose8(r);
      for (int j = 0; j < 8; j++) _mm256_storeu_si256(reinterpret_cast<__m256i*>(tw + size_t(w0 + j) * 8), r[j]);
    }
    for (; w0 < row_words; w0++) {
      _mm256_storeu_si256(reinterpret_cast<__m256i*>(tw + size_t(w0) * 8),
                          _mm256_i32gather_epi32(reinterpret_cast<const int*>(base) + w0, rows, 4));
    }
    tile_params(p, n0, groups, sc, bi);
    float* wt = wd + size_t(t) * p.K * 8;
    for (int g = 0; g < groups; g++) {
      __m256 s = _mm256_loadu_ps(sc + g * 8);
      __m256 b = _mm256_loadu_ps(bi + g * 8);
      float* wg = wt + size_t(g) * group_size * 8;
      // MLX's order over K: 32-bit words, each word's low bits first (the
      // packed row's bytes, each byte's low bits first).
      constexpr int per_word = 32 / bits;
      constexpr int words = group_size / per_word;
      const __m256i mask = _mm256_set1_epi32((1 << bits) - 1);
      const uint32_t* wp = tw + size_t(g) * words * 8;
      for (int j = 0; j < words; j++) {
        __m256i v = _mm256_loadu_si256(reinterpret_cast<const __m256i*>(wp + j * 8));
#pragma GCC unroll 16
        for (int e = 0; e < per_word; e++) {
          __m256 q = _mm256_cvtepi32_ps(_mm256_and_si256(v, mask));
          v = _mm256_srli_epi32(v, bits);
          _mm256_storeu_ps(wg + (j * per_word + e) * 8,
                           dequantized<A>(s, q, b));
        }
      }
    }
  }
  for (int t = 0; t < tiles; t++) {
    int n0 = n_base + t * 8;
    int lanes = std::min(8, p.N - n0);
    const float* wt = wd + size_t(t) * p.K * 8;
    for (int m0 = 0; m0 < p.M; m0 += kRows) {
      int rows = std::min(kRows, p.M - m0);
      const float* xr[kRows];
      for (int i = 0; i < kRows; i++) xr[i] = p.x + size_t(m0 + std::min(i, rows - 1)) * p.K;
      __m256 acc[kRows];
      for (int i = 0; i < kRows; i++) acc[i] = _mm256_setzero_ps();
      for (int k0 = 0; k0 < p.K; k0 += 4) {
        // Four at a time so the operand order's period (4 positions, see
        // sum_first) is known at compile time; group sizes are multiples of 4.
#pragma GCC unroll 4
        for (int e = 0; e < 4; e++) {
          int k = k0 + e;
          __m256 wk = _mm256_loadu_ps(wt + size_t(k) * 8);
          bool sf = sum_first<A, bits, group_size>(group_size == 32 ? k % group_size : e);
          for (int i = 0; i < kRows; i++) {
            __m256 tk = round_to<A>(times_x<A>(_mm256_set1_ps(xr[i][k]), wk));
            acc[i] = round_to<A>(plus_sum(acc[i], tk, sf));
          }
        }
      }
      for (int i = 0; i < rows; i++) store_lanes<A>(p.out, size_t(m0 + i) * p.N + n0, acc[i], lanes);
    }
  }
}

template <Act A, int bits, int group_size>
void run_typed(const Problem& p) {
  int units = (p.N + kUnitCols - 1) / kUnitCols;
  auto& pool = WorkerPool::instance();
  // A few chunks per thread so a descheduled thread's share is picked up by the others.
  int chunks = std::min(units, pool.size() * 4);
  auto span = [&](int c, auto&& unit_fn) {
    int lo = int(int64_t(units) * c / chunks), hi = int(int64_t(units) * (c + 1) / chunks);
    for (int u = lo; u < hi; u++) unit_fn(u);
  };
  if (p.M <= kSingleRowMaxM) {
    // Few rows (decode of a small batch): the M == 1 kernel once per row. A unit's weights
    // (kUnitCols rows of K) stay in L1 between rows, so memory is read once; this beats
    // decoding them into the M > 1 scratch, which costs more than the rows it serves until
    // about eight of them. Each output element's arithmetic is the same in both paths.
    pool.run(chunks, [&](int c) {
      span(c, [&](int u) {
        for (int m = 0; m < p.M; m++) unit_single_row<A, bits, group_size>(p, u, m);
      });
    });
  } else {
    pool.run(chunks, [&](int c) { span(c, [&](int u) { unit_many_rows<A, bits, group_size>(p, u); }); });
  }
}

template <Act A, int bits>
bool run_bits(const Problem& p, int group_size) {
  switch (group_size) {
    case 32: run_typed<A, bits, 32>(p); return true;
    case 64: run_typed<A, bits, 64>(p); return true;
    case 128: run_typed<A, bits, 128>(p); return true;
    default: return false;
  }
}

template <Act A>
bool run_act(const Problem& p, int bits, int group_size) {
  switch (bits) {
    case 2: return run_bits<A, 2>(p, group_size);
    case 4: return run_bits<A, 4>(p, group_size);
    case 8: return run_bits<A, 8>(p, group_size);
    default: return false;
  }
}

bool cpu_has_kernels() {
  static const bool ok = [] {
    __builtin_cpu_init();
    return __builtin_cpu_supports("avx2") && __builtin_cpu_supports("f16c");
  }();
  return ok;
}

#else

bool cpu_has_kernels() {
  return false;
}

#endif  // MLXR_QMM_X86

// ---- the primitive ---------------------------------------------------------

bool shape_supported(int bits, int group_size) {
  return (bits == 2 || bits == 4 || bits == 8) &&
         (group_size == 32 || group_size == 64 || group_size == 128);
}

// Element (row-major index i) of a possibly strided array, as an offset.
inline int64_t element_offset(const mx::array& a, int64_t i) {
  int64_t off = 0;
  for (int d = a.ndim() - 1; d >= 0 && i > 0; d--) {
    int64_t dim = a.shape(d);
    off += (i % dim) * a.strides()[d];
    i /= dim;
  }
  return off;
}

// The array's elements in row-major order as float (T widened exactly).
template <typename T>
void widen(const mx::array& a, std::vector<float>& out) {
  size_t n = a.size();
  out.resize(n);
  const T* src = a.data<T>();
  if (a.flags().row_contiguous) {
    for (size_t i = 0; i < n; i++) out[i] = static_cast<float>(src[i]);
  } else {
    for (size_t i = 0; i < n; i++) out[i] = static_cast<float>(src[element_offset(a, int64_t(i))]);
  }
}

void widen_any(const mx::array& a, std::vector<float>& out) {
  switch (a.dtype()) {
    case mx::float32: widen<float>(a, out); break;
    case mx::float16: widen<mx::float16_t>(a, out); break;
    default: widen<mx::bfloat16_t>(a, out); break;
  }
}

const uint32_t* packed_words(const mx::array& w, std::vector<uint32_t>& copy) {
  if (w.flags().row_contiguous) return w.data<uint32_t>();
  copy.resize(w.size());
  const uint32_t* src = w.data<uint32_t>();
  for (size_t i = 0; i < copy.size(); i++) copy[i] = src[element_offset(w, int64_t(i))];
  return copy.data();
}

// quantized_matmul(x, w, scales, biases, transpose=True) over MLX's own
// validated, dtype-promoted inputs; created only for the cases run_act covers
// on a CPU stream of a CPU with AVX2 and F16C.
class NativeQuantizedMatmul : public mx::UnaryPrimitive {
 public:
  NativeQuantizedMatmul(mx::Stream stream, int group_size, int bits)
      : mx::UnaryPrimitive(stream), group_size_(group_size), bits_(bits) {}

  void eval_cpu(const std::vector<mx::array>& inputs, mx::array& out) override {
    auto& encoder = mx::cpu::get_command_encoder(stream());
    out.set_data(mx::allocator::malloc(out.nbytes()));
    for (auto& in : inputs) encoder.set_input_array(in);
    encoder.set_output_array(out);
    encoder.dispatch([out = mx::array::unsafe_weak_copy(out),
                      x = mx::array::unsafe_weak_copy(inputs[0]),
                      w = mx::array::unsafe_weak_copy(inputs[1]),
                      scales = mx::array::unsafe_weak_copy(inputs[2]),
                      biases = mx::array::unsafe_weak_copy(inputs[3]),
                      group_size = group_size_, bits = bits_]() mutable {
      compute(out, x, w, scales, biases, group_size, bits);
    });
  }

  void eval_gpu(const std::vector<mx::array>&, mx::array&) override {
    throw std::runtime_error("[NativeQuantizedMatmul] has no GPU implementation");
  }

  const char* name() const override {
    return "NativeQuantizedMatmul";
  }

  bool is_equivalent(const mx::Primitive& other) const override {
    auto* o = dynamic_cast<const NativeQuantizedMatmul*>(&other);
    return o != nullptr && o->group_size_ == group_size_ && o->bits_ == bits_;
  }

 private:
  static void compute(mx::array& out, const mx::array& x, const mx::array& w,
                      const mx::array& scales, const mx::array& biases, int group_size,
                      int bits) {
#if MLXR_QMM_X86
    int K = x.shape(-1);
    int N = out.shape(-1);
    if (K == 0 || N == 0 || x.size() == 0) {
      if (out.nbytes() > 0) std::memset(out.data<void>(), 0, out.nbytes());
      return;
    }
    std::vector<float> xf, sf, bf;
    std::vector<uint32_t> wcopy;
    const float* xp;
    if (x.dtype() == mx::float32 && x.flags().row_contiguous) {
      xp = x.data<float>();
    } else {
      widen_any(x, xf);
      xp = xf.data();
    }
    const void* sp = scales.data<void>();
    const void* bp = biases.data<void>();
    Param param = scales.dtype() == mx::float32 ? Param::F32
                  : scales.dtype() == mx::float16 ? Param::F16 : Param::BF16;
    if (!scales.flags().row_contiguous || !biases.flags().row_contiguous ||
        scales.dtype() != biases.dtype()) {
      widen_any(scales, sf);
      widen_any(biases, bf);
      sp = sf.data();
      bp = bf.data();
      param = Param::F32;
    }
    Problem p{xp, packed_words(w, wcopy), sp, bp, param, out.data<void>(),
              int(x.size() / K), N, K};
    switch (out.dtype()) {
      case mx::float32: run_act<Act::F32>(p, bits, group_size); break;
      case mx::float16: run_act<Act::F16>(p, bits, group_size); break;
      default: run_act<Act::BF16>(p, bits, group_size); break;
    }
#endif
  }

  int group_size_;
  int bits_;
};

}  // namespace mlxr::qmm

using mlxr::qmm::NativeQuantizedMatmul;

extern "C" {

// 1 when this CPU runs the native kernels (x86-64 with AVX2 and F16C).
int mlxr_native_kernels_available() {
  return mlxr::qmm::cpu_has_kernels() ? 1 : 0;
}

// Threads the kernels split one matmul over (the pool starts on first use).
int mlxr_native_kernels_threads() {
  return mlxr::qmm::WorkerPool::instance().size();
}

// mx::quantized_matmul with the same validation, dtype promotion and output;
// evaluated by the native kernel when it covers the case, else MLX's op as is.
mlxr_array mlxr_native_quantized_matmul(mlxr_array x, mlxr_array w, mlxr_array scales,
                                        mlxr_array biases, bool transpose, int group_size,
                                        int bits, const char* mode) {
  return mlxr::guard_array([&]() -> mx::array {
    auto& xa = *static_cast<mx::array*>(x);
    std::optional<mx::array> b;
    if (biases != nullptr) b = *static_cast<mx::array*>(biases);
    mx::array ref = mx::quantized_matmul(xa, *static_cast<mx::array*>(w),
                                         *static_cast<mx::array*>(scales), b, transpose,
                                         group_size, bits, mode);
    const auto& in = ref.inputs();
    bool covered = mlxr::qmm::cpu_has_kernels() && transpose && b.has_value() &&
                   std::string(mode) == "affine" && mlxr::qmm::shape_supported(bits, group_size) &&
                   in.size() == 4 && in[1].ndim() == 2 &&
                   ref.primitive().stream().device.type == mx::Device::DeviceType::cpu &&
                   (ref.dtype() == mx::float32 || ref.dtype() == mx::float16 ||
                    ref.dtype() == mx::bfloat16);
    if (!covered) return ref;
    // The group parameters as stored, not MLX's astype of them (see Problem);
    // only when they are of a floating type (MLX promotes them to the output's).
    mx::array sc = *static_cast<mx::array*>(scales);
    auto floating = [](mx::Dtype d) { return d == mx::float32 || d == mx::float16 || d == mx::bfloat16; };
    bool raw = floating(sc.dtype()) && floating(b->dtype());
    std::vector<mx::array> inputs = {in[0], in[1], raw ? sc : in[2], raw ? *b : in[3]};
    return mx::array(ref.shape(), ref.dtype(),
                     std::make_shared<NativeQuantizedMatmul>(ref.primitive().stream(), group_size, bits),
                     std::move(inputs));
  });
}

// 1 when the array is the output of the native kernel (tests check that a
// covered case did not silently take MLX's op).
int mlxr_is_native_quantized_matmul(mlxr_array a) {
  auto& arr = *static_cast<mx::array*>(a);
  return arr.has_primitive() && dynamic_cast<NativeQuantizedMatmul*>(&arr.primitive()) != nullptr;
}

}  // extern "C"
