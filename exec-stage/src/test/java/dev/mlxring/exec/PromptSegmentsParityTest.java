package dev.mlxring.exec;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.ObjectMapper;
import dev.mlxring.exec.batch.BatchToken;
import dev.mlxring.exec.batch.ContinuousBatch;
import dev.mlxring.exec.model.LanguageModel;
import dev.mlxring.exec.model.Models;
import dev.mlxring.exec.prefix.PrefixReuse;
import dev.mlxring.kvstore.ModelFingerprint;
import dev.mlxring.kvstore.RamPrefixCache;
import dev.mlxring.mlx.Mlx;
import dev.mlxring.mlx.ProjectHome;
import dev.mlxring.mlx.PythonScript;
import dev.mlxring.pipeline.BatchStep;
import dev.mlxring.pipeline.ExecutionPlan;
import dev.mlxring.pipeline.PreparedPrompt;
import dev.mlxring.pipeline.PromptSegment;
import dev.mlxring.pipeline.SamplingParams;
import dev.mlxring.pipeline.StepResult;
import java.nio.file.Files;
import java.nio.file.Path;
import java.security.MessageDigest;
import java.util.ArrayList;
import java.util.HashMap;
import java.util.HexFormat;
import java.util.List;
import java.util.Map;
import java.util.TreeMap;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

/**
 * Live parity of the prefix cache's snapshots at chat boundaries with mlx_lm.server's batched loop:
 * {@code scripts/oracle/prompt_segments.py} splits eight chat requests with mlx_lm.server's own
 * {@code _tokenize} and serves them, arriving at scripted steps, through mlx-lm's
 * {@code BatchGenerator.insert_segments} and an {@code LRUPromptCache} of 3 entries (segment ends
 * inserted with their {@code cache_type}, finished rows as {@code assistant}), as
 * {@code ResponseGenerator._generate} does; we serve the same ids and segments through
 * {@link ContinuousBatch} over a {@link RamPrefixCache} of 3 entries. Every request's reused count,
 * tokens and logprobs bytes, and after every unit the cache's entries (cache type and length),
 * must be mlx-lm's.
 *
 * <p>What the script exercises, on the default model: a second conversation sharing only the
 * system prompt arrives while the first is still prefilling its user turn and reuses the system
 * snapshot (request 1); a conversation continuing the first one's turns reuses them (request 2);
 * a client leaving mid-prefill leaves its system snapshot behind (request 3), which typed eviction
 * keeps while three single-turn conversations come and go (plain LRU would evict it at step 43),
 * so a later conversation with that system prompt reuses it (request 7).
 */
class PromptSegmentsParityTest {
    private static final ObjectMapper JSON = new ObjectMapper();
    private static final String SCRIPT = """
            {"prefill_step_size": 8, "prefill_batch_size": 3, "completion_batch_size": 4, "prompt_cache_size": 3,
             "requests": [
              {"at": 0, "max_tokens": 3, "messages": [
                {"role": "system", "content": "You are the ring's assistant. Answer briefly and precisely."},
                {"role": "user", "content": "What does a ring buffer do?"}]},
              {"at": 5, "max_tokens": 3, "messages": [
                {"role": "system", "content": "You are the ring's assistant. Answer briefly and precisely."},
                {"role": "user", "content": "Name one sequencer."}]},
              {"at": 14, "max_tokens": 3, "messages": [
                {"role": "system", "content": "You are the ring's assistant. Answer briefly and precisely."},
                {"role": "user", "content": "What does a ring buffer do?"},
                {"role": "assistant", "content": "It stores events in a fixed array."},
                {"role": "user", "content": "And the sequence?"}]},
              {"at": 20, "max_tokens": 2, "remove_at": 24, "messages": [
                {"role": "system", "content": "Reply as a pirate would."},
                {"role": "user", "content": "Tell me a long story about the sea, the ships, the storms and the treasure buried on the island."}]},
              {"at": 26, "max_tokens": 2, "messages": [{"role": "user", "content": "Count to three."}]},
              {"at": 34, "max_tokens": 2, "messages": [{"role": "user", "content": "Say hello."}]},
              {"at": 42, "max_tokens": 2, "messages": [{"role": "user", "content": "Name a colour."}]},
              {"at": 50, "max_tokens": 2, "messages": [
                {"role": "system", "content": "Reply as a pirate would."},
                {"role": "user", "content": "Where is the treasure?"}]}
             ]}
            """;

    @TempDir
    Path work;

    @Test
    void snapshotsAtChatBoundariesMatchMlxLmServersBatchedLoop() throws Exception {
        Path modelDir = ProjectHome.get().resolve("models/smollm2-135m-instruct");
        JsonNode script = JSON.readTree(SCRIPT);
        Path scriptFile = work.resolve("script.json");
        Files.writeString(scriptFile, SCRIPT);
        Path out = work.resolve("oracle.json");
        PythonScript.run(
                "oracle/prompt_segments.py",
                900,
                List.of("--model", modelDir.toString(), "--script", scriptFile.toString(), "--out", out.toString()));
        JsonNode oracle = JSON.readTree(out.toFile());
        JsonNode want = oracle.get("requests");
        JsonNode requests = script.get("requests");
        int n = requests.size();
        assertTrue(
                want.get(7).get("cached_tokens").asInt() > 0,
                "mlx-lm no longer keeps request 3's system snapshot for request 7: the script needs new timings");

        List<Integer> cached = new ArrayList<>();
        List<List<Integer>> tokens = new ArrayList<>();
        List<List<String>> shas = new ArrayList<>();
        for (int i = 0; i < n; i++) {
            cached.add(null);
            tokens.add(new ArrayList<>());
            shas.add(new ArrayList<>());
        }
        try (LanguageModel model = Models.load(modelDir);
                RamPrefixCache cache =
                        new RamPrefixCache(script.get("prompt_cache_size").asInt(), Long.MAX_VALUE);
                ContinuousBatch batch = new ContinuousBatch(
                        model,
                        script.get("prefill_step_size").asInt(),
                        script.get("completion_batch_size").asInt(),
                        script.get("prefill_batch_size").asInt(),
                        null,
                        new PrefixReuse(cache, ModelFingerprint.of(modelDir)))) {
            Map<Integer, Integer> requestOfRow = new HashMap<>();
            Map<Integer, Integer> rowOfRequest = new HashMap<>();
            batch.onUnit(units -> {
                for (BatchToken t : units) {
                    int r = requestOfRow.get(t.uid());
                    tokens.get(r).add(t.token());
                    shas.get(r).add(sha256(t.logprobs().toBytes()));
                }
            });
            BatchStep step = new BatchStep(8, 0);
            int done = 0;
            for (int unit = 0; ; unit++) {
                assertTrue(unit < 10_000, "the script does not finish");
                for (int i = 0; i < n; i++) {
                    if (requests.get(i).get("at").asInt() == unit) {
                        int row = batch.insert(plan(i, requests.get(i), want.get(i)));
                        requestOfRow.put(row, i);
                        rowOfRequest.put(i, row);
                    }
                }
                for (int i = 0; i < n; i++) {
                    JsonNode r = requests.get(i);
                    if (r.has("remove_at") && r.get("remove_at").asInt() == unit && cached.get(i) == null) {
                        cached.set(i, batch.remove(rowOfRequest.get(i)).cachedTokens());
                        done++;
                    }
                }
                if (done == n) {
                    break;
                }
                batch.step(step);
                for (int e = 0; e < step.count; e++) {
                    if (step.results[e].kind == StepResult.Kind.FINISHED) {
                        cached.set(requestOfRow.get(step.rows[e]), step.usages[e].cachedTokens());
                        done++;
                    }
                }
                assertEquals(
                        entries(oracle.get("steps").get(unit).get("cache")),
                        entries(cache),
                        "the prompt cache's entries (type: lengths) after unit " + unit);
            }
        }
        for (int i = 0; i < n; i++) {
            JsonNode w = want.get(i);
            String where = "request " + i;
            assertEquals(w.get("cached_tokens").asInt(), cached.get(i), where + ": cached tokens differ from mlx-lm's");
            assertEquals(JSON.convertValue(w.get("tokens"), List.class), tokens.get(i), where + ": tokens");
            assertEquals(
                    JSON.convertValue(w.get("logprobs_sha256"), List.class),
                    shas.get(i),
                    where + ": logprobs bytes differ from mlx-lm's");
        }
        Mlx.clearCache();
    }

    /** The request's ids and mlx-lm's segments, as prep hands them to exec; greedy, no stop ids. */
    private static ExecutionPlan plan(int i, JsonNode request, JsonNode want) {
        int[] prompt = JSON.convertValue(want.get("prompt"), int[].class);
        List<PromptSegment> segments = new ArrayList<>();
        for (JsonNode s : want.get("segments")) {
            segments.add(new PromptSegment(
                    s.get(0).asInt(),
                    PromptSegment.Kind.valueOf(s.get(1).asText().toUpperCase(java.util.Locale.ROOT))));
        }
        return ExecutionPlan.builder()
                .requestId("r" + i)
                .prompt(new PreparedPrompt(prompt, prompt.length, true, segments))
                .sampling(SamplingParams.GREEDY)
                .maxTokens(request.get("max_tokens").asInt())
                .build();
    }

    private static Map<String, List<Integer>> entries(JsonNode byType) {
        Map<String, List<Integer>> out = new TreeMap<>();
        byType.fields().forEachRemaining(e -> out.put(e.getKey(), JSON.convertValue(e.getValue(), List.class)));
        return out;
    }

    private static Map<String, List<Integer>> entries(RamPrefixCache cache) {
        Map<String, List<Integer>> out = new TreeMap<>();
        for (PromptSegment.Kind k : PromptSegment.Kind.values()) {
            out.put(k.mlxName(), new ArrayList<>());
        }
        List<int[]> ids = cache.entries();
        List<PromptSegment.Kind> kinds = cache.entryKinds();
        for (int i = 0; i < ids.size(); i++) {
            out.get(kinds.get(i).mlxName()).add(ids.get(i).length);
        }
        out.values().forEach(l -> l.sort(null));
        return out;
    }

    private static String sha256(byte[] b) throws RuntimeException {
        try {
            return HexFormat.of().formatHex(MessageDigest.getInstance("SHA-256").digest(b));
        } catch (java.security.NoSuchAlgorithmException e) {
            throw new IllegalStateException(e);
        }
    }
}
