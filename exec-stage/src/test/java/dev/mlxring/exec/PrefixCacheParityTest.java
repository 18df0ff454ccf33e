package dev.mlxring.exec;

import static org.junit.jupiter.api.Assertions.assertArrayEquals;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.ObjectMapper;
import dev.mlxring.exec.generate.GenerationOptions;
import dev.mlxring.exec.generate.GenerationRun;
import dev.mlxring.exec.model.LanguageModel;
import dev.mlxring.exec.model.Models;
import dev.mlxring.exec.prefix.PrefixReuse;
import dev.mlxring.exec.prefix.PrefixedRun;
import dev.mlxring.kvstore.ModelFingerprint;
import dev.mlxring.kvstore.PrefixCache;
import dev.mlxring.kvstore.RamPrefixCache;
import dev.mlxring.kvstore.TieredPrefixCache;
import dev.mlxring.mlx.Mlx;
import dev.mlxring.mlx.ProjectHome;
import dev.mlxring.mlx.PythonScript;
import dev.mlxring.pipeline.KvQuantization;
import dev.mlxring.pipeline.SamplingParams;
import java.nio.file.Path;
import java.security.MessageDigest;
import java.util.ArrayList;
import java.util.HexFormat;
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
    private static final ObjectMapper JSON = new ObjectMapper();
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
        Path out = work.resolve("prompt-cache-" + cell.model() + (kv == null ? "" : "-kv") + ".json");
        List<String> args = new ArrayList<>(List.of(
                "--model",
                modelDir.toString(),
                "--vocab",
                String.valueOf(cell.vocab()),
                "--seed",
                "5",
                "--base-length",
                "40",
                "--max-tokens",
                String.valueOf(MAX_TOKENS),
                "--prefill-step-size",
                String.valueOf(PREFILL_STEP),
                "--out",
                out.toString()));
        if (kv != null) {
            args.addAll(List.of(
                    "--kv-bits",
                    String.valueOf(kv.bits()),
                    "--kv-group-size",
                    String.valueOf(kv.groupSize()),
                    "--quantized-kv-start",
                    String.valueOf(kv.quantizedKvStart())));
        }
        PythonScript.run("oracle/prompt_cache.py", 900, args);
        return JSON.readTree(out.toFile());
    }

    static void replay(
            String cell,
            LanguageModel model,
            PrefixReuse reuse,
            PrefixCache cache,
            KvQuantization kv,
            JsonNode expected)
            throws Exception {
        int i = 0;
        for (JsonNode r : expected.get("requests")) {
            String where = cell + " request " + i;
            int[] prompt = JSON.convertValue(r.get("prompt"), int[].class);
            List<Integer> tokens = new ArrayList<>();
            List<String> shas = new ArrayList<>();
            String dtype = null;
            int cached;
            try (PrefixedRun pr = PrefixedRun.open(
                    reuse,
                    model,
                    prompt,
                    new GenerationOptions(MAX_TOKENS, PREFILL_STEP, new int[0], false, kv),
                    SamplingParams.GREEDY,
                    null)) {
                cached = pr.cachedTokens();
                GenerationRun run = pr.run();
                GenerationRun.Event e;
                while ((e = run.advance()) != GenerationRun.Event.FINISHED) {
                    if (e == GenerationRun.Event.TOKEN) {
                        tokens.add(run.token());
                        byte[] lp = run.tokenLogprobs().toBytes();
                        shas.add(HexFormat.of()
                                .formatHex(MessageDigest.getInstance("SHA-256").digest(lp)));
                        dtype = run.tokenLogprobs().dtype().mlxName;
                    }
                }
                assertEquals(prompt.length, pr.promptTokens(), where + ": prompt tokens");
            }
            if (cache instanceof TieredPrefixCache t) {
                t.flushSpills();
            }
            assertEquals(r.get("cached_tokens").asInt(), cached, where + ": cached tokens differ from mlx-lm's");
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
        assertEquals(4, i, cell + ": the oracle returned " + i + " requests");
        Mlx.clearCache();
    }
}
