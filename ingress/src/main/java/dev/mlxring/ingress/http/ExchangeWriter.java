package dev.mlxring.ingress.http;

import dev.mlxring.pipeline.Lifecycle;
import dev.mlxring.pipeline.Outcome;
import dev.mlxring.pipeline.Session;
import io.undertow.io.IoCallback;
import io.undertow.io.Sender;
import io.undertow.server.HttpServerExchange;
import io.undertow.util.Headers;
import java.io.IOException;
import java.nio.ByteBuffer;
import java.nio.charset.StandardCharsets;
import java.util.concurrent.ConcurrentLinkedQueue;
import java.util.concurrent.atomic.AtomicBoolean;

/**
 * The exchange side of one session, shared by every ingress codec: an ordered queue of writes,
 * each returning its span credits to the engine only when the socket write completes, so a client
 * that stops reading pauses its row (and is cancelled after the idle deadline) instead of
 * buffering without bound; a failed write cancels the session. It also reports what the access
 * log and the metrics count (time to first token, inter-token latency, tokens, the outcome,
 * rejections), the same for every API.
 *
 * <p>Threads: writes are queued from the sink thread (or the IO thread for early errors); write
 * completions come from Undertow's IO thread. {@code writing} serializes sends (Undertow's Sender
 * allows one at a time). {@link #startEventStream}/{@link #started} belong to the sink thread.
 */
public final class ExchangeWriter implements IoCallback {
    private static final org.slf4j.Logger LOG = org.slf4j.LoggerFactory.getLogger(ExchangeWriter.class);

    /** A queued write and how many span credits it returns on completion. */
    private record Pending(ByteBuffer buffer, int credits, boolean last) {}

    private final HttpServerExchange exchange;
    private final ErrorShape errors;
    private final RequestRecord record;
    private final ServerMetrics metrics;
    private final ConcurrentLinkedQueue<Pending> queue = new ConcurrentLinkedQueue<>();
    private final AtomicBoolean writing = new AtomicBoolean();
    private volatile Session session;
    /** Set once on submission; read on the IO thread when the last bytes go out. */
    private volatile DisconnectWatch watch;

    private boolean started;
    private Pending inFlight;

    ExchangeWriter(HttpServerExchange exchange, ErrorShape errors, ServerMetrics metrics) {
        this.exchange = exchange;
        this.errors = errors;
        this.metrics = metrics;
        RequestRecord r = RequestRecord.of(exchange);
        // Every exchange passes ObservedHandler, which attaches the record; a bare one gets its own.
        this.record = r != null
                ? r
                : new RequestRecord(
                        java.util.UUID.randomUUID().toString(), ServerMetrics.OTHER_ROUTE, System.nanoTime());
    }

    /** The request's id (X-Request-Id), also the base of the API's response id. */
    public String requestId() {
        return record.id;
    }

    /** Sink thread, per generated token: TTFT once, then inter-token latency (allocation-free). */
    public void tokenCommitted() {
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
    public void account(Outcome outcome) {
        record.promptTokens = outcome.usage().promptTokens();
        record.completionTokens = outcome.usage().completionTokens();
        record.outcome = switch (outcome.state()) {
            case COMPLETED -> "completed:" + outcome.finishReason();
            case CANCELLED -> "cancelled";
            default -> "failed:" + outcome.errorType();
        };
        metrics.finished(outcomeLabel(outcome), record.promptTokens, record.completionTokens);
        if (outcome.usage().speculative() != null) {
            metrics.speculated(outcome.usage().speculative());
        }
        if (outcome.state() == Lifecycle.FAILED && outcome.errorType() == Outcome.ErrorType.INTERNAL) {
            LOG.error("request {} failed with an internal error: {}", record.id, outcome.message());
        }
    }

    /**
     * {@code mlxring_completions_total}'s label: a session refused for the request's fault or for
     * capacity (answered 400 or 503) is "rejected", so "failed" counts only the engine's own errors.
     */
    static String outcomeLabel(Outcome outcome) {
        return switch (outcome.state()) {
            case COMPLETED -> "completed";
            case CANCELLED -> "cancelled";
            default -> outcome.errorType() == Outcome.ErrorType.INTERNAL ? "failed" : "rejected";
        };
    }

    /** The request is handed to the engine (the access log then tells a disconnect from a refusal). */
    void submitted() {
        record.submitted = true;
    }

    /** The error a failed session answers with (an internal one names the request id). */
    public ApiError failure(Outcome outcome) {
        return ApiError.of(outcome, record.id);
    }

    public void attach(Session s) {
        this.session = s;
        record.submitted = true;
    }

    /** From now until the last write, a client closing its connection is noticed at once. */
    void watchForDisconnect() {
        watch = DisconnectWatch.arm(exchange);
    }

    /** Whether the response has started as an event stream (its status can no longer change). */
    public boolean started() {
        return started;
    }

    /** Starts the {@code text/event-stream} response (once). */
    public void startEventStream() {
        if (!started) {
            started = true;
            exchange.getResponseHeaders().put(Headers.CONTENT_TYPE, "text/event-stream");
            exchange.getResponseHeaders().put(Headers.CACHE_CONTROL, "no-cache");
        }
    }

    /** Queues already-framed event text; {@code credits} return to the session when it is written. */
    public void event(String text, int credits) {
        enqueue(ByteBuffer.wrap(text.getBytes(StandardCharsets.UTF_8)), credits, false);
    }

    /** Queues the last bytes of the stream and ends the exchange after them. */
    public void end(String text) {
        enqueue(ByteBuffer.wrap(text.getBytes(StandardCharsets.UTF_8)), 0, true);
    }

    /** Answers the whole exchange with one JSON body. */
    public void json(int status, String body) {
        exchange.setStatusCode(status);
        ObservedHandler.retryAfter(exchange);
        exchange.getResponseHeaders().put(Headers.CONTENT_TYPE, "application/json");
        end(body);
    }

    /**
     * Answers an error in this exchange's dialect: with its status before the stream started,
     * as an error event (then the end of the stream, with {@code tail}) after.
     */
    public void error(ApiError e, String tail) {
        if (!started && e.status() != 499) {
            // A client that left before the answer was not refused by us.
            record.rejectReason = ObservedHandler.reasonOf(e);
        }
        if (started) {
            event(errors.streamEvent(e), 0);
            end(tail);
        } else {
            json(errors.status(e), errors.body(e));
        }
    }

    /** Returns credits at once for a span that produced nothing to write. */
    public void release(int credits) {
        Session s = session;
        if (credits > 0 && s != null) {
            s.release(credits);
        }
    }

    private void enqueue(ByteBuffer buffer, int credits, boolean last) {
        queue.add(new Pending(buffer, credits, last));
        if (writing.compareAndSet(false, true)) {
            sendNext();
        }
    }

    private void sendNext() {
        while (true) {
            Pending p = queue.poll();
            if (p != null) {
                inFlight = p;
                if (p.last() && !exchange.isInIoThread()) {
                    // The exchange ends on its IO thread, where the disconnect watch reads.
                    exchange.getIoThread().execute(() -> sendLast(p));
                } else if (p.last()) {
                    sendLast(p);
                } else {
                    exchange.getResponseSender().send(p.buffer(), this);
                }
                return;
            }
            writing.set(false);
            // A writer may have enqueued after our poll but before the flag dropped.
            if (queue.isEmpty() || !writing.compareAndSet(false, true)) {
                return;
            }
        }
    }

    /** IO thread: the watch lets go of the connection's reads before the exchange can end. */
    private void sendLast(Pending last) {
        DisconnectWatch w = watch;
        if (w != null) {
            w.stop();
        }
        exchange.getResponseSender().send(last.buffer(), this);
    }

    @Override
    public void onComplete(HttpServerExchange ex, Sender sender) {
        Pending done = inFlight;
        inFlight = null;
        release(done.credits());
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
