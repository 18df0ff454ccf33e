package dev.mlxring.perf;

import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.ObjectMapper;
import com.fasterxml.jackson.databind.node.ObjectNode;
import dev.mlxring.bench.BodyEnd;
import java.io.BufferedReader;
import java.io.IOException;
import java.io.InputStream;
import java.io.InputStreamReader;
import java.net.URI;
import java.net.http.HttpClient;
import java.net.http.HttpRequest;
import java.net.http.HttpResponse;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Duration;
import java.time.Instant;
import java.time.temporal.ChronoUnit;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.Collections;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Locale;
import java.util.Map;
import java.util.concurrent.atomic.AtomicInteger;

/**
 * Streaming load against OpenAI-compatible servers: {@code N} concurrent clients
 * ({@link HttpClient}, HTTP/1.1, one connection each), each taking the next of a bounded number of
 * requests — chat completions over a fixed set of prompts, {@code max_tokens} fixed, temperature
 * 0, {@code stream: true} with {@code stream_options.include_usage} — and parsing the SSE stream.
 * Every request's user message is one of the prompts behind a tag unique to the request ({@code
 * "Question r.N.k: ..."}, the same on every target), so a server's prompt cache can reuse the
 * chat template's shared prefix (system prompt) but never a whole earlier prompt.
 * Per request: TTFT (send → first event with non-empty {@code delta.content}/{@code reasoning}),
 * the gaps between later content events (inter-token latency; a server that coalesces tokens
 * into one event shows fewer, longer gaps), completion tokens from the usage chunk. Per phase
 * (one target, one concurrency, one round): aggregate tok/s = content events of the phase / its
 * wall time. Throughput counts content events rather than usage tokens because the servers count
 * differently (mlx_lm.server includes the EOS token of a request that stops, mlx-ring does not);
 * with one event per token (the events/token column) the two are the same.
 *
 * <p>Order: every target gets {@code --warmup} sequential requests first (not recorded), then
 * {@code --warmup-rounds} whole rounds (not recorded either: a JVM server's per-request code is
 * still being compiled after a few requests, which a short run would measure); then rounds, and
 * in each round each concurrency level runs against every target in turn, the target order
 * reversed every other round (ABBA), so that slow drifts of the machine hit all targets alike.
 * Only one target is loaded at a time; the others sit idle. Only loopback URLs are accepted.
 *
 * <pre>
 * LoadHarness --target NAME=http://127.0.0.1:PORT [--target ...] [--concurrency 1,4] [--requests 16]
 *             [--max-tokens 64] [--rounds 2] [--warmup 3] [--warmup-rounds 0] [--timeout-s 300] [--out FILE.md] [--raw FILE.tsv]
 *             [--phases FILE.tsv] [--stagger-ms 0] [--command "how it was run"]
 * </pre>
 */
public final class LoadHarness {
    private static final ObjectMapper JSON = new ObjectMapper();

    /** The fixed prompt set: short chat questions, each answered greedily. */
    static final List<String> PROMPTS = List.of(
            "What is the capital of France?",
            "Write a haiku about the sea.",
            "Explain what a hash map is in two sentences.",
            "List three primary colors and one fact about each.",
            "Give me a short tip for learning to cook.",
            "What does a compiler do?",
            "Describe a sunset in one sentence.",
            "Why is the sky blue?");

    record Target(String name, URI base) {}

    record Options(
            List<Target> targets,
            int[] concurrency,
            int requests,
            int maxTokens,
            int rounds,
            int warmup,
            int warmupRounds,
            int timeoutS,
            Path out,
            Path raw,
            Path phases,
            int staggerMs,
            String command) {}

    /** One streamed request. Times in ns relative to the request's send. */
    record Result(
            String target,
            int concurrency,
            int round,
            int index,
            int prompt,
            int status,
            long startNs,
            long ttftNs,
            long endNs,
            long[] gapsNs,
            int events,
            int completionTokens,
            int promptTokens,
            int cachedTokens,
            String finish,
            String text,
            String error) {
        boolean ok() {
            return error == null && status == 200 && ttftNs >= 0;
        }

        /** Content events per second after the first (one event per token on both servers here). */
        double streamTps() {
            long span = Arrays.stream(gapsNs).sum();
            return events > 1 && span > 0 ? (events - 1) / (span / 1e9) : Double.NaN;
        }
    }

    record Phase(String target, int concurrency, int round, long wallNs, List<Result> results) {
        /** Content events of the phase: the same count on every server (usage counts differ, see the report). */
        int tokens() {
            return results.stream().filter(Result::ok).mapToInt(Result::events).sum();
        }

        double tps() {
            return tokens() / (wallNs / 1e9);
        }
    }

    private LoadHarness() {}

    public static void main(String[] argv) throws Exception {
        Options o = Flags.parseOrExit(argv, LoadHarness::parse, USAGE);
        Instant started = Instant.now();
        HttpClient client = HttpClient.newBuilder()
                .version(HttpClient.Version.HTTP_1_1)
                .connectTimeout(Duration.ofSeconds(10))
                .build();

        for (Target t : o.targets()) {
            log("warm-up: %d request(s) against %s", o.warmup(), t.name());
            for (int i = 0; i < o.warmup(); i++) {
                Result r = stream(client, t, o, 1, 0, i);
                if (!r.ok()) {
                    throw new IllegalStateException(
                            "warm-up request against " + t.name() + " failed: status " + r.status() + ", " + r.error());
                }
            }
        }
        for (int round = 1; round <= o.warmupRounds(); round++) {
            runRound(client, o, round, "warm-up round", null);
        }
        List<Phase> phases = new ArrayList<>();
        for (int round = 1; round <= o.rounds(); round++) {
            runRound(client, o, round, "round", phases);
        }
        String report = report(o, phases, started, Duration.between(started, Instant.now()));
        System.out.println(report);
        if (o.out() != null) {
            Files.createDirectories(o.out().toAbsolutePath().getParent());
            Files.writeString(o.out(), report);
            log("report written to %s", o.out());
        }
        if (o.raw() != null) {
            Files.createDirectories(o.raw().toAbsolutePath().getParent());
            Files.writeString(o.raw(), raw(phases));
            log("raw per-request rows written to %s", o.raw());
        }
        if (o.phases() != null) {
            Files.createDirectories(o.phases().toAbsolutePath().getParent());
            Files.writeString(o.phases(), phaseRows(phases));
            log("per-phase rows written to %s", o.phases());
        }
        boolean anyFailed = phases.stream().flatMap(p -> p.results().stream()).anyMatch(r -> !r.ok());
        System.exit(anyFailed ? 2 : 0);
    }

    /**
     * One round: every concurrency level against every target, the targets as given, reversed
     * every other round. Each phase is logged under {@code label} and added to {@code recorded},
     * or left out of the report when {@code recorded} is null (a warm-up round).
     */
    private static void runRound(HttpClient client, Options o, int round, String label, List<Phase> recorded)
            throws InterruptedException {
        List<Target> order = new ArrayList<>(o.targets());
        if (round % 2 == 0) {
            Collections.reverse(order);
        }
        for (int c : o.concurrency()) {
            for (Target t : order) {
                Phase p = phase(client, t, o, c, round);
                if (recorded != null) {
                    recorded.add(p);
                }
                long failed = p.results().stream().filter(r -> !r.ok()).count();
                log(
                        "%s %d, N=%d, %s: %d requests in %.1f s, %d content events, %.1f tok/s aggregate%s%s",
                        label,
                        round,
                        c,
                        t.name(),
                        p.results().size(),
                        p.wallNs() / 1e9,
                        p.tokens(),
                        p.tps(),
                        failed == 0 ? "" : ", " + failed + " FAILED",
                        recorded == null ? " (not recorded)" : "");
            }
        }
    }

    /**
     * {@code requests} requests by {@code concurrency} clients, prompts in order (round-robin);
     * with {@code --stagger-ms}, client i sends its first request i × stagger after the phase starts.
     */
    static Phase phase(HttpClient client, Target t, Options o, int concurrency, int round) throws InterruptedException {
        AtomicInteger next = new AtomicInteger();
        Result[] results = new Result[o.requests()];
        Thread[] clients = new Thread[concurrency];
        long t0 = System.nanoTime();
        for (int i = 0; i < concurrency; i++) {
            long delayMs = (long) i * o.staggerMs();
            clients[i] = Thread.ofPlatform().name("load-client-" + i).start(() -> {
                if (delayMs > 0) {
                    try {
                        Thread.sleep(delayMs); // the arrival schedule, not a synchronisation
                    } catch (InterruptedException e) {
                        Thread.currentThread().interrupt();
                        return;
                    }
                }
                int k;
                while ((k = next.getAndIncrement()) < o.requests()) {
                    results[k] = stream(client, t, o, concurrency, round, k);
                }
            });
        }
        for (Thread c : clients) {
            c.join();
        }
        long wall = System.nanoTime() - t0;
        return new Phase(t.name(), concurrency, round, wall, List.of(results));
    }

    /** The user message of request {@code index} of a phase: a prompt behind a tag unique to the request. */
    static String message(int round, int concurrency, int index) {
        String tag = round == 0 ? "Warm-up " + index : "Question " + round + "." + concurrency + "." + index;
        return tag + ": " + PROMPTS.get(index % PROMPTS.size());
    }

    static Result stream(HttpClient client, Target t, Options o, int concurrency, int round, int index) {
        int prompt = index % PROMPTS.size();
        ObjectNode body = JSON.createObjectNode();
        body.put("model", "default_model");
        body.putArray("messages").addObject().put("role", "user").put("content", message(round, concurrency, index));
        body.put("max_tokens", o.maxTokens());
        body.put("temperature", 0.0);
        body.put("stream", true);
        body.putObject("stream_options").put("include_usage", true);
        HttpRequest req = HttpRequest.newBuilder(t.base().resolve("/v1/chat/completions"))
                .timeout(Duration.ofSeconds(o.timeoutS()))
                .header("Content-Type", "application/json")
                .POST(HttpRequest.BodyPublishers.ofString(body.toString()))
                .build();
        long start = System.nanoTime();
        int status = -1;
        long first = -1;
        long last = -1;
        List<Long> gaps = new ArrayList<>();
        int events = 0;
        int completion = -1;
        int promptTokens = -1;
        int cached = 0;
        String finish = null;
        String error = null;
        long done = -1;
        StringBuilder text = new StringBuilder();
        try {
            HttpResponse<InputStream> resp = client.send(req, HttpResponse.BodyHandlers.ofInputStream());
            status = resp.statusCode();
            try (BufferedReader in = new BufferedReader(new InputStreamReader(resp.body(), StandardCharsets.UTF_8))) {
                if (status != 200) {
                    StringBuilder err = new StringBuilder();
                    String line;
                    while ((line = in.readLine()) != null && err.length() < 500) {
                        err.append(line);
                    }
                    error = "HTTP " + status + ": " + err;
                    BodyEnd.drain(resp.body(), BodyEnd.WITHIN);
                } else {
                    String line;
                    while ((line = in.readLine()) != null) {
                        if (!line.startsWith("data:")) {
                            continue; // blank separators, ": keepalive" comments
                        }
                        long now = System.nanoTime();
                        String data = line.substring(5).strip();
                        if (data.equals("[DONE]")) {
                            done = now;
                            break;
                        }
                        JsonNode ev = JSON.readTree(data);
                        if (ev.has("error")) {
                            error = "error event: " + ev.get("error");
                            continue;
                        }
                        JsonNode usage = ev.get("usage");
                        if (usage != null && !usage.isNull()) {
                            completion = usage.path("completion_tokens").asInt(-1);
                            promptTokens = usage.path("prompt_tokens").asInt(-1);
                            cached = usage.path("prompt_tokens_details")
                                    .path("cached_tokens")
                                    .asInt(0);
                        }
                        JsonNode choice = ev.path("choices").path(0);
                        if (choice.isMissingNode()) {
                            continue;
                        }
                        if (choice.hasNonNull("finish_reason")) {
                            finish = choice.get("finish_reason").asText();
                        }
                        JsonNode delta = choice.path("delta");
                        String piece = delta.path("content").asText("")
                                + delta.path("reasoning").asText("");
                        if (piece.isEmpty()) {
                            continue;
                        }
                        text.append(piece);
                        events++;
                        if (first < 0) {
                            first = now;
                        } else {
                            gaps.add(now - last);
                        }
                        last = now;
                    }
                    BodyEnd.drain(resp.body(), BodyEnd.WITHIN); // the rest is the chunked body's end
                }
            }
        } catch (IOException | RuntimeException e) {
            error = e.toString();
        } catch (InterruptedException e) {
            Thread.currentThread().interrupt();
            error = e.toString();
        }
        long end = done > 0 ? done : System.nanoTime();
        if (error == null && completion < 0) {
            error = "no usage chunk";
        }
        return new Result(
                t.name(),
                concurrency,
                round,
                index,
                prompt,
                status,
                start,
                first < 0 ? -1 : first - start,
                end - start,
                gaps.stream().mapToLong(Long::longValue).toArray(),
                events,
                completion,
                promptTokens,
                cached,
                finish,
                text.toString(),
                error);
    }

    // ---------------------------------------------------------------------------------- report

    static double percentile(double[] values, double p) {
        if (values.length == 0) {
            return Double.NaN;
        }
        double[] s = values.clone();
        Arrays.sort(s);
        int i = (int) Math.ceil(p / 100.0 * s.length) - 1;
        return s[Math.max(0, Math.min(s.length - 1, i))];
    }

    static double median(double[] values) {
        if (values.length == 0) {
            return Double.NaN;
        }
        double[] s = values.clone();
        Arrays.sort(s);
        int n = s.length;
        return n % 2 == 1 ? s[n / 2] : (s[n / 2 - 1] + s[n / 2]) / 2;
    }

    /** The metrics of one (target, concurrency) cell, pooled over its rounds. */
    record Cell(
            int requests,
            int failed,
            double ttftP50,
            double ttftP99,
            double itlP50,
            double itlP99,
            int itlSamples,
            double tpsMedian,
            double[] tpsRounds,
            double streamTpsP50,
            double tokensPerRequest,
            double eventsPerToken,
            double cachedPerRequest,
            double promptPerRequest) {}

    static Cell cell(List<Phase> phases) {
        List<Result> all = phases.stream().flatMap(p -> p.results().stream()).toList();
        List<Result> ok = all.stream().filter(Result::ok).toList();
        double[] ttft = ok.stream().mapToDouble(r -> r.ttftNs() / 1e6).toArray();
        double[] itl = ok.stream()
                .flatMapToLong(r -> Arrays.stream(r.gapsNs()))
                .mapToDouble(g -> g / 1e6)
                .toArray();
        double[] tps = phases.stream().mapToDouble(Phase::tps).toArray();
        double[] stream = ok.stream()
                .mapToDouble(Result::streamTps)
                .filter(d -> !Double.isNaN(d))
                .toArray();
        double tokens = ok.stream().mapToInt(Result::completionTokens).average().orElse(Double.NaN);
        double events = ok.stream().mapToInt(Result::events).sum()
                / (double) Math.max(
                        1, ok.stream().mapToInt(Result::completionTokens).sum());
        double cachedAvg = ok.stream().mapToInt(Result::cachedTokens).average().orElse(Double.NaN);
        double promptAvg = ok.stream().mapToInt(Result::promptTokens).average().orElse(Double.NaN);
        return new Cell(
                all.size(),
                all.size() - ok.size(),
                percentile(ttft, 50),
                percentile(ttft, 99),
                percentile(itl, 50),
                percentile(itl, 99),
                itl.length,
                median(tps),
                tps,
                percentile(stream, 50),
                tokens,
                events,
                cachedAvg,
                promptAvg);
    }

    static String report(Options o, List<Phase> phases, Instant started, Duration took) {
        StringBuilder md = new StringBuilder();
        List<String> names = o.targets().stream().map(Target::name).toList();
        md.append("### Load: ")
                .append(String.join(" vs ", names))
                .append(", streaming chat, ")
                .append(o.maxTokens())
                .append(" max tokens\n\n");
        md.append(String.format(
                Locale.ROOT,
                "Started %s, took %.0f s. Command: `%s`%n%n",
                started.truncatedTo(ChronoUnit.SECONDS),
                took.toMillis() / 1e3,
                o.command()));
        md.append(String.format(
                Locale.ROOT,
                "%d prompts (fixed chat questions, round-robin, each behind a tag unique to the request, the same on every target), temperature 0, `max_tokens` %d, `stream_options.include_usage`;"
                        + " %d requests per phase; %d round(s), each running every concurrency level against every target in turn"
                        + " (order reversed every other round); %d sequential warm-up request(s) per target first, then %d whole"
                        + " warm-up round(s), not recorded."
                        + " TTFT = send → first content event; ITL = gaps between later content events, pooled over requests;"
                        + " aggregate tok/s = content events / phase wall time, median over rounds; stream tok/s ="
                        + " (content events − 1) / (last − first content event) per request, median. Throughput counts"
                        + " content events, not usage tokens: mlx_lm.server's usage counts the EOS token of a request that"
                        + " ends with \"stop\", mlx-ring's does not (tokens/request is usage, events/token = events / usage)."
                        + " p99 of TTFT over %d requests per cell is close to the maximum.%s%n%n",
                PROMPTS.size(),
                o.maxTokens(),
                o.requests(),
                o.rounds(),
                o.warmup(),
                o.warmupRounds(),
                o.requests() * o.rounds(),
                o.staggerMs() == 0
                        ? ""
                        : String.format(
                                Locale.ROOT,
                                " Arrivals staggered: client i starts %d × i ms"
                                        + " into its phase (wall time includes the stagger).",
                                o.staggerMs())));
        md.append("| target | N | requests (failed) | TTFT p50 ms | TTFT p99 ms | ITL p50 ms | ITL p99 ms | ITL samples"
                + " | aggregate tok/s (median) | per round | stream tok/s p50 | tokens/request | events/token"
                + " | prompt tok | cached tok |\n");
        md.append("|---|---:|---:|---:|---:|---:|---:|---:|---:|---|---:|---:|---:|---:|---:|\n");
        Map<String, Cell> cells = new LinkedHashMap<>();
        for (int c : o.concurrency()) {
            for (String n : names) {
                List<Phase> ps = phases.stream()
                        .filter(p -> p.target().equals(n) && p.concurrency() == c)
                        .toList();
                Cell cell = cell(ps);
                cells.put(n + "@" + c, cell);
                md.append(String.format(
                        Locale.ROOT,
                        "| %s | %d | %d (%d) | %.1f | %.1f | %.2f | %.2f | %d | %.1f | %s | %.1f | %.1f | %.2f | %.1f | %.1f |%n",
                        n,
                        c,
                        cell.requests(),
                        cell.failed(),
                        cell.ttftP50(),
                        cell.ttftP99(),
                        cell.itlP50(),
                        cell.itlP99(),
                        cell.itlSamples(),
                        cell.tpsMedian(),
                        String.join(
                                ", ",
                                Arrays.stream(cell.tpsRounds())
                                        .mapToObj(d -> String.format(Locale.ROOT, "%.1f", d))
                                        .toList()),
                        cell.streamTpsP50(),
                        cell.tokensPerRequest(),
                        cell.eventsPerToken(),
                        cell.promptPerRequest(),
                        cell.cachedPerRequest()));
            }
        }
        if (names.size() >= 2) {
            String a = names.get(0);
            md.append(String.format(
                    Locale.ROOT,
                    "%nRatios %s / other (TTFT, ITL: < 1 means %s is faster; tok/s: > 1 means %s is faster):%n%n",
                    a,
                    a,
                    a));
            md.append("| vs | N | TTFT p50 | TTFT p99 | ITL p50 | ITL p99 | aggregate tok/s | stream tok/s p50 |\n");
            md.append("|---|---:|---:|---:|---:|---:|---:|---:|\n");
            for (String b : names.subList(1, names.size())) {
                for (int c : o.concurrency()) {
                    Cell x = cells.get(a + "@" + c);
                    Cell y = cells.get(b + "@" + c);
                    md.append(String.format(
                            Locale.ROOT,
                            "| %s | %d | %.3f | %.3f | %.3f | %.3f | **%.3f** | %.3f |%n",
                            b,
                            c,
                            x.ttftP50() / y.ttftP50(),
                            x.ttftP99() / y.ttftP99(),
                            x.itlP50() / y.itlP50(),
                            x.itlP99() / y.itlP99(),
                            x.tpsMedian() / y.tpsMedian(),
                            x.streamTpsP50() / y.streamTpsP50()));
                }
            }
            md.append('\n').append(sameText(phases, names, o.concurrency()));
        }
        List<Result> failures = phases.stream()
                .flatMap(p -> p.results().stream())
                .filter(r -> !r.ok())
                .toList();
        if (!failures.isEmpty()) {
            md.append("\n**Failed requests:**\n\n");
            failures.stream()
                    .limit(20)
                    .forEach(r -> md.append(String.format(
                            Locale.ROOT,
                            "- %s N=%d round %d request %d: %s%n",
                            r.target(),
                            r.concurrency(),
                            r.round(),
                            r.index(),
                            r.error())));
        }
        return md.toString();
    }

    /** Whether each request's greedy text is the same on every target (same round, N and index: same message). */
    static String sameText(List<Phase> phases, List<String> names, int[] concurrency) {
        StringBuilder md = new StringBuilder();
        for (int c : concurrency) {
            Map<String, List<String>> byRequest = new LinkedHashMap<>();
            for (Phase ph : phases) {
                if (ph.concurrency() != c) {
                    continue;
                }
                for (Result r : ph.results()) {
                    if (r.ok()) {
                        byRequest
                                .computeIfAbsent(r.round() + "." + r.index(), k -> new ArrayList<>())
                                .add(r.text());
                    }
                }
            }
            int same = 0;
            int compared = 0;
            List<String> differ = new ArrayList<>();
            for (var e : byRequest.entrySet()) {
                if (e.getValue().size() < names.size()) {
                    continue;
                }
                compared++;
                if (e.getValue().stream().distinct().count() == 1) {
                    same++;
                } else {
                    differ.add(c + "." + e.getKey());
                }
            }
            md.append(String.format(
                    Locale.ROOT,
                    "Output text at N=%d: %d of %d requests gave the same text on every" + " target%s.%n",
                    c,
                    same,
                    compared,
                    differ.isEmpty() ? "" : " (differing: round.N.index " + String.join(", ", differ) + ")"));
        }
        return md.toString();
    }

    /** One row per phase: what the throughput plot reads. */
    static String phaseRows(List<Phase> phases) {
        StringBuilder s = new StringBuilder(
                "target\tN\tround\twall_s\tcontent_events\taggregate_tps\tttft_p50_ms" + "\tttft_p99_ms\tfailed\n");
        for (Phase p : phases) {
            double[] ttft = p.results().stream()
                    .filter(Result::ok)
                    .mapToDouble(r -> r.ttftNs() / 1e6)
                    .toArray();
            s.append(String.format(
                    Locale.ROOT,
                    "%s\t%d\t%d\t%.3f\t%d\t%.3f\t%.1f\t%.1f\t%d%n",
                    p.target(),
                    p.concurrency(),
                    p.round(),
                    p.wallNs() / 1e9,
                    p.tokens(),
                    p.tps(),
                    percentile(ttft, 50),
                    percentile(ttft, 99),
                    p.results().stream().filter(r -> !r.ok()).count()));
        }
        return s.toString();
    }

    static String raw(List<Phase> phases) {
        StringBuilder s = new StringBuilder(
                "target\tN\tround\tindex\tprompt\tstatus\tttft_ms\ttotal_ms\tevents\tcompletion_tokens\tprompt_tokens\tcached_tokens"
                        + "\tfinish\titl_p50_ms\titl_max_ms\terror\n");
        for (Phase p : phases) {
            for (Result r : p.results()) {
                double[] g = Arrays.stream(r.gapsNs()).mapToDouble(x -> x / 1e6).toArray();
                s.append(String.format(
                        Locale.ROOT,
                        "%s\t%d\t%d\t%d\t%d\t%d\t%.2f\t%.2f\t%d\t%d\t%d\t%d\t%s\t%.2f\t%.2f\t%s%n",
                        r.target(),
                        r.concurrency(),
                        r.round(),
                        r.index(),
                        r.prompt(),
                        r.status(),
                        r.ttftNs() / 1e6,
                        r.endNs() / 1e6,
                        r.events(),
                        r.completionTokens(),
                        r.promptTokens(),
                        r.cachedTokens(),
                        r.finish(),
                        percentile(g, 50),
                        g.length == 0 ? Double.NaN : Arrays.stream(g).max().getAsDouble(),
                        r.error() == null ? "" : r.error().replace('\t', ' ').replace('\n', ' ')));
            }
        }
        return s.toString();
    }

    // ---------------------------------------------------------------------------------- options

    static final String USAGE = "LoadHarness --target NAME=http://127.0.0.1:PORT [--target ...] [--concurrency 1,4]"
            + " [--requests 16] [--max-tokens 64] [--rounds 2] [--warmup 3] [--warmup-rounds 0] [--timeout-s 300]"
            + " [--out FILE.md] [--raw FILE.tsv] [--phases FILE.tsv] [--stagger-ms 0] [--command TEXT]";

    static Options parse(String[] argv) {
        List<Target> targets = new ArrayList<>();
        int[] concurrency = {1, 4};
        int requests = 16;
        int maxTokens = 64;
        int rounds = 2;
        int warmup = 3;
        int warmupRounds = 0;
        int timeoutS = 300;
        Path out = null;
        Path raw = null;
        Path phasesOut = null;
        int staggerMs = 0;
        String command = "LoadHarness " + String.join(" ", argv);
        Flags f = new Flags(argv);
        while (f.next()) {
            switch (f.flag()) {
                case "--target" -> targets.add(target(f.value()));
                case "--concurrency" ->
                    concurrency = Arrays.stream(f.value().split(","))
                            .map(String::strip)
                            .mapToInt(s -> Flags.positive("--concurrency", s))
                            .toArray();
                case "--requests" -> requests = f.positive();
                case "--max-tokens" -> maxTokens = f.positive();
                case "--rounds" -> rounds = f.positive();
                case "--warmup" -> warmup = f.nonNegative();
                case "--warmup-rounds" -> warmupRounds = f.nonNegative();
                case "--timeout-s" -> timeoutS = f.positive();
                case "--out" -> out = Path.of(f.value());
                case "--raw" -> raw = Path.of(f.value());
                case "--phases" -> phasesOut = Path.of(f.value());
                case "--stagger-ms" -> staggerMs = f.nonNegative();
                case "--command" -> command = f.value();
                default -> throw f.unknown();
            }
        }
        if (targets.isEmpty()) {
            throw new IllegalArgumentException("at least one --target NAME=URL");
        }
        if (requests > 1000) {
            throw new IllegalArgumentException("--requests is bounded to 1000 per phase");
        }
        return new Options(
                targets,
                concurrency,
                requests,
                maxTokens,
                rounds,
                warmup,
                warmupRounds,
                timeoutS,
                out,
                raw,
                phasesOut,
                staggerMs,
                command);
    }

    private static Target target(String v) {
        int eq = v.indexOf('=');
        if (eq <= 0) {
            throw new IllegalArgumentException("--target must be NAME=URL, got " + v);
        }
        URI base = URI.create(v.substring(eq + 1));
        String host = base.getHost();
        if (!"http".equals(base.getScheme())
                || host == null
                || !(host.equals("127.0.0.1") || host.equals("localhost") || host.equals("[::1]"))) {
            throw new IllegalArgumentException("--target URL must be http on loopback (127.0.0.1), got " + base);
        }
        return new Target(v.substring(0, eq), base);
    }

    private static void log(String fmt, Object... args) {
        System.err.printf(Locale.ROOT, "[load] " + fmt + "%n", args);
    }
}
