package dev.mlxring.ingress.pool;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import dev.mlxring.ingress.http.ApiError;
import dev.mlxring.ingress.http.ModelLoading;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.List;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicInteger;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

/**
 * A model whose load threw is loaded again by the first request after the back-off, and answers
 * 503 {@code model_load_failed} before it (a loader that always throws: each load is counted).
 */
class ModelPoolLoadRetryTest {
    @TempDir
    Path dir;

    @Test
    void aFailedLoadIsRetriedByTheFirstRequestAfterTheBackOff() throws Exception {
        AtomicInteger loads = new AtomicInteger();
        try (ModelPool pool = pool(loads, 0)) {
            awaitLoad(pool);
            assertEquals(1, loads.get());
            awaitLoad(pool);
            assertEquals(2, loads.get(), "the request after the back-off loaded the model again");
            assertEquals("failed", pool.rows().get(1).state());
        }
    }

    @Test
    void withinTheBackOffAFailedLoadAnswers503WithoutLoading() throws Exception {
        AtomicInteger loads = new AtomicInteger();
        try (ModelPool pool = pool(loads, TimeUnit.HOURS.toNanos(1))) {
            awaitLoad(pool);
            ApiError e = assertThrows(ApiError.class, () -> pool.route("flaky"));
            assertEquals(503, e.status());
            assertEquals("model_load_failed", e.code());
            assertTrue(e.getMessage().contains("no weights here"), e.getMessage());
            assertTrue(e.getMessage().contains("3600 s after the failure"), e.getMessage());
            assertEquals(1, loads.get());
        }
    }

    /** Routes to {@code flaky}, which starts its load, and waits for the load to end. */
    private static void awaitLoad(ModelPool pool) {
        ModelLoading loading = assertThrows(ModelLoading.class, () -> pool.route("flaky"));
        loading.loaded().join();
    }

    private ModelPool pool(AtomicInteger loads, long backoffNs) throws Exception {
        ModelPool.Loader loader = spec -> {
            loads.incrementAndGet();
            throw new IllegalStateException("no weights here");
        };
        return new ModelPool(
                List.of(ModelSpec.of("main", model("main"), false), ModelSpec.of("flaky", model("flaky"), false)),
                "main",
                new java.util.LinkedHashSet<>(),
                loader,
                new MemoryBudget(1L << 30),
                0,
                ModelPool.MemoryLimits.NONE,
                backoffNs,
                0);
    }

    /** A folder {@link ModelCost} can price: a config and a weights file (never read by this loader). */
    private Path model(String name) throws Exception {
        Path m = Files.createDirectories(dir.resolve(name));
        Files.writeString(
                m.resolve("config.json"), "{\"hidden_size\": 8, \"num_hidden_layers\": 1, \"vocab_size\": 16}");
        Files.writeString(m.resolve("model.safetensors"), "x");
        return m;
    }
}
