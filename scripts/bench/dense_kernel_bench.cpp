// Single-thread cost of the shim's dense-matmul kernels (mlxr_dense_kernels.h, for each
// instruction set this CPU has) against MLX's own CPU matmul (mx::matmul(x, transpose(w)),
// reference BLAS sgemm for float32, its scalar simd_gemm for float16 / bfloat16), without the
// rest of MLX's graph: thread CPU time per call and per weight for the unquantized projections
// of qwen3-bench-bf16 and SmolLM2, weights hot in cache (one matrix re-run) and cold (every call
// reads the next of enough matrices to pass the last-level cache, as a decode step does), rows
// M = 1, 2, 4, 8, 64. The worker pool is held to one thread (MLXR_KERNEL_THREADS=1), so the
// kernels run on the calling thread; MLX's matmul is single-threaded on the CPU anyway. Thread
// CPU time, so other processes on a shared machine inflate it far less than wall time.
// A developer's tool; DenseMatmulExactnessTest is what checks the bytes.
//
//   scripts/bench/dense_kernel_bench.sh [seconds per case, default 1] [avx2|avx512|mlx ...]
//   DENSE_DTYPE=bf16|f16|f32 (default bf16)
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <ctime>
#include <random>
#include <string>
#include <vector>

#include "../../mlx-native/src/main/c/mlxr_dense.h"
#include "mlx/mlx.h"

// The shim's error slot lives in mlxr_shim.cpp, which this tool does not link.
void mlxr_set_last_error(const char*) {}

namespace {

namespace mx = mlx::core;

// This thread's CPU time, or the process's for MLX's op (its stream thread runs the kernel).
double cpu_seconds(bool process) {
  timespec t;
  clock_gettime(process ? CLOCK_PROCESS_CPUTIME_ID : CLOCK_THREAD_CPUTIME_ID, &t);
  return t.tv_sec + t.tv_nsec * 1e-9;
}

struct Case {
  const char* name;
  int n, k;
};

std::string dtype_wanted() {
  const char* a = std::getenv("DENSE_DTYPE");
  return a ? a : "bf16";
}

void run_case(const std::string& isa, const Case& c, bool cold, double seconds, int M) {
  using namespace mlxr::qmm;
  const std::string dt = dtype_wanted();
  const Act act = dt == "f32" ? Act::F32 : dt == "f16" ? Act::F16 : Act::BF16;
  const mx::Dtype mdt = dt == "f32" ? mx::float32 : dt == "f16" ? mx::float16 : mx::bfloat16;
  const size_t elem = act == Act::F32 ? 4 : 2;
  const size_t weights = size_t(c.n) * c.k;
  int copies = cold ? std::max<int>(1, int(160e6 / (weights * elem))) : 1;
  std::mt19937 rng(7);
  std::vector<mx::array> w;
  for (int i = 0; i < copies; i++) {
    w.push_back(mx::astype(mx::random::normal({c.n, c.k}, mx::float32, 0.0f, 0.05f), mdt));
  }
  mx::eval(w);
  std::vector<float> x(size_t(c.k) * M), out(size_t(c.n) * M);
  for (auto& v : x) v = float(int(rng() % 2001) - 1000) / 1000.0f;
  mx::array xa = mx::astype(mx::array(x.data(), {M, c.k}, mx::float32), mdt);
  mx::eval(xa);
  long calls = 0;
  const bool mlx_op = isa == "mlx";
  double t0 = cpu_seconds(mlx_op), t;
  do {
    int i = int(calls % copies);
    if (mlx_op) {
      mx::array o = mx::matmul(xa, mx::transpose(w[i]));
      mx::eval(o);
    } else {
      DenseProblem p{x.data(), w[i].data<void>(), out.data(), M, c.n, c.k};
      if (isa == "avx512") run_dense_avx512(p, act);
      else run_dense_avx2(p, act);
    }
    calls++;
    t = cpu_seconds(mlx_op) - t0;
  } while (t < seconds);
  double per_call = t / calls;
  double bytes = double(weights) * elem;
  std::printf("%-6s %-4s %-26s M=%-3d %-4s %9.3f ms/call  %7.3f ns/weight  %6.2f GB/s  (%ld calls)\n", isa.c_str(),
              dt.c_str(), c.name, M, cold ? "cold" : "hot", per_call * 1e3, per_call * 1e9 / weights,
              bytes / per_call / 1e9, calls);
}

}  // namespace

int main(int argc, char** argv) {
  setenv("MLXR_KERNEL_THREADS", "1", 1);
  mx::set_default_device(mx::Device::cpu);
  double seconds = argc > 1 ? std::atof(argv[1]) : 1.0;
  std::vector<std::string> isas;
  for (int i = 2; i < argc; i++) isas.push_back(argv[i]);
  if (isas.empty()) {
    isas.push_back("avx2");
    if (__builtin_cpu_supports("avx512f") && __builtin_cpu_supports("avx512bw") && __builtin_cpu_supports("avx512vl")) {
      isas.push_back("avx512");
    }
  }
  const Case cases[] = {{"q_proj 768x768", 768, 768},
                        {"gate_proj 2304x768", 2304, 768},
                        {"down_proj 768x2304", 768, 2304},
                        {"lm_head 16384x768", 16384, 768},
                        {"SmolLM2 lm_head 49152x576", 49152, 576}};
  for (const std::string& isa : isas) {
    for (bool cold : {false, true}) {
      for (int M : {1, 2, 4, 8, 64}) {
        if (isa == "mlx" && M > 8) continue;
        for (const Case& c : cases) run_case(isa, c, cold, seconds, M);
      }
    }
  }
  return 0;
}
