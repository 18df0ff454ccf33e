package dev.mlxring.exec;

import static org.junit.jupiter.api.Assertions.assertArrayEquals;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;
import static org.junit.jupiter.api.Assumptions.assumeTrue;

import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.ObjectMapper;
import dev.mlxring.exec.kv.BatchKvCache;
import dev.mlxring.exec.kv.DenseKvCache;
import dev.mlxring.exec.kv.KvCache;
import dev.mlxring.exec.model.LanguageModel;
import dev.mlxring.exec.model.Models;
import dev.mlxring.mlx.ArrayScope;
import dev.mlxring.mlx.CpuKernels;
import dev.mlxring.mlx.Dtype;
import dev.mlxring.mlx.FastKernels;
import dev.mlxring.mlx.KernelIsa;
import dev.mlxring.mlx.Mlx;
import dev.mlxring.mlx.MlxArray;
import dev.mlxring.mlx.Numerics;
import dev.mlxring.mlx.ProjectHome;
import dev.mlxring.mlx.PythonScript;
import java.nio.ByteBuffer;
import java.nio.ByteOrder;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.List;
import java.util.Locale;
import java.util.SplittableRandom;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.ValueSource;

/**
 * The fast numerics tier ({@link Numerics#FAST}) against its own oracle: a float32 rendering of
 * the same quantized model (every quantized weight dequantized to {@code s q + b} in float32, the
 * whole graph in float32), run live by mlx-lm ({@code scripts/oracle/float32_reference.py}).
 * Teacher-forced over a set of prompts (one forward each, logits of every position), and again
 * fed one token per forward through the KV cache as decode steps are (the kernels' one-row
 * passes differ from a whole prompt's), our exact tier (mlx-lm's bytes) and our fast tier are
 * both compared with it, in each of the three modes (the third: all prompts as the rows of one
 * batch, each prefilled alone to its own length, merged into left-padded batch caches and fed one
 * token per row per forward, as a batch's decode steps are, with ragged offsets):
 * <ul>
 *   <li>the fast tier's logits must be at least as close to the reference as the exact tier's,
 *       in RMS difference and in mean KL(reference || ours) of the softmaxes;
 *   <li>the fast tier's argmax must equal the exact tier's at >= 95% of the positions (models
 *       with float32 activations); with bfloat16 activations, where the exact tier's bfloat16
 *       roundings flip near-ties of a random-weight model's flat logits (measured: 92% agreement,
 *       the exact tier matching the reference's argmax less often than the fast tier), the fast
 *       tier's argmax must match the reference's at least as often as the exact tier's.
 * </ul>
 * The batched rows must also agree with the same rows run alone (one token at a time) in the
 * same tier: for the fast tier, whose every batch call is its fused block over all rows, in each
 * of three batch modes (decode steps, verify-round-shaped steps of three tokens a row, and rows
 * prefilled together from empty caches, left-padded) the RMS difference between the two over the
 * positions the batch computed must not exceed the exact tier's own RMS distance to the
 * reference (the oracle's tolerance), and their argmax must match at >= 95% of those positions.
 * The reference the assertions use is the float64 rendering: with float32 activations MLX's
 * float32 rendering rounds as the exact tier does (bit for bit on the tiny models), so it can only
 * say how far a scheme is from the exact tier; its figures are printed beside.
 * Models: tiny random-weight ones made at test time ({@code make_fast_numerics_models.py}: float32
 * activations with 4-bit g32 and a tied 4-bit head, float32 with 8-bit g64, bfloat16 with 4-bit
 * g128), four 48-token prompts each; and the default model (SmolLM2-135M, float16 group parameters
 * under float32 activations, 8-bit head) on four fixed English texts. The figures are printed.
 */
class FastNumericsOracleTest {
    private static final ObjectMapper JSON = new ObjectMapper();
    private static final double MIN_ARGMAX_AGREEMENT = 0.95;
    /**
     * The 8-bit-activation tier's largest mean KL(float64 rendering || q8), in nats: a hundredth of
     * a nat (measured 2e-4 to 4.2e-3 over the cells; the default model 3.9e-3).
     */
    private static final double Q8_MAX_KL = 0.01;
    /** The 8-bit-activation tier's argmax matches the reference's at least this share of the exact tier's count. */
    private static final double Q8_MIN_REFERENCE_ARGMAX = 0.9;

    private static Path work;

    @BeforeAll
    static void build() throws Exception {
        assumeTrue(FastKernels.selected().isPresent(), "this CPU has no AVX2/FMA: the fast tier cannot run");
        // exec-stage's pom runs this class a second time with the AVX2 kernels forced; where
        // they are this CPU's default, the first run has checked them.
        assumeTrue(
                !Boolean.getBoolean("mlxring.oracle.avx2Pass") || FastKernels.onThisCpu(KernelIsa.AVX512),
                "the AVX2 pass on a CPU whose default is AVX2: the default run covers it");
        System.out.println(
                "FastNumericsOracleTest: kernels " + FastKernels.selected().orElseThrow());
        work = OracleFixtures.fastNumerics();
    }

    @ParameterizedTest(name = "{0}")
    @ValueSource(strings = {"llama-f32-q4g32", "qwen3-f32-q8g64", "llama-bf16-q4g128", "qwen2-f32-q4g64"})
    void tinyModel(String name) throws Exception {
        SplittableRandom rnd = new SplittableRandom(name.hashCode());
        StringBuilder prompts = new StringBuilder("{\"prompts\": [");
        for (int p = 0; p < 4; p++) {
            prompts.append(p == 0 ? "[" : ", [");
            for (int t = 0; t < 48; t++) {
                prompts.append(t == 0 ? "" : ", ").append(rnd.nextInt(512));
            }
            prompts.append(']');
        }
        Path file = work.resolve("prompts-" + name + ".json");
        Files.writeString(file, prompts.append("]}\n").toString());
        check(work.resolve("models").resolve(name), "--prompts", file, !name.contains("-bf16-"));
    }

    /**
     * Rows longer than one of the 8-bit-activation tier's attention ranges (512 positions): three
     * prompts of 1100, 700 and 40 tokens on the tiny llama, each position's logits the same bytes in
     * one forward, one token at a time and as a batch's rows.
     */
    @org.junit.jupiter.api.Test
    void q8LongRowsSameBytesWhateverTheCall() {
        List<int[]> prompts = randomPrompts(1100, 1100, 700, 40);
        q8SameBytesWhateverTheCall(
                "llama-f32-q4g32, long rows",
                logits(work.resolve("models").resolve("llama-f32-q4g32"), Numerics.FAST_Q8, prompts));
    }

    /**
     * The 8-bit-activation tier's widened group parameters ({@link FastKernels#widenedParams}) change
     * no byte: the tiny llama's logits of every position, by every call shape above, with them and
     * without.
     */
    @org.junit.jupiter.api.Test
    void q8WidenedParamsSameBytes() {
        List<int[]> prompts = randomPrompts(33, 40, 9, 17);
        Path model = work.resolve("models").resolve("llama-f32-q4g32");
        boolean before = FastKernels.widenedParams(true);
        Logits widened;
        Logits perCall;
        try {
            widened = logits(model, Numerics.FAST_Q8, prompts);
            FastKernels.widenedParams(false);
            perCall = logits(model, Numerics.FAST_Q8, prompts);
        } finally {
            FastKernels.widenedParams(before);
        }
        assertSameBytes("one forward", widened.forced(), perCall.forced());
        assertSameBytes("one token at a time", widened.stepwise(), perCall.stepwise());
        assertSameBytes("batched rows", widened.batched(), perCall.batched());
        assertSameBytes("batched rows, three tokens a forward", widened.batchedThree(), perCall.batchedThree());
        assertSameBytes("rows prefilled together", widened.together(), perCall.together());
    }

    /** Prompts of the given lengths over the tiny llama's first 512 token ids, from {@code seed}. */
    private static List<int[]> randomPrompts(long seed, int... lengths) {
        SplittableRandom rnd = new SplittableRandom(seed);
        List<int[]> prompts = new ArrayList<>();
        for (int length : lengths) {
            int[] p = new int[length];
            for (int t = 0; t < length; t++) {
                p[t] = rnd.nextInt(512);
            }
            prompts.add(p);
        }
        return prompts;
    }

    private static void assertSameBytes(String call, List<float[]> widened, List<float[]> perCall) {
        assertEquals(perCall.size(), widened.size(), call);
        for (int i = 0; i < widened.size(); i++) {
            assertArrayEquals(
                    perCall.get(i), widened.get(i), call + ", prompt " + i + ": widened parameters changed the logits");
        }
    }

    @ParameterizedTest(name = "{0}")
    @ValueSource(strings = {"smollm2-135m-instruct"})
    void defaultModel(String name) throws Exception {
        Path dir = ProjectHome.get().resolve("models").resolve(name);
        assumeTrue(Files.isDirectory(dir), "run ./mlx-ring setup to prepare the default model");
        List<String> texts = List.of(
                "The lighthouse keeper climbed the narrow stairs every evening, counting the steps as his father"
                        + " had, and lit the lamp before the fishing boats came home across the grey water.",
                "To make bread, mix flour, water, salt and yeast, knead the dough until it is smooth, let it rise"
                        + " for an hour, shape it, and bake it in a hot oven until the crust is brown.",
                "In 1969 two astronauts walked on the Moon while a third orbited above them; the landing was"
                        + " watched on television by hundreds of millions of people around the world.",
                "def fibonacci(n):\n    a, b = 0, 1\n    for _ in range(n):\n        a, b = b, a + b\n    return a\n");
        Path file = work.resolve("texts-" + name + ".json");
        Files.writeString(file, JSON.writeValueAsString(java.util.Map.of("texts", texts)));
        check(dir, "--texts", file, true);
    }

    /**
     * @param float32Activations whether the model's matmuls run on float32 activations; with
     *     bfloat16 ones the exact tier rounds every product and partial sum to bfloat16, and its
     *     argmax (not the fast tier's) is the one that strays from the reference's
     */
    private static void check(Path modelDir, String promptFlag, Path promptFile, boolean float32Activations)
            throws Exception {
        String name = modelDir.getFileName().toString();
        Reference f64 = reference(modelDir, promptFlag, promptFile, "float64");
        Reference f32 = reference(modelDir, promptFlag, promptFile, "float32");
        List<int[]> prompts = f64.prompts();
        Logits exact = logits(modelDir, Numerics.EXACT, prompts);
        Logits fast = logits(modelDir, Numerics.FAST, prompts);
        compare(name + ", teacher-forced", exact.forced(), fast.forced(), f64, f32, float32Activations);
        // The decode step runs other kernel passes than a whole prompt (one activation row).
        compare(name + ", one token at a time", exact.stepwise(), fast.stepwise(), f64, f32, float32Activations);
        compare(name + ", batched rows", exact.batched(), fast.batched(), f64, f32, float32Activations);
        double tolerance = distance(exact.stepwise(), f64.logits(), f64.vocab()).rms;
        agreesWithAlone(name, "batched rows", fast.batched(), fast, true, tolerance, f64);
        agreesWithAlone(
                name, "batched rows fed three tokens a forward", fast.batchedThree(), fast, true, tolerance, f64);
        agreesWithAlone(name, "rows prefilled together", fast.together(), fast, false, tolerance, f64);
        Logits q8 = logits(modelDir, Numerics.FAST_Q8, prompts);
        compareQ8(name + ", teacher-forced", exact.forced(), q8.forced(), f64, float32Activations);
        compareQ8(name + ", one token at a time", exact.stepwise(), q8.stepwise(), f64, float32Activations);
        compareQ8(name + ", batched rows", exact.batched(), q8.batched(), f64, float32Activations);
        q8SameBytesWhateverTheCall(name, q8);
    }

    /**
     * The 8-bit-activation tier ({@link Numerics#FAST_Q8}) against the float64 rendering of the
     * unrounded model: its kernels' own oracle is FastQ8KernelsTest (their arithmetic, rendered
     * in float64); here the cost of rounding the activations, over a whole model. Mean KL(reference
     * || q8) at most {@link #Q8_MAX_KL}, and its argmax equal to the reference's at no fewer
     * positions than {@link #Q8_MIN_REFERENCE_ARGMAX} of the exact tier's count.
     */
    private static void compareQ8(
            String what, List<float[]> exact, List<float[]> q8, Reference f64, boolean float32Activations) {
        int vocab = f64.vocab();
        Distance de = distance(exact, f64.logits(), vocab);
        Distance dq = distance(q8, f64.logits(), vocab);
        Argmaxes a = argmaxes(exact, q8, f64);
        int exactRef = a.exactRef();
        int q8Ref = a.oursRef();
        int agree = a.agree();
        int positions = a.positions();
        System.out.printf(
                Locale.ROOT,
                "FastNumericsOracleTest %s, fast-q8: vs the float64 rendering RMS %.4g KL %.4g (exact RMS %.4g KL"
                        + " %.4g); argmax = float64 argmax: q8 %d, exact %d of %d; q8 = exact at %d%n",
                what,
                dq.rms,
                dq.kl,
                de.rms,
                de.kl,
                q8Ref,
                exactRef,
                positions,
                agree);
        assertTrue(
                dq.kl <= Q8_MAX_KL,
                what + ": the fast-q8 tier's mean KL to the float64 rendering " + dq.kl + " exceeds " + Q8_MAX_KL);
        assertTrue(
                q8Ref >= Q8_MIN_REFERENCE_ARGMAX * exactRef,
                what + ": the fast-q8 tier's argmax equals the float64 rendering's at " + q8Ref
                        + " positions, the exact tier's at " + exactRef);
    }

    /**
     * The 8-bit-activation tier's logits of every position, whatever call computed them: the whole
     * prompt in one forward, one token per forward, or its row among others in a batch (a prefix
     * prefilled, then a token per step, or three per step as a verify round; or all rows prefilled
     * together, left-padded) give the same bytes. Its kernels' outputs do not depend on
     * the call's other rows, and its attention cuts a row's positions into fixed ranges counted
     * from the row's first (mlxr_fast_block.cpp), so a verify round's logits are the decode steps'.
     */
    private static void q8SameBytesWhateverTheCall(String name, Logits q8) {
        int positions = 0;
        int forcedEqual = 0;
        int batchedEqual = 0;
        int threeEqual = 0;
        int togetherEqual = 0;
        for (int p = 0; p < q8.stepwise().size(); p++) {
            float[] alone = q8.stepwise().get(p);
            assertEquals(alone.length, q8.forced().get(p).length);
            assertEquals(alone.length, q8.batched().get(p).length);
            positions += 1;
            forcedEqual += java.util.Arrays.equals(q8.forced().get(p), alone) ? 1 : 0;
            batchedEqual += java.util.Arrays.equals(q8.batched().get(p), alone) ? 1 : 0;
            threeEqual += java.util.Arrays.equals(q8.batchedThree().get(p), alone) ? 1 : 0;
            togetherEqual += java.util.Arrays.equals(q8.together().get(p), alone) ? 1 : 0;
        }
        System.out.printf(
                Locale.ROOT,
                "FastNumericsOracleTest %s, fast-q8: prompts whose every logit is the same bytes in one forward and one"
                        + " token at a time %d/%d, batched and alone %d/%d, batched three tokens a forward and alone"
                        + " %d/%d, prefilled together and alone %d/%d%n",
                name,
                forcedEqual,
                positions,
                batchedEqual,
                positions,
                threeEqual,
                positions,
                togetherEqual,
                positions);
        assertEquals(
                positions, forcedEqual, name + ": fast-q8 logits of a whole prompt differ from one token at a time");
        assertEquals(positions, batchedEqual, name + ": fast-q8 logits of batched rows differ from the rows alone");
        assertEquals(
                positions,
                threeEqual,
                name + ": fast-q8 logits of batched rows fed three tokens a forward differ from the rows alone");
        assertEquals(
                positions,
                togetherEqual,
                name + ": fast-q8 logits of rows prefilled together differ from the rows alone");
    }

    /**
     * The fast tier's rows computed as a batch's against the same rows alone (one token at a time),
     * over the positions the batch computed ({@code afterPrefix}: those after each row's prefix
     * prefilled alone, else all): RMS difference at most {@code tolerance} (the exact tier's RMS
     * distance to the reference), argmax equal at >= 95% of them.
     */
    private static void agreesWithAlone(
            String name,
            String mode,
            List<float[]> batch,
            Logits fast,
            boolean afterPrefix,
            double tolerance,
            Reference f64) {
        int vocab = f64.vocab();
        double sq = 0;
        long n = 0;
        int agree = 0;
        int positions = 0;
        for (int p = 0; p < f64.prompts().size(); p++) {
            int length = f64.prompts().get(p).length;
            for (int i = afterPrefix ? prefillLength(p, length) : 0; i < length; i++) {
                for (int v = 0; v < vocab; v++) {
                    double d = (double) batch.get(p)[i * vocab + v]
                            - fast.stepwise().get(p)[i * vocab + v];
                    sq += d * d;
                }
                n += vocab;
                agree +=
                        argmax(batch.get(p), i, vocab) == argmax(fast.stepwise().get(p), i, vocab) ? 1 : 0;
                positions++;
            }
        }
        double rms = Math.sqrt(sq / n);
        System.out.printf(
                Locale.ROOT,
                "FastNumericsOracleTest %s, fast %s vs alone: RMS %.4g (tolerance %.4g), argmax equal at %d/%d%n",
                name,
                mode,
                rms,
                tolerance,
                agree,
                positions);
        assertTrue(
                rms <= tolerance,
                name + ": the fast tier's " + mode + " differ from the same rows alone by RMS " + rms
                        + ", beyond the exact tier's distance to the reference " + tolerance);
        assertTrue(
                agree >= MIN_ARGMAX_AGREEMENT * positions,
                name + ": the fast tier's " + mode + "' argmax equals the rows' alone at only " + agree + " of "
                        + positions + " positions");
    }

    /**
     * Prompt {@code p}'s prefix prefilled alone before the batch decodes the rest: 3, 8, 13, 18, ..
     * tokens (at most all but one), so the rows' left paddings and rope offsets differ.
     */
    private static int prefillLength(int p, int length) {
        return Math.min(length - 1, 3 + 5 * p);
    }

    private static void compare(
            String what,
            List<float[]> exact,
            List<float[]> fast,
            Reference f64,
            Reference f32,
            boolean float32Activations) {
        List<int[]> prompts = f64.prompts();
        int vocab = f64.vocab();
        Distance de = distance(exact, f64.logits(), vocab);
        Distance df = distance(fast, f64.logits(), vocab);
        Distance de32 = distance(exact, f32.logits(), vocab);
        Distance df32 = distance(fast, f32.logits(), vocab);
        Argmaxes a = argmaxes(exact, fast, f64);
        int agree = a.agree();
        int exactRef = a.exactRef();
        int fastRef = a.oursRef();
        int positions = a.positions();
        double agreement = (double) agree / positions;
        System.out.printf(
                Locale.ROOT,
                "FastNumericsOracleTest %s (%d prompts, %d positions, vocab %d):%n"
                        + "  vs the float64 rendering: exact RMS %.4g KL %.4g; fast RMS %.4g KL %.4g%n"
                        + "  vs the float32 rendering: exact RMS %.4g KL %.4g; fast RMS %.4g KL %.4g%n"
                        + "  argmax fast = exact at %d/%d (%.2f%%); = float64 argmax: exact %d, fast %d%n",
                what,
                prompts.size(),
                positions,
                vocab,
                de.rms,
                de.kl,
                df.rms,
                df.kl,
                de32.rms,
                de32.kl,
                df32.rms,
                df32.kl,
                agree,
                positions,
                100 * agreement,
                exactRef,
                fastRef);
        assertTrue(
                df.rms <= de.rms,
                what + ": the fast tier's RMS distance to the float64 rendering " + df.rms
                        + " exceeds the exact tier's " + de.rms);
        assertTrue(
                df.kl <= de.kl,
                what + ": the fast tier's KL to the float64 rendering " + df.kl + " exceeds the exact tier's " + de.kl);
        if (float32Activations) {
            assertTrue(
                    agreement >= MIN_ARGMAX_AGREEMENT,
                    what + ": fast and exact argmax agree at " + agree + " of " + positions + " positions, below "
                            + MIN_ARGMAX_AGREEMENT);
        } else {
            assertTrue(
                    fastRef >= exactRef,
                    what + ": the fast tier's argmax equals the reference's at " + fastRef
                            + " positions, the exact tier's at " + exactRef);
        }
    }

    record Reference(List<int[]> prompts, List<double[]> logits, int vocab) {}

    /** Over every position: ours' argmax = the exact tier's, the exact tier's = the reference's, ours' = the reference's. */
    record Argmaxes(int agree, int exactRef, int oursRef, int positions) {}

    private static Argmaxes argmaxes(List<float[]> exact, List<float[]> ours, Reference f64) {
        int vocab = f64.vocab();
        int agree = 0;
        int exactRef = 0;
        int oursRef = 0;
        int positions = 0;
        for (int p = 0; p < f64.prompts().size(); p++) {
            for (int i = 0; i < f64.prompts().get(p).length; i++) {
                int e = argmax(exact.get(p), i, vocab);
                int o = argmax(ours.get(p), i, vocab);
                int r = argmax(f64.logits().get(p), i, vocab);
                agree += e == o ? 1 : 0;
                exactRef += e == r ? 1 : 0;
                oursRef += o == r ? 1 : 0;
                positions++;
            }
        }
        return new Argmaxes(agree, exactRef, oursRef, positions);
    }

    /** mlx-lm's rendering of the model in {@code dtype}, run live over the prompts (or texts). */
    private static Reference reference(Path modelDir, String promptFlag, Path promptFile, String dtype)
            throws Exception {
        Path refDir = work.resolve("reference-" + modelDir.getFileName() + "-" + dtype);
        PythonScript.run(
                "oracle/float32_reference.py",
                300,
                List.of(
                        "--model",
                        modelDir.toString(),
                        promptFlag,
                        promptFile.toString(),
                        "--out-dir",
                        refDir.toString(),
                        "--dtype",
                        dtype));
        JsonNode ref = JSON.readTree(refDir.resolve("reference.json").toFile());
        assertTrue(ref.path("dequantized_modules").asInt() > 0, "the reference dequantized nothing: " + ref);
        assertEquals(dtype, ref.path("dtype").asText());
        List<int[]> prompts = new ArrayList<>();
        List<double[]> logits = new ArrayList<>();
        int vocab = -1;
        for (JsonNode r : ref.get("results")) {
            prompts.add(JSON.convertValue(r.get("prompt"), int[].class));
            vocab = r.get("shape").get(1).asInt();
            ByteBuffer b = ByteBuffer.wrap(
                            Files.readAllBytes(refDir.resolve(r.get("logits").asText())))
                    .order(ByteOrder.LITTLE_ENDIAN);
            double[] l = new double[b.remaining() / (dtype.equals("float64") ? 8 : 4)];
            for (int i = 0; i < l.length; i++) {
                l[i] = dtype.equals("float64") ? b.getDouble() : b.getFloat();
            }
            logits.add(l);
        }
        return new Reference(prompts, logits, vocab);
    }

    /**
     * Every position's logits of each prompt: teacher-forced, one token at a time, as batched rows,
     * and (the fast tiers only, else null) as batched rows fed three tokens per forward, a verify
     * round's shape, and as the rows of one left-padded batch prefilled together.
     */
    record Logits(
            List<float[]> forced,
            List<float[]> stepwise,
            List<float[]> batched,
            List<float[]> batchedThree,
            List<float[]> together) {}

    /**
     * Teacher-forced: one forward of the whole prompt into fresh caches. Stepwise: the prompt fed
     * one token per forward through one cache, as decode steps are, each step's logits in turn.
     */
    private static Logits logits(Path modelDir, Numerics numerics, List<int[]> prompts) {
        List<float[]> forced = new ArrayList<>();
        List<float[]> stepwise = new ArrayList<>();
        try (LanguageModel model = Models.load(modelDir, CpuKernels.NATIVE, numerics, null)) {
            for (int[] prompt : prompts) {
                KvCache[] cache = model.newCache();
                try (ArrayScope s = ArrayScope.open()) {
                    MlxArray l = model.forward(Mlx.fromInts(prompt, 1, prompt.length), cache);
                    assertEquals(3, l.shape().length);
                    forced.add(Mlx.astype(l, Dtype.FLOAT32).toFloatArray());
                } finally {
                    close(cache);
                }
                cache = model.newCache();
                float[] steps = null;
                try {
                    for (int i = 0; i < prompt.length; i++) {
                        try (ArrayScope s = ArrayScope.open()) {
                            MlxArray l = model.forward(Mlx.fromInts(new int[] {prompt[i]}, 1, 1), cache);
                            float[] row = Mlx.astype(l, Dtype.FLOAT32).toFloatArray();
                            if (steps == null) {
                                steps = new float[prompt.length * row.length];
                            }
                            System.arraycopy(row, 0, steps, i * row.length, row.length);
                        }
                    }
                } finally {
                    close(cache);
                }
                stepwise.add(steps);
            }
            return new Logits(
                    forced,
                    stepwise,
                    batched(model, prompts),
                    numerics.fast() ? batched(model, prompts, 3) : null,
                    numerics.fast() ? together(model, prompts) : null);
        }
    }

    /**
     * The prompts as the rows of one batch: each prompt's first {@link #prefillLength} tokens in
     * one forward into its own cache (those positions' logits), the caches merged into left-padded
     * batch caches ({@link BatchKvCache#merge}), then every row fed its next token per forward
     * until all are through (a row past its prompt is fed token 0, its logits dropped).
     */
    private static List<float[]> batched(LanguageModel model, List<int[]> prompts) {
        return batched(model, prompts, 1);
    }

    /** As {@link #batched(LanguageModel, List)}, every row fed {@code perStep} tokens per forward (a verify round's shape). */
    private static List<float[]> batched(LanguageModel model, List<int[]> prompts, int perStep) {
        int rows = prompts.size();
        float[][] out = new float[rows][];
        int[] start = new int[rows];
        KvCache[] batch = null;
        KvCache[][] alone = new KvCache[rows][];
        try {
            int steps = 0;
            for (int p = 0; p < rows; p++) {
                int[] prompt = prompts.get(p);
                start[p] = prefillLength(p, prompt.length);
                steps = Math.max(steps, (prompt.length - start[p] + perStep - 1) / perStep);
                alone[p] = model.newCache();
                try (ArrayScope s = ArrayScope.open()) {
                    MlxArray l = model.forward(
                            Mlx.fromInts(java.util.Arrays.copyOf(prompt, start[p]), 1, start[p]), alone[p]);
                    float[] prefix = Mlx.astype(l, Dtype.FLOAT32).toFloatArray();
                    out[p] = new float[prefix.length / start[p] * prompt.length];
                    System.arraycopy(prefix, 0, out[p], 0, prefix.length);
                }
            }
            batch = new KvCache[alone[0].length];
            for (int layer = 0; layer < batch.length; layer++) {
                DenseKvCache[] layerCaches = new DenseKvCache[rows];
                for (int p = 0; p < rows; p++) {
                    layerCaches[p] = (DenseKvCache) alone[p][layer];
                }
                try (ArrayScope s = ArrayScope.open()) {
                    batch[layer] = BatchKvCache.merge(layerCaches);
                    Mlx.eval(((BatchKvCache) batch[layer]).state());
                }
            }
            for (int step = 0; step < steps; step++) {
                int[] tokens = new int[rows * perStep];
                for (int p = 0; p < rows; p++) {
                    for (int j = 0; j < perStep; j++) {
                        int at = start[p] + step * perStep + j;
                        tokens[p * perStep + j] = at < prompts.get(p).length ? prompts.get(p)[at] : 0;
                    }
                }
                try (ArrayScope s = ArrayScope.open()) {
                    float[] all = Mlx.astype(model.forward(Mlx.fromInts(tokens, rows, perStep), batch), Dtype.FLOAT32)
                            .toFloatArray();
                    int vocab = all.length / rows / perStep;
                    for (int p = 0; p < rows; p++) {
                        for (int j = 0; j < perStep; j++) {
                            int at = start[p] + step * perStep + j;
                            if (at < prompts.get(p).length) {
                                System.arraycopy(all, (p * perStep + j) * vocab, out[p], at * vocab, vocab);
                            }
                        }
                    }
                }
            }
        } finally {
            for (KvCache[] c : alone) {
                if (c != null) {
                    close(c);
                }
            }
            if (batch != null) {
                for (KvCache c : batch) {
                    if (c != null) {
                        c.close();
                    }
                }
            }
        }
        return List.of(out);
    }

    /**
     * The prompts as the rows of one batch prefilled together, as requests that arrive at once
     * are: left-padded to the longest, one forward over empty batch caches; each row's logits at
     * its own positions.
     */
    private static List<float[]> together(LanguageModel model, List<int[]> prompts) {
        int rows = prompts.size();
        int longest = prompts.stream().mapToInt(p -> p.length).max().orElseThrow();
        int[] padding = new int[rows];
        int[] tokens = new int[rows * longest];
        for (int p = 0; p < rows; p++) {
            padding[p] = longest - prompts.get(p).length;
            System.arraycopy(prompts.get(p), 0, tokens, p * longest + padding[p], prompts.get(p).length);
        }
        KvCache[] probe = model.newCache();
        KvCache[] batch = new KvCache[probe.length];
        close(probe);
        try {
            for (int layer = 0; layer < batch.length; layer++) {
                batch[layer] = new BatchKvCache(padding.clone());
            }
            try (ArrayScope s = ArrayScope.open()) {
                float[] all = Mlx.astype(model.forward(Mlx.fromInts(tokens, rows, longest), batch), Dtype.FLOAT32)
                        .toFloatArray();
                int vocab = all.length / rows / longest;
                List<float[]> out = new ArrayList<>();
                for (int p = 0; p < rows; p++) {
                    out.add(java.util.Arrays.copyOfRange(
                            all, (p * longest + padding[p]) * vocab, (p + 1) * longest * vocab));
                }
                return out;
            }
        } finally {
            for (KvCache c : batch) {
                if (c != null) {
                    c.close();
                }
            }
        }
    }

    private static void close(KvCache[] caches) {
        for (KvCache c : caches) {
            c.close();
        }
    }

    record Distance(double rms, double kl) {}

    /** RMS of the logit differences over all positions and ids; mean over positions of KL(ref || ours). */
    private static Distance distance(List<float[]> ours, List<double[]> ref, int vocab) {
        double sq = 0;
        double kl = 0;
        long n = 0;
        int positions = 0;
        for (int p = 0; p < ours.size(); p++) {
            float[] a = ours.get(p);
            double[] r = ref.get(p);
            assertEquals(r.length, a.length, "logit count of prompt " + p);
            for (int i = 0; i < r.length / vocab; i++) {
                double[] lr = logSoftmax(r, i, vocab);
                double[] la = logSoftmax(a, i, vocab);
                for (int v = 0; v < vocab; v++) {
                    double d = (double) a[i * vocab + v] - r[i * vocab + v];
                    sq += d * d;
                    kl += Math.exp(lr[v]) * (lr[v] - la[v]);
                }
                n += vocab;
                positions++;
            }
        }
        return new Distance(Math.sqrt(sq / n), kl / positions);
    }

    private static double[] logSoftmax(float[] l, int pos, int vocab) {
        double[] d = new double[vocab];
        for (int v = 0; v < vocab; v++) {
            d[v] = l[pos * vocab + v];
        }
        return logSoftmax(d, 0, vocab);
    }

    private static double[] logSoftmax(double[] l, int pos, int vocab) {
        double max = Double.NEGATIVE_INFINITY;
        for (int v = 0; v < vocab; v++) {
            max = Math.max(max, l[pos * vocab + v]);
        }
        double sum = 0;
        for (int v = 0; v < vocab; v++) {
            sum += Math.exp(l[pos * vocab + v] - max);
        }
        double log = max + Math.log(sum);
        double[] out = new double[vocab];
        for (int v = 0; v < vocab; v++) {
            out[v] = l[pos * vocab + v] - log;
        }
        return out;
    }

    private static int argmax(double[] l, int pos, int vocab) {
        int best = 0;
        for (int v = 1; v < vocab; v++) {
            if (l[pos * vocab + v] > l[pos * vocab + best]) {
                best = v;
            }
        }
        return best;
    }

    private static int argmax(float[] l, int pos, int vocab) {
        int best = 0;
        for (int v = 1; v < vocab; v++) {
            if (l[pos * vocab + v] > l[pos * vocab + best]) {
                best = v;
            }
        }
        return best;
    }
}
