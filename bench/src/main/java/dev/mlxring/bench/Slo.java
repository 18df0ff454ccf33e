package dev.mlxring.bench;

import java.util.Locale;

/**
 * Service-level objectives for goodput ({@code --slo ttft=MS,tpot=MS,e2el=MS}, any subset): a
 * request is good when it succeeded and meets every objective given (its TTFT, TPOT and E2E
 * latency at most the bound, in ms). A request with one output token has no TPOT and meets a TPOT
 * objective. Unset bounds are NaN. {@link #NONE} has none: goodput is then not reported.
 */
public record Slo(double ttftMs, double tpotMs, double e2elMs) {
    public static final Slo NONE = new Slo(Double.NaN, Double.NaN, Double.NaN);

    /** Parses {@code ttft=500,tpot=50}; an unknown key, a repeated key or a bad number is refused, naming it. */
    public static Slo parse(String spec) {
        double ttft = Double.NaN;
        double tpot = Double.NaN;
        double e2el = Double.NaN;
        for (String part : spec.split(",")) {
            int eq = part.indexOf('=');
            if (eq <= 0) {
                throw new IllegalArgumentException("--slo takes KEY=MS pairs (ttft, tpot, e2el), got '" + part + "'");
            }
            String key = part.substring(0, eq).trim().toLowerCase(Locale.ROOT);
            double ms;
            try {
                ms = Double.parseDouble(part.substring(eq + 1).trim());
            } catch (NumberFormatException e) {
                throw new IllegalArgumentException(
                        "--slo " + key + " must be a number of ms, got '" + part.substring(eq + 1) + "'");
            }
            if (!(ms > 0) || Double.isInfinite(ms)) {
                throw new IllegalArgumentException("--slo " + key + " must be a positive number of ms, got " + ms);
            }
            switch (key) {
                case "ttft" -> ttft = once(key, ttft, ms);
                case "tpot" -> tpot = once(key, tpot, ms);
                case "e2el" -> e2el = once(key, e2el, ms);
                default ->
                    throw new IllegalArgumentException("--slo knows ttft, tpot and e2el (ms), got '" + key + "'");
            }
        }
        return new Slo(ttft, tpot, e2el);
    }

    private static double once(String key, double old, double ms) {
        if (!Double.isNaN(old)) {
            throw new IllegalArgumentException("--slo names " + key + " twice");
        }
        return ms;
    }

    /** Whether any objective is set. */
    public boolean any() {
        return !Double.isNaN(ttftMs) || !Double.isNaN(tpotMs) || !Double.isNaN(e2elMs);
    }

    /** Whether {@code r} succeeded and meets every objective set. */
    public boolean meets(RequestRecord r) {
        if (!r.ok()) {
            return false;
        }
        if (!Double.isNaN(ttftMs) && !(r.ttftMs() <= ttftMs)) {
            return false;
        }
        double tpot = r.tpotMs();
        if (!Double.isNaN(tpotMs) && !Double.isNaN(tpot) && tpot > tpotMs) {
            return false;
        }
        return Double.isNaN(e2elMs) || r.e2elMs() <= e2elMs;
    }

    /** {@code {"ttft": 500.0, …}} with the objectives set, for the results JSON. */
    public java.util.Map<String, Double> asMap() {
        java.util.Map<String, Double> m = new java.util.LinkedHashMap<>();
        if (!Double.isNaN(ttftMs)) {
            m.put("ttft", ttftMs);
        }
        if (!Double.isNaN(tpotMs)) {
            m.put("tpot", tpotMs);
        }
        if (!Double.isNaN(e2elMs)) {
            m.put("e2el", e2elMs);
        }
        return m;
    }
}
