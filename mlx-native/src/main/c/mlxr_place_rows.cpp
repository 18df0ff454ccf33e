// Batch caches' rows placed in a fresh buffer along their positions: the output holds each
// source's rows in turn, each (row, head) slab zeros up to `left`, then the source's first
// `length` positions, then zeros to the buffer's `size`. It is what the batch caches' extend
// builds (mlx-lm's pad-and-concatenate, KvBuffers.joined) as zeros of the joined shape and one
// slice update per side: MLX filled the zeros, then the updates wrote the buffer again (a burst
// of 15 rows joining one row on the default model, 60 buffers of [16, 3, 287, 64] float32:
// 67-72 ms, against 36-41 ms here; JoinedRowsCost, docs/benchmarks.md). Here every slab
// is written once: memset, memcpy (or a strided copy for a view), memset, slabs spread over the
// kernels' pool. Pure data movement, the same bytes (PlaceRowsTest). Where the stream is not the
// CPU, the zeros and slice updates themselves.

#include <cstring>
#include <memory>
#include <stdexcept>
#include <string>
#include <vector>

#include "mlx/mlx.h"
#include "mlxr_cpu_task.h"
#include "mlxr_guard.h"
#include "mlxr_kv_rows.h"
#include "mlxr_qmm.h"

namespace mlxr::place {

namespace {

namespace mx = mlx::core;

struct Placement {
  std::vector<int> left, length;
  int size = 0;
};

// One source's rows' slabs, the unit the pool hands out.
struct Job {
  const std::vector<mx::array>* in;
  const Placement* at;
  char* out;
  std::vector<int> first_row;  // per source, its first output row
  int heads, size, rows;
  size_t position;  // bytes per position
};

void place_slab(void* ctx, int chunk) {
  const Job& j = *static_cast<const Job*>(ctx);
  const int row = chunk / j.heads, h = chunk % j.heads;
  int s = int(j.first_row.size()) - 1;
  while (j.first_row[s] > row) s--;
  const mx::array& x = (*j.in)[s];
  const int left = j.at->left[s], len = j.at->length[s];
  char* slab = j.out + (size_t(row) * j.heads + h) * size_t(j.size) * j.position;
  std::memset(slab, 0, size_t(left) * j.position);
  char* dst = slab + size_t(left) * j.position;
  if (len > 0) {
    const auto& st = x.strides();
    const size_t item = x.itemsize();
    const int d = x.shape(3);
    const char* from = x.data<char>() + (int64_t(row - j.first_row[s]) * st[0] + int64_t(h) * st[1]) * int64_t(item);
    if (st[3] == 1 && st[2] == d) {
      std::memcpy(dst, from, size_t(len) * j.position);
    } else {
      for (int p = 0; p < len; p++) {
        copy_position(dst + size_t(p) * j.position, from + int64_t(p) * st[2] * int64_t(item), st[3], d, item);
      }
    }
  }
  std::memset(dst + size_t(len) * j.position, 0, size_t(j.size - left - len) * j.position);
}

class PlaceRows final : public CpuTaskPrimitive {
 public:
  PlaceRows(mx::Stream stream, Placement at) : CpuTaskPrimitive(stream), at_(std::move(at)) {}

  const char* name() const override {
    return "PlaceRows";
  }

  bool is_equivalent(const mx::Primitive& other) const override {
    auto* o = dynamic_cast<const PlaceRows*>(&other);
    return o != nullptr && o->at_.left == at_.left && o->at_.length == at_.length && o->at_.size == at_.size;
  }

 protected:
  Task task() const override {
    return [at = at_](const std::vector<mx::array>& in, mx::array& out) {
      Job j{&in, &at, out.data<char>(), {}, out.shape(1), out.shape(2), out.shape(0),
            size_t(out.shape(3)) * out.itemsize()};
      int row = 0;
      for (const auto& x : in) {
        j.first_row.push_back(row);
        row += x.shape(0);
      }
      if (j.rows > 0 && j.heads > 0) qmm::parallel_chunks(j.rows * j.heads, place_slab, &j);
    };
  }

 private:
  Placement at_;
};

}  // namespace

}  // namespace mlxr::place

extern "C" {

// [sum of the sources' rows, H, size, D]: source s's rows in turn, each slab zeros before
// left[s], its first length[s] positions at left[s], zeros after (the sources share dtype, H, D).
mlxr_array mlxr_place_rows(const mlxr_array* sources, int n, const int32_t* left, const int32_t* length, int size) {
  namespace mx = mlx::core;
  return mlxr::guard_array([&]() -> mx::array {
    if (n < 1) throw std::invalid_argument("place_rows: no source");
    std::vector<mx::array> in;
    mlxr::place::Placement at;
    at.size = size;
    int rows = 0;
    for (int s = 0; s < n; s++) {
      const auto& x = *static_cast<mx::array*>(sources[s]);
      const auto& x0 = *static_cast<mx::array*>(sources[0]);
      if (x.ndim() != 4 || x.dtype() != x0.dtype() || x.shape(1) != x0.shape(1) || x.shape(3) != x0.shape(3)) {
        throw std::invalid_argument("place_rows: source " + std::to_string(s) +
                                    " is not [rows, H, n, D] of the first source's dtype, H and D");
      }
      if (left[s] < 0 || length[s] < 0 || length[s] > x.shape(2) || left[s] + length[s] > size) {
        throw std::invalid_argument("place_rows: source " + std::to_string(s) + " places " +
                                    std::to_string(length[s]) + " of its " + std::to_string(x.shape(2)) +
                                    " positions from " + std::to_string(left[s]) + " in " + std::to_string(size));
      }
      in.push_back(x);
      at.left.push_back(left[s]);
      at.length.push_back(length[s]);
      rows += x.shape(0);
    }
    const auto& x0 = in[0];
    mx::Shape shape{rows, x0.shape(1), size, x0.shape(3)};
    auto stream = mx::default_stream(mx::default_device());
    if (stream.device.type != mx::Device::DeviceType::cpu) {
      mx::array out = mx::zeros(shape, x0.dtype());
      int row = 0;
      for (int s = 0; s < n; s++) {
        const auto& x = in[s];
        if (at.length[s] > 0) {
          mx::array part = mx::slice(x, mx::Shape{0, 0, 0, 0}, mx::Shape{x.shape(0), x.shape(1), at.length[s], x.shape(3)});
          out = mx::slice_update(out, part, mx::Shape{row, 0, at.left[s], 0},
                                 mx::Shape{row + x.shape(0), x.shape(1), at.left[s] + at.length[s], x.shape(3)});
        }
        row += x.shape(0);
      }
      return out;
    }
    return mx::array(shape, x0.dtype(), std::make_shared<mlxr::place::PlaceRows>(stream, std::move(at)), std::move(in));
  });
}

}  // extern "C"
