package dev.mlxring.bench;

import java.util.Arrays;

/**
 * Summary statistics of a sample of latencies: mean, standard deviation (population, as numpy's
 * {@code std}) and percentiles by linear interpolation between the closest ranks (numpy's
 * {@code percentile} default, which {@code vllm bench serve} reports), so the same sample gives
 * the same numbers here and in vLLM's tooling. NaN values are left out; an empty sample gives
 * NaN for everything.
 */
public final class Distribution {
    private final double[] sorted;

    private Distribution(double[] sorted) {
        this.sorted = sorted;
    }

    /** The sample {@code values}, NaNs dropped. */
    public static Distribution of(double[] values) {
        return new Distribution(
                Arrays.stream(values).filter(v -> !Double.isNaN(v)).sorted().toArray());
    }

    public int count() {
        return sorted.length;
    }

    public double mean() {
        return sorted.length == 0 ? Double.NaN : Arrays.stream(sorted).sum() / sorted.length;
    }

    public double std() {
        if (sorted.length == 0) {
            return Double.NaN;
        }
        double m = mean();
        double ss = 0;
        for (double v : sorted) {
            ss += (v - m) * (v - m);
        }
        return Math.sqrt(ss / sorted.length);
    }

    /** The {@code p}-th percentile, {@code p} in [0, 100]: rank p/100·(n−1), interpolated. */
    public double percentile(double p) {
        if (p < 0 || p > 100) {
            throw new IllegalArgumentException("a percentile is in [0, 100], got " + p);
        }
        if (sorted.length == 0) {
            return Double.NaN;
        }
        double rank = p / 100.0 * (sorted.length - 1);
        int lo = (int) Math.floor(rank);
        int hi = Math.min(lo + 1, sorted.length - 1);
        return sorted[lo] + (sorted[hi] - sorted[lo]) * (rank - lo);
    }

    public double median() {
        return percentile(50);
    }
}
