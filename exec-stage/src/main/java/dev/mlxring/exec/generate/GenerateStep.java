package dev.mlxring.exec.generate;

import dev.mlxring.exec.kv.KvCache;
import dev.mlxring.exec.model.LanguageModel;
import dev.mlxring.mlx.ArrayScope;
import dev.mlxring.mlx.Mlx;
import dev.mlxring.mlx.MlxArray;
import java.util.Arrays;

/**
 * mlx-lm's {@code generate_step} with the greedy sampler, step for step: prefill in chunks of
 * {@code prefillStepSize} that leave the last prompt token for the first decode step (each chunk
 * evaluated and followed by {@code clear_cache}), then the pipelined loop that builds and
 * {@code async_eval}s step n+1 before reading token n, clearing the cache every 256 tokens.
 *
 * <p>Threading: call from the one thread that drives MLX; the first call gives that thread its
 * own default stream, as mlx-lm's {@code generation_stream}. Every array a step creates is freed
 * when the step's value is consumed; the caches are freed when the call returns.
 */
public final class GenerateStep {
    /** Receives each committed token; returning false stops generation after it. */
    @FunctionalInterface
    public interface TokenListener {
        boolean onToken(int token);
    }

    private static final ThreadLocal<Boolean> STREAM_READY = ThreadLocal.withInitial(() -> false);

    private GenerateStep() {}

    /** One {@code _step}: forward the tokens, take the last position, logprobs, argmax. */
    private record Step(MlxArray y, MlxArray logprobs, MlxArray logits) implements AutoCloseable {
        @Override
        public void close() {
            y.close();
            logprobs.close();
            if (logits != null) {
                logits.close();
            }
        }
    }

    private static Step step(LanguageModel model, MlxArray inputTokens, KvCache[] cache, boolean keepLogits) {
        try (ArrayScope scope = ArrayScope.open()) {
            MlxArray logits = model.forward(Mlx.expandDims(inputTokens, 0), cache);
            int length = logits.dim(1);
            int vocab = logits.dim(2);
            logits = Mlx.squeeze(Mlx.slice(logits, new int[] {0, length - 1, 0}, new int[] {1, length, vocab},
                    new int[] {1, 1, 1}), 1);
            MlxArray logprobs = Mlx.subtract(logits, Mlx.logsumexp(logits, true));
            MlxArray sampled = Mlx.argmax(logprobs, -1, false);
            return new Step(sampled.detach(), Mlx.squeeze(logprobs, 0).detach(),
                    keepLogits ? Mlx.squeeze(logits, 0).detach() : null);
        }
    }

    public static GenerationResult run(LanguageModel model, int[] prompt, GenerationOptions options,
            TokenListener listener) {
        if (prompt.length == 0) {
            throw new IllegalArgumentException("prompt must hold at least one token");
        }
        int vocab = model.vocabSize();
        for (int i = 0; i < prompt.length; i++) {
            if (prompt[i] < 0 || prompt[i] >= vocab) {
                throw new IllegalArgumentException(
                        "prompt token " + prompt[i] + " at position " + i + " is outside the vocabulary [0, " + vocab + ")");
            }
        }
        if (!STREAM_READY.get()) {
            Mlx.useNewDefaultStream();
            STREAM_READY.set(true);
        }
        Mlx.resetPeakMemory();
        KvCache[] cache = model.newCache();
        int[] out = new int[options.maxTokens()];
        int produced = 0;
        String finishReason = "length";
        byte[] firstLogits = null;
        byte[] firstLogprobs = null;
        String dtype = null;
        long start = System.nanoTime();
        long firstTokenAt = start;
        long lastTokenAt = start;
        Step current = null;
        Step next = null;
        try {
            int processed = 0;
            while (prompt.length - processed > 1) {
                int n = Math.min(options.prefillStepSize(), prompt.length - processed - 1);
                try (ArrayScope scope = ArrayScope.open()) {
                    model.forward(Mlx.expandDims(Mlx.fromInts(Arrays.copyOfRange(prompt, processed, processed + n), n), 0),
                            cache);
                    MlxArray[] state = new MlxArray[cache.length * 2];
                    for (int i = 0; i < cache.length; i++) {
                        MlxArray[] kv = cache[i].state();
                        state[2 * i] = kv[0];
                        state[2 * i + 1] = kv[1];
                    }
                    Mlx.eval(state);
                }
                processed += n;
                Mlx.clearCache();
            }
            try (ArrayScope scope = ArrayScope.open()) {
                int tail = prompt.length - processed;
                current = step(model, Mlx.fromInts(Arrays.copyOfRange(prompt, processed, prompt.length), tail), cache,
                        options.captureFirstStep());
            }
            Mlx.asyncEval(current.y(), current.logprobs());

            for (int n = 0; ; n++) {
                if (n != options.maxTokens()) {
                    next = step(model, current.y(), cache, false);
                    Mlx.asyncEval(next.y(), next.logprobs());
                }
                if (n == 0) {
                    Mlx.eval(current.y());
                }
                if (n == options.maxTokens()) {
                    break;
                }
                int token = current.y().itemInt();
                if (n == 0) {
                    firstTokenAt = System.nanoTime();
                    if (options.captureFirstStep()) {
                        firstLogits = current.logits().toBytes();
                        firstLogprobs = current.logprobs().toBytes();
                        dtype = current.logprobs().dtype().mlxName;
                    }
                }
                if (options.isStop(token)) {
                    finishReason = "stop";
                    break;
                }
                out[produced++] = token;
                lastTokenAt = System.nanoTime();
                if (!listener.onToken(token)) {
                    finishReason = "stop";
                    break;
                }
                if (n % 256 == 0) {
                    Mlx.clearCache();
                }
                current.close();
                current = next;
                next = null;
            }
        } finally {
            if (current != null) {
                current.close();
            }
            if (next != null) {
                next.close();
            }
            for (KvCache c : cache) {
                c.close();
            }
        }
        long peak = Mlx.memory().peakBytes();
        return new GenerationResult(prompt.clone(), Arrays.copyOf(out, produced), finishReason, firstTokenAt - start,
                lastTokenAt - firstTokenAt, peak, firstLogits, firstLogprobs, dtype);
    }
}
