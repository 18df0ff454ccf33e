package dev.mlxring.bench;

import com.fasterxml.jackson.databind.ObjectMapper;
import com.fasterxml.jackson.databind.SerializationFeature;
import java.io.IOException;
import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Duration;
import java.util.ArrayList;
import java.util.Collection;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Locale;
import java.util.Map;

/**
 * The results folder of a run: {@value #JSON_FILE} (schema {@value #SCHEMA_VERSION}, documented in
 * docs/bench.md), {@value #MARKDOWN_FILE} (one table row per target and level) and, through
 * {@link Plotter}, PNG plots beside them. The JSON's {@code results} rows pool a target's rounds
 * at one level and carry {@code vllm bench serve}'s field names ({@link LevelSummary}) plus
 * {@code target}, {@code max_concurrency} or {@code request_rate}, the rounds' output throughputs
 * and their spread, and the foreign-CPU guard; {@code phases} holds each round's row in the
 * order run; {@code requests} every request's own numbers. Numbers that do not exist (a
 * percentile of nothing) are null.
 */
public final class ResultsWriter {
    /** The version of the results JSON's layout; raised when a field changes meaning or goes. */
    public static final int SCHEMA_VERSION = 1;

    public static final String JSON_FILE = "results.json";
    public static final String MARKDOWN_FILE = "results.md";

    private static final ObjectMapper JSON = new ObjectMapper().enable(SerializationFeature.INDENT_OUTPUT);

    private ResultsWriter() {}

    /** The results document of {@code run} under {@code options}, as maps and lists ready for JSON. */
    public static Map<String, Object> document(BenchOptions options, BenchRunner.Run run) {
        Map<String, Object> doc = new LinkedHashMap<>();
        doc.put("schema_version", SCHEMA_VERSION);
        doc.put("tool", run.tool());
        doc.put("date", run.started().toString());
        doc.put("duration_s", Duration.between(run.started(), run.ended()).toMillis() / 1000.0);
        doc.put("command", options.command());
        doc.put("machine", run.machine());
        List<Map<String, Object>> targets = new ArrayList<>();
        for (TargetInfo t : run.targets()) {
            Map<String, Object> m = new LinkedHashMap<>();
            m.put("name", t.target().name());
            m.put("base_url", t.target().base().toString());
            m.put("model_id", t.modelId());
            m.put("headers", t.target().headers().keySet().stream().sorted().toList());
            m.put("server_header", t.serverHeader());
            m.put("models", t.models());
            m.put("models_error", t.modelsError());
            m.put("pid", t.pid() > 0 ? t.pid() : null);
            targets.add(m);
        }
        doc.put("targets", targets);
        Map<String, Object> config = new LinkedHashMap<>();
        config.put("endpoint_type", options.api().cliName());
        config.put("endpoint", run.endpoint());
        config.put("workload", options.workload());
        config.put("input_len", options.workloadParams().inputLen().toString());
        config.put("output_len", options.workloadParams().outputLen().toString());
        config.put("num_prompts", options.prompts().size());
        config.put("prefix_count", options.workloadParams().prefixCount());
        if (multiTurn(options)) {
            config.put("turns", options.workloadParams().turns());
            config.put("conversations", options.workloadParams().numPrompts());
        }
        config.put("seed", options.workloadParams().seed());
        config.put("rounds", options.rounds());
        config.put("warmup", options.warmup());
        config.put("levels", options.levels().stream().map(LoadLevel::label).toList());
        config.put("level_field", options.levels().getFirst().field());
        if (options.levels().getFirst() instanceof LoadLevel.Rate r) {
            config.put("burstiness", r.burstiness());
        }
        config.put("slo_ms", options.slo().asMap());
        config.put("timeout_s", options.timeout().toSeconds());
        config.put("cpu_bound_cores", options.cpuBoundCores());
        config.put("order", "ABBA: one target at a time, the targets' order reversed at every level step");
        doc.put("config", config);

        List<Map<String, Object>> results = new ArrayList<>();
        for (int l = 0; l < options.levels().size(); l++) {
            for (TargetInfo t : run.targets()) {
                int level = l;
                List<PhaseResult> mine = run.phases().stream()
                        .filter(p -> p.phase().levelIndex() == level
                                && p.phase().target().name().equals(t.target().name()))
                        .toList();
                if (!mine.isEmpty()) {
                    results.add(pooled(options, t, options.levels().get(l), mine));
                }
            }
        }
        doc.put("results", results);
        List<Map<String, Object>> phases = new ArrayList<>();
        List<Map<String, Object>> requests = new ArrayList<>();
        for (PhaseResult p : run.phases()) {
            Map<String, Object> m = head(p.phase().target(), p.phase().level());
            m.put("round", p.phase().round());
            m.put("order", p.order());
            m.putAll(LevelSummary.of(p.records(), p.durationNs(), options.slo()));
            m.put("foreign_cpu_cores", p.foreignCores());
            m.put("cpu_flagged", p.foreignCores() > options.cpuBoundCores());
            putAllocation(m, p.allocatedBytes(), ((Number) m.get("total_output_tokens")).longValue());
            if (p.stages() != null) {
                m.put("stage_latencies_us", p.stages().toMap());
            }
            if (multiTurn(options)) {
                m.putAll(TurnSummary.of(p.records(), options.prompts()));
            }
            phases.add(m);
            for (RequestRecord r : p.records()) {
                Map<String, Object> q = head(p.phase().target(), p.phase().level());
                q.put("round", p.phase().round());
                q.put("index", r.index());
                q.put("turn", options.prompts().get(r.index()).turn());
                q.put("ok", r.ok());
                q.put("status", r.status());
                q.put("ttft_ms", r.ttftMs());
                q.put("tpot_ms", r.tpotMs());
                q.put("e2el_ms", r.e2elMs());
                q.put("prompt_tokens", r.promptTokens() >= 0 ? r.promptTokens() : null);
                q.put("output_tokens", r.outputTokens());
                q.put("usage_output_tokens", r.completionTokens() >= 0 ? r.completionTokens() : null);
                q.put("text_events", r.textEvents());
                q.put("error_class", r.errorClass());
                q.put("error", r.errorDetail());
                requests.add(q);
            }
        }
        doc.put("phases", phases);
        doc.put("requests", requests);
        @SuppressWarnings("unchecked")
        Map<String, Object> clean = (Map<String, Object>) finite(doc);
        return clean;
    }

    private static Map<String, Object> head(Target t, LoadLevel level) {
        Map<String, Object> m = new LinkedHashMap<>();
        m.put("target", t.name());
        switch (level) {
            case LoadLevel.Concurrency c -> m.put("max_concurrency", c.clients());
            case LoadLevel.Rate r -> {
                m.put("request_rate", Double.isInfinite(r.perSecond()) ? "inf" : r.perSecond());
                m.put("burstiness", r.burstiness());
            }
        }
        return m;
    }

    /** A target's rounds at one level pooled: every request, the phases' wall times summed; plus the spread. */
    private static Map<String, Object> pooled(
            BenchOptions options, TargetInfo t, LoadLevel level, List<PhaseResult> rounds) {
        Map<String, Object> m = head(t.target(), level);
        m.put("endpoint_type", options.api().cliName());
        m.put("model_id", t.modelId());
        m.put("num_prompts", options.prompts().size());
        m.put("rounds", rounds.size());
        List<RequestRecord> all = new ArrayList<>();
        long durationNs = 0;
        double[] perRound = new double[rounds.size()];
        double foreignMax = Double.NaN;
        for (int i = 0; i < rounds.size(); i++) {
            PhaseResult p = rounds.get(i);
            all.addAll(p.records());
            durationNs += p.durationNs();
            perRound[i] = ((Number) LevelSummary.of(p.records(), p.durationNs(), Slo.NONE)
                            .get("output_throughput"))
                    .doubleValue();
            if (!Double.isNaN(p.foreignCores())) {
                foreignMax = Double.isNaN(foreignMax) ? p.foreignCores() : Math.max(foreignMax, p.foreignCores());
            }
        }
        m.putAll(LevelSummary.of(all, durationNs, options.slo()));
        m.put("output_throughput_rounds", perRound);
        Distribution d = Distribution.of(perRound);
        Map<String, Object> spread = new LinkedHashMap<>();
        spread.put("min", d.percentile(0));
        spread.put("max", d.percentile(100));
        spread.put("std", d.std());
        m.put("output_throughput_spread", spread);
        long allocated = 0;
        for (PhaseResult p : rounds) {
            allocated = p.allocatedBytes() < 0 || allocated < 0 ? -1 : allocated + p.allocatedBytes();
        }
        putAllocation(m, allocated, ((Number) m.get("total_output_tokens")).longValue());
        if (rounds.stream().allMatch(p -> p.stages() != null)) {
            StageLatencies pooledStages = new StageLatencies();
            rounds.forEach(p -> pooledStages.add(p.stages()));
            m.put("stage_latencies_us", pooledStages.toMap());
        }
        m.put("foreign_cpu_cores_max", foreignMax);
        m.put("cpu_flagged", foreignMax > options.cpuBoundCores());
        if (multiTurn(options)) {
            m.putAll(TurnSummary.of(all, options.prompts()));
        }
        return m;
    }

    /** Whether the run's workload is multi-turn conversations (its rows then carry TTFT by turn). */
    private static boolean multiTurn(BenchOptions options) {
        return options.workload().equals(Workloads.MULTI_TURN);
    }

    /** {@code allocated_bytes} and {@code allocated_bytes_per_output_token}, for an in-process run that measured them. */
    private static void putAllocation(Map<String, Object> m, long allocatedBytes, long outputTokens) {
        if (allocatedBytes >= 0) {
            m.put("allocated_bytes", allocatedBytes);
            m.put("allocated_bytes_per_output_token", outputTokens > 0 ? (double) allocatedBytes / outputTokens : null);
        }
    }

    /** {@code value} with every NaN or infinite double (also inside arrays) replaced by null. */
    static Object finite(Object value) {
        if (value instanceof Double d) {
            return Double.isFinite(d) ? d : null;
        }
        if (value instanceof double[] a) {
            List<Object> out = new ArrayList<>();
            for (double d : a) {
                out.add(finite(d));
            }
            return out;
        }
        if (value instanceof Map<?, ?> map) {
            Map<String, Object> out = new LinkedHashMap<>();
            map.forEach((k, v) -> out.put(String.valueOf(k), finite(v)));
            return out;
        }
        if (value instanceof Collection<?> c) {
            return c.stream().map(ResultsWriter::finite).toList();
        }
        return value;
    }

    /** Writes {@value #JSON_FILE} and {@value #MARKDOWN_FILE} into {@code dir} (created); returns the document. */
    public static Map<String, Object> write(Path dir, Map<String, Object> doc, String plotNote) throws IOException {
        Files.createDirectories(dir);
        JSON.writeValue(dir.resolve(JSON_FILE).toFile(), doc);
        Files.writeString(dir.resolve(MARKDOWN_FILE), markdown(doc, plotNote));
        return doc;
    }

    /** The Markdown report: the command, machine and targets, then one row per target and level. */
    @SuppressWarnings("unchecked")
    static String markdown(Map<String, Object> doc, String plotNote) {
        StringBuilder sb = new StringBuilder("# " + doc.get("tool") + "\n\n");
        sb.append("Command: `").append(doc.get("command")).append("`  \n");
        Map<String, Object> machine = (Map<String, Object>) doc.get("machine");
        sb.append("Machine: ")
                .append(machine.get("cpu"))
                .append(", ")
                .append(machine.get("cores"))
                .append(" cores, load ")
                .append(machine.get("load_1m"))
                .append("; ")
                .append(machine.get("java"))
                .append("  \n");
        Map<String, Object> config = (Map<String, Object>) doc.get("config");
        sb.append("Workload: ")
                .append(config.get("workload"))
                .append(", input ")
                .append(config.get("input_len"))
                .append(", output ")
                .append(config.get("output_len"))
                .append(", ")
                .append(config.get("num_prompts"))
                .append(" prompts")
                .append(
                        config.containsKey("turns")
                                ? " (" + config.get("conversations") + " conversations of " + config.get("turns")
                                        + " turns)"
                                : "")
                .append(", API ")
                .append(config.get("endpoint_type"))
                .append(", ")
                .append(config.get("rounds"))
                .append(" round(s), seed ")
                .append(config.get("seed"))
                .append("  \n");
        for (Map<String, Object> t : (List<Map<String, Object>>) doc.get("targets")) {
            sb.append("Target ")
                    .append(t.get("name"))
                    .append(": ")
                    .append(t.get("base_url"))
                    .append(", model ")
                    .append(t.get("model_id"));
            if (t.get("server_header") != null) {
                sb.append(", server ").append(t.get("server_header"));
            }
            sb.append("  \n");
        }
        String field = (String) config.get("level_field");
        boolean slo = !((Map<String, Object>) config.get("slo_ms")).isEmpty();
        sb.append('\n')
                .append("| target | ")
                .append(field.equals("max_concurrency") ? "concurrency" : "rate (req/s)")
                .append(" | ok | failed | req/s | output tok/s | rounds' spread | total tok/s | TTFT p50 / p99 ms"
                        + " | TPOT p50 / p99 ms | ITL p50 / p99 ms | E2E p50 / p99 ms")
                .append(slo ? " | goodput req/s" : "")
                .append(" | foreign CPU |\n");
        sb.append("|---|---|---|---|---|---|---|---|---|---|---|---|")
                .append(slo ? "---|" : "")
                .append("---|\n");
        for (Map<String, Object> r : (List<Map<String, Object>>) doc.get("results")) {
            Map<String, Object> spread = (Map<String, Object>) r.get("output_throughput_spread");
            sb.append("| ")
                    .append(r.get("target"))
                    .append(" | ")
                    .append(r.get(field))
                    .append(" | ")
                    .append(r.get("completed"))
                    .append(" | ")
                    .append(r.get("failed"))
                    .append(errors((Map<String, Object>) r.get("errors_by_class")))
                    .append(" | ")
                    .append(num(r.get("request_throughput"), 2))
                    .append(" | ")
                    .append(num(r.get("output_throughput"), 1))
                    .append(" | ")
                    .append(num(spread.get("min"), 1))
                    .append("–")
                    .append(num(spread.get("max"), 1))
                    .append(" | ")
                    .append(num(r.get("total_token_throughput"), 1));
            for (String metric : List.of("ttft", "tpot", "itl", "e2el")) {
                sb.append(" | ")
                        .append(num(r.get("median_" + metric + "_ms"), 1))
                        .append(" / ")
                        .append(num(r.get("p99_" + metric + "_ms"), 1));
            }
            if (slo) {
                sb.append(" | ").append(num(r.get("request_goodput"), 2));
            }
            sb.append(" | ")
                    .append(num(r.get("foreign_cpu_cores_max"), 2))
                    .append(Boolean.TRUE.equals(r.get("cpu_flagged")) ? " **FLAGGED**" : "")
                    .append(" |\n");
        }
        StringBuilder alloc = new StringBuilder();
        for (Map<String, Object> r : (List<Map<String, Object>>) doc.get("results")) {
            if (r.get("allocated_bytes_per_output_token") instanceof Number n) {
                alloc.append(alloc.isEmpty() ? "" : ", ")
                        .append(r.get("target"))
                        .append(" at ")
                        .append(r.get(field))
                        .append(": ")
                        .append(num(n, 0))
                        .append(" B");
            }
        }
        if (!alloc.isEmpty()) {
            sb.append("\nAllocated per output token (the whole JVM: engine, sink and client): ")
                    .append(alloc)
                    .append(".\n");
        }
        sb.append(stageTable(doc, field));
        sb.append(turnTable(doc, field));
        sb.append("\nLatencies over completed requests; ITL pools every gap between text events. Output tokens are"
                + " the servers' usage counts (the counted events where a server reports none). Targets ran one at a"
                + " time in ABBA order; \"rounds' spread\" is the lowest and highest output tok/s of the rounds;"
                + " foreign CPU is the most the rest of the machine used in any of the rounds, in cores.\n");
        if (plotNote != null && !plotNote.isEmpty()) {
            sb.append('\n').append(plotNote).append('\n');
        }
        return sb.toString();
    }

    /**
     * The multi-turn table (empty for other workloads): per target and level, TTFT p50 / p99 of
     * turn 1 and of the later turns, their p50 ratio, and each turn's p50 with its mean prompt
     * tokens.
     */
    @SuppressWarnings("unchecked")
    private static String turnTable(Map<String, Object> doc, String field) {
        List<Map<String, Object>> rows = (List<Map<String, Object>>) doc.get("results");
        if (rows.isEmpty() || !rows.getFirst().containsKey("ttft_by_turn")) {
            return "";
        }
        StringBuilder sb = new StringBuilder("\nTTFT by turn (a later turn resends the conversation so far: a prompt"
                + " cache that keeps it answers later turns faster than turn 1):\n\n");
        sb.append("| target | ")
                .append(field.equals("max_concurrency") ? "concurrency" : "rate (req/s)")
                .append(" | turn 1 TTFT p50 / p99 ms | later turns TTFT p50 / p99 ms | later / turn 1 (p50)"
                        + " | TTFT p50 ms by turn (mean prompt tokens) |\n")
                .append("|---|---|---|---|---|---|\n");
        for (Map<String, Object> r : rows) {
            Map<String, Object> first = (Map<String, Object>) r.get("ttft_first_turn");
            Map<String, Object> later = (Map<String, Object>) r.get("ttft_later_turns");
            Object ratio = first.get("median_ttft_ms") instanceof Number f
                            && later.get("median_ttft_ms") instanceof Number l
                            && f.doubleValue() > 0
                    ? l.doubleValue() / f.doubleValue()
                    : null;
            StringBuilder perTurn = new StringBuilder();
            for (Map<String, Object> t : (List<Map<String, Object>>) r.get("ttft_by_turn")) {
                perTurn.append(perTurn.isEmpty() ? "" : ", ")
                        .append(t.get("turn"))
                        .append(": ")
                        .append(num(t.get("median_ttft_ms"), 1))
                        .append(" (")
                        .append(num(t.get("mean_prompt_tokens"), 0))
                        .append(")");
            }
            sb.append("| ")
                    .append(r.get("target"))
                    .append(" | ")
                    .append(r.get(field))
                    .append(" | ")
                    .append(num(first.get("median_ttft_ms"), 1))
                    .append(" / ")
                    .append(num(first.get("p99_ttft_ms"), 1))
                    .append(" | ")
                    .append(num(later.get("median_ttft_ms"), 1))
                    .append(" / ")
                    .append(num(later.get("p99_ttft_ms"), 1))
                    .append(" | ")
                    .append(num(ratio, 2))
                    .append(" | ")
                    .append(perTurn)
                    .append(" |\n");
        }
        return sb.toString();
    }

    /**
     * The hand-off table of an in-process run (empty when no row has {@code stage_latencies_us}):
     * per target, level and hand-off, the count and the latency's mean, p50, p90, p99, p99.9 and
     * max in microseconds.
     */
    @SuppressWarnings("unchecked")
    private static String stageTable(Map<String, Object> doc, String field) {
        List<Map<String, Object>> rows = (List<Map<String, Object>>) doc.get("results");
        if (rows.stream().noneMatch(r -> r.get("stage_latencies_us") instanceof Map<?, ?>)) {
            return "";
        }
        StringBuilder sb = new StringBuilder("\nPipeline hand-offs, µs (HdrHistogram; the first token's way through the"
                + " stages, then every token's exec → sink → listener):\n\n");
        sb.append("| target | ")
                .append(field.equals("max_concurrency") ? "concurrency" : "rate (req/s)")
                .append(" | hand-off | count | mean | p50 | p90 | p99 | p99.9 | max |\n")
                .append("|---|---|---|---|---|---|---|---|---|---|\n");
        for (Map<String, Object> r : rows) {
            if (!(r.get("stage_latencies_us") instanceof Map<?, ?> stages)) {
                continue;
            }
            stages.forEach((name, v) -> {
                Map<String, Object> h = (Map<String, Object>) v;
                sb.append("| ")
                        .append(r.get("target"))
                        .append(" | ")
                        .append(r.get(field))
                        .append(" | ")
                        .append(name)
                        .append(" | ")
                        .append(h.get("count"));
                for (String k : List.of("mean_us", "p50_us", "p90_us", "p99_us", "p99.9_us", "max_us")) {
                    sb.append(" | ").append(num(h.get(k), 1));
                }
                sb.append(" |\n");
            });
        }
        return sb.toString();
    }

    private static String errors(Map<String, Object> byClass) {
        if (byClass == null || byClass.isEmpty()) {
            return "";
        }
        StringBuilder sb = new StringBuilder(" (");
        byClass.forEach((k, v) ->
                sb.append(sb.length() > 2 ? ", " : "").append(k).append(' ').append(v));
        return sb.append(')').toString();
    }

    private static String num(Object v, int decimals) {
        if (!(v instanceof Number n)) {
            return "–";
        }
        return String.format(Locale.ROOT, "%." + decimals + "f", n.doubleValue());
    }
}
