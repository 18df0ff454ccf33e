// Single-thread cost of the fast tier's quantized_matmul kernels (mlxr_fastnum_kernels.h, for
// each instruction set this CPU has), without MLX's graph: thread CPU ms per SmolLM2-135M
// forward pass of quantized matmuls (30 x q/k/v/o/gate/up/down at 4 bits, group 32, float16
// group parameters, and the 49152x576 8-bit head), float32 activations, M = 1, 2, 4, 8, 16 (or
// the comma-separated FASTNUM_MS), with
// each matrix's weights cold (every call reads the next of enough copies to exceed the
// last-level cache, as a decode step does) or, with FASTNUM_HOT=1, hot (one matrix re-run). The worker pool is held to one thread
// (MLXR_KERNEL_THREADS=1). The activations are random and not in the order the primitive
// prepares (the cost does not depend on the values); FastKernelsTest checks the results.
// With FASTNUM_MIN_OF=B each figure is instead the minimum over B batches of 10 calls: on a
// shared machine means moved by ±30% from run to run while the minimum (hot) held to ~1%, so
// A/B a kernel change with FASTNUM_HOT=1 FASTNUM_MIN_OF=300. FASTNUM_COLS=1 runs every M on the
// many-rows kernel (mlxr_fastnum_cols.h), which the primitive takes from MLXR_FASTNUM_COLS_ROWS
// rows (7 on AVX-512, 5 on AVX2), instead of the row-lane passes.
//
//   [FASTNUM_HOT=1] [FASTNUM_MIN_OF=B] [FASTNUM_MS=1,8,16,64] [FASTNUM_COLS=1] scripts/bench/fastnum_kernel_bench.sh [seconds per case, default 0.3] [avx2|avx512 ...]
#include <algorithm>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <ctime>
#include <random>
#include <string>
#include <vector>

#include "../../mlx-native/src/main/c/mlxr_fastnum.h"

namespace {

using namespace mlxr::fastnum;

double thread_cpu_seconds() {
  timespec t;
  clock_gettime(CLOCK_THREAD_CPUTIME_ID, &t);
  return t.tv_sec + t.tv_nsec * 1e-9;
}

struct Shape {
  const char* name;
  int n, k, bits, per_pass;
};

constexpr Shape kShapes[] = {{"q_proj / o_proj", 576, 576, 4, 60},
                             {"k_proj / v_proj", 192, 576, 4, 60},
                             {"gate_proj / up_proj", 1536, 576, 4, 60},
                             {"down_proj", 576, 1536, 4, 30},
                             {"lm_head (8-bit)", 49152, 576, 8, 1}};

// Thread CPU seconds per call of one shape: the mean over `seconds`, or with min_of > 0 the
// fastest of min_of batches of 10 calls.
double per_call(const std::string& isa, const Shape& s, int M, double seconds, bool hot, int min_of, bool cols) {
  constexpr int gs = 32;
  const int lanes = isa == "avx512" ? kLanesAvx512 : kLanesAvx2;
  const int groups = s.k / gs;
  const size_t g_stride = size_t((groups + lanes - 1) / lanes) * lanes;
  const bool word_lanes = isa == "avx512" && s.bits == 4 && M < kWordLaneRows;  // as mlxr_fastnum.cpp chooses
  const int block = 32 / s.bits * lanes;
  const size_t k_stride = word_lanes ? size_t((s.k + block - 1) / block) * block : size_t(s.k);
  const size_t words = size_t(s.n) * s.k * s.bits / 32;
  const int copies = hot ? 1 : std::max<int>(1, int(160e6 / (words * 4 + size_t(s.n) * groups * 4)));
  std::mt19937 rng(7);
  std::vector<std::vector<uint32_t>> w(copies, std::vector<uint32_t>(words));
  std::vector<std::vector<uint16_t>> sc(copies, std::vector<uint16_t>(size_t(s.n) * groups));
  std::vector<std::vector<uint16_t>> bi(copies, std::vector<uint16_t>(size_t(s.n) * groups));
  for (int i = 0; i < copies; i++) {
    for (auto& v : w[i]) v = rng();
    for (auto& v : sc[i]) v = 0x2000 | (rng() & 0x3ff);
    for (auto& v : bi[i]) v = 0xa000 | (rng() & 0x3ff);
  }
  std::vector<float> xp(k_stride * M), xg(g_stride * M), out(size_t(s.n) * M);
  for (auto& v : xp) v = float(int(rng() % 2001) - 1000) / 1000.0f;
  for (auto& v : xg) v = float(int(rng() % 2001) - 1000) / 100.0f;
  long calls = 0;
  const auto call = [&] {
    const int i = int(calls % copies);
    // The many-rows kernel reads the activations as they are (K floats a row); the values do not matter.
    Problem p{xp.data(), xg.data(), cols ? size_t(s.k) : k_stride, g_stride, !cols && word_lanes, w[i].data(),
              sc[i].data(), bi[i].data(), Dt::F16, out.data(), Dt::F32, M, s.n, s.k, s.bits, gs, cols};
    if (isa == "avx512") run_avx512(&p, 1);
    else run_avx2(&p, 1);
    calls++;
  };
  if (min_of > 0) {
    constexpr int kBatch = 10;
    double best = 1e30;
    for (int b = 0; b < min_of; b++) {
      const double t0 = thread_cpu_seconds();
      for (int c = 0; c < kBatch; c++) call();
      best = std::min(best, (thread_cpu_seconds() - t0) / kBatch);
    }
    return best;
  }
  const double t0 = thread_cpu_seconds();
  double t;
  do {
    call();
    t = thread_cpu_seconds() - t0;
  } while (t < seconds);
  return t / calls;
}

}  // namespace

int main(int argc, char** argv) {
  setenv("MLXR_KERNEL_THREADS", "1", 1);
  const double seconds = argc > 1 ? std::atof(argv[1]) : 0.3;
  const char* h = std::getenv("FASTNUM_HOT");
  const bool hot = h != nullptr && std::strcmp(h, "1") == 0;
  const char* m = std::getenv("FASTNUM_MIN_OF");
  const int min_of = m != nullptr ? std::atoi(m) : 0;
  const char* cl = std::getenv("FASTNUM_COLS");
  const bool cols = cl != nullptr && std::strcmp(cl, "1") == 0;
  std::vector<int> ms;
  const char* ml = std::getenv("FASTNUM_MS");
  for (std::string list = ml != nullptr ? ml : "1,2,4,8,16"; !list.empty();) {
    const size_t comma = list.find(',');
    ms.push_back(std::atoi(list.substr(0, comma).c_str()));
    list = comma == std::string::npos ? "" : list.substr(comma + 1);
  }
  std::printf("%s; weights %s; %s\n\n", cols ? "the many-rows kernel" : "the row-lane passes", hot ? "hot (one matrix re-run)" : "cold (each call reads the next of ~160 MB of copies)",
              min_of > 0 ? "fastest of FASTNUM_MIN_OF batches of 10 calls" : "mean over the case's seconds");
  std::vector<std::string> isas;
  for (int i = 2; i < argc; i++) isas.push_back(argv[i]);
  if (isas.empty()) {
    __builtin_cpu_init();
    isas.push_back("avx2");
    if (__builtin_cpu_supports("avx512f") && __builtin_cpu_supports("avx512bw") && __builtin_cpu_supports("avx512vl")) {
      isas.push_back("avx512");
    }
  }
  std::printf("| ISA | M | ");
  for (const Shape& s : kShapes) std::printf("%s ms/call | ", s.name);
  std::printf("forward pass ms |\n|---|---:|");
  for (size_t i = 0; i <= sizeof kShapes / sizeof kShapes[0]; i++) std::printf("---:|");
  std::printf("\n");
  for (const std::string& isa : isas) {
    for (int M : ms) {
      double pass = 0;
      std::printf("| %s | %d | ", isa.c_str(), M);
      for (const Shape& s : kShapes) {
        const double c = per_call(isa, s, M, seconds, hot, min_of, cols);
        pass += c * s.per_pass;
        std::printf("%.4f | ", c * 1e3);
      }
      std::printf("%.2f |\n", pass * 1e3);
      std::fflush(stdout);
    }
  }
  return 0;
}
