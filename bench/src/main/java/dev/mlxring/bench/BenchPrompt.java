package dev.mlxring.bench;

import java.util.List;
import java.util.Objects;

/**
 * One request of a workload: an optional system prompt ({@code system}, null for none), the user
 * turn ({@code user}) and the output tokens asked for ({@code maxTokens}). {@code approxInputTokens}
 * is the workload's intended prompt length (the server's usage gives the real count).
 *
 * <p>In a multi-turn conversation ({@code --workload multi-turn}) the request is turn
 * {@code turn} (from 1) of its conversation, and {@code history} holds the conversation's earlier
 * turns, each user message with the answer the server actually gave to it, oldest first. The
 * workload leaves {@code history} empty; the runner fills it in ({@link #withHistory}) as the
 * answers arrive. A single-turn request is turn 1 with no history.
 */
public record BenchPrompt(
        String system, String user, int maxTokens, int approxInputTokens, int turn, List<Exchange> history) {
    /** One earlier turn of a conversation: the user's message and the server's answer to it. */
    public record Exchange(String user, String assistant) {
        public Exchange {
            Objects.requireNonNull(user, "user");
            Objects.requireNonNull(assistant, "assistant");
        }
    }

    public BenchPrompt {
        Objects.requireNonNull(user, "user");
        history = List.copyOf(history);
        if (maxTokens < 1) {
            throw new IllegalArgumentException("maxTokens must be >= 1, got " + maxTokens);
        }
        if (turn < 1) {
            throw new IllegalArgumentException("turn counts from 1, got " + turn);
        }
    }

    /** A single-turn request: turn 1, no history. */
    public BenchPrompt(String system, String user, int maxTokens, int approxInputTokens) {
        this(system, user, maxTokens, approxInputTokens, 1, List.of());
    }

    /** This request carrying {@code earlier} as its conversation's earlier turns. */
    public BenchPrompt withHistory(List<Exchange> earlier) {
        return new BenchPrompt(system, user, maxTokens, approxInputTokens, turn, earlier);
    }

    /**
     * The whole prompt as one text (for the completions API): the system prompt, then each earlier
     * turn's user message and answer, then the user turn, separated by blank lines.
     */
    public String asText() {
        StringBuilder sb = new StringBuilder();
        if (system != null) {
            sb.append(system).append("\n\n");
        }
        for (Exchange e : history) {
            sb.append(e.user()).append("\n\n").append(e.assistant()).append("\n\n");
        }
        return sb.append(user).toString();
    }
}
