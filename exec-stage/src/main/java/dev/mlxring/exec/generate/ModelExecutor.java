package dev.mlxring.exec.generate;

import dev.mlxring.exec.batch.ContinuousBatch;
import dev.mlxring.exec.kv.KvCache;
import dev.mlxring.exec.kv.RotatingKvCache;
import dev.mlxring.exec.model.LanguageModel;
import dev.mlxring.exec.nn.AdapterCache;
import dev.mlxring.exec.prefix.PrefixReuse;
import dev.mlxring.exec.prefix.PrefixedRun;
import dev.mlxring.exec.sample.EngineRng;
import dev.mlxring.exec.sample.TokenLogprobs;
import dev.mlxring.exec.spec.Speculation;
import dev.mlxring.exec.spec.SpeculationPolicy;
import dev.mlxring.exec.spec.SpeculativeExecutionRun;
import dev.mlxring.exec.spec.SpeculativeRun;
import dev.mlxring.mlx.Mlx;
import dev.mlxring.mlx.MlxException;
import dev.mlxring.pipeline.ExecutionBatch;
import dev.mlxring.pipeline.ExecutionPlan;
import dev.mlxring.pipeline.ExecutionRun;
import dev.mlxring.pipeline.Executor;
import dev.mlxring.pipeline.KvQuantization;
import dev.mlxring.pipeline.Outcome.ErrorType;
import dev.mlxring.pipeline.RequestException;
import dev.mlxring.pipeline.SamplingParams;
import dev.mlxring.pipeline.StepResult;
import dev.mlxring.pipeline.TokenConstraint;
import java.util.Arrays;

/**
 * exec-stage's {@link Executor}: one resident model, runs opened per sealed plan. Unseeded
 * requests draw from one engine generator, as mlx-lm's process-wide key. With a
 * {@link PrefixReuse}, a run starts from the longest cached prefix of its prompt and publishes its
 * caches when it finishes ({@link PrefixedRun}). Exec thread only; the model (weights) is released
 * by {@link #close()}, on that thread.
 */
public final class ModelExecutor implements Executor {
    private final LanguageModel model;
    private final int prefillStepSize;
    private final int maxKvSize;
    private final EngineRng engineRng;
    /** Null: no prefix cache, every prompt is prefilled whole. */
    private final PrefixReuse prefixReuse;
    /** The server's default speculation (null: none) and what a request may ask instead. */
    private final SpeculationPolicy speculation;
    /** The named adapters its batch serves; null for none. Owned: closed before the model. */
    private AdapterCache adapters;

    public ModelExecutor(LanguageModel model, int prefillStepSize) {
        this(model, prefillStepSize, 0, null);
    }

    /**
     * @param maxKvSize {@code --max-kv-size} for every run; 0 = none
     * @param prefixReuse the prefix cache; null = none. Models whose layers rotate (sliding windows,
     *     {@code --max-kv-size}) and models it cannot snapshot ({@link PrefixReuse#supports}) run
     *     without it: it holds dense, quantized and recurrent layers.
     */
    public ModelExecutor(LanguageModel model, int prefillStepSize, int maxKvSize, PrefixReuse prefixReuse) {
        this(model, prefillStepSize, maxKvSize, prefixReuse, EngineRng.fromClock());
    }

    /**
     * As above, unseeded requests drawing from {@code engineRng}: the ranks of a tensor-parallel
     * group each build their executor on a generator seeded alike, so they sample the same tokens.
     */
    public ModelExecutor(
            LanguageModel model, int prefillStepSize, int maxKvSize, PrefixReuse prefixReuse, EngineRng engineRng) {
        this(model, prefillStepSize, maxKvSize, prefixReuse, engineRng, (Speculation) null);
    }

    /**
     * As above, speculating with {@code speculation} (null: never): every request it can take
     * ({@link SpeculativeRun#refusal}; no token constraint) runs as mlx-lm's
     * {@code speculative_generate_step}, without the prefix cache; the others run as without it.
     * A greedy request stops proposing once its acceptance stays low ({@link dev.mlxring.exec.spec.AdaptiveStop}).
     * Its batch ({@link #openBatch}) speculates too, row by row inside the continuous batch
     * ({@link ContinuousBatch}). It owns a draft model other than {@code model} and frees it in
     * {@link #close()}.
     */
    public ModelExecutor(
            LanguageModel model,
            int prefillStepSize,
            int maxKvSize,
            PrefixReuse prefixReuse,
            EngineRng engineRng,
            Speculation speculation) {
        this(model, prefillStepSize, maxKvSize, prefixReuse, engineRng, SpeculationPolicy.of(speculation));
    }

    /**
     * As above, with a request's {@code speculative} choice resolved by {@code speculation}
     * ({@link SpeculationPolicy#resolve}; a choice it refuses fails the request as invalid).
     */
    public ModelExecutor(
            LanguageModel model,
            int prefillStepSize,
            int maxKvSize,
            PrefixReuse prefixReuse,
            EngineRng engineRng,
            SpeculationPolicy speculation) {
        this.speculation = speculation;
        this.engineRng = engineRng;
        this.model = model;
        this.prefillStepSize = prefillStepSize;
        this.maxKvSize = maxKvSize;
        this.prefixReuse = prefixReuse != null && GenerationRun.rotates(model, maxKvSize)
                ? null
                : PrefixReuse.forModel(prefixReuse, model);
    }

    @Override
    public ExecutionRun open(ExecutionPlan plan) throws RequestException {
        SamplingParams params = plan.sampling();
        TokenConstraint constraint = plan.constraint();
        if (plan.adapter() != null) {
            closeQuietly(constraint);
            throw new RequestException(
                    ErrorType.INVALID_REQUEST,
                    "adapter '" + plan.adapter() + "' is served only in the continuous batch, which cannot run this"
                            + " request (e.g. a quantized KV cache); ask without the adapter or without that option");
        }
        PrefixedRun prefixed;
        try {
            GenerationOptions options = new GenerationOptions(
                    plan.maxTokens(),
                    prefillStepSize,
                    plan.stopTokenIds(),
                    false,
                    kvQuantization(plan.kvScheme()),
                    maxKvSize);
            int[] prompt = plan.prompt().tokenIds();
            Speculation how = speculation.resolve(plan.speculative());
            if (how != null
                    && constraint == null
                    && SpeculativeRun.refusal(model, prompt.length, options, params, how) == null) {
                return new SpeculativeExecutionRun(
                        new SpeculativeRun(model, prompt, options, params, engineRng, how, true),
                        plan.logprobs() || plan.topLogprobs() > 0,
                        plan.topLogprobs());
            }
            prefixed = PrefixedRun.open(prefixReuse, model, plan.prompt().tokenIds(), options, params, engineRng);
        } catch (IllegalArgumentException e) {
            closeQuietly(constraint);
            throw new RequestException(ErrorType.INVALID_REQUEST, e.getMessage());
        } catch (RequestException | RuntimeException e) {
            closeQuietly(constraint);
            throw e;
        }
        if (constraint != null) {
            try {
                prefixed.run().constrain(constraint);
            } catch (RuntimeException e) {
                prefixed.close();
                throw e;
            }
        }
        return new Run(prefixed, plan.logprobs() || plan.topLogprobs() > 0, plan.topLogprobs());
    }

    /** Closes a plan's constraint that no run took over (the request fails before it starts). */
    static void closeQuietly(TokenConstraint constraint) {
        if (constraint != null) {
            try {
                constraint.close();
            } catch (RuntimeException e) {
                System.getLogger("dev.mlxring.exec")
                        .log(System.Logger.Level.WARNING, "closing a token constraint failed", e);
            }
        }
    }

    /**
     * Continuous batching over this model ({@link ContinuousBatch}), with the prefix cache. Null
     * (serial only) when the model's layers rotate: mlx-lm batches sliding windows with its
     * {@code BatchRotatingKVCache}, which is not built here yet.
     */
    /**
     * Whether this model's caches can run in a batch as mlx-lm's {@code BatchGenerator} runs
     * them: caches that never rotate always can; sliding-window layers (keep 0) batch over
     * {@code BatchRotatingKvCache} when the model's attention takes per-row offsets (gemma3_text);
     * a {@code --max-kv-size} cache does not (its solo form keeps the first 4 positions, which
     * mlx-lm's batch cache drops, so a lone row would differ from a batched one), nor a rotating
     * model whose attention has no batch form yet (gpt_oss). Those are served serially.
     */
    static boolean batchesRotation(LanguageModel model, int maxKvSize) {
        KvCache[] caches = model.newCache(maxKvSize);
        try {
            boolean rotating = false;
            for (KvCache c : caches) {
                if (c instanceof RotatingKvCache r) {
                    if (r.keep() != 0) {
                        return false;
                    }
                    rotating = true;
                }
            }
            return !rotating || model.batchable();
        } finally {
            Arrays.stream(caches).forEach(KvCache::close);
        }
    }

    /**
     * Serves the named adapters of {@code cache} (null: none) in its batch ({@link
     * ContinuousBatch#serveAdapters}); requests naming one that run serially are refused. Takes
     * ownership: the cache is closed with the executor, before the model. Call before the engine
     * starts.
     */
    public ModelExecutor serveAdapters(AdapterCache cache) {
        this.adapters = cache;
        return this;
    }

    @Override
    public ExecutionBatch openBatch(int maxRows, int maxPrefillRows) {
        return openBatch(maxRows, maxPrefillRows, false);
    }

    @Override
    public ExecutionBatch openBatch(int maxRows, int maxPrefillRows, boolean shortPromptsFirst) {
        if (!batchesRotation(model, maxKvSize)) {
            return null;
        }
        ContinuousBatch batch = new ContinuousBatch(
                model,
                prefillStepSize,
                maxRows,
                maxPrefillRows,
                engineRng,
                prefixReuse,
                shortPromptsFirst,
                speculation);
        batch.serveAdapters(adapters);
        return batch;
    }

    /**
     * Waits for what this (the exec) thread's stream still has queued, such as the step a run
     * evaluated ahead and never read, then frees the model: a closed engine has no MLX work left
     * running, so a process may exit right after it (see ExitDrain in mlx-native).
     */
    @Override
    public void close() {
        try {
            Mlx.synchronize();
        } catch (MlxException e) {
            // The stream failed earlier; that error reached its request, and the queue was waited for.
        } finally {
            try {
                if (adapters != null) {
                    adapters.close();
                }
                model.close();
            } finally {
                if (speculation.serverDefault() instanceof Speculation.DraftModel d && d.model() != model) {
                    d.model().close();
                }
            }
        }
    }

    /** The plan's KV scheme: null (full precision) or a quantization whose groups fit this model's heads. */
    private KvQuantization kvQuantization(KvQuantization scheme) throws RequestException {
        if (scheme == null) {
            return null;
        }
        try {
            scheme.checkFits(model.headDim());
        } catch (IllegalArgumentException e) {
            throw new RequestException(ErrorType.UNSUPPORTED, e.getMessage());
        }
        return scheme;
    }

    /** Adapts a {@link GenerationRun} to the pipeline's step contract, reusing one result object. */
    private static final class Run implements ExecutionRun {
        private final PrefixedRun prefixed;
        private final GenerationRun run;
        private final boolean logprobs;
        private final int topN;
        private final StepResult result;

        Run(PrefixedRun prefixed, boolean logprobs, int topN) {
            this.prefixed = prefixed;
            this.run = prefixed.run();
            this.logprobs = logprobs;
            this.topN = topN;
            this.result = new StepResult(topN);
        }

        @Override
        public StepResult advance() {
            return switch (run.advance()) {
                case PREFILLED -> result.prefilled();
                case FINISHED ->
                    run.failure() != null
                            ? result.failed(run.failureType(), run.failure())
                            : result.finished(run.finishReason());
                case TOKEN -> {
                    result.token(run.token());
                    if (logprobs) {
                        TokenLogprobs lp = run.tokenLogprobs(topN);
                        result.logprob = lp.logprob();
                        result.topCount = lp.topIds().length;
                        System.arraycopy(lp.topIds(), 0, result.topIds, 0, result.topCount);
                        System.arraycopy(lp.topLogprobs(), 0, result.topLogprobs, 0, result.topCount);
                    }
                    yield result;
                }
            };
        }

        @Override
        public int promptTokens() {
            return prefixed.promptTokens();
        }

        @Override
        public int cachedTokens() {
            return prefixed.cachedTokens();
        }

        @Override
        public int completionTokens() {
            return run.completionTokens();
        }

        @Override
        public void close() {
            prefixed.close();
        }
    }
}
