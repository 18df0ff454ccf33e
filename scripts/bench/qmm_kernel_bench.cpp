// Single-thread cost of the shim's quantized_matmul kernels (mlxr_qmm_kernels.h, for each
// instruction set this CPU has), without MLX's graph: thread CPU time per call and per weight,
// for SmolLM2's shapes, with the weights hot in cache (one matrix re-run) and cold (every call
// reads the next of enough matrices to exceed the last-level cache, as a decode step does), and
// the cost of M = 2, 4, 8, 16 rows against one. The worker pool is held to one thread
// (MLXR_KERNEL_THREADS=1), so the kernels run on the calling thread. Thread CPU time, so other
// processes on a shared machine inflate it far less than wall time.
// A developer's tool for comparing kernel variants; QuantizedMatmulExactnessTest is what
// checks their bytes.
//
//   scripts/bench/qmm_kernel_bench.sh [seconds per case, default 1] [avx2|avx512 ...]
//   QMM_ACT=bf16|f16 scripts/bench/qmm_kernel_bench.sh ...   (activation dtype, default f32)
//   QMM_WIDTHS=1 scripts/bench/qmm_kernel_bench.sh [seconds]   (per bit width 3, 4, 5, 6, 8 on
//       gate_proj's 1536x576, group 64, M = 1 and 8, hot: ns/weight of each instruction set's kernel
//       on one thread and of MLX's own quantized_matmul (its single-threaded CPU kernel, process
//       CPU time, its group parameters pre-cast to the activation dtype))
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <ctime>
#include <random>
#include <string>
#include <vector>

#include "../../mlx-native/src/main/c/mlxr_qmm.h"
#include "mlx/mlx.h"

namespace {

double cpu_seconds(clockid_t clock = CLOCK_THREAD_CPUTIME_ID) {
  timespec t;
  clock_gettime(clock, &t);
  return t.tv_sec + t.tv_nsec * 1e-9;
}

struct Case {
  const char* name;
  int n, k, bits, gs = 32;
};

mlxr::qmm::Act act_wanted() {
  const char* a = std::getenv("QMM_ACT");
  std::string s = a ? a : "f32";
  return s == "bf16" ? mlxr::qmm::Act::BF16 : s == "f16" ? mlxr::qmm::Act::F16 : mlxr::qmm::Act::F32;
}

double run_case(const std::string& isa, const Case& c, bool cold, double seconds, int M) {
  using namespace mlxr::qmm;
  const Act act = act_wanted();
  const int gs = c.gs, groups = c.k / gs, row_words = c.k * c.bits / 32;
  size_t words = size_t(c.n) * row_words;
  // Cold: enough copies to pass ~160 MB, so each call misses the caches.
  int copies = cold ? std::max<int>(1, int(160e6 / (words * 4 + size_t(c.n) * groups * 4))) : 1;
  std::mt19937 rng(7);
  std::vector<std::vector<uint32_t>> w(copies, std::vector<uint32_t>(words));
  std::vector<std::vector<uint16_t>> sc(copies, std::vector<uint16_t>(size_t(c.n) * groups));
  std::vector<std::vector<uint16_t>> bi(copies, std::vector<uint16_t>(size_t(c.n) * groups));
  for (int i = 0; i < copies; i++) {
    for (auto& v : w[i]) v = rng();
    for (auto& v : sc[i]) v = 0x2000 | (rng() & 0x3ff);
    for (auto& v : bi[i]) v = 0xa000 | (rng() & 0x3ff);
  }
  std::vector<float> x(size_t(c.k) * M), out(size_t(c.n) * M);  // out: room for any dtype
  for (auto& v : x) v = float(int(rng() % 2001) - 1000) / 1000.0f;
  long calls = 0;
  double t0 = cpu_seconds(), t;
  do {
    int i = int(calls % copies);
    Problem p{x.data(), w[i].data(), sc[i].data(), bi[i].data(), Param::F16, out.data(), M, c.n, c.k};
    if (isa == "avx512") run_avx512(p, act, c.bits, gs);
    else run_avx2(p, act, c.bits, gs);
    calls++;
    t = cpu_seconds() - t0;
  } while (t < seconds);
  double per_call = t / calls;
  double weights = double(c.n) * c.k;
  double bytes = weights * c.bits / 8 + double(c.n) * groups * 4;
  std::printf("%-6s %-24s M=%d %-4s %8.3f ms/call  %6.3f ns/weight  %6.2f GB/s  (%ld calls)\n", isa.c_str(), c.name,
              M, cold ? "cold" : "hot", per_call * 1e3, per_call * 1e9 / weights, bytes / per_call / 1e9, calls);
  return per_call;
}

// MLX's own quantized_matmul on the same kind of operands (hot), ns/weight by process CPU time:
// its CPU kernel runs on MLX's stream thread while this one waits.
double run_mlx(const Case& c, double seconds, int M) {
  namespace mx = mlx::core;
  const mlxr::qmm::Act act = act_wanted();
  const mx::Dtype dt = act == mlxr::qmm::Act::BF16 ? mx::bfloat16 : act == mlxr::qmm::Act::F16 ? mx::float16 : mx::float32;
  const int groups = c.k / c.gs, row_words = c.k * c.bits / 32;
  std::mt19937 rng(7);
  std::vector<uint32_t> w(size_t(c.n) * row_words);
  for (auto& v : w) v = rng();
  std::vector<float> sc(size_t(c.n) * groups), bi(sc.size()), x(size_t(M) * c.k);
  for (auto& v : sc) v = float(rng() % 1000 + 1) * 1e-5f;
  for (auto& v : bi) v = -float(rng() % 1000) * 1e-4f;
  for (auto& v : x) v = float(int(rng() % 2001) - 1000) / 1000.0f;
  mx::array wa(reinterpret_cast<const uint32_t*>(w.data()), {c.n, row_words}, mx::uint32);
  mx::array sa = mx::astype(mx::array(sc.data(), {c.n, groups}, mx::float32), dt);
  mx::array ba = mx::astype(mx::array(bi.data(), {c.n, groups}, mx::float32), dt);
  mx::array xa = mx::astype(mx::array(x.data(), {M, c.k}, mx::float32), dt);
  mx::eval({wa, sa, ba, xa});
  long calls = 0;
  double t0 = cpu_seconds(CLOCK_PROCESS_CPUTIME_ID), t;
  do {
    mx::array y = mx::quantized_matmul(xa, wa, sa, ba, true, c.gs, c.bits, "affine", mx::Device::cpu);
    mx::eval(y);
    calls++;
    t = cpu_seconds(CLOCK_PROCESS_CPUTIME_ID) - t0;
  } while (t < seconds);
  double per_call = t / calls;
  std::printf("mlx    %-24s M=%d hot  %8.3f ms/call  %6.3f ns/weight  (%ld calls)\n", c.name, M, per_call * 1e3,
              per_call * 1e9 / (double(c.n) * c.k), calls);
  return per_call;
}

void widths(const std::vector<std::string>& isas, double seconds) {
  const Case cases[] = {{"gate_proj 1536x576 q3", 1536, 576, 3, 64}, {"gate_proj 1536x576 q4", 1536, 576, 4, 64},
                        {"gate_proj 1536x576 q5", 1536, 576, 5, 64}, {"gate_proj 1536x576 q6", 1536, 576, 6, 64},
                        {"gate_proj 1536x576 q8", 1536, 576, 8, 64}};
  for (int M : {1, 8}) {
    for (const Case& c : cases) {
      for (const std::string& isa : isas) run_case(isa, c, false, seconds, M);
      run_mlx(c, seconds, M);
    }
  }
}

}  // namespace

int main(int argc, char** argv) {
  setenv("MLXR_KERNEL_THREADS", "1", 1);
  double seconds = argc > 1 ? std::atof(argv[1]) : 1.0;
  std::vector<std::string> isas;
  for (int i = 2; i < argc; i++) isas.push_back(argv[i]);
  if (isas.empty()) {
    isas.push_back("avx2");
    if (__builtin_cpu_supports("avx512f") && __builtin_cpu_supports("avx512bw") && __builtin_cpu_supports("avx512vl")) {
      isas.push_back("avx512");
    }
  }
  if (const char* w = std::getenv("QMM_WIDTHS"); w != nullptr && std::string(w) == "1") {
    widths(isas, seconds);
    return 0;
  }
  const Case cases[] = {{"q_proj 576x576 q4", 576, 576, 4},
                        {"gate_proj 1536x576 q4", 1536, 576, 4},
                        {"down_proj 576x1536 q4", 576, 1536, 4},
                        {"lm_head 49152x576 q8", 49152, 576, 8}};
  // Per forward pass of SmolLM2: 60 x q/o, 60 x k/v (as q/o's cost x 1/3), 60 x gate/up, 30 x down, 1 x head.
  const double count[] = {60 + 60.0 / 3, 60, 30, 1};
  for (const std::string& isa : isas) {
    for (bool cold : {false, true}) {
      double pass1 = 0;
      for (int M : {1, 2, 4, 8, 16}) {
        double pass = 0;
        for (int i = 0; i < 4; i++) pass += count[i] * run_case(isa, cases[i], cold, seconds, M);
        if (M == 1) pass1 = pass;
        std::printf("== %s %s, M=%d: %.2f ms of one thread's CPU per forward pass, %.2fx M=1\n", isa.c_str(),
                    cold ? "cold" : "hot", M, pass * 1e3, pass / pass1);
      }
    }
  }
  return 0;
}
