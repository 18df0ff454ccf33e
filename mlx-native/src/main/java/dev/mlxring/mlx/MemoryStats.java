package dev.mlxring.mlx;

/** MLX allocator statistics in bytes: live arrays, high-water mark, and freed-but-cached buffers. */
public record MemoryStats(long activeBytes, long peakBytes, long cacheBytes) {}
