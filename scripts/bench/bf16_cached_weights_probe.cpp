// A probe, not engine code: what the exact bfloat16 path would cost if it kept every quantized
// weight dequantized, w = T(T(scale * q) + bias) stored as bfloat16 (4x the 4-bit weights' memory,
// as much as the unquantized model), so that per weight only MLX's last two roundings remain:
//     t = T(x * w); sum = T(sum + t)
// (the exact kernel now also computes the first two per weight: 26 vector operations per 16
// weights against 14 here). The question it answers for issue 9's 50x goal: how fast can one
// forward pass's matmuls of SmolLM2-135M's shape (qwen3-bench-q4-135m) go that way on this
// machine? Lanes across N (two 16-lane tiles), weights laid out [N/32][K][32], rows split over
// the threads, a spin barrier after every matmul (as the shim's pool), weights cold (269 MB, far
// above the L3 share). AVX-512 only.
//
//   c++ -O2 -march=native -pthread scripts/bench/bf16_cached_weights_probe.cpp -o build/bench/bf16_probe
//   build/bench/bf16_probe THREADS PREFETCH_ELEMENTS   # e.g. 1 0, 2 0, 2 2048
#include <immintrin.h>

#include <atomic>
#include <chrono>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <thread>
#include <vector>

namespace {

// MLX's bfloat16 rounding (integer round-to-nearest-even), as the shim's kernels do it.
inline __m512 round_bf16(__m512 v) {
  __m512i u = _mm512_castps_si512(v);
  __m512i lsb = _mm512_and_si512(_mm512_srli_epi32(u, 16), _mm512_set1_epi32(1));
  __m512i r = _mm512_add_epi32(_mm512_add_epi32(u, lsb), _mm512_set1_epi32(0x7fff));
  return _mm512_castsi512_ps(_mm512_and_si512(r, _mm512_set1_epi32(int(0xffff0000u))));
}

inline __m512 load_bf16(const uint16_t* p) {
  return _mm512_castsi512_ps(_mm512_slli_epi32(_mm512_cvtepu16_epi32(_mm256_loadu_si256((const __m256i*)p)), 16));
}

void rows(const uint16_t* w, const float* x, float* out, int n0, int n1, int K, int prefetch) {
  for (int n = n0; n < n1; n += 32) {
    const uint16_t* wb = w + size_t(n) * K;
    __m512 a0 = _mm512_setzero_ps(), a1 = _mm512_setzero_ps();
    for (int k = 0; k < K; k++) {
      if (prefetch > 0) _mm_prefetch((const char*)(wb + k * 32 + prefetch), _MM_HINT_T0);
      __m512 xk = _mm512_set1_ps(x[k]);
      a0 = round_bf16(_mm512_add_ps(round_bf16(_mm512_mul_ps(xk, load_bf16(wb + k * 32))), a0));
      a1 = round_bf16(_mm512_add_ps(round_bf16(_mm512_mul_ps(xk, load_bf16(wb + k * 32 + 16))), a1));
    }
    _mm512_storeu_ps(out + n, a0);
    _mm512_storeu_ps(out + n + 16, a1);
  }
}

struct Shape {
  int N, K, count;
};

}  // namespace

int main(int argc, char** argv) {
  int threads = argc > 1 ? std::atoi(argv[1]) : 1;
  int prefetch = argc > 2 ? std::atoi(argv[2]) : 0;
  // One decode step's matmuls: 30 layers of q, o (576x576), k, v (192x576), gate, up (1536x576),
  // down (576x1536), and the tied head (49152x576).
  const Shape shapes[] = {{576, 576, 60}, {192, 576, 60}, {1536, 576, 60}, {576, 1536, 30}, {49152, 576, 1}};
  std::vector<std::vector<uint16_t>> weights;
  std::vector<Shape> step;
  size_t bytes = 0;
  for (const Shape& s : shapes) {
    for (int c = 0; c < s.count; c++) {
      weights.emplace_back(size_t(s.N) * s.K);
      for (auto& v : weights.back()) v = uint16_t(0x3c00 + std::rand() % 512);
      bytes += size_t(s.N) * s.K * 2;
      step.push_back(s);
    }
  }
  std::vector<float> x(1536), out(49152);
  for (int i = 0; i < 1536; i++) x[i] = 1.0f / float(1 + i % 7);
  std::atomic<int> arrived{0};
  auto share = [&](int t) {
    for (size_t i = 0; i < step.size(); i++) {
      int blocks = step[i].N / 32;
      rows(weights[i].data(), x.data(), out.data(), t * blocks / threads * 32, (t + 1) * blocks / threads * 32,
           step[i].K, prefetch);
      arrived.fetch_add(1);
      while (arrived.load() < int((i + 1) * threads)) _mm_pause();
    }
  };
  double best = 1e300;
  for (int rep = 0; rep < 8; rep++) {
    arrived = 0;
    auto t0 = std::chrono::steady_clock::now();
    std::vector<std::thread> pool;
    for (int t = 1; t < threads; t++) pool.emplace_back(share, t);
    share(0);
    for (auto& th : pool) th.join();
    double ms = std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - t0).count();
    best = ms < best ? ms : best;
  }
  std::printf("threads %d, prefetch %d elements: one forward pass's matmuls %.2f ms (best of 8), %.0f MB of "
              "bfloat16 weights, %.1f GB/s\n", threads, prefetch, best, bytes / 1e6, bytes / best / 1e6);
}
