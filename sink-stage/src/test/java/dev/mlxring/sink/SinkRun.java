package dev.mlxring.sink;

import dev.mlxring.pipeline.CommittedSpan;
import dev.mlxring.pipeline.ExecutionPlan;
import dev.mlxring.pipeline.PreparedPrompt;
import dev.mlxring.pipeline.SamplingParams;
import dev.mlxring.pipeline.TextSink;
import dev.mlxring.pipeline.ToolCall;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;

/** Drives a {@link TextSink} the way SinkHandler does and records what it delivered. */
final class SinkRun {
    /** Per committed token: text and reasoning of its span. */
    final List<String> texts = new ArrayList<>();

    final List<String> reasonings = new ArrayList<>();
    final List<List<ToolCall>> toolCalls = new ArrayList<>();
    /** Index of the token on which onToken returned true, or -1. */
    int stoppedAt = -1;
    /** The finish() span's text (null after a stop, where finish() delivers no text). */
    String finishText;

    String finishReasoning;
    /** The finish() span's tool calls (also after a stop). */
    List<ToolCall> finishToolCalls = List.of();
    /** What finish() returned: the session's finish reason. */
    String finishReason;
    /** The sink's {@code matchedStop()} after finish(). */
    String matchedStop;

    /** Whether finish() reported a stop-string match found in the flushed text. */
    boolean stoppedAtFinish;

    /** A plan for a chat prompt (rendered by a chat template) with these ids. */
    static ExecutionPlan plan(int[] prompt, List<String> stops) {
        return plan(new PreparedPrompt(prompt, prompt.length, true), stops);
    }

    static ExecutionPlan plan(PreparedPrompt prompt, List<String> stops) {
        return plan(prompt, stops, List.of());
    }

    static ExecutionPlan plan(PreparedPrompt prompt, List<String> stops, List<Map<String, Object>> tools) {
        return ExecutionPlan.builder()
                .requestId("test")
                .prompt(prompt)
                .sampling(SamplingParams.GREEDY)
                .maxTokens(1000)
                .stopStrings(stops)
                .tools(tools)
                .build();
    }

    /** Runs the ids through a chat-prompt session that ends at the token limit ("length"). */
    static SinkRun run(TextSink.Factory sinks, int[] prompt, List<String> stops, int... ids) {
        return run(sinks.open(plan(prompt, stops)), "length", ids);
    }

    static SinkRun run(TextSink sink, int... ids) {
        return run(sink, "length", ids);
    }

    /**
     * Drives the sink as SinkHandler does: tokens until one returns true, then finish() with
     * {@code finishReason}, or with "stop" after a stop.
     */
    static SinkRun run(TextSink sink, String finishReason, int... ids) {
        SinkRun r = new SinkRun();
        CommittedSpan span = new CommittedSpan(0);
        for (int i = 0; i < ids.length; i++) {
            span.clear();
            span.tokenId = ids[i];
            boolean stop = sink.onToken(ids[i], span);
            r.texts.add(span.text.toString());
            r.reasonings.add(span.reasoning.toString());
            r.toolCalls.add(List.copyOf(span.toolCalls));
            if (stop) {
                r.stoppedAt = i;
                span.clear();
                r.finishReason = sink.finish("stop", span);
                r.matchedStop = sink.matchedStop();
                r.finishToolCalls = List.copyOf(span.toolCalls);
                if (span.text.length() > 0 || span.reasoning.length() > 0) {
                    throw new AssertionError("finish() after a stop delivered text: " + span.text + span.reasoning);
                }
                return r;
            }
        }
        span.clear();
        r.finishReason = sink.finish(finishReason, span);
        r.matchedStop = sink.matchedStop();
        // At the token limit only a stop string revealed by the flush changes the reason.
        r.stoppedAtFinish = "length".equals(finishReason) && !"length".equals(r.finishReason);
        r.finishText = span.text.toString();
        r.finishReasoning = span.reasoning.toString();
        r.finishToolCalls = List.copyOf(span.toolCalls);
        return r;
    }

    /** Every tool call, in order: per token, then finish(). */
    List<ToolCall> allToolCalls() {
        List<ToolCall> all = new ArrayList<>();
        toolCalls.forEach(all::addAll);
        all.addAll(finishToolCalls);
        return all;
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
