package dev.mlxring.ingress.pool;

import dev.mlxring.ingress.http.ServerMetrics;
import io.prometheus.metrics.core.metrics.CounterWithCallback;
import io.prometheus.metrics.core.metrics.GaugeWithCallback;
import java.util.List;

/**
 * A {@link ModelPool}'s per-model rows in {@code /metrics}, read from {@link ModelPool#rows} at
 * scrape time: state (one series per state, 1 for the current one), loads, unloads, load seconds,
 * resident bytes, requests admitted and in flight, refusals by reason.
 */
public final class PoolMetrics {
    /** The {@code reason} label values of {@code mlxring_model_refused_total}. */
    public static final List<String> REFUSAL_REASONS = List.of("never_fits", "memory_busy", "model_too_large");

    private static final List<String> STATES = List.of("unloaded", "loading", "loaded", "unloading", "failed");

    private PoolMetrics() {}

    /** Registers {@code pool}'s rows with {@code metrics}. */
    public static void register(ModelPool pool, ServerMetrics metrics) {
        metrics.register(GaugeWithCallback.builder()
                .name("mlxring_model_state")
                .help("Each served model's state: 1 for its current state, 0 for the others")
                .labelNames("model", "state")
                .callback(cb -> pool.rows().forEach(r -> {
                    for (String s : STATES) {
                        cb.call(r.state().equals(s) ? 1 : 0, r.name(), s);
                    }
                }))
                .build());
        metrics.register(GaugeWithCallback.builder()
                .name("mlxring_model_resident_bytes")
                .help("Each served model's resident cost from its files (weights + runtime), loaded or not")
                .labelNames("model")
                .callback(cb -> pool.rows().forEach(r -> cb.call(r.residentBytes(), r.name())))
                .build());
        metrics.register(GaugeWithCallback.builder()
                .name("mlxring_model_requests_in_flight")
                .help("Each model's admitted requests that have not settled (their peak bytes are reserved)")
                .labelNames("model")
                .callback(cb -> pool.rows().forEach(r -> cb.call(r.inFlight(), r.name())))
                .build());
        metrics.register(GaugeWithCallback.builder()
                .name("mlxring_memory_budget_bytes")
                .help("The memory budget (--memory-budget) and the bytes of it in use")
                .labelNames("kind")
                .callback(cb -> {
                    cb.call(pool.budgetBytes(), "total");
                    cb.call(pool.usedBytes(), "used");
                })
                .build());
        metrics.register(CounterWithCallback.builder()
                .name("mlxring_model_loads")
                .help("Each model's completed loads")
                .labelNames("model")
                .callback(cb -> pool.rows().forEach(r -> cb.call(r.loads(), r.name())))
                .build());
        metrics.register(CounterWithCallback.builder()
                .name("mlxring_model_unloads")
                .help("Each model's unloads (for room, by --model-ttl, at shutdown)")
                .labelNames("model")
                .callback(cb -> pool.rows().forEach(r -> cb.call(r.unloads(), r.name())))
                .build());
        metrics.register(CounterWithCallback.builder()
                .name("mlxring_model_load_seconds")
                .help("Each model's time spent loading, over its completed loads")
                .labelNames("model")
                .callback(cb -> pool.rows().forEach(r -> cb.call(r.loadSeconds(), r.name())))
                .build());
        metrics.register(CounterWithCallback.builder()
                .name("mlxring_model_admitted_requests")
                .help("Each model's requests admitted by memory")
                .labelNames("model")
                .callback(cb -> pool.rows().forEach(r -> cb.call(r.admitted(), r.name())))
                .build());
        metrics.register(CounterWithCallback.builder()
                .name("mlxring_model_refused_requests")
                .help("Each model's requests refused by memory, by reason: never_fits (400), memory_busy (503),"
                        + " model_too_large (400)")
                .labelNames("model", "reason")
                .callback(cb -> pool.rows().forEach(r -> {
                    for (String reason : REFUSAL_REASONS) {
                        cb.call(r.refused().getOrDefault(reason, 0L), r.name(), reason);
                    }
                }))
                .build());
    }
}
