package dev.mlxring.ingress.http;

import io.undertow.server.HttpServerExchange;
import io.undertow.util.AttachmentKey;

/**
 * What one HTTP exchange reports to the access log and the metrics when it ends. Attached to the
 * exchange by {@link ObservedHandler} when the request arrives.
 *
 * <p>Threads: the IO thread writes {@link #id}, {@link #route} and {@link #startNs} before the
 * request is handled; the sink thread (a completion's responder) writes the token figures and
 * the outcome before it ends the exchange; the IO thread reads them all when the exchange
 * completes. The fields the sink writes are volatile for that hand-over. {@link #lastTokenNs} is
 * the sink thread's alone.
 */
final class RequestRecord {
    static final AttachmentKey<RequestRecord> KEY = AttachmentKey.create(RequestRecord.class);

    final String id;
    final String route;
    final long startNs;

    volatile String rejectReason;
    volatile long firstTokenNs;
    volatile int promptTokens;
    volatile int completionTokens;
    /** completed / cancelled / failed, with the finish reason or the error; null for non-completion routes. */
    volatile String outcome;
    /** A completion was handed to the engine (its responder exists). */
    volatile boolean submitted;

    /** Sink thread only: when the previous token reached the responder. */
    long lastTokenNs;

    RequestRecord(String id, String route, long startNs) {
        this.id = id;
        this.route = route;
        this.startNs = startNs;
    }

    /** The exchange's record; null for exchanges that did not pass through {@link ObservedHandler}. */
    static RequestRecord of(HttpServerExchange ex) {
        return ex.getAttachment(KEY);
    }
}
