package dev.mlxring.bench;

import java.util.ArrayList;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Locale;
import java.util.Map;
import java.util.TreeMap;

/**
 * The summary of one phase (one target at one load level, one round, or rounds pooled) under
 * {@code vllm bench serve}'s field names: {@code completed}, {@code failed},
 * {@code total_input_tokens}, {@code total_output_tokens}, {@code duration} (s),
 * {@code request_throughput} (completed requests / s), {@code output_throughput} (output tokens / s),
 * {@code total_token_throughput} ((input + output tokens) / s), {@code request_goodput} (requests
 * meeting the SLOs / s; only with an SLO), and for each of {@code ttft}, {@code tpot}, {@code itl},
 * {@code e2el}: {@code mean_X_ms}, {@code median_X_ms}, {@code std_X_ms} and {@code pP_X_ms} for P
 * in {@link #PERCENTILES} (vLLM writes 99.9 as {@code p99.9}). Latencies are over the completed
 * requests; ITL pools every gap of every completed request. Input tokens are the usage's prompt
 * tokens (a request whose server reported none counts 0). Adds {@code errors_by_class}.
 */
public final class LevelSummary {
    /** The percentiles reported for every latency. */
    public static final List<Double> PERCENTILES = List.of(50.0, 90.0, 99.0, 99.9);

    private LevelSummary() {}

    /** The summary of {@code records}, which took {@code durationNs} of wall time, goodput against {@code slo}. */
    public static Map<String, Object> of(List<RequestRecord> records, long durationNs, Slo slo) {
        if (durationNs <= 0) {
            throw new IllegalArgumentException("a phase lasts a positive time, got " + durationNs + " ns");
        }
        double seconds = durationNs / 1e9;
        List<RequestRecord> ok = records.stream().filter(RequestRecord::ok).toList();
        long input = 0;
        long output = 0;
        long good = 0;
        Map<String, Integer> errors = new TreeMap<>();
        for (RequestRecord r : records) {
            if (!r.ok()) {
                errors.merge(r.errorClass(), 1, Integer::sum);
            }
        }
        List<Double> itl = new ArrayList<>();
        for (RequestRecord r : ok) {
            input += Math.max(0, r.promptTokens());
            output += r.outputTokens();
            if (slo.meets(r)) {
                good++;
            }
            for (double g : r.itlMs()) {
                itl.add(g);
            }
        }
        Map<String, Object> m = new LinkedHashMap<>();
        m.put("duration", seconds);
        m.put("completed", ok.size());
        m.put("failed", records.size() - ok.size());
        m.put("total_input_tokens", input);
        m.put("total_output_tokens", output);
        m.put("request_throughput", ok.size() / seconds);
        if (slo.any()) {
            m.put("request_goodput", good / seconds);
        }
        m.put("output_throughput", output / seconds);
        m.put("total_token_throughput", (input + output) / seconds);
        put(
                m,
                "ttft",
                Distribution.of(ok.stream().mapToDouble(RequestRecord::ttftMs).toArray()));
        put(
                m,
                "tpot",
                Distribution.of(ok.stream().mapToDouble(RequestRecord::tpotMs).toArray()));
        put(
                m,
                "itl",
                Distribution.of(itl.stream().mapToDouble(Double::doubleValue).toArray()));
        put(
                m,
                "e2el",
                Distribution.of(ok.stream().mapToDouble(RequestRecord::e2elMs).toArray()));
        m.put("errors_by_class", errors);
        return m;
    }

    private static void put(Map<String, Object> m, String metric, Distribution d) {
        m.put("mean_" + metric + "_ms", d.mean());
        m.put("median_" + metric + "_ms", d.median());
        m.put("std_" + metric + "_ms", d.std());
        for (double p : PERCENTILES) {
            m.put(percentileKey(p, metric), d.percentile(p));
        }
    }

    /** {@code p99_ttft_ms}, {@code p99.9_ttft_ms}: vLLM's key for percentile {@code p} of {@code metric}. */
    public static String percentileKey(double p, String metric) {
        String n = p == Math.rint(p) ? Integer.toString((int) p) : String.format(Locale.ROOT, "%s", p);
        return "p" + n + "_" + metric + "_ms";
    }
}
