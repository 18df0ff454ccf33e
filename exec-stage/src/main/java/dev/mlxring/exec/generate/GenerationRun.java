package dev.mlxring.exec.generate;

import dev.mlxring.exec.kv.KvCache;
import dev.mlxring.exec.kv.QuantizedKvCache;
import dev.mlxring.exec.kv.RotatingKvCache;
import dev.mlxring.exec.model.LanguageModel;
import dev.mlxring.exec.sample.EngineRng;
import dev.mlxring.exec.sample.SamplingRun;
import dev.mlxring.exec.sample.TokenLogprobs;
import dev.mlxring.exec.sample.TokenMask;
import dev.mlxring.mlx.ArrayScope;
import dev.mlxring.mlx.Mlx;
import dev.mlxring.mlx.MlxArray;
import dev.mlxring.pipeline.KvQuantization;
import dev.mlxring.pipeline.Outcome.ErrorType;
import dev.mlxring.pipeline.SamplingParams;
import dev.mlxring.pipeline.TokenConstraint;
import java.util.Arrays;

/**
 * mlx-lm's {@code generate_step} as a resumable state machine: each {@link #advance()} runs one
 * safe work unit — a prefill chunk, the first step, or one iteration of the pipelined decode
 * loop — so a scheduler can check cancellation and new arrivals between units. The op order is
 * generate_step's: prefill chunks of {@code prefillStepSize} that leave the last prompt token for
 * the first step ({@code eval} of the cache state and {@code clear_cache} after each); then, per
 * iteration, build and {@code async_eval} step n+1 before reading token n, {@code clear_cache}
 * every 256 tokens. Sampling: processors on last-position logits before logsumexp, sampler on the
 * logprobs; plain greedy takes the bare argmax graph. KV quantization ({@code kv_bits}): after
 * every model call — after a prefill chunk's forward and before its cache {@code eval}; in a step
 * after the logits processors and before logsumexp — each full-precision layer cache whose
 * offset has reached {@code quantized_kv_start} is replaced by its quantized copy
 * ({@code maybe_quantize_kv_cache}), so the next model call attends over the quantized cache.
 *
 * <p>A {@link #constrain constrained} run masks each step's logits after the processors
 * ({@link TokenMask}: {@code generate_step} with one more {@code logits_processors} entry). Its
 * mask for step n+1 needs token n: each iteration builds step n+1's forward on token n and
 * {@code async_eval}s its logits, then reads token n, advances the constraint and computes the
 * mask while that forward runs, then masks, normalizes and samples (the same ops and values as
 * building the whole step at once); a step whose mask allows nothing ends the run with {@code "error"} and {@link #failure()} when
 * its token would be committed (a row that stops or reaches its length first ends normally).
 *
 * <p>Owns its caches, sampling state and pending steps; {@link #close()} frees them all. Exec
 * thread only. The first run on a thread gives it its own default stream (mlx-lm's
 * {@code generation_stream}).
 */
public final class GenerationRun implements AutoCloseable {
    /** What the last {@link #advance()} did. */
    public enum Event {
        PREFILLED,
        TOKEN,
        FINISHED
    }

    /**
     * Profiling hook, package-private: {@link DecodeTiming} (used by perf's DecodeProfile) times the
     * parts of the decode loop with it. The engine never installs one, and without one the run
     * does exactly what it does.
     */
    interface Probe {
        /** A step's graph is about to be built. */
        void stepStarted();

        /** The step's graph is built: {@code arrays} handles in its scope, just before it closes. */
        void stepBuilt(int arrays);

        /** Submits the built step in place of the engine's {@code async_eval(y, logprobs)}. */
        void submit(MlxArray y, MlxArray logprobs);

        /** The current step's token was read ({@code item()} returned). */
        void tokenRead();
    }

    private static final ThreadLocal<Boolean> STREAM_READY = ThreadLocal.withInitial(() -> false);

    /** One {@code _step}: the sampled token, the step's logprobs and (when captured) raw logits. */
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

    private final LanguageModel model;
    private final int[] prompt;
    private final GenerationOptions options;
    private final SamplingParams params;
    private final SamplingRun sampling;
    /** Null on the plain greedy path: generate_step's default graph, argmax and nothing else. */
    private final SamplingRun activeSampling;
    /** mlx-lm's {@code prompt_cache}: layer caches, replaced in place when quantized. */
    private final KvCache[] cache;

    private final long startNs = System.nanoTime();

    private int processed;
    private boolean decoding;
    private int n;
    private Step current;
    private Step next;
    private boolean finished;
    private int token;
    private String finishReason;
    private int produced;
    private long firstTokenNs;
    private long lastTokenNs;
    private byte[] firstLogits;
    private byte[] firstLogprobs;
    private String logitsDtype;
    private Probe probe;
    private java.util.function.IntConsumer prefillHook;
    /** The request's token constraint as a mask; null when unconstrained. */
    private TokenMask mask;
    /** Whether the constraint refused the current step's token (read while building the next step). */
    private boolean refusedCurrent;
    /** Decoded tokens fed back into the model (each read token: its successor step was built). */
    private int[] fed;

    private int fedCount;

    /**
     * @param engineRng where a request without a seed draws its key (may be null when greedy or seeded)
     * @throws IllegalArgumentException for an empty prompt or ids outside the vocabulary
     */
    public GenerationRun(
            LanguageModel model, int[] prompt, GenerationOptions options, SamplingParams params, EngineRng engineRng) {
        this(model, prompt, options, params, engineRng, null);
    }

    /**
     * A run that continues from {@code restored} layer caches (a prefix-cache hit), as
     * {@code generate_step(prompt, prompt_cache=cache)}: {@code prompt} is only the part not in
     * the cache. Takes ownership of {@code restored} (closed here if the run cannot start).
     */
    public GenerationRun(
            LanguageModel model,
            int[] prompt,
            GenerationOptions options,
            SamplingParams params,
            EngineRng engineRng,
            KvCache[] restored) {
        try {
            model.checkPrompt(prompt);
        } catch (RuntimeException e) {
            closeAll(restored);
            throw e;
        }
        useGenerationStream();
        this.model = model;
        this.prompt = prompt.clone();
        this.options = options;
        this.params = params;
        SamplingRun s;
        try {
            s = SamplingRun.start(params, model.vocabSize(), engineRng);
        } catch (RuntimeException e) {
            closeAll(restored);
            throw e;
        }
        this.sampling = s;
        this.activeSampling = sampling.plainGreedy() ? null : sampling;
        if (restored != null) {
            this.cache = restored;
        } else {
            KvCache[] c;
            try {
                c = newPromptCache(model, options);
            } catch (RuntimeException e) {
                sampling.close();
                throw e;
            }
            this.cache = c;
        }
        this.fed = new int[Math.max(16, options.maxTokens() + 1)];
        Mlx.resetPeakMemory();
    }

    private static void closeAll(KvCache[] caches) {
        if (caches != null) {
            for (KvCache c : caches) {
                c.close();
            }
        }
    }

    /**
     * generate_step's {@code make_prompt_cache(model, max_kv_size)}. KV quantization of a rotating
     * cache is refused here, before any work: mlx-lm's {@code RotatingKVCache.to_quantized} raises
     * ("RotatingKVCache Quantization NYI") once the cache reaches {@code quantized_kv_start}; so is
     * KV quantization of a model that refuses it ({@link LanguageModel#kvQuantizationRefusal()}).
     *
     * @throws IllegalArgumentException for {@code kv_bits} with a rotating cache or such a model
     */
    public static KvCache[] newPromptCache(LanguageModel model, GenerationOptions options) {
        if (options.kvQuantization() != null) {
            String refusal = kvQuantizationRefusal(model, options.maxKvSize());
            if (refusal != null) {
                throw new IllegalArgumentException(refusal);
            }
        }
        return model.newCache(options.maxKvSize());
    }

    /**
     * Whether this model with {@code --max-kv-size} keeps any layer in a {@link RotatingKvCache}:
     * the prefix cache stores and restores dense and quantized layers only, so such models run
     * without it.
     */
    public static boolean rotates(LanguageModel model, int maxKvSize) {
        KvCache[] c = model.newCache(maxKvSize);
        boolean rotating = Arrays.stream(c).anyMatch(k -> k instanceof RotatingKvCache);
        Arrays.stream(c).forEach(KvCache::close);
        return rotating;
    }

    /** Why {@code --kv-bits} cannot run with this model and {@code --max-kv-size}, or null when it can. */
    public static String kvQuantizationRefusal(LanguageModel model, int maxKvSize) {
        if (rotates(model, maxKvSize)) {
            return rotatingQuantizationRefusal(model, maxKvSize);
        }
        String why = model.kvQuantizationRefusal();
        return why == null ? null : "--kv-bits cannot be used here: " + why;
    }

    private static String rotatingQuantizationRefusal(LanguageModel model, int maxKvSize) {
        String why = maxKvSize > 0 && !model.hasOwnCacheLayout()
                ? "--max-kv-size " + maxKvSize + " makes rotating caches"
                : "model_type '" + model.modelType() + "' keeps its sliding-window layers in rotating caches";
        return "--kv-bits cannot be used here: " + why
                + ", which mlx-lm cannot quantize (RotatingKVCache Quantization NYI)";
    }

    /**
     * Gives the calling thread its own default stream the first time it generates (mlx-lm's
     * {@code generation_stream}); the batch generator calls it too, so both run on one stream.
     */
    public static void useGenerationStream() {
        if (!STREAM_READY.get()) {
            Mlx.useNewDefaultStream();
            STREAM_READY.set(true);
        }
    }

    /**
     * Applies {@code constraint} to every generated token; before the first {@link #advance()}.
     * The run owns it from here on and closes it in {@link #close()} (also when this throws).
     *
     * @throws IllegalStateException when the run already started or is already constrained
     */
    public void constrain(TokenConstraint constraint) {
        if (mask != null || processed > 0 || decoding) {
            constraint.close();
            throw new IllegalStateException("a run is constrained once, before it starts");
        }
        mask = new TokenMask(constraint, model.vocabSize());
    }

    /**
     * Runs {@code hook} after each prefill chunk, its caches evaluated, with the prompt positions
     * this run has fed so far (the prefix cache checkpoints a hybrid model's recurrent state
     * there). Install before the first {@link #advance()}; the hook must not change the caches.
     */
    public void onPrefillChunk(java.util.function.IntConsumer hook) {
        this.prefillHook = hook;
    }

    /** Installs a profiling hook, before the first {@link #advance()}. */
    void probe(Probe probe) {
        this.probe = probe;
    }

    /** Runs one safe work unit. After {@link Event#FINISHED} it keeps answering FINISHED. */
    public Event advance() {
        if (finished) {
            return Event.FINISHED;
        }
        if (!decoding) {
            if (prompt.length - processed > 1) {
                prefillChunk();
            } else {
                firstStep();
            }
            return Event.PREFILLED;
        }
        return decodeIteration();
    }

    private void prefillChunk() {
        int count = Math.min(options.prefillStepSize(), prompt.length - processed - 1);
        try (ArrayScope scope = ArrayScope.open()) {
            MlxArray chunk = Mlx.fromInts(Arrays.copyOfRange(prompt, processed, processed + count), count);
            // The forward's intermediates (and its unused logits) are released before the cache is
            // evaluated, as Python drops _model_call's result: otherwise MLX must keep every
            // activation of the chunk alive through the evaluation (~1.2 MB per token on SmolLM2).
            try (ArrayScope forward = ArrayScope.open()) {
                model.forward(Mlx.expandDims(chunk, 0), cache);
            }
            maybeQuantizeKvCache();
            Mlx.eval(Arrays.stream(cache).flatMap(c -> Arrays.stream(c.state())).toArray(MlxArray[]::new));
            if (activeSampling != null) {
                activeSampling.observe(chunk, count);
            }
        }
        processed += count;
        Mlx.clearCache();
        if (prefillHook != null) {
            prefillHook.accept(processed);
        }
    }

    private void firstStep() {
        try (ArrayScope scope = ArrayScope.open()) {
            int tail = prompt.length - processed;
            current = step(
                    Mlx.fromInts(Arrays.copyOfRange(prompt, processed, prompt.length), tail),
                    options.captureFirstStep(),
                    tail);
        }
        submit(current);
        decoding = true;
    }

    /** One iteration of generate_step's {@code while True} loop; the swap of n-1 happens first. */
    private Event decodeIteration() {
        if (n > 0) {
            if ((n - 1) % 256 == 0) {
                Mlx.clearCache();
            }
            current.close();
            current = next;
            next = null;
        }
        if (mask != null && n != options.maxTokens() && mask.failure() != null) {
            return finish("error"); // the current step had no mask: its token cannot be used
        }
        if (n != options.maxTokens()) {
            next = step(current.y(), false, 1);
            submit(next);
            if (refusedCurrent) {
                return finish("error");
            }
        }
        if (n == 0) {
            Mlx.eval(current.y());
        }
        if (n == options.maxTokens()) {
            return finish("length");
        }
        int t = current.y().itemInt();
        if (probe != null) {
            probe.tokenRead();
        }
        if (n == 0) {
            firstTokenNs = System.nanoTime();
            if (options.captureFirstStep()) {
                firstLogits = current.logits().toBytes();
                firstLogprobs = current.logprobs().toBytes();
                logitsDtype = current.logprobs().dtype().mlxName;
            }
        }
        n++;
        // Step n+1 was built on this token above, so the cache now holds it (stop tokens too).
        if (fedCount == fed.length) {
            fed = Arrays.copyOf(fed, fed.length * 2);
        }
        fed[fedCount++] = t;
        if (options.isStop(t)) {
            return finish("stop");
        }
        token = t;
        produced++;
        lastTokenNs = System.nanoTime();
        return Event.TOKEN;
    }

    private Step step(MlxArray inputTokens, boolean keepLogits, int inputLength) {
        if (probe != null) {
            probe.stepStarted();
        }
        try (ArrayScope scope = ArrayScope.open()) {
            MlxArray logits = model.forward(Mlx.expandDims(inputTokens, 0), cache);
            int length = logits.dim(1);
            int vocab = logits.dim(2);
            logits = Mlx.squeeze(
                    Mlx.slice(logits, new int[] {0, length - 1, 0}, new int[] {1, length, vocab}, new int[] {1, 1, 1}),
                    1);
            MlxArray raw = logits;
            if (activeSampling != null) {
                logits = activeSampling.process(inputTokens, inputLength, logits);
            }
            if (mask != null) {
                if (decoding) {
                    // Step n+1's mask follows token n (this step's input): the forward runs while
                    // the constraint consumes token n and computes the mask.
                    Mlx.asyncEval(logits);
                    refusedCurrent = !mask.consume(inputTokens.itemInt());
                }
                MlxArray allowed = mask.next();
                if (allowed != null) {
                    logits = TokenMask.apply(allowed, logits);
                }
            }
            maybeQuantizeKvCache();
            MlxArray logprobs = Mlx.subtract(logits, Mlx.logsumexp(model.cpuKernels(), logits, true));
            MlxArray sampled = activeSampling == null
                    ? Mlx.argmax(model.cpuKernels(), logprobs, -1, false)
                    : activeSampling.sample(logprobs);
            if (probe != null) {
                probe.stepBuilt(scope.ownedCount());
            }
            return new Step(
                    sampled.detach(),
                    Mlx.squeeze(logprobs, 0).detach(),
                    keepLogits ? Mlx.squeeze(raw, 0).detach() : null);
        }
    }

    /** mlx-lm's {@code maybe_quantize_kv_cache} when the run quantizes its KV cache. */
    private void maybeQuantizeKvCache() {
        KvQuantization q = options.kvQuantization();
        if (q != null) {
            QuantizedKvCache.maybeQuantize(q, cache);
        }
    }

    /** generate_step's {@code async_eval} of a built step (or the probe's stand-in for it). */
    private void submit(Step s) {
        if (probe == null) {
            Mlx.asyncEval(s.y(), s.logprobs());
        } else {
            probe.submit(s.y(), s.logprobs());
        }
    }

    private Event finish(String reason) {
        finished = true;
        finishReason = reason;
        return Event.FINISHED;
    }

    /**
     * The token ids whose KV the caches hold once the run has {@link Event#FINISHED}: this run's
     * prompt then every decoded token (the stop token included: generate_step feeds each token
     * before its caller sees it). Prefix-cache publishing keys the snapshot with them.
     */
    public int[] cachedSequence() {
        int[] out = Arrays.copyOf(prompt, prompt.length + fedCount);
        System.arraycopy(fed, 0, out, prompt.length, fedCount);
        return out;
    }

    /** The layer caches (still owned by this run, valid until {@link #close()}), e.g. to snapshot them. */
    public KvCache[] caches() {
        return cache.clone();
    }

    public boolean isFinished() {
        return finished;
    }

    /** The token the last {@link Event#TOKEN} committed. */
    public int token() {
        return token;
    }

    /** The committed token's {@code [V]} logprobs; valid until the next {@link #advance()}. */
    public MlxArray tokenLogprobs() {
        return current.logprobs();
    }

    /** The committed token's logprob and its {@code topN} alternatives. */
    public TokenLogprobs tokenLogprobs(int topN) {
        return TokenLogprobs.of(current.logprobs(), token, topN);
    }

    public SamplingParams params() {
        return params;
    }

    /** {@code stop}, {@code length}, or {@code error} when {@link #failure()} ended the run. */
    public String finishReason() {
        return finishReason;
    }

    /** Why the run ended with {@code error} (its token constraint's failure), else null. */
    public String failure() {
        return "error".equals(finishReason) ? mask.failure() : null;
    }

    /** The failure's type, or null when the run did not fail. */
    public ErrorType failureType() {
        return "error".equals(finishReason) ? mask.failureType() : null;
    }

    public int promptTokens() {
        return prompt.length;
    }

    public int completionTokens() {
        return produced;
    }

    /** The result so far, with the given token ids (the caller keeps them). */
    public GenerationResult result(int[] tokens, java.util.List<TokenLogprobs> logprobs, String reason) {
        long first = firstTokenNs == 0 ? System.nanoTime() : firstTokenNs;
        long last = lastTokenNs == 0 ? first : lastTokenNs;
        return new GenerationResult(
                prompt.clone(),
                tokens,
                reason,
                first - startNs,
                last - first,
                Mlx.memory().peakBytes(),
                firstLogits,
                firstLogprobs,
                logitsDtype,
                logprobs);
    }

    @Override
    public void close() {
        if (current != null) {
            current.close();
            current = null;
        }
        if (next != null) {
            next.close();
            next = null;
        }
        for (KvCache c : cache) {
            c.close();
        }
        try {
            sampling.close();
        } finally {
            if (mask != null) {
                mask.close();
            }
        }
    }
}
