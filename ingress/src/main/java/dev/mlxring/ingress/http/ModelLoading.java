package dev.mlxring.ingress.http;

import java.util.Objects;
import java.util.concurrent.CompletableFuture;

/**
 * Thrown by {@link ModelRouter#route} for a model that is being loaded: the request is not
 * refused, it waits off the IO thread for {@link #loaded()} and is then handled again.
 */
public final class ModelLoading extends RuntimeException {
    private final transient CompletableFuture<Void> loaded;

    /** @param loaded completes when the load ends, normally or not (the retried route says which) */
    public ModelLoading(String model, CompletableFuture<Void> loaded) {
        super("model '" + model + "' is loading", null, false, false);
        this.loaded = Objects.requireNonNull(loaded, "loaded");
    }

    /** Completes when the load ends. */
    public CompletableFuture<Void> loaded() {
        return loaded;
    }
}
