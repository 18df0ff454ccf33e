// The fast tier's batched decode attention alone (mlxr_fast_block.cpp's attend_chunk and
// merge_parts, the code a fused block runs between its rope and its o projection), over a
// decode step's rows: B rows of one new query each, SmolLM2-135M's shape (30 layers, 9 query
// heads, 3 kv heads, head size 64), each row over `positions` cached positions after its own
// left padding, the keys and values in the cache's dtype. The shim's translation unit is compiled
// into this program (its functions are internal to it), then linked with the shim for the pool
// and the kernels it calls.
//
// Prints the best of `iterations` steps (all layers) in milliseconds, the key and value bytes a
// step reads, and a hash of the outputs' bits. "cold": every layer has its own buffers, as in a
// served step where the weights' trip through the caches evicts them; "hot": every layer reads
// layer 0's buffers (what the arithmetic alone costs).
//
//   scripts/bench/fast_attention_bench.sh ROWS POSITIONS [f32|f16|bf16] [cold|hot] [iterations]
#include <algorithm>
#include <chrono>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <vector>

#include "../../mlx-native/src/main/c/mlxr_fast_block.cpp"

namespace fn = mlxr::fastnum;

int main(int argc, char** argv) {
  if (argc < 3) {
    std::fprintf(stderr, "usage: fast_attention_bench ROWS POSITIONS [f32|f16|bf16] [cold|hot] [iterations]\n");
    return 2;
  }
  const int B = std::atoi(argv[1]);
  const int positions = std::atoi(argv[2]);
  const std::string dtype = argc > 3 ? argv[3] : "f32";
  const bool hot = argc > 4 && std::strcmp(argv[4], "hot") == 0;
  const int iterations = argc > 5 ? std::atoi(argv[5]) : 20;
  if (B < 1 || positions < 1 || iterations < 1 || (dtype != "f32" && dtype != "f16" && dtype != "bf16")) {
    std::fprintf(stderr, "rows, positions and iterations must be positive; dtype f32, f16 or bf16\n");
    return 2;
  }
  const fn::Dt dt = dtype == "f32" ? fn::Dt::F32 : dtype == "f16" ? fn::Dt::F16 : fn::Dt::BF16;
  const size_t es = fn::dt_size(dt);
  constexpr int layers = 30, H = 9, Hkv = 3, D = 64;
  const int max_pad = 40;
  const int capacity = (positions + max_pad + 255) / 256 * 256;

  mlxr::block::BlockSpec s{};
  s.heads = H;
  s.kv_heads = Hkv;
  s.head_dim = D;
  s.attn_scale = 0.125f;
  s.left_padding.resize(B);
  for (int b = 0; b < B; b++) s.left_padding[b] = (b * 7) % max_pad;
  const int offset = positions + max_pad - 1;  // the shared index: row b holds positions - pad_b + max_pad

  // Values in [-0.5, 0.5), written in the cache's dtype.
  const size_t per_layer = size_t(B) * Hkv * capacity * D;
  std::vector<std::vector<char>> keys(hot ? 1 : layers), values(hot ? 1 : layers);
  std::vector<float> fill(per_layer);
  for (size_t l = 0; l < keys.size(); l++) {
    keys[l].resize(per_layer * es);
    values[l].resize(per_layer * es);
    for (size_t i = 0; i < per_layer; i++) fill[i] = float((i * 2654435761u + l) % 1000) / 1000.f - 0.5f;
    fn::narrow(fill.data(), dt, keys[l].data(), per_layer);
    for (size_t i = 0; i < per_layer; i++) fill[i] = float((i * 40503u + 7 * l) % 1000) / 1000.f - 0.5f;
    fn::narrow(fill.data(), dt, values[l].data(), per_layer);
  }
  std::vector<float> q(size_t(B) * H * D), out(size_t(B) * H * D);
  for (size_t i = 0; i < q.size(); i++) q[i] = float(i % 97) / 97.f - 0.5f;
  const int min_pad = *std::min_element(s.left_padding.begin(), s.left_padding.end());
  const int ranges = fn::attention_ranges(B, Hkv, offset + 1 - min_pad);
  std::vector<float> parts(size_t(B) * H * ranges * (D + 2));

  double best = 1e30;
  for (int it = 0; it < iterations; it++) {
    const auto t0 = std::chrono::steady_clock::now();
    for (int l = 0; l < layers; l++) {
      const size_t at = hot ? 0 : size_t(l);
      fn::Attention a{&s, B, 1, offset, capacity, ranges, 0, s.left_padding.data(), q.data(),
                      keys[at].data(), values[at].data(), dt,     parts.data(), out.data()};
      mlxr::qmm::parallel_chunks(B * Hkv * ranges, fn::attend_chunk, &a);
      fn::merge_parts(a);
    }
    best = std::min(best, std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - t0).count());
  }
  size_t read = 0;
  for (int b = 0; b < B; b++) read += size_t(offset + 1 - s.left_padding[b]) * Hkv * D * es * 2;
  uint64_t hash = 1469598103934665603ull;
  for (float x : out) {
    uint32_t u;
    std::memcpy(&u, &x, 4);
    hash = (hash ^ u) * 1099511628211ull;
  }
  std::printf("rows %d, positions %d..%d, %s, %s: %.2f ms per step (%d layers), %.1f MB of keys and values read, "
              "%.1f GB/s; outputs %016llx\n",
              B, positions, positions + max_pad - 1, dtype.c_str(), hot ? "hot" : "cold", best, layers,
              read * double(layers) / 1e6, read * double(layers) / best / 1e6, static_cast<unsigned long long>(hash));
  return 0;
}
