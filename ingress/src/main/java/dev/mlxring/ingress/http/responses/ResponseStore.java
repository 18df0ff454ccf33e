package dev.mlxring.ingress.http.responses;

import com.fasterxml.jackson.databind.node.ObjectNode;
import dev.mlxring.pipeline.ChatMessage;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;

/**
 * Stored responses ({@code store: true}), in memory, at most {@code capacity} of them: the
 * oldest stored is evicted first. Each keeps its response object (for {@code GET
 * /v1/responses/{id}}) and the whole conversation it ended, its output included, which a later
 * request continues through {@code previous_response_id}. Nothing survives a restart.
 * Thread-safe (one lock; every operation is a map access).
 */
final class ResponseStore {
    /** A stored response: its JSON object (not modified after storing) and its conversation. */
    record Stored(ObjectNode response, List<ChatMessage> conversation) {}

    private final Map<String, Stored> entries;

    ResponseStore(int capacity) {
        if (capacity < 1) {
            throw new IllegalArgumentException("capacity must be at least 1, got " + capacity);
        }
        this.entries = new LinkedHashMap<>(16, 0.75f, false) {
            @Override
            protected boolean removeEldestEntry(Map.Entry<String, Stored> eldest) {
                return size() > capacity;
            }
        };
    }

    synchronized void put(String id, Stored stored) {
        entries.put(id, stored);
    }

    synchronized Stored get(String id) {
        return entries.get(id);
    }

    synchronized boolean remove(String id) {
        return entries.remove(id) != null;
    }

    synchronized int size() {
        return entries.size();
    }
}
