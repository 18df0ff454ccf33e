package dev.mlxring.kvstore;

import dev.mlxring.pipeline.PromptSegment;
import java.nio.file.Path;

/**
 * The prefix cache exec is given: the RAM tier, and with {@code --prompt-cache-dir} the SSD tier
 * behind it. Lookup takes whichever tier reuses more of the prompt (RAM on a tie); an SSD entry
 * that wins is read, checked, promoted into RAM and restored from there. Every publish goes to
 * RAM and is queued for the disk (never waiting for it); a segment end's snapshot goes to RAM
 * only: the same request's finished snapshot extends it and, on disk, replaces it (a disk entry
 * restores any prefix of itself), so spilling it would write the prompt's bytes twice. A hybrid
 * model's segment snapshot (not {@linkplain KvSnapshot#trimmable() trimmable}) is spilled too:
 * the finished entry restores only at its own boundaries. Callers never see which tier served.
 *
 * <p>Thread-safe. Owns both tiers.
 */
public final class TieredPrefixCache implements PrefixCache {
    /** Spills waiting at most before new ones are dropped (and counted). */
    public static final int SPILL_QUEUE = 8;

    private static final System.Logger LOG = System.getLogger("dev.mlxring.kvstore");

    private final RamPrefixCache ram;
    private final DiskTier disk;

    /**
     * @param diskDir null = RAM only
     * @param diskBytes the SSD tier's byte cap
     */
    public TieredPrefixCache(RamPrefixCache ram, Path diskDir, long diskBytes) {
        this(ram, diskDir, diskBytes, QuarantineCap.DEFAULT);
    }

    /**
     * As above, keeping at most {@code quarantineCap} of the damaged map files the SSD tier sets
     * aside in {@code diskDir/quarantine/}.
     */
    public TieredPrefixCache(RamPrefixCache ram, Path diskDir, long diskBytes, QuarantineCap quarantineCap) {
        this(ram, diskDir, diskBytes, DiskTier.mapEntriesFor(diskBytes), 0, quarantineCap);
    }

    /**
     * As above with the map sized for {@code mapEntries} values of {@code averageValue} bytes
     * (0: the byte cap over the entries; tests fill a small map). When the
     * disk tier cannot be opened (no space for the preallocated file, an unwritable directory)
     * the cache runs in RAM only and says so once.
     */
    TieredPrefixCache(RamPrefixCache ram, Path diskDir, long diskBytes, int mapEntries, long averageValue) {
        this(ram, diskDir, diskBytes, mapEntries, averageValue, QuarantineCap.DEFAULT);
    }

    private TieredPrefixCache(
            RamPrefixCache ram,
            Path diskDir,
            long diskBytes,
            int mapEntries,
            long averageValue,
            QuarantineCap quarantineCap) {
        this.ram = ram;
        DiskTier d = null;
        if (diskDir != null) {
            try {
                d = new DiskTier(diskDir, diskBytes, SPILL_QUEUE, mapEntries, averageValue, quarantineCap);
            } catch (RuntimeException e) {
                LOG.log(
                        System.Logger.Level.WARNING,
                        "prompt cache: the SSD tier in {0} is off ({1}); RAM only",
                        diskDir,
                        e.getMessage());
            }
        }
        this.disk = d;
    }

    /** Whether the SSD tier is running. */
    public boolean hasDisk() {
        return disk != null;
    }

    @Override
    public PrefixHit lookup(CacheNamespace ns, int[] prompt) {
        if (disk != null && disk.peek(ns, prompt) > ram.peek(ns, prompt)) {
            DiskTier.Loaded loaded = disk.load(ns, prompt);
            if (loaded != null) {
                KvSnapshot s = loaded.snapshot();
                ram.publish(ns, loaded.tokens(), s.retain()); // promoted; our reference stays for the hit
                return new PrefixHit(s, loaded.keep(), "ssd");
            }
        }
        return ram.lookup(ns, prompt);
    }

    @Override
    public void publish(CacheNamespace ns, int[] tokens, KvSnapshot snapshot) {
        if (disk != null && tokens.length == snapshot.tokens()) {
            spillOnceFilled(ns, tokens, snapshot);
        }
        ram.publish(ns, tokens, snapshot);
    }

    @Override
    public void publishSegment(CacheNamespace ns, int[] tokens, KvSnapshot snapshot, PromptSegment.Kind kind) {
        if (disk != null && !snapshot.trimmable() && tokens.length == snapshot.tokens()) {
            spillOnceFilled(ns, tokens, snapshot); // the finished entry cannot restore here
        }
        ram.publishSegment(ns, tokens, snapshot, kind);
    }

    /**
     * Queues the spill of {@code snapshot} once its bytes are written ({@link KvSnapshot#whenFilled}:
     * at once for a filled one), so the spill thread never reads a pending snapshot's bytes nor
     * waits for them; one whose bytes could not be written is not spilled.
     */
    private void spillOnceFilled(CacheNamespace ns, int[] tokens, KvSnapshot snapshot) {
        KvSnapshot spilled = snapshot.retain();
        int[] ids = tokens.clone();
        spilled.whenFilled(() -> disk.spill(ns, ids, spilled), spilled::release);
    }

    public RamPrefixCache ram() {
        return ram;
    }

    /** Blocks until queued spills are on disk (tests and shutdown). */
    public void flushSpills() {
        if (disk != null) {
            disk.flush();
        }
    }

    /**
     * SSD entries, bytes, spills written / dropped, entries quarantined, whether spilling stopped,
     * restores that read the value through a heap copy instead of the mapped bytes, the value
     * bytes spills wrote and the spill thread's time writing them; zeros without a disk tier.
     */
    public record DiskStats(
            int entries,
            long bytes,
            long spilled,
            long dropped,
            long quarantined,
            boolean stopped,
            long heapReads,
            long spilledBytes,
            long spillNanos) {
        /** The spill path's throughput: value bytes written per second of spill-thread time (0 before any). */
        public double spillMegabytesPerSecond() {
            return spillNanos == 0 ? 0 : spilledBytes / 1e6 / (spillNanos / 1e9);
        }
    }

    public DiskStats diskStats() {
        return disk == null
                ? new DiskStats(0, 0, 0, 0, 0, false, 0, 0, 0)
                : new DiskStats(
                        disk.size(),
                        disk.bytes(),
                        disk.spilled(),
                        disk.dropped(),
                        disk.quarantined(),
                        disk.spillingStopped(),
                        disk.heapReads(),
                        disk.spilledBytes(),
                        disk.spillNanos());
    }

    @Override
    public int size() {
        return ram.size();
    }

    @Override
    public long bytes() {
        return ram.bytes();
    }

    @Override
    public void close() {
        try {
            if (disk != null) {
                disk.close();
                DiskStats d = diskStats();
                if (d.spilled() == 0 && d.dropped() == 0) {
                    return;
                }
                LOG.log(
                        System.Logger.Level.INFO,
                        String.format(
                                java.util.Locale.ROOT,
                                "prompt cache: %d spills written (%.1f MB in %.2f s of spill-thread time, %.1f MB/s), "
                                        + "%d dropped",
                                d.spilled(),
                                d.spilledBytes() / 1e6,
                                d.spillNanos() / 1e9,
                                d.spillMegabytesPerSecond(),
                                d.dropped()));
            }
        } finally {
            ram.close();
        }
    }
}
