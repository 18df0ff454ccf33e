package dev.mlxring.ingress.cli;

import java.nio.file.Files;
import java.nio.file.Path;

/**
 * {@code --adapter-path DIR} of {@code serve} and {@code generate}, as mlx_lm.generate's and
 * mlx_lm.server's: an adapter folder mlx_lm.lora wrote ({@code adapter_config.json} +
 * {@code adapters.safetensors}; LoRA, DoRA or full) applied to the model at load. Not across
 * tensor-parallel ranks (mlx_lm.server refuses adapters in distributed mode too).
 */
final class AdapterFlag {
    static final String NAME = "--adapter-path";
    static final Flag FLAG = Flag.valued(
            NAME, "DIR", "none", "adapter folder mlx_lm.lora wrote (LoRA, DoRA or full), applied to the model");

    private AdapterFlag() {}

    /** The folder, or null without the flag; refused when it is not a folder or with {@code sharded}. */
    static Path parse(CliArgs a, boolean sharded) {
        if (!a.has(NAME)) {
            return null;
        }
        Path dir = Path.of(a.get(NAME));
        if (sharded) {
            throw new UsageException(NAME + " is not supported across tensor-parallel ranks");
        }
        if (!Files.isDirectory(dir)) {
            throw new IllegalArgumentException("the adapter path does not exist: " + dir);
        }
        return dir;
    }
}
