package dev.mlxring.bench;

import java.util.LinkedHashMap;
import java.util.Map;
import org.HdrHistogram.Histogram;

/**
 * Latencies of the pipeline's hand-offs ({@code bench engine}), one HdrHistogram per hand-off:
 * the hand-offs named at construction in that order (the pipeline's), then any other in the order
 * first recorded; one with no samples is left out of {@link #toMap}. Values go in as nanoseconds and are reported in
 * microseconds; the histograms keep 3 significant digits, so a reported percentile is within 0.1%
 * of the recorded value it stands for. Thread-safe: any thread may record, merge or read.
 */
public final class StageLatencies {
    /** 3 significant digits: 0.1% resolution at any magnitude. */
    private static final int SIGNIFICANT_DIGITS = 3;

    private static final double NS_PER_US = 1e3;

    private final Map<String, Histogram> byHandOff = new LinkedHashMap<>();

    /** Latencies reported in the order of {@code order} (hand-offs named later go after them). */
    public StageLatencies(String... order) {
        for (String handOff : order) {
            byHandOff.put(handOff, new Histogram(SIGNIFICANT_DIGITS));
        }
    }

    /** Records one hand-off of {@code handOff} that took {@code nanos} (a negative reading counts as 0). */
    public synchronized void record(String handOff, long nanos) {
        byHandOff
                .computeIfAbsent(handOff, k -> new Histogram(SIGNIFICANT_DIGITS))
                .recordValue(Math.max(0, nanos));
    }

    /** Adds every sample of {@code other} to these (a target's rounds pooled). */
    public synchronized void add(StageLatencies other) {
        Map<String, Histogram> theirs;
        synchronized (other) {
            theirs = new LinkedHashMap<>();
            other.byHandOff.forEach((k, h) -> theirs.put(k, h.copy()));
        }
        theirs.forEach((k, h) -> byHandOff
                .computeIfAbsent(k, x -> new Histogram(SIGNIFICANT_DIGITS))
                .add(h));
    }

    /** The samples of {@code handOff} so far (0 when none). */
    public synchronized long count(String handOff) {
        Histogram h = byHandOff.get(handOff);
        return h == null ? 0 : h.getTotalCount();
    }

    /**
     * Per hand-off: {@code count}, {@code mean_us}, {@code p50_us}, {@code p90_us}, {@code p99_us},
     * {@code p99.9_us} and {@code max_us}.
     */
    public synchronized Map<String, Object> toMap() {
        Map<String, Object> out = new LinkedHashMap<>();
        byHandOff.forEach((k, h) -> {
            if (h.getTotalCount() == 0) {
                return;
            }
            Map<String, Object> m = new LinkedHashMap<>();
            m.put("count", h.getTotalCount());
            m.put("mean_us", h.getMean() / NS_PER_US);
            m.put("p50_us", h.getValueAtPercentile(50) / NS_PER_US);
            m.put("p90_us", h.getValueAtPercentile(90) / NS_PER_US);
            m.put("p99_us", h.getValueAtPercentile(99) / NS_PER_US);
            m.put("p99.9_us", h.getValueAtPercentile(99.9) / NS_PER_US);
            m.put("max_us", h.getMaxValue() / NS_PER_US);
            out.put(k, m);
        });
        return out;
    }
}
