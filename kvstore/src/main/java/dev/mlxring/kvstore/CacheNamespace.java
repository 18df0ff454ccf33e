package dev.mlxring.kvstore;

import java.util.Objects;

/**
 * What a KV snapshot is only valid for: the model (its {@link ModelFingerprint}), the effective
 * KV scheme (full precision, or the {@code --kv-bits}/group/start that shaped the cache) and the
 * adapter namespace (empty: no adapters today). Entries of different namespaces never match.
 */
public record CacheNamespace(String modelFingerprint, String kvScheme, String adapter) {
    public CacheNamespace {
        Objects.requireNonNull(modelFingerprint, "modelFingerprint");
        Objects.requireNonNull(kvScheme, "kvScheme");
        Objects.requireNonNull(adapter, "adapter");
    }
}
