package dev.mlxring.engine;

import static org.junit.jupiter.api.Assertions.assertEquals;

import dev.mlxring.exec.generate.GenerationOptions;
import dev.mlxring.mlx.CpuKernels;
import dev.mlxring.mlx.Numerics;
import dev.mlxring.pipeline.EngineConfig;
import dev.mlxring.plan.RequestPlanner;
import java.nio.file.Path;
import java.util.Map;
import org.junit.jupiter.api.Test;

/**
 * {@link LocalEngine.Options}' builder sets each knob it names and defaults the rest as its
 * Javadoc says; each with-method changes its own field and keeps every other.
 */
class OptionsTest {
    private static final SpeculativeDecoding DRAFT =
            new SpeculativeDecoding("draft", Path.of("/models/draft"), 3, 0, 0);

    @Test
    void withEngineKeepsSpeculativeDecodingThePromptCacheAndTheAdapter() {
        LocalEngine.Options base = LocalEngine.Options.defaults(4096)
                .withSpeculative(DRAFT)
                .withPromptCache(LocalEngine.PromptCache.OFF)
                .withAdapter(Path.of("/adapters/a"));
        EngineConfig batched = EngineConfig.builder().decodeConcurrency(8).build();

        LocalEngine.Options changed = base.withEngine(batched);

        assertEquals(batched, changed.engine());
        assertEquals(DRAFT, changed.speculative());
        assertEquals(base.promptCache(), changed.promptCache());
        assertEquals(Path.of("/adapters/a"), changed.adapterPath());
        assertEquals(base.defaults(), changed.defaults());
        assertEquals(base.prefillStepSize(), changed.prefillStepSize());
    }

    @Test
    void withSpeculativeAndWithPromptCacheKeepTheEngineConfig() {
        EngineConfig batched = EngineConfig.builder().decodeConcurrency(4).build();
        LocalEngine.Options base = LocalEngine.Options.defaults(4096).withEngine(batched);

        assertEquals(batched, base.withSpeculative(DRAFT).engine());
        assertEquals(batched, base.withPromptCache(LocalEngine.PromptCache.OFF).engine());
    }

    @Test
    void theBuilderDefaultsAreMlxLmsAndEachKnobLandsInItsField() {
        RequestPlanner.Defaults mlxLm = RequestPlanner.Defaults.mlxLm(4096);
        assertEquals(
                new LocalEngine.Options(
                        mlxLm,
                        GenerationOptions.DEFAULT_PREFILL_STEP_SIZE,
                        EngineConfig.defaults(),
                        0,
                        CpuKernels.DEFAULT,
                        Numerics.DEFAULT,
                        LocalEngine.PromptCache.OFF,
                        false,
                        SpeculativeDecoding.OFF,
                        null,
                        LocalEngine.NamedAdapters.NONE),
                LocalEngine.Options.defaults(4096));

        EngineConfig batched = EngineConfig.builder().decodeConcurrency(8).build();
        LocalEngine.PromptCache ram = new LocalEngine.PromptCache(4, 1 << 20);
        LocalEngine.NamedAdapters named = new LocalEngine.NamedAdapters(Map.of("fr", Path.of("/adapters/fr")), 1 << 20);
        LocalEngine.Options expected = new LocalEngine.Options(
                mlxLm,
                512,
                batched,
                1024,
                CpuKernels.MLX,
                Numerics.FAST,
                ram,
                true,
                DRAFT,
                Path.of("/adapters/a"),
                named);
        LocalEngine.Options built = LocalEngine.Options.builder(mlxLm)
                .prefillStepSize(512)
                .engine(batched)
                .maxKvSize(1024)
                .cpuKernels(CpuKernels.MLX)
                .numerics(Numerics.FAST)
                .promptCache(ram)
                .dequantizedWeights(true)
                .speculative(DRAFT)
                .adapterPath(Path.of("/adapters/a"))
                .namedAdapters(named)
                .build();
        assertEquals(expected, built);
        assertEquals(built, built.toBuilder().build());
        assertEquals(
                expected,
                LocalEngine.Options.defaults(4096).toBuilder()
                        .prefillStepSize(512)
                        .maxKvSize(1024)
                        .cpuKernels(CpuKernels.MLX)
                        .numerics(Numerics.FAST)
                        .dequantizedWeights(true)
                        .build()
                        .withEngine(batched)
                        .withPromptCache(ram)
                        .withSpeculative(DRAFT)
                        .withAdapter(Path.of("/adapters/a"))
                        .withNamedAdapters(named));
    }
}
