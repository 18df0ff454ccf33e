package dev.mlxring.exec.spec;

import dev.mlxring.exec.kv.KvCache;
import dev.mlxring.exec.kv.QuantizedKvCache;
import dev.mlxring.exec.model.LanguageModel;
import dev.mlxring.mlx.ArrayScope;
import dev.mlxring.mlx.Mlx;
import dev.mlxring.mlx.MlxArray;
import dev.mlxring.pipeline.KvQuantization;
import java.util.Arrays;

/**
 * {@code speculative_generate_step}'s {@code _prefill}: runs all but the last token of
 * {@code tokens} through {@code model} in chunks of {@code prefillStepSize} (KV quantization after
 * each chunk's forward, then {@code eval} of the cache state and {@code clear_cache}); the last
 * token is left for the first step.
 */
final class ChunkedPrefill {
    private ChunkedPrefill() {}

    static void run(
            LanguageModel model, KvCache[] cache, int[] tokens, int prefillStepSize, KvQuantization quantization) {
        int processed = 0;
        while (tokens.length - processed > 1) {
            int count = Math.min(prefillStepSize, tokens.length - processed - 1);
            try (ArrayScope scope = ArrayScope.open()) {
                MlxArray chunk = Mlx.fromInts(Arrays.copyOfRange(tokens, processed, processed + count), count);
                try (ArrayScope forward = ArrayScope.open()) {
                    model.forward(Mlx.expandDims(chunk, 0), cache);
                }
                if (quantization != null) {
                    QuantizedKvCache.maybeQuantize(quantization, cache);
                }
                Mlx.eval(Arrays.stream(cache)
                        .flatMap(c -> Arrays.stream(c.state()))
                        .toArray(MlxArray[]::new));
            }
            processed += count;
            Mlx.clearCache();
        }
    }
}
