package dev.mlxring.pipeline;

/**
 * prep-stage's output: the prompt's token ids and where its stable prefix ends (the part a
 * prefix cache may share across turns; equal to the length when unknown).
 */
public record PreparedPrompt(int[] tokenIds, int stablePrefixLength) {
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
