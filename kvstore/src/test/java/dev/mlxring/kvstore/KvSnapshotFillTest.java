package dev.mlxring.kvstore;

import static org.junit.jupiter.api.Assertions.assertArrayEquals;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertNotNull;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.lang.foreign.MemorySegment;
import java.lang.foreign.ValueLayout;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.CountDownLatch;
import java.util.concurrent.TimeUnit;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

/**
 * A pending snapshot ({@link KvSnapshot.Builder#buildPending}): counted and published before its
 * bytes exist, its bytes written once on its filling thread, read by nobody before that: a reader
 * on the filling thread writes them itself, one elsewhere waits, and the SSD tier spills the
 * entry only once they are written.
 */
class KvSnapshotFillTest {
    private static final CacheNamespace NS = new CacheNamespace("model-a", "dense", "");

    @TempDir
    Path dir;

    /** A one-layer dense snapshot of {@code tokens} positions whose fill writes bytes encoding {@code seed}. */
    private static final class Pending {
        final KvSnapshot snapshot;
        final List<MemorySegment> targets = new ArrayList<>();
        int fills;

        Pending(int tokens, int seed, RuntimeException failure) {
            KvSnapshot.Builder b = KvSnapshot.builder();
            List<KvTensor> tensors = new ArrayList<>();
            for (int i = 0; i < 2; i++) {
                MemorySegment seg = b.allocate(2L * 2 * 64 * 8);
                targets.add(seg);
                tensors.add(new KvTensor("bfloat16", new int[] {1, 2, 64, 8}, seg));
            }
            b.add(new LayerState(LayerState.Kind.DENSE, tokens, 0, 0, tensors));
            snapshot = b.buildPending(() -> {
                fills++;
                if (failure != null) {
                    throw failure;
                }
                for (int i = 0; i < targets.size(); i++) {
                    MemorySegment s = targets.get(i);
                    for (long j = 0; j < s.byteSize(); j++) {
                        s.set(ValueLayout.JAVA_BYTE, j, pattern(seed, i, j));
                    }
                }
            });
        }
    }

    private static byte pattern(int seed, int tensor, long j) {
        return (byte) (seed * 31 + tensor * 7 + j + 1);
    }

    private static void assertPattern(KvSnapshot s, int seed) {
        List<KvTensor> tensors = s.layers().get(0).tensors();
        for (int i = 0; i < tensors.size(); i++) {
            byte[] got = tensors.get(i).data().toArray(ValueLayout.JAVA_BYTE);
            byte[] want = new byte[got.length];
            for (int j = 0; j < want.length; j++) {
                want[j] = pattern(seed, i, j);
            }
            assertArrayEquals(want, got, "tensor " + i);
        }
    }

    @Test
    void itsBytesCountIsFinalBeforeTheFillAndTheFillingThreadWritesThemOnceOnFirstRead() {
        Pending p = new Pending(40, 5, null);
        assertFalse(p.snapshot.filled());
        assertEquals(2 * 2L * 2 * 64 * 8, p.snapshot.nbytes(), "counted before the bytes exist");
        assertEquals(0, p.fills);
        p.snapshot.awaitFilled();
        assertTrue(p.snapshot.filled());
        assertPattern(p.snapshot, 5);
        p.snapshot.awaitFilled();
        assertEquals(1, p.fills, "written once");
        p.snapshot.release();
    }

    @Test
    void aReaderOnAnotherThreadWaitsForTheFillingThread() throws Exception {
        Pending p = new Pending(40, 9, null);
        CountDownLatch started = new CountDownLatch(1);
        CompletableFuture<byte[]> read = CompletableFuture.supplyAsync(() -> {
            started.countDown();
            p.snapshot.awaitFilled();
            return p.snapshot.layers().get(0).tensors().get(1).data().toArray(ValueLayout.JAVA_BYTE);
        });
        assertTrue(started.await(30, TimeUnit.SECONDS));
        assertEquals(0, p.fills, "the other thread does not write them");
        p.snapshot.awaitFilled();
        byte[] got = read.get(30, TimeUnit.SECONDS);
        assertEquals(pattern(9, 1, 0), got[0]);
        assertEquals(pattern(9, 1, got.length - 1), got[got.length - 1]);
        assertEquals(1, p.fills);
        p.snapshot.release();
    }

    @Test
    void whenFilledRunsAfterTheFillOrAtOnceAndAFailedFillIsNeverReadable() {
        Pending p = new Pending(40, 2, null);
        List<String> seen = new ArrayList<>();
        p.snapshot.whenFilled(() -> seen.add("filled " + p.fills), () -> seen.add("failed"));
        assertEquals(List.of(), seen, "not before the bytes are written");
        p.snapshot.awaitFilled();
        assertEquals(List.of("filled 1"), seen);
        p.snapshot.whenFilled(() -> seen.add("at once"), () -> seen.add("failed"));
        assertEquals(List.of("filled 1", "at once"), seen);
        p.snapshot.release();

        Pending bad = new Pending(40, 2, new IllegalArgumentException("boom"));
        bad.snapshot.whenFilled(() -> seen.add("bad filled"), () -> seen.add("bad failed"));
        assertThrows(IllegalStateException.class, bad.snapshot::awaitFilled);
        assertTrue(bad.snapshot.filled(), "done, if failed: nobody waits forever");
        assertThrows(IllegalStateException.class, bad.snapshot::awaitFilled, "never readable");
        assertEquals(List.of("filled 1", "at once", "bad failed"), seen);
        assertEquals(1, bad.fills);
        bad.snapshot.release();
    }

    @Test
    void theSsdTierSpillsAPendingEntryOnlyOnceItsBytesAreWritten() {
        Pending p = new Pending(40, 7, null);
        int[] tokens = java.util.stream.IntStream.range(0, 40).toArray();
        try (TieredPrefixCache c = new TieredPrefixCache(new RamPrefixCache(10, Long.MAX_VALUE), dir, 64L << 20)) {
            assertTrue(c.hasDisk());
            KvSnapshot filler = p.snapshot.retain(); // the filler's own reference, as exec holds one
            c.publish(NS, tokens, p.snapshot);
            assertEquals(1, c.size(), "published in RAM at once");
            c.flushSpills();
            assertEquals(0, c.diskStats().spilled(), "not spilled while its bytes are not written");
            filler.awaitFilled();
            filler.release();
            c.flushSpills();
            assertEquals(1, c.diskStats().spilled(), "spilled once written");
        }
        try (TieredPrefixCache c = new TieredPrefixCache(new RamPrefixCache(10, Long.MAX_VALUE), dir, 64L << 20)) {
            try (PrefixHit hit =
                    c.lookup(NS, java.util.stream.IntStream.range(0, 45).toArray())) {
                assertNotNull(hit, "served from disk after a restart");
                assertEquals("ssd", hit.tier());
                assertPattern(hit.snapshot(), 7);
            }
        }
    }

    @Test
    void anEntryEvictedBeforeItsBytesAreWrittenStaysValidForItsFillerThenIsFreed() {
        Pending p = new Pending(40, 4, null);
        try (RamPrefixCache c = new RamPrefixCache(1, Long.MAX_VALUE)) {
            KvSnapshot filler = p.snapshot.retain();
            c.publish(NS, java.util.stream.IntStream.range(0, 40).toArray(), p.snapshot);
            c.publish(NS, java.util.stream.IntStream.range(100, 140).toArray(), new Pending(40, 1, null).snapshot);
            assertEquals(1, c.size(), "the pending entry was evicted");
            assertTrue(filler.alive(), "its filler's reference keeps the bytes");
            filler.awaitFilled();
            assertPattern(filler, 4);
            filler.release();
            assertFalse(filler.alive(), "freed with the last reference");
        }
    }
}
