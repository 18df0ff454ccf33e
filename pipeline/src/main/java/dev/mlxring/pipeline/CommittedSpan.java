package dev.mlxring.pipeline;

/**
 * What the sink delivers for each committed token: the token, the text it completed (possibly
 * empty while a UTF-8 sequence or a stop string is undecided) and reasoning text separated from
 * content. A flyweight reused by the sink thread: valid only during the listener callback; copy
 * what you keep.
 */
public final class CommittedSpan {
    public long sequence;
    public int tokenId;
    public final StringBuilder text = new StringBuilder();
    public final StringBuilder reasoning = new StringBuilder();
    public float logprob = Float.NaN;
    public final int[] topIds;
    public final float[] topLogprobs;
    public int topCount;

    public CommittedSpan(int maxTopLogprobs) {
        topIds = new int[maxTopLogprobs];
        topLogprobs = new float[maxTopLogprobs];
    }

    public void clear() {
        tokenId = -1;
        text.setLength(0);
        reasoning.setLength(0);
        logprob = Float.NaN;
        topCount = 0;
    }
}
