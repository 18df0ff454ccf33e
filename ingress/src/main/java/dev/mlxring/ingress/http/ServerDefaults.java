package dev.mlxring.ingress.http;

/**
 * What request parsing needs from the server's configuration.
 *
 * @param maxTokens the default {@code max_tokens} ({@code --max-tokens}; mlx_lm.server: 512)
 * @param maxContextTokens the model's context: larger {@code max_tokens} values are refused with 400
 */
public record ServerDefaults(int maxTokens, int maxContextTokens) {
    public static ServerDefaults mlxLm() {
        return new ServerDefaults(512, 8192);
    }
}
