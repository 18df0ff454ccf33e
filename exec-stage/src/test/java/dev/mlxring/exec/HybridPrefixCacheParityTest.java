package dev.mlxring.exec;

import static org.junit.jupiter.api.Assertions.assertArrayEquals;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.ObjectMapper;
import dev.mlxring.exec.generate.GenerationOptions;
import dev.mlxring.exec.generate.GenerationRun;
import dev.mlxring.exec.model.LanguageModel;
import dev.mlxring.exec.model.Models;
import dev.mlxring.exec.prefix.PrefixReuse;
import dev.mlxring.exec.prefix.PrefixedRun;
import dev.mlxring.kvstore.CacheNamespace;
import dev.mlxring.kvstore.KvSnapshot;
import dev.mlxring.kvstore.KvTensor;
import dev.mlxring.kvstore.LayerState;
import dev.mlxring.kvstore.ModelFingerprint;
import dev.mlxring.kvstore.PrefixCache;
import dev.mlxring.kvstore.PrefixHit;
import dev.mlxring.kvstore.RamPrefixCache;
import dev.mlxring.kvstore.TieredPrefixCache;
import dev.mlxring.mlx.Mlx;
import dev.mlxring.mlx.PythonScript;
import dev.mlxring.pipeline.PromptSegment;
import dev.mlxring.pipeline.SamplingParams;
import java.lang.foreign.ValueLayout;
import java.nio.file.Files;
import java.nio.file.Path;
import java.security.MessageDigest;
import java.util.ArrayList;
import java.util.HexFormat;
import java.util.List;
import java.util.stream.Stream;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.MethodSource;
import org.opentest4j.AssertionFailedError;

/**
 * Live parity of a hybrid model's prefix cache (gated delta net layers beside attention):
 * {@code scripts/oracle/hybrid_prompt_cache.py} serves five requests with mlx-lm's own
 * {@code generate_step} over deep-copied caches (a whole entry, an entry's checkpoint of the
 * recurrent state within the shared prefix, a checkpoint of an entry that branched off), and we
 * serve the same prompts through {@link PrefixedRun} over a {@link RamPrefixCache}, then through
 * the SSD tier alone (RAM tier of size 0): the reused count, the checkpoints taken, every token
 * and every step's logprobs bytes must match. A restore whose conv state or recurrence state is
 * negated (the cache entry mutated on its first hit) must fail the cell.
 */
class HybridPrefixCacheParityTest {
    private static final ObjectMapper JSON = new ObjectMapper();
    static final int MAX_TOKENS = 6;
    static final int PREFILL_STEP = 8;
    static final int CHECKPOINT = 16;
    static final int REQUESTS = 5;

    private static Path work;

    @BeforeAll
    static void buildOracleModels() throws Exception {
        work = OracleFixtures.build().work();
    }

    static Stream<String> models() {
        return Stream.of("qwen3_5-bf16", "qwen3_5-q4", "qwen3_next-f32");
    }

    @ParameterizedTest(name = "{0}")
    @MethodSource("models")
    void continuingFromARestoredRecurrentStateMatchesMlxLm(String name) throws Exception {
        Path modelDir = work.resolve("models").resolve(name);
        JsonNode expected = oracle(name, modelDir);
        try (LanguageModel model = Models.load(modelDir)) {
            assertTrue(PrefixReuse.supports(model), "a hybrid model is served");
            try (RamPrefixCache cache = new RamPrefixCache(RamPrefixCache.DEFAULT_MAX_ENTRIES, Long.MAX_VALUE)) {
                replay(name + " RAM", model, reuse(cache, modelDir), cache, expected);
            }
            Path dir = Files.createTempDirectory(work, "ssd-");
            try (TieredPrefixCache cache = new TieredPrefixCache(new RamPrefixCache(0, 0), dir, 64_000_000L)) {
                replay(name + " via SSD", model, reuse(cache, modelDir), cache, expected);
                assertTrue(cache.diskStats().spilled() >= REQUESTS, "spills written: " + cache.diskStats());
            }
            for (int tensor = 0; tensor < 2; tensor++) {
                String what = tensor == 0 ? "conv state" : "recurrence state";
                try (RamPrefixCache ram = new RamPrefixCache(RamPrefixCache.DEFAULT_MAX_ENTRIES, Long.MAX_VALUE);
                        NegatingCache cache = new NegatingCache(ram, tensor)) {
                    assertThrows(
                            AssertionFailedError.class,
                            () -> replay(name + " negated " + what, model, reuse(cache, modelDir), cache, expected),
                            "a restore with its " + what + " negated must differ from mlx-lm");
                    assertTrue(cache.negated, "a restore was mutated");
                }
            }
        }
    }

    private static PrefixReuse reuse(PrefixCache cache, Path modelDir) {
        return new PrefixReuse(cache, ModelFingerprint.of(modelDir), "", CHECKPOINT);
    }

    private static JsonNode oracle(String name, Path modelDir) throws Exception {
        Path out = work.resolve("hybrid-prompt-cache-" + name + ".json");
        PythonScript.run(
                "oracle/hybrid_prompt_cache.py",
                900,
                List.of(
                        "--model",
                        modelDir.toString(),
                        "--vocab",
                        "512",
                        "--seed",
                        "5",
                        "--base-length",
                        "40",
                        "--max-tokens",
                        String.valueOf(MAX_TOKENS),
                        "--prefill-step-size",
                        String.valueOf(PREFILL_STEP),
                        "--checkpoint-tokens",
                        String.valueOf(CHECKPOINT),
                        "--out",
                        out.toString()));
        return JSON.readTree(out.toFile());
    }

    static void replay(String cell, LanguageModel model, PrefixReuse reuse, PrefixCache cache, JsonNode expected)
            throws Exception {
        int i = 0;
        for (JsonNode r : expected.get("requests")) {
            String where = cell + " request " + i;
            int[] prompt = JSON.convertValue(r.get("prompt"), int[].class);
            List<Integer> tokens = new ArrayList<>();
            List<String> shas = new ArrayList<>();
            String dtype = null;
            int cached;
            int[] checkpoints;
            try (PrefixedRun pr = PrefixedRun.open(
                    reuse,
                    model,
                    prompt,
                    new GenerationOptions(MAX_TOKENS, PREFILL_STEP, new int[0], false, null),
                    SamplingParams.GREEDY,
                    null)) {
                cached = pr.cachedTokens();
                GenerationRun run = pr.run();
                GenerationRun.Event e;
                while ((e = run.advance()) != GenerationRun.Event.FINISHED) {
                    if (e == GenerationRun.Event.TOKEN) {
                        tokens.add(run.token());
                        shas.add(HexFormat.of()
                                .formatHex(MessageDigest.getInstance("SHA-256")
                                        .digest(run.tokenLogprobs().toBytes())));
                        dtype = run.tokenLogprobs().dtype().mlxName;
                    }
                }
                checkpoints = pr.checkpointPositions();
            }
            if (cache instanceof TieredPrefixCache t) {
                t.flushSpills();
            }
            assertEquals(r.get("cached_tokens").asInt(), cached, where + ": cached tokens differ from the oracle's");
            assertArrayEquals(
                    JSON.convertValue(r.get("checkpoints"), int[].class), checkpoints, where + ": checkpoints");
            assertArrayEquals(
                    JSON.convertValue(r.get("tokens"), int[].class),
                    tokens.stream().mapToInt(Integer::intValue).toArray(),
                    where + ": tokens differ from mlx-lm");
            assertEquals(r.get("logprobs_dtype").asText(), dtype, where + ": logprobs dtype");
            List<String> want = JSON.convertValue(
                    r.get("logprobs_sha256"), JSON.getTypeFactory().constructCollectionType(List.class, String.class));
            for (int s = 0; s < want.size(); s++) {
                assertEquals(want.get(s), shas.get(s), where + ": logprobs bytes of step " + s + " differ from mlx-lm");
            }
            i++;
        }
        assertEquals(REQUESTS, i, cell + ": the oracle returned " + i + " requests");
        Mlx.clearCache();
    }

    /**
     * A RAM cache whose first hit negates (flips the sign bit of every element of) one array of
     * every recurrent layer at the restored position: tensor 0 the conv state, 1 the recurrence
     * state. The entry stays mutated.
     */
    private static final class NegatingCache implements PrefixCache {
        private final RamPrefixCache ram;
        private final int tensor;
        boolean negated;

        NegatingCache(RamPrefixCache ram, int tensor) {
            this.ram = ram;
            this.tensor = tensor;
        }

        @Override
        public PrefixHit lookup(CacheNamespace ns, int[] prompt) {
            PrefixHit hit = ram.lookup(ns, prompt);
            if (hit != null && !negated) {
                negated = true;
                for (LayerState l : hit.snapshot().recurrentAt(hit.cachedTokens())) {
                    KvTensor t = l.tensors().get(tensor);
                    int item = itemSize(t.dtype());
                    for (long at = item - 1; at < t.data().byteSize(); at += item) {
                        byte b = t.data().get(ValueLayout.JAVA_BYTE, at);
                        t.data().set(ValueLayout.JAVA_BYTE, at, (byte) (b ^ 0x80));
                    }
                }
            }
            return hit;
        }

        private static int itemSize(String dtype) {
            return switch (dtype) {
                case "float32" -> 4;
                case "bfloat16", "float16" -> 2;
                default -> throw new IllegalArgumentException("recurrent state of dtype " + dtype);
            };
        }

        @Override
        public void publish(CacheNamespace ns, int[] tokens, KvSnapshot snapshot) {
            ram.publish(ns, tokens, snapshot);
        }

        @Override
        public void publishSegment(CacheNamespace ns, int[] tokens, KvSnapshot snapshot, PromptSegment.Kind kind) {
            ram.publishSegment(ns, tokens, snapshot, kind);
        }

        @Override
        public int size() {
            return ram.size();
        }

        @Override
        public long bytes() {
            return ram.bytes();
        }

        @Override
        public void close() {
            ram.close();
        }
    }
}
