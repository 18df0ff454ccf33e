// Single-thread cost of the shim's M = 1 quantized_matmul kernel (mlxr_qmm.cpp's
// unit_single_row), without MLX's graph or the worker pool: CPU time per weight, for
// SmolLM2's shapes, with the weights hot in cache (one matrix re-run) and cold (every call
// reads the next of enough matrices to exceed the last-level cache, as a decode step does).
// A developer's tool for comparing kernel variants; QuantizedMatmulExactnessTest is what
// checks their bytes.
//
//   scripts/bench/qmm_kernel_bench.sh [seconds per case, default 1]
#include "../../mlx-native/src/main/c/mlxr_qmm.cpp"

#include <cstdio>
#include <ctime>
#include <random>

// The shim's error slot lives in mlxr_shim.cpp, which this tool does not link.
void mlxr_set_last_error(const char*) {}

namespace {

double cpu_seconds() {
  timespec t;
  clock_gettime(CLOCK_THREAD_CPUTIME_ID, &t);
  return t.tv_sec + t.tv_nsec * 1e-9;
}

struct Case {
  const char* name;
  int n, k, bits;
};

template <int bits>
void run_case(const Case& c, bool cold, double seconds) {
  using namespace mlxr::qmm;
  const int gs = 32, groups = c.k / gs, row_words = c.k * bits / 32;
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
  std::vector<float> x(c.k), out(c.n);
  for (auto& v : x) v = float(int(rng() % 2001) - 1000) / 1000.0f;
  int units = (c.n + kUnitCols - 1) / kUnitCols;
  long calls = 0;
  double t0 = cpu_seconds(), t;
  do {
    int i = int(calls % copies);
    Problem p{x.data(), w[i].data(), sc[i].data(), bi[i].data(), Param::F16, out.data(), 1, c.n, c.k};
    for (int u = 0; u < units; u++) unit_single_row<Act::F32, bits, 32>(p, u, 0);
    calls++;
    t = cpu_seconds() - t0;
  } while (t < seconds);
  double per_call = t / calls;
  double weights = double(c.n) * c.k;
  double bytes = weights * bits / 8 + double(c.n) * groups * 4;
  std::printf("%-24s %-4s %8.3f ms/call  %6.3f ns/weight  %6.2f GB/s  (%ld calls)\n", c.name,
              cold ? "cold" : "hot", per_call * 1e3, per_call * 1e9 / weights, bytes / per_call / 1e9, calls);
}

}  // namespace

int main(int argc, char** argv) {
  double seconds = argc > 1 ? std::atof(argv[1]) : 1.0;
  const Case cases[] = {{"q_proj 576x576 q4", 576, 576, 4},
                        {"gate_proj 1536x576 q4", 1536, 576, 4},
                        {"down_proj 576x1536 q4", 576, 1536, 4},
                        {"lm_head 49152x576 q8", 49152, 576, 8}};
  for (bool cold : {false, true}) {
    for (const Case& c : cases) {
      if (c.bits == 4) run_case<4>(c, cold, seconds);
      else run_case<8>(c, cold, seconds);
    }
  }
  return 0;
}
