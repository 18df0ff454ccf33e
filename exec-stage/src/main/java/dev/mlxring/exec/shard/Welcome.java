package dev.mlxring.exec.shard;

import dev.mlxring.mlx.CpuKernels;
import java.io.DataInputStream;
import java.io.DataOutputStream;
import java.io.IOException;

/**
 * What rank 0 tells every other rank at connect: the settings that change the op graph or the
 * random stream, so every rank builds the same executor whatever flags it was started with.
 *
 * @param engineSeed the seed of the engine generator unseeded requests draw from (rank 0's clock)
 * @param prefillStepSize {@code --prefill-step-size}
 * @param maxKvSize {@code --max-kv-size} (0 = none)
 * @param cpuKernels {@code --cpu-kernels}
 */
public record Welcome(long engineSeed, int prefillStepSize, int maxKvSize, CpuKernels cpuKernels) {
    void write(DataOutputStream out) throws IOException {
        out.writeLong(engineSeed);
        out.writeInt(prefillStepSize);
        out.writeInt(maxKvSize);
        out.writeUTF(cpuKernels.name());
    }

    static Welcome read(DataInputStream in) throws IOException {
        return new Welcome(in.readLong(), in.readInt(), in.readInt(), CpuKernels.valueOf(in.readUTF()));
    }
}
