package dev.mlxring.ingress.cli;

import dev.mlxring.engine.LocalEngine;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.regex.Pattern;

/**
 * {@code serve --adapter NAME=DIR} (repeatable) and {@code --adapter-cache-bytes N}: adapter
 * folders mlx_lm.lora wrote (LoRA or DoRA) that a request picks by {@code model}
 * ({@code <model>:<NAME>}) or by its {@code adapters} field, several in one batch; loaded once
 * at start-up (a broken one stops it, naming it) and kept under an LRU with that byte cap. Not
 * with {@code --adapter-path}, nor across tensor-parallel ranks.
 */
final class NamedAdapterFlags {
    static final String ADAPTER = "--adapter";
    static final String CACHE_BYTES = "--adapter-cache-bytes";
    /** A name that fits a model id's tail and a URL path segment. */
    private static final Pattern NAME = Pattern.compile("[A-Za-z0-9][A-Za-z0-9._-]*");

    static final List<Flag> FLAGS = List.of(
            Flag.repeated(
                    ADAPTER,
                    "NAME=DIR",
                    "none",
                    "serve the adapter folder DIR (LoRA or DoRA) as model <model>:NAME; repeatable"),
            Flag.valued(
                    CACHE_BYTES,
                    "N",
                    LocalEngine.NamedAdapters.DEFAULT_CACHE_BYTES,
                    "bytes of --adapter arrays kept loaded (least recently used evicted)"));

    private NamedAdapterFlags() {}

    /** The named adapters; refuses a malformed or repeated name, a missing folder, and the combinations above. */
    static LocalEngine.NamedAdapters parse(CliArgs a, boolean sharded, Path adapterPath) {
        List<String> given = a.all(ADAPTER);
        long cap = LocalEngine.NamedAdapters.DEFAULT_CACHE_BYTES;
        if (a.has(CACHE_BYTES)) {
            try {
                cap = Long.parseLong(a.get(CACHE_BYTES));
            } catch (NumberFormatException e) {
                cap = 0;
            }
            if (cap < 1) {
                throw new UsageException(CACHE_BYTES + " must be a positive integer, got '" + a.get(CACHE_BYTES) + "'");
            }
        }
        if (given.isEmpty()) {
            return new LocalEngine.NamedAdapters(Map.of(), cap);
        }
        if (sharded) {
            throw new UsageException(ADAPTER + " is not supported across tensor-parallel ranks");
        }
        if (adapterPath != null) {
            throw new UsageException(ADAPTER + " cannot be combined with " + AdapterFlag.NAME
                    + " (named adapters apply to the base model)");
        }
        Map<String, Path> dirs = new LinkedHashMap<>();
        for (String g : given) {
            int eq = g.indexOf('=');
            if (eq <= 0 || eq == g.length() - 1) {
                throw new UsageException(ADAPTER + " takes NAME=DIR, got '" + g + "'");
            }
            String name = g.substring(0, eq);
            if (!NAME.matcher(name).matches()) {
                throw new UsageException(ADAPTER + " name '" + name
                        + "' must be letters, digits, '.', '_' or '-', starting with a letter or digit");
            }
            if (dirs.containsKey(name)) {
                throw new UsageException(ADAPTER + " name '" + name + "' is given twice");
            }
            Path dir = Path.of(g.substring(eq + 1));
            if (!Files.isDirectory(dir)) {
                throw new IllegalArgumentException("adapter '" + name + "': the adapter path does not exist: " + dir);
            }
            dirs.put(name, dir);
        }
        return new LocalEngine.NamedAdapters(dirs, cap);
    }
}
