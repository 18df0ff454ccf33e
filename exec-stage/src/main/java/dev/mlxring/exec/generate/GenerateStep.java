package dev.mlxring.exec.generate;

import dev.mlxring.exec.kv.KvCache;
import dev.mlxring.exec.model.LanguageModel;
import dev.mlxring.exec.sample.EngineRng;
import dev.mlxring.exec.sample.SamplingParams;
import dev.mlxring.exec.sample.SamplingRun;
import dev.mlxring.exec.sample.TokenLogprobs;
import dev.mlxring.mlx.ArrayScope;
import dev.mlxring.mlx.Mlx;
import dev.mlxring.mlx.MlxArray;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.List;

/**
 * mlx-lm's {@code generate_step}, step for step: prefill in chunks of
 * {@code prefillStepSize} that leave the last prompt token for the first decode step (each chunk
 * evaluated and followed by {@code clear_cache}), then the pipelined loop that builds and
 * {@code async_eval}s step n+1 before reading token n, clearing the cache every 256 tokens.
 * Sampling follows {@link SamplingParams}: the logits processors run on each step's last-position
 * logits before logsumexp, with the history generate_step keeps (prompt chunks as they are
 * prefilled, then each step's input token), and the sampler runs on the logprobs; the
 * request's key and history live in its {@link SamplingRun}. Greedy without processors takes the
 * plain argmax path.
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

    /**
     * Receives each committed token with the step's {@code [V]} logprobs (valid only during the
     * call); returning false stops generation after it.
     */
    @FunctionalInterface
    public interface StepListener {
        boolean onToken(int token, MlxArray logprobs);
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

    private static Step step(LanguageModel model, MlxArray inputTokens, KvCache[] cache, boolean keepLogits,
            SamplingRun sampling, int inputLength) {
        try (ArrayScope scope = ArrayScope.open()) {
            MlxArray logits = model.forward(Mlx.expandDims(inputTokens, 0), cache);
            int length = logits.dim(1);
            int vocab = logits.dim(2);
            logits = Mlx.squeeze(Mlx.slice(logits, new int[] {0, length - 1, 0}, new int[] {1, length, vocab},
                    new int[] {1, 1, 1}), 1);
            MlxArray raw = logits;
            if (sampling != null) {
                logits = sampling.process(inputTokens, inputLength, logits);
            }
            MlxArray logprobs = Mlx.subtract(logits, Mlx.logsumexp(logits, true));
            MlxArray sampled = sampling == null ? Mlx.argmax(logprobs, -1, false) : sampling.sample(logprobs);
            return new Step(sampled.detach(), Mlx.squeeze(logprobs, 0).detach(),
                    keepLogits ? Mlx.squeeze(raw, 0).detach() : null);
        }
    }

    /** Greedy generation (mlx-lm's default sampler, no logits processors). */
    public static GenerationResult run(LanguageModel model, int[] prompt, GenerationOptions options,
            TokenListener listener) {
        return run(model, prompt, options, SamplingParams.GREEDY, null, (token, logprobs) -> listener.onToken(token));
    }

    /**
     * Generation with {@code sampling}; a request without a seed draws its key from
     * {@code engineRng} (may be null for greedy or seeded requests).
     */
    public static GenerationResult run(LanguageModel model, int[] prompt, GenerationOptions options,
            SamplingParams sampling, EngineRng engineRng, TokenListener listener) {
        return run(model, prompt, options, sampling, engineRng, (token, logprobs) -> listener.onToken(token));
    }

    public static GenerationResult run(LanguageModel model, int[] prompt, GenerationOptions options,
            SamplingParams sampling, EngineRng engineRng, StepListener listener) {
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
        SamplingRun run = SamplingRun.start(sampling, vocab, engineRng);
        // The plain greedy path keeps generate_step's default graph: argmax, nothing else.
        SamplingRun active = run.plainGreedy() ? null : run;
        boolean wantLogprobs = sampling.logprobs() || sampling.topLogprobs() > 0;
        List<TokenLogprobs> tokenLogprobs = wantLogprobs ? new ArrayList<>() : null;
        Mlx.resetPeakMemory();
        KvCache[] cache;
        try {
            cache = model.newCache();
        } catch (RuntimeException e) {
            run.close();
            throw e;
        }
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
                    MlxArray chunk = Mlx.fromInts(Arrays.copyOfRange(prompt, processed, processed + n), n);
                    model.forward(Mlx.expandDims(chunk, 0), cache);
                    MlxArray[] state = new MlxArray[cache.length * 2];
                    for (int i = 0; i < cache.length; i++) {
                        MlxArray[] kv = cache[i].state();
                        state[2 * i] = kv[0];
                        state[2 * i + 1] = kv[1];
                    }
                    Mlx.eval(state);
                    if (active != null) {
                        active.observe(chunk, n);
                    }
                }
                processed += n;
                Mlx.clearCache();
            }
            try (ArrayScope scope = ArrayScope.open()) {
                int tail = prompt.length - processed;
                current = step(model, Mlx.fromInts(Arrays.copyOfRange(prompt, processed, prompt.length), tail), cache,
                        options.captureFirstStep(), active, tail);
            }
            Mlx.asyncEval(current.y(), current.logprobs());

            for (int n = 0; ; n++) {
                if (n != options.maxTokens()) {
                    next = step(model, current.y(), cache, false, active, 1);
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
                if (tokenLogprobs != null) {
                    tokenLogprobs.add(TokenLogprobs.of(current.logprobs(), token, sampling.topLogprobs()));
                }
                if (!listener.onToken(token, current.logprobs())) {
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
            run.close();
        }
        long peak = Mlx.memory().peakBytes();
        return new GenerationResult(prompt.clone(), Arrays.copyOf(out, produced), finishReason, firstTokenAt - start,
                lastTokenAt - firstTokenAt, peak, firstLogits, firstLogprobs, dtype,
                tokenLogprobs == null ? null : List.copyOf(tokenLogprobs));
    }
}
