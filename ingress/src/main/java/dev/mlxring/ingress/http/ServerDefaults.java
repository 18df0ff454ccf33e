package dev.mlxring.ingress.http;

/**
 * What request parsing needs from the server's configuration.
 *
 * @param maxTokens the default {@code max_tokens} ({@code --max-tokens}; mlx_lm.server: 512)
 * @param maxContextTokens the model's context: a {@code max_tokens} that leaves no room for a
 *     prompt is refused with 400 {@code context_length_exceeded}
 * @param vocabSize the model's vocabulary size, for {@code logit_bias} ids; 0 = unknown (plan
 *     checks them then)
 * @param adapterPath the adapter folder the model was loaded with ({@code --adapter-path}, as
 *     given), or null: the only value a request's {@code adapters} field may name
 *     ({@link AdaptersField})
 */
public record ServerDefaults(int maxTokens, int maxContextTokens, int vocabSize, String adapterPath) {
    public ServerDefaults(int maxTokens, int maxContextTokens, int vocabSize) {
        this(maxTokens, maxContextTokens, vocabSize, null);
    }

    public ServerDefaults(int maxTokens, int maxContextTokens) {
        this(maxTokens, maxContextTokens, 0);
    }

    public static ServerDefaults mlxLm() {
        return new ServerDefaults(512, 8192);
    }
}
