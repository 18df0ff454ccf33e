package dev.mlxring.ingress.cli;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.ObjectMapper;
import dev.mlxring.kvstore.TieredPrefixCache;
import java.io.IOException;
import java.net.URI;
import java.net.http.HttpClient;
import java.net.http.HttpRequest;
import java.net.http.HttpResponse;
import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.CompletableFuture;
import org.junit.jupiter.api.Assumptions;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

/**
 * Faults of the prompt cache through the real {@code serve} (issue 11, item 6), default batching
 * ({@code --decode-concurrency 16}; its rounds of eight rows run whole) on the default model, greedy.
 *
 * <p>The prompts: one system prompt {@code S}, then a user message that starts with a different
 * first token per request and has the same token count for all ({@code "<Word>: tell me one
 * fact."}). So every entry the cache can hold shares exactly the same prefix with every other
 * request — the system turn and the user header, {@code C} tokens — whichever entries exist when
 * a row is admitted; and the batched rows have the same shapes (no padding between them).
 */
class PromptCacheFaultTest {
    private static final ObjectMapper JSON = new ObjectMapper();
    private static final HttpClient HTTP =
            HttpClient.newBuilder().version(HttpClient.Version.HTTP_1_1).build();
    /** Single-token-distinct first words, each giving a 23-token user turn with SmolLM2's template. */
    private static final String[] WORDS = {
        "Apples", "Bridges", "Clouds", "Engines", "Forests", "Islands", "Kites", "Lakes", "Trains"
    };

    private static String system(int sentences) {
        StringBuilder b = new StringBuilder("You are a careful assistant. Reference notes follow.");
        for (int i = 1; i <= sentences; i++) {
            b.append(" Note ")
                    .append(i)
                    .append(": the warehouse on shelf ")
                    .append(i * 7 % 31)
                    .append(" keeps item ")
                    .append(i * 13 % 97)
                    .append(" for order ")
                    .append(1000 + i)
                    .append('.');
        }
        return b.toString();
    }

    /** {@code verb} is one token ("tell", "give", "show"), so every such prompt has the same length. */
    private static String ask(String system, String word, String verb, int maxTokens) throws IOException {
        return "{\"messages\":[{\"role\":\"system\",\"content\":" + JSON.writeValueAsString(system) + "},"
                + "{\"role\":\"user\",\"content\":\"" + word + ": " + verb + " me one fact.\"}],\"max_tokens\":"
                + maxTokens + ",\"temperature\":0}";
    }

    private static CompletableFuture<JsonNode> chatAsync(String base, String body) {
        HttpRequest req = HttpRequest.newBuilder(URI.create(base + "/v1/chat/completions"))
                .timeout(Duration.ofMinutes(5))
                .header("Content-Type", "application/json")
                .POST(HttpRequest.BodyPublishers.ofString(body))
                .build();
        return HTTP.sendAsync(req, HttpResponse.BodyHandlers.ofString()).thenApply(r -> {
            assertEquals(200, r.statusCode(), r.body());
            try {
                return JSON.readTree(r.body());
            } catch (IOException e) {
                throw new java.io.UncheckedIOException(e);
            }
        });
    }

    private static JsonNode chat(String base, String body) {
        return chatAsync(base, body).join();
    }

    private static List<JsonNode> concurrently(String base, List<String> bodies) {
        List<CompletableFuture<JsonNode>> fs = new ArrayList<>();
        for (String b : bodies) {
            fs.add(chatAsync(base, b));
        }
        return fs.stream().map(CompletableFuture::join).toList();
    }

    private static ServeCommand.Running serve(String... extra) {
        return InProcessServer.start(extra);
    }

    private static int cached(JsonNode r) {
        return r.get("usage").get("prompt_tokens_details").get("cached_tokens").asInt();
    }

    private static int prompt(JsonNode r) {
        return r.get("usage").get("prompt_tokens").asInt();
    }

    private static String text(JsonNode r) {
        return r.get("choices").get(0).get("message").get("content").asText();
    }

    /**
     * Eight rows restore one entry at once. A first request leaves its entry; then eight requests
     * continuing its system turn arrive together and run as rows of one batch. Each must report
     * the shared prefix as cached ({@code C}, the same count a lone request gets), and each must
     * answer what the same request answers when it runs alone from the same prefix on a second
     * server (a lone row is bit-exact with the serial path there).
     *
     * <p>Why the texts may be compared: the batched rows here have equal suffix lengths and
     * restore the same {@code C} positions, so they differ from the lone runs only in the batch
     * dimension of the matmuls (and in masked positions, whose softmax weights are exact zeros),
     * which these CPU kernels compute row by row; the texts are greedy. A row that restored
     * another row's state, a buffer one row wrote into while another read it, or a snapshot
     * consumed by the first row changes the text or the count.
     */
    @Test
    void eightConcurrentRowsRestoreOneEntry() {
        String sys = system(4);
        List<String> rows = new ArrayList<>();
        for (int i = 1; i <= 8; i++) {
            rows.add(asUnchecked(sys, WORDS[i]));
        }
        List<JsonNode> batched;
        int entryHits;
        try (ServeCommand.Running s = serve()) {
            JsonNode first = chat(InProcessServer.base(s), asUnchecked(sys, WORDS[0]));
            assertEquals(0, cached(first));
            long hitsBefore = s.local().prefixCache().ram().hits();
            batched = concurrently(InProcessServer.base(s), rows);
            entryHits = (int) (s.local().prefixCache().ram().hits() - hitsBefore);
        }
        List<JsonNode> alone = new ArrayList<>();
        try (ServeCommand.Running s = serve()) {
            chat(InProcessServer.base(s), asUnchecked(sys, WORDS[0]));
            for (String r : rows) {
                alone.add(chat(InProcessServer.base(s), r));
            }
        }
        int c = cached(alone.get(0));
        assertTrue(c > 0 && c < prompt(alone.get(0)) - 10, "a lone row reuses the system turn: " + c);
        assertEquals(8, entryHits, "every batched row hit the cache");
        for (int i = 0; i < 8; i++) {
            assertEquals(c, cached(alone.get(i)), "lone row " + i);
            assertEquals(c, cached(batched.get(i)), "batched row " + i + " restored the shared prefix");
            assertEquals(prompt(alone.get(i)), prompt(batched.get(i)));
            assertEquals(text(alone.get(i)), text(batched.get(i)), "row " + i + " (" + WORDS[i + 1] + ")");
        }
    }

    private static String asUnchecked(String system, String word) {
        try {
            return ask(system, word, "tell", 4);
        } catch (IOException e) {
            throw new java.io.UncheckedIOException(e);
        }
    }

    /**
     * SIGKILL while the spill thread writes. A child {@code serve} answers a first request (its
     * entry is written well before the kill), then rounds of eight rows that each publish a
     * multi-megabyte snapshot; the test watches the {@code mlxring-kv-spill} thread in
     * {@code /proc} and kills the process with SIGKILL while that thread is running (a round
     * whose spills all finish before it is caught is followed by another, at most three). A
     * server restarted on the same directory then restores only whole entries: the first
     * request's entry is there, the entries on disk are exactly the prompts that restore their
     * whole prompt but one token, the others restore a shorter prefix or nothing, and every answer
     * equals the one given before the kill.
     */
    @Test
    void aKillDuringASpillRestoresOnlyWholeEntries(@TempDir Path dir) throws Exception {
        Assumptions.assumeTrue(Files.isDirectory(Path.of("/proc/self/task")), "needs Linux /proc");
        String sys = system(10); // ~300 tokens, 512 positions of KV: ~12 MB per snapshot of the default model
        String[] flags = {"--prompt-cache-dir", dir.toString(), "--prompt-cache-disk-bytes", "1GB"};
        List<String> asks = new ArrayList<>();
        asks.add(ask(sys, WORDS[0], "tell", 4));
        List<JsonNode> before = new ArrayList<>();
        boolean killedWhileSpilling = false;
        try (ServerProcess p = ServerProcess.start(flags)) {
            before.add(chat(p.base, asks.get(0)));
            SpillThread spill = SpillThread.of(p.process.pid());
            spill.awaitIdle(30); // the first entry is on disk
            for (String verb : new String[] {"tell", "give", "show"}) {
                List<String> round = new ArrayList<>();
                for (int i = 1; i < WORDS.length; i++) {
                    round.add(ask(sys, WORDS[i], verb, 4));
                }
                asks.addAll(round);
                before.addAll(concurrently(p.base, round));
                if (spill.killWhenRunning(p.process)) {
                    killedWhileSpilling = true;
                    break;
                }
            }
            p.process.destroyForcibly();
            p.process.waitFor();
        }
        assertTrue(killedWhileSpilling, "the kill landed while the spill thread was writing");
        try (ServeCommand.Running s = serve(flags)) {
            TieredPrefixCache.DiskStats stats = s.local().prefixCache().diskStats();
            System.out.println("after the SIGKILL: " + stats + " of " + asks.size() + " prompts");
            assertTrue(
                    stats.entries() >= 1 && stats.entries() < asks.size(),
                    "some but not all spills survived the kill: " + stats);
            int own = 0;
            for (int i = 0; i < asks.size(); i++) {
                JsonNode after = chat(InProcessServer.base(s), asks.get(i));
                int reused = cached(after);
                assertTrue(reused >= 0 && reused < prompt(after), "prompt " + i + ": cached " + reused);
                if (reused == prompt(after) - 1) {
                    own++;
                }
                if (i == 0) {
                    assertEquals(prompt(after) - 1, reused, "the entry written before the kill restores");
                }
                assertEquals(text(before.get(i)), text(after), "prompt " + i + " (cached " + reused + ")");
            }
            assertEquals(stats.entries(), own, "each entry on disk restored its own prompt, no other did: " + stats);
        }
    }

    /** The serve child's spill thread, read from {@code /proc/<pid>/task/<tid>/stat}. */
    private record SpillThread(Path stat) {
        static SpillThread of(long pid) throws IOException {
            try (var tasks = Files.list(Path.of("/proc/" + pid + "/task"))) {
                for (Path t : tasks.toList()) {
                    // pthread names keep 15 characters: "mlxring-kv-spil"
                    if (Files.readString(t.resolve("comm")).strip().startsWith("mlxring-kv-spil")) {
                        return new SpillThread(t.resolve("stat"));
                    }
                }
            }
            throw new AssertionError("no mlxring-kv-spill thread in process " + pid);
        }

        /** State letter and CPU ticks (utime + stime). */
        private long[] read() throws IOException {
            String s = Files.readString(stat);
            String[] f = s.substring(s.lastIndexOf(')') + 2).split(" ");
            return new long[] {f[0].charAt(0), Long.parseLong(f[11]) + Long.parseLong(f[12])};
        }

        /** Waits until the thread's CPU time stops growing for half a second. */
        void awaitIdle(int seconds) throws IOException, InterruptedException {
            long deadline = System.nanoTime() + seconds * 1_000_000_000L;
            long last = read()[1];
            int still = 0;
            while (still < 10 && System.nanoTime() < deadline) {
                Thread.sleep(50);
                long now = read()[1];
                still = now == last ? still + 1 : 0;
                last = now;
            }
        }

        /**
         * SIGKILLs {@code process} the first time the thread is seen running (state R or D) with
         * its CPU time grown since the previous look (every 2 ms; an idle thread's periodic
         * wake-ups take no measurable CPU time); false, killing nothing, once the thread has
         * taken no CPU time for half a second (its spills are done) or after 60 s.
         */
        boolean killWhenRunning(Process process) throws IOException, InterruptedException {
            long deadline = System.nanoTime() + 60_000_000_000L;
            long last = read()[1];
            long idleSince = System.nanoTime();
            while (System.nanoTime() < deadline) {
                Thread.sleep(2);
                long[] now = read();
                if (now[1] > last) {
                    if (now[0] == 'R' || now[0] == 'D') {
                        process.destroyForcibly(); // SIGKILL: no shutdown hook, no drain
                        return true;
                    }
                    idleSince = System.nanoTime();
                } else if (System.nanoTime() - idleSince > 500_000_000L) {
                    return false;
                }
                last = now[1];
            }
            return false;
        }
    }
}
