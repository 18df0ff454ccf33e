package dev.mlxring.ingress.cli;

import static org.junit.jupiter.api.Assertions.assertNotEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

import dev.mlxring.mlx.ProjectHome;
import java.io.ByteArrayOutputStream;
import java.io.PrintStream;
import java.nio.charset.StandardCharsets;
import java.nio.file.Path;
import java.util.List;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.FieldSource;

/**
 * The families beyond the default model through the whole server, side by side with
 * {@code mlx_lm.server}: tiny random-weight models (mlx-lm's own classes, 4-bit, SmolLM2's
 * vocabulary) paired with the default model's tokenizer. gemma3_text (sliding window 16): chat
 * prompts pass the window and every greedy answer runs over rotating caches; qwen3_moe (4 experts,
 * top-2): chat prompts route through the sorted path in prefill and the unsorted one in decode;
 * gpt_oss (window 16, sinks, 4 experts): its sliding layers rotate like gemma3's; gemma4_text
 * (window 16, KV-shared layers, per-layer inputs, soft-capped logits) likewise.
 * mlx_lm.server's prompt cache is off ({@code --prompt-cache-size 0}) so that both prefill every
 * prompt from scratch. Also: the {@code --kv-bits} refusal for gemma3's rotating caches, from
 * {@code generate} and {@code serve}.
 */
class FamilyServerTest {
    private static final List<String> CELLS =
            List.of("gemma3-serve", "gemma4-serve", "qwen3_moe-serve", "gpt_oss-serve");

    @BeforeAll
    static void buildModels() throws Exception {
        TinyServeModels.build(ProjectHome.get().resolve("build/oracle/serve"), CELLS);
    }

    private static Path modelDir(String cell) {
        return ProjectHome.get().resolve("build/oracle/serve").resolve(cell);
    }

    @ParameterizedTest(name = "{0}")
    @FieldSource("CELLS")
    void servesWhatMlxLmServerServes(String cell) throws Exception {
        Path modelDir = modelDir(cell);
        try (ServeCommand.Running server = InProcessServer.start("--model", modelDir.toString())) {
            MlxLmServerComparison.assertSameGreedyAnswers(
                    InProcessServer.base(server),
                    modelDir,
                    List.of(),
                    List.of(),
                    cell + ": greedy output differs from mlx_lm.server");
        }
    }

    @Test
    void kvBitsIsRefusedForRotatingCaches() {
        Path modelDir = modelDir("gemma3-serve");
        String expected = "--kv-bits cannot be used here: model_type 'gemma3_text' keeps its sliding-window layers"
                + " in rotating caches, which mlx-lm cannot quantize";
        for (String[] args : List.of(
                new String[] {
                    "generate",
                    "--model",
                    modelDir.toString(),
                    "--prompt-tokens",
                    "1,2,3",
                    "--kv-bits",
                    "4",
                    "--kv-group-size",
                    "32"
                },
                new String[] {
                    "serve", "--model", modelDir.toString(), "--port", "0", "--kv-bits", "8", "--kv-group-size", "32"
                })) {
            ByteArrayOutputStream err = new ByteArrayOutputStream();
            int status = Main.run(
                    args,
                    new PrintStream(new ByteArrayOutputStream()),
                    new PrintStream(err, true, StandardCharsets.UTF_8));
            assertNotEquals(0, status, args[0]);
            assertTrue(err.toString(StandardCharsets.UTF_8).contains(expected), args[0] + ": " + err);
        }
    }
}
