package dev.mlxring.mlx;

import java.lang.foreign.FunctionDescriptor;
import java.lang.foreign.SymbolLookup;
import java.lang.invoke.MethodHandle;
import java.util.concurrent.TimeUnit;

/**
 * Waits at JVM shutdown for the MLX work still queued on any stream, so the process never exits
 * with a task running. MLX leaks its scheduler on purpose: its stream threads outlive
 * {@code exit()}'s static destructors, and a task still queued then (the step generate_step
 * evaluates ahead and never reads, a collective's sends) runs against a destroyed allocator cache,
 * ring group or kernel pool. That corrupted the heap of a rank that had just returned from
 * {@code main} ({@code malloc_consolidate(): unaligned fastbin chunk detected}, exit code -6).
 *
 * <p>Installed once, when the shim is loaded, as a shutdown hook: it runs when the last
 * non-daemon thread ends, on {@code System.exit} and on SIGTERM / SIGINT. The wait runs on a
 * daemon thread and is bounded by {@link #TIMEOUT_NS}: a collective waiting on a peer that
 * stopped answering must not keep the process from exiting. An owner that stops using MLX before
 * the JVM ends (the engine's exec stage) drains its own stream itself; this is the floor under
 * every exit path, the CLI's and the tests' launches included.
 */
final class ExitDrain {
    /** How long shutdown waits for MLX's streams before it lets the process exit anyway. */
    static final long TIMEOUT_NS = TimeUnit.SECONDS.toNanos(10);

    private ExitDrain() {}

    static void install(SymbolLookup lookup) {
        // Resolved now: a shutdown hook should not be the first to initialize a class.
        MethodHandle synchronizeAll =
                NativeLibrary.handle(lookup, "mlxr_synchronize_all", FunctionDescriptor.of(NativeLibrary.INT));
        Runtime.getRuntime().addShutdownHook(new Thread(() -> drain(synchronizeAll), "mlxring-exit-drain"));
    }

    private static void drain(MethodHandle synchronizeAll) {
        Thread waiter = Thread.ofPlatform()
                .daemon()
                .name("mlxring-exit-drain-wait")
                .unstarted(() -> {
                    try {
                        // The count of streams that had failed before is ignored: their queues were still
                        // waited for, and each error reached its caller when it happened.
                        int ignored = (int) synchronizeAll.invokeExact();
                    } catch (Throwable t) {
                        System.err.println("mlx-ring: at exit, waiting for MLX's streams failed: " + t);
                    }
                });
        waiter.start();
        try {
            waiter.join(TimeUnit.NANOSECONDS.toMillis(TIMEOUT_NS));
        } catch (InterruptedException e) {
            Thread.currentThread().interrupt();
        }
        if (waiter.isAlive()) {
            System.err.println("mlx-ring: exiting with MLX work still running after "
                    + TimeUnit.NANOSECONDS.toSeconds(TIMEOUT_NS) + " s (a collective waiting on a lost peer?)");
        }
    }
}
