package dev.mlxring.pipeline;

/**
 * One request's execution inside exec-stage: owns its prompt position, sampler state, pending
 * device work and KV caches. {@link #advance()} runs exactly one safe work unit (a prefill chunk
 * or one decode step); between calls the exec loop checks cancellation, back-pressure and new
 * arrivals. {@link #close()} releases everything the run holds. Exec thread only.
 */
public interface ExecutionRun extends AutoCloseable {
    StepResult advance();

    int promptTokens();

    int completionTokens();

    /** Prompt tokens whose KV came from the prefix cache ({@code usage.prompt_tokens_details.cached_tokens}). */
    default int cachedTokens() {
        return 0;
    }

    /** The run's proposed and accepted tokens so far when it speculates ({@code usage.speculative}); null when not. */
    default Usage.Speculative speculative() {
        return null;
    }

    @Override
    void close();
}
