package dev.mlxring.exec;

import static org.junit.jupiter.api.Assertions.assertTrue;

import com.fasterxml.jackson.databind.JsonNode;
import dev.mlxring.exec.generate.GenerationOptions;
import dev.mlxring.exec.model.LanguageModel;
import dev.mlxring.exec.model.Models;
import dev.mlxring.exec.prefix.PrefixReuse;
import dev.mlxring.exec.prefix.PrefixedRun;
import dev.mlxring.kvstore.ModelFingerprint;
import dev.mlxring.kvstore.PrefixCache;
import dev.mlxring.kvstore.RamPrefixCache;
import dev.mlxring.kvstore.TieredPrefixCache;
import dev.mlxring.mlx.ProjectHome;
import dev.mlxring.pipeline.KvQuantization;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.List;
import java.util.stream.Stream;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.MethodSource;

/**
 * Live parity of the prefix cache with mlx_lm.server's: {@code scripts/oracle/prompt_cache.py}
 * serves four requests through mlx-lm's own {@code LRUPromptCache} and {@code generate_step}
 * (nothing cached; a shorter cached prefix; a longer entry trimmed; a prompt that is a prefix of
 * an entry), and we serve the same prompts through {@link PrefixedRun} over a
 * {@link RamPrefixCache}: the reused count, every token and every step's logprobs bytes must
 * match. Per model the dense requests run first and the {@code --kv-bits} ones then share the
 * same cache, so an entry leaking across KV schemes changes the kv cell's cached counts. On the
 * tiny model the same requests then run again through the SSD tier alone (RAM tier of size 0,
 * spills flushed after each request), so every hit is a restore from the Chronicle Map file.
 */
class PrefixCacheParityTest {
    static final int MAX_TOKENS = 6;
    static final int PREFILL_STEP = 32;

    private static Path work;

    @BeforeAll
    static void buildOracleModels() throws Exception {
        work = OracleFixtures.build().work();
    }

    /** A model, its vocabulary, and the quantized scheme its second pass uses (null: no second pass). */
    record Cell(String model, int vocab, KvQuantization kv) {
        @Override
        public String toString() {
            return kv == null
                    ? model + " dense"
                    : model + " dense then kv" + kv.bits() + "g" + kv.groupSize() + "s" + kv.quantizedKvStart();
        }
    }

    static Stream<Cell> cells() {
        return Stream.of(
                // head_dim 32: group 32; start 16 converts during the first request's prefill
                new Cell("qwen3-bf16", 512, new KvQuantization(4, 32, 16)),
                // gemma4_text: two caches for three layers (the last layer shares layer 1's keys
                // and values), per-layer inputs; no --kv-bits pass (KV-shared layers refuse it,
                // as mlx-lm fails there)
                new Cell("gemma4-full", 512, null),
                new Cell("default", 49152, new KvQuantization(8, 64, 16)));
    }

    @ParameterizedTest(name = "{0}")
    @MethodSource("cells")
    void continuingFromARestoreMatchesMlxLmsPromptCache(Cell cell) throws Exception {
        Path modelDir = cell.model().equals("default")
                ? ProjectHome.get().resolve("models/smollm2-135m-instruct")
                : work.resolve("models").resolve(cell.model());
        JsonNode dense = oracle(cell, modelDir, null);
        JsonNode quantized = cell.kv() == null ? null : oracle(cell, modelDir, cell.kv());
        try (LanguageModel model = Models.load(modelDir)) {
            try (RamPrefixCache cache = new RamPrefixCache(RamPrefixCache.DEFAULT_MAX_ENTRIES, Long.MAX_VALUE)) {
                PrefixReuse reuse = new PrefixReuse(cache, ModelFingerprint.of(modelDir));
                replay(cell + " dense", model, reuse, cache, null, dense);
                if (quantized != null) {
                    replay(cell + " kv", model, reuse, cache, cell.kv(), quantized);
                }
            }
            if (!cell.model().equals("default")) {
                Path dir = java.nio.file.Files.createTempDirectory(work, "ssd-");
                try (TieredPrefixCache cache = new TieredPrefixCache(new RamPrefixCache(0, 0), dir, 64_000_000L)) {
                    PrefixReuse reuse = new PrefixReuse(cache, ModelFingerprint.of(modelDir));
                    replay(cell + " dense via SSD", model, reuse, cache, null, dense);
                    if (quantized != null) {
                        replay(cell + " kv via SSD", model, reuse, cache, cell.kv(), quantized);
                    }
                    int requests = quantized == null ? 4 : 8;
                    assertTrue(cache.diskStats().spilled() >= requests, "spills written: " + cache.diskStats());
                }
            }
        }
    }

    private static JsonNode oracle(Cell cell, Path modelDir, KvQuantization kv) throws Exception {
        List<String> args =
                new ArrayList<>(PromptCacheReplay.oracleArgs(modelDir, cell.vocab(), MAX_TOKENS, PREFILL_STEP));
        if (kv != null) {
            args.addAll(List.of(
                    "--kv-bits",
                    String.valueOf(kv.bits()),
                    "--kv-group-size",
                    String.valueOf(kv.groupSize()),
                    "--quantized-kv-start",
                    String.valueOf(kv.quantizedKvStart())));
        }
        return PromptCacheReplay.runOracle(
                "oracle/prompt_cache.py",
                args,
                work.resolve("prompt-cache-" + cell.model() + (kv == null ? "" : "-kv") + ".json"));
    }

    /** {@link PromptCacheReplay#replay} of {@code prompt_cache.py}'s four requests, greedy, with {@code kv}. */
    static void replay(
            String cell,
            LanguageModel model,
            PrefixReuse reuse,
            PrefixCache cache,
            KvQuantization kv,
            JsonNode expected)
            throws Exception {
        PromptCacheReplay.replay(
                cell,
                model,
                reuse,
                cache,
                new GenerationOptions(MAX_TOKENS, PREFILL_STEP, new int[0], false, kv),
                expected,
                4,
                false);
    }
}
