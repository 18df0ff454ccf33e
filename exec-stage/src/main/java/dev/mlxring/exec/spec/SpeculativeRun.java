package dev.mlxring.exec.spec;

import dev.mlxring.exec.generate.GenerationOptions;
import dev.mlxring.exec.generate.GenerationRun;
import dev.mlxring.exec.kv.ArraysCache;
import dev.mlxring.exec.kv.KvCache;
import dev.mlxring.exec.kv.QuantizedKvCache;
import dev.mlxring.exec.kv.RotatingKvCache;
import dev.mlxring.exec.model.LanguageModel;
import dev.mlxring.exec.sample.EngineRng;
import dev.mlxring.exec.sample.LogitsProcessors;
import dev.mlxring.exec.sample.SamplingRun;
import dev.mlxring.exec.sample.TokenLogprobs;
import dev.mlxring.mlx.ArrayScope;
import dev.mlxring.mlx.Mlx;
import dev.mlxring.mlx.MlxArray;
import dev.mlxring.pipeline.SamplingParams;
import java.util.Arrays;

/**
 * mlx-lm's {@code speculative_generate_step} for one row, as a resumable state machine: each
 * {@link #advance()} runs one unit — the prefill (the source's, then the target's
 * {@code _prefill}) or one verification round. A round asks the {@link DraftSource} for up to
 * {@code min(max_tokens - produced, num_draft_tokens)} tokens, runs the target once over the
 * pending token and the proposal ({@code m + 1} positions), turns the last {@code m + 1}
 * positions' logits into {@code logits - logsumexp(logits, axis=-1)} and samples all of them in
 * one sampler call (one key draw for the round), then accepts the longest prefix of the proposal
 * equal to the target's sampled tokens (mlx-lm's rule), commits it and the target's token after
 * it, and rolls the target's caches back by {@code m - accepted} and the source's as it needs.
 * Recurrent layers (a gated delta net's {@link ArraysCache}) keep
 * {@link ArraysCache#keepRollbackPoints() rollback points} over the verification, so their
 * rollback restores the conv and recurrence state after the last accepted position, which the
 * verification computed; the forward's operations are those of one without them.
 * Committed tokens are always the target's samples, so the output follows the target alone; the
 * proposal changes only how many positions one forward verifies.
 *
 * <p>The seams the batch uses: a round is "propose per row, one forward of {@code m + 1}
 * positions, {@link #acceptedPrefix accept per row}, trim each row's caches to its accepted
 * length". Refused here (fail closed): logits processors (penalties, {@code logit_bias}; mlx-lm
 * threads their history through draft and target in a way not reproduced yet), {@code --max-kv-size},
 * requests that could wrap a sliding-window layer's rotating cache (mlx-lm cannot trim it then:
 * prompt plus {@code max_tokens} must stay below the smallest window of the model and of a draft
 * model), and proposals of token ids outside the target's vocabulary (the proposal is cut before
 * the first).
 *
 * <p>Owns its caches, its sampling state and the source; {@link #close()} frees them. Exec thread.
 */
public final class SpeculativeRun implements AutoCloseable {
    /** What the last {@link #advance()} did. */
    public enum Event {
        PREFILLED,
        TOKENS,
        FINISHED
    }

    private final LanguageModel model;
    private final int[] prompt;
    private final GenerationOptions options;
    private final SamplingRun sampling;
    private final DraftSource source;
    private final int numDraftTokens;
    private final KvCache[] cache;
    /** Null: the row proposes every round it can. */
    private final AdaptiveStop adaptiveStop;
    /** With the adaptive stop, what picks each round's proposal length; null: always {@code numDraftTokens}. */
    private final ProposalLength proposalLength;
    /** A greedy prompt-lookup run's unverified proposal, scored while its rounds verify none; null otherwise. */
    private final ShadowRound shadow;

    private boolean prefilled;
    private boolean finished;
    private String finishReason;
    private int produced;
    private int proposedTotal;
    private int acceptedTotal;
    /** The target's input for the next round: the token it has not seen yet. */
    private int pending;

    private int[] roundTokens = new int[0];
    /** The round's {@code [m + 1, V]} logprobs; row i belongs to {@code roundTokens[i]}. */
    private MlxArray roundLogprobs;

    /**
     * @param engineRng where a request without a seed draws its key (may be null when greedy or seeded)
     * @throws IllegalArgumentException for an empty prompt, ids outside the vocabulary, logits
     *     processors, {@code --max-kv-size}, or a request longer than a sliding window of the model or the
     *     draft model
     */
    public SpeculativeRun(
            LanguageModel model,
            int[] prompt,
            GenerationOptions options,
            SamplingParams params,
            EngineRng engineRng,
            Speculation speculation) {
        this(model, prompt, options, params, engineRng, speculation, false);
    }

    /**
     * As above; with {@code adaptiveStop} and greedy {@code params}, each round's proposal length,
     * up to {@code num_draft_tokens}, is the one {@link ProposalLength} expects the most tokens per
     * unit of verification cost from, given the row's acceptance history (a round of more positions
     * costs more, so long proposals are kept for text the row is copying), and the row stops
     * proposing once its acceptance falls below {@link AdaptiveStop}'s threshold for a window (a
     * prompt-lookup row only pauses until its shadow rounds pass the bar to resume). Greedy only: a
     * greedy row's tokens are the target's argmax whatever was proposed, while a sampled row draws
     * one key per round, so stopping would change its tokens from mlx-lm's with the same k.
     */
    public SpeculativeRun(
            LanguageModel model,
            int[] prompt,
            GenerationOptions options,
            SamplingParams params,
            EngineRng engineRng,
            Speculation speculation,
            boolean adaptiveStop) {
        model.checkPrompt(prompt);
        String refusal = refusal(model, prompt.length, options, params, speculation);
        if (refusal != null) {
            throw new IllegalArgumentException(refusal);
        }
        GenerationRun.useGenerationStream();
        this.model = model;
        this.prompt = prompt.clone();
        this.options = options;
        this.numDraftTokens = speculation.numDraftTokens();
        KvCache[] c = GenerationRun.newPromptCache(model, options);
        SamplingRun s = null;
        try {
            s = SamplingRun.start(params, model.vocabSize(), engineRng);
            this.source = speculation.open(s, options);
        } catch (RuntimeException e) {
            Arrays.stream(c).forEach(KvCache::close);
            if (s != null) {
                s.close();
            }
            throw e;
        }
        this.sampling = s;
        this.cache = c;
        this.adaptiveStop = adaptiveStop && params.greedy() ? new AdaptiveStop(source.proposesFreely()) : null;
        this.proposalLength = this.adaptiveStop != null
                ? new ProposalLength(numDraftTokens, ForwardCosts.of(model.numerics()))
                : null;
        this.shadow = this.adaptiveStop != null && source.proposesFreely() ? new ShadowRound() : null;
    }

    /**
     * Why a request of {@code promptLength} tokens with these options and params cannot speculate,
     * or null when it can: logits processors (penalties, {@code logit_bias}), {@code --max-kv-size},
     * or a prompt plus {@code max_tokens} that reaches a sliding window of the model or of the draft
     * model (a rotating cache can be rolled back only until it wraps, mlx-lm's
     * {@code is_trimmable}: {@code offset < max_size}; a verification forward leaves at most
     * {@code prompt + max_tokens} positions in a cache). Builds no run; the caches it inspects are
     * freed.
     */
    public static String refusal(
            LanguageModel model,
            int promptLength,
            GenerationOptions options,
            SamplingParams params,
            Speculation speculation) {
        if (!LogitsProcessors.make(params).isEmpty()) {
            return "speculative decoding does not take logits processors yet "
                    + "(repetition, presence and frequency penalties, logit_bias)";
        }
        if (options.maxKvSize() > 0) {
            return "speculative decoding cannot be used with --max-kv-size (its rotating caches cannot be rolled back)";
        }
        String why = windowRefusal(model, model.newCache(0), promptLength, options.maxTokens(), "the model");
        if (why == null && speculation instanceof Speculation.DraftModel d) {
            why = windowRefusal(d.model(), d.model().newCache(0), promptLength, options.maxTokens(), "the draft model");
        }
        return why;
    }

    /**
     * {@link #refusal}, and for a row of the continuous batch also a model or draft model whose
     * layers keep recurrent state ({@link ArraysCache}): the batch's recurrent caches keep no
     * rollback points per row, so such a row decodes without speculation there.
     */
    public static String batchRefusal(
            LanguageModel model,
            int promptLength,
            GenerationOptions options,
            SamplingParams params,
            Speculation speculation) {
        String why = recurrentRefusal(model, "the model");
        if (why == null && speculation instanceof Speculation.DraftModel d) {
            why = recurrentRefusal(d.model(), "the draft model");
        }
        return why != null ? why : refusal(model, promptLength, options, params, speculation);
    }

    /**
     * Why {@code m} cannot verify proposals in the continuous batch: its layers keep recurrent
     * state ({@link ArraysCache}, a gated delta net's), which the batch does not roll back per row;
     * null when no layer does.
     */
    private static String recurrentRefusal(LanguageModel m, String which) {
        KvCache[] caches = m.newCache(0);
        try {
            if (Arrays.stream(caches).noneMatch(c -> c instanceof ArraysCache)) {
                return null;
            }
        } finally {
            Arrays.stream(caches).forEach(KvCache::close);
        }
        return "speculative decoding cannot be used with " + which + " (model_type '" + m.modelType()
                + "') in the continuous batch: its gated delta net layers keep recurrent state, which the batch"
                + " does not roll back per row";
    }

    private static String windowRefusal(
            LanguageModel m, KvCache[] caches, int promptLength, int maxTokens, String which) {
        int window = Integer.MAX_VALUE;
        for (KvCache k : caches) {
            if (k instanceof RotatingKvCache r) {
                window = Math.min(window, r.maxSize());
            }
            k.close();
        }
        if ((long) promptLength + maxTokens < window) {
            return null;
        }
        return "speculative decoding with " + which + " (model_type '" + m.modelType() + "') needs the prompt ("
                + promptLength + " tokens) and max_tokens (" + maxTokens + ") to stay below its sliding window of "
                + window + " positions: its rotating caches cannot be rolled back once they wrap";
    }

    /** Runs one unit; after {@link Event#FINISHED} it keeps answering FINISHED. */
    public Event advance() {
        if (finished) {
            return Event.FINISHED;
        }
        closeRound();
        if (!prefilled) {
            source.start(prompt);
            ChunkedPrefill.run(model, cache, prompt, options.prefillStepSize(), options.kvQuantization());
            pending = prompt[prompt.length - 1];
            prefilled = true;
            if (options.maxTokens() == 0) {
                return finish("length");
            }
            return Event.PREFILLED;
        }
        return verifyRound();
    }

    private Event verifyRound() {
        boolean proposing = adaptiveStop == null || !adaptiveStop.stopped();
        int budget = Math.min(
                options.maxTokens() - produced, proposalLength != null ? proposalLength.next() : numDraftTokens);
        if (proposalLength != null) {
            // As a lone batch row: what a round of one row verifies is worth its positions (RoundWidth).
            budget = proposalLength.aloneWidth(Math.max(budget, 0));
        }
        boolean onDevice =
                proposing && budget > 0 && source instanceof DraftModelSource d && d.proposesWithin(model.vocabSize());
        if (shadow != null && proposing && budget > 0) {
            shadow.drop();
        }
        int[] proposal = !proposing ? new int[0] : onDevice ? null : withinVocabulary(source.propose(budget));
        if (proposal != null && proposalLength != null && proposal.length > 0) {
            // A lookup may find fewer tokens than asked for; fewer may be worth fewer still.
            proposal = Arrays.copyOf(proposal, proposalLength.aloneWidth(proposal.length));
        }
        int m = proposal == null ? budget : proposal.length;
        int[] sampled;
        try (ArrayScope scope = ArrayScope.open()) {
            MlxArray input;
            MlxArray drafted = null;
            if (onDevice) {
                // mlx-lm's round: the draft's tokens stay on the device and feed the verification
                // directly; one eval reads the draft's and the target's tokens together.
                drafted = ((DraftModelSource) source).proposeOnDevice(budget);
                input = Mlx.concatenate(0, Mlx.fromInts(new int[] {pending}, 1), drafted);
            } else {
                int[] ids = new int[m + 1];
                ids[0] = pending;
                System.arraycopy(proposal, 0, ids, 1, m);
                input = Mlx.fromInts(ids, ids.length);
            }
            ArraysCache.keepRollbackPoints(cache);
            MlxArray logits = model.forward(Mlx.expandDims(input, 0), cache);
            int length = logits.dim(1);
            int vocab = logits.dim(2);
            logits = Mlx.squeeze(
                    Mlx.slice(
                            logits, new int[] {0, length - (m + 1), 0}, new int[] {1, length, vocab}, new int[] {1, 1, 1
                            }),
                    0);
            if (options.kvQuantization() != null) {
                QuantizedKvCache.maybeQuantize(options.kvQuantization(), cache);
            }
            MlxArray logprobs = Mlx.subtract(logits, Mlx.logsumexp(model.cpuKernels(), logits, -1, true));
            MlxArray tokens = sampling.sample(logprobs);
            if (drafted != null) {
                Mlx.eval(tokens, logprobs, drafted);
                proposal = drafted.toIntArray();
                ((DraftModelSource) source).proposed(proposal);
            } else {
                Mlx.eval(tokens, logprobs);
            }
            sampled = tokens.toIntArray();
            roundLogprobs = logprobs.detach();
        }
        int accepted = acceptedPrefix(proposal, sampled);
        proposedTotal += m;
        acceptedTotal += accepted;
        for (KvCache c : cache) {
            c.trim(m - accepted);
        }
        if (proposing || adaptiveStop.resumes()) {
            // A row stopped for good (a draft model's) never proposes again: its source is left
            // where it stopped. A paused one follows its tokens, for its shadow rounds.
            source.accepted(accepted, sampled[accepted]);
            if (adaptiveStop != null && m > 0) {
                adaptiveStop.record(m, accepted);
                proposalLength.record(m, accepted);
            }
            if (shadow != null && m == 0) {
                // as a lone batch row's plain step: the shadow round scores the token
                shadow.committed(sampled[0], source, proposalLength, adaptiveStop);
            }
        }
        pending = sampled[accepted];
        return commit(Arrays.copyOf(sampled, accepted + 1));
    }

    /**
     * mlx-lm's acceptance rule: the number of leading proposed tokens equal to the target's
     * sampled token at the same position ({@code sampled} holds one more token than the proposal).
     */
    public static int acceptedPrefix(int[] proposal, int[] sampled) {
        int n = 0;
        while (n < proposal.length && proposal[n] == sampled[n]) {
            n++;
        }
        return n;
    }

    private int[] withinVocabulary(int[] proposal) {
        int vocab = model.vocabSize();
        for (int i = 0; i < proposal.length; i++) {
            if (proposal[i] < 0 || proposal[i] >= vocab) {
                return Arrays.copyOf(proposal, i);
            }
        }
        return proposal;
    }

    /** Commits the round's tokens in order, ending at a stop token (not emitted) or at max_tokens. */
    private Event commit(int[] tokens) {
        int kept = 0;
        String reason = null;
        for (int t : tokens) {
            if (options.isStop(t)) {
                reason = "stop";
                break;
            }
            kept++;
            produced++;
            if (produced == options.maxTokens()) {
                reason = "length";
                break;
            }
        }
        roundTokens = Arrays.copyOf(tokens, kept);
        if (reason != null) {
            finished = true;
            finishReason = reason;
        }
        return kept > 0 ? Event.TOKENS : Event.FINISHED;
    }

    private Event finish(String reason) {
        finished = true;
        finishReason = reason;
        return Event.FINISHED;
    }

    private void closeRound() {
        roundTokens = new int[0];
        if (roundLogprobs != null) {
            roundLogprobs.close();
            roundLogprobs = null;
        }
    }

    /**
     * The tokens the last {@link Event#TOKENS} committed, in order (the round may also have
     * finished the run: {@link #isFinished()}).
     */
    public int[] roundTokens() {
        return roundTokens.clone();
    }

    /** The {@code [V]} logprobs of the round's token {@code i}, in the caller's scope; valid until the next advance. */
    public MlxArray roundLogprobs(int i) {
        if (i < 0 || i >= roundTokens.length) {
            throw new IndexOutOfBoundsException("token " + i + " of a round of " + roundTokens.length);
        }
        int vocab = roundLogprobs.dim(1);
        return Mlx.squeeze(Mlx.slice(roundLogprobs, new int[] {i, 0}, new int[] {i + 1, vocab}, new int[] {1, 1}), 0);
    }

    /** The round's token {@code i}'s logprob and its {@code topN} alternatives. */
    public TokenLogprobs roundTokenLogprobs(int i, int topN) {
        try (ArrayScope scope = ArrayScope.open()) {
            return TokenLogprobs.of(roundLogprobs(i), roundTokens[i], topN);
        }
    }

    public boolean isFinished() {
        return finished;
    }

    /** {@code stop} or {@code length}; null until finished. */
    public String finishReason() {
        return finishReason;
    }

    public int completionTokens() {
        return produced;
    }

    public int promptTokens() {
        return prompt.length;
    }

    /** Proposed tokens the target verified, over the run. */
    public int proposedTokens() {
        return proposedTotal;
    }

    /** Proposed tokens the target accepted, over the run. */
    public int acceptedTokens() {
        return acceptedTotal;
    }

    /** How many times the adaptive stop has stopped (for prompt lookup: paused) this row's proposals. */
    public int proposalStops() {
        return adaptiveStop == null ? 0 : adaptiveStop.stops();
    }

    /** The target's layer caches (owned here; valid until {@link #close()}). */
    public KvCache[] caches() {
        return cache.clone();
    }

    @Override
    public void close() {
        closeRound();
        for (KvCache c : cache) {
            c.close();
        }
        try {
            source.close();
        } finally {
            sampling.close();
        }
    }
}
