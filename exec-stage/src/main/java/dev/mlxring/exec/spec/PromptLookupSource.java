package dev.mlxring.exec.spec;

import java.util.Arrays;

/**
 * Prompt lookup: proposes the tokens that followed an earlier occurrence of the row's last
 * {@code n} tokens in its own prompt and output (vLLM's {@code ngram} proposer, the rule of
 * llama.cpp's prompt lookup). The match rule, exactly:
 * <ol>
 *   <li>for {@code n} from {@code maxN} down to {@code minN}: the suffix is the row's last
 *       {@code n} tokens (skipped while the row holds no more than {@code n} tokens);</li>
 *   <li>the match is the earliest start {@code i} with {@code tokens[i, i+n) == suffix} and
 *       {@code i + n < length} (an occurrence that ends before the last token, so at least one
 *       token follows it);</li>
 *   <li>the proposal is {@code tokens[i+n, min(i+n+maxTokens, length))}; the first {@code n}
 *       with a match wins; no match at any size proposes nothing.</li>
 * </ol>
 * The proposal never repeats a token past the end of the row (unlike vLLM's clamped index).
 * Deterministic, draws no random numbers, holds no model state.
 */
public final class PromptLookupSource implements DraftSource {
    private final int minN;
    private final int maxN;
    private int[] tokens = new int[0];
    private int length;
    private int[] lastProposal = new int[0];

    /**
     * @throws IllegalArgumentException unless {@code 1 <= minN <= maxN}
     */
    public PromptLookupSource(int minN, int maxN) {
        if (minN < 1 || maxN < minN) {
            throw new IllegalArgumentException(
                    "n-gram sizes must satisfy 1 <= min <= max, got min " + minN + " and max " + maxN);
        }
        this.minN = minN;
        this.maxN = maxN;
    }

    @Override
    public void start(int[] prompt) {
        tokens = Arrays.copyOf(prompt, Math.max(16, prompt.length * 2));
        length = prompt.length;
    }

    @Override
    public int[] propose(int maxTokens) {
        lastProposal = maxTokens <= 0 ? new int[0] : lookup(maxTokens);
        return lastProposal.clone();
    }

    private int[] lookup(int maxTokens) {
        for (int n = Math.min(maxN, length - 1); n >= minN; n--) {
            int suffix = length - n;
            for (int i = 0; i + n < length; i++) {
                if (Arrays.equals(tokens, i, i + n, tokens, suffix, length)) {
                    int from = i + n;
                    return Arrays.copyOfRange(tokens, from, Math.min(from + maxTokens, length));
                }
            }
        }
        return new int[0];
    }

    @Override
    public void accepted(int acceptedCount, int next) {
        if (acceptedCount < 0 || acceptedCount > lastProposal.length) {
            throw new IllegalArgumentException(
                    "accepted " + acceptedCount + " of a " + lastProposal.length + "-token proposal");
        }
        for (int i = 0; i < acceptedCount; i++) {
            append(lastProposal[i]);
        }
        append(next);
        lastProposal = new int[0];
    }

    private void append(int token) {
        if (length == tokens.length) {
            tokens = Arrays.copyOf(tokens, tokens.length * 2);
        }
        tokens[length++] = token;
    }

    /** A lookup in the row's own tokens: no forward. */
    @Override
    public boolean proposesFreely() {
        return true;
    }

    @Override
    public void close() {}
}
