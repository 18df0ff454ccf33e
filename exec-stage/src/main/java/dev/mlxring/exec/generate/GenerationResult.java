package dev.mlxring.exec.generate;

/**
 * What one generation produced and how long it took, with mlx-lm's {@code stream_generate}
 * definitions: prompt tok/s = prompt tokens / time to the first token; generation tok/s =
 * generated tokens / time from the first token to the last.
 *
 * @param finishReason {@code "stop"} (a stop id was produced) or {@code "length"}
 * @param firstLogits raw bytes of the first step's logits {@code [V]} (null unless captured)
 * @param firstLogprobs raw bytes of the first step's logprobs {@code [V]} (null unless captured)
 * @param logitsDtype MLX dtype name of the captured vectors
 */
public record GenerationResult(int[] promptTokens, int[] tokens, String finishReason, long promptTimeNs,
        long generationTimeNs, long peakMemoryBytes, byte[] firstLogits, byte[] firstLogprobs, String logitsDtype) {

    public double promptTokensPerSecond() {
        return promptTimeNs == 0 ? 0 : promptTokens.length / (promptTimeNs / 1e9);
    }

    public double generationTokensPerSecond() {
        return generationTimeNs == 0 ? 0 : tokens.length / (generationTimeNs / 1e9);
    }
}
