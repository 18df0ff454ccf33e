// Per-primitive timing of one graph, for profiling only (dev.mlxring.perf.DecodeProfile --ops):
// evaluates the graph behind the given outputs one primitive at a time, in dependency order,
// each with its own mx::eval, and reports the wall time of each. This serializes what MLX would
// pipeline and adds one eval's dispatch per primitive (measure it with a trivial graph and
// subtract), so the per-op times are an attribution of a step's compute, not a faster or slower
// run of it. The engine never calls it.

#include <chrono>
#include <cstring>
#include <string>
#include <unordered_set>
#include <vector>

#include "mlx/primitives.h"
#include "mlxr_guard.h"

namespace mx = mlx::core;

namespace {

void shape_of(const mx::array& a, std::string& s) {
  s += '[';
  for (int d = 0; d < int(a.ndim()); d++) {
    if (d > 0) s += 'x';
    s += std::to_string(a.shape(d));
  }
  s += ']';
}

// Post-order over the not-yet-evaluated part of the graph: inputs before their consumers.
void order(const mx::array& a, std::unordered_set<std::uintptr_t>& seen, std::vector<mx::array>& out) {
  if (a.status() != mx::array::Status::unscheduled || !a.has_primitive()) return;
  if (!seen.insert(a.id()).second) return;
  for (auto& in : a.inputs()) order(in, seen, out);
  for (auto& sib : a.siblings()) seen.insert(sib.id());
  out.push_back(a);
}

}  // namespace

extern "C" {

// Writes one line per primitive, "name<TAB>output shape<TAB>input shapes<TAB>ns\n", into `out`
// (NUL-terminated, at most `cap` bytes). Returns the bytes needed (excluding the NUL; larger
// than cap - 1 when truncated), or -1 on error (mlxr_last_error).
long mlxr_profile_eval(const mlxr_array* arrays, int n, char* out, long cap) {
  std::string report;
  int rc = mlxr::guard_int([&] {
    std::unordered_set<std::uintptr_t> seen;
    std::vector<mx::array> steps;
    for (int i = 0; i < n; i++) order(*static_cast<mx::array*>(arrays[i]), seen, steps);
    for (auto& a : steps) {
      std::string line = a.primitive().name();
      line += '\t';
      shape_of(a, line);
      line += '\t';
      for (auto& in : a.inputs()) shape_of(in, line);
      auto t0 = std::chrono::steady_clock::now();
      mx::eval({a});
      auto ns = std::chrono::duration_cast<std::chrono::nanoseconds>(std::chrono::steady_clock::now() - t0).count();
      line += '\t';
      line += std::to_string(ns);
      line += '\n';
      report += line;
    }
  });
  if (rc != 0) return -1;
  if (cap > 0) {
    size_t k = std::min(report.size(), size_t(cap - 1));
    std::memcpy(out, report.data(), k);
    out[k] = '\0';
  }
  return long(report.size());
}

}  // extern "C"
