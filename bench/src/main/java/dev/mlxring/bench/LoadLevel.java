package dev.mlxring.bench;

import java.util.Locale;
import java.util.Random;

/**
 * How requests arrive in a phase: a closed loop of {@code n} clients, each sending its next
 * request when its last one ended ({@code --max-concurrency}), or an open loop at a mean rate
 * ({@code --request-rate}, requests/s; {@code inf} sends all at once) with gamma-distributed
 * gaps of shape {@code burstiness} (1 = Poisson arrivals; below 1 burstier, above 1 more even).
 */
public sealed interface LoadLevel {
    /** The level's value as the results JSON and table give it: the concurrency, or the rate. */
    String label();

    /** {@code max_concurrency} or {@code request_rate}: the vLLM field the level's value goes under. */
    String field();

    /** A closed loop of {@code clients} clients. */
    record Concurrency(int clients) implements LoadLevel {
        public Concurrency {
            if (clients < 1) {
                throw new IllegalArgumentException("--max-concurrency values must be >= 1, got " + clients);
            }
        }

        @Override
        public String label() {
            return Integer.toString(clients);
        }

        @Override
        public String field() {
            return "max_concurrency";
        }
    }

    /** An open loop at {@code perSecond} requests/s (infinite: all at once), gaps gamma(burstiness). */
    record Rate(double perSecond, double burstiness) implements LoadLevel {
        public Rate {
            if (!(perSecond > 0)) {
                throw new IllegalArgumentException("--request-rate values must be > 0 (or inf), got " + perSecond);
            }
            if (!(burstiness > 0) || Double.isInfinite(burstiness)) {
                throw new IllegalArgumentException("--burstiness must be a number > 0, got " + burstiness);
            }
        }

        @Override
        public String label() {
            return Double.isInfinite(perSecond) ? "inf" : String.format(Locale.ROOT, "%s", perSecond);
        }

        @Override
        public String field() {
            return "request_rate";
        }

        /** The gap before each of {@code n} requests (the first is 0), in ns, drawn from {@code random}. */
        public long[] gapsNs(int n, Random random) {
            long[] out = new long[n];
            if (Double.isInfinite(perSecond)) {
                return out;
            }
            double scaleS = 1.0 / (perSecond * burstiness);
            for (int i = 1; i < n; i++) {
                out[i] = Math.round(gamma(burstiness, random) * scaleS * 1e9);
            }
            return out;
        }
    }

    /** A draw from gamma(shape, 1): Marsaglia and Tsang's method, boosted for shape below 1. */
    static double gamma(double shape, Random random) {
        if (shape < 1) {
            double u = random.nextDouble();
            return gamma(shape + 1, random) * Math.pow(u, 1.0 / shape);
        }
        double d = shape - 1.0 / 3.0;
        double c = 1.0 / Math.sqrt(9 * d);
        while (true) {
            double x = random.nextGaussian();
            double v = 1 + c * x;
            if (v <= 0) {
                continue;
            }
            v = v * v * v;
            double u = random.nextDouble();
            if (u < 1 - 0.0331 * x * x * x * x || Math.log(u) < 0.5 * x * x + d * (1 - v + Math.log(v))) {
                return d * v;
            }
        }
    }
}
