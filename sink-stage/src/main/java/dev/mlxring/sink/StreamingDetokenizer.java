package dev.mlxring.sink;

/**
 * One session's incremental detokenizer: the Java twin of mlx-lm's {@code StreamingDetokenizer}
 * ({@code mlx_lm/tokenizer_utils.py}) used the way mlx-lm's generate loop and server use it:
 * {@code add_token(id)} then read {@code last_segment}, and {@code finalize()} then read {@code
 * last_segment} once at the end. Each call appends exactly that {@code last_segment} to {@code
 * out}, so the segmentation equals mlx-lm's token for token. Single-threaded.
 */
public interface StreamingDetokenizer {

    /** Consumes one token id and appends the newly readable text (possibly nothing). */
    void addToken(int tokenId, StringBuilder out);

    /** Flushes what was held back (incomplete UTF-8, a lone space token) and appends it. */
    void finalizeTo(StringBuilder out);

    /** Creates fresh per-session detokenizers over shared, immutable tokenizer data. */
    @FunctionalInterface
    interface Factory {
        StreamingDetokenizer open();
    }
}
