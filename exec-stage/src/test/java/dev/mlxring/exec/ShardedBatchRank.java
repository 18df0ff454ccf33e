package dev.mlxring.exec;

import com.fasterxml.jackson.databind.ObjectMapper;
import dev.mlxring.exec.model.LanguageModel;
import dev.mlxring.exec.model.Models;
import dev.mlxring.exec.nn.TensorShard;
import dev.mlxring.mlx.CpuKernels;
import dev.mlxring.mlx.Group;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.List;
import java.util.Map;

/**
 * One rank of the Java side of {@code ShardedBatchParityTest}, run under {@code mlx.launch -n N}:
 * this rank's part of the cell's model ({@link Models#load} with a {@link TensorShard}) runs the
 * {@link BatchParityTest} cell's schedule through our {@code BatchGenerator}; rank 0 writes the
 * steps ({@code uid:token:finish:logprobs sha256} per call) as JSON.
 *
 * <pre>ShardedBatchRank WORK_DIR CELL MODEL_DIR OUT_FILE</pre>
 */
public final class ShardedBatchRank {
    private ShardedBatchRank() {}

    public static void main(String[] argv) throws Exception {
        BatchParityTest.useWork(Path.of(argv[0]));
        BatchParityTest.Cell cell = BatchParityTest.cell(argv[1]);
        Group group = Group.init("any", true);
        List<List<String>> steps;
        try (LanguageModel model = Models.load(Path.of(argv[2]), CpuKernels.DEFAULT, new TensorShard(group))) {
            steps = BatchParityTest.run(model, cell);
        }
        if (group.rank() == 0) {
            Files.writeString(Path.of(argv[3]), new ObjectMapper().writeValueAsString(Map.of("steps", steps)));
        }
    }
}
