// One core's float32 fused multiply-add peak: twelve independent chains of vector FMAs (enough to
// cover the instruction's latency on the CPUs seen here), timed on one thread, for the widest
// vectors this CPU runs (AVX-512, else AVX2). The figure the "% of the compute bound" of a kernel
// or a batched step is measured against (docs/benchmarks.md), instead of one computed from a
// clock the VM does not report.
//
//   g++ -O2 scripts/bench/fma_peak.cpp -o build/bench/fma_peak && build/bench/fma_peak [seconds]
#include <immintrin.h>

#include <chrono>
#include <cstdio>
#include <cstdlib>

namespace {

constexpr int kChains = 12;

void report(long iters, double elapsed, int lanes, float checksum) {
  std::printf("%d-lane FMA: %.2f G vector FMAs/s, %.1f GFLOP/s float32 on one core (checksum %g)\n", lanes,
              double(iters) * kChains / elapsed / 1e9, double(iters) * kChains * lanes * 2 / elapsed / 1e9,
              double(checksum));
}

// The timed loop for one vector type, in a function compiled for that instruction set.
#define MLXR_FMA_PEAK(NAME, TARGET, V, SET1, FMA, STORE, LANES)                        \
  __attribute__((target(TARGET))) void NAME(double seconds) {                          \
    V a[kChains];                                                                      \
    for (int i = 0; i < kChains; i++) a[i] = SET1(1.0f + float(i) * 1e-7f);           \
    const V b = SET1(0.9999999f), c = SET1(1e-7f);                                     \
    long iters = 0;                                                                    \
    const auto t0 = std::chrono::steady_clock::now();                                  \
    double elapsed = 0;                                                                \
    do {                                                                               \
      for (int n = 0; n < 1000000; n++) {                                              \
        _Pragma("GCC unroll 12") for (int j = 0; j < kChains; j++) a[j] = FMA(a[j], b, c); \
      }                                                                                \
      iters += 1000000;                                                                \
      elapsed = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count(); \
    } while (elapsed < seconds);                                                       \
    alignas(64) float lanes[LANES];                                                    \
    float sum = 0;                                                                     \
    for (int i = 0; i < kChains; i++) {                                                \
      STORE(lanes, a[i]);                                                              \
      for (int l = 0; l < LANES; l++) sum += lanes[l];                                 \
    }                                                                                  \
    report(iters, elapsed, LANES, sum);                                                \
  }

MLXR_FMA_PEAK(run_avx512, "avx512f", __m512, _mm512_set1_ps, _mm512_fmadd_ps, _mm512_store_ps, 16)
MLXR_FMA_PEAK(run_avx2, "avx2,fma", __m256, _mm256_set1_ps, _mm256_fmadd_ps, _mm256_store_ps, 8)

}  // namespace

int main(int argc, char** argv) {
  const double seconds = argc > 1 ? std::atof(argv[1]) : 2.0;
  __builtin_cpu_init();
  if (__builtin_cpu_supports("avx512f")) run_avx512(seconds);
  if (__builtin_cpu_supports("avx2") && __builtin_cpu_supports("fma")) run_avx2(seconds);
  return 0;
}
