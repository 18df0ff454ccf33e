package dev.mlxring.mlx;

import static dev.mlxring.mlx.NativeLibrary.ADDR;
import static dev.mlxring.mlx.NativeLibrary.INT;
import static dev.mlxring.mlx.NativeLibrary.LONG;

import java.lang.foreign.Arena;
import java.lang.foreign.FunctionDescriptor;
import java.lang.foreign.MemorySegment;
import java.lang.foreign.ValueLayout;
import java.lang.invoke.MethodHandle;
import java.util.List;

/**
 * Profiling only: the wall time the fast tier's fused blocks ({@link FusedDecoderBlock}, {@link
 * Numerics#FAST}) spent in each of their phases, summed over the blocks run since the last read.
 * The shim times them only when the process started with {@code MLXR_FAST_BLOCK_PHASES=1} in its
 * environment; the engine never reads them.
 */
public final class FastBlockPhases {
    /** The phases, in the order of {@link Reading#phaseNs}. */
    public static final List<String> NAMES =
            List.of("norm + q/k/v", "rope + cache write", "attention", "o proj", "norm + gate/up", "silu", "down");

    private static final MethodHandle READ =
            NativeLibrary.handle("mlxr_fast_block_phases", FunctionDescriptor.of(LONG, ADDR, INT));

    /**
     * @param blocks the blocks timed
     * @param phaseNs nanoseconds per phase, summed over those blocks (indices as {@link #NAMES})
     */
    public record Reading(long blocks, long[] phaseNs) {}

    private FastBlockPhases() {}

    /**
     * The times since the last read (then zeroed), or null when the process runs without {@code
     * MLXR_FAST_BLOCK_PHASES=1} (nothing is timed).
     */
    public static Reading read() {
        try (Arena a = Arena.ofConfined()) {
            MemorySegment ns = a.allocate(ValueLayout.JAVA_LONG, NAMES.size());
            long blocks = (long) READ.invokeExact(ns, NAMES.size());
            return blocks < 0 ? null : new Reading(blocks, ns.toArray(ValueLayout.JAVA_LONG));
        } catch (Throwable t) {
            throw Shim.rethrow(t);
        }
    }
}
