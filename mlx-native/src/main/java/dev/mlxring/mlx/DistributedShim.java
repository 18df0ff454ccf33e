package dev.mlxring.mlx;

import static dev.mlxring.mlx.NativeLibrary.ADDR;
import static dev.mlxring.mlx.NativeLibrary.INT;

import java.lang.foreign.FunctionDescriptor;
import java.lang.foreign.MemorySegment;
import java.lang.invoke.MethodHandle;

/**
 * Raw downcalls into {@code mlxr_distributed.cpp} (MLX distributed: init, the group, the
 * collectives), kept apart from {@link Shim} because only {@link Group} uses them. Same
 * conventions: a NULL handle or a negative int means "read {@link Shim#lastError()}".
 */
final class DistributedShim {
    private DistributedShim() {}

    private static final MethodHandle IS_AVAILABLE =
            NativeLibrary.handle("mlxr_distributed_is_available", FunctionDescriptor.of(INT, ADDR));
    private static final MethodHandle INIT =
            NativeLibrary.handle("mlxr_distributed_init", FunctionDescriptor.of(ADDR, ADDR, INT));
    private static final MethodHandle GROUP_FREE =
            NativeLibrary.handle("mlxr_group_free", FunctionDescriptor.ofVoid(ADDR));
    private static final MethodHandle GROUP_RANK =
            NativeLibrary.handle("mlxr_group_rank", FunctionDescriptor.of(INT, ADDR));
    private static final MethodHandle GROUP_SIZE =
            NativeLibrary.handle("mlxr_group_size", FunctionDescriptor.of(INT, ADDR));
    private static final MethodHandle ALL_SUM =
            NativeLibrary.handle("mlxr_all_sum", FunctionDescriptor.of(ADDR, ADDR, ADDR));
    private static final MethodHandle ALL_GATHER =
            NativeLibrary.handle("mlxr_all_gather", FunctionDescriptor.of(ADDR, ADDR, ADDR));
    private static final MethodHandle RING_ABORT_SOCKETS =
            NativeLibrary.handle("mlxr_ring_abort_sockets", FunctionDescriptor.of(INT, ADDR));

    static int isAvailable(MemorySegment backend) {
        try {
            return (int) IS_AVAILABLE.invokeExact(backend);
        } catch (Throwable t) {
            throw Shim.rethrow(t);
        }
    }

    static MemorySegment init(MemorySegment backend, int strict) {
        try {
            return (MemorySegment) INIT.invokeExact(backend, strict);
        } catch (Throwable t) {
            throw Shim.rethrow(t);
        }
    }

    static void groupFree(MemorySegment g) {
        try {
            GROUP_FREE.invokeExact(g);
        } catch (Throwable t) {
            throw Shim.rethrow(t);
        }
    }

    static int groupRank(MemorySegment g) {
        try {
            return (int) GROUP_RANK.invokeExact(g);
        } catch (Throwable t) {
            throw Shim.rethrow(t);
        }
    }

    static int groupSize(MemorySegment g) {
        try {
            return (int) GROUP_SIZE.invokeExact(g);
        } catch (Throwable t) {
            throw Shim.rethrow(t);
        }
    }

    static MemorySegment allSum(MemorySegment x, MemorySegment g) {
        try {
            return (MemorySegment) ALL_SUM.invokeExact(x, g);
        } catch (Throwable t) {
            throw Shim.rethrow(t);
        }
    }

    static MemorySegment allGather(MemorySegment x, MemorySegment g) {
        try {
            return (MemorySegment) ALL_GATHER.invokeExact(x, g);
        } catch (Throwable t) {
            throw Shim.rethrow(t);
        }
    }

    static int ringAbortSockets(MemorySegment endpoints) {
        try {
            return (int) RING_ABORT_SOCKETS.invokeExact(endpoints);
        } catch (Throwable t) {
            throw Shim.rethrow(t);
        }
    }
}
