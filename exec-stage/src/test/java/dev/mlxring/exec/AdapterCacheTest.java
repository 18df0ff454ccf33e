package dev.mlxring.exec;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertSame;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import dev.mlxring.exec.model.LanguageModel;
import dev.mlxring.exec.model.ModelLoadException;
import dev.mlxring.exec.model.Models;
import dev.mlxring.exec.nn.AdapterCache;
import dev.mlxring.mlx.CpuKernels;
import dev.mlxring.mlx.Numerics;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Test;

/**
 * The named adapters' LRU over a model with adapter slots: an adapter is loaded once and reused
 * while resident; over the byte cap the least recently used adapter not in use is evicted (and
 * loaded again when next leased); an adapter a row holds is never evicted; an unknown name, a
 * full fine-tune and an adapter larger than the cap are refused naming them.
 */
class AdapterCacheTest {
    private static Path model;
    private static final Map<String, Path> dirs = new LinkedHashMap<>();

    @BeforeAll
    static void writeAdapters() throws Exception {
        Path work = OracleFixtures.build().work();
        model = work.resolve("models/llama-f32");
        for (String name : List.of("x", "y", "z", "full")) {
            dirs.put(
                    name,
                    OracleAdapters.write(
                            model,
                            work.resolve("adapters/cache-" + name),
                            name.equals("full") ? "full" : "lora",
                            1,
                            "--rank",
                            "4",
                            "--seed",
                            String.valueOf(name.hashCode() & 0xff)));
        }
    }

    private static LanguageModel slotted() {
        return Models.load(model, CpuKernels.DEFAULT, Numerics.EXACT, false, null, null, true);
    }

    private static Map<String, Path> lora() {
        Map<String, Path> m = new LinkedHashMap<>(dirs);
        m.remove("full");
        return m;
    }

    @Test
    void loadsOnceAndEvictsTheLeastRecentlyUsedIdleAdapterOverTheCap() {
        try (LanguageModel m = slotted()) {
            long one;
            try (AdapterCache probe = new AdapterCache(m.adapterSlots(), lora(), Long.MAX_VALUE);
                    AdapterCache.Lease l = probe.lease("x")) {
                one = l.adapter().lengthInBytes();
                assertTrue(one > 0);
            }
            // room for two of the three (same layout, same size)
            try (AdapterCache cache = new AdapterCache(m.adapterSlots(), lora(), 2 * one)) {
                AdapterCache.Lease x1 = cache.lease("x");
                AdapterCache.Lease x2 = cache.lease("x");
                assertSame(x1.adapter(), x2.adapter(), "two rows share one loaded adapter");
                x1.close();
                x2.close();
                cache.lease("y").close();
                assertEquals(1, cache.loads("x"));
                assertTrue(cache.resident("x") && cache.resident("y"));
                cache.lease("z").close(); // x is least recently used
                assertFalse(cache.resident("x"), "x stayed over the cap");
                assertTrue(cache.resident("y") && cache.resident("z"));
                assertTrue(cache.residentBytes() <= 2 * one);
                try (AdapterCache.Lease y = cache.lease("y");
                        AdapterCache.Lease z = cache.lease("z");
                        AdapterCache.Lease x = cache.lease("x")) {
                    // all three in use: nothing may go
                    assertTrue(cache.resident("x") && cache.resident("y") && cache.resident("z"));
                    assertEquals(2, cache.loads("x"), "x was loaded again after its eviction");
                    assertEquals(1, cache.loads("y"));
                }
                assertTrue(cache.residentBytes() <= 2 * one, "back under the cap once the rows left");
            }
        }
    }

    @Test
    void refusesUnknownFullAndOversizedAdaptersNamingThem() throws Exception {
        try (LanguageModel m = slotted()) {
            try (AdapterCache cache = new AdapterCache(m.adapterSlots(), dirs, Long.MAX_VALUE)) {
                IllegalArgumentException unknown = assertThrows(IllegalArgumentException.class, () -> cache.lease("w"));
                assertTrue(unknown.getMessage().contains("'w'"), unknown.getMessage());
                ModelLoadException full = assertThrows(ModelLoadException.class, () -> cache.lease("full"));
                assertTrue(
                        full.getMessage().contains("'full'")
                                && full.getMessage().contains("full fine-tune"),
                        full.getMessage());
                assertThrows(ModelLoadException.class, cache::validate);
            }
            try (AdapterCache tiny = new AdapterCache(m.adapterSlots(), lora(), 16)) {
                ModelLoadException big = assertThrows(ModelLoadException.class, tiny::validate);
                assertTrue(big.getMessage().contains("'x'") && big.getMessage().contains("16"), big.getMessage());
            }
        }
        assertTrue(Files.isDirectory(dirs.get("x")));
    }
}
