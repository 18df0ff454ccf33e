package dev.mlxring.pipeline;

import java.util.Map;

/**
 * One chat message as the chat template sees it: {@code role}, {@code content} and any other
 * fields (tool calls, names) passed through to the template untouched.
 */
public record ChatMessage(String role, String content, Map<String, Object> extra) {
    public ChatMessage {
        extra = extra == null ? Map.of() : Map.copyOf(extra);
    }

    public static ChatMessage of(String role, String content) {
        return new ChatMessage(role, content, Map.of());
    }
}
