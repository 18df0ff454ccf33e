package dev.mlxring.pipeline;

/**
 * exec-stage: turns sealed plans into runs. Every method is called on the one exec thread (the
 * only thread that touches MLX), including {@link #close()}.
 */
public interface Executor extends AutoCloseable {
    ExecutionRun open(ExecutionPlan plan) throws RequestException;

    @Override
    void close();
}
