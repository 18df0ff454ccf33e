package dev.mlxring.ingress.http;

import io.undertow.server.HttpHandler;
import io.undertow.server.HttpServerExchange;
import io.undertow.util.Headers;
import io.undertow.util.HttpString;
import java.nio.charset.StandardCharsets;
import java.util.Locale;
import java.util.Set;
import java.util.UUID;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * The outermost HTTP handler: gives every request an id ({@code X-Request-Id}), counts it in
 * flight, and when its exchange ends records it in the metrics and writes one access-log line
 * (logger {@code mlxring.access}). An exception that escapes the routes becomes a 500 with
 * OpenAI's JSON error body naming the request id, which is logged with the stack trace.
 *
 * <p>Threads: {@link #handleRequest} runs on an IO thread; the completion listener runs on the
 * thread that ends the exchange (IO thread); both only touch the exchange's {@link RequestRecord}.
 */
final class ObservedHandler implements HttpHandler {
    static final HttpString REQUEST_ID = new HttpString("X-Request-Id");
    private static final Logger ACCESS = LoggerFactory.getLogger("mlxring.access");
    private static final Logger LOG = LoggerFactory.getLogger(ObservedHandler.class);
    private static final Set<String> ROUTES = Set.of(
            "/v1/chat/completions",
            "/v1/completions",
            "/v1/models",
            "/v1/messages",
            "/v1/messages/count_tokens",
            "/v1/responses",
            "/health",
            "/metrics");
    /** Scraped and probed often: logged at debug so the access log stays about traffic. */
    private static final Set<String> QUIET_ROUTES = Set.of("/health", "/metrics");

    private final HttpHandler next;
    private final ServerMetrics metrics;
    private final InFlight inFlight;

    ObservedHandler(HttpHandler next, ServerMetrics metrics, InFlight inFlight) {
        this.next = next;
        this.metrics = metrics;
        this.inFlight = inFlight;
    }

    @Override
    public void handleRequest(HttpServerExchange ex) {
        String path = ex.getRequestPath();
        RequestRecord rec = new RequestRecord(
                UUID.randomUUID().toString(),
                ROUTES.contains(path) ? path : ServerMetrics.OTHER_ROUTE,
                System.nanoTime());
        ex.putAttachment(RequestRecord.KEY, rec);
        ex.getResponseHeaders().put(REQUEST_ID, rec.id);
        inFlight.enter();
        ex.addExchangeCompleteListener((exchange, nextListener) -> {
            try {
                finished(exchange, rec);
            } finally {
                inFlight.exit();
                nextListener.proceed();
            }
        });
        try {
            next.handleRequest(ex);
        } catch (Exception e) {
            internalError(ex, e);
        }
    }

    /**
     * Answers an unexpected failure as a 500 with a JSON error body naming the request id (or ends
     * the exchange when the response has begun) and logs it with its stack trace.
     */
    static void internalError(HttpServerExchange ex, Throwable e) {
        internalError(ex, e, ErrorShape.OPENAI);
    }

    /** {@link #internalError(HttpServerExchange, Throwable)} answered in a route's error shape. */
    static void internalError(HttpServerExchange ex, Throwable e, ErrorShape shape) {
        RequestRecord rec = RequestRecord.of(ex);
        String id = rec == null ? "-" : rec.id;
        LOG.error("request {} failed with an internal error", id, e);
        if (ex.isResponseStarted()) {
            ex.endExchange();
            return;
        }
        reject(
                ex,
                new ApiError(
                        500, "server_error", "internal error (request id " + id + "): " + e, null, "internal_error"),
                shape);
    }

    /** Answers {@code e} with its status and JSON body and counts it as a rejection. */
    static void reject(HttpServerExchange ex, ApiError e) {
        reject(ex, e, ErrorShape.OPENAI);
    }

    /** Answers {@code e} in a route's error shape (its status and body) and counts it as a rejection. */
    static void reject(HttpServerExchange ex, ApiError e, ErrorShape shape) {
        RequestRecord rec = RequestRecord.of(ex);
        if (rec != null) {
            rec.rejectReason = reasonOf(e);
        }
        ex.setStatusCode(shape.status(e));
        retryAfter(ex);
        ex.getResponseHeaders().put(Headers.CONTENT_TYPE, "application/json");
        ex.getResponseSender().send(shape.body(e), StandardCharsets.UTF_8);
    }

    /**
     * An overload answer (429, 503, Anthropic's 529) tells clients when to retry, as OpenAI's and
     * Anthropic's do; their SDKs honour the header in their back-off.
     */
    static void retryAfter(HttpServerExchange ex) {
        int status = ex.getStatusCode();
        if (status == 429 || status == 503 || status == 529) {
            ex.getResponseHeaders().put(Headers.RETRY_AFTER, RETRY_AFTER_SECONDS);
        }
    }

    private static final String RETRY_AFTER_SECONDS = "1";

    /** A bounded label value: the error's code (a constant of this server), else its type. */
    static String reasonOf(ApiError e) {
        return e.code != null ? e.code : e.type;
    }

    private void finished(HttpServerExchange ex, RequestRecord rec) {
        int status = ex.getStatusCode();
        metrics.request(rec.route, status);
        if (rec.rejectReason == null && status >= 400 && status != 499 && !rec.submitted) {
            // An error answered without reject() (e.g. by Undertow itself): still counted, by status.
            rec.rejectReason = "status_" + status;
        }
        if (rec.rejectReason != null) {
            metrics.rejected(rec.rejectReason);
        }
        boolean quiet = QUIET_ROUTES.contains(rec.route) && status < 400;
        if (quiet ? !ACCESS.isDebugEnabled() : !ACCESS.isInfoEnabled()) {
            return;
        }
        long now = System.nanoTime();
        StringBuilder line = new StringBuilder(160)
                .append("id=")
                .append(rec.id)
                .append(" method=")
                .append(ex.getRequestMethod())
                .append(" route=")
                .append(rec.route.equals(ServerMetrics.OTHER_ROUTE) ? clip(ex.getRequestPath()) : rec.route)
                .append(" status=")
                .append(status);
        if (rec.outcome == null && rec.submitted && rec.rejectReason == null) {
            // The connection ended before the engine settled the request: the client went away
            // (the session is cancelled at its next safe point; /metrics counts its outcome).
            line.append(" outcome=client_disconnected");
        } else if (rec.outcome != null) {
            line.append(" prompt_tokens=")
                    .append(rec.promptTokens)
                    .append(" completion_tokens=")
                    .append(rec.completionTokens)
                    .append(" ttft_ms=")
                    .append(rec.firstTokenNs == 0 ? "-" : millis(rec.firstTokenNs - rec.startNs))
                    .append(" outcome=")
                    .append(rec.outcome);
        }
        if (rec.rejectReason != null) {
            line.append(" reason=").append(rec.rejectReason);
        }
        line.append(" total_ms=").append(millis(now - rec.startNs));
        if (quiet) {
            ACCESS.debug(line.toString());
        } else {
            ACCESS.info(line.toString());
        }
    }

    private static String millis(long nanos) {
        return String.format(Locale.ROOT, "%.1f", nanos / 1e6);
    }

    /** Paths are client input: bounded and without spaces or control characters in the log. */
    private static String clip(String path) {
        String p = path.length() > 120 ? path.substring(0, 120) + "…" : path;
        return p.replaceAll("[\\s\\p{Cntrl}]", "_");
    }
}
