package dev.mlxring.bench;

import java.util.function.IntConsumer;

/**
 * Sends one benchmark request and times it: over HTTP ({@link StreamingClient}) or in-process
 * (an embedded engine, {@code bench engine}). Thread-safe; never throws for a request that
 * failed (the {@link RequestRecord} carries its {@link ErrorClass}).
 */
@FunctionalInterface
public interface RequestSender {
    /**
     * Sends {@code prompt} to {@code target} as request {@code index}; {@code onText} is told the
     * number of text events so far each time one arrives.
     */
    RequestRecord send(Target target, BenchPrompt prompt, int index, IntConsumer onText);
}
