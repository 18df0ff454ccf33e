package dev.mlxring.exec.shard;

import java.util.concurrent.CompletableFuture;
import java.util.function.Supplier;

/**
 * Runs a blocking test task on a thread of its own, not the common pool: on a 2-core machine the
 * pool's one worker would queue the next task behind a blocked one.
 */
final class OwnThread {
    private OwnThread() {}

    static <T> CompletableFuture<T> supply(Supplier<T> task) {
        CompletableFuture<T> f = new CompletableFuture<>();
        Thread t = new Thread(
                () -> {
                    try {
                        f.complete(task.get());
                    } catch (Throwable e) {
                        f.completeExceptionally(e);
                    }
                },
                "test-async");
        t.setDaemon(true);
        t.start();
        return f;
    }

    static CompletableFuture<Void> run(Runnable task) {
        return supply(() -> {
            task.run();
            return null;
        });
    }
}
