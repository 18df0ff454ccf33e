package dev.mlxring.pipeline;

import java.util.ArrayList;
import java.util.List;

/**
 * What the sink delivers for each committed token: the token, the text it completed (possibly
 * empty while a UTF-8 sequence or a stop string is undecided), reasoning text separated from
 * content, and the tool calls this token completed (parsed out of the text). A flyweight reused by the sink thread: valid only during the listener callback; copy
 * what you keep.
 */
public final class CommittedSpan {
    public long sequence;
    public int tokenId;
    public final StringBuilder text = new StringBuilder();
    public final StringBuilder reasoning = new StringBuilder();
    /** Tool calls completed by this token, in order; usually empty (no allocation then). */
    public final List<ToolCall> toolCalls = new ArrayList<>(0);
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
        toolCalls.clear();
        logprob = Float.NaN;
        topCount = 0;
    }
}
