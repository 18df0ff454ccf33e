package dev.mlxring.ingress.pool;

import com.fasterxml.jackson.databind.node.ArrayNode;
import com.fasterxml.jackson.databind.node.ObjectNode;
import dev.mlxring.ingress.http.Admission;
import dev.mlxring.ingress.http.ApiError;
import dev.mlxring.ingress.http.ModelLoading;
import dev.mlxring.ingress.http.ModelRoute;
import dev.mlxring.ingress.http.ModelRouter;
import dev.mlxring.ingress.http.ServerDefaults;
import dev.mlxring.pipeline.Engine;
import java.util.ArrayList;
import java.util.Comparator;
import java.util.LinkedHashMap;
import java.util.LinkedHashSet;
import java.util.List;
import java.util.Map;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.Executors;
import java.util.concurrent.ScheduledExecutorService;
import java.util.concurrent.TimeUnit;
import java.util.function.IntFunction;

/**
 * Many models behind one server, under one {@link MemoryBudget}. A request's model is loaded on
 * first use, on a thread of its own, while the loaded ones keep serving; each loaded model has its
 * own engine pipeline. Room for a load or a request is made by unloading idle models (loaded, not
 * pinned, nothing in flight) in least-recently-used order; models idle for {@code ttlNs} are
 * unloaded too. The default model and pinned models are loaded by {@link #start} and never
 * unloaded. Admission ({@link Admission}) reserves a request's peak bytes ({@link ModelCost}) until
 * it settles: 400 when it could never fit beside the models that cannot be unloaded, 503 with
 * {@code Retry-After} when it does not fit now. A model whose load threw answers 503 {@code model_load_failed} until
 * the back-off after its failure has passed; the next request then loads it again. Thread-safe (one lock guards every entry and the
 * budget; loads and unloads run outside it).
 */
public final class ModelPool implements ModelRouter, AutoCloseable {
    private static final System.Logger LOG = System.getLogger(ModelPool.class.getName());

    /** A model loaded by a {@link Loader}: its pipeline and what requests are parsed with; closing frees it. */
    public interface Loaded extends AutoCloseable {
        Engine engine();

        ServerDefaults defaults();

        IntFunction<String> tokenText();

        /** Prompt tokens per prefill chunk, for a request's peak bytes. */
        int prefillChunkTokens();

        /** The rotating cache's size ({@code --max-kv-size}), 0 = none. */
        int maxKvSize();

        /** Stops the pipeline and frees every array the model holds; returns when they are freed. */
        @Override
        void close();
    }

    /** Loads one model (on the calling thread, which is the pool's loader thread for that model). */
    @FunctionalInterface
    public interface Loader {
        Loaded load(ModelSpec spec);
    }

    /**
     * Where MLX's own limits follow the budget: called whenever the budget's use changes (a load
     * or an unload begins or ends, a request is admitted or settles), under the pool's lock, so an
     * implementation must return at once and never wait on MLX (serve's hands the values to a
     * thread of its own: {@link AsyncMemoryLimits}).
     */
    @FunctionalInterface
    public interface MemoryLimits {
        /**
         * @param memoryLimitBytes the budget's total
         * @param cacheLimitBytes the budget's free bytes less those of models still being unloaded:
         *     the budget less the loaded and loading models' resident bytes and the admitted
         *     requests' peaks. MLX's CPU allocator keeps freed buffers up to this limit beside its
         *     active memory (it never trims them against it), so the cache must only take bytes
         *     no one else may use.
         */
        void apply(long memoryLimitBytes, long cacheLimitBytes);

        MemoryLimits NONE = (memory, cache) -> {};
    }

    /** How long a model whose load failed stays failed before a request may load it again: 30 s. */
    public static final long DEFAULT_LOAD_RETRY_BACKOFF_NS = TimeUnit.SECONDS.toNanos(30);

    /** The least {@link #cacheReuseBytes} is: a batch step's transient buffers at tens of rows, with room. */
    public static final long CACHE_REUSE_FLOOR_BYTES = 256L << 20;

    private final Map<String, PooledModel> entries = new LinkedHashMap<>();
    private final long loadRetryBackoffNs;
    private final ModelNames names;
    private final Loader loader;
    private final MemoryBudget budget;
    private final long ttlNs;
    private final MemoryLimits limits;
    private final ScheduledExecutorService sweeper;
    private volatile boolean closed;

    /**
     * @param specs every model, in listing order; {@code defaultName} among them
     * @param defaultAdapters the default model's named adapters ({@code serve --adapter NAME=DIR}):
     *     requests name them {@code <default>:<NAME>} ({@link ModelNames}), and they are listed
     *     after the default model; empty for none
     * @param ttlNs a model idle this long is unloaded (not pinned ones); 0 = only for room
     * @param loadRetryBackoffNs a model whose load failed answers 503 {@code model_load_failed}
     *     for this long after the failure; the first request after it loads the model again
     *     ({@link #DEFAULT_LOAD_RETRY_BACKOFF_NS} is serve's)
     * @param promptCacheBytes each model's RAM prefix cache cap ({@link PromptCacheCap}): counted
     *     in its resident bytes, reserved from its load to its unload; the loader must give the
     *     model's cache this cap (0: no cache)
     */
    public ModelPool(
            List<ModelSpec> specs,
            String defaultName,
            java.util.SequencedSet<String> defaultAdapters,
            Loader loader,
            MemoryBudget budget,
            long ttlNs,
            MemoryLimits limits,
            long loadRetryBackoffNs,
            long promptCacheBytes) {
        if (promptCacheBytes < 0) {
            throw new IllegalArgumentException("a prompt cache cap is >= 0 bytes, got " + promptCacheBytes);
        }
        if (loadRetryBackoffNs < 0) {
            throw new IllegalArgumentException("a load retry back-off is >= 0 ns, got " + loadRetryBackoffNs);
        }
        this.loadRetryBackoffNs = loadRetryBackoffNs;
        LinkedHashSet<String> ids = new LinkedHashSet<>();
        for (ModelSpec given : specs) {
            // The default model serves health and is never unloaded.
            ModelSpec s = given.name().equals(defaultName) && !given.pinned()
                    ? new ModelSpec(given.name(), given.dir(), true, given.flags())
                    : given;
            if (!ids.add(s.name())) {
                throw new IllegalArgumentException("two models are named '" + s.name() + "'");
            }
            ModelCost cost = null;
            String error = null;
            try {
                cost = ModelCost.of(s.dir());
            } catch (RuntimeException e) {
                error = e.getMessage();
            }
            entries.put(s.name(), new PooledModel(s, cost, promptCacheBytes, error));
        }
        this.names = new ModelNames(defaultName, ids, defaultAdapters);
        this.loader = loader;
        this.budget = budget;
        this.ttlNs = ttlNs;
        this.limits = limits;
        if (ttlNs > 0) {
            long periodNs = Math.clamp(ttlNs / 4, TimeUnit.MILLISECONDS.toNanos(50), TimeUnit.SECONDS.toNanos(5));
            sweeper = Executors.newSingleThreadScheduledExecutor(
                    Thread.ofPlatform().name("mlxring-pool-ttl").daemon().factory());
            sweeper.scheduleAtFixedRate(this::unloadExpired, periodNs, periodNs, TimeUnit.NANOSECONDS);
        } else {
            sweeper = null;
        }
    }

    /**
     * Loads the default model and the pinned ones on the calling thread.
     *
     * @throws RuntimeException what the loader threw when one of them cannot load
     * @throws IllegalArgumentException when they do not fit the budget
     */
    public ModelPool start() {
        for (PooledModel e : entries.values()) {
            if (e.name().equals(names.defaultName()) || e.spec.pinned()) {
                CompletableFuture<Void> loading;
                synchronized (this) {
                    if (e.cost == null) {
                        throw new IllegalArgumentException("model '" + e.name() + "': " + e.error);
                    }
                    if (!budget.tryTake(e.residentBytes())) {
                        throw new IllegalArgumentException("model '" + e.name() + "' needs " + e.residentBytes()
                                + " bytes resident; " + budget.freeBytes() + " of the memory budget's "
                                + budget.totalBytes() + " are left (--memory-budget)");
                    }
                    applyLimits();
                    loading = beginLoad(e);
                }
                load(e, List.of());
                if (e.state == PooledModel.State.FAILED) {
                    // The loader's own exception (a ModelLoadException naming the file): start-up
                    // fails as a server of that model alone does.
                    if (e.loadFailure != null) {
                        throw e.loadFailure;
                    }
                    throw new IllegalArgumentException("model '" + e.name() + "' failed to load: " + e.error);
                }
                loading.join();
            }
        }
        return this;
    }

    /** The names requests resolve through. */
    public ModelNames names() {
        return names;
    }

    /** The budget's total bytes. */
    public long budgetBytes() {
        return budget.totalBytes();
    }

    @Override
    public ModelRoute route(String requested) {
        String name = names.resolve(requested).orElseThrow(() -> ModelRouter.notFound(requested, names.ids()));
        PooledModel e = entries.get(name);
        List<PooledModel> victims;
        CompletableFuture<Void> loading;
        synchronized (this) {
            switch (e.state) {
                case LOADED -> {
                    e.lastUsedNs = System.nanoTime();
                    return e.route;
                }
                case LOADING, UNLOADING -> throw new ModelLoading(name, e.transition);
                case FAILED -> {
                    // A failure reading the files at start (no cost) is for good; a load that threw is retried after
                    // the back-off.
                    if (e.cost == null || System.nanoTime() - e.failedAtNs < loadRetryBackoffNs) {
                        throw loadFailed(e);
                    }
                }
                case UNLOADED -> {}
            }
            long need = e.residentBytes();
            long ceiling = budget.totalBytes() - unmovableBytes(e);
            if (need > ceiling) {
                e.refuse("model_too_large");
                throw new ApiError(
                        400,
                        "invalid_request_error",
                        "model '" + name + "' needs " + need + " bytes resident; at most " + ceiling
                                + " of the memory budget's " + budget.totalBytes()
                                + " can ever be free for it (the rest is pinned)",
                        "model",
                        "model_too_large");
            }
            victims = makeRoom(need, e);
            if (victims == null) {
                e.refuse("memory_busy");
                throw busy("loading model '" + name + "' needs " + need + " bytes resident");
            }
            budget.tryTake(need);
            applyLimits();
            loading = beginLoad(e);
        }
        List<PooledModel> closeFirst = victims;
        Thread.ofPlatform().name("mlxring-load-" + name).start(() -> load(e, closeFirst));
        throw new ModelLoading(name, loading);
    }

    /** What the loader returned for the default model (loaded for as long as the pool runs). */
    public synchronized Loaded defaultLoaded() {
        return entries.get(names.defaultName()).loaded;
    }

    @Override
    public ModelRoute defaultRoute() {
        synchronized (this) {
            return entries.get(names.defaultName()).route;
        }
    }

    @Override
    public void list(ArrayNode data, long createdSeconds) {
        for (Row r : rows()) {
            ObjectNode m = data.addObject();
            m.put("id", r.name());
            m.put("object", "model");
            m.put("created", createdSeconds);
            m.put("owned_by", "mlx-ring");
            m.put("state", r.state());
            m.put("pinned", r.pinned());
            m.put("default", r.name().equals(names.defaultName()));
            m.put("resident_bytes", r.residentBytes());
            m.put("prompt_cache_bytes", r.promptCacheBytes());
            if (r.error() != null) {
                m.put("error", r.error());
            }
            if (r.name().equals(names.defaultName())) {
                for (String id : names.adapterIds()) {
                    ObjectNode a = data.addObject();
                    a.put("id", id);
                    a.put("object", "model");
                    a.put("created", createdSeconds);
                    a.put("owned_by", "mlx-ring");
                    a.put("state", r.state());
                    a.put("base", r.name());
                    a.put("adapter", id.substring(r.name().length() + ModelNames.ADAPTER_SEPARATOR.length()));
                }
            }
        }
    }

    /**
     * One model's state and counters at one instant.
     *
     * @param residentBytes its resident cost, loaded or not: weights and runtime from its files
     *     ({@link ModelCost}) plus its prefix cache's cap
     * @param promptCacheBytes its RAM prefix cache's cap ({@link PromptCacheCap}), part of {@code
     *     residentBytes}
     */
    public record Row(
            String name,
            String state,
            boolean pinned,
            long residentBytes,
            long promptCacheBytes,
            String error,
            long loads,
            long unloads,
            double loadSeconds,
            long admitted,
            int inFlight,
            Map<String, Long> refused) {}

    /** Every model's row, in listing order. */
    public synchronized List<Row> rows() {
        List<Row> rows = new ArrayList<>();
        for (PooledModel e : entries.values()) {
            rows.add(new Row(
                    e.name(),
                    e.state.label(),
                    e.spec.pinned(),
                    e.residentBytes(),
                    e.promptCacheBytes,
                    e.error,
                    e.loads,
                    e.unloads,
                    e.loadNanos / 1e9,
                    e.admitted,
                    e.inFlight,
                    Map.copyOf(e.refused)));
        }
        return rows;
    }

    /**
     * Bytes of the budget in use: loaded (and loading) models' resident bytes (their prefix caches'
     * caps included) and admitted requests' peaks.
     */
    public synchronized long usedBytes() {
        return budget.usedBytes();
    }

    /** Stops the TTL sweeper and unloads every model (their pipelines stop, their arrays are freed). */
    @Override
    public void close() {
        closed = true;
        if (sweeper != null) {
            sweeper.shutdownNow();
        }
        List<PooledModel> loaded = new ArrayList<>();
        List<CompletableFuture<Void>> pending = new ArrayList<>();
        synchronized (this) {
            for (PooledModel e : entries.values()) {
                if (e.state == PooledModel.State.LOADED) {
                    markUnloading(e);
                    loaded.add(e);
                } else if (e.state == PooledModel.State.LOADING) {
                    pending.add(e.transition);
                }
            }
        }
        for (PooledModel e : loaded) {
            unload(e);
        }
        for (CompletableFuture<Void> f : pending) {
            f.join(); // a load in flight ends by itself; load() unloads what it loads once closed
        }
    }

    // ---- under the lock --------------------------------------------------------------------

    /** Resident bytes no unload can free for {@code e}: pinned, loading, unloading and in-use models. */
    private long unmovableBytes(PooledModel e) {
        long bytes = 0;
        for (PooledModel o : entries.values()) {
            if (o != e && o.spec.pinned() && o.state != PooledModel.State.FAILED) {
                bytes += o.residentBytes();
            }
        }
        return bytes;
    }

    /**
     * Idle models to unload, least recently used first, so that {@code bytes} fit (each marked
     * unloading, its bytes already given back: whoever takes them closes the victims before it
     * allocates); empty when they fit already; null (nothing marked) when no unloading can make
     * them fit now.
     */
    private List<PooledModel> makeRoom(long bytes, PooledModel exclude) {
        if (budget.freeBytes() >= bytes) {
            return List.of();
        }
        List<PooledModel> idle = entries.values().stream()
                .filter(o -> o != exclude && o.idle())
                .sorted(Comparator.comparingLong(o -> o.lastUsedNs))
                .toList();
        List<PooledModel> victims = new ArrayList<>();
        long free = budget.freeBytes();
        for (PooledModel o : idle) {
            if (free >= bytes) {
                break;
            }
            victims.add(o);
            free += o.residentBytes();
        }
        if (free < bytes) {
            return null;
        }
        for (PooledModel o : victims) {
            markUnloading(o);
        }
        return victims;
    }

    private void markUnloading(PooledModel e) {
        e.state = PooledModel.State.UNLOADING;
        e.route = null;
        e.transition = new CompletableFuture<>();
        budget.give(e.residentBytes());
    }

    private CompletableFuture<Void> beginLoad(PooledModel e) {
        e.state = PooledModel.State.LOADING;
        e.transition = new CompletableFuture<>();
        return e.transition;
    }

    private ApiError busy(String what) {
        return new ApiError(
                503,
                "server_overloaded",
                what + " and the memory budget has " + budget.freeBytes() + " of " + budget.totalBytes()
                        + " bytes free, none of the loaded models idle enough to unload; retry later",
                null,
                "memory_busy");
    }

    private ApiError loadFailed(PooledModel e) {
        return new ApiError(
                503,
                "server_error",
                "model '" + e.name() + "' failed to load: " + e.error
                        + (e.cost == null
                                ? ""
                                : " (a request " + TimeUnit.NANOSECONDS.toSeconds(loadRetryBackoffNs)
                                        + " s after the failure loads it again)"),
                "model",
                "model_load_failed");
    }

    /**
     * MLX's memory limit is the budget; its cache limit the bytes nothing else may take now (see
     * {@link MemoryLimits#apply}; a model marked unloading has given its bytes back but holds its
     * arrays until its close ends), and at most {@link #cacheReuseBytes}.
     */
    private void applyLimits() {
        long unloading = 0;
        for (PooledModel o : entries.values()) {
            if (o.state == PooledModel.State.UNLOADING) {
                unloading += o.residentBytes();
            }
        }
        limits.apply(budget.totalBytes(), Math.min(cacheReuseBytes(), Math.max(0, budget.freeBytes() - unloading)));
    }

    /**
     * The most freed bytes MLX's cache should keep: what a step frees and the next allocates
     * again, {@link #CACHE_REUSE_FLOOR_BYTES} or a loaded model's prefill chunk's activations
     * ({@link ModelCost#chunkActivationBytes}), the larger. MLX's CPU allocator (mlx 0.32.4,
     * {@code BufferCache}) gives a cached buffer back only for a request within two pages of its
     * size, so a batch whose shapes change with every row that joins or leaves (KV buffers, the
     * logits of n rows) fills a cache as large as the budget's room with buffers it never reuses,
     * and every new shape is fresh memory the kernel zero-fills page by page: the first wave of 32
     * streams on the default model faulted 582k pages (4.4 s of the MLX thread's system time) and
     * ran at half the speed of the next wave (docs/benchmarks.md, "MLX's buffer cache under
     * load"). Freed past this cap, the buffers go back to the C heap, which splits and joins them
     * for any size.
     */
    private long cacheReuseBytes() {
        long bytes = CACHE_REUSE_FLOOR_BYTES;
        for (PooledModel o : entries.values()) {
            if (o.cost != null && o.loaded != null) {
                bytes = Math.max(bytes, o.cost.chunkActivationBytes(o.loaded.prefillChunkTokens()));
            }
        }
        return bytes;
    }

    // ---- off the lock ------------------------------------------------------------------------

    /** Closes {@code closeFirst}, then loads {@code e} (its bytes are taken): on its loader thread. */
    private void load(PooledModel e, List<PooledModel> closeFirst) {
        for (PooledModel v : closeFirst) {
            unload(v);
        }
        long t0 = System.nanoTime();
        Loaded loaded = null;
        String error = null;
        RuntimeException failure = null;
        try {
            loaded = loader.load(e.spec);
        } catch (RuntimeException | Error x) {
            failure = x instanceof RuntimeException r ? r : null;
            error = x.getMessage() == null ? x.toString() : x.getMessage();
            LOG.log(System.Logger.Level.WARNING, "model '" + e.name() + "' failed to load", x);
        }
        CompletableFuture<Void> done;
        boolean closeNow = false;
        synchronized (this) {
            done = e.transition;
            if (loaded == null) {
                e.state = PooledModel.State.FAILED;
                e.error = error;
                e.loadFailure = failure;
                e.failedAtNs = System.nanoTime();
                budget.give(e.residentBytes());
            } else {
                e.loads++;
                e.loadNanos += System.nanoTime() - t0;
                e.loaded = loaded;
                e.state = PooledModel.State.LOADED;
                e.error = null;
                e.loadFailure = null;
                e.lastUsedNs = System.nanoTime();
                e.route = new ModelRoute(
                        e.name(), loaded.engine(), loaded.defaults(), loaded.tokenText(), new Admitting(e));
                if (closed) {
                    markUnloading(e);
                    closeNow = true;
                }
            }
            applyLimits();
        }
        done.complete(null);
        if (closeNow) {
            unload(e);
        }
    }

    /** Closes a model marked unloading (its pipeline, then its arrays), then marks it unloaded. */
    private void unload(PooledModel e) {
        Loaded l;
        synchronized (this) {
            l = e.loaded;
        }
        try {
            l.close();
        } catch (RuntimeException x) {
            LOG.log(System.Logger.Level.WARNING, "unloading model '" + e.name() + "' failed", x);
        }
        CompletableFuture<Void> done;
        synchronized (this) {
            e.loaded = null;
            e.unloads++;
            e.state = PooledModel.State.UNLOADED;
            done = e.transition;
            applyLimits();
        }
        done.complete(null);
    }

    private void unloadExpired() {
        if (closed) {
            return;
        }
        List<PooledModel> expired = new ArrayList<>();
        synchronized (this) {
            long now = System.nanoTime();
            for (PooledModel e : entries.values()) {
                if (e.idle() && !e.name().equals(names.defaultName()) && now - e.lastUsedNs >= ttlNs) {
                    markUnloading(e);
                    expired.add(e);
                }
            }
        }
        for (PooledModel e : expired) {
            unload(e);
        }
    }

    /** A loaded model's admission: its requests' peak bytes against the budget. */
    private final class Admitting implements Admission {
        private final PooledModel e;

        Admitting(PooledModel e) {
            this.e = e;
        }

        @Override
        public boolean needsPromptTokens() {
            return true;
        }

        @Override
        public Reservation admit(int promptTokens, int maxTokens) {
            List<PooledModel> victims;
            long need;
            synchronized (ModelPool.this) {
                if (e.state != PooledModel.State.LOADED) {
                    e.refuse("memory_busy");
                    throw busy("model '" + e.name() + "' was unloaded to make room");
                }
                need = e.cost.requestBytes(
                        promptTokens, maxTokens, e.loaded.prefillChunkTokens(), e.loaded.maxKvSize());
                long ceiling = budget.totalBytes() - e.residentBytes() - unmovableBytes(e);
                if (need > ceiling) {
                    e.refuse("never_fits");
                    throw new ApiError(
                            400,
                            "invalid_request_error",
                            "this request needs " + need + " bytes at its peak (" + promptTokens + " prompt tokens + "
                                    + maxTokens + " max_tokens on model '" + e.name() + "'); at most " + ceiling
                                    + " of the memory budget's " + budget.totalBytes()
                                    + " bytes can ever be free for it beside the model's " + e.residentBytes()
                                    + " resident bytes (its prompt cache's cap of " + e.promptCacheBytes
                                    + " included): shorten the prompt or lower max_tokens",
                            "max_tokens",
                            "memory_budget_exceeded");
                }
                victims = makeRoom(need, e);
                if (victims == null) {
                    e.refuse("memory_busy");
                    throw busy("this request needs " + need + " bytes at its peak");
                }
                budget.tryTake(need);
                applyLimits();
                e.inFlight++;
                e.admitted++;
                e.lastUsedNs = System.nanoTime();
            }
            for (PooledModel v : victims) {
                unload(v);
            }
            long held = need;
            java.util.concurrent.atomic.AtomicBoolean released = new java.util.concurrent.atomic.AtomicBoolean();
            return () -> {
                if (released.compareAndSet(false, true)) {
                    synchronized (ModelPool.this) {
                        budget.give(held);
                        applyLimits();
                        e.inFlight--;
                        e.lastUsedNs = System.nanoTime();
                    }
                }
            };
        }
    }
}
