package dev.mlxring.engine;

import static org.junit.jupiter.api.Assertions.assertEquals;

import dev.mlxring.pipeline.EngineConfig;
import java.nio.file.Path;
import org.junit.jupiter.api.Test;

/** Each of {@link LocalEngine.Options}' withers changes its own field and keeps every other. */
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
}
