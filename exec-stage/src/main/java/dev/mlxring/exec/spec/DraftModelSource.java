package dev.mlxring.exec.spec;

import dev.mlxring.exec.kv.ArraysCache;
import dev.mlxring.exec.kv.KvCache;
import dev.mlxring.exec.kv.QuantizedKvCache;
import dev.mlxring.exec.model.LanguageModel;
import dev.mlxring.exec.sample.SamplingRun;
import dev.mlxring.mlx.ArrayScope;
import dev.mlxring.mlx.Dtype;
import dev.mlxring.mlx.Mlx;
import dev.mlxring.mlx.MlxArray;
import dev.mlxring.pipeline.KvQuantization;
import java.util.Arrays;

/**
 * A draft model as {@code speculative_generate_step} runs it: its own layer caches, prefilled with
 * the prompt as the target's are; each proposal is {@code k} single-token {@code _step}s of the
 * draft (last-position logits, KV quantization, {@code logits - logsumexp(logits, axis=-1)}, then
 * the request's own sampler, so a seeded request's draft draws come out of the same key as the
 * target's, in mlx-lm's order); after verification its caches are trimmed by
 * {@code max(k - accepted - 1, 0)} and, when every proposed token was accepted, the last proposed
 * token is fed again with the target's next one (the draft never saw it). A draft with recurrent
 * layers keeps {@link ArraysCache#keepRollbackPoints() rollback points} over each proposal's steps,
 * so the trim restores their state after the last kept position.
 *
 * <p>The source owns its caches and borrows the model and the request's {@link SamplingRun}.
 */
public final class DraftModelSource implements DraftSource {
    private final LanguageModel draft;
    private final KvCache[] cache;
    private final SamplingRun sampling;
    private final int prefillStepSize;
    private final KvQuantization quantization;
    /** The tokens the draft has not seen yet: its next step's input. */
    private int[] pending;

    private int[] lastProposal = new int[0];

    /**
     * @param sampling the request's sampling (its sampler and key; greedy takes the argmax)
     * @param quantization the run's {@code kv_bits}, applied to the draft's caches too; null for none
     */
    public DraftModelSource(
            LanguageModel draft, SamplingRun sampling, int prefillStepSize, KvQuantization quantization) {
        this.draft = draft;
        this.sampling = sampling;
        this.prefillStepSize = prefillStepSize;
        this.quantization = quantization;
        this.cache = draft.newCache(0);
    }

    /** The draft's layer caches (owned here), e.g. to check how far they were rolled back. */
    public KvCache[] caches() {
        return cache.clone();
    }

    @Override
    public void start(int[] prompt) {
        ChunkedPrefill.run(draft, cache, prompt, prefillStepSize, quantization);
        pending = new int[] {prompt[prompt.length - 1]};
    }

    @Override
    public int[] propose(int maxTokens) {
        int[] out = new int[Math.max(0, maxTokens)];
        ArraysCache.keepRollbackPoints(cache);
        for (int i = 0; i < out.length; i++) {
            out[i] = step(pending);
            pending = new int[] {out[i]};
        }
        lastProposal = out;
        return out.clone();
    }

    /**
     * Whether {@link #proposeOnDevice} may stand in for {@link #propose}: every id the draft can
     * sample is inside the target's vocabulary of {@code targetVocabSize} tokens, so the proposal
     * never needs cutting before the target reads it.
     */
    public boolean proposesWithin(int targetVocabSize) {
        return draft.vocabSize() <= targetVocabSize;
    }

    /**
     * mlx-lm's {@code _draft_generate}: {@code maxTokens} (at least 1) draft steps, each fed the
     * previous step's sampled token without reading it on the host and submitted with
     * {@code async_eval}, so the draft's steps and the target's verification run as one queue
     * with no host round trip between them. Returns the {@code [maxTokens]} token ids, unevaluated,
     * in the caller's scope; the caller evaluates them with its verification and hands the ids to
     * {@link #proposed} before {@link #accepted}. The same draws and arithmetic as {@link #propose}.
     */
    public MlxArray proposeOnDevice(int maxTokens) {
        if (maxTokens < 1) {
            throw new IllegalArgumentException("a proposal on the device needs at least one token, got " + maxTokens);
        }
        MlxArray[] ys = new MlxArray[maxTokens];
        ArraysCache.keepRollbackPoints(cache);
        MlxArray y = Mlx.fromInts(pending, pending.length);
        for (int i = 0; i < maxTokens; i++) {
            y = Mlx.astype(stepOnDevice(y), Dtype.INT32);
            Mlx.asyncEval(y);
            ys[i] = y;
        }
        return maxTokens == 1 ? ys[0] : Mlx.concatenate(0, ys);
    }

    /** The ids a {@link #proposeOnDevice} call produced, read after the caller evaluated them. */
    public void proposed(int[] tokens) {
        lastProposal = tokens.clone();
    }

    /** One {@code _step(draft_model, draft_cache, y)}: returns the sampled token. */
    private int step(int[] input) {
        try (ArrayScope scope = ArrayScope.open()) {
            return stepOnDevice(Mlx.fromInts(input, input.length)).itemInt();
        }
    }

    /** One draft step over {@code input} ({@code [n]} ids) in the caller's scope: the {@code [1]} sampled id, unevaluated. */
    private MlxArray stepOnDevice(MlxArray input) {
        MlxArray logits = draft.forward(Mlx.expandDims(input, 0), cache);
        int length = logits.dim(1);
        int vocab = logits.dim(2);
        logits = Mlx.squeeze(
                Mlx.slice(logits, new int[] {0, length - 1, 0}, new int[] {1, length, vocab}, new int[] {1, 1, 1}), 0);
        if (quantization != null) {
            QuantizedKvCache.maybeQuantize(quantization, cache);
        }
        MlxArray logprobs = Mlx.subtract(logits, Mlx.logsumexp(draft.cpuKernels(), logits, -1, true));
        return sampling.sample(logprobs);
    }

    @Override
    public void accepted(int acceptedCount, int next) {
        int k = lastProposal.length;
        if (acceptedCount < 0 || acceptedCount > k) {
            throw new IllegalArgumentException("accepted " + acceptedCount + " of a " + k + "-token proposal");
        }
        int rollBack = Math.max(k - acceptedCount - 1, 0);
        for (KvCache c : cache) {
            c.trim(rollBack);
        }
        if (k == 0) {
            // Nothing was drafted: the tokens the draft has not seen yet stay pending, then next.
            pending = Arrays.copyOf(pending, pending.length + 1);
            pending[pending.length - 1] = next;
        } else if (acceptedCount == k) {
            pending = new int[] {lastProposal[k - 1], next};
        } else {
            pending = new int[] {next};
        }
        lastProposal = new int[0];
    }

    @Override
    public void close() {
        for (KvCache c : cache) {
            c.close();
        }
    }
}
