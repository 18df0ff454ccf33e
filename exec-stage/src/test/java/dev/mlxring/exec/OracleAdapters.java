package dev.mlxring.exec;

import dev.mlxring.mlx.PythonScript;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.List;

/**
 * Adapter folders for the live parity tests, written by {@code scripts/oracle/make_adapter.py} as
 * {@code mlx_lm.lora} writes them (random trained-looking values; the same arguments write the
 * same files, so reruns replace them with equal ones).
 */
public final class OracleAdapters {
    private OracleAdapters() {}

    /**
     * Writes an adapter of {@code type} ({@code lora}, {@code dora} or {@code full}) for the model
     * in {@code modelDir}, over the blocks {@code numLayers} picks as the script's {@code
     * --num-layers} does, to {@code out}; waits up to 5 minutes.
     *
     * @param flags the script's optional flags, each followed by its value ({@code --rank},
     *     {@code --scale}, {@code --keys}, {@code --seed}); the script's defaults stand for the rest
     * @return {@code out}
     */
    public static Path write(Path modelDir, Path out, String type, int numLayers, String... flags) {
        List<String> args = new ArrayList<>(List.of(
                "--model",
                modelDir.toString(),
                "--out",
                out.toString(),
                "--type",
                type,
                "--num-layers",
                String.valueOf(numLayers)));
        args.addAll(List.of(flags));
        PythonScript.run("oracle/make_adapter.py", 300, args);
        return out;
    }
}
