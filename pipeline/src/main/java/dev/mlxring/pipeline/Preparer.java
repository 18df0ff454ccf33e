package dev.mlxring.pipeline;

/**
 * prep-stage: renders the prompt (chat template) and tokenizes it. Input: a request. Output: a
 * {@link PreparedPrompt}. Called concurrently from the sharded prep threads: implementations
 * must be thread-safe.
 */
@FunctionalInterface
public interface Preparer {
    PreparedPrompt prepare(GenerationRequest request) throws RequestException;
}
