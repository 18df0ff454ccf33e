package dev.mlxring.ingress.http;

import dev.mlxring.pipeline.Engine;
import dev.mlxring.pipeline.ExecActivity;
import dev.mlxring.pipeline.Lifecycle;
import dev.mlxring.pipeline.Usage;
import io.prometheus.metrics.core.datapoints.CounterDataPoint;
import io.prometheus.metrics.core.metrics.Counter;
import io.prometheus.metrics.core.metrics.GaugeWithCallback;
import io.prometheus.metrics.core.metrics.Histogram;
import io.prometheus.metrics.expositionformats.PrometheusTextFormatWriter;
import io.prometheus.metrics.instrumentation.jvm.JvmMetrics;
import io.prometheus.metrics.model.registry.PrometheusRegistry;
import java.io.IOException;
import java.io.OutputStream;
import java.util.function.IntSupplier;
import java.util.function.LongSupplier;

/**
 * The server's Prometheus metrics (the official client library; {@code GET /metrics} writes them
 * in the text format). Everything the engine reports is read by callbacks at scrape time, so the
 * engine core (the {@code pipeline} module) knows nothing of Prometheus.
 *
 * <p>Cost contract: the per-token path ({@link #interToken}) is one observation of a pre-built,
 * label-less {@link LatencyHistogram}: a binary search and two adder updates, no map lookup and
 * no allocation (a test holds it to that). Per-request recording ({@link #request},
 * {@link #rejected}) may look up label values. Thread-safe: the library's data points are
 * lock-free and may be updated from any thread.
 */
public final class ServerMetrics {
    /** Route label values: the known routes, everything else is {@code other} (bounded cardinality). */
    static final String OTHER_ROUTE = "other";

    /** The {@code kind} label values of {@code mlxring_http_connection_timeouts_total}. */
    static final java.util.List<String> TIMEOUT_KINDS = java.util.List.of("header", "body", "idle");

    /** Acceptance-rate buckets: tenths of the proposed tokens accepted. */
    private static final double[] ACCEPTANCE_BOUNDS = {0.1, 0.2, 0.3, 0.4, 0.5, 0.6, 0.7, 0.8, 0.9, 1.0};

    private static final double[] TTFT_BOUNDS = {0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10, 30, 60};
    private static final double[] ITL_BOUNDS = {0.001, 0.0025, 0.005, 0.01, 0.02, 0.04, 0.08, 0.16, 0.32, 0.64, 1.28, 5
    };

    private final PrometheusRegistry registry = new PrometheusRegistry();
    private final PrometheusTextFormatWriter writer = PrometheusTextFormatWriter.create();
    private final Counter requests;
    private final Counter rejected;
    private final Counter completions;
    private final CounterDataPoint promptTokens;
    private final CounterDataPoint generatedTokens;
    private final CounterDataPoint proposedTokens;
    private final CounterDataPoint acceptedTokens;
    private final Histogram acceptanceRate;
    private final LatencyHistogram ttft;
    private final LatencyHistogram interToken;
    private final Counter connectionTimeouts;
    private final CounterDataPoint connectionsRefused;
    private volatile boolean draining;
    private volatile IntSupplier openConnections = () -> 0;

    /**
     * @param engine read at scrape time for queue depth, running rows and live sessions
     * @param mlxActiveMemory MLX's active memory in bytes (null: no MLX gauges, e.g. scripted test engines)
     * @param mlxPeakMemory MLX's peak active memory in bytes since it was last reset (read with
     *     {@code mlxActiveMemory}; null with it)
     * @param mlxIdleBaseline MLX's active memory once the model was loaded and nothing ran (weights)
     */
    public ServerMetrics(
            Engine engine, LongSupplier mlxActiveMemory, LongSupplier mlxPeakMemory, long mlxIdleBaseline) {
        requests = Counter.builder()
                .name("mlxring_http_requests_total")
                .help("HTTP requests answered, by route and status code")
                .labelNames("route", "status")
                .withoutExemplars()
                .register(registry);
        rejected = Counter.builder()
                .name("mlxring_rejected_requests_total")
                .help("Requests answered with an error before generation, by reason (the error code or type)")
                .labelNames("reason")
                .withoutExemplars()
                .register(registry);
        completions = Counter.builder()
                .name("mlxring_completions_total")
                .help("Completion requests by terminal outcome: completed, cancelled (client gone, shutdown), "
                        + "rejected (refused: 400 or 503) or failed (internal)")
                .labelNames("outcome")
                .withoutExemplars()
                .register(registry);
        promptTokens = Counter.builder()
                .name("mlxring_prompt_tokens_total")
                .help("Prompt tokens of finished completion requests")
                .withoutExemplars()
                .register(registry);
        generatedTokens = Counter.builder()
                .name("mlxring_generated_tokens_total")
                .help("Generated tokens of finished completion requests")
                .withoutExemplars()
                .register(registry);
        proposedTokens = Counter.builder()
                .name("mlxring_speculative_proposed_tokens_total")
                .help("Proposed tokens the model verified, over finished requests that ran speculatively")
                .withoutExemplars()
                .register(registry);
        acceptedTokens = Counter.builder()
                .name("mlxring_speculative_accepted_tokens_total")
                .help("Proposed tokens the model accepted, over finished requests that ran speculatively")
                .withoutExemplars()
                .register(registry);
        acceptanceRate = Histogram.builder()
                .name("mlxring_speculative_acceptance_rate")
                .help("Per finished request that proposed tokens: accepted / proposed")
                .classicUpperBounds(ACCEPTANCE_BOUNDS)
                .classicOnly()
                .withoutExemplars()
                .register(registry);
        ttft = new LatencyHistogram(
                "mlxring_time_to_first_token_seconds",
                "From the request's arrival to its first generated token reaching the HTTP responder",
                TTFT_BOUNDS);
        interToken = new LatencyHistogram(
                "mlxring_inter_token_latency_seconds",
                "Between consecutive generated tokens of one request, as they reach the HTTP responder",
                ITL_BOUNDS);
        registry.register(ttft);
        registry.register(interToken);
        connectionTimeouts = Counter.builder()
                .name("mlxring_http_connection_timeouts_total")
                .help("Connections closed by a deadline, by kind: header (a request's head not read within"
                        + " --read-timeout-seconds: 408), body (its body not read within it: 408), idle (no request"
                        + " within --idle-timeout-seconds)")
                .labelNames("kind")
                .withoutExemplars()
                .register(registry);
        for (String kind : TIMEOUT_KINDS) {
            connectionTimeouts.labelValues(kind);
        }
        connectionsRefused = Counter.builder()
                .name("mlxring_http_connections_refused_total")
                .help("Connections answered 503 and closed because --max-connections were open")
                .withoutExemplars()
                .register(registry);
        GaugeWithCallback.builder()
                .name("mlxring_http_connections")
                .help("HTTP connections open now (at most --max-connections)")
                .callback(cb -> cb.call(openConnections.getAsInt()))
                .register(registry);

        GaugeWithCallback.builder()
                .name("mlxring_queue_depth")
                .help("Accepted requests not running yet (being prepared, planned or queued for exec)")
                .callback(cb -> cb.call(engine.sessionsIn(Lifecycle.CREATED)
                        + engine.sessionsIn(Lifecycle.PREPARING)
                        + engine.sessionsIn(Lifecycle.QUEUED)))
                .register(registry);
        GaugeWithCallback.builder()
                .name("mlxring_active_rows")
                .help("Sessions running on the exec thread (batch rows in use)")
                .callback(cb -> cb.call(engine.sessionsIn(Lifecycle.RUNNING)))
                .register(registry);
        GaugeWithCallback.builder()
                .name("mlxring_live_sessions")
                .help("Accepted sessions without their terminal outcome yet; each holds its credits and,"
                        + " while running, its KV cache")
                .callback(cb -> cb.call(engine.liveSessions()))
                .register(registry);
        GaugeWithCallback.builder()
                .name("mlxring_admitted_sessions")
                .help("Sessions admitted by plan and not terminal (bounded by --max-queued)")
                .callback(cb -> cb.call(engine.admittedCount()))
                .register(registry);
        GaugeWithCallback.builder()
                .name("mlxring_exec_unit_age_seconds")
                .help("How long the exec thread has been inside its current work unit (0 between units);"
                        + " a value that keeps growing is a stall")
                .labelNames("unit")
                .callback(cb -> {
                    ExecActivity.Snapshot now = engine.execActivity();
                    for (ExecActivity.Unit u : ExecActivity.Unit.values()) {
                        cb.call(now.unit() == u ? now.ageNs() / 1e9 : 0, u.label());
                    }
                })
                .register(registry);
        GaugeWithCallback.builder()
                .name("mlxring_draining")
                .help("1 while the server shuts down gracefully (new requests get 503)")
                .callback(cb -> cb.call(draining ? 1 : 0))
                .register(registry);
        if (mlxActiveMemory != null) {
            // MLX's allocator counters are plain word-sized reads: a snapshot, safe from the scrape
            // thread while exec runs (no graph work, no allocation in MLX).
            GaugeWithCallback.builder()
                    .name("mlxring_mlx_active_memory_bytes")
                    .help("MLX active memory: weights, KV caches and the step's live arrays")
                    .callback(cb -> cb.call(mlxActiveMemory.getAsLong()))
                    .register(registry);
            GaugeWithCallback.builder()
                    .name("mlxring_mlx_peak_memory_bytes")
                    .help("MLX's peak active memory since it was last reset (a single generation resets it):"
                            + " the highest its allocator held, short peaks included")
                    .callback(cb -> cb.call(mlxPeakMemory.getAsLong()))
                    .register(registry);
            GaugeWithCallback.builder()
                    .name("mlxring_mlx_idle_baseline_bytes")
                    .help("MLX active memory right after the model loaded, before any request (the weights)")
                    .callback(cb -> cb.call(mlxIdleBaseline))
                    .register(registry);
            GaugeWithCallback.builder()
                    .name("mlxring_kv_bytes_in_use")
                    .help("Estimate: MLX active memory above the idle baseline (KV caches plus the current"
                            + " step's transient arrays; no finer per-cache figure is tracked)")
                    .callback(cb -> cb.call(Math.max(0, mlxActiveMemory.getAsLong() - mlxIdleBaseline)))
                    .register(registry);
        }
        // process_resident_memory_bytes, jvm_buffer_pool_used_bytes{pool="direct"}, heap, GC, threads.
        JvmMetrics.builder().register(registry);
    }

    /** Per finished HTTP exchange. {@code route} must be a known route or {@link #OTHER_ROUTE}. */
    void request(String route, int status) {
        requests.labelValues(route, Integer.toString(status)).inc();
    }

    /** An error answered before generation; {@code reason} is a fixed code from this server's errors. */
    void rejected(String reason) {
        rejected.labelValues(reason).inc();
    }

    /** A completion request's terminal outcome and token accounting, once at its end. */
    void finished(String outcome, int prompt, int generated) {
        completions.labelValues(outcome).inc();
        if (prompt > 0) {
            promptTokens.inc(prompt);
        }
        if (generated > 0) {
            generatedTokens.inc(generated);
        }
    }

    /** A finished request that ran speculatively, once at its end (allocates; not on the token path). */
    void speculated(Usage.Speculative s) {
        if (s.proposed() > 0) {
            proposedTokens.inc(s.proposed());
            acceptedTokens.inc(s.accepted());
            acceptanceRate.observe((double) s.accepted() / s.proposed());
        }
    }

    void timeToFirstToken(long nanos) {
        ttft.observeNanos(nanos);
    }

    /** Per generated token after the first: allocation-free (see the class contract). */
    void interToken(long nanos) {
        interToken.observeNanos(nanos);
    }

    /** A connection closed by a deadline; {@code kind} is one of {@link #TIMEOUT_KINDS}. */
    void connectionTimedOut(String kind) {
        connectionTimeouts.labelValues(kind).inc();
    }

    /** A connection refused over the connection cap. */
    void connectionRefused() {
        connectionsRefused.inc();
    }

    /** Where the open-connections gauge reads from (the server's gate, once it listens). */
    void openConnections(IntSupplier open) {
        openConnections = open;
    }

    void draining(boolean on) {
        draining = on;
    }

    String contentType() {
        return writer.getContentType();
    }

    /** Writes every metric in the Prometheus text format. */
    /** Adds {@code metrics} to what {@code /metrics} writes (e.g. a model pool's per-model rows). */
    public void register(io.prometheus.metrics.model.registry.Collector metrics) {
        registry.register(metrics);
    }

    void scrape(OutputStream out) throws IOException {
        writer.write(out, registry.scrape());
    }
}
