package dev.mlxring.exec;

import static org.junit.jupiter.api.Assertions.assertArrayEquals;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertTrue;

import dev.mlxring.exec.generate.GenerationOptions;
import dev.mlxring.exec.generate.GenerationRun;
import dev.mlxring.exec.model.LanguageModel;
import dev.mlxring.exec.model.Models;
import dev.mlxring.exec.prefix.PrefixReuse;
import dev.mlxring.exec.prefix.PrefixedRun;
import dev.mlxring.kvstore.CacheNamespace;
import dev.mlxring.kvstore.ModelFingerprint;
import dev.mlxring.kvstore.RamPrefixCache;
import dev.mlxring.pipeline.SamplingParams;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.List;
import java.util.stream.IntStream;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Test;

/**
 * A hybrid model (qwen3_5: gated delta net layers keep recurrent state that a KV snapshot cannot
 * hold or roll back) bypasses the prefix cache: even with an entry for its prompt under its own
 * namespace, a run restores nothing, computes the whole prompt (the same tokens as without a
 * cache) and publishes nothing.
 */
class HybridPrefixBypassTest {
    private static final int PREFILL_STEP = 32;
    private static Path models;

    @BeforeAll
    static void buildOracleModels() throws Exception {
        models = OracleFixtures.build().work().resolve("models");
    }

    @Test
    void aHybridModelNeverRestoresOrPublishesAPrefix() {
        int[] prompt = IntStream.range(0, 40).map(i -> (i * 37 + 5) % 512).toArray();
        GenerationOptions options = new GenerationOptions(8, PREFILL_STEP, new int[0], false, null);
        Path hybridDir = models.resolve("qwen3_5-bf16");
        try (LanguageModel hybrid = Models.load(hybridDir);
                LanguageModel donor = Models.load(models.resolve("qwen3-bf16"));
                RamPrefixCache cache = new RamPrefixCache(RamPrefixCache.DEFAULT_MAX_ENTRIES, Long.MAX_VALUE)) {
            assertFalse(PrefixReuse.supports(hybrid), "a model with recurrent state");
            assertTrue(PrefixReuse.supports(donor), "a model of KV caches only");
            PrefixReuse reuse = new PrefixReuse(cache, ModelFingerprint.of(hybridDir));
            CacheNamespace ns = reuse.namespace(null);
            // An entry for the prompt under the hybrid model's namespace (KV layers of another
            // model): restoring it would be wrong.
            try (GenerationRun run = new GenerationRun(donor, prompt, options, SamplingParams.GREEDY, null)) {
                drain(run);
                assertTrue(reuse.publish(ns, new int[0], run.cachedSequence(), run.caches()), "the planted entry");
            }
            assertEquals(1, cache.size());

            int[] plain;
            try (GenerationRun run = new GenerationRun(hybrid, prompt, options, SamplingParams.GREEDY, null)) {
                plain = drain(run);
            }
            for (int pass = 0; pass < 2; pass++) {
                int[] tokens;
                try (PrefixedRun pr = PrefixedRun.open(reuse, hybrid, prompt, options, SamplingParams.GREEDY, null)) {
                    assertEquals(0, pr.cachedTokens(), "pass " + pass + ": restored positions");
                    tokens = drain(pr.run());
                }
                assertArrayEquals(plain, tokens, "pass " + pass + ": tokens");
            }
            assertEquals(0, cache.hits(), "lookups that hit");
            assertEquals(1, cache.size(), "entries (nothing published for the hybrid runs)");
        }
    }

    private static int[] drain(GenerationRun run) {
        List<Integer> tokens = new ArrayList<>();
        GenerationRun.Event e;
        while ((e = run.advance()) != GenerationRun.Event.FINISHED) {
            if (e == GenerationRun.Event.TOKEN) {
                tokens.add(run.token());
            }
        }
        return tokens.stream().mapToInt(Integer::intValue).toArray();
    }
}
