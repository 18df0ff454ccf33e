package dev.mlxring.pipeline;

/**
 * exec-stage: turns sealed plans into runs. Every method is called on the one exec thread (the
 * only thread that touches MLX), including {@link #close()}.
 */
public interface Executor extends AutoCloseable {
    ExecutionRun open(ExecutionPlan plan) throws RequestException;

    /**
     * Continuous-batching mechanics for this executor's model, or null when it runs requests one
     * at a time only (the exec loop then stays serial). Called once, on the exec thread; the loop
     * owns and closes the batch.
     *
     * @param maxRows the most rows in flight at once ({@code --decode-concurrency})
     * @param maxPrefillRows the most rows reading their prompts at once ({@code --prompt-concurrency})
     */
    default ExecutionBatch openBatch(int maxRows, int maxPrefillRows) {
        return null;
    }

    /**
     * {@link #openBatch(int, int)} whose mechanics read a prompt that fits in one chunk ahead of
     * a long prompt's remaining chunks when {@code shortPromptsFirst}
     * ({@link EngineConfig#shortPromptsFirst()}). Mechanics without that choice ignore it.
     */
    default ExecutionBatch openBatch(int maxRows, int maxPrefillRows, boolean shortPromptsFirst) {
        return openBatch(maxRows, maxPrefillRows);
    }

    /**
     * Why this executor cannot run work at all now (e.g. a tensor-parallel group that lost a
     * rank), or null while it can. {@link Engine#health()} reports it, so the server answers
     * 503 instead of accepting requests that would fail. Any thread.
     */
    default String unavailableReason() {
        return null;
    }

    @Override
    void close();
}
