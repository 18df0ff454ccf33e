// Exact x86 kernels for MLX's affine quantized_matmul(transpose=True): the
// MLX primitive and its worker pool (mlxr_isa.cpp chooses the instruction set). The
// kernels themselves are in mlxr_qmm_kernels.h, compiled for AVX2 + F16C by
// mlxr_qmm_avx2.cpp and for AVX-512 by mlxr_qmm_avx512.cpp.
//
// On x86 MLX's CPU backend runs quantized_matmul as the scalar `_qmm_t` loop
// (simd::max_size is 1 there): for each output element, in order over K,
//     w   = T(T(scale * T(q)) + bias)
//     t   = T(x * w)
//     sum = T(sum + t)
// with every product/sum computed in float and rounded to T (identity for
// float32; the emulated float16 / bfloat16 conversions otherwise), no FMA.
// The kernels keep exactly that per-element arithmetic and change only the
// schedule: one output column per vector lane, columns split across a small
// worker pool, and each decoded weight used by up to eight rows at once (std::this_thread::yield is sched_yield there).
// So the output bytes equal MLX's (tested by QuantizedMatmulExactnessTest,
// for each instruction set this CPU has).
//
// This file is compiled for baseline x86-64; the kernel files run only when
// __builtin_cpu_supports says the CPU has their instruction set (AVX-512 F,
// BW, VL where present, else AVX2 + F16C; MLXR_KERNEL_ISA=avx2 forces the
// latter), so the shim stays one binary for any x86-64. Every case the
// kernels do not cover (other bits, group sizes, modes, transpose=False,
// batched weights, non-CPU streams, CPUs without AVX2/F16C, non-x86) goes to
// MLX's own op.

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
#include "mlxr_cpu_task.h"
#include "mlxr_exact_ops.h"
#include "mlxr_guard.h"
#include "mlxr_isa.h"
#include "mlxr_qmm.h"
#include "mlxr_qmm_primitive.h"
#include "mlxr_row_major.h"

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
        // Every 64 pauses (~1 us) the spin gives the core to any other
        // runnable thread of this core: the JVM thread that builds and
        // submits the next step's graph shares the second core with this
        // worker, and a spinning worker otherwise holds it off for a whole
        // scheduler slice. With nothing else runnable sched_yield returns
        // at once (std::this_thread::yield is sched_yield there).
        if ((++spins & 63) == 0) std::this_thread::yield();
        if ((spins & 255) == 0 &&
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

// ---- what the kernel files use from here (mlxr_qmm.h) ----------------------

void parallel_chunks(int chunks, void (*body)(void* ctx, int chunk), void* ctx) {
  WorkerPool::instance().run(chunks, [body, ctx](int chunk) { body(ctx, chunk); });
}

int parallel_threads() {
  return WorkerPool::instance().size();
}

int pass_rows_env() {
  static const int rows = [] {
    const char* env = std::getenv("MLXR_KERNEL_PASS_ROWS");
    const int n = env == nullptr ? 0 : std::atoi(env);
    return n > 0 ? n : 0;
  }();
  return rows;
}

float* thread_scratch(size_t floats) {
  thread_local std::vector<float> scratch;
  scratch.resize(floats + 16);
  return reinterpret_cast<float*>((reinterpret_cast<uintptr_t>(scratch.data()) + 63) & ~uintptr_t(63));
}

// ---- the kernels of one instruction set (mlxr_isa.h chooses) ------------------

bool run_isa(Isa isa, const Problem& p, Act act, int bits, int group_size) {
  switch (isa) {
    case Isa::Avx512: return run_avx512(p, act, bits, group_size);
    case Isa::Avx2: return run_avx2(p, act, bits, group_size);
    default: return false;
  }
}

// ---- the primitive ---------------------------------------------------------

bool shape_supported(int bits, int group_size) {
  return ((bits >= 2 && bits <= 6) || bits == 8) &&
         (group_size == 32 || group_size == 64 || group_size == 128);
}

// quantized_matmul(x, w, scales, biases, transpose=True) over MLX's own
// validated, dtype-promoted inputs, by the kernels of one instruction set;
// created only for the cases they cover, on a CPU stream of a CPU that has it.
struct ExactKernels {
  static constexpr const char* kName = "NativeQuantizedMatmul";
  static constexpr bool kKeepsWeights = false;

  static void compute(mx::array& out, const mx::array& x, const mx::array& w,
                      const mx::array& scales, const mx::array& biases, int group_size,
                      int bits, Isa isa) {
    int K = x.shape(-1);
    int N = out.shape(-1);
    if (K == 0 || N == 0 || x.size() == 0) {
      if (out.nbytes() > 0) std::memset(out.data<void>(), 0, out.nbytes());
      return;
    }
    std::vector<float> xf, sf, bf;
    std::vector<uint32_t> wcopy;
    const float* xp = row_major_floats(x, xf);
    const void* sp = scales.data<void>();
    const void* bp = biases.data<void>();
    Param param = scales.dtype() == mx::float32 ? Param::F32
                  : scales.dtype() == mx::float16 ? Param::F16 : Param::BF16;
    if (!scales.flags().row_contiguous || !biases.flags().row_contiguous ||
        scales.dtype() != biases.dtype()) {
      sp = row_major_floats(scales, sf);
      bp = row_major_floats(biases, bf);
      param = Param::F32;
    }
    Problem p{xp, row_major<uint32_t, uint32_t>(w, wcopy), sp, bp, param, out.data<void>(),
              int(x.size() / K), N, K};
    Act act = out.dtype() == mx::float32 ? Act::F32 : out.dtype() == mx::float16 ? Act::F16 : Act::BF16;
    if (!run_isa(isa, p, act, bits, group_size)) {
      throw std::logic_error("[NativeQuantizedMatmul] built for a case its kernels do not cover");
    }
  }
};

using NativeQuantizedMatmul = QuantizedMatmulPrimitive<ExactKernels>;

void quantized_matmul_into(const mx::array& x, const mx::array& w, const mx::array& scales, const mx::array& biases,
                           int group_size, int bits, Isa isa, mx::array& out) {
  ExactKernels::compute(out, x, w, scales, biases, group_size, bits, isa);
}

mx::array native_quantized_matmul(const mx::array& xa, const mx::array& wa, const mx::array& sa, const mx::array* ba,
                                  bool transpose, int group_size, int bits, const std::string& mode, Isa isa) {
  auto build = [&](const mx::Shape& shape, mx::Stream stream, std::vector<mx::array> inputs) {
    mx::Dtype dtype = inputs[0].dtype();  // before `inputs` is moved from
    return mx::array(shape, dtype, std::make_shared<NativeQuantizedMatmul>(stream, group_size, bits, isa),
                     std::move(inputs));
  };
  bool kernel = isa != Isa::None && transpose && mode == "affine" && shape_supported(bits, group_size);
  if (kernel) {
    // The common case without MLX's op (see direct_quantized_matmul): x and the
    // group parameters are then of one dtype family the kernels take as stored.
    if (auto d = direct_quantized_matmul(xa, wa, sa, ba, group_size, bits);
        d && d->stream.device.type == mx::Device::DeviceType::cpu) {
      return build(d->out_shape, d->stream, {xa, wa, sa, *ba});
    }
  }
  std::optional<mx::array> b;
  if (ba != nullptr) b = *ba;
  mx::array ref = mx::quantized_matmul(xa, wa, sa, b, transpose, group_size, bits, mode);
  const auto& in = ref.inputs();
  bool covered = kernel && b.has_value() && in.size() == 4 && in[1].ndim() == 2 &&
                 ref.primitive().stream().device.type == mx::Device::DeviceType::cpu && is_float(ref.dtype());
  if (!covered) return ref;
  // The group parameters as stored, not MLX's astype of them (see Problem);
  // only when they are of a floating type (MLX promotes them to the output's).
  // With bfloat16 outputs they must be bfloat16 too (else MLX's astype of them is used): the
  // bfloat16 kernels rely on every NaN they meet having a bfloat16 encoding (see round_to).
  bool raw = is_float(sa.dtype()) && is_float(b->dtype()) &&
             (ref.dtype() != mx::bfloat16 || (sa.dtype() == mx::bfloat16 && b->dtype() == mx::bfloat16));
  return build(ref.shape(), ref.primitive().stream(), {in[0], in[1], raw ? sa : in[2], raw ? *b : in[3]});
}

}  // namespace mlxr::qmm

using mlxr::qmm::NativeQuantizedMatmul;

extern "C" {

// 1 when this CPU runs the native kernels (x86-64 with AVX2 and F16C).
int mlxr_native_kernels_available() {
  return mlxr::cpu_has(mlxr::Isa::Avx2) ? 1 : 0;
}

// 1 when this CPU has instruction set `isa` (1 = AVX2 + F16C, 2 = AVX-512 F/BW/VL).
int mlxr_native_kernels_cpu_has(int isa) {
  return isa >= 1 && isa <= 2 && mlxr::cpu_has(static_cast<mlxr::Isa>(isa)) ? 1 : 0;
}

// The instruction set native quantized_matmul calls use (see default_isa):
// 0 none, 1 AVX2, 2 AVX-512; -1 with the error message set when
// MLXR_KERNEL_ISA is invalid.
int mlxr_native_kernels_isa() {
  int isa = 0;
  if (mlxr::guard_int([&] { isa = static_cast<int>(mlxr::default_isa()); }) != 0) return -1;
  return isa;
}

// 1 when the exact kernels compute affine weights of (bits, group_size) (the
// fused exact block asks before it is built; see shape_supported).
int mlxr_native_kernels_cover(int bits, int group_size) {
  return mlxr::qmm::shape_supported(bits, group_size) ? 1 : 0;
}

// Threads the kernels split one matmul over (the pool starts on first use).
int mlxr_native_kernels_threads() {
  return mlxr::qmm::WorkerPool::instance().size();
}

// mx::quantized_matmul with the same validation, dtype promotion and output;
// evaluated by the native kernel when it covers the case, else MLX's op as is.
// isa: 0 = the default instruction set (mlxr_native_kernels_isa), 1 = AVX2,
// 2 = AVX-512 (tests run each; one the CPU lacks is an error).
mlxr_array mlxr_native_quantized_matmul(mlxr_array x, mlxr_array w, mlxr_array scales,
                                        mlxr_array biases, bool transpose, int group_size,
                                        int bits, const char* mode, int isa_code) {
  return mlxr::guard_array([&]() -> mx::array {
    return mlxr::qmm::native_quantized_matmul(*static_cast<mx::array*>(x), *static_cast<mx::array*>(w),
                                              *static_cast<mx::array*>(scales), static_cast<mx::array*>(biases),
                                              transpose, group_size, bits, mode, mlxr::isa_of_call(isa_code));
  });
}

// 1 when the array is the output of the native kernel (tests check that a
// covered case did not silently take MLX's op).
int mlxr_is_native_quantized_matmul(mlxr_array a) {
  auto& arr = *static_cast<mx::array*>(a);
  return NativeQuantizedMatmul::computes(arr) ? 1 : 0;
}

}  // extern "C"
