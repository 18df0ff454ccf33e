package dev.mlxring.ingress.http;

/**
 * What request parsing needs from the server's configuration.
 *
 * @param maxTokens the default {@code max_tokens} ({@code --max-tokens}; mlx_lm.server: 512)
 * @param maxContextTokens the model's context: a {@code max_tokens} that leaves no room for a
 *     prompt is refused with 400 {@code context_length_exceeded}
 * @param vocabSize the model's vocabulary size, for {@code logit_bias} ids; 0 = unknown (plan
 *     checks them then)
 * @param adapters the adapters a request may name ({@code --adapter-path}, {@code --adapter
 *     NAME=DIR}) and how its {@code model} and {@code adapters} fields name them ({@link AdapterNames})
 */
public record ServerDefaults(int maxTokens, int maxContextTokens, int vocabSize, AdapterNames adapters) {
    public ServerDefaults {
        adapters = adapters == null ? AdapterNames.NONE : adapters;
    }

    /** With the model loaded with the adapter folder {@code adapterPath} (null: none) and no named adapters. */
    public ServerDefaults(int maxTokens, int maxContextTokens, int vocabSize, String adapterPath) {
        this(maxTokens, maxContextTokens, vocabSize, new AdapterNames(adapterPath, java.util.Map.of()));
    }

    public ServerDefaults(int maxTokens, int maxContextTokens, int vocabSize) {
        this(maxTokens, maxContextTokens, vocabSize, AdapterNames.NONE);
    }

    public ServerDefaults(int maxTokens, int maxContextTokens) {
        this(maxTokens, maxContextTokens, 0);
    }

    public static ServerDefaults mlxLm() {
        return new ServerDefaults(512, 8192);
    }
}
