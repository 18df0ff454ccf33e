package dev.mlxring.bench;

import java.util.Objects;

/**
 * One benchmarked request as the client saw it: when it was sent ({@code sendNs}, a
 * {@link System#nanoTime()} reading), when each event carrying generated text arrived
 * ({@code tokenEventNs}, ascending), when the response ended ({@code endNs}), the token counts the
 * server's usage reported ({@code promptTokens}, {@code completionTokens}; -1 when it reported
 * none), the HTTP status (0 when no response came) and, for a failed request, its error class
 * ({@link ErrorClass}) and a detail; {@code errorClass} is null for a request that succeeded.
 * {@code answer} is the answer's visible text as received (reasoning excluded; empty for a failed
 * request): what a multi-turn conversation sends back in its next turn.
 *
 * <p>The metrics follow {@code vllm bench serve}: TTFT is send → first text event; E2E latency is
 * send → end; ITL are the gaps between consecutive text events (a server that puts several tokens
 * in one event shows fewer, longer gaps); TPOT is (E2E − TTFT) / (output tokens − 1), undefined
 * for a single output token. Output tokens are the usage's count when the server reported one,
 * else the counted text events.
 */
public record RequestRecord(
        int index,
        int status,
        long sendNs,
        long[] tokenEventNs,
        long endNs,
        int promptTokens,
        int completionTokens,
        String errorClass,
        String errorDetail,
        String answer) {
    private static final double NS_PER_MS = 1e6;

    public RequestRecord {
        Objects.requireNonNull(tokenEventNs, "tokenEventNs");
        Objects.requireNonNull(answer, "answer");
        tokenEventNs = tokenEventNs.clone();
        for (int i = 1; i < tokenEventNs.length; i++) {
            if (tokenEventNs[i] < tokenEventNs[i - 1]) {
                throw new IllegalArgumentException("token event times go backwards at " + i);
            }
        }
    }

    /** A request whose answer text was not kept (empty {@code answer}). */
    public RequestRecord(
            int index,
            int status,
            long sendNs,
            long[] tokenEventNs,
            long endNs,
            int promptTokens,
            int completionTokens,
            String errorClass,
            String errorDetail) {
        this(index, status, sendNs, tokenEventNs, endNs, promptTokens, completionTokens, errorClass, errorDetail, "");
    }

    /** A request that succeeded: status 200, at least one text event, no error. */
    public boolean ok() {
        return errorClass == null;
    }

    /** The text events received (each a chunk with non-empty generated text). */
    public int textEvents() {
        return tokenEventNs.length;
    }

    /** Output tokens: the usage's count when reported, else the counted text events. */
    public int outputTokens() {
        return completionTokens >= 0 ? completionTokens : tokenEventNs.length;
    }

    /** Time to first token in ms; NaN without a text event. */
    public double ttftMs() {
        return tokenEventNs.length == 0 ? Double.NaN : (tokenEventNs[0] - sendNs) / NS_PER_MS;
    }

    /** Send → end of the response, in ms. */
    public double e2elMs() {
        return (endNs - sendNs) / NS_PER_MS;
    }

    /** Time per output token after the first, in ms; NaN for fewer than two output tokens. */
    public double tpotMs() {
        int n = outputTokens();
        if (n < 2 || tokenEventNs.length == 0) {
            return Double.NaN;
        }
        return (e2elMs() - ttftMs()) / (n - 1);
    }

    /** The gaps between consecutive text events, in ms. */
    public double[] itlMs() {
        double[] out = new double[Math.max(0, tokenEventNs.length - 1)];
        for (int i = 1; i < tokenEventNs.length; i++) {
            out[i - 1] = (tokenEventNs[i] - tokenEventNs[i - 1]) / NS_PER_MS;
        }
        return out;
    }

    @Override
    public long[] tokenEventNs() {
        return tokenEventNs.clone();
    }
}
