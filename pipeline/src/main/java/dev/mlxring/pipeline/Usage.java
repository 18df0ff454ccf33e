package dev.mlxring.pipeline;

/**
 * Token accounting of one session, as OpenAI's {@code usage} reports it.
 *
 * @param speculative the proposed and accepted tokens when the session ran speculatively; null
 *     when it did not
 */
public record Usage(int promptTokens, int completionTokens, int cachedTokens, Speculative speculative) {
    public static final Usage NONE = new Usage(0, 0, 0);

    /** A session that did not speculate. */
    public Usage(int promptTokens, int completionTokens, int cachedTokens) {
        this(promptTokens, completionTokens, cachedTokens, null);
    }

    public int totalTokens() {
        return promptTokens + completionTokens;
    }

    /**
     * A speculative session's proposals: {@code proposed} tokens the model verified, of which it
     * {@code accepted} (committed as its own samples; the acceptance rate is their ratio).
     */
    public record Speculative(int proposed, int accepted) {
        /** @throws IllegalArgumentException unless {@code 0 <= accepted <= proposed} */
        public Speculative {
            if (accepted < 0 || accepted > proposed) {
                throw new IllegalArgumentException(
                        "accepted must be in [0, proposed], got " + accepted + " of " + proposed);
            }
        }
    }
}
