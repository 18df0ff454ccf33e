package dev.mlxring.kvstore;

import static org.junit.jupiter.api.Assertions.assertArrayEquals;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertNotNull;
import static org.junit.jupiter.api.Assertions.assertNull;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.io.RandomAccessFile;
import java.lang.foreign.ValueLayout;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.List;
import java.util.stream.Stream;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

/**
 * The SSD tier in Chronicle Map: entries survive a restart byte for byte; a corrupted value, a
 * truncated map file, a damaged map header (found before Chronicle Map opens the file) and a
 * format mismatch are quarantined and never restored, within the quarantine's cap; a full map stops
 * spilling with one warning while serving goes on; a full queue drops spills without waiting.
 */
class DiskTierTest {
    private static final CacheNamespace NS = new CacheNamespace("model-a", "dense", "");
    private static final long CAP = 64L << 20;

    @TempDir
    Path dir;

    /** A two-layer snapshot (dense and quantized) whose bytes encode {@code seed}. */
    static KvSnapshot snapshot(int tokens, int seed) {
        KvSnapshot.Builder b = KvSnapshot.builder();
        int[] shape = {1, 2, 256, 8};
        java.util.List<KvTensor> dense = new java.util.ArrayList<>();
        for (int i = 0; i < 2; i++) {
            var seg = b.allocate(2L * 256 * 2 * 8);
            for (long j = 0; j < seg.byteSize(); j++) {
                seg.set(ValueLayout.JAVA_BYTE, j, (byte) (seed * 31 + i * 7 + j));
            }
            dense.add(new KvTensor("bfloat16", shape, seg));
        }
        b.add(new LayerState(LayerState.Kind.DENSE, tokens, 0, 0, dense));
        java.util.List<KvTensor> q = new java.util.ArrayList<>();
        for (int i = 0; i < 6; i++) {
            boolean w = i % 3 == 0;
            int[] s = {1, 2, 256, w ? 1 : 1};
            var seg = b.allocate((w ? 4L : 2L) * 2 * 256);
            seg.fill((byte) (seed + i));
            q.add(new KvTensor(w ? "uint32" : "bfloat16", s, seg));
        }
        b.add(new LayerState(LayerState.Kind.QUANTIZED, tokens, 32, 4, q));
        return b.build();
    }

    static int[] seq(int from, int to) {
        return java.util.stream.IntStream.range(from, to).toArray();
    }

    private static void assertSameBytes(KvSnapshot want, KvSnapshot got) {
        assertEquals(want.tokens(), got.tokens());
        assertEquals(want.layers().size(), got.layers().size());
        for (int l = 0; l < want.layers().size(); l++) {
            LayerState a = want.layers().get(l);
            LayerState b = got.layers().get(l);
            assertEquals(a.kind(), b.kind());
            assertEquals(a.groupSize(), b.groupSize());
            assertEquals(a.bits(), b.bits());
            for (int t = 0; t < a.tensors().size(); t++) {
                assertEquals(a.tensors().get(t).dtype(), b.tensors().get(t).dtype());
                assertArrayEquals(a.tensors().get(t).shape(), b.tensors().get(t).shape());
                assertArrayEquals(
                        a.tensors().get(t).data().toArray(ValueLayout.JAVA_BYTE),
                        b.tensors().get(t).data().toArray(ValueLayout.JAVA_BYTE));
            }
        }
    }

    private TieredPrefixCache open() {
        return new TieredPrefixCache(new RamPrefixCache(10, Long.MAX_VALUE), dir, CAP);
    }

    /** Publishes one 40-token entry whose bytes encode {@code seed}, spills it to disk and closes the cache. */
    private void spillOne(int seed) {
        try (TieredPrefixCache c = open()) {
            c.publish(NS, seq(0, 40), snapshot(40, seed));
            c.flushSpills();
        }
    }

    /** Whether {@code quarantine/} holds a file moved there from the map file {@code mapFile}. */
    private boolean quarantined(String mapFile) throws java.io.IOException {
        try (Stream<Path> q = Files.list(dir.resolve("quarantine"))) {
            return q.anyMatch(p -> p.getFileName().toString().startsWith(mapFile + "."));
        }
    }

    @Test
    void entriesSurviveARestartByteForByte() {
        KvSnapshot original = snapshot(40, 3);
        KvSnapshot reference = snapshot(40, 3);
        try (TieredPrefixCache c = open()) {
            c.publish(NS, seq(0, 40), original);
            c.flushSpills();
            assertEquals(1, c.diskStats().entries());
            assertEquals(1, c.diskStats().spilled());
        }
        try (TieredPrefixCache c = open()) {
            assertEquals(0, c.ram().size(), "RAM starts empty after a restart");
            try (PrefixHit hit = c.lookup(NS, seq(0, 45))) {
                assertNotNull(hit, "served from disk after the restart");
                assertEquals("ssd", hit.tier());
                assertEquals(40, hit.cachedTokens());
                assertSameBytes(reference, hit.snapshot());
                assertEquals(0, c.diskStats().heapReads(), "read in place from the mapped file");
            }
            try (PrefixHit again = c.lookup(NS, seq(0, 45))) {
                assertEquals("ram", again.tier(), "promoted into RAM");
            }
            assertNull(c.lookup(new CacheNamespace("model-a", "kv8g64s5000", ""), seq(0, 45)), "other scheme");
        }
        reference.release();
    }

    @Test
    void aCorruptedValueIsQuarantinedAndNeverRestored() throws Exception {
        spillOne(5);
        // flip bytes inside the stored tensor data (the pattern 5*31.. appears only there)
        Path file = dir.resolve("kv.cm");
        byte[] all = Files.readAllBytes(file);
        byte[] needle = snapshot(40, 5)
                .layers()
                .get(0)
                .tensors()
                .get(0)
                .data()
                .asSlice(0, 64)
                .toArray(ValueLayout.JAVA_BYTE);
        int at = indexOf(all, needle);
        assertTrue(at > 0, "tensor bytes found in the map file");
        try (RandomAccessFile f = new RandomAccessFile(file.toFile(), "rw")) {
            f.seek(at + 10);
            f.write(new byte[] {1, 2, 3, 4});
        }
        try (TieredPrefixCache c = open()) {
            assertNull(c.lookup(NS, seq(0, 45)), "a corrupted entry is not restored");
            assertEquals(1, c.diskStats().quarantined());
            assertEquals(0, c.diskStats().entries());
            assertNull(c.lookup(NS, seq(0, 45)), "and stays gone");
        }
    }

    @Test
    void aTruncatedMapFileIsQuarantinedAndTheCacheStartsEmpty() throws Exception {
        spillOne(7);
        Path file = dir.resolve("kv.cm");
        try (RandomAccessFile f = new RandomAccessFile(file.toFile(), "rw")) {
            f.setLength(f.length() / 3);
        }
        try (TieredPrefixCache c = open()) {
            assertNull(c.lookup(NS, seq(0, 45)));
            assertEquals(0, c.diskStats().entries());
            c.publish(NS, seq(100, 140), snapshot(40, 8));
            c.flushSpills();
            assertEquals(1, c.diskStats().entries(), "the fresh map takes spills");
        }
        assertTrue(quarantined("kv.cm"));
    }

    /**
     * An index whose first 64 KB were zeroed (Chronicle Map's own header and the state after it)
     * is found damaged before Chronicle Map opens it: start-up stays within a few seconds (Chronicle
     * waits about a minute for such a header, then rewrites the file in place), the file goes to
     * {@code quarantine/} with a warning saying why, and the tier starts empty and takes spills.
     */
    @Test
    void aZeroedIndexHeaderIsQuarantinedFastAndTheTierStartsEmpty() throws Exception {
        spillOne(4);
        Path file = dir.resolve("index.cm");
        try (RandomAccessFile f = new RandomAccessFile(file.toFile(), "rw")) {
            f.write(new byte[(int) Math.min(64 * 1024, f.length())]);
        }
        List<String> warnings = new java.util.concurrent.CopyOnWriteArrayList<>();
        java.util.logging.Handler handler = warningsInto(warnings);
        long t0 = System.nanoTime();
        try (TieredPrefixCache c = open()) {
            long startNs = System.nanoTime() - t0;
            assertTrue(startNs < 5_000_000_000L, "start-up took " + startNs / 1_000_000 + " ms");
            assertTrue(c.hasDisk());
            assertEquals(0, c.diskStats().entries());
            assertNull(c.lookup(NS, seq(0, 45)), "nothing restored from a damaged index");
            c.publish(NS, seq(100, 140), snapshot(40, 6));
            c.flushSpills();
            assertEquals(1, c.diskStats().entries(), "the fresh maps take spills");
        } finally {
            java.util.logging.Logger.getLogger("dev.mlxring.kvstore").removeHandler(handler);
        }
        assertTrue(quarantined("index.cm"), "index quarantined");
        assertTrue(
                warnings.stream().anyMatch(w -> w.contains("index.cm") && w.contains("header")),
                "a warning names the file and the damage: " + warnings);
    }

    /**
     * One byte changed inside the value map's header (its configuration text): Chronicle Map would
     * rewrite the header and open the map without a word; the header's checksum catches it, the
     * file is quarantined and the entry (whose value is gone with it) is not restored.
     */
    @Test
    void aGarbledValueMapHeaderIsQuarantined() throws Exception {
        spillOne(4);
        Path file = dir.resolve("kv.cm");
        try (RandomAccessFile f = new RandomAccessFile(file.toFile(), "rw")) {
            f.seek(MapFileHeader.PREFIX_BYTES + 100);
            int b = f.read();
            f.seek(MapFileHeader.PREFIX_BYTES + 100);
            f.write(b ^ 0x01);
        }
        List<String> warnings = new java.util.concurrent.CopyOnWriteArrayList<>();
        java.util.logging.Handler handler = warningsInto(warnings);
        try (TieredPrefixCache c = open()) {
            assertNull(c.lookup(NS, seq(0, 45)));
            assertEquals(0, c.diskStats().entries());
        } finally {
            java.util.logging.Logger.getLogger("dev.mlxring.kvstore").removeHandler(handler);
        }
        assertTrue(quarantined("kv.cm"), "value map quarantined");
        assertTrue(warnings.stream().anyMatch(w -> w.contains("kv.cm") && w.contains("checksum")), warnings.toString());
    }

    /**
     * Damage on every start fills the quarantine no further than its cap: the newest files stay,
     * the oldest are deleted (here: a 2-file cap after four damaged index maps).
     */
    @Test
    void repeatedDamageKeepsTheQuarantineWithinItsCap() throws Exception {
        QuarantineCap cap = new QuarantineCap(2, Long.MAX_VALUE);
        List<String> kept = new java.util.ArrayList<>();
        for (int i = 0; i < 4; i++) {
            try (TieredPrefixCache c = new TieredPrefixCache(new RamPrefixCache(10, Long.MAX_VALUE), dir, CAP, cap)) {
                assertEquals(0, c.diskStats().entries());
            }
            try (RandomAccessFile f =
                    new RandomAccessFile(dir.resolve("index.cm").toFile(), "rw")) {
                f.write(new byte[MapFileHeader.PREFIX_BYTES]);
            }
        }
        try (TieredPrefixCache c = new TieredPrefixCache(new RamPrefixCache(10, Long.MAX_VALUE), dir, CAP, cap)) {
            assertTrue(c.hasDisk());
        }
        try (Stream<Path> q = Files.list(dir.resolve("quarantine"))) {
            q.forEach(p -> kept.add(p.getFileName().toString()));
        }
        assertEquals(2, kept.size(), "the cap holds: " + kept);
        assertTrue(kept.stream().allMatch(n -> n.startsWith("index.cm.")), kept.toString());
    }

    /** Collects the kvstore logger's warnings (formatted) into {@code into}; the caller removes the handler. */
    private static java.util.logging.Handler warningsInto(List<String> into) {
        java.util.logging.Handler handler = new java.util.logging.Handler() {
            @Override
            public void publish(java.util.logging.LogRecord r) {
                if (r.getLevel().intValue() >= java.util.logging.Level.WARNING.intValue()) {
                    into.add(new java.util.logging.SimpleFormatter().formatMessage(r));
                }
            }

            @Override
            public void flush() {}

            @Override
            public void close() {}
        };
        java.util.logging.Logger.getLogger("dev.mlxring.kvstore").addHandler(handler);
        return handler;
    }

    /**
     * A header holds 4 bytes per token id, so long prompts outgrow the index map's preallocated
     * chunks and Chronicle Map adds a tier: the file grows. Growth is recorded after the spill,
     * and a growth a SIGKILL kept from being recorded (a record smaller than the file) is not
     * taken for truncation either: the entries restore after the restart.
     */
    @Test
    void longPromptsSurviveARestartThoughChronicleGrowsTheIndexFile() throws Exception {
        int n = 90_000;
        long created;
        try (TieredPrefixCache c = open()) {
            created = Files.size(dir.resolve("index.cm"));
            for (int i = 0; i < 3; i++) {
                c.publish(NS, seq(1_000_000 * i, 1_000_000 * i + n), snapshot(n, i));
                c.flushSpills();
            }
            assertEquals(3, c.diskStats().entries(), "every long entry spilled: " + c.diskStats());
        }
        assertTrue(Files.size(dir.resolve("index.cm")) > created, "this test needs the index to have grown");
        try (TieredPrefixCache c = open()) {
            assertEquals(3, c.diskStats().entries(), "nothing quarantined: " + c.diskStats());
        }
        Path meta = dir.resolve("index.cm.size");
        Files.writeString(meta, Files.readString(meta).replaceAll("bytes=\\d+", "bytes=" + created));
        try (TieredPrefixCache c = open()) {
            assertEquals(3, c.diskStats().entries(), "an unrecorded growth is no truncation");
            try (PrefixHit hit = c.lookup(NS, seq(2_000_000, 2_000_000 + n + 1))) {
                assertEquals("ssd", hit.tier());
                assertEquals(n, hit.cachedTokens());
            }
        }
    }

    @Test
    void anotherFormatVersionIsNotRead() throws Exception {
        spillOne(9);
        // a map written by another format version is recorded as such
        Path meta = dir.resolve("kv.cm.size");
        Files.writeString(meta, Files.readString(meta).replace("format=" + DiskRecord.FORMAT_VERSION, "format=999"));
        try (TieredPrefixCache c = open()) {
            assertNull(c.lookup(NS, seq(0, 45)));
            assertEquals(0, c.diskStats().entries());
        }
    }

    @Test
    void aFullMapStopsSpillingWithOneWarningAndServingGoesOn() {
        // a map sized for 2 values of ~64 KiB under a 1 GiB byte cap: the cap never evicts, the map fills
        long one = DiskRecord.encodeValue(snapshot(40, 1)).length;
        // System.Logger goes to java.util.logging here (no other LoggerFinder on this class path)
        java.util.logging.Logger jul = java.util.logging.Logger.getLogger("dev.mlxring.kvstore");
        List<String> warnings = new java.util.concurrent.CopyOnWriteArrayList<>();
        java.util.logging.Handler handler = new java.util.logging.Handler() {
            @Override
            public void publish(java.util.logging.LogRecord r) {
                if (r.getLevel().intValue() >= java.util.logging.Level.WARNING.intValue()) {
                    warnings.add(r.getMessage());
                }
            }

            @Override
            public void flush() {}

            @Override
            public void close() {}
        };
        jul.addHandler(handler);
        try (TieredPrefixCache c =
                new TieredPrefixCache(new RamPrefixCache(100, Long.MAX_VALUE), dir, 1L << 30, 2, one)) {
            int i = 0;
            for (; i < 200 && !c.diskStats().stopped(); i++) {
                c.publish(NS, seq(1000 * i, 1000 * i + 40), snapshot(40, i));
                c.flushSpills();
            }
            assertTrue(c.diskStats().stopped(), "the map filled after " + i + " spills");
            long dropped = c.diskStats().dropped();
            c.publish(NS, seq(900_000, 900_040), snapshot(40, 99));
            c.flushSpills();
            assertEquals(dropped + 1, c.diskStats().dropped(), "later spills are dropped, without another attempt");
            // serving goes on: RAM hits, and disk entries written before still restore
            try (PrefixHit hit = c.lookup(NS, seq(900_000, 900_045))) {
                assertEquals("ram", hit.tier());
            }
            for (int k = 0; k < 3; k++) {
                c.publish(NS, seq(800_000 + 1000 * k, 800_040 + 1000 * k), snapshot(40, k));
            }
            c.flushSpills();
            assertEquals(
                    1,
                    warnings.stream().filter(w -> w.contains("full")).count(),
                    "one warning however many spills are dropped: " + warnings);
        } finally {
            jul.removeHandler(handler);
        }
    }

    @Test
    void theDiskByteCapEvictsLeastRecentlyUsed() {
        long one = DiskRecord.encodeValue(snapshot(40, 1)).length;
        try (TieredPrefixCache c =
                new TieredPrefixCache(new RamPrefixCache(10, Long.MAX_VALUE), dir, 2 * one + one / 2)) {
            for (int i = 0; i < 4; i++) {
                c.publish(NS, seq(1000 * i, 1000 * i + 40), snapshot(40, i));
                c.flushSpills();
            }
            assertEquals(2, c.diskStats().entries());
            assertTrue(c.diskStats().bytes() <= 2 * one + one / 2);
        }
        try (TieredPrefixCache c = open()) {
            assertNull(c.lookup(NS, seq(0, 45)), "the oldest was evicted from disk");
            try (PrefixHit hit = c.lookup(NS, seq(3000, 3045))) {
                assertEquals("ssd", hit.tier());
            }
        }
    }

    @Test
    void manyRowsRestoreOneDiskEntry() {
        spillOne(2);
        try (TieredPrefixCache c = open()) {
            List<PrefixHit> hits = new java.util.ArrayList<>();
            for (int i = 0; i < 8; i++) {
                hits.add(c.lookup(NS, seq(0, 41 + i)));
            }
            KvSnapshot first = hits.get(0).snapshot();
            for (PrefixHit h : hits) {
                assertEquals(40, h.cachedTokens());
                assertEquals(first.tokens(), h.snapshot().tokens());
                h.close();
            }
            assertEquals("ssd", hits.get(0).tier());
            assertEquals("ram", hits.get(1).tier());
            assertTrue(first.alive(), "still cached in RAM");
        }
    }

    private static int indexOf(byte[] hay, byte[] needle) {
        outer:
        for (int i = 0; i + needle.length <= hay.length; i++) {
            for (int j = 0; j < needle.length; j++) {
                if (hay[i + j] != needle[j]) {
                    continue outer;
                }
            }
            return i;
        }
        return -1;
    }

    /** A default-model-sized snapshot (30 layers of 2 x 98 KB, about 6 MB) under a 200 MB cap. */
    @Test
    void megabyteSnapshotsFitUnderTheDefaultSizing() {
        KvSnapshot.Builder b = KvSnapshot.builder();
        for (int l = 0; l < 30; l++) {
            List<KvTensor> t = new java.util.ArrayList<>();
            for (int i = 0; i < 2; i++) {
                var seg = b.allocate(2L * 3 * 256 * 64);
                seg.fill((byte) (l + i));
                t.add(new KvTensor("bfloat16", new int[] {1, 3, 256, 64}, seg));
            }
            b.add(new LayerState(LayerState.Kind.DENSE, 200, 0, 0, t));
        }
        try (TieredPrefixCache c = new TieredPrefixCache(new RamPrefixCache(10, Long.MAX_VALUE), dir, 200_000_000L)) {
            c.publish(NS, seq(0, 200), b.build());
            c.flushSpills();
            assertFalse(c.diskStats().stopped());
            assertEquals(1, c.diskStats().entries());
        }
    }

    @Test
    void noDirMeansRamOnly() {
        try (TieredPrefixCache c = new TieredPrefixCache(new RamPrefixCache(10, Long.MAX_VALUE), null, 0)) {
            c.publish(NS, seq(0, 10), snapshot(10, 1));
            assertEquals(0, c.diskStats().entries());
            assertFalse(c.diskStats().stopped());
            try (PrefixHit h = c.lookup(NS, seq(0, 12))) {
                assertEquals("ram", h.tier());
            }
        }
    }
}
