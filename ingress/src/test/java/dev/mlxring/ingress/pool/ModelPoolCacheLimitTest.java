package dev.mlxring.ingress.pool;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

import dev.mlxring.ingress.http.Admission;
import dev.mlxring.ingress.http.ModelLoading;
import dev.mlxring.ingress.http.ServerDefaults;
import dev.mlxring.pipeline.Engine;
import dev.mlxring.pipeline.ExecutionPlan;
import dev.mlxring.pipeline.ExecutionRun;
import dev.mlxring.pipeline.Executor;
import dev.mlxring.pipeline.Outcome;
import dev.mlxring.pipeline.PreparedPrompt;
import dev.mlxring.pipeline.RequestException;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.List;
import java.util.concurrent.CopyOnWriteArrayList;
import java.util.function.IntFunction;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

/**
 * MLX's cache limit is the budget's free bytes, re-applied whenever the budget's use changes: MLX's
 * CPU allocator keeps freed buffers up to the limit beside its active memory, so a limit that
 * still counted the admitted requests' peaks as free let the cache and the requests' arrays take
 * the same bytes twice (a server's RSS past the budget under a flood of long prompts). And never
 * more than the bytes a step frees and the next reuses ({@link ModelPool#CACHE_REUSE_FLOOR_BYTES},
 * or a loaded model's prefill chunk's activations): a cache as large as the room fills with
 * buffers of shapes no later step asks for.
 */
class ModelPoolCacheLimitTest {
    /** Under the floor: the free bytes decide (the two cases that follow the budget). */
    private static final long BUDGET_BYTES = 200L << 20;

    @TempDir
    Path dir;

    private final List<Long> cacheLimits = new CopyOnWriteArrayList<>();

    /** The cache limit in force when each load began, in load order. */
    private final List<Long> atLoad = new CopyOnWriteArrayList<>();

    @Test
    void anAdmittedRequestsPeakIsTakenFromTheCacheLimitUntilItSettles() throws Exception {
        try (ModelPool pool = pool().start()) {
            long idle = last();
            assertEquals(BUDGET_BYTES - pool.usedBytes(), idle, "the cache may take what no model holds");
            Admission.Reservation r = pool.route("main").admission().admit(600, 8);
            long need = ModelCost.of(dir.resolve("main")).requestBytes(600, 8, 512, 0);
            assertTrue(need > 0);
            assertEquals(idle - need, last(), "an admitted request's peak is not the cache's");
            r.release();
            assertEquals(idle, last(), "a settled request's peak is the cache's again");
        }
    }

    @Test
    void aModelLoadedOnDemandTakesItsBytesFromTheCacheLimitBeforeItLoads() throws Exception {
        try (ModelPool pool = pool().start()) {
            long idle = last();
            ModelLoading loading =
                    org.junit.jupiter.api.Assertions.assertThrows(ModelLoading.class, () -> pool.route("other"));
            loading.loaded().join();
            long other = pool.rows().get(1).residentBytes();
            assertTrue(other > 0);
            assertEquals(idle - other, atLoad.getLast(), "its bytes are not the cache's while it loads");
            assertEquals(idle - other, last());
        }
    }

    @Test
    void theCacheLimitStopsAtTheBytesAStepReuses() throws Exception {
        budgetBytes = 4L << 30;
        try (ModelPool pool = pool().start()) {
            assertTrue(BUDGET_BYTES - pool.usedBytes() > 0);
            long chunk = ModelCost.of(dir.resolve("main")).chunkActivationBytes(512);
            assertTrue(chunk < ModelPool.CACHE_REUSE_FLOOR_BYTES, "the tiny model's chunk is under the floor");
            assertEquals(ModelPool.CACHE_REUSE_FLOOR_BYTES, last(), "a room of gigabytes is not the cache's");
            Admission.Reservation r = pool.route("main").admission().admit(600, 8);
            assertEquals(ModelPool.CACHE_REUSE_FLOOR_BYTES, last(), "nor is it while a request runs");
            r.release();
        }
    }

    @Test
    void aModelWhosePrefillChunkFreesMoreRaisesTheCap() throws Exception {
        budgetBytes = 4L << 30;
        chunkTokens = 1 << 18;
        try (ModelPool pool = pool().start()) {
            long chunk = ModelCost.of(dir.resolve("main")).chunkActivationBytes(chunkTokens);
            assertTrue(chunk > ModelPool.CACHE_REUSE_FLOOR_BYTES, "256k tokens' activations are over the floor");
            assertEquals(chunk, last(), "a prefill chunk's freed activations are reused by the next chunk");
        }
    }

    private long budgetBytes = BUDGET_BYTES;
    private int chunkTokens = 512;

    private long last() {
        return cacheLimits.getLast();
    }

    private ModelPool pool() throws Exception {
        return new ModelPool(
                List.of(ModelSpec.of("main", model("main"), false), ModelSpec.of("other", model("other"), false)),
                "main",
                new java.util.LinkedHashSet<>(),
                spec -> {
                    atLoad.add(cacheLimits.isEmpty() ? -1L : last());
                    return new Idle(chunkTokens);
                },
                new MemoryBudget(budgetBytes),
                0,
                (memory, cache) -> cacheLimits.add(cache),
                ModelPool.DEFAULT_LOAD_RETRY_BACKOFF_NS,
                0);
    }

    /** A folder {@link ModelCost} can price: a config and a weights file (never read). */
    private Path model(String name) throws Exception {
        Path m = Files.createDirectories(dir.resolve(name));
        Files.writeString(
                m.resolve("config.json"),
                "{\"hidden_size\": 64, \"num_hidden_layers\": 2, \"num_attention_heads\": 4,"
                        + " \"num_key_value_heads\": 2, \"intermediate_size\": 128, \"vocab_size\": 256}");
        Files.writeString(m.resolve("model.safetensors"), "x");
        return m;
    }

    /** A loaded model that serves nothing (the test only admits). */
    private static final class Idle implements ModelPool.Loaded {
        private final int chunkTokens;

        Idle(int chunkTokens) {
            this.chunkTokens = chunkTokens;
        }

        private final Engine engine = Engine.builder()
                .preparer(r -> new PreparedPrompt(new int[] {1}, 1))
                .planner((r, p) -> ExecutionPlan.builder()
                        .requestId(r.id())
                        .prompt(p)
                        .maxTokens(1)
                        .build())
                .executor(new Executor() {
                    @Override
                    public ExecutionRun open(ExecutionPlan plan) throws RequestException {
                        throw new RequestException(Outcome.ErrorType.UNSUPPORTED, "serves nothing");
                    }

                    @Override
                    public void close() {}
                })
                .sinks(plan -> null)
                .start();

        @Override
        public Engine engine() {
            return engine;
        }

        @Override
        public ServerDefaults defaults() {
            return ServerDefaults.mlxLm();
        }

        @Override
        public IntFunction<String> tokenText() {
            return id -> "";
        }

        @Override
        public int prefillChunkTokens() {
            return chunkTokens;
        }

        @Override
        public int maxKvSize() {
            return 0;
        }

        @Override
        public void close() {
            engine.close();
        }
    }
}
