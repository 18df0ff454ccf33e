package dev.mlxring.pipeline;

/** Token accounting of one session, as OpenAI's {@code usage} reports it. */
public record Usage(int promptTokens, int completionTokens, int cachedTokens) {
    public static final Usage NONE = new Usage(0, 0, 0);

    public int totalTokens() {
        return promptTokens + completionTokens;
    }
}
