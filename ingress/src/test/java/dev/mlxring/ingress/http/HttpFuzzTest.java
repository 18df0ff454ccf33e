package dev.mlxring.ingress.http;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.ObjectMapper;
import dev.mlxring.constraint.ConstraintTokenizer;
import dev.mlxring.constraint.ConstraintVocabulary;
import dev.mlxring.mlx.ProjectHome;
import dev.mlxring.pipeline.Engine;
import dev.mlxring.pipeline.testing.ScriptedExecutor;
import dev.mlxring.plan.RequestPlanner;
import dev.mlxring.plan.constraint.ConstraintCompiler;
import dev.mlxring.prep.ChatTemplate;
import dev.mlxring.prep.PromptPreparer;
import dev.mlxring.sink.DetokenizingSinks;
import dev.mlxring.tokenizer.HfTokenizer;
import java.net.URI;
import java.net.http.HttpClient;
import java.net.http.HttpRequest;
import java.net.http.HttpResponse;
import java.nio.charset.StandardCharsets;
import java.nio.file.Path;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.TreeMap;
import java.util.concurrent.CompletableFuture;
import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Test;

/**
 * A bounded HTTP fuzz of the running server: 3,000 seeded bodies (see {@link FuzzBodies}) to the
 * four generation routes (chat, completions, Anthropic messages, Responses), 8 in flight at a time, some with a wrong Content-Type. The server is the real
 * one over the default model's real prep (chat template, tokenizer), plan and sink stages; only
 * exec is a script (10 ids, no MLX), so the fuzz runs in seconds. Properties: every answer is a
 * 200 or a 4xx with an OpenAI error body; /health answers 200 after every batch; afterwards no
 * session is left admitted. And null means absent: each route's full body answers 200, and with
 * any one of its object keys set to null it answers exactly as with that key left out.
 */
class HttpFuzzTest {
    private static final ObjectMapper JSON = new ObjectMapper();
    private static final HttpClient HTTP =
            HttpClient.newBuilder().connectTimeout(Duration.ofSeconds(10)).build();
    private static HfTokenizer tokenizer;
    private static Engine engine;
    private static ConstraintCompiler constraints;
    private static HttpServer server;

    @BeforeAll
    static void start() throws Exception {
        Path model = ProjectHome.get().resolve("models/smollm2-135m-instruct");
        tokenizer = HfTokenizer.load(model);
        ChatTemplate template = ChatTemplate.load(model);
        int vocab = tokenizer.vocabSize();
        int[] eos = tokenizer.eosTokenIds();
        engine = Engine.builder()
                .preparer(new PromptPreparer(tokenizer, template, vocab, 8191))
                .planner(new RequestPlanner(
                        RequestPlanner.Defaults.mlxLm(8192), eos, eos, vocab, compiler(model, vocab, eos)))
                .executor(new ScriptedExecutor(plan -> new int[] {28, 1431, 3159, 30, 216, 1076, 314, 549, 2, 17}))
                .sinks(DetokenizingSinks.inferred(tokenizer, s -> tokenizer.encode(s, false))
                        .build())
                .start();
        server = new HttpServer(
                        new HttpServer.Config(
                                "127.0.0.1",
                                0,
                                "smollm2",
                                null,
                                new ServerDefaults(512, 8192, vocab),
                                "fp",
                                256 * 1024),
                        engine,
                        id -> tokenizer.decode(new int[] {id}, false))
                .start();
    }

    /** The real structured-output compiler, so schemas, regexes and grammars reach llguidance. */
    private static ConstraintCompiler compiler(Path model, int vocab, int[] eos) {
        constraints = ConstraintCompiler.lazy(() -> {
            try {
                return ConstraintTokenizer.create(
                        ConstraintVocabulary.fromTokenizerJson(model.resolve("tokenizer.json"), vocab),
                        eos,
                        t -> tokenizer.encode(t, false));
            } catch (java.io.IOException e) {
                throw new java.io.UncheckedIOException(e);
            }
        });
        return constraints;
    }

    @AfterAll
    static void stop() {
        if (server != null) {
            server.close();
        }
        if (engine != null) {
            engine.close();
        }
        // The scripted executor never closes the constraints it is handed (exec-stage's do), so
        // the compiler's tokenizer may still be referenced: the JVM frees it at exit.
        if (tokenizer != null) {
            tokenizer.close();
        }
    }

    @Test
    void everyAnswerIs200OrA4xxWithAnErrorBody() throws Exception {
        FuzzBodies bodies = new FuzzBodies(424242L);
        String base = "http://127.0.0.1:" + server.port();
        TreeMap<Integer, Integer> statuses = new TreeMap<>();
        List<String> violations = new ArrayList<>();
        int n = 0;
        for (int batch = 0; batch < 375; batch++) {
            List<CompletableFuture<HttpResponse<String>>> inFlight = new ArrayList<>();
            List<String> sent = new ArrayList<>();
            for (int i = 0; i < 8; i++, n++) {
                FuzzBodies.Api api = FuzzBodies.Api.values()[n % FuzzBodies.Api.values().length];
                byte[] body = bodies.next(api);
                String type = n % 50 == 0 ? "text/plain" : "application/json";
                sent.add(api.path + " " + new String(body, StandardCharsets.UTF_8));
                inFlight.add(HTTP.sendAsync(
                        HttpRequest.newBuilder(URI.create(base + api.path))
                                .timeout(Duration.ofSeconds(30))
                                .header("Content-Type", type)
                                .POST(HttpRequest.BodyPublishers.ofByteArray(body))
                                .build(),
                        HttpResponse.BodyHandlers.ofString()));
            }
            for (int i = 0; i < inFlight.size(); i++) {
                HttpResponse<String> r = inFlight.get(i).join();
                statuses.merge(r.statusCode(), 1, Integer::sum);
                String problem = check(r);
                if (problem != null && violations.size() < 10) {
                    violations.add(problem + " for body " + abbreviate(sent.get(i)));
                }
            }
            HttpResponse<String> health = HTTP.send(
                    HttpRequest.newBuilder(URI.create(base + "/health")).GET().build(),
                    HttpResponse.BodyHandlers.ofString());
            assertEquals(200, health.statusCode(), "after batch " + batch + ": " + health.body());
        }
        assertTrue(violations.isEmpty(), "statuses " + statuses + "; violations: " + violations);
        assertTrue(
                statuses.getOrDefault(200, 0) > 300 && statuses.getOrDefault(400, 0) > 300,
                "both valid and invalid bodies must be exercised: " + statuses);
        long deadline = System.nanoTime() + 10_000_000_000L;
        while (engine.admittedCount() > 0 && System.nanoTime() < deadline) {
            Thread.onSpinWait();
        }
        assertEquals(0, engine.admittedCount(), "no session is left running");
    }

    @Test
    void aNullValuedKeyAnywhereIsAnsweredAsIfItWereAbsent() throws Exception {
        String base = "http://127.0.0.1:" + server.port();
        List<String> violations = new ArrayList<>();
        int variants = 0;
        for (FuzzBodies.Api api : FuzzBodies.Api.values()) {
            HttpResponse<String> full = send(base + api.path, api.full);
            assertEquals(200, full.statusCode(), api + "'s full body must be accepted: " + full.body());
            for (FuzzBodies.NullVariant v : FuzzBodies.nullVariants(api)) {
                variants++;
                HttpResponse<String> nulled = send(base + api.path, v.nulled());
                HttpResponse<String> removed = send(base + api.path, v.removed());
                String problem = check(nulled);
                if (problem == null
                        && (nulled.statusCode() != removed.statusCode()
                                || nulled.statusCode() != 200
                                        && !errorMessage(nulled).equals(errorMessage(removed)))) {
                    problem = "null answers " + nulled.statusCode() + " " + abbreviate(nulled.body())
                            + " but absent answers " + removed.statusCode() + " " + abbreviate(removed.body());
                }
                if (problem != null) {
                    violations.add(api + " " + v.path() + ": " + problem);
                }
            }
        }
        assertTrue(variants > 150, "every key of every route's full body is tried: " + variants);
        assertTrue(
                violations.isEmpty(),
                violations.size() + " of " + variants + " variants: " + String.join("\n", violations));
    }

    private static HttpResponse<String> send(String uri, String body) throws Exception {
        return HTTP.send(
                HttpRequest.newBuilder(URI.create(uri))
                        .timeout(Duration.ofSeconds(30))
                        .header("Content-Type", "application/json")
                        .POST(HttpRequest.BodyPublishers.ofString(body))
                        .build(),
                HttpResponse.BodyHandlers.ofString());
    }

    private static String errorMessage(HttpResponse<String> r) throws Exception {
        return JSON.readTree(r.body()).at("/error/message").asText();
    }

    /** Null when the answer satisfies the property, else what is wrong with it. */
    private static String check(HttpResponse<String> r) {
        int status = r.statusCode();
        if (status == 200) {
            return null;
        }
        if (status < 400 || status >= 500) {
            return "status " + status + " (" + abbreviate(r.body()) + ")";
        }
        try {
            JsonNode error = JSON.readTree(r.body()).get("error");
            if (error == null
                    || !error.path("message").isTextual()
                    || !error.path("type").isTextual()) {
                return "status " + status + " without an error body: " + abbreviate(r.body());
            }
        } catch (Exception e) {
            return "status " + status + " with a non-JSON body: " + abbreviate(r.body());
        }
        return null;
    }

    private static String abbreviate(String s) {
        return s.length() > 240 ? s.substring(0, 240) + "…" : s;
    }
}
