package dev.mlxring.exec;

import static org.junit.jupiter.api.Assertions.assertArrayEquals;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import dev.mlxring.exec.kv.BatchKvCache;
import dev.mlxring.exec.kv.BatchRotatingKvCache;
import dev.mlxring.exec.kv.DenseKvCache;
import dev.mlxring.exec.kv.KvCache;
import dev.mlxring.exec.kv.RotatingKvCache;
import dev.mlxring.exec.model.LanguageModel;
import dev.mlxring.exec.model.Models;
import dev.mlxring.mlx.ArrayScope;
import dev.mlxring.mlx.Dtype;
import dev.mlxring.mlx.Mlx;
import dev.mlxring.mlx.MlxArray;
import java.nio.file.Path;
import java.util.Arrays;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.CsvSource;

/**
 * Per-row trim of the batch caches ({@link BatchKvCache#trimRows},
 * {@link BatchRotatingKvCache#trimRows}): two rows write three positions each in one forward, each
 * row is rolled back by its own count, and the next two decode steps give, bit for bit, the logits
 * of a batch merged from solo caches that never held the forgotten positions (same shared index,
 * same paddings). Dense layers (llama) and sliding-window layers inside their window (gemma3_text).
 */
class BatchCacheTrimTest {
    private static final int[] PROMPT_A = {5, 71, 302, 44, 19, 260, 8};
    private static final int[] PROMPT_B = {3, 90, 17, 401, 66, 12, 250, 31, 77, 140};
    private static Path models;

    @BeforeAll
    static void buildOracleModels() throws Exception {
        models = OracleFixtures.build().work().resolve("models");
    }

    @ParameterizedTest(name = "{0}: trim A by {1}, B by {2}")
    @CsvSource({"llama-bf16, 2, 0", "llama-bf16, 1, 2", "llama-bf16, 2, 2", "gemma3-bf16, 2, 0", "gemma3-bf16, 0, 1"})
    void aTrimmedRowContinuesAsIfItsForgottenPositionsWereNeverWritten(String family, int trimA, int trimB)
            throws Exception {
        try (LanguageModel model = Models.load(models.resolve(family));
                ArrayScope scope = ArrayScope.open()) {
            int[] stepA = {120, 33, 210};
            int[] stepB = {64, 9, 301};
            // Trimmed: both prompts, one three-position forward, each row rolled back by its count.
            KvCache[] trimmed = merged(model, prefilled(model, PROMPT_A), prefilled(model, PROMPT_B));
            model.forward(Mlx.fromInts(concat(stepA, stepB), 2, 3), trimmed);
            for (KvCache c : trimmed) {
                int[] done = switch (c) {
                    case BatchKvCache b -> b.trimRows(new int[] {trimA, trimB});
                    case BatchRotatingKvCache b -> b.trimRows(new int[] {trimA, trimB});
                    default -> throw new AssertionError(c);
                };
                assertArrayEquals(new int[] {trimA, trimB}, done);
            }
            // Reference: solo caches that only ever held the kept positions, merged.
            KvCache[] reference = merged(
                    model,
                    prefilled(model, concat(PROMPT_A, Arrays.copyOf(stepA, 3 - trimA))),
                    prefilled(model, concat(PROMPT_B, Arrays.copyOf(stepB, 3 - trimB))));
            for (int[] next : new int[][] {{88, 17}, {240, 6}}) {
                MlxArray got = model.forward(Mlx.fromInts(next, 2, 1), trimmed);
                MlxArray want = model.forward(Mlx.fromInts(next, 2, 1), reference);
                assertArrayEquals(bits(want), bits(got), "logits after the trim");
            }
            close(trimmed);
            close(reference);
        }
    }

    @ParameterizedTest(name = "{0}")
    @CsvSource({"gemma3-bf16"})
    void aRotatingBatchCacheRefusesToTrimOnceItFillsItsWindow(String family) throws Exception {
        try (LanguageModel model = Models.load(models.resolve(family));
                ArrayScope scope = ArrayScope.open()) {
            int[] longPrompt = new int[20];
            Arrays.setAll(longPrompt, i -> 10 + i);
            KvCache[] caches = merged(model, prefilled(model, longPrompt), prefilled(model, PROMPT_B));
            boolean sawRotating = false;
            for (KvCache c : caches) {
                if (c instanceof BatchRotatingKvCache b) {
                    sawRotating = true;
                    assertThrows(IllegalStateException.class, () -> b.trimRows(new int[] {1, 0}));
                }
            }
            assertTrue(sawRotating, "gemma3_text has sliding-window layers");
            close(caches);
        }
    }

    private static KvCache[] prefilled(LanguageModel model, int[] tokens) {
        KvCache[] caches = model.newCache();
        model.forward(Mlx.fromInts(tokens, 1, tokens.length), caches);
        Mlx.eval(Arrays.stream(caches).flatMap(c -> Arrays.stream(c.state())).toArray(MlxArray[]::new));
        return caches;
    }

    private static KvCache[] merged(LanguageModel model, KvCache[] a, KvCache[] b) {
        KvCache[] out = new KvCache[a.length];
        for (int l = 0; l < a.length; l++) {
            out[l] = switch (a[l]) {
                case DenseKvCache d -> BatchKvCache.merge(d, (DenseKvCache) b[l]);
                case RotatingKvCache r -> BatchRotatingKvCache.merge(r, (RotatingKvCache) b[l]);
                default -> throw new AssertionError(a[l]);
            };
        }
        close(a);
        close(b);
        return out;
    }

    private static int[] bits(MlxArray logits) {
        MlxArray f = Mlx.astype(logits, Dtype.FLOAT32);
        Mlx.eval(f);
        float[] v = Mlx.contiguous(f).toFloatArray();
        int[] out = new int[v.length];
        for (int i = 0; i < v.length; i++) {
            out[i] = Float.floatToRawIntBits(v[i]);
        }
        return out;
    }

    private static int[] concat(int[] a, int[] b) {
        int[] out = Arrays.copyOf(a, a.length + b.length);
        System.arraycopy(b, 0, out, a.length, b.length);
        return out;
    }

    private static void close(KvCache[] caches) {
        for (KvCache c : caches) {
            c.close();
        }
    }
}
