package dev.mlxring.ingress.http;

import io.prometheus.metrics.model.registry.Collector;
import io.prometheus.metrics.model.snapshots.ClassicHistogramBuckets;
import io.prometheus.metrics.model.snapshots.HistogramSnapshot;
import io.prometheus.metrics.model.snapshots.MetricSnapshot;
import java.util.Arrays;
import java.util.concurrent.atomic.DoubleAdder;
import java.util.concurrent.atomic.LongAdder;

/**
 * A label-less classic histogram of durations for the per-token path, exposed through the
 * Prometheus library's snapshot model (the library writes the text format). The library's own
 * {@code Histogram.observe} allocates a capturing lambda per call (1.10), which the per-token
 * path must not; here an observation is a binary search over the bounds, one {@link LongAdder}
 * increment and one {@link DoubleAdder} add: no allocation, no lock.
 *
 * <p>Thread-safe. A scrape reads the buckets and the sum without a common lock, so an
 * observation racing a scrape may show in one and not yet the other (Prometheus tolerates that
 * skew; the next scrape is consistent).
 */
final class LatencyHistogram implements Collector {
    private final String name;
    private final String help;
    /** Upper bounds in seconds, ascending, ending with +Inf. */
    private final double[] bounds;

    private final LongAdder[] counts;
    private final DoubleAdder sumSeconds = new DoubleAdder();

    LatencyHistogram(String name, String help, double... finiteBoundsSeconds) {
        this.name = name;
        this.help = help;
        this.bounds = Arrays.copyOf(finiteBoundsSeconds, finiteBoundsSeconds.length + 1);
        this.bounds[finiteBoundsSeconds.length] = Double.POSITIVE_INFINITY;
        for (int i = 1; i < bounds.length; i++) {
            if (!(bounds[i] > bounds[i - 1])) {
                throw new IllegalArgumentException("bounds must ascend: " + Arrays.toString(finiteBoundsSeconds));
            }
        }
        this.counts = new LongAdder[bounds.length];
        for (int i = 0; i < counts.length; i++) {
            counts[i] = new LongAdder();
        }
    }

    /** Records one duration. Allocation-free. */
    void observeNanos(long nanos) {
        double seconds = nanos / 1e9;
        int i = Arrays.binarySearch(bounds, seconds);
        // Prometheus buckets are "le": a value equal to a bound belongs to that bound's bucket.
        counts[i >= 0 ? i : -i - 1].increment();
        sumSeconds.add(seconds);
    }

    @Override
    public MetricSnapshot collect() {
        long[] perBucket = new long[counts.length];
        for (int i = 0; i < counts.length; i++) {
            perBucket[i] = counts[i].sum();
        }
        return HistogramSnapshot.builder()
                .name(name)
                .help(help)
                .dataPoint(HistogramSnapshot.HistogramDataPointSnapshot.builder()
                        .classicHistogramBuckets(ClassicHistogramBuckets.of(bounds, perBucket))
                        .sum(sumSeconds.sum())
                        .build())
                .build();
    }

    @Override
    public String getPrometheusName() {
        return name;
    }
}
