package dev.mlxring.exec.shard;

import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import dev.mlxring.exec.model.ModelLoadException;
import dev.mlxring.exec.model.Models;
import dev.mlxring.exec.nn.TensorShard;
import dev.mlxring.mlx.CpuKernels;
import dev.mlxring.mlx.Group;
import java.nio.file.Files;
import java.nio.file.Path;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.CsvSource;

/** Families the tensor-parallel path cannot run are refused at load, by name and with the reason. */
class ShardRefusalTest {
    @TempDir
    Path dir;

    @ParameterizedTest
    @CsvSource({"phi3, has no shard()", "gemma3_text, has no shard()"})
    void unshardableFamiliesAreRefusedAtLoad(String type, String reason) throws Exception {
        Files.writeString(dir.resolve("config.json"), "{\"model_type\": \"" + type + "\"}");
        try (Group single = Group.init("any", false)) {
            ModelLoadException e = assertThrows(
                    ModelLoadException.class, () -> Models.load(dir, CpuKernels.DEFAULT, new TensorShard(single)));
            assertTrue(
                    e.getMessage().contains("model_type '" + type + "'")
                            && e.getMessage().contains(reason)
                            && e.getMessage()
                                    .contains("sharded families: gpt_oss, llama, mistral, qwen2, qwen3, qwen3_moe"),
                    e.getMessage());
        }
    }

    @Test
    void withoutALaunchTheGroupIsTheSingleton() {
        try (Group g = Group.init("any", false)) {
            assertTrue(g.size() == 1 && g.rank() == 0, g.toString());
        }
    }
}
