package dev.mlxring.bench;

import com.fasterxml.jackson.databind.ObjectMapper;
import com.fasterxml.jackson.databind.SerializationFeature;
import java.io.IOException;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Locale;
import java.util.Map;

/**
 * {@code bench decode}'s results folder: {@value ResultsWriter#JSON_FILE} (schema
 * {@value #SCHEMA_VERSION}, docs/bench.md) and {@value ResultsWriter#MARKDOWN_FILE}. One
 * {@code engines[]} row per engine over its runs: prefill and decode tok/s (median, min, max; decode
 * also std), the decode median over the reference engine's (mlx-lm when it ran), the most foreign
 * CPU of its runs and whether that passed the bound, and whether its tokens equal the reference's
 * (the first index where they differ). {@code runs[]} keeps every run in the order run.
 */
public final class DecodeReport {
    public static final int SCHEMA_VERSION = 1;

    private static final ObjectMapper JSON = new ObjectMapper().enable(SerializationFeature.INDENT_OUTPUT);

    private DecodeReport() {}

    /**
     * The document of {@code runs}; {@code reference}: the engine the others' decode rate and
     * tokens are compared with (null: none); {@code cpuBoundCores}: the foreign CPU above which a
     * run is flagged.
     */
    public static Map<String, Object> document(
            String command,
            Map<String, Object> machine,
            Map<String, Object> config,
            List<String> engines,
            List<DecodeRun> runs,
            String reference,
            double cpuBoundCores) {
        Map<String, Object> doc = new LinkedHashMap<>();
        doc.put("schema_version", SCHEMA_VERSION);
        doc.put("tool", "mlx-ring bench decode");
        doc.put("date", java.time.Instant.now().toString());
        doc.put("command", command);
        doc.put("machine", machine);
        doc.put("config", config);
        DecodeRun ref = reference == null
                ? null
                : runs.stream()
                        .filter(r -> r.engine().equals(reference) && r.tokens() != null)
                        .findFirst()
                        .orElse(null);
        double refDecode = reference == null ? Double.NaN : decodeMedian(runs, reference);
        List<Map<String, Object>> rows = new ArrayList<>();
        for (String e : engines) {
            List<DecodeRun> mine =
                    runs.stream().filter(r -> r.engine().equals(e)).toList();
            if (mine.isEmpty()) {
                continue;
            }
            Distribution prefill = Distribution.of(
                    mine.stream().mapToDouble(DecodeRun::prefillTps).toArray());
            Distribution decode = Distribution.of(
                    mine.stream().mapToDouble(DecodeRun::decodeTps).toArray());
            Distribution foreign = Distribution.of(
                    mine.stream().mapToDouble(DecodeRun::foreignCores).toArray());
            Map<String, Object> m = new LinkedHashMap<>();
            m.put("engine", e);
            m.put("runs", mine.size());
            m.put("prompt_tokens", mine.getFirst().promptTokens());
            m.put("gen_tokens", mine.getFirst().genTokens());
            m.put("prefill_tps_median", prefill.median());
            m.put("prefill_tps_min", prefill.percentile(0));
            m.put("prefill_tps_max", prefill.percentile(100));
            m.put("decode_tps_median", decode.median());
            m.put("decode_tps_min", decode.percentile(0));
            m.put("decode_tps_max", decode.percentile(100));
            m.put("decode_tps_std", decode.std());
            m.put("decode_vs_reference", decode.median() / refDecode);
            double foreignMax = foreign.count() == 0 ? Double.NaN : foreign.percentile(100);
            m.put("foreign_cpu_cores_max", foreignMax);
            m.put("cpu_flagged", foreignMax > cpuBoundCores);
            Integer mismatch = null;
            Boolean match = null;
            if (ref != null && !e.equals(reference)) {
                for (DecodeRun r : mine) {
                    if (r.tokens() == null) {
                        continue;
                    }
                    int at = firstDifference(ref.tokens(), r.tokens());
                    match = match == null ? at < 0 : match && at < 0;
                    if (at >= 0 && (mismatch == null || at < mismatch)) {
                        mismatch = at;
                    }
                }
            }
            m.put("tokens_match_reference", match);
            m.put("first_token_mismatch", mismatch);
            rows.add(m);
        }
        doc.put("reference", reference);
        doc.put("engines", rows);
        List<Map<String, Object>> all = new ArrayList<>();
        for (int i = 0; i < runs.size(); i++) {
            DecodeRun r = runs.get(i);
            Map<String, Object> m = new LinkedHashMap<>();
            m.put("order", i);
            m.put("round", r.round());
            m.put("engine", r.engine());
            m.put("prompt_tokens", r.promptTokens());
            m.put("gen_tokens", r.genTokens());
            m.put("prefill_s", r.promptSeconds());
            m.put("decode_s", r.genSeconds());
            m.put("prefill_tps", r.prefillTps());
            m.put("decode_tps", r.decodeTps());
            m.put("foreign_cpu_cores", r.foreignCores());
            all.add(m);
        }
        doc.put("runs", all);
        @SuppressWarnings("unchecked")
        Map<String, Object> clean = (Map<String, Object>) ResultsWriter.finite(doc);
        return clean;
    }

    private static double decodeMedian(List<DecodeRun> runs, String engine) {
        return Distribution.of(runs.stream()
                        .filter(r -> r.engine().equals(engine))
                        .mapToDouble(DecodeRun::decodeTps)
                        .toArray())
                .median();
    }

    /** The first index where {@code a} and {@code b} differ (a length difference counts), or -1. */
    static int firstDifference(int[] a, int[] b) {
        int n = Math.min(a.length, b.length);
        for (int i = 0; i < n; i++) {
            if (a[i] != b[i]) {
                return i;
            }
        }
        return a.length == b.length ? -1 : n;
    }

    /** Writes the JSON and the Markdown into {@code dir} (created). */
    public static void write(Path dir, Map<String, Object> doc) throws IOException {
        Files.createDirectories(dir);
        JSON.writeValue(dir.resolve(ResultsWriter.JSON_FILE).toFile(), doc);
        Files.writeString(dir.resolve(ResultsWriter.MARKDOWN_FILE), markdown(doc));
    }

    /** The command, machine and configuration, then one row per engine. */
    @SuppressWarnings("unchecked")
    public static String markdown(Map<String, Object> doc) {
        StringBuilder sb = new StringBuilder("# mlx-ring bench decode\n\n");
        sb.append("Command: `").append(doc.get("command")).append("`  \n");
        Map<String, Object> machine = (Map<String, Object>) doc.get("machine");
        sb.append("Machine: ")
                .append(machine.get("cpu"))
                .append(", ")
                .append(machine.get("cores"))
                .append(" cores, load ")
                .append(machine.get("load_1m"))
                .append("  \n");
        Map<String, Object> config = (Map<String, Object>) doc.get("config");
        sb.append("Config: ");
        config.forEach((k, v) -> sb.append(k).append(' ').append(v).append("; "));
        sb.append("\n\n| engine | runs | prefill tok/s median (min–max) | decode tok/s median (min–max) | decode vs ")
                .append(doc.get("reference") == null ? "reference" : doc.get("reference"))
                .append(" | tokens | foreign CPU |\n|---|---|---|---|---|---|---|\n");
        for (Map<String, Object> r : (List<Map<String, Object>>) doc.get("engines")) {
            Object match = r.get("tokens_match_reference");
            sb.append("| ")
                    .append(r.get("engine"))
                    .append(" | ")
                    .append(r.get("runs"))
                    .append(" | ")
                    .append(num(r.get("prefill_tps_median"), 1))
                    .append(" (")
                    .append(num(r.get("prefill_tps_min"), 1))
                    .append("–")
                    .append(num(r.get("prefill_tps_max"), 1))
                    .append(") | ")
                    .append(num(r.get("decode_tps_median"), 2))
                    .append(" (")
                    .append(num(r.get("decode_tps_min"), 2))
                    .append("–")
                    .append(num(r.get("decode_tps_max"), 2))
                    .append(") | ")
                    .append(num(r.get("decode_vs_reference"), 2))
                    .append(" | ")
                    .append(
                            match == null
                                    ? "–"
                                    : Boolean.TRUE.equals(match)
                                            ? "same"
                                            : "differ from " + r.get("first_token_mismatch"))
                    .append(" | ")
                    .append(num(r.get("foreign_cpu_cores_max"), 2))
                    .append(Boolean.TRUE.equals(r.get("cpu_flagged")) ? " **FLAGGED**" : "")
                    .append(" |\n");
        }
        sb.append("\nB=1, greedy, the same prompt ids on every engine (llama.cpp: its own tokens of the GGUF);"
                + " prefill tok/s = prompt tokens / time to the first token, decode tok/s = generated tokens / time"
                + " from the first token to the last (mlx-lm's stream_generate). Engines ran one at a time, the"
                + " order reversed every other round; foreign CPU is the most the rest of the machine used during"
                + " any of an engine's runs, in cores.\n");
        return sb.toString();
    }

    private static String num(Object v, int decimals) {
        return v instanceof Number n ? String.format(Locale.ROOT, "%." + decimals + "f", n.doubleValue()) : "–";
    }
}
