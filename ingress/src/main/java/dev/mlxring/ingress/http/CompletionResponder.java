package dev.mlxring.ingress.http;

import dev.mlxring.pipeline.CommittedSpan;
import dev.mlxring.pipeline.GenerationListener;
import dev.mlxring.pipeline.Lifecycle;
import dev.mlxring.pipeline.Outcome;
import dev.mlxring.pipeline.Session;
import dev.mlxring.pipeline.ToolCall;
import io.undertow.io.IoCallback;
import io.undertow.io.Sender;
import io.undertow.server.HttpServerExchange;
import io.undertow.util.Headers;
import java.io.IOException;
import java.nio.ByteBuffer;
import java.nio.charset.StandardCharsets;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.List;
import java.util.concurrent.ConcurrentLinkedQueue;
import java.util.concurrent.atomic.AtomicBoolean;

/**
 * Delivers one session to its HTTP client. Streaming: each committed span becomes one SSE
 * chunk; its credit returns to the engine only when the socket write completes, so a client
 * that stops reading pauses its row (and is cancelled after the idle deadline) instead of
 * buffering without bound. Non-streaming: spans are collected and answered as one JSON body.
 * Errors before the first byte answer with their HTTP status and OpenAI's error shape.
 *
 * <p>Threads: callbacks come from the sink thread; write completions from Undertow's IO thread.
 * {@code writing} serializes sends (Undertow's Sender allows one at a time).
 */
final class CompletionResponder implements GenerationListener, IoCallback {
    private static final org.slf4j.Logger LOG = org.slf4j.LoggerFactory.getLogger(CompletionResponder.class);
    private static final ByteBuffer DONE = ByteBuffer.wrap("data: [DONE]\n\n".getBytes(StandardCharsets.UTF_8));

    /** A queued write and how many span credits it returns on completion. */
    private record Pending(ByteBuffer buffer, int credits, boolean last) {}

    private final HttpServerExchange exchange;
    private final OpenAiRequest req;
    private final OpenAiFrames frames;
    private final ConcurrentLinkedQueue<Pending> queue = new ConcurrentLinkedQueue<>();
    private final AtomicBoolean writing = new AtomicBoolean();
    private volatile Session session;
    private boolean started;
    private final RequestRecord record;
    private final ServerMetrics metrics;

    // Non-streaming accumulation (sink thread only).
    private final StringBuilder text = new StringBuilder();
    private final StringBuilder reasoning = new StringBuilder();
    private final List<ToolCall> toolCalls = new ArrayList<>(0);
    private final List<OpenAiFrames.LogprobEntry> logprobs;

    CompletionResponder(HttpServerExchange exchange, OpenAiRequest req, OpenAiFrames frames, RequestRecord record,
            ServerMetrics metrics) {
        this.exchange = exchange;
        this.req = req;
        this.frames = frames;
        this.record = record;
        this.metrics = metrics;
        record.submitted = true;
        this.logprobs = req.request().logprobs() ? new ArrayList<>() : null;
    }

    void attach(Session s) {
        this.session = s;
    }

    @Override
    public boolean autoRelease() {
        return !req.stream();
    }

    @Override
    public void onCommitted(Session s, CommittedSpan span) {
        session = s;
        if (span.tokenId >= 0) {
            timeToken();
        }
        OpenAiFrames.LogprobEntry lp = null;
        if (req.request().logprobs() && span.tokenId >= 0 && !Float.isNaN(span.logprob)) {
            lp = new OpenAiFrames.LogprobEntry(span.tokenId, span.logprob,
                    Arrays.copyOf(span.topIds, span.topCount), Arrays.copyOf(span.topLogprobs, span.topCount));
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
        startStream();
        int credit = span.tokenId >= 0 ? 1 : 0;
        if (span.text.length() == 0 && span.reasoning.length() == 0 && span.toolCalls.isEmpty() && lp == null) {
            s.release(credit);
            return;
        }
        enqueue(sse(frames.chunk(span.text, span.reasoning, span.toolCalls, lp, null)), credit, false);
    }

    /** Sink thread, per generated token: TTFT once, then inter-token latency (allocation-free). */
    private void timeToken() {
        long now = System.nanoTime();
        if (record.lastTokenNs == 0) {
            record.firstTokenNs = now;
            metrics.timeToFirstToken(now - record.startNs);
        } else {
            metrics.interToken(now - record.lastTokenNs);
        }
        record.lastTokenNs = now;
    }

    /** Once per request, before its last write: what the access log and the token counters report. */
    private void account(Outcome outcome) {
        record.promptTokens = outcome.usage().promptTokens();
        record.completionTokens = outcome.usage().completionTokens();
        record.outcome = switch (outcome.state()) {
            case COMPLETED -> "completed:" + outcome.finishReason();
            case CANCELLED -> "cancelled";
            default -> "failed:" + outcome.errorType();
        };
        metrics.finished(outcome.state().name().toLowerCase(java.util.Locale.ROOT), record.promptTokens,
                record.completionTokens);
        if (outcome.state() == Lifecycle.FAILED && outcome.errorType() == Outcome.ErrorType.INTERNAL) {
            LOG.error("request {} failed with an internal error: {}", record.id, outcome.message());
        }
    }

    @Override
    public void onComplete(Session s, Outcome outcome) {
        account(outcome);
        if (outcome.state() == Lifecycle.FAILED && !started) {
            ApiError e = error(outcome);
            respondError(e);
            return;
        }
        if (outcome.state() == Lifecycle.CANCELLED && !started && !req.stream()) {
            respondError(new ApiError(499, "cancelled", outcome.message(), null, null));
            return;
        }
        if (!req.stream()) {
            String reason = outcome.state() == Lifecycle.COMPLETED ? outcome.finishReason() : "stop";
            byte[] body = frames.complete(text.toString(), reasoning.toString(), toolCalls, logprobs, reason,
                    outcome.usage())
                    .getBytes(StandardCharsets.UTF_8);
            exchange.getResponseHeaders().put(Headers.CONTENT_TYPE, "application/json");
            enqueue(ByteBuffer.wrap(body), 0, true);
            return;
        }
        startStream();
        if (outcome.state() == Lifecycle.FAILED) {
            enqueue(sse(error(outcome).body()), 0, false);
        } else {
            String reason = outcome.state() == Lifecycle.COMPLETED ? outcome.finishReason() : "stop";
            enqueue(sse(frames.chunk("", "", List.of(), null, reason)), 0, false);
            if (req.includeUsage()) {
                enqueue(sse(frames.usageChunk(outcome.usage())), 0, false);
            }
        }
        enqueue(DONE.duplicate(), 0, true);
    }

    private ApiError error(Outcome outcome) {
        return switch (outcome.errorType()) {
            case INVALID_REQUEST, UNSUPPORTED -> ApiError.invalid(null, outcome.message());
            case CONTEXT_LENGTH_EXCEEDED -> new ApiError(400, "invalid_request_error", outcome.message(), "messages",
                    "context_length_exceeded");
            case OVERLOADED -> ApiError.overloaded(503, outcome.message());
            case INTERNAL -> new ApiError(500, "server_error", "internal error (request id " + record.id + "): "
                    + outcome.message(), null, "internal_error");
        };
    }

    private void respondError(ApiError e) {
        if (e.status != 499) {
            // A client that left before the answer was not refused by us.
            record.rejectReason = ObservedHandler.reasonOf(e);
        }
        exchange.setStatusCode(e.status);
        exchange.getResponseHeaders().put(Headers.CONTENT_TYPE, "application/json");
        enqueue(ByteBuffer.wrap(e.body().getBytes(StandardCharsets.UTF_8)), 0, true);
    }

    private void startStream() {
        if (!started) {
            started = true;
            exchange.getResponseHeaders().put(Headers.CONTENT_TYPE, "text/event-stream");
            exchange.getResponseHeaders().put(Headers.CACHE_CONTROL, "no-cache");
        }
    }

    private static ByteBuffer sse(String json) {
        return ByteBuffer.wrap(("data: " + json + "\n\n").getBytes(StandardCharsets.UTF_8));
    }

    private void enqueue(ByteBuffer buffer, int credits, boolean last) {
        queue.add(new Pending(buffer, credits, last));
        if (writing.compareAndSet(false, true)) {
            sendNext();
        }
    }

    private Pending inFlight;

    private void sendNext() {
        while (true) {
            Pending p = queue.poll();
            if (p != null) {
                inFlight = p;
                exchange.getResponseSender().send(p.buffer(), this);
                return;
            }
            writing.set(false);
            // A writer may have enqueued after our poll but before the flag dropped.
            if (queue.isEmpty() || !writing.compareAndSet(false, true)) {
                return;
            }
        }
    }

    @Override
    public void onComplete(HttpServerExchange ex, Sender sender) {
        Pending done = inFlight;
        inFlight = null;
        Session s = session;
        if (done.credits() > 0 && s != null) {
            s.release(done.credits());
        }
        if (done.last()) {
            ex.endExchange();
            return;
        }
        sendNext();
    }

    @Override
    public void onException(HttpServerExchange ex, Sender sender, IOException e) {
        Session s = session;
        if (s != null) {
            s.cancel("client connection failed: " + e.getMessage());
        }
        queue.clear();
        ex.endExchange();
    }
}
