package dev.mlxring.exec.generate;

import dev.mlxring.exec.sample.TokenLogprobs;
import java.util.List;

/**
 * What one generation produced and how long it took, with mlx-lm's {@code stream_generate}
 * definitions: prompt tok/s = prompt tokens / time to the first token; generation tok/s =
 * generated tokens / time from the first token to the last.
 *
 * @param finishReason {@code "stop"} (a stop id was produced) or {@code "length"}
 * @param firstLogits raw bytes of the first step's logits {@code [V]} (null unless captured)
 * @param firstLogprobs raw bytes of the first step's logprobs {@code [V]} (null unless captured)
 * @param logitsDtype MLX dtype name of the captured vectors
 * @param tokenLogprobs per generated token, its logprob and top logprobs (null unless the sampling
 *     params ask for logprobs or top_logprobs)
 */
public record GenerationResult(
        int[] promptTokens,
        int[] tokens,
        String finishReason,
        long promptTimeNs,
        long generationTimeNs,
        long peakMemoryBytes,
        byte[] firstLogits,
        byte[] firstLogprobs,
        String logitsDtype,
        List<TokenLogprobs> tokenLogprobs) {

    public double promptTokensPerSecond() {
        return promptTimeNs == 0 ? 0 : promptTokens.length / (promptTimeNs / 1e9);
    }

    public double generationTokensPerSecond() {
        return generationTimeNs == 0 ? 0 : tokens.length / (generationTimeNs / 1e9);
    }
}
