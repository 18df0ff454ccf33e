package dev.mlxring.bench;

import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.ObjectMapper;
import java.io.IOException;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.List;
import java.util.Locale;

/**
 * {@code mlx-ring bench compare A B}: two runs' results side by side, row by row (a row of A
 * matched with B's row of the same target and level), as a Markdown table of output throughput
 * and TTFT/TPOT p50 with B's ratio to A, and for each row a significance note: with two or more
 * rounds on both sides, whether the rounds' output-throughput ranges overlap (then the difference
 * is within the noise of these rounds) or not; with one round, that there is no spread to judge
 * by. Config fields that differ between the runs (workload, lengths, API) are listed first, since
 * such runs measured different things.
 */
public final class ResultsComparison {
    private static final ObjectMapper JSON = new ObjectMapper();

    private ResultsComparison() {}

    /** Reads a results JSON: {@code path} itself, or {@code path/results.json} for a folder. */
    public static JsonNode read(Path path) {
        Path file = Files.isDirectory(path) ? path.resolve(ResultsWriter.JSON_FILE) : path;
        if (!Files.isRegularFile(file)) {
            throw new IllegalArgumentException(file + ": no such results file");
        }
        JsonNode doc;
        try {
            doc = JSON.readTree(file.toFile());
        } catch (IOException e) {
            throw new IllegalArgumentException(file + ": not a results JSON: " + e.getMessage());
        }
        if (doc == null
                || !doc.path("schema_version").isInt()
                || !doc.path("results").isArray()) {
            throw new IllegalArgumentException(
                    file + ": not a bench serve results JSON (no schema_version or results)");
        }
        if (doc.get("schema_version").asInt() != ResultsWriter.SCHEMA_VERSION) {
            throw new IllegalArgumentException(file + ": schema_version "
                    + doc.get("schema_version").asInt() + ", this build reads " + ResultsWriter.SCHEMA_VERSION);
        }
        return doc;
    }

    /** The comparison of {@code a} (labelled {@code nameA}) with {@code b}, as Markdown. */
    public static String markdown(JsonNode a, String nameA, JsonNode b, String nameB) {
        StringBuilder sb = new StringBuilder("# mlx-ring bench compare\n\n");
        sb.append("A: `")
                .append(nameA)
                .append("` (")
                .append(a.path("date").asText())
                .append(")  \n");
        sb.append("B: `")
                .append(nameB)
                .append("` (")
                .append(b.path("date").asText())
                .append(")\n\n");
        List<String> differ = new ArrayList<>();
        for (String key : List.of(
                "endpoint_type",
                "workload",
                "input_len",
                "output_len",
                "num_prompts",
                "seed",
                "prefix_count",
                "burstiness")) {
            JsonNode va = a.path("config").path(key);
            JsonNode vb = b.path("config").path(key);
            if (!va.equals(vb)) {
                differ.add(key + " " + va + " vs " + vb);
            }
        }
        if (!differ.isEmpty()) {
            sb.append("**The runs differ in ")
                    .append(String.join(", ", differ))
                    .append(": they measured different" + " workloads.**\n\n");
        }
        sb.append("| target | level | output tok/s A | B | B/A | TTFT p50 ms A | B | TPOT p50 ms A | B | note |\n");
        sb.append("|---|---|---|---|---|---|---|---|---|---|\n");
        int matched = 0;
        for (JsonNode ra : a.get("results")) {
            JsonNode rb = match(ra, b.get("results"));
            if (rb == null) {
                continue;
            }
            matched++;
            double ta = ra.path("output_throughput").asDouble(Double.NaN);
            double tb = rb.path("output_throughput").asDouble(Double.NaN);
            sb.append("| ")
                    .append(ra.path("target").asText())
                    .append(" | ")
                    .append(level(ra))
                    .append(" | ")
                    .append(num(ta, 1))
                    .append(" | ")
                    .append(num(tb, 1))
                    .append(" | ")
                    .append(num(tb / ta, 3))
                    .append("× | ")
                    .append(num(ra.path("median_ttft_ms").asDouble(Double.NaN), 1))
                    .append(" | ")
                    .append(num(rb.path("median_ttft_ms").asDouble(Double.NaN), 1))
                    .append(" | ")
                    .append(num(ra.path("median_tpot_ms").asDouble(Double.NaN), 1))
                    .append(" | ")
                    .append(num(rb.path("median_tpot_ms").asDouble(Double.NaN), 1))
                    .append(" | ")
                    .append(significance(ra, rb))
                    .append(" |\n");
        }
        if (matched == 0) {
            sb.append("\nNo row of A has a row of B with the same target and level.\n");
        }
        return sb.toString();
    }

    /** B's row with A's target and level, or null. */
    private static JsonNode match(JsonNode ra, JsonNode rows) {
        for (JsonNode rb : rows) {
            if (rb.path("target").equals(ra.path("target"))
                    && rb.path("max_concurrency").equals(ra.path("max_concurrency"))
                    && rb.path("request_rate").equals(ra.path("request_rate"))) {
                return rb;
            }
        }
        return null;
    }

    private static String level(JsonNode r) {
        return r.has("max_concurrency")
                ? "c=" + r.get("max_concurrency").asText()
                : "rate=" + r.path("request_rate").asText();
    }

    /**
     * Whether the rounds say anything: "within the rounds' spread" when the ranges overlap,
     * "beyond the rounds' spread" when they do not, and a note when either side ran one round.
     */
    static String significance(JsonNode ra, JsonNode rb) {
        int na = ra.path("rounds").asInt(1);
        int nb = rb.path("rounds").asInt(1);
        if (na < 2 || nb < 2) {
            return "one round on a side: no spread to judge by (use --rounds 3 or more)";
        }
        double aMin = ra.at("/output_throughput_spread/min").asDouble();
        double aMax = ra.at("/output_throughput_spread/max").asDouble();
        double bMin = rb.at("/output_throughput_spread/min").asDouble();
        double bMax = rb.at("/output_throughput_spread/max").asDouble();
        if (aMax >= bMin && bMax >= aMin) {
            return "ranges overlap: within the rounds' spread, not significant";
        }
        return (bMin > aMax ? "B higher" : "B lower") + " beyond the rounds' spread";
    }

    private static String num(double v, int decimals) {
        return Double.isFinite(v) ? String.format(Locale.ROOT, "%." + decimals + "f", v) : "–";
    }
}
