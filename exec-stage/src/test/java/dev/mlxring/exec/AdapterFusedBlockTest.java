package dev.mlxring.exec;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assumptions.assumeTrue;

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
 * Which blocks of a model built with named-adapter slots run fused while a row has an adapter: the
 * blocks whose projections the row's adapter does not convert keep the fused block (one {@code
 * ExactDecoderBlock} primitive in the step's graph each), the converted ones run the adapted
 * graph. On the 2-block qwen3-q4 oracle model, a lone row's decode step over solo caches (the
 * path where the exact tier fuses), counting the step graph's fused primitives. Parity of the
 * bytes is MixedAdapterBatchParityTest's.
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
    void blocksTheRowsAdapterDoesNotConvertRunFused() {
        Path lastBlock = adapterDir("L1", 1, "--rank", "4", "--scale", "10");
        Path lastBlockQ = adapterDir("L1-keys", 1, "--rank", "4", "--scale", "10", "--keys", "self_attn.q_proj");
        Path every = adapterDir("L0", 0, "--rank", "4", "--scale", "10");
        try (LanguageModel model = Models.load(
                work.resolve("models").resolve(MODEL), CpuKernels.NATIVE, Numerics.EXACT, false, null, null, true)) {
            assertEquals(2, fusedBlocksInAStep(model, null), "no adapter: both blocks fused");
            try (NamedAdapter a = model.adapterSlots().load("last", lastBlock);
                    NamedAdapter q = model.adapterSlots().load("lastq", lastBlockQ);
                    NamedAdapter all = model.adapterSlots().load("all", every)) {
                assertEquals(2, fusedBlocksInAStep(model, null), "adapters loaded, no row on one: both fused");
                assertEquals(1, fusedBlocksInAStep(model, a), "--num-layers 1: block 0 fused, block 1 adapted");
                assertEquals(1, fusedBlocksInAStep(model, q), "--num-layers 1, keys q_proj: block 0 fused");
                assertEquals(0, fusedBlocksInAStep(model, all), "every block converted: none fused");
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
