package dev.mlxring.exec;

import static org.junit.jupiter.api.Assertions.assertArrayEquals;
import static org.junit.jupiter.api.Assertions.assertEquals;

import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.ObjectMapper;
import dev.mlxring.exec.generate.GenerationOptions;
import dev.mlxring.exec.generate.GenerationRun;
import dev.mlxring.exec.model.LanguageModel;
import dev.mlxring.exec.prefix.PrefixReuse;
import dev.mlxring.exec.prefix.PrefixedRun;
import dev.mlxring.kvstore.PrefixCache;
import dev.mlxring.kvstore.TieredPrefixCache;
import dev.mlxring.mlx.Mlx;
import dev.mlxring.mlx.PythonScript;
import dev.mlxring.pipeline.SamplingParams;
import java.io.IOException;
import java.nio.file.Path;
import java.security.MessageDigest;
import java.util.ArrayList;
import java.util.HexFormat;
import java.util.List;

/**
 * The prompt-cache oracles ({@code scripts/oracle/prompt_cache.py}, {@code hybrid_prompt_cache.py})
 * and the replay of their requests through {@link PrefixedRun}. An oracle writes {@code
 * {"requests": [...]}}, each request with its {@code prompt}, the {@code cached_tokens} mlx-lm
 * reused, its greedy {@code tokens}, {@code logprobs_dtype}, the SHA-256 of every step's logprobs
 * bytes ({@code logprobs_sha256}) and, from the hybrid oracle, the {@code checkpoints} taken.
 */
final class PromptCacheReplay {
    private static final ObjectMapper JSON = new ObjectMapper();

    private PromptCacheReplay() {}

    /**
     * The arguments every prompt-cache oracle takes: the model, its vocabulary, the prompts' seed
     * (5) and shared base length (40 tokens), the tokens generated per request and the prefill step.
     */
    static List<String> oracleArgs(Path modelDir, int vocab, int maxTokens, int prefillStep) {
        return List.of(
                "--model",
                modelDir.toString(),
                "--vocab",
                String.valueOf(vocab),
                "--seed",
                "5",
                "--base-length",
                "40",
                "--max-tokens",
                String.valueOf(maxTokens),
                "--prefill-step-size",
                String.valueOf(prefillStep));
    }

    /** Runs {@code scripts/<script> <args> --out <out>} (15 minutes at most) and returns what it wrote. */
    static JsonNode runOracle(String script, List<String> args, Path out) throws IOException {
        List<String> all = new ArrayList<>(args);
        all.addAll(List.of("--out", out.toString()));
        PythonScript.run(script, 900, all);
        return JSON.readTree(out.toFile());
    }

    /**
     * Serves each of {@code expected}'s requests in order through {@link PrefixedRun} over {@code
     * reuse} (greedy, {@code options}), flushing a tiered cache's spills after each, and asserts
     * the reused count, the tokens, the logprobs dtype and every step's logprobs bytes equal the
     * oracle's (and the checkpoint positions, where {@code compareCheckpoints}), that the oracle
     * returned {@code requests} requests, then clears MLX's buffer cache.
     *
     * @param cell names the case in failure messages
     */
    static void replay(
            String cell,
            LanguageModel model,
            PrefixReuse reuse,
            PrefixCache cache,
            GenerationOptions options,
            JsonNode expected,
            int requests,
            boolean compareCheckpoints)
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
            try (PrefixedRun pr = PrefixedRun.open(reuse, model, prompt, options, SamplingParams.GREEDY, null)) {
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
                assertEquals(prompt.length, pr.promptTokens(), where + ": prompt tokens");
                checkpoints = pr.checkpointPositions();
            }
            if (cache instanceof TieredPrefixCache t) {
                t.flushSpills();
            }
            assertEquals(r.get("cached_tokens").asInt(), cached, where + ": cached tokens differ from the oracle's");
            if (compareCheckpoints) {
                assertArrayEquals(
                        JSON.convertValue(r.get("checkpoints"), int[].class), checkpoints, where + ": checkpoints");
            }
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
        assertEquals(requests, i, cell + ": the oracle returned " + i + " requests");
        Mlx.clearCache();
    }
}
