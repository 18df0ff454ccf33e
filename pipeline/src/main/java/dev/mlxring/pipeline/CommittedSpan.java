package dev.mlxring.pipeline;

import java.util.ArrayList;
import java.util.List;

/**
 * What the sink delivers for each committed token: the token, the text it completed (possibly
 * empty while a UTF-8 sequence or a stop string is undecided), reasoning text separated from
 * content, and the tool calls this token completed (parsed out of the text). A flyweight reused
 * by the sink thread: valid only during the listener callback; copy what you keep.
 *
 * <p>The final span: after a session's last token, one more span with no token may follow, just
 * before {@link GenerationListener#onComplete}: {@link #tokenId} {@code == -1}, {@link #logprob}
 * NaN, {@link #topCount} 0, carrying what the sink held back until the end (text flushed at the
 * token limit, a tool call left open). It comes only when it carries text, reasoning or tool
 * calls, and only for a session that completed.
 */
public final class CommittedSpan {
    /** This span's place among its session's spans: 0, 1, 2, ... */
    public long sequence;
    /** The committed token's id; -1 in the final span, which carries no token (see the class comment). */
    public int tokenId;

    public final StringBuilder text = new StringBuilder();
    public final StringBuilder reasoning = new StringBuilder();
    /** Tool calls completed by this token, in order; usually empty (no allocation then). */
    public final List<ToolCall> toolCalls = new ArrayList<>(0);
    /** The token's log-probability when the request asked for logprobs; NaN otherwise and in the final span. */
    public float logprob = Float.NaN;

    public final int[] topIds;
    public final float[] topLogprobs;
    public int topCount;
    /**
     * When exec published this span's token to the token ring, and when the sink took it from
     * there ({@link System#nanoTime()}); 0 in the final span. What a host measures the pipeline's
     * per-token hand-offs with: exec → sink is the token ring, sink → its listener call the text
     * sink's decoding.
     */
    public long committedNs;

    public long sinkNs;

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
        committedNs = 0;
        sinkNs = 0;
    }
}
