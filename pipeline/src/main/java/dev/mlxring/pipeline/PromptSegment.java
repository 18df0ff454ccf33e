package dev.mlxring.pipeline;

/**
 * One piece of a prompt as mlx_lm.server's {@code _tokenize} splits a chat prompt: the system
 * prompt, the conversation up to the generation prompt, and a short tail holding a thinking start
 * marker. A batched row stops its prefill chunks at every boundary, and the prefix cache takes a
 * snapshot there with the segment's {@link Kind} as its cache type (which orders eviction).
 *
 * @param length token ids in the segment (at least one)
 */
public record PromptSegment(int length, Kind kind) {
    /** mlx-lm's {@code cache_type} names: {@code "system"}, {@code "user"}, {@code "assistant"}. */
    public enum Kind {
        SYSTEM,
        USER,
        ASSISTANT;

        /** The name mlx-lm gives the type. */
        public String mlxName() {
            return name().toLowerCase(java.util.Locale.ROOT);
        }
    }

    public PromptSegment {
        if (length <= 0) {
            throw new IllegalArgumentException("a prompt segment holds at least one token, got " + length);
        }
        java.util.Objects.requireNonNull(kind, "kind");
    }
}
