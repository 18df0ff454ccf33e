// A run of bytes that a later piece of work will read, requested from memory a share at a time
// over the steps of the work before it: the kernels whose blocks read their weight rows as
// short streams, which the hardware's prefetchers do not follow, request the next block's (or,
// in fast-q8, the block their thread runs next) while this one computes. Spread so that the
// requests neither queue behind each other at a block's start nor arrive after it.
//
// Shared by the exact quantized kernels (mlxr_qmm_kernels.h, BlockRows: into L1), the native
// dense kernels (mlxr_dense_kernels.h: into L1) and fast-q8's (mlxr_fastq8_kernels.h through
// mlxr_fastnum_x86.h's block_ahead: into L2). Included inside each kernel file's anonymous
// namespace after its target pragma, with MLXR_INLINE defined. Requests change no result.

// kLocality: __builtin_prefetch's locality, 3 into L1 (T0), 2 into L2 (T1).
template <int kLocality>
struct SpreadPrefetch {
  const char* next = nullptr;  // the next 64-byte line to request
  const char* end = nullptr;
  int lines_per_step = 0;

  SpreadPrefetch() = default;

  // `bytes` from `at`, requested over `steps` calls of step() (nothing when at is null, bytes is
  // 0 or steps < 1).
  MLXR_INLINE SpreadPrefetch(const void* at, size_t bytes, int steps) {
    if (at == nullptr || bytes == 0 || steps < 1) return;
    next = static_cast<const char*>(at);
    end = next + bytes;
    lines_per_step = int(((bytes + 63) / 64 + size_t(steps) - 1) / size_t(steps));
  }

  // One step's share of the lines not yet requested.
  MLXR_INLINE void step() {
    for (int q = 0; q < lines_per_step && next < end; q++, next += 64) __builtin_prefetch(next, 0, kLocality);
  }
};
