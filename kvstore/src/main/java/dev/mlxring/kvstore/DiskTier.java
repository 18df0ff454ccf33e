package dev.mlxring.kvstore;

import dev.mlxring.pipeline.PromptSegment;
import java.io.IOException;
import java.io.UncheckedIOException;
import java.lang.foreign.MemorySegment;
import java.nio.file.Files;
import java.nio.file.Path;
import java.nio.file.StandardCopyOption;
import java.util.ArrayList;
import java.util.List;
import java.util.Properties;
import java.util.concurrent.ArrayBlockingQueue;
import java.util.concurrent.BlockingQueue;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicLong;
import net.openhft.chronicle.hash.Data;
import net.openhft.chronicle.map.ChronicleMap;
import net.openhft.chronicle.map.ExternalMapQueryContext;
import net.openhft.chronicle.map.MapEntry;

/**
 * The SSD tier: KV snapshots persisted in two Chronicle Maps under {@code --prompt-cache-dir} —
 * {@code kv.cm} (content-addressed key → {@link DiskRecord} value: per-layer dtype, shape, offset
 * and bytes) and {@code index.cm} (key → header: namespace, token ids, the value's length and
 * checksum). A header is written only after its value, so an entry is visible only once
 * complete; on start the index is read back into a {@link PromptIndex} (entries without a
 * value, or whose header does not parse, are quarantined).
 *
 * <p>Spills go through a bounded queue to one daemon thread: {@link #spill} never blocks (a full
 * queue drops the spill and counts it). A byte cap evicts least recently used entries. When the
 * map refuses an entry (its fixed capacity is full) spilling stops with one warning; restores
 * go on. A value that fails its checks on restore is quarantined (removed, counted, logged) and
 * the prompt is recomputed. A map file smaller than the size recorded for it (truncated), whose
 * Chronicle Map header fails {@link MapFileHeader}'s check (zeroed, incomplete, garbled: checked
 * before Chronicle's own recovery, which would wait a minute on such a header and then rewrite it
 * in place) or that Chronicle cannot open is moved to {@code quarantine/} (kept within a
 * {@link QuarantineCap}) and a fresh one made.
 *
 * <p>Thread-safe. Owns its maps and spill thread ({@link #close()} drains, joins and closes).
 */
final class DiskTier implements AutoCloseable {
    private static final System.Logger LOG = System.getLogger("dev.mlxring.kvstore");
    /**
     * Entries the map is sized for under a byte cap: one per 32 MB (8 to 1024). Chronicle Map
     * bounds one value at a few thousand chunks of a size derived from the average, so a KV
     * snapshot (megabytes to hundreds of megabytes) needs a large average rather than many slots.
     */
    static int mapEntriesFor(long maxBytes) {
        return (int) Math.max(8, Math.min(1024, maxBytes / 32_000_000L));
    }

    /**
     * The index map's average header: 4 bytes per token id plus the namespace, sized for 16k-token
     * entries. Chronicle Map adds a tier (and grows the file) for headers beyond what the
     * preallocated chunks hold, up to its bloat limit; a header it still refuses fails that spill
     * alone (logged), and the value written before it is removed on the next start.
     */
    static final long INDEX_VALUE_BYTES = 4L * 16_384 + 512;

    private record Spill(CacheNamespace ns, int[] tokens, KvSnapshot snapshot) {}

    private final Path dir;
    private final Quarantine quarantineFolder;
    private final int mapEntries;
    private final long maxBytes;
    private final ChronicleMap<String, byte[]> data;
    private final ChronicleMap<String, byte[]> index;
    /** A restore is a use: the byte cap evicts the least recently used entries (our own policy; mlx-lm has no disk). */
    private final PromptIndex<DiskRecord.Header> entries = new PromptIndex<>(true);

    private final BlockingQueue<Spill> queue;
    private final Thread spiller;
    private long bytes;
    private volatile boolean spillingStopped;
    private volatile boolean closing;
    private final AtomicLong dropped = new AtomicLong();
    private final AtomicLong spilled = new AtomicLong();
    private final AtomicLong quarantined = new AtomicLong();
    private final AtomicLong pending = new AtomicLong();
    private final AtomicLong heapReads = new AtomicLong();
    /** Value bytes of the spills written, and the spill thread's time writing them (encode, checksum, both puts). */
    private final AtomicLong spilledBytes = new AtomicLong();

    private final AtomicLong spillNanos = new AtomicLong();

    /**
     * @param maxBytes the byte cap (LRU eviction keeps the values under it); Chronicle Map
     *     preallocates its file for {@code mapEntries} values averaging {@code maxBytes / mapEntries}
     * @param quarantineCap how much {@code quarantine/} keeps of the damaged map files set aside
     */
    DiskTier(
            Path dir,
            long maxBytes,
            int queueCapacity,
            int mapEntries,
            long averageValue,
            QuarantineCap quarantineCap) {
        this.dir = dir;
        this.quarantineFolder = new Quarantine(dir.resolve("quarantine"), quarantineCap);
        this.maxBytes = maxBytes;
        try {
            Files.createDirectories(dir);
        } catch (IOException e) {
            throw new UncheckedIOException("cannot create --prompt-cache-dir " + dir, e);
        }
        quarantineFolder.enforceCap(); // a cap lowered since, or a folder older than the cap
        this.mapEntries = mapEntries;
        long avgValue = averageValue > 0 ? averageValue : Math.max(4096, maxBytes / mapEntries);
        this.data = open("kv.cm", avgValue);
        this.index = open("index.cm", INDEX_VALUE_BYTES);
        loadIndex();
        this.queue = new ArrayBlockingQueue<>(Math.max(1, queueCapacity));
        this.spiller = Thread.ofPlatform().daemon().name("mlxring-kv-spill").start(this::spillLoop);
    }

    /** Opens (or creates) one map, quarantining a file that is truncated, has a damaged header or is unreadable. */
    private ChronicleMap<String, byte[]> open(String name, long avgValue) {
        Path file = dir.resolve(name);
        Path meta = dir.resolve(name + ".size");
        if (Files.exists(file)) {
            String why = null;
            try {
                Properties p = new Properties();
                if (Files.exists(meta)) {
                    try (var in = Files.newInputStream(meta)) {
                        p.load(in);
                    }
                }
                String recorded = p.getProperty("bytes");
                // Smaller than recorded = truncated. Larger is Chronicle's own growth (an extra
                // tier) that a SIGKILL kept us from recording; the file is recorded again below.
                if (recorded == null
                        || Long.parseLong(recorded) > Files.size(file)
                        || !String.valueOf(DiskRecord.FORMAT_VERSION).equals(p.getProperty("format"))) {
                    why = "its size or format differs from the one recorded (" + recorded + " vs " + Files.size(file)
                            + " bytes)";
                }
            } catch (IOException | RuntimeException e) {
                why = "its size record is unreadable: " + e;
            }
            if (why == null) {
                try {
                    why = MapFileHeader.damage(file);
                } catch (IOException e) {
                    why = "its header is unreadable: " + e;
                }
            }
            if (why == null) {
                try {
                    ChronicleMap<String, byte[]> m = builder(name, avgValue).recoverPersistedTo(file.toFile(), true);
                    recordSize(name);
                    return m;
                } catch (IOException | RuntimeException e) {
                    why = "Chronicle Map cannot open it: " + e;
                }
            }
            quarantineFolder.admit(file, why);
        }
        try {
            ChronicleMap<String, byte[]> m = builder(name, avgValue).createPersistedTo(file.toFile());
            recordSize(name);
            return m;
        } catch (IOException e) {
            throw new UncheckedIOException("cannot create the prompt cache map " + file, e);
        }
    }

    /**
     * Records a map file's size (and the format) in {@code NAME.size}, written to a temporary
     * file and moved into place, so a reader never sees half a record. Called at creation, on
     * open and after every spill that grew the file.
     */
    private void recordSize(String name) {
        Path file = dir.resolve(name);
        Path meta = dir.resolve(name + ".size");
        try {
            Properties p = new Properties();
            p.setProperty("bytes", String.valueOf(Files.size(file)));
            p.setProperty("format", String.valueOf(DiskRecord.FORMAT_VERSION));
            Path tmp = dir.resolve(name + ".size.tmp");
            try (var out = Files.newOutputStream(tmp)) {
                p.store(out, "size of " + name + "; a smaller file was truncated");
            }
            Files.move(tmp, meta, StandardCopyOption.REPLACE_EXISTING, StandardCopyOption.ATOMIC_MOVE);
        } catch (IOException e) {
            // the next open then finds no record and starts this map afresh
            LOG.log(System.Logger.Level.WARNING, "prompt cache: cannot record the size of {0}: {1}", file, e);
        }
    }

    /** Re-records the map files whose size Chronicle grew (spill thread). */
    private void recordGrowth() {
        for (String name : new String[] {"kv.cm", "index.cm"}) {
            try {
                Path meta = dir.resolve(name + ".size");
                Properties p = new Properties();
                try (var in = Files.newInputStream(meta)) {
                    p.load(in);
                }
                if (Long.parseLong(p.getProperty("bytes", "0")) != Files.size(dir.resolve(name))) {
                    recordSize(name);
                }
            } catch (IOException | RuntimeException e) {
                recordSize(name);
            }
        }
    }

    /**
     * The index may grow (Chronicle adds tiers, growing the file, up to 16 times its preallocated
     * size): its headers' size follows the prompts' lengths. The value map keeps the default
     * bloat limit; its size is what the byte cap preallocates. Growth is recorded after each spill.
     */
    private net.openhft.chronicle.map.ChronicleMapBuilder<String, byte[]> builder(String name, long avgValue) {
        var b = ChronicleMap.of(String.class, byte[].class)
                .name("mlxring-prompt-cache")
                .entries(mapEntries)
                .averageKeySize(64)
                .averageValueSize(avgValue);
        return name.equals("index.cm") ? b.maxBloatFactor(16) : b;
    }

    private synchronized void loadIndex() {
        List<String> bad = new ArrayList<>();
        for (String key : new ArrayList<>(index.keySet())) {
            try {
                byte[] h = index.get(key);
                DiskRecord.Header header = DiskRecord.decodeHeader(h == null ? new byte[0] : h);
                if (!key.equals(DiskRecord.key(header.ns(), header.tokens())) || !data.containsKey(key)) {
                    throw new DiskRecord.Corrupt("key, header and value disagree");
                }
                entries.put(
                        header.ns(),
                        header.tokens(),
                        header,
                        PromptSegment.Kind.ASSISTANT,
                        header.boundaries(),
                        new ArrayList<>());
                bytes += header.valueLength();
            } catch (DiskRecord.Corrupt e) {
                bad.add(key);
                LOG.log(System.Logger.Level.WARNING, "prompt cache: entry {0} quarantined: {1}", key, e.getMessage());
            }
        }
        for (String key : bad) {
            quarantine(key);
        }
        // values whose header never landed (a spill cut short) are not entries
        for (String key : new ArrayList<>(data.keySet())) {
            if (!index.containsKey(key)) {
                data.remove(key);
            }
        }
    }

    private void quarantine(String key) {
        quarantined.incrementAndGet();
        index.remove(key);
        data.remove(key);
    }

    /** The positions of the best disk entry for {@code prompt} (0 = none). */
    synchronized int peek(CacheNamespace ns, int[] prompt) {
        PromptIndex.Match<DiskRecord.Header> m = entries.find(ns, prompt);
        return m == null ? 0 : m.keep();
    }

    /** A loaded entry: its token ids and a new snapshot (the caller owns it) and the positions to keep. */
    record Loaded(int[] tokens, KvSnapshot snapshot, int keep) {}

    /** Reads and checks the best entry for {@code prompt}; null on a miss or a quarantined entry. */
    synchronized Loaded load(CacheNamespace ns, int[] prompt) {
        PromptIndex.Match<DiskRecord.Header> m = entries.find(ns, prompt);
        if (m == null) {
            return null;
        }
        DiskRecord.Header h = m.entry().value();
        String key = DiskRecord.key(h.ns(), h.tokens());
        try {
            KvSnapshot s = readValue(key, h);
            if (s.tokens() != h.tokens().length) {
                s.release();
                throw new DiskRecord.Corrupt(
                        "value holds " + s.tokens() + " positions for " + h.tokens().length + " ids");
            }
            return new Loaded(h.tokens(), s, m.keep());
        } catch (DiskRecord.Corrupt | RuntimeException e) {
            LOG.log(
                    System.Logger.Level.WARNING,
                    "prompt cache: entry {0} quarantined on restore, recomputing: {1}",
                    key,
                    e.getMessage());
            entries.remove(m.entry());
            bytes -= h.valueLength();
            quarantine(key);
            return null;
        }
    }

    /**
     * Checks and decodes the value of {@code key} in place: under the map segment's read lock the
     * value's bytes are read where the map file is mapped (checksummed, then each tensor copied
     * once into the new snapshot's native memory), with no heap copy of the value. A value whose
     * bytes are not addressable (not expected for a file-backed map) falls back to a heap copy.
     */
    private KvSnapshot readValue(String key, DiskRecord.Header h) throws DiskRecord.Corrupt {
        try (ExternalMapQueryContext<String, byte[], ?> c = data.queryContext(key)) {
            c.readLock().lock();
            MapEntry<String, byte[]> e = c.entry();
            if (e == null) {
                throw new DiskRecord.Corrupt("value missing");
            }
            Data<byte[]> v = e.value();
            MemorySegment bytes = mapped(v);
            if (bytes == null) {
                heapReads.incrementAndGet();
                bytes = MemorySegment.ofArray(v.get());
            }
            DiskRecord.checkAgainst(h, bytes);
            return DiskRecord.decodeValue(bytes);
        }
    }

    /** The value's bytes where they lie in the mapped file; null when they have no address. */
    private static MemorySegment mapped(Data<byte[]> v) {
        try {
            long address = v.bytes().addressForRead(v.offset());
            return address == 0 ? null : MemorySegment.ofAddress(address).reinterpret(v.size());
        } catch (UnsupportedOperationException | IllegalStateException | java.nio.BufferUnderflowException e) {
            return null;
        }
    }

    /** Queues {@code snapshot} (a reference the tier takes over) for writing; never blocks. */
    void spill(CacheNamespace ns, int[] tokens, KvSnapshot snapshot) {
        if (spillingStopped || closing) {
            snapshot.release();
            dropped.incrementAndGet();
            return;
        }
        pending.incrementAndGet();
        if (!queue.offer(new Spill(ns, tokens.clone(), snapshot))) {
            pending.decrementAndGet();
            snapshot.release();
            dropped.incrementAndGet();
        }
    }

    private void spillLoop() {
        while (true) {
            Spill s;
            try {
                s = queue.poll(100, TimeUnit.MILLISECONDS);
            } catch (InterruptedException e) {
                return;
            }
            if (s == null) {
                if (closing) {
                    return;
                }
                continue;
            }
            try {
                long t0 = System.nanoTime();
                write(s);
                spillNanos.addAndGet(System.nanoTime() - t0);
                recordGrowth();
            } catch (RuntimeException e) {
                LOG.log(System.Logger.Level.WARNING, "prompt cache: a spill failed", e);
            } finally {
                s.snapshot().release();
                pending.decrementAndGet();
            }
        }
    }

    private void write(Spill s) {
        if (spillingStopped) {
            dropped.incrementAndGet();
            return;
        }
        String key = DiskRecord.key(s.ns(), s.tokens());
        byte[] value = DiskRecord.encodeValue(s.snapshot());
        byte[] header = DiskRecord.encodeHeader(s.ns(), s.tokens(), s.snapshot().boundaries(), value);
        synchronized (this) {
            if (value.length > maxBytes) {
                dropped.incrementAndGet();
                return;
            }
            while (bytes + value.length > maxBytes && entries.size() > 0) {
                PromptIndex.Entry<DiskRecord.Header> e = entries.eldest();
                entries.remove(e);
                bytes -= e.value().valueLength();
                String k = DiskRecord.key(e.value().ns(), e.value().tokens());
                index.remove(k);
                data.remove(k);
            }
        }
        try {
            data.put(key, value); // outside the lock: restores go on while a large value is written
        } catch (RuntimeException e) {
            spillingStopped = true;
            dropped.incrementAndGet();
            LOG.log(
                    System.Logger.Level.WARNING,
                    "prompt cache: the disk map is full ({0}); spilling stops, "
                            + "serving goes on (entries on disk still restore)",
                    e.toString());
            return;
        }
        synchronized (this) {
            index.put(key, header); // visible from here on
            List<PromptIndex.Entry<DiskRecord.Header>> removed = new ArrayList<>();
            DiskRecord.Header h = DiskRecord.decodeHeaderUnchecked(header);
            entries.put(s.ns(), s.tokens(), h, PromptSegment.Kind.ASSISTANT, h.boundaries(), removed);
            bytes += value.length;
            spilledBytes.addAndGet(value.length);
            for (PromptIndex.Entry<DiskRecord.Header> e : removed) {
                bytes -= e.value().valueLength();
                String k = DiskRecord.key(e.value().ns(), e.value().tokens());
                if (!k.equals(key)) {
                    index.remove(k);
                    data.remove(k);
                }
            }
            spilled.incrementAndGet();
        }
    }

    /** Waits until every queued spill is written (tests, shutdown). */
    void flush() {
        while (pending.get() > 0) {
            Thread.onSpinWait();
            try {
                Thread.sleep(5);
            } catch (InterruptedException e) {
                Thread.currentThread().interrupt();
                return;
            }
        }
    }

    synchronized int size() {
        return entries.size();
    }

    synchronized long bytes() {
        return bytes;
    }

    long dropped() {
        return dropped.get();
    }

    long spilled() {
        return spilled.get();
    }

    long quarantined() {
        return quarantined.get();
    }

    /** Restores that had to copy the value to the heap (0 while mapped reads work). */
    long heapReads() {
        return heapReads.get();
    }

    boolean spillingStopped() {
        return spillingStopped;
    }

    /** Value bytes written by spills so far. */
    long spilledBytes() {
        return spilledBytes.get();
    }

    /** Time the spill thread spent writing them (the spill path's own cost: its MB/s is bytes over this). */
    long spillNanos() {
        return spillNanos.get();
    }

    @Override
    public void close() {
        closing = true;
        try {
            spiller.join(60_000);
        } catch (InterruptedException e) {
            Thread.currentThread().interrupt();
        }
        Spill s;
        while ((s = queue.poll()) != null) {
            s.snapshot().release();
            pending.decrementAndGet();
        }
        synchronized (this) {
            index.close();
            data.close();
        }
    }
}
