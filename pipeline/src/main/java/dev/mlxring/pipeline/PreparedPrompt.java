package dev.mlxring.pipeline;

import java.util.List;

/**
 * prep-stage's output: the prompt's token ids, where its stable prefix ends (the part a prefix
 * cache may share across turns; equal to the length when unknown) and its segments.
 *
 * @param chatTemplated whether the ids are chat messages rendered by the model's chat template
 *     (with the generation prompt). Only such a prompt can leave a reasoning block open for the
 *     output, as mlx_lm.server's {@code _tokenize} decides for chat requests only.
 * @param segments the prompt split as mlx_lm.server's {@code _tokenize} splits it (lengths summing
 *     to the prompt's); a prompt it does not split is one {@link PromptSegment.Kind#ASSISTANT}
 *     segment (none for an empty prompt)
 */
public record PreparedPrompt(
        int[] tokenIds, int stablePrefixLength, boolean chatTemplated, List<PromptSegment> segments) {

    /** A prompt that is not a chat-template rendering (plain text or token ids). */
    public PreparedPrompt(int[] tokenIds, int stablePrefixLength) {
        this(tokenIds, stablePrefixLength, false);
    }

    /** A prompt of one segment (mlx_lm.server's {@code [prompt], ["assistant"]}). */
    public PreparedPrompt(int[] tokenIds, int stablePrefixLength, boolean chatTemplated) {
        this(tokenIds, stablePrefixLength, chatTemplated, whole(tokenIds.length));
    }

    public PreparedPrompt {
        tokenIds = tokenIds.clone();
        if (stablePrefixLength < 0 || stablePrefixLength > tokenIds.length) {
            throw new IllegalArgumentException(
                    "stablePrefixLength " + stablePrefixLength + " outside [0, " + tokenIds.length + "]");
        }
        segments = List.copyOf(segments);
        long sum = 0;
        for (PromptSegment s : segments) {
            sum += s.length();
        }
        if (sum != tokenIds.length) {
            throw new IllegalArgumentException("segments hold " + sum + " tokens, the prompt " + tokenIds.length);
        }
    }

    /** One assistant segment over {@code length} tokens (none when empty). */
    public static List<PromptSegment> whole(int length) {
        return length == 0 ? List.of() : List.of(new PromptSegment(length, PromptSegment.Kind.ASSISTANT));
    }

    public int length() {
        return tokenIds.length;
    }
}
