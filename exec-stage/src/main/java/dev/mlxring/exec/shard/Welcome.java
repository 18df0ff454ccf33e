package dev.mlxring.exec.shard;

import dev.mlxring.mlx.CpuKernels;
import java.io.DataInputStream;
import java.io.DataOutputStream;
import java.io.IOException;

/**
 * What rank 0 tells every other rank at connect: the settings that change the op graph, the
 * random stream or the prefix cache's decisions, so every rank builds the same executor whatever
 * flags it was started with.
 *
 * @param engineSeed the seed of the engine generator unseeded requests draw from (rank 0's clock)
 * @param prefillStepSize {@code --prefill-step-size}
 * @param maxKvSize {@code --max-kv-size} (0 = none)
 * @param cpuKernels {@code --cpu-kernels}
 * @param promptCacheEntries the RAM prefix cache's {@code --prompt-cache-size} (0 = no prefix cache)
 * @param promptCacheBytes its {@code --prompt-cache-bytes} ({@link Long#MAX_VALUE} = no byte cap)
 */
public record Welcome(
        long engineSeed,
        int prefillStepSize,
        int maxKvSize,
        CpuKernels cpuKernels,
        int promptCacheEntries,
        long promptCacheBytes) {
    void write(DataOutputStream out) throws IOException {
        out.writeLong(engineSeed);
        out.writeInt(prefillStepSize);
        out.writeInt(maxKvSize);
        out.writeUTF(cpuKernels.name());
        out.writeInt(promptCacheEntries);
        out.writeLong(promptCacheBytes);
    }

    static Welcome read(DataInputStream in) throws IOException {
        return new Welcome(
                in.readLong(),
                in.readInt(),
                in.readInt(),
                CpuKernels.valueOf(in.readUTF()),
                in.readInt(),
                in.readLong());
    }
}
