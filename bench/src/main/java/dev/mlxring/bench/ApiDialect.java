package dev.mlxring.bench;

import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.ObjectMapper;
import com.fasterxml.jackson.databind.node.ArrayNode;
import com.fasterxml.jackson.databind.node.ObjectNode;
import java.util.Locale;

/**
 * The streaming request and events of one API ({@code --api}): OpenAI chat completions
 * ({@code /v1/chat/completions}, {@code delta.content} / {@code delta.reasoning} /
 * {@code delta.reasoning_content}), completions ({@code /v1/completions}, {@code text}), Anthropic
 * Messages ({@code /v1/messages}, {@code content_block_delta}'s text or thinking) and OpenAI
 * Responses ({@code /v1/responses}, {@code response.output_text.delta} /
 * {@code response.reasoning_text.delta}). Every request is greedy (temperature 0) and asks for the
 * usage where the API needs asking. A multi-turn request's earlier turns go in as alternating user
 * and assistant messages (Responses: an {@code input} array of them; completions: joined into the
 * prompt text, {@link BenchPrompt#asText}).
 */
public enum ApiDialect {
    CHAT("/v1/chat/completions"),
    COMPLETIONS("/v1/completions"),
    MESSAGES("/v1/messages"),
    RESPONSES("/v1/responses");

    private static final ObjectMapper JSON = new ObjectMapper();

    private final String path;

    ApiDialect(String path) {
        this.path = path;
    }

    /** {@code chat}, {@code completions}, {@code messages} or {@code responses}. */
    public static ApiDialect parse(String name) {
        for (ApiDialect d : values()) {
            if (d.cliName().equals(name)) {
                return d;
            }
        }
        throw new IllegalArgumentException(
                "--api must be one of chat, completions, messages, responses; got '" + name + "'");
    }

    public String cliName() {
        return name().toLowerCase(Locale.ROOT);
    }

    public String path() {
        return path;
    }

    /** The streaming request body for {@code prompt} to {@code model}. */
    public ObjectNode body(BenchPrompt prompt, String model) {
        ObjectNode b = JSON.createObjectNode();
        b.put("model", model);
        switch (this) {
            case CHAT -> {
                b.set("messages", messages(prompt, true));
                b.put("max_tokens", prompt.maxTokens());
                b.putObject("stream_options").put("include_usage", true);
            }
            case COMPLETIONS -> {
                b.put("prompt", prompt.asText());
                b.put("max_tokens", prompt.maxTokens());
                b.putObject("stream_options").put("include_usage", true);
            }
            case MESSAGES -> {
                if (prompt.system() != null) {
                    b.put("system", prompt.system());
                }
                b.set("messages", messages(prompt, false));
                b.put("max_tokens", prompt.maxTokens());
            }
            case RESPONSES -> {
                if (prompt.system() != null) {
                    b.put("instructions", prompt.system());
                }
                if (prompt.history().isEmpty()) {
                    b.put("input", prompt.user());
                } else {
                    b.set("input", messages(prompt, false));
                }
                b.put("max_output_tokens", prompt.maxTokens());
                b.put("store", false);
            }
        }
        b.put("temperature", 0.0);
        b.put("stream", true);
        return b;
    }

    private static ArrayNode messages(BenchPrompt prompt, boolean withSystem) {
        ArrayNode a = JSON.createArrayNode();
        if (withSystem && prompt.system() != null) {
            a.addObject().put("role", "system").put("content", prompt.system());
        }
        for (BenchPrompt.Exchange e : prompt.history()) {
            a.addObject().put("role", "user").put("content", e.user());
            a.addObject().put("role", "assistant").put("content", e.assistant());
        }
        a.addObject().put("role", "user").put("content", prompt.user());
        return a;
    }

    /**
     * What one event told: generated text of any kind ({@code text}, empty for none: what TTFT and
     * ITL time), the part of it that is the answer's visible content ({@code answer}: reasoning
     * excluded; what a multi-turn conversation carries into its next turn), usage counts (-1 when
     * absent), an error.
     */
    public record Event(String text, String answer, int promptTokens, int completionTokens, String error) {}

    /** Reads one event's JSON ({@code eventType}: its SSE {@code event:} line, or null). */
    public Event read(String eventType, JsonNode data) {
        int prompt = -1;
        int completion = -1;
        String text = "";
        String answer = "";
        String error = null;
        if (data.has("error") && !data.get("error").isNull()) {
            JsonNode e = data.get("error");
            error = e.isObject() && e.has("message") ? e.get("message").asText() : e.toString();
        }
        switch (this) {
            case CHAT, COMPLETIONS -> {
                JsonNode choices = data.path("choices");
                if (choices.isArray() && !choices.isEmpty()) {
                    JsonNode c = choices.get(0);
                    if (this == CHAT) {
                        JsonNode d = c.path("delta");
                        text = first(d, "content", "reasoning", "reasoning_content");
                        answer = first(d, "content");
                    } else {
                        text = c.path("text").asText("");
                        answer = text;
                    }
                }
                JsonNode u = data.path("usage");
                if (u.isObject()) {
                    prompt = u.path("prompt_tokens").asInt(-1);
                    completion = u.path("completion_tokens").asInt(-1);
                }
            }
            case MESSAGES -> {
                String type = data.path("type").asText(eventType == null ? "" : eventType);
                switch (type) {
                    case "message_start" -> {
                        JsonNode u = data.path("message").path("usage");
                        if (u.has("input_tokens")) {
                            prompt = u.get("input_tokens").asInt()
                                    + u.path("cache_read_input_tokens").asInt(0);
                        }
                    }
                    case "content_block_delta" -> {
                        text = first(data.path("delta"), "text", "thinking", "partial_json");
                        answer = first(data.path("delta"), "text");
                    }
                    case "message_delta" ->
                        completion = data.path("usage").path("output_tokens").asInt(-1);
                    case "error" -> error = data.path("error").path("message").asText("error event");
                    default -> {}
                }
            }
            case RESPONSES -> {
                String type = data.path("type").asText(eventType == null ? "" : eventType);
                switch (type) {
                    case "response.output_text.delta" -> {
                        text = data.path("delta").asText("");
                        answer = text;
                    }
                    case "response.reasoning_text.delta" ->
                        text = data.path("delta").asText("");
                    case "response.completed", "response.incomplete" -> {
                        JsonNode u = data.path("response").path("usage");
                        prompt = u.path("input_tokens").asInt(-1);
                        completion = u.path("output_tokens").asInt(-1);
                    }
                    case "response.failed", "error" ->
                        error = data.path("response")
                                .path("error")
                                .path("message")
                                .asText("response failed");
                    default -> {}
                }
            }
        }
        return new Event(text, answer, prompt, completion, error);
    }

    private static String first(JsonNode node, String... fields) {
        for (String f : fields) {
            JsonNode v = node.get(f);
            if (v != null && v.isTextual() && !v.asText().isEmpty()) {
                return v.asText();
            }
        }
        return "";
    }
}
