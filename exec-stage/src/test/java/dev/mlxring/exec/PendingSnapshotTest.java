package dev.mlxring.exec;

import static org.junit.jupiter.api.Assertions.assertArrayEquals;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertNotNull;
import static org.junit.jupiter.api.Assertions.assertTrue;

import dev.mlxring.exec.kv.KvCache;
import dev.mlxring.exec.model.LanguageModel;
import dev.mlxring.exec.model.Models;
import dev.mlxring.exec.prefix.KvSnapshots;
import dev.mlxring.exec.prefix.PendingSnapshot;
import dev.mlxring.exec.prefix.PrefixReuse;
import dev.mlxring.kvstore.CacheNamespace;
import dev.mlxring.kvstore.KvSnapshot;
import dev.mlxring.kvstore.LayerState;
import dev.mlxring.kvstore.ModelFingerprint;
import dev.mlxring.kvstore.RamPrefixCache;
import dev.mlxring.mlx.ArrayScope;
import dev.mlxring.mlx.Mlx;
import java.lang.foreign.ValueLayout;
import java.nio.file.Path;
import java.util.Arrays;
import java.util.List;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Test;

/**
 * A pending snapshot of layer caches ({@link PendingSnapshot}) holds the bytes {@link
 * KvSnapshots#capture} copies from the same state, even when the caches go on computing before
 * its bytes are written; it can be evicted from the prefix cache before then; and a restore of it
 * writes them first.
 */
class PendingSnapshotTest {
    private static Path models;

    @BeforeAll
    static void buildOracleModels() throws Exception {
        models = OracleFixtures.build().work().resolve("models");
    }

    /** Fresh caches after a forward over {@code prompt}, nothing evaluated. */
    private static KvCache[] prefilled(LanguageModel model, int[] prompt) {
        KvCache[] caches = model.newCache();
        try (ArrayScope scope = ArrayScope.open()) {
            model.forward(Mlx.fromInts(prompt, 1, prompt.length), caches);
        }
        return caches;
    }

    private static void feed(LanguageModel model, KvCache[] caches, int token) {
        try (ArrayScope scope = ArrayScope.open()) {
            model.forward(Mlx.fromInts(new int[] {token}, 1, 1), caches);
        }
    }

    private static void close(KvCache[] caches) {
        Arrays.stream(caches).forEach(KvCache::close);
    }

    private static void assertSameBytes(KvSnapshot want, KvSnapshot got) {
        assertEquals(want.tokens(), got.tokens());
        assertEquals(want.nbytes(), got.nbytes());
        for (int l = 0; l < want.layers().size(); l++) {
            LayerState a = want.layers().get(l);
            LayerState b = got.layers().get(l);
            assertEquals(a.kind(), b.kind());
            for (int t = 0; t < a.tensors().size(); t++) {
                assertEquals(a.tensors().get(t).dtype(), b.tensors().get(t).dtype());
                assertArrayEquals(a.tensors().get(t).shape(), b.tensors().get(t).shape());
                assertArrayEquals(
                        a.tensors().get(t).data().toArray(ValueLayout.JAVA_BYTE),
                        b.tensors().get(t).data().toArray(ValueLayout.JAVA_BYTE),
                        "layer " + l + " tensor " + t);
            }
        }
    }

    @Test
    void itHoldsTheCapturedBytesEvenWhenTheCachesGoOnBeforeTheyAreWritten() throws Exception {
        Path dir = models.resolve("llama-bf16");
        int[] prompt = BatchParityTest.prompt(23, 81, 512);
        try (LanguageModel model = Models.load(dir)) {
            KvCache[] reference = prefilled(model, prompt);
            KvSnapshot want = KvSnapshots.capture(reference);
            close(reference);

            KvCache[] caches = prefilled(model, prompt);
            PendingSnapshot pending = PendingSnapshot.take(caches, List.of());
            KvSnapshot got = pending.snapshot();
            assertFalse(got.filled(), "nothing copied when taken");
            assertEquals(want.nbytes(), got.nbytes(), "its bytes count is final at once");
            // the caches go on (two more positions written into their buffers), then are closed
            feed(model, caches, 5);
            feed(model, caches, 6);
            pending.submit();
            close(caches);
            pending.complete();
            assertTrue(got.filled());
            assertSameBytes(want, got);
            pending.complete(); // once only
            assertTrue(got.alive(), "the caller's reference is its own");
            got.release();
            assertFalse(got.alive());
            want.release();
        }
    }

    @Test
    void anEntryEvictedBeforeItsBytesAreWrittenIsFreedWhenCompleted() throws Exception {
        Path dir = models.resolve("llama-bf16");
        try (LanguageModel model = Models.load(dir);
                RamPrefixCache cache = new RamPrefixCache(1, Long.MAX_VALUE)) {
            CacheNamespace ns = new PrefixReuse(cache, ModelFingerprint.of(dir)).namespace(null);
            int[] first = BatchParityTest.prompt(12, 82, 512);
            KvCache[] caches = prefilled(model, first);
            PendingSnapshot pending = PendingSnapshot.take(caches, List.of());
            KvSnapshot s = pending.snapshot();
            cache.publish(ns, first, s);
            close(caches);
            int[] other = BatchParityTest.prompt(12, 83, 512);
            KvCache[] otherCaches = prefilled(model, other);
            cache.publish(ns, other, KvSnapshots.capture(otherCaches));
            close(otherCaches);
            assertEquals(List.of(other).getFirst().length, cache.entries().getFirst().length);
            assertTrue(Arrays.equals(other, cache.entries().getFirst()), "the pending entry was evicted");
            assertTrue(s.alive(), "kept for its copy");
            pending.complete();
            assertFalse(s.alive(), "freed with the pending copy's reference, deterministically");
        }
    }

    @Test
    void aRestoreOfAPendingEntryWritesItsBytesFirst() throws Exception {
        Path dir = models.resolve("llama-bf16");
        try (LanguageModel model = Models.load(dir);
                RamPrefixCache cache = new RamPrefixCache(10, Long.MAX_VALUE)) {
            PrefixReuse reuse = new PrefixReuse(cache, ModelFingerprint.of(dir));
            CacheNamespace ns = reuse.namespace(null);
            int[] prompt = BatchParityTest.prompt(20, 84, 512);
            KvCache[] reference = prefilled(model, prompt);
            KvSnapshot want = KvSnapshots.capture(reference);
            close(reference);

            KvCache[] caches = prefilled(model, prompt);
            PendingSnapshot pending = PendingSnapshot.take(caches, List.of());
            KvSnapshot s = pending.snapshot().retain();
            cache.publish(ns, prompt, pending.snapshot());
            close(caches);
            int[] next = Arrays.copyOf(prompt, prompt.length + 4);
            PrefixReuse.Restored restored = reuse.restore(ns, next);
            assertNotNull(restored);
            assertEquals(prompt.length, restored.cachedTokens());
            assertTrue(s.filled(), "the restore wrote the bytes");
            KvSnapshot back = KvSnapshots.capture(restored.caches());
            assertSameBytes(want, back);
            close(restored.caches());
            back.release();
            pending.complete();
            s.release();
            want.release();
        }
    }
}
