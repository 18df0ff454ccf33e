// A left-padded batch cache's rows rolled right along their positions, each by its own shift,
// wrapping: mlx-lm's dynamic_roll (take_along_axis over (arange(n) - shift) % n on axis 2) as
// the batch caches use it (RowPadding: a speculative round's per-row trim, a prefill chunk's
// right padding turned left). MLX's CPU gather moved a batch's whole cache, every layer's keys
// and values, at about 1 GB/s: 8 rows of SmolLM2 at 768 positions took ~260 ms a round, more
// than the round itself (docs/benchmarks.md). Here one CPU primitive takes its input's buffer
// when nothing else holds it (as MLX's SliceUpdate does) and moves only the rows that shift, in
// place: each (row, head) slab's last s positions set aside, the rest moved up by memmove, the
// set-aside ones written at the front. Otherwise (a snapshot or a view still reads the buffer)
// it writes a fresh buffer, each position from its source. Pure data movement, so the same bytes
// as the gather (RollRowsTest). Where the stream is not the CPU, the gather itself.

#include <cstring>
#include <memory>
#include <stdexcept>
#include <string>
#include <vector>

#include "mlx/mlx.h"
#include "mlxr_cpu_task.h"
#include "mlxr_guard.h"
#include "mlxr_kv_rows.h"

namespace mlxr::roll {

namespace {

namespace mx = mlx::core;

class RollRowsRight final : public CpuTaskPrimitive {
 public:
  RollRowsRight(mx::Stream stream, std::vector<int> shifts) : CpuTaskPrimitive(stream), shifts_(std::move(shifts)) {}

  const char* name() const override {
    return "RollRowsRight";
  }

  bool is_equivalent(const mx::Primitive& other) const override {
    auto* o = dynamic_cast<const RollRowsRight*>(&other);
    return o != nullptr && o->shifts_ == shifts_;
  }

 protected:
  Task task() const override {
    return [shifts = shifts_](const std::vector<mx::array>& in, mx::array& out) {
      const mx::array& a = in[0];
      const int rows = a.shape(0), heads = a.shape(1), n = a.shape(2), d = a.shape(3);
      const size_t item = a.itemsize(), position = size_t(d) * item;
      char* dst = out.data<char>();
      if (dst == a.data<char>()) {
        // In place (the input's row-major buffer): only the rows that shift move.
        std::vector<char> saved;
        for (int r = 0; r < rows; r++) {
          const int s = ((shifts[r] % n) + n) % n;
          if (s == 0) continue;
          saved.resize(size_t(s) * position);
          for (int h = 0; h < heads; h++) {
            char* slab = dst + (size_t(r) * heads + h) * n * position;
            std::memcpy(saved.data(), slab + size_t(n - s) * position, size_t(s) * position);
            std::memmove(slab + size_t(s) * position, slab, size_t(n - s) * position);
            std::memcpy(slab, saved.data(), size_t(s) * position);
          }
        }
        return;
      }
      // A fresh buffer: position j of each slab from position (j - s) mod n of the input, by its
      // strides (a view's too).
      const auto& st = a.strides();
      const char* src = a.data<char>();
      for (int r = 0; r < rows; r++) {
        const int s = ((shifts[r] % n) + n) % n;
        for (int h = 0; h < heads; h++) {
          char* slab = dst + (size_t(r) * heads + h) * n * position;
          const char* from = src + (int64_t(r) * st[0] + int64_t(h) * st[1]) * int64_t(item);
          for (int j = 0; j < n; j++) {
            const int k = j >= s ? j - s : j - s + n;
            copy_position(slab + size_t(j) * position, from + int64_t(k) * st[2] * int64_t(item), st[3], d, item);
          }
        }
      }
    };
  }

  // The input's buffer when nothing else holds it and it is row-major and whole.
  void allocate(const std::vector<mx::array>& inputs, mx::array& out) override {
    const mx::array& in = inputs[0];
    if (in.is_donatable() && in.flags().row_contiguous && in.data_size() == in.size()) {
      out.copy_shared_buffer(in);
    } else {
      out.set_data(mx::allocator::malloc(out.nbytes()));
    }
  }

 private:
  std::vector<int> shifts_;
};

}  // namespace

}  // namespace mlxr::roll

extern "C" {

// a [B, H, n, D] with row r's positions rolled right by shifts[r] (rows entries), wrapping:
// take_along_axis(a, (arange(n) - shift[r]) % n, 2), the same bytes.
mlxr_array mlxr_roll_rows_right(mlxr_array a, const int32_t* shifts, int rows) {
  namespace mx = mlx::core;
  return mlxr::guard_array([&]() -> mx::array {
    const auto& x = *static_cast<mx::array*>(a);
    if (x.ndim() != 4 || x.shape(0) != rows || x.shape(2) < 1) {
      throw std::invalid_argument("roll_rows_right: expected [" + std::to_string(rows) + ", H, n >= 1, D], got " +
                                  std::to_string(x.ndim()) + " dims");
    }
    std::vector<int> sh(shifts, shifts + rows);
    auto stream = mx::default_stream(mx::default_device());
    if (stream.device.type != mx::Device::DeviceType::cpu) {
      const int n = x.shape(2);
      std::vector<int32_t> index(size_t(rows) * n);
      for (int r = 0; r < rows; r++) {
        for (int j = 0; j < n; j++) index[size_t(r) * n + j] = ((j - sh[r]) % n + n) % n;
      }
      mx::array idx(index.begin(), mx::Shape{rows, 1, n, 1}, mx::int32);
      return mx::take_along_axis(x, idx, 2);
    }
    return mx::array(x.shape(), x.dtype(), std::make_shared<mlxr::roll::RollRowsRight>(stream, std::move(sh)), {x});
  });
}

}  // extern "C"
