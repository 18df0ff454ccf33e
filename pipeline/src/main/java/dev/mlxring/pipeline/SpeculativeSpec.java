package dev.mlxring.pipeline;

/**
 * One request's speculative-decoding choice (the {@code "speculative"} extension field), which
 * overrides the server's default ({@code serve --speculative}) for that request.
 *
 * @param method how the request speculates
 * @param numTokens the most tokens one verification round proposes; null = the server's
 *     {@code --num-draft-tokens}. Ignored with {@link Method#OFF}.
 */
public record SpeculativeSpec(Method method, Integer numTokens) {
    /** The most tokens a request may ask one round to propose. */
    public static final int MAX_NUM_TOKENS = 32;

    /** The request's proposal source. */
    public enum Method {
        /** Prompt lookup: n-grams of the row's own prompt and output. */
        NGRAM,
        /** The server's draft model ({@code --draft-model}). */
        DRAFT,
        /** No speculation: one token per forward. */
        OFF;

        /** The wire name: {@code ngram}, {@code draft} or {@code off}. */
        public String wireName() {
            return name().toLowerCase(java.util.Locale.ROOT);
        }
    }

    /** @throws IllegalArgumentException for a null method or {@code numTokens} outside 1..{@value #MAX_NUM_TOKENS} */
    public SpeculativeSpec {
        java.util.Objects.requireNonNull(method, "method");
        if (numTokens != null && (numTokens < 1 || numTokens > MAX_NUM_TOKENS)) {
            throw new IllegalArgumentException(
                    "speculative.num_tokens must be between 1 and " + MAX_NUM_TOKENS + ", got " + numTokens);
        }
    }
}
