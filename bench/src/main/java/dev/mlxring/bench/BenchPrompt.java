package dev.mlxring.bench;

import java.util.Objects;

/**
 * One request of a workload: an optional system prompt ({@code system}, null for none), the user
 * turn ({@code user}) and the output tokens asked for ({@code maxTokens}). {@code approxInputTokens}
 * is the workload's intended prompt length (the server's usage gives the real count).
 */
public record BenchPrompt(String system, String user, int maxTokens, int approxInputTokens) {
    public BenchPrompt {
        Objects.requireNonNull(user, "user");
        if (maxTokens < 1) {
            throw new IllegalArgumentException("maxTokens must be >= 1, got " + maxTokens);
        }
    }

    /** The whole prompt as one text (for the completions API): the system prompt, a blank line, the user turn. */
    public String asText() {
        return system == null ? user : system + "\n\n" + user;
    }
}
