package dev.mlxring.ingress.cli;

import dev.mlxring.engine.LocalEngine;
import dev.mlxring.exec.prefix.PrefixReuse;
import dev.mlxring.kvstore.QuarantineCap;
import dev.mlxring.kvstore.RamPrefixCache;
import java.math.BigDecimal;
import java.util.List;
import java.util.Map;

/**
 * The prefix-cache flags of {@code serve}, named and defaulted as mlx_lm.server's:
 * {@code --prompt-cache-size N} (entries, default 10; 0 turns the cache off) and
 * {@code --prompt-cache-bytes B} (a byte cap; {@code M}/{@code G}/{@code MB}/{@code GB} suffixes are
 * decimal, as mlx-lm's {@code _parse_size}; none by default here, {@code serve} defaults it from its
 * memory budget, {@code dev.mlxring.ingress.pool.PromptCacheCap}); and the SSD tier, off unless
 * {@code --prompt-cache-dir DIR} is given, capped by {@code --prompt-cache-disk-bytes} (default 2GB),
 * whose {@code quarantine/} keeps at most {@code --prompt-cache-quarantine-files N} damaged map
 * files and {@code --prompt-cache-quarantine-bytes B} bytes ({@link QuarantineCap#DEFAULT}); and
 * {@code --prompt-cache-checkpoint N}, the prompt positions between a hybrid model's checkpoints of
 * its recurrent state (ours: mlx-lm restores such a cache only whole).
 */
final class PromptCacheFlags {
    /** The SSD tier's default byte cap; Chronicle Map preallocates about this much disk. */
    static final long DEFAULT_DISK_BYTES = 2_000_000_000L;

    static final List<Flag> FLAGS = List.of(
            Flag.valued(
                    "--prompt-cache-size",
                    "N",
                    RamPrefixCache.DEFAULT_MAX_ENTRIES,
                    "prompt KV caches kept in RAM for prefix reuse, as mlx_lm.server; 0 = off"),
            Flag.valued(
                    "--prompt-cache-bytes",
                    "B",
                    "serve: 10% of --memory-budget; else none",
                    "their byte cap per model (500MB, 2GB or a count), counted in the memory budget; oldest out first"),
            Flag.valued(
                    "--prompt-cache-dir",
                    "DIR",
                    "off",
                    "also keep them on disk (Chronicle Map files in DIR): they survive a restart"),
            Flag.valued(
                    "--prompt-cache-disk-bytes",
                    "B",
                    DEFAULT_DISK_BYTES / 1_000_000_000L + "GB",
                    "with --prompt-cache-dir: the disk tier's cap, preallocated"),
            Flag.valued(
                    "--prompt-cache-quarantine-files",
                    "N",
                    QuarantineCap.DEFAULT.maxFiles(),
                    "with --prompt-cache-dir: damaged map files DIR/quarantine/ keeps at most"),
            Flag.valued(
                    "--prompt-cache-quarantine-bytes",
                    "B",
                    QuarantineCap.DEFAULT.maxBytes(),
                    "with --prompt-cache-dir: bytes DIR/quarantine/ keeps at most"),
            Flag.valued(
                    "--prompt-cache-checkpoint",
                    "N",
                    PrefixReuse.DEFAULT_CHECKPOINT_TOKENS,
                    "hybrid models: keep the recurrent state every N prompt tokens (restorable there); 0 = at the end only"));
    static final List<String> NAMES = Flag.names(FLAGS);
    /** The flags that configure the SSD tier, refused without {@code --prompt-cache-dir}. */
    private static final List<String> DISK_ONLY =
            List.of("--prompt-cache-disk-bytes", "--prompt-cache-quarantine-files", "--prompt-cache-quarantine-bytes");

    private static final Map<String, Long> UNITS =
            Map.of("", 1L, "M", 1_000_000L, "MB", 1_000_000L, "G", 1_000_000_000L, "GB", 1_000_000_000L);

    private PromptCacheFlags() {}

    static LocalEngine.PromptCache parse(CliArgs a) {
        int size = a.intValue("--prompt-cache-size", RamPrefixCache.DEFAULT_MAX_ENTRIES, 0);
        long bytes = a.has("--prompt-cache-bytes")
                ? parseSize("--prompt-cache-bytes", a.get("--prompt-cache-bytes"))
                : Long.MAX_VALUE;
        java.nio.file.Path dir =
                a.has("--prompt-cache-dir") ? java.nio.file.Path.of(a.get("--prompt-cache-dir")) : null;
        for (String flag : DISK_ONLY) {
            if (a.has(flag) && dir == null) {
                throw new UsageException(flag + " needs --prompt-cache-dir (without it nothing goes to disk)");
            }
        }
        long disk = a.has("--prompt-cache-disk-bytes")
                ? parseSize("--prompt-cache-disk-bytes", a.get("--prompt-cache-disk-bytes"))
                : DEFAULT_DISK_BYTES;
        QuarantineCap quarantine = new QuarantineCap(
                a.intValue("--prompt-cache-quarantine-files", QuarantineCap.DEFAULT.maxFiles(), 0),
                a.has("--prompt-cache-quarantine-bytes")
                        ? parseSize("--prompt-cache-quarantine-bytes", a.get("--prompt-cache-quarantine-bytes"))
                        : QuarantineCap.DEFAULT.maxBytes());
        int checkpoint = a.intValue("--prompt-cache-checkpoint", PrefixReuse.DEFAULT_CHECKPOINT_TOKENS, 0);
        return new LocalEngine.PromptCache(size, bytes, dir, disk, quarantine, checkpoint);
    }

    static long parseSize(String text) {
        return parseSize("--prompt-cache-bytes", text);
    }

    static long parseSize(String flag, String text) {
        String t = text.strip();
        int split = 0;
        while (split < t.length() && (Character.isDigit(t.charAt(split)) || t.charAt(split) == '.')) {
            split++;
        }
        Long unit = UNITS.get(t.substring(split).strip().toUpperCase(java.util.Locale.ROOT));
        try {
            if (split == 0 || unit == null) {
                throw new NumberFormatException();
            }
            return new BigDecimal(t.substring(0, split))
                    .multiply(BigDecimal.valueOf(unit))
                    .longValueExact();
        } catch (NumberFormatException | ArithmeticException e) {
            throw new UsageException(
                    flag + " must be a byte count such as 500000000, 500MB or 2GB, got '" + text + "'");
        }
    }
}
