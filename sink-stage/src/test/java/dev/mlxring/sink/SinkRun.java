package dev.mlxring.sink;

import dev.mlxring.pipeline.CommittedSpan;
import dev.mlxring.pipeline.ExecutionPlan;
import dev.mlxring.pipeline.PreparedPrompt;
import dev.mlxring.pipeline.TextSink;
import java.util.ArrayList;
import java.util.List;

/** Drives a {@link TextSink} the way SinkHandler does and records what it delivered. */
final class SinkRun {
    /** Per committed token: text and reasoning of its span. */
    final List<String> texts = new ArrayList<>();
    final List<String> reasonings = new ArrayList<>();
    /** Index of the token on which onToken returned true, or -1. */
    int stoppedAt = -1;
    /** The finish() span (null if finish was not called because of a stop). */
    String finishText;
    String finishReasoning;

    /** Whether finish() reported a stop-string match found in the flushed text. */
    boolean stoppedAtFinish;

    /** A plan for a chat prompt (rendered by a chat template) with these ids. */
    static ExecutionPlan plan(int[] prompt, List<String> stops) {
        return plan(new PreparedPrompt(prompt, prompt.length, true), stops);
    }

    static ExecutionPlan plan(PreparedPrompt prompt, List<String> stops) {
        return new ExecutionPlan("test", prompt, null, 1000, new int[0], stops, false, 0);
    }

    /** Runs the ids through a chat-prompt session that ends at the token limit ("length"). */
    static SinkRun run(TextSink.Factory sinks, int[] prompt, List<String> stops, int... ids) {
        return run(sinks.open(plan(prompt, stops)), "length", ids);
    }

    static SinkRun run(TextSink sink, int... ids) {
        return run(sink, "length", ids);
    }

    /** Drives the sink; if no stop string matches, finish(finishReason) ends it. */
    static SinkRun run(TextSink sink, String finishReason, int... ids) {
        SinkRun r = new SinkRun();
        CommittedSpan span = new CommittedSpan(0);
        for (int i = 0; i < ids.length; i++) {
            span.clear();
            span.tokenId = ids[i];
            boolean stop = sink.onToken(ids[i], span);
            r.texts.add(span.text.toString());
            r.reasonings.add(span.reasoning.toString());
            if (stop) {
                r.stoppedAt = i;
                return r;
            }
        }
        span.clear();
        r.stoppedAtFinish = sink.finish(finishReason, span);
        r.finishText = span.text.toString();
        r.finishReasoning = span.reasoning.toString();
        return r;
    }

    String text() {
        return String.join("", texts) + (finishText == null ? "" : finishText);
    }

    String reasoning() {
        return String.join("", reasonings) + (finishReasoning == null ? "" : finishReasoning);
    }

    boolean stopped() {
        return stoppedAt >= 0;
    }
}
