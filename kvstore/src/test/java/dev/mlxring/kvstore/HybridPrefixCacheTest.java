package dev.mlxring.kvstore;

import static org.junit.jupiter.api.Assertions.assertArrayEquals;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertNotNull;
import static org.junit.jupiter.api.Assertions.assertNull;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import dev.mlxring.pipeline.PromptSegment.Kind;
import java.lang.foreign.ValueLayout;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.List;
import java.util.stream.IntStream;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

/**
 * A hybrid model's snapshots (attention KV beside a gated delta net's recurrent state) restore
 * only at a boundary: the entry's length or a checkpoint of the recurrent state, in RAM and on
 * the SSD tier; the restored recurrent state is the checkpoint's at that position.
 */
class HybridPrefixCacheTest {
    private static final CacheNamespace NS = new CacheNamespace("hybrid", "dense", "");

    @TempDir
    Path dir;

    /** A recurrent layer's two arrays (conv, recurrence) whose bytes encode {@code position}. */
    private static LayerState recurrent(KvSnapshot.Builder b, int position) {
        List<KvTensor> t = new ArrayList<>();
        int[][] shapes = {{1, 3, 8}, {1, 2, 4, 4}};
        for (int i = 0; i < shapes.length; i++) {
            long n = 4L * IntStream.of(shapes[i]).reduce(1, (x, y) -> x * y);
            var seg = b.allocate(n);
            seg.fill((byte) (position * 3 + i));
            t.add(new KvTensor("float32", shapes[i], seg));
        }
        return new LayerState(LayerState.Kind.RECURRENT, position, 0, 0, t);
    }

    /** One dense KV layer and one recurrent layer at {@code tokens}, with checkpoints at {@code at}. */
    static KvSnapshot hybrid(int tokens, int... at) {
        KvSnapshot.Builder b = KvSnapshot.builder();
        int[] shape = {1, 1, 64, 2};
        List<KvTensor> kv = new ArrayList<>();
        for (int i = 0; i < 2; i++) {
            var seg = b.allocate(2L * 64 * 2);
            seg.fill((byte) (tokens + i));
            kv.add(new KvTensor("bfloat16", shape, seg));
        }
        b.add(new LayerState(LayerState.Kind.DENSE, tokens, 0, 0, kv));
        b.add(recurrent(b, tokens));
        for (int p : at) {
            b.checkpoint(new KvSnapshot.Checkpoint(p, List.of(recurrent(b, p))));
        }
        return b.build();
    }

    private static int[] seq(int from, int to) {
        return IntStream.range(from, to).toArray();
    }

    private static int[] diverging(int shared, int length) {
        int[] p = seq(0, length);
        for (int i = shared; i < length; i++) {
            p[i] = 10_000 + i;
        }
        return p;
    }

    /** The first byte of the restored recurrent layer's conv state at {@code keep}: its position's mark. */
    private static byte recurrentMark(PrefixHit hit) {
        LayerState l = hit.snapshot().recurrentAt(hit.cachedTokens()).getFirst();
        return l.tensors().getFirst().data().get(ValueLayout.JAVA_BYTE, 0);
    }

    @Test
    void aSnapshotWithRecurrentLayersIsNotTrimmableAndRestoresAtItsBoundaries() {
        KvSnapshot s = hybrid(40, 16, 32);
        try {
            assertFalse(s.trimmable());
            assertArrayEquals(new int[] {16, 32, 40}, s.boundaries());
            assertEquals(32, s.recurrentAt(32).getFirst().offset());
            assertThrows(IllegalArgumentException.class, () -> s.recurrentAt(33));
            long kv = 2L * 2 * 64 * 2;
            long rec = 4L * (3 * 8 + 2 * 4 * 4);
            assertEquals(kv + 3 * rec, s.nbytes(), "KV once, the recurrent state per boundary");
        } finally {
            s.release();
        }
        assertThrows(IllegalArgumentException.class, () -> hybrid(40, 40), "a checkpoint below the length");
    }

    @Test
    void aLongerEntryServesAtItsLastCheckpointWithinTheSharedPrefix() {
        try (RamPrefixCache c = new RamPrefixCache(10, Long.MAX_VALUE)) {
            c.publish(NS, seq(0, 40), hybrid(40, 16, 32));
            try (PrefixHit hit = c.lookup(NS, diverging(35, 50))) {
                assertNotNull(hit);
                assertEquals(32, hit.cachedTokens(), "not 35: the recurrent state exists at 16, 32 and 40 only");
                assertEquals((byte) (32 * 3), recurrentMark(hit));
            }
            try (PrefixHit hit = c.lookup(NS, seq(0, 40))) {
                assertEquals(32, hit.cachedTokens(), "an exact entry cannot give back its last token");
            }
            try (PrefixHit hit = c.lookup(NS, seq(0, 45))) {
                assertEquals(40, hit.cachedTokens(), "a cached prefix is restored whole");
                assertEquals((byte) (40 * 3), recurrentMark(hit));
            }
            assertNull(c.lookup(NS, diverging(12, 30)), "no boundary within the 12 shared tokens");
        }
    }

    @Test
    void anEntryWithoutCheckpointsServesOnlyWhole() {
        try (RamPrefixCache c = new RamPrefixCache(10, Long.MAX_VALUE)) {
            c.publish(NS, seq(0, 40), hybrid(40));
            assertNull(c.lookup(NS, diverging(39, 50)));
            assertNull(c.lookup(NS, seq(0, 40)));
            try (PrefixHit hit = c.lookup(NS, seq(0, 41))) {
                assertEquals(40, hit.cachedTokens());
            }
        }
    }

    @Test
    void aShorterEntryWinsWhenTheLongerOneHasNoCloserBoundary() {
        try (RamPrefixCache c = new RamPrefixCache(10, Long.MAX_VALUE)) {
            c.publishSegment(NS, seq(0, 20), hybrid(20), Kind.SYSTEM);
            c.publish(NS, seq(0, 40), hybrid(40, 16));
            assertEquals(2, c.size(), "the segment entry at 20 is no boundary of the longer one: kept");
            try (PrefixHit hit = c.lookup(NS, diverging(30, 50))) {
                assertEquals(20, hit.cachedTokens());
                assertEquals((byte) (20 * 3), recurrentMark(hit));
            }
        }
    }

    @Test
    void aCheckpointOfAnEntryOffThePromptsPathServes() {
        try (RamPrefixCache c = new RamPrefixCache(10, Long.MAX_VALUE)) {
            c.publish(NS, seq(0, 40), hybrid(40, 16, 32));
            int[] branch = diverging(23, 38);
            c.publish(NS, branch, hybrid(38));
            try (PrefixHit hit = c.lookup(NS, java.util.Arrays.copyOf(branch, 35))) {
                assertNotNull(hit, "the 38-token entry has no boundary below 35; the first one has 16");
                assertEquals(16, hit.cachedTokens());
                assertEquals((byte) (16 * 3), recurrentMark(hit));
            }
        }
    }

    @Test
    void aHybridEntrysRecurrentStateAndCheckpointsCountAgainstTheByteCap() {
        long plain = hybrid(40).nbytes();
        long withCheckpoints = hybrid(40, 16, 32).nbytes();
        assertTrue(withCheckpoints > plain, "two checkpoints of the recurrent state add bytes");
        // A cap that holds one entry without checkpoints but not one with them.
        try (RamPrefixCache c = new RamPrefixCache(10, withCheckpoints - 1)) {
            KvSnapshot a = hybrid(40, 16, 32);
            c.publish(NS, seq(0, 40), a);
            assertFalse(a.alive(), "its checkpoints take it over the cap: not kept");
            assertEquals(0, c.bytes());
            c.publish(NS, seq(100, 140), hybrid(40));
            assertEquals(plain, c.bytes());
            c.publish(NS, seq(200, 240), hybrid(40));
            assertEquals(1, c.size(), "two entries are over the cap: the older one is out");
            assertEquals(200, c.entries().getFirst()[0]);
            assertTrue(c.bytes() <= withCheckpoints - 1);
        }
    }

    @Test
    void aPrefixEntryIsDroppedOnlyWhenTheNewEntryRestoresItsBoundaries() {
        try (RamPrefixCache c = new RamPrefixCache(10, Long.MAX_VALUE)) {
            c.publishSegment(NS, seq(0, 16), hybrid(16), Kind.SYSTEM);
            c.publishSegment(NS, seq(0, 24), hybrid(24), Kind.USER);
            c.publish(NS, seq(0, 40), hybrid(40, 16, 32));
            assertEquals(2, c.size(), "16 is a checkpoint of the new entry; 24 is not");
            assertEquals(List.of(Kind.USER, Kind.ASSISTANT), c.entryKinds());
        }
    }

    @Test
    void aHybridSegmentSnapshotIsSpilledToo() {
        try (TieredPrefixCache c = new TieredPrefixCache(new RamPrefixCache(10, Long.MAX_VALUE), dir, 64L << 20)) {
            c.publishSegment(NS, seq(0, 20), hybrid(20), Kind.SYSTEM);
            c.publish(NS, seq(0, 40), hybrid(40));
            c.flushSpills();
            assertEquals(2, c.diskStats().entries(), "the finished entry cannot restore at the segment's end");
        }
        try (TieredPrefixCache c = new TieredPrefixCache(new RamPrefixCache(10, Long.MAX_VALUE), dir, 64L << 20)) {
            try (PrefixHit hit = c.lookup(NS, diverging(30, 50))) {
                assertNotNull(hit, "the system segment's end, from disk after a restart");
                assertEquals("ssd", hit.tier());
                assertEquals(20, hit.cachedTokens());
            }
        }
    }

    @Test
    void theSsdTierKeepsTheRecurrentStateAndItsCheckpointsAcrossARestart() {
        try (TieredPrefixCache c = new TieredPrefixCache(new RamPrefixCache(10, Long.MAX_VALUE), dir, 64L << 20)) {
            c.publish(NS, seq(0, 40), hybrid(40, 16, 32));
            c.flushSpills();
            assertEquals(1, c.diskStats().entries());
        }
        try (TieredPrefixCache c = new TieredPrefixCache(new RamPrefixCache(10, Long.MAX_VALUE), dir, 64L << 20)) {
            try (PrefixHit hit = c.lookup(NS, diverging(35, 50))) {
                assertNotNull(hit);
                assertEquals("ssd", hit.tier());
                assertEquals(32, hit.cachedTokens());
                assertArrayEquals(new int[] {16, 32, 40}, hit.snapshot().boundaries());
                assertEquals((byte) (32 * 3), recurrentMark(hit));
                assertTrue(hit.snapshot().layers().get(1).kind() == LayerState.Kind.RECURRENT);
                byte[] want = new byte[4 * 32];
                java.util.Arrays.fill(want, (byte) (16 * 3 + 1));
                assertArrayEquals(
                        want,
                        hit.snapshot()
                                .recurrentAt(16)
                                .getFirst()
                                .tensors()
                                .get(1)
                                .data()
                                .toArray(ValueLayout.JAVA_BYTE),
                        "the checkpoint at 16's recurrence state, byte for byte");
            }
        }
    }
}
