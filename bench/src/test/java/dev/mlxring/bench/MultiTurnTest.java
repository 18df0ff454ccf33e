package dev.mlxring.bench;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.ObjectMapper;
import com.sun.net.httpserver.HttpServer;
import java.io.ByteArrayOutputStream;
import java.io.IOException;
import java.io.OutputStream;
import java.io.PrintStream;
import java.net.InetSocketAddress;
import java.net.URI;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Duration;
import java.util.ArrayList;
import java.util.Collections;
import java.util.List;
import java.util.Map;
import java.util.concurrent.Executors;
import java.util.concurrent.atomic.AtomicInteger;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

/**
 * {@code --workload multi-turn}: each conversation's next turn carries its earlier turns with the
 * answers the server actually streamed (reasoning left out), turns of a conversation go one after
 * another, a turn after a failed one is not sent, and the results give TTFT by turn.
 */
class MultiTurnTest {
    private static final ObjectMapper JSON = new ObjectMapper();

    @TempDir
    Path dir;

    private HttpServer server;

    /** Every chat request's messages, and the answer (content only) the server streamed back to it. */
    private record Exchange(JsonNode messages, String answer) {}

    private final List<Exchange> seen = Collections.synchronizedList(new ArrayList<>());

    @AfterEach
    void stop() {
        if (server != null) {
            server.stop(0);
        }
    }

    /**
     * A chat server whose answer to each request is unique (its arrival number and message count),
     * streamed in three content chunks after a reasoning chunk; a request whose last user message
     * starts with {@code failOn} gets a 429.
     */
    private URI scriptedServer(String failOn) throws IOException {
        server = HttpServer.create(new InetSocketAddress("127.0.0.1", 0), 0);
        server.setExecutor(Executors.newVirtualThreadPerTaskExecutor());
        AtomicInteger n = new AtomicInteger();
        server.createContext("/v1/models", ex -> {
            byte[] b = "{\"data\":[{\"id\":\"m\"}]}".getBytes(StandardCharsets.UTF_8);
            ex.sendResponseHeaders(200, b.length);
            try (OutputStream out = ex.getResponseBody()) {
                out.write(b);
            }
        });
        server.createContext("/v1/chat/completions", ex -> {
            JsonNode body = JSON.readTree(ex.getRequestBody());
            JsonNode messages = body.get("messages");
            String last = messages.get(messages.size() - 1).path("content").asText();
            if (failOn != null && last.startsWith(failOn)) {
                seen.add(new Exchange(messages, null));
                byte[] b = "{\"error\":{\"message\":\"busy\"}}".getBytes(StandardCharsets.UTF_8);
                ex.sendResponseHeaders(429, b.length);
                try (OutputStream out = ex.getResponseBody()) {
                    out.write(b);
                }
                return;
            }
            String answer = "Answer " + n.incrementAndGet() + " to " + messages.size() + " messages.";
            seen.add(new Exchange(messages, answer));
            ex.getResponseHeaders().add("Content-Type", "text/event-stream");
            ex.sendResponseHeaders(200, 0);
            try (OutputStream out = ex.getResponseBody()) {
                List<String> events = new ArrayList<>();
                events.add("{\"choices\":[{\"delta\":{\"reasoning\":\"thinking it over\"}}]}");
                int third = answer.length() / 3;
                for (String part : List.of(
                        answer.substring(0, third), answer.substring(third, 2 * third), answer.substring(2 * third))) {
                    events.add("{\"choices\":[{\"delta\":{\"content\":" + JSON.writeValueAsString(part) + "}}]}");
                }
                events.add("{\"choices\":[],\"usage\":{\"prompt_tokens\":" + (10 * messages.size())
                        + ",\"completion_tokens\":4}}");
                for (String e : events) {
                    out.write(("data: " + e + "\n\n").getBytes(StandardCharsets.UTF_8));
                    out.flush();
                }
                out.write("data: [DONE]\n\n".getBytes(StandardCharsets.UTF_8));
            }
        });
        server.start();
        return URI.create("http://127.0.0.1:" + server.getAddress().getPort());
    }

    private BenchOptions options(URI base, int conversations, int turns, LoadLevel level) {
        Workloads.Params p =
                new Workloads.Params(LengthRange.fixed(30), LengthRange.fixed(4), conversations, 1, 7, turns);
        return new BenchOptions(
                List.of(new Target("ours", base, Map.of(), null)),
                ApiDialect.CHAT,
                List.of(level),
                Workloads.MULTI_TURN,
                p,
                Workloads.load(Workloads.MULTI_TURN, p),
                1,
                0,
                Slo.NONE,
                dir.resolve("out"),
                Duration.ofSeconds(30),
                Double.POSITIVE_INFINITY,
                false,
                "mlx-ring bench serve --workload multi-turn --test");
    }

    private Map<String, Object> run(BenchOptions o) throws Exception {
        return BenchServe.run(
                o,
                new PrintStream(new ByteArrayOutputStream(), true, StandardCharsets.UTF_8),
                new PrintStream(new ByteArrayOutputStream(), true, StandardCharsets.UTF_8),
                false);
    }

    @Test
    void eachTurnCarriesTheEarlierTurnsAndTheAnswersTheServerGave() throws Exception {
        URI base = scriptedServer(null);
        BenchOptions o = options(base, 3, 3, new LoadLevel.Concurrency(2));
        run(o);
        assertEquals(9, seen.size());
        // Group what the server saw by conversation (turn 1's text names it) and check each turn
        List<Exchange> all = List.copyOf(seen);
        for (int c = 0; c < 3; c++) {
            String tag = "Conversation " + c + ":";
            List<Exchange> mine = all.stream()
                    .filter(e -> e.messages().get(0).path("content").asText().startsWith(tag))
                    .sorted((x, y) ->
                            Integer.compare(x.messages().size(), y.messages().size()))
                    .toList();
            assertEquals(3, mine.size(), tag);
            for (int t = 0; t < 3; t++) {
                JsonNode m = mine.get(t).messages();
                assertEquals(2 * t + 1, m.size(), "turn " + (t + 1) + " sends " + m);
                for (int k = 0; k < t; k++) {
                    assertEquals("user", m.get(2 * k).path("role").asText());
                    assertEquals(
                            o.prompts().get(3 * c + k).user(),
                            m.get(2 * k).path("content").asText());
                    assertEquals("assistant", m.get(2 * k + 1).path("role").asText());
                    // the exact answer streamed to turn k + 1, content only (no reasoning)
                    assertEquals(
                            mine.get(k).answer(),
                            m.get(2 * k + 1).path("content").asText());
                }
                assertEquals(
                        o.prompts().get(3 * c + t).user(),
                        m.get(2 * t).path("content").asText());
            }
        }
        JsonNode doc = JSON.readTree(dir.resolve("out/results.json").toFile());
        assertEquals(3, doc.at("/config/turns").asInt());
        assertEquals(3, doc.at("/config/conversations").asInt());
        JsonNode r = doc.at("/results/0");
        assertEquals(9, r.get("completed").asInt());
        assertEquals(3, r.at("/ttft_first_turn/completed").asInt());
        assertEquals(6, r.at("/ttft_later_turns/completed").asInt());
        assertEquals(3, r.get("ttft_by_turn").size());
        for (int t = 0; t < 3; t++) {
            JsonNode row = r.get("ttft_by_turn").get(t);
            assertEquals(t + 1, row.get("turn").asInt());
            assertEquals(3, row.get("completed").asInt());
            // the scripted usage: 10 prompt tokens a message, 2t + 1 messages at turn t + 1
            assertEquals(10.0 * (2 * t + 1), row.get("mean_prompt_tokens").asDouble(), 1e-9);
            assertTrue(row.get("median_ttft_ms").asDouble() > 0, row.toString());
        }
        assertTrue(doc.at("/phases/0").has("ttft_by_turn"));
        for (JsonNode q : doc.get("requests")) {
            assertEquals(q.get("index").asInt() % 3 + 1, q.get("turn").asInt(), q.toString());
        }
        String md = Files.readString(dir.resolve("out/results.md"));
        assertTrue(md.contains("(3 conversations of 3 turns)"), md);
        assertTrue(
                md.contains("| target | concurrency | turn 1 TTFT p50 / p99 ms | later turns TTFT p50 / p99 ms"), md);
        assertTrue(
                md.contains("1: ") && md.contains("(10), 2: ") && md.contains("(30), 3: ") && md.contains("(50) |"),
                md);
    }

    @Test
    void aFailedTurnEndsItsConversationAndTheRestCountsAsNotSent() throws Exception {
        // Conversation 1's second turn fails; its third is never sent.
        BenchOptions o = options(scriptedServer("Turn 2:"), 1, 3, new LoadLevel.Rate(1000, 1));
        run(o);
        assertEquals(2, seen.size(), "turns 1 and 2 sent, turn 3 not");
        JsonNode r = JSON.readTree(dir.resolve("out/results.json").toFile()).at("/results/0");
        assertEquals(1, r.get("completed").asInt());
        assertEquals(2, r.get("failed").asInt());
        assertEquals(1, r.at("/errors_by_class/http_429").asInt());
        assertEquals(1, r.at("/errors_by_class/earlier_turn_failed").asInt());
        assertEquals(0, r.at("/ttft_later_turns/completed").asInt());
        assertTrue(r.at("/ttft_later_turns/median_ttft_ms").isNull());
    }

    @Test
    void theWorkloadIsConversationsOfTurnsAndTurnsIsRefusedElsewhere() {
        Workloads.Params p = new Workloads.Params(LengthRange.fixed(40), LengthRange.fixed(8), 2, 1, 3, 4);
        List<BenchPrompt> prompts = Workloads.load(Workloads.MULTI_TURN, p);
        assertEquals(prompts, Workloads.load(Workloads.MULTI_TURN, p), "seeded");
        assertEquals(8, prompts.size());
        for (int i = 0; i < 8; i++) {
            assertEquals(i % 4 + 1, prompts.get(i).turn());
            assertTrue(prompts.get(i).history().isEmpty());
        }
        assertTrue(prompts.get(0).user().startsWith("Conversation 0: "));
        assertTrue(prompts.get(4).user().startsWith("Conversation 1: "));
        assertTrue(prompts.get(1).user().startsWith("Turn 2: "));
        // The approximate length grows with the history: turn 1, then its 8-token answer and more
        assertEquals(40, prompts.get(0).approxInputTokens());
        assertTrue(prompts.get(1).approxInputTokens() > 48, prompts.get(1).toString());
        assertEquals(
                List.of(0, 4),
                java.util.Arrays.stream(BenchRunner.conversationStarts(prompts))
                        .boxed()
                        .toList());
        IllegalArgumentException e = assertThrows(IllegalArgumentException.class, () -> Workloads.load("random", p));
        assertEquals("--turns applies to --workload multi-turn only; got --workload random", e.getMessage());
        e = assertThrows(
                IllegalArgumentException.class,
                () -> new Workloads.Params(LengthRange.fixed(40), LengthRange.fixed(8), 2, 1, 3, 0));
        assertEquals("--turns must be >= 1, got 0", e.getMessage());
    }

    @Test
    void theOtherApisCarryTheHistoryToo() {
        BenchPrompt turn2 = new BenchPrompt("sys", "Turn 2: why?", 5, 20, 2, List.of())
                .withHistory(List.of(new BenchPrompt.Exchange("first question", "first answer")));
        assertEquals(
                "sys\n\nfirst question\n\nfirst answer\n\nTurn 2: why?",
                ApiDialect.COMPLETIONS.body(turn2, "m").get("prompt").asText());
        JsonNode input = ApiDialect.RESPONSES.body(turn2, "m").get("input");
        assertEquals(
                "[{\"role\":\"user\",\"content\":\"first question\"},{\"role\":\"assistant\",\"content\":\"first"
                        + " answer\"},{\"role\":\"user\",\"content\":\"Turn 2: why?\"}]",
                input.toString());
        JsonNode messages = ApiDialect.MESSAGES.body(turn2, "m").get("messages");
        assertEquals(3, messages.size());
        assertEquals("assistant", messages.get(1).get("role").asText());
        assertEquals("sys", ApiDialect.MESSAGES.body(turn2, "m").get("system").asText());
    }
}
