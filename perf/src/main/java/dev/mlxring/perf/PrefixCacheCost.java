package dev.mlxring.perf;

import dev.mlxring.exec.kv.KvCache;
import dev.mlxring.exec.model.ModelConfig;
import dev.mlxring.exec.prefix.KvSnapshots;
import dev.mlxring.kvstore.CacheNamespace;
import dev.mlxring.kvstore.KvSnapshot;
import dev.mlxring.kvstore.KvTensor;
import dev.mlxring.kvstore.LayerState;
import dev.mlxring.kvstore.PrefixHit;
import dev.mlxring.kvstore.RamPrefixCache;
import dev.mlxring.kvstore.TieredPrefixCache;
import dev.mlxring.mlx.Mlx;
import java.lang.foreign.Arena;
import java.lang.foreign.MemorySegment;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.List;
import java.util.Locale;
import java.util.Random;
import java.util.zip.CRC32C;

/**
 * The SSD tier's own costs for one prompt of a model's KV shapes, without a server around it:
 * the spill path's throughput (encode, checksum, both map writes; the spill thread's time) and a
 * restore after a restart broken into its parts — the disk lookup (read in place from the mapped
 * file under the read lock: checksum, then each tensor copied into the promoted RAM snapshot) and
 * {@code KvSnapshots.restore} (the snapshot's bytes into MLX arrays) — beside a plain CRC32C and a
 * plain copy of the same bytes for scale. The snapshot is built directly (the model's layers,
 * KV heads and head dim from its config.json, capacity rounded up to 256 positions as the caches
 * grow, random bytes): the costs depend on the bytes, not on their values.
 *
 * <pre>
 * java ... dev.mlxring.perf.PrefixCacheCost --model DIR [--tokens 16384] [--runs 5] [--dtype bfloat16] [--dir TMP]
 * </pre>
 *
 * <p>Each run publishes a new entry, flushes it, closes the cache and opens a new one on the same
 * directory (a restart; the file's pages stay in the page cache, as right after a restart), then
 * restores it. Prints one line per run and the medians.
 */
public final class PrefixCacheCost {
    private PrefixCacheCost() {}

    private record Args(Path model, int tokens, int runs, String dtype, Path dir) {}

    public static void main(String[] argv) throws Exception {
        Args a = Flags.parseOrExit(
                argv,
                PrefixCacheCost::parse,
                "PrefixCacheCost --model DIR [--tokens N] [--runs K] [--dtype bfloat16|float16|float32] [--dir DIR]");
        ModelConfig config = ModelConfig.read(a.model());
        int layers = config.intField("num_hidden_layers", 0);
        int heads = config.intField("num_attention_heads", 0);
        int kvHeads = config.intField("num_key_value_heads", heads);
        int headDim = config.intField("head_dim", config.intField("hidden_size", 0) / heads);
        int capacity = (a.tokens() + 255) / 256 * 256;
        int item = switch (a.dtype()) {
            case "float32" -> 4;
            case "bfloat16", "float16" -> 2;
            default -> throw new IllegalArgumentException("--dtype: bfloat16, float16 or float32, got " + a.dtype());
        };
        long tensorBytes = (long) kvHeads * capacity * headDim * item;
        long total = 2L * layers * tensorBytes;
        System.out.printf(
                Locale.ROOT,
                "model %s: %d layers, %d KV heads, head_dim %d, %s; %d tokens (capacity %d): " + "%.1f MB of KV%n",
                a.model().getFileName(),
                layers,
                kvHeads,
                headDim,
                a.dtype(),
                a.tokens(),
                capacity,
                total / 1e6);
        Path dir = a.dir() != null ? a.dir() : Files.createTempDirectory("mlxring-prefix-cost-");
        long diskBytes = Math.max(64_000_000L, 4 * total);
        CacheNamespace ns = new CacheNamespace("perf-" + a.model().getFileName(), "dense", "");
        List<double[]> rows = new ArrayList<>();
        Random random = new Random(11);
        for (int run = 0; run < a.runs(); run++) {
            int[] ids = new int[a.tokens()];
            for (int i = 0; i < ids.length; i++) {
                ids[i] = random.nextInt(1 << 20);
            }
            double spillMs;
            double spillMbPerS;
            try (TieredPrefixCache cache = new TieredPrefixCache(new RamPrefixCache(0, 0), dir, diskBytes)) {
                cache.publish(
                        ns, ids, snapshot(layers, kvHeads, capacity, headDim, a.dtype(), item, a.tokens(), random));
                cache.flushSpills();
                TieredPrefixCache.DiskStats d = cache.diskStats();
                spillMs = d.spillNanos() / 1e6;
                spillMbPerS = d.spillMegabytesPerSecond();
            }
            int[] prompt = Arrays.copyOf(ids, ids.length + 1);
            double lookupMs;
            double restoreMs;
            try (TieredPrefixCache cache =
                    new TieredPrefixCache(new RamPrefixCache(10, Long.MAX_VALUE), dir, diskBytes)) {
                long t0 = System.nanoTime();
                PrefixHit hit = cache.lookup(ns, prompt);
                long t1 = System.nanoTime();
                if (hit == null || !hit.tier().equals("ssd") || hit.cachedTokens() != a.tokens()) {
                    throw new IllegalStateException("the entry did not restore from disk: "
                            + (hit == null ? "miss" : hit.tier() + " " + hit.cachedTokens()));
                }
                KvCache[] restored;
                try (hit) {
                    long t2 = System.nanoTime();
                    restored = KvSnapshots.restore(hit.snapshot(), hit.cachedTokens());
                    long t3 = System.nanoTime();
                    lookupMs = (t1 - t0) / 1e6;
                    restoreMs = (t3 - t2) / 1e6;
                }
                for (KvCache c : restored) {
                    c.close();
                }
            }
            double crcMs = crcMs(total);
            double copyMs = copyMs(total);
            rows.add(new double[] {spillMs, spillMbPerS, lookupMs, restoreMs, crcMs, copyMs});
            System.out.printf(
                    Locale.ROOT,
                    "run %d: spill %.1f ms (%.0f MB/s); restore: disk lookup %.1f ms "
                            + "(checksum + copy into the RAM snapshot + promote) + KvSnapshots.restore %.1f ms (into MLX "
                            + "arrays) = %.1f ms; for scale: CRC32C alone %.1f ms, one plain copy %.1f ms%n",
                    run,
                    spillMs,
                    spillMbPerS,
                    lookupMs,
                    restoreMs,
                    lookupMs + restoreMs,
                    crcMs,
                    copyMs);
            Mlx.clearCache();
        }
        String[] names = {"spill ms", "spill MB/s", "disk lookup ms", "KvSnapshots.restore ms", "CRC32C ms", "copy ms"};
        StringBuilder b = new StringBuilder("median of " + a.runs() + ":");
        for (int c = 0; c < names.length; c++) {
            final int col = c;
            double[] v = rows.stream().mapToDouble(r -> r[col]).sorted().toArray();
            b.append(String.format(Locale.ROOT, " %s %.1f;", names[c], v[v.length / 2]));
        }
        System.out.println(b);
    }

    private static KvSnapshot snapshot(
            int layers, int kvHeads, int capacity, int headDim, String dtype, int item, int tokens, Random random) {
        KvSnapshot.Builder b = KvSnapshot.builder();
        byte[] chunk = new byte[1 << 16];
        for (int l = 0; l < layers; l++) {
            List<KvTensor> kv = new ArrayList<>(2);
            for (int t = 0; t < 2; t++) {
                MemorySegment seg = b.allocate((long) kvHeads * capacity * headDim * item);
                for (long off = 0; off < seg.byteSize(); off += chunk.length) {
                    random.nextBytes(chunk);
                    int n = (int) Math.min(chunk.length, seg.byteSize() - off);
                    MemorySegment.copy(MemorySegment.ofArray(chunk), 0, seg, off, n);
                }
                kv.add(new KvTensor(dtype, new int[] {1, kvHeads, capacity, headDim}, seg));
            }
            b.add(new LayerState(LayerState.Kind.DENSE, tokens, 0, 0, kv));
        }
        return b.build();
    }

    private static double crcMs(long bytes) {
        try (Arena arena = Arena.ofConfined()) {
            MemorySegment s = arena.allocate(bytes);
            s.fill((byte) 7);
            long t0 = System.nanoTime();
            CRC32C c = new CRC32C();
            for (long off = 0; off < bytes; off += Integer.MAX_VALUE / 2) {
                c.update(s.asSlice(off, Math.min(Integer.MAX_VALUE / 2, bytes - off))
                        .asByteBuffer());
            }
            return (System.nanoTime() - t0) / 1e6;
        }
    }

    /** One copy of {@code bytes} into freshly allocated native memory (page faults included, as the restore's). */
    private static double copyMs(long bytes) {
        try (Arena arena = Arena.ofConfined()) {
            MemorySegment src = arena.allocate(bytes);
            src.fill((byte) 3);
            long t0 = System.nanoTime();
            try (Arena dst = Arena.ofConfined()) {
                MemorySegment d = dst.allocate(bytes, 64);
                MemorySegment.copy(src, 0, d, 0, bytes);
            }
            return (System.nanoTime() - t0) / 1e6;
        }
    }

    private static Args parse(String[] argv) {
        Path model = null;
        int tokens = 16_384;
        int runs = 5;
        String dtype = "bfloat16";
        Path dir = null;
        Flags f = new Flags(argv);
        while (f.next()) {
            switch (f.flag()) {
                case "--model" -> model = Path.of(f.value());
                case "--tokens" -> tokens = f.positive();
                case "--runs" -> runs = f.positive();
                case "--dtype" -> dtype = f.value();
                case "--dir" -> dir = Path.of(f.value());
                default -> throw f.unknown();
            }
        }
        if (model == null) {
            throw new IllegalArgumentException("--model is required");
        }
        return new Args(model, tokens, runs, dtype, dir);
    }
}
