package dev.mlxring.exec;

import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import com.fasterxml.jackson.databind.JsonNode;
import dev.mlxring.exec.generate.GenerationOptions;
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
import dev.mlxring.pipeline.PromptSegment;
import java.lang.foreign.ValueLayout;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
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
        List<String> args = new ArrayList<>(PromptCacheReplay.oracleArgs(modelDir, 512, MAX_TOKENS, PREFILL_STEP));
        args.addAll(List.of("--checkpoint-tokens", String.valueOf(CHECKPOINT)));
        return PromptCacheReplay.runOracle(
                "oracle/hybrid_prompt_cache.py", args, work.resolve("hybrid-prompt-cache-" + name + ".json"));
    }

    private static void replay(
            String cell, LanguageModel model, PrefixReuse reuse, PrefixCache cache, JsonNode expected)
            throws Exception {
        PromptCacheReplay.replay(
                cell,
                model,
                reuse,
                cache,
                new GenerationOptions(MAX_TOKENS, PREFILL_STEP, new int[0], false, null),
                expected,
                REQUESTS,
                true);
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
