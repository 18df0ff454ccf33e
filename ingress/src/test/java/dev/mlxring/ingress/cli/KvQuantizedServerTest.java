package dev.mlxring.ingress.cli;

import dev.mlxring.mlx.ProjectHome;
import java.util.List;
import org.junit.jupiter.api.Test;

/**
 * {@code serve --kv-bits 8 --quantized-kv-start 16} against {@code mlx_lm.server} with the same
 * flags, side by side on the default model: the plan carries the KV scheme to exec, and the
 * quantized cache gives the same greedy text as mlx-lm's. Both prompt caches are off
 * ({@code --prompt-cache-size 0}) so that both prefill every prompt from scratch (a reused prefix
 * would already be quantized there).
 */
class KvQuantizedServerTest {

    @Test
    void quantizedKvCacheServesWhatMlxLmServerServes() throws Exception {
        try (ServeCommand.Running server =
                InProcessServer.start("--kv-bits", "8", "--quantized-kv-start", "16", "--prompt-cache-size", "0")) {
            MlxLmServerComparison.assertSameGreedyAnswers(
                    InProcessServer.base(server),
                    ProjectHome.get().resolve(GenerateCommand.DEFAULT_MODEL),
                    List.of(),
                    List.of("--kv-bits", "8", "--quantized-kv-start", "16"),
                    "greedy output with a quantized KV cache differs from mlx_lm.server");
        }
    }
}
