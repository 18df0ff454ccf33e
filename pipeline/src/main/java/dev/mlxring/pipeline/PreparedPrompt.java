package dev.mlxring.pipeline;

/**
 * prep-stage's output: the prompt's token ids and where its stable prefix ends (the part a
 * prefix cache may share across turns; equal to the length when unknown).
 *
 * @param chatTemplated whether the ids are chat messages rendered by the model's chat template
 *     (with the generation prompt). Only such a prompt can leave a reasoning block open for the
 *     output, as mlx_lm.server's {@code _tokenize} decides for chat requests only.
 */
public record PreparedPrompt(int[] tokenIds, int stablePrefixLength, boolean chatTemplated) {

    /** A prompt that is not a chat-template rendering (plain text or token ids). */
    public PreparedPrompt(int[] tokenIds, int stablePrefixLength) {
        this(tokenIds, stablePrefixLength, false);
    }

    public PreparedPrompt {
        tokenIds = tokenIds.clone();
        if (stablePrefixLength < 0 || stablePrefixLength > tokenIds.length) {
            throw new IllegalArgumentException("stablePrefixLength " + stablePrefixLength + " outside [0, "
                    + tokenIds.length + "]");
        }
    }

    public int length() {
        return tokenIds.length;
    }
}
