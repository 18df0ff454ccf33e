package dev.mlxring.ingress.pool;

import dev.mlxring.ingress.http.ModelRoute;
import java.util.Map;
import java.util.TreeMap;
import java.util.concurrent.CompletableFuture;

/**
 * One model of a {@link ModelPool}: its state, what it holds while loaded, and its counters. Every
 * field is guarded by the pool's lock.
 */
final class PooledModel {
    /** A pool entry's life: unloaded → loading → loaded → unloading → unloaded; a load that throws → failed. */
    enum State {
        UNLOADED,
        LOADING,
        LOADED,
        UNLOADING,
        FAILED;

        String label() {
            return name().toLowerCase(java.util.Locale.ROOT);
        }
    }

    final ModelSpec spec;
    /** Null when the model's files could not be read ({@link #error} says why). */
    final ModelCost cost;
    /** Its RAM prefix cache's cap, reserved with its weights ({@link PromptCacheCap}). */
    final long promptCacheBytes;

    State state = State.UNLOADED;
    /** When the last load failed ({@link System#nanoTime()}); meaningful in {@link State#FAILED} with a cost. */
    long failedAtNs;
    /** Why the load failed (state FAILED). */
    String error;
    /** What the loader threw (state FAILED), or null: {@link ModelPool#start} rethrows it. */
    RuntimeException loadFailure;
    /** What the loader returned (state LOADED and UNLOADING). */
    ModelPool.Loaded loaded;

    ModelRoute route;
    /** Completes when the current load or unload ends. */
    CompletableFuture<Void> transition = CompletableFuture.completedFuture(null);

    long lastUsedNs;
    int inFlight;

    long loads;
    long unloads;
    long loadNanos;
    long admitted;
    final Map<String, Long> refused = new TreeMap<>();

    PooledModel(ModelSpec spec, ModelCost cost, long promptCacheBytes, String error) {
        this.spec = spec;
        this.cost = cost;
        this.promptCacheBytes = promptCacheBytes;
        if (cost == null) {
            this.state = State.FAILED;
            this.error = error;
        }
    }

    String name() {
        return spec.name();
    }

    /** Its weights and runtime ({@link ModelCost#residentBytes()}) plus its prefix cache's cap. */
    long residentBytes() {
        return cost == null ? 0 : cost.residentBytes() + promptCacheBytes;
    }

    /** Unloadable now to make room: loaded, not pinned, no request admitted and unsettled. */
    boolean idle() {
        return state == State.LOADED && !spec.pinned() && inFlight == 0;
    }

    void refuse(String reason) {
        refused.merge(reason, 1L, Long::sum);
    }
}
