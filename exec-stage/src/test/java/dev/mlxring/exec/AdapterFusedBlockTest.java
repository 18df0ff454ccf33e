package dev.mlxring.exec;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assumptions.assumeTrue;

import dev.mlxring.exec.kv.BatchKvCache;
import dev.mlxring.exec.kv.DenseKvCache;
import dev.mlxring.exec.kv.KvCache;
import dev.mlxring.exec.model.LanguageModel;
import dev.mlxring.exec.model.Models;
import dev.mlxring.exec.nn.NamedAdapter;
import dev.mlxring.exec.nn.RowAdapters;
import dev.mlxring.mlx.ArrayScope;
import dev.mlxring.mlx.CpuKernels;
import dev.mlxring.mlx.FusedDecoderBlock;
import dev.mlxring.mlx.Mlx;
import dev.mlxring.mlx.MlxArray;
import dev.mlxring.mlx.Numerics;
import java.nio.file.Path;
import java.util.Arrays;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Test;

/**
 * Which blocks run fused while a row has an adapter: a LoRA adapter's deltas run inside the
 * fused block (one {@code ExactDecoderBlock} primitive in the step's graph per block), so every
 * block stays fused; a DoRA adapter's blocks run the adapted graph and the blocks it does not
 * convert stay fused. On the 2-block qwen3-q4 oracle model, a lone row's decode step over solo
 * caches and a two-row step over a batch cache (the exact tier's two fused paths), counting the
 * step graph's fused primitives; for named adapters ({@code serve --adapter}) and a model loaded
 * with one ({@code --adapter-path}). Parity of the bytes is MixedAdapterBatchParityTest's and
 * AdapterParityTest's.
 */
class AdapterFusedBlockTest {
    private static final String MODEL = "qwen3-q4";
    private static Path work;

    @BeforeAll
    static void buildOracleModels() throws Exception {
        assumeTrue(FusedDecoderBlock.available(Numerics.EXACT), "this CPU has no native kernels: no fused block");
        work = OracleFixtures.build().work();
    }

    private static Path adapterDir(String name, int numLayers, String... flags) {
        Path model = work.resolve("models").resolve(MODEL);
        return OracleAdapters.write(
                model, work.resolve("adapters").resolve(MODEL + "-fusedblock-" + name), "lora", numLayers, flags);
    }

    @Test
    void loraAdaptersRunFusedAndDoraBlocksRunTheGraph() {
        Path lastBlock = adapterDir("L1", 1, "--rank", "4", "--scale", "10");
        Path lastBlockQ = adapterDir("L1-keys", 1, "--rank", "4", "--scale", "10", "--keys", "self_attn.q_proj");
        Path every = adapterDir("L0", 0, "--rank", "4", "--scale", "10");
        Path dora = OracleAdapters.write(
                work.resolve("models").resolve(MODEL),
                work.resolve("adapters").resolve(MODEL + "-fusedblock-dora-L1"),
                "dora",
                1,
                "--rank",
                "4",
                "--scale",
                "10");
        try (LanguageModel model = Models.load(
                work.resolve("models").resolve(MODEL), CpuKernels.NATIVE, Numerics.EXACT, false, null, null, true)) {
            assertEquals(2, fusedBlocksInAStep(model, null), "no adapter: both blocks fused");
            assertEquals(2, fusedBlocksInABatchStep(model, null, null), "no adapter, two rows: both fused");
            try (NamedAdapter a = model.adapterSlots().load("last", lastBlock);
                    NamedAdapter q = model.adapterSlots().load("lastq", lastBlockQ);
                    NamedAdapter all = model.adapterSlots().load("all", every);
                    NamedAdapter d = model.adapterSlots().load("dora", dora)) {
                assertEquals(2, fusedBlocksInAStep(model, null), "adapters loaded, no row on one: both fused");
                assertEquals(2, fusedBlocksInAStep(model, a), "LoRA --num-layers 1: both fused");
                assertEquals(2, fusedBlocksInAStep(model, q), "LoRA --num-layers 1, keys q_proj: both fused");
                assertEquals(2, fusedBlocksInAStep(model, all), "LoRA on every block: both fused");
                assertEquals(1, fusedBlocksInAStep(model, d), "DoRA --num-layers 1: block 0 fused, block 1 adapted");
                assertEquals(2, fusedBlocksInABatchStep(model, all, a), "two LoRA adapters' rows: both fused");
                assertEquals(2, fusedBlocksInABatchStep(model, all, null), "a LoRA row and a base row: both fused");
                assertEquals(1, fusedBlocksInABatchStep(model, all, d), "a DoRA row: its block runs the graph");
            }
        }
        try (LanguageModel model = Models.load(
                work.resolve("models").resolve(MODEL), CpuKernels.NATIVE, Numerics.EXACT, false, null, every)) {
            assertEquals(2, fusedBlocksInAStep(model, null), "--adapter-path LoRA: both fused");
            assertEquals(2, fusedBlocksInABatchStep(model, null, null), "--adapter-path LoRA, two rows: both fused");
        }
        try (LanguageModel model = Models.load(
                work.resolve("models").resolve(MODEL), CpuKernels.NATIVE, Numerics.EXACT, false, null, dora)) {
            assertEquals(1, fusedBlocksInAStep(model, null), "--adapter-path DoRA on block 1: block 0 fused");
        }
    }

    /**
     * Two rows' prompts (3 and 5 tokens) read alone, their caches merged into one batch cache, then
     * one decode step of the two rows on {@code first} and {@code second} (null: none): the step
     * graph's fused blocks.
     */
    private static int fusedBlocksInABatchStep(LanguageModel model, NamedAdapter first, NamedAdapter second) {
        RowAdapters rows = RowAdapters.of(new NamedAdapter[] {first, second});
        KvCache[] a = model.newCache(0);
        KvCache[] b = model.newCache(0);
        KvCache[] batch = new KvCache[a.length];
        try (ArrayScope s = ArrayScope.open()) {
            RowAdapters one = first == null ? null : RowAdapters.of(new NamedAdapter[] {first});
            RowAdapters two = second == null ? null : RowAdapters.of(new NamedAdapter[] {second});
            Mlx.eval(RowAdapters.during(one, () -> model.forward(Mlx.fromInts(new int[] {1, 2, 3}, 1, 3), a)));
            Mlx.eval(RowAdapters.during(two, () -> model.forward(Mlx.fromInts(new int[] {4, 5, 6, 7, 8}, 1, 5), b)));
            for (int i = 0; i < a.length; i++) {
                batch[i] = BatchKvCache.merge((DenseKvCache) a[i], (DenseKvCache) b[i]);
            }
            MlxArray step = RowAdapters.during(rows, () -> model.forward(Mlx.fromInts(new int[] {9, 10}, 2, 1), batch));
            return (int) Arrays.stream(Mlx.profileEval(step).split("\n"))
                    .filter(line -> line.startsWith("ExactDecoderBlock\t"))
                    .count();
        } finally {
            for (KvCache[] caches : java.util.List.of(a, b, batch)) {
                for (KvCache c : caches) {
                    if (c != null) {
                        c.close();
                    }
                }
            }
        }
    }

    /** A 3-token prompt then one decode step of a lone row on {@code adapter} (null: none). */
    private static int fusedBlocksInAStep(LanguageModel model, NamedAdapter adapter) {
        RowAdapters rows = adapter == null ? null : RowAdapters.of(new NamedAdapter[] {adapter});
        KvCache[] cache = model.newCache(0);
        try (ArrayScope s = ArrayScope.open()) {
            Mlx.eval(RowAdapters.during(rows, () -> model.forward(Mlx.fromInts(new int[] {1, 2, 3}, 1, 3), cache)));
            MlxArray step = RowAdapters.during(rows, () -> model.forward(Mlx.fromInts(new int[] {4}, 1, 1), cache));
            return (int) Arrays.stream(Mlx.profileEval(step).split("\n"))
                    .filter(line -> line.startsWith("ExactDecoderBlock\t"))
                    .count();
        } finally {
            for (KvCache c : cache) {
                c.close();
            }
        }
    }
}
