package dev.mlxring.ingress.cli;

import static org.junit.jupiter.api.Assertions.assertTrue;

import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.ObjectMapper;
import dev.mlxring.mlx.ProjectHome;
import dev.mlxring.mlx.PythonScript;
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
    private static final ObjectMapper JSON = new ObjectMapper();

    @Test
    void quantizedKvCacheServesWhatMlxLmServerServes() throws Exception {
        try (ServeCommand.Running server =
                InProcessServer.start("--kv-bits", "8", "--quantized-kv-start", "16", "--prompt-cache-size", "0")) {
            String out = PythonScript.run(
                    "e2e/openai_client_check.py",
                    900,
                    List.of(
                            "--base-url",
                            InProcessServer.base(server) + "/v1",
                            "--model-dir",
                            ProjectHome.get()
                                    .resolve(GenerateCommand.DEFAULT_MODEL)
                                    .toString(),
                            "--compare-mlx-lm",
                            "--compare-only",
                            "--mlx-lm-arg=--kv-bits",
                            "--mlx-lm-arg=8",
                            "--mlx-lm-arg=--quantized-kv-start",
                            "--mlx-lm-arg=16",
                            "--mlx-lm-arg=--prompt-cache-size",
                            "--mlx-lm-arg=0"));
            JsonNode comparison = JSON.readTree(out).get("comparison");
            assertTrue(comparison.size() >= 4, out);
            for (JsonNode c : comparison) {
                assertTrue(
                        c.has("identical") && c.get("identical").asBoolean(),
                        "greedy output with a quantized KV cache differs from mlx_lm.server: " + c);
            }
        }
    }
}
