package dev.mlxring.ingress.http;

/**
 * Request prefixes, as "route|body", for each API with one tool named place_order. Each stops
 * inside the tool's definition: a test may add fields to the tool, then closes it ({@code "}}]"}
 * for chat, {@code "}]"} for messages and responses) and adds its own request fields.
 */
final class PlaceOrderRequests {
    /** Chat completions, open after the function's name. */
    static final String CHAT = "/v1/chat/completions|{\"max_tokens\":1,\"messages\":[{\"role\":\"user\","
            + "\"content\":\"hi\"}],\"tools\":[{\"type\":\"function\",\"function\":{\"name\":\"place_order\"";
    /** Anthropic messages, open after the tool's input_schema. */
    static final String MESSAGES = "/v1/messages|{\"model\":\"tiny\",\"max_tokens\":1,\"messages\":[{\"role\":"
            + "\"user\",\"content\":\"hi\"}],\"tools\":[{\"name\":\"place_order\",\"input_schema\":{\"type\":\"object\"}";
    /** Responses, open after the tool's name. */
    static final String RESPONSES = "/v1/responses|{\"max_output_tokens\":1,\"input\":\"hi\",\"tools\":[{\"type\":"
            + "\"function\",\"name\":\"place_order\"";

    private PlaceOrderRequests() {}
}
