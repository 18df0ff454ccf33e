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

    static ExecutionPlan plan(int[] prompt, List<String> stops) {
        return new ExecutionPlan("test", new PreparedPrompt(prompt, prompt.length), null, 1000, new int[0],
                stops, false, 0);
    }

    static SinkRun run(TextSink.Factory sinks, int[] prompt, List<String> stops, int... ids) {
        return run(sinks.open(plan(prompt, stops)), ids);
    }

    static SinkRun run(TextSink sink, int... ids) {
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
        sink.finish(span);
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
