package dev.mlxring.ingress.http.openai;

import dev.mlxring.ingress.http.ApiError;
import dev.mlxring.ingress.http.ExchangeWriter;
import dev.mlxring.pipeline.CommittedSpan;
import dev.mlxring.pipeline.GenerationListener;
import dev.mlxring.pipeline.Lifecycle;
import dev.mlxring.pipeline.Outcome;
import dev.mlxring.pipeline.Session;
import dev.mlxring.pipeline.ToolCall;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.List;

/**
 * Delivers one session to its OpenAI chat/completions client. Streaming: each committed span
 * becomes one SSE chunk written through the {@link ExchangeWriter} (which returns its credit when
 * the write completes). Non-streaming: spans are collected and answered as one JSON body. Errors
 * before the first byte answer with their HTTP status and OpenAI's error shape.
 *
 * <p>Threads: callbacks come from the sink thread; the writer handles the IO thread's side.
 */
final class CompletionResponder implements GenerationListener {
    private static final String DONE = "data: [DONE]\n\n";

    private final ExchangeWriter out;
    private final OpenAiRequest req;
    private final OpenAiFrames frames;

    // Non-streaming accumulation (sink thread only).
    private final StringBuilder text = new StringBuilder();
    private final StringBuilder reasoning = new StringBuilder();
    private final List<ToolCall> toolCalls = new ArrayList<>(0);
    private final List<OpenAiFrames.LogprobEntry> logprobs;

    CompletionResponder(ExchangeWriter out, OpenAiRequest req, OpenAiFrames frames) {
        this.out = out;
        this.req = req;
        this.frames = frames;
        this.logprobs = req.request().logprobs() ? new ArrayList<>() : null;
    }

    @Override
    public boolean autoRelease() {
        return !req.stream();
    }

    @Override
    public void onCommitted(Session s, CommittedSpan span) {
        out.attach(s);
        if (span.tokenId >= 0) {
            out.tokenCommitted();
        }
        OpenAiFrames.LogprobEntry lp = null;
        if (req.request().logprobs() && span.tokenId >= 0 && !Float.isNaN(span.logprob)) {
            lp = new OpenAiFrames.LogprobEntry(
                    span.tokenId,
                    span.logprob,
                    Arrays.copyOf(span.topIds, span.topCount),
                    Arrays.copyOf(span.topLogprobs, span.topCount));
        }
        if (!req.stream()) {
            text.append(span.text);
            reasoning.append(span.reasoning);
            toolCalls.addAll(span.toolCalls);
            if (lp != null) {
                logprobs.add(lp);
            }
            return;
        }
        out.startEventStream();
        int credit = span.tokenId >= 0 ? 1 : 0;
        if (span.text.length() == 0 && span.reasoning.length() == 0 && span.toolCalls.isEmpty() && lp == null) {
            out.release(credit);
            return;
        }
        out.event(sse(frames.chunk(span.text, span.reasoning, span.toolCalls, lp, null)), credit);
    }

    @Override
    public void onComplete(Session s, Outcome outcome) {
        out.attach(s);
        out.account(outcome);
        if (outcome.state() == Lifecycle.FAILED) {
            out.error(out.failure(outcome), DONE);
            return;
        }
        if (outcome.state() == Lifecycle.CANCELLED && !req.stream()) {
            out.error(new ApiError(499, "cancelled", outcome.message(), null, null), DONE);
            return;
        }
        String reason = outcome.state() == Lifecycle.COMPLETED ? outcome.finishReason() : "stop";
        if (!req.stream()) {
            out.json(
                    200,
                    frames.complete(
                            text.toString(), reasoning.toString(), toolCalls, logprobs, reason, outcome.usage()));
            return;
        }
        out.startEventStream();
        out.event(sse(frames.chunk("", "", List.of(), null, reason)), 0);
        if (req.includeUsage()) {
            out.event(sse(frames.usageChunk(outcome.usage())), 0);
        }
        out.end(DONE);
    }

    private static String sse(String json) {
        return "data: " + json + "\n\n";
    }
}
