package dev.mlxring.kvstore;

import static org.junit.jupiter.api.Assertions.assertArrayEquals;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertNull;
import static org.junit.jupiter.api.Assertions.assertSame;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import dev.mlxring.pipeline.PromptSegment.Kind;
import java.lang.foreign.MemorySegment;
import java.util.List;
import java.util.stream.IntStream;
import org.junit.jupiter.api.Test;

/** mlx_lm.server's LRUPromptCache reuse rules, caps and snapshot ownership, on byte-only snapshots. */
class RamPrefixCacheTest {
    private static final CacheNamespace NS = new CacheNamespace("model-a", "dense", "");

    /** A one-layer dense snapshot of {@code tokens} positions, {@code bytesPerTensor} bytes per tensor. */
    static KvSnapshot snapshot(int tokens, int bytesPerTensor) {
        KvSnapshot.Builder b = KvSnapshot.builder();
        MemorySegment k = b.allocate(bytesPerTensor);
        MemorySegment v = b.allocate(bytesPerTensor);
        k.fill((byte) tokens);
        v.fill((byte) -tokens);
        int[] shape = {1, 1, bytesPerTensor / 2, 1};
        return b.add(new LayerState(
                        LayerState.Kind.DENSE,
                        tokens,
                        0,
                        0,
                        List.of(new KvTensor("bfloat16", shape, k), new KvTensor("bfloat16", shape, v))))
                .build();
    }

    static int[] seq(int from, int to) {
        return IntStream.range(from, to).toArray();
    }

    static int[] concat(int[] a, int... b) {
        int[] out = new int[a.length + b.length];
        System.arraycopy(a, 0, out, 0, a.length);
        System.arraycopy(b, 0, out, a.length, b.length);
        return out;
    }

    private static KvSnapshot publish(RamPrefixCache c, CacheNamespace ns, int[] tokens) {
        KvSnapshot s = snapshot(tokens.length, 16);
        c.publish(ns, tokens, s);
        return s;
    }

    @Test
    void shorterCachedPrefixIsReusedWhole() {
        try (RamPrefixCache c = new RamPrefixCache(10, Long.MAX_VALUE)) {
            KvSnapshot s = publish(c, NS, seq(0, 10));
            try (PrefixHit hit = c.lookup(NS, seq(0, 15))) {
                assertSame(s, hit.snapshot());
                assertEquals(10, hit.cachedTokens());
            }
        }
    }

    @Test
    void exactEntryLeavesTheLastTokenToCompute() {
        try (RamPrefixCache c = new RamPrefixCache(10, Long.MAX_VALUE)) {
            publish(c, NS, seq(0, 10));
            try (PrefixHit hit = c.lookup(NS, seq(0, 10))) {
                assertEquals(9, hit.cachedTokens());
            }
            publish(c, NS, new int[] {7});
            assertNull(c.lookup(NS, new int[] {7}), "a one-token exact entry leaves nothing to reuse");
        }
    }

    @Test
    void longerEntryIsTrimmedToTheSharedPrefix() {
        try (RamPrefixCache c = new RamPrefixCache(10, Long.MAX_VALUE)) {
            KvSnapshot s = publish(c, NS, seq(0, 20));
            // diverges after 12 shared tokens
            try (PrefixHit hit = c.lookup(NS, concat(seq(0, 12), 99, 98))) {
                assertSame(s, hit.snapshot());
                assertEquals(12, hit.cachedTokens());
            }
            // the prompt is a prefix of the entry: keep len - 1
            try (PrefixHit hit = c.lookup(NS, seq(0, 8))) {
                assertEquals(7, hit.cachedTokens());
            }
        }
    }

    @Test
    void longerBeatsShorterOnlyWhenItSharesMore() {
        try (RamPrefixCache c = new RamPrefixCache(10, Long.MAX_VALUE)) {
            // publishing a longer entry drops its prefixes, so make them diverge
            KvSnapshot shorter = publish(c, NS, seq(0, 5));
            KvSnapshot longer = publish(c, NS, concat(seq(0, 5), 50, 51, 52, 53));
            assertFalse(shorter.alive(), "a prefix of a new trimmable entry is dropped");
            KvSnapshot other = publish(c, NS, concat(seq(0, 3), 70, 71));
            try (PrefixHit hit = c.lookup(NS, concat(seq(0, 5), 50, 51, 60))) {
                assertSame(longer, hit.snapshot());
                assertEquals(7, hit.cachedTokens());
            }
            try (PrefixHit hit = c.lookup(NS, concat(seq(0, 3), 70, 71, 72))) {
                assertSame(other, hit.snapshot());
                assertEquals(5, hit.cachedTokens());
            }
        }
    }

    @Test
    void oneTokenPrefixMatchesAndOtherNamespacesDoNot() {
        try (RamPrefixCache c = new RamPrefixCache(10, Long.MAX_VALUE)) {
            publish(c, NS, seq(0, 1));
            // mlx-lm's "shorter" needs last_index > 0, but the one-token entry is then found as the
            // "longer" one below the walk's end, trimmed by nothing: it is reused all the same.
            try (PrefixHit hit = c.lookup(NS, seq(0, 4))) {
                assertEquals(1, hit.cachedTokens());
            }
            publish(c, NS, seq(100, 110));
            assertNull(c.lookup(new CacheNamespace("model-a", "kv8g64s5000", ""), seq(100, 120)), "other KV scheme");
            assertNull(c.lookup(new CacheNamespace("model-b", "dense", ""), seq(100, 120)), "other model");
            assertNull(c.lookup(new CacheNamespace("model-a", "dense", "lora1"), seq(100, 120)), "other adapter");
            assertNull(c.lookup(NS, seq(200, 220)));
        }
    }

    @Test
    void manyRowsRestoreOneEntryWithoutConsumingIt() {
        try (RamPrefixCache c = new RamPrefixCache(10, Long.MAX_VALUE)) {
            KvSnapshot s = publish(c, NS, seq(0, 10));
            PrefixHit[] hits = new PrefixHit[8];
            for (int i = 0; i < hits.length; i++) {
                hits[i] = c.lookup(NS, concat(seq(0, 10), 500 + i));
                assertSame(s, hits[i].snapshot());
            }
            assertEquals(1, c.size());
            for (PrefixHit h : hits) {
                h.close();
            }
            assertTrue(s.alive(), "the entry is still cached");
        }
    }

    @Test
    void evictedEntryStaysValidUntilItsLastReaderCloses() {
        try (RamPrefixCache c = new RamPrefixCache(1, Long.MAX_VALUE)) {
            KvSnapshot a = publish(c, NS, seq(0, 10));
            PrefixHit hit = c.lookup(NS, seq(0, 12));
            publish(c, NS, seq(50, 60)); // evicts a
            assertEquals(1, c.size());
            assertTrue(a.alive(), "a reader still holds it");
            assertEquals(
                    10,
                    hit.snapshot()
                            .layers()
                            .get(0)
                            .tensors()
                            .get(0)
                            .data()
                            .get(java.lang.foreign.ValueLayout.JAVA_BYTE, 0));
            hit.close();
            assertFalse(a.alive());
            assertNull(c.lookup(NS, seq(0, 12)));
        }
    }

    @Test
    void entryCapEvictsTheOldestAsMlxLmDoes() {
        try (RamPrefixCache c = new RamPrefixCache(2, Long.MAX_VALUE)) {
            KvSnapshot a = publish(c, NS, seq(0, 10));
            KvSnapshot b = publish(c, NS, seq(100, 110));
            c.lookup(NS, seq(0, 11)).close(); // a hit is no use: mlx-lm's deques order by insertion
            publish(c, NS, seq(200, 210));
            assertFalse(a.alive(), "a was published first");
            assertTrue(b.alive());
            assertEquals(2, c.size());
            publish(c, NS, seq(100, 110)); // republishing makes b the newest
            publish(c, NS, seq(300, 310));
            assertEquals(List.of(100, 300), c.entries().stream().map(t -> t[0]).toList());
        }
    }

    /**
     * {@code CacheOrder.pop}: the oldest assistant entry while there are at least as many of them
     * as user entries, else the oldest user entry while there are at least as many of those as
     * system entries, else the oldest system entry — never simply the oldest entry.
     */
    @Test
    void evictionFollowsTheCacheTypesAsMlxLms() {
        try (RamPrefixCache c = new RamPrefixCache(3, Long.MAX_VALUE)) {
            KvSnapshot sys = segment(c, seq(0, 10), Kind.SYSTEM);
            KvSnapshot a1 = publish(c, NS, seq(100, 110));
            KvSnapshot a2 = publish(c, NS, seq(200, 210));
            segment(c, seq(300, 310), Kind.USER); // 4 entries: 2 assistant >= 1 user, so a1 goes
            assertTrue(sys.alive(), "the oldest entry is a system prompt: kept");
            assertFalse(a1.alive());
            assertTrue(a2.alive());
            assertEquals(List.of(Kind.SYSTEM, Kind.ASSISTANT, Kind.USER), c.entryKinds());
            KvSnapshot u2 = segment(c, seq(400, 410), Kind.USER); // 1 assistant < 2 users: the oldest user goes
            assertTrue(a2.alive());
            assertEquals(List.of(Kind.SYSTEM, Kind.ASSISTANT, Kind.USER), c.entryKinds());
            assertEquals(
                    List.of(0, 200, 400), c.entries().stream().map(t -> t[0]).toList());
            segment(c, seq(500, 510), Kind.SYSTEM); // 1 assistant >= 1 user: the assistant goes
            assertFalse(a2.alive());
            assertTrue(sys.alive());
            segment(c, seq(600, 610), Kind.SYSTEM); // no assistant, 1 user < 3 systems: the oldest system goes
            assertFalse(sys.alive());
            assertTrue(u2.alive());
            assertEquals(List.of(Kind.USER, Kind.SYSTEM, Kind.SYSTEM), c.entryKinds());
        }
    }

    private static KvSnapshot segment(RamPrefixCache c, int[] tokens, Kind kind) {
        KvSnapshot s = snapshot(tokens.length, 16);
        c.publishSegment(NS, tokens, s, kind);
        return s;
    }

    @Test
    void byteCapEvictsUntilUnder() {
        // each snapshot: 2 tensors x 16 bytes = 32 bytes
        try (RamPrefixCache c = new RamPrefixCache(10, 70)) {
            KvSnapshot a = publish(c, NS, seq(0, 10));
            publish(c, NS, seq(100, 110));
            assertEquals(64, c.bytes());
            publish(c, NS, seq(200, 210));
            assertFalse(a.alive());
            assertEquals(64, c.bytes());
            assertEquals(List.of(100, 200), c.entries().stream().map(t -> t[0]).toList());
        }
        try (RamPrefixCache c = new RamPrefixCache(10, 10)) {
            KvSnapshot big = publish(c, NS, seq(0, 10));
            assertFalse(big.alive(), "an entry over the byte cap is not kept");
            assertEquals(0, c.bytes());
        }
    }

    @Test
    void republishingReplacesAndFreesThePrevious() {
        try (RamPrefixCache c = new RamPrefixCache(10, Long.MAX_VALUE)) {
            KvSnapshot a = publish(c, NS, seq(0, 10));
            KvSnapshot b = publish(c, NS, seq(0, 10));
            assertFalse(a.alive());
            assertTrue(b.alive());
            assertEquals(1, c.size());
            assertEquals(32, c.bytes());
        }
    }

    @Test
    void mismatchedTokenCountIsRefusedAndFreed() {
        try (RamPrefixCache c = new RamPrefixCache(10, Long.MAX_VALUE)) {
            KvSnapshot s = snapshot(5, 16);
            IllegalArgumentException e =
                    assertThrows(IllegalArgumentException.class, () -> c.publish(NS, seq(0, 6), s));
            assertTrue(e.getMessage().contains("5 positions"), e.getMessage());
            assertFalse(s.alive());
        }
    }

    @Test
    void closeFreesEverything() {
        RamPrefixCache c = new RamPrefixCache(10, Long.MAX_VALUE);
        KvSnapshot a = publish(c, NS, seq(0, 10));
        c.close();
        assertFalse(a.alive());
        assertNull(c.lookup(NS, seq(0, 12)));
        assertArrayEquals(new int[0], c.entries().stream().mapToInt(t -> t[0]).toArray());
    }
}
