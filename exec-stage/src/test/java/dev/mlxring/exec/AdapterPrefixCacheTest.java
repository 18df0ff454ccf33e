package dev.mlxring.exec;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertNotEquals;
import static org.junit.jupiter.api.Assertions.assertNotNull;
import static org.junit.jupiter.api.Assertions.assertNull;
import static org.junit.jupiter.api.Assertions.assertTrue;

import dev.mlxring.exec.kv.KvCache;
import dev.mlxring.exec.model.LanguageModel;
import dev.mlxring.exec.model.Models;
import dev.mlxring.exec.prefix.PrefixReuse;
import dev.mlxring.kvstore.ModelFingerprint;
import dev.mlxring.kvstore.RamPrefixCache;
import dev.mlxring.mlx.ArrayScope;
import dev.mlxring.mlx.CpuKernels;
import dev.mlxring.mlx.Mlx;
import dev.mlxring.mlx.MlxArray;
import dev.mlxring.mlx.Numerics;
import java.nio.file.Path;
import java.util.List;
import java.util.stream.IntStream;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Test;

/**
 * The prefix cache keys on the adapter: one cache shared by the base model and two adapters over
 * it (the SSD tier outlives a restart with another {@code --adapter-path}) restores a prefix only
 * into the model that computed it, never under another adapter or none.
 */
class AdapterPrefixCacheTest {
    private static Path model;
    private static Path adapterA;
    private static Path adapterB;

    @BeforeAll
    static void writeAdapters() throws Exception {
        Path work = OracleFixtures.build().work();
        model = work.resolve("models/llama-f32");
        adapterA = work.resolve("adapters/prefix-a");
        adapterB = work.resolve("adapters/prefix-b");
        for (Path out : List.of(adapterA, adapterB)) {
            OracleAdapters.write(model, out, "lora", 0, "--rank", "4", "--seed", out == adapterA ? "1" : "2");
        }
    }

    private static LanguageModel load(Path adapter) {
        return Models.load(model, CpuKernels.DEFAULT, Numerics.EXACT, false, null, adapter);
    }

    /** Prefills {@code prompt} into fresh caches and publishes them under the model's namespace. */
    private static void publish(LanguageModel m, PrefixReuse reuse, int[] prompt) {
        KvCache[] caches = m.newCache(0);
        try (ArrayScope scope = ArrayScope.open()) {
            MlxArray logits = m.forward(Mlx.fromInts(prompt, 1, prompt.length), caches);
            Mlx.eval(logits);
            assertTrue(reuse.publish(reuse.namespace(null), new int[0], prompt, caches), "published");
        }
    }

    private static boolean restores(PrefixReuse reuse, int[] prompt) {
        try (ArrayScope scope = ArrayScope.open()) {
            PrefixReuse.Restored r = reuse.restore(reuse.namespace(null), prompt);
            return r != null && r.cachedTokens() > 0;
        }
    }

    @Test
    void aPrefixIsRestoredOnlyUnderTheAdapterThatComputedIt() {
        int[] prompt = IntStream.range(0, 24).map(i -> (i * 37 + 5) % 512).toArray();
        int[] longer = IntStream.range(0, 30).map(i -> i < 24 ? prompt[i] : i).toArray();
        String fp = ModelFingerprint.of(model);
        try (RamPrefixCache cache = new RamPrefixCache(16, Long.MAX_VALUE);
                LanguageModel base = Models.load(model);
                LanguageModel a = load(adapterA);
                LanguageModel b = load(adapterB)) {
            assertEquals("", base.adapterFingerprint());
            assertNotEquals(a.adapterFingerprint(), b.adapterFingerprint(), "two adapters with other values");
            PrefixReuse baseReuse = new PrefixReuse(cache, fp, base.adapterFingerprint());
            PrefixReuse aReuse = new PrefixReuse(cache, fp, a.adapterFingerprint());
            PrefixReuse bReuse = new PrefixReuse(cache, fp, b.adapterFingerprint());

            publish(a, aReuse, prompt);
            assertTrue(restores(aReuse, longer), "adapter A restores its own prefix");
            assertNull(restoredOrNull(baseReuse, longer), "the base model restored adapter A's prefix");
            assertNull(restoredOrNull(bReuse, longer), "adapter B restored adapter A's prefix");

            publish(base, baseReuse, prompt);
            assertNotNull(restoredOrNull(baseReuse, longer), "the base model restores its own prefix");
            assertNull(restoredOrNull(bReuse, longer), "adapter B restored the base model's prefix");
        }
    }

    private static Integer restoredOrNull(PrefixReuse reuse, int[] prompt) {
        return restores(reuse, prompt) ? 1 : null;
    }
}
