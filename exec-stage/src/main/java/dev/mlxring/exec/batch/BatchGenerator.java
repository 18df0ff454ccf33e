package dev.mlxring.exec.batch;

import dev.mlxring.exec.generate.GenerationOptions;
import dev.mlxring.exec.generate.GenerationRun;
import dev.mlxring.exec.kv.KvCache;
import dev.mlxring.exec.model.LanguageModel;
import dev.mlxring.exec.sample.EngineRng;
import dev.mlxring.exec.sample.SamplingRun;
import dev.mlxring.exec.sample.TokenMask;
import dev.mlxring.exec.spec.DraftSource;
import dev.mlxring.exec.spec.ForwardCosts;
import dev.mlxring.exec.spec.Speculation;
import dev.mlxring.exec.spec.SpeculativeRun;
import dev.mlxring.mlx.ArrayScope;
import dev.mlxring.mlx.Mlx;
import dev.mlxring.pipeline.KvQuantization;
import java.util.ArrayDeque;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.List;

/**
 * Continuous batching, mechanics only: mlx-lm's {@code BatchGenerator} step for step, so every
 * row's tokens and logprobs are bit-equal to it for the same arrival script. {@link #insert}
 * queues a row; each {@link #next()} is one bounded unit: one decode step over every generating
 * row, then admission of queued rows into the prompt batch (at most {@code prefillBatchSize}
 * prefilling, {@code completionBatchSize} generating or prefilling in all), rows whose prompt is
 * down to its last token split off into their own first step and joined to the generation batch,
 * then one prefill chunk ({@code prefillStepSize} tokens at most, never crossing one of the row's
 * segment boundaries: {@code insert_segments}) of every prefilling row. So a long prompt joins in
 * chunks between decode steps of the running rows, whose stall per step is one chunk's forward.
 * Rows whose chunk ended a segment are reported ({@link #segmentsEnded()}) for the caller to
 * snapshot their caches there, as mlx_lm.server does.
 *
 * <p>Two departures from mlx-lm's unit, each a schedule of the same forwards (every prefill chunk and
 * decode step is the forward mlx-lm runs for the same rows and caches), so the contract holds at
 * the same batch composition:
 * <ul>
 *   <li>{@link #next(boolean) next(false)} is a decode-only unit: the generating rows' step and
 *       nothing else (no admission, no split, no chunk). The caller's policy uses it to give
 *       running rows time between the chunks of a long prompt.</li>
 *   <li>With {@code shortPromptsFirst}, a long prompt does not make short ones wait: at the start
 *       of a unit, when the prompt batch has run a chunk since it became current, one of its rows
 *       still has more than one chunk to read, and the row at the head of the queue needs at most
 *       one ({@code prompt[:-1]} within {@code prefillStepSize} tokens), the prompt batch is
 *       <em>parked</em> (kept whole, caches and all) and the queue's leading short rows are
 *       admitted into a fresh prompt batch of their own, unpadded by the long chunk. While a batch
 *       is parked no other row is admitted; at the start of the first unit that finds the fresh
 *       batch empty (its rows moved to generation or left) the parked batch resumes, and it reads
 *       at least one chunk before it can be parked again, so a stream of short prompts slows a
 *       long one to every other chunk at worst, never stops it.</li>
 * </ul>
 *
 * <p>A row that is alone from the start keeps the model's solo caches and runs the serial graph
 * (bit-equal to {@link GenerationRun}); its caches are merged into batch caches only when a second
 * row joins its group (see {@link RowCaches}).
 *
 * <p>Scheduling policy (who is inserted when, fairness, caps chosen per server) is the caller's;
 * this class decides nothing beyond mlx-lm's mechanics. Owns its rows' caches, sampling runs and
 * pending arrays; {@link #close()} frees them. Exec thread only.
 */
public final class BatchGenerator implements AutoCloseable {
    /** Told about every row that finishes (EOS or length) with the caches it leaves behind. */
    @FunctionalInterface
    public interface FinishedRows {
        /**
         * @param cachedSequence the ids whose KV {@code caches} hold (the row's prompt, then every
         *     generated token, the last one included)
         * @param caches the row's caches, valid during the call only (do not keep or close them)
         */
        void finished(int uid, int[] cachedSequence, KvCache[] caches);
    }

    /** Told about every speculating row and its verification rounds. */
    @FunctionalInterface
    public interface SpeculatedRows {
        /** Row {@code uid}'s round verified {@code proposed} proposed tokens and accepted {@code accepted}. */
        void verified(int uid, int proposed, int accepted);

        /**
         * Row {@code uid} was inserted speculating (before any round): it reports speculation even
         * where the batch verifies none of its proposals (too full for them to pay).
         */
        default void speculating(int uid) {}
    }

    /** Gets a prefilling row's caches at a segment end ({@link #withSegmentCaches}). */
    @FunctionalInterface
    public interface SegmentCaches {
        /**
         * @param fed the prompt ids the row has fed so far (the caches hold its history, then these)
         * @param caches the row's caches, valid during the call only (do not keep or close them)
         */
        void accept(int[] fed, KvCache[] caches);
    }

    private final LanguageModel model;
    private final int prefillStepSize;
    /** Rows whose last chunk ended a segment, in the last {@link #next()} ({@code end_of_segment}). */
    private final List<Integer> segmentsEnded = new ArrayList<>();
    /** Rows that read a prompt chunk in the last {@link #next()}. */
    private final List<Integer> chunksRead = new ArrayList<>();

    private final int prefillBatchSize;
    private final int completionBatchSize;
    private final EngineRng engineRng;
    private final int maxKvSize;
    private final ArrayDeque<Row> unprocessed = new ArrayDeque<>();
    private final boolean shortPromptsFirst;
    /** {@link #holdFirstTokenSteps}. */
    private boolean holdFirstTokenSteps = true;
    /** The prompt batch that reads its next chunk in the next full unit. */
    private PromptBatch promptBatch;
    /** A prompt batch set aside for short prompts ({@code shortPromptsFirst}); null when none. */
    private PromptBatch parked;
    /** Chunks {@link #promptBatch} has read since it became the current one. */
    private int chunksSinceCurrent;

    private GenerationBatch generationBatch;
    private int uidCount;
    private FinishedRows finishedRows;
    private long generationSteps;

    /**
     * @param prefillStepSize the most prompt tokens of one row per prefill chunk
     * @param prefillBatchSize the most rows prefilling at once (mlx-lm's {@code prefill_batch_size})
     * @param completionBatchSize the most rows in flight (mlx-lm raises it to at least {@code prefillBatchSize})
     * @param engineRng where rows without a seed draw their key (may be null when every row is greedy or seeded)
     */
    public BatchGenerator(
            LanguageModel model,
            int prefillStepSize,
            int prefillBatchSize,
            int completionBatchSize,
            EngineRng engineRng) {
        this(model, prefillStepSize, prefillBatchSize, completionBatchSize, engineRng, 0);
    }

    /**
     * As mlx-lm's {@code BatchGenerator(..., max_kv_size=N)}: every row's caches are
     * {@code make_prompt_cache(model, max_kv_size)}, so a model without its own cache layout
     * rotates every layer over {@code maxKvSize} positions (batched as mlx-lm's
     * {@code BatchRotatingKVCache}, which has no kept prefix).
     *
     * @param maxKvSize 0 for none
     */
    public BatchGenerator(
            LanguageModel model,
            int prefillStepSize,
            int prefillBatchSize,
            int completionBatchSize,
            EngineRng engineRng,
            int maxKvSize) {
        this(model, prefillStepSize, prefillBatchSize, completionBatchSize, engineRng, maxKvSize, false);
    }

    /**
     * @param shortPromptsFirst park a long prompt's batch for rows whose prompts fit in one chunk
     *     (see the class comment); false is mlx-lm's admission
     */
    public BatchGenerator(
            LanguageModel model,
            int prefillStepSize,
            int prefillBatchSize,
            int completionBatchSize,
            EngineRng engineRng,
            int maxKvSize,
            boolean shortPromptsFirst) {
        if (maxKvSize < 0) {
            throw new IllegalArgumentException("maxKvSize must be >= 0, got " + maxKvSize);
        }
        if (prefillStepSize <= 0) {
            throw new IllegalArgumentException("prefillStepSize must be > 0, got " + prefillStepSize);
        }
        if (prefillBatchSize <= 0) {
            throw new IllegalArgumentException("prefillBatchSize must be > 0, got " + prefillBatchSize);
        }
        if (completionBatchSize <= 0) {
            throw new IllegalArgumentException("completionBatchSize must be > 0, got " + completionBatchSize);
        }
        GenerationRun.useGenerationStream();
        this.model = model;
        this.prefillStepSize = prefillStepSize;
        // A model that cannot batch (dynamic-NTK rope) runs its rows one at a time: every row is
        // then a lone row on solo caches, the serial graph.
        this.prefillBatchSize = model.batchable() ? prefillBatchSize : 1;
        this.completionBatchSize = model.batchable() ? Math.max(completionBatchSize, prefillBatchSize) : 1;
        this.engineRng = engineRng;
        this.shortPromptsFirst = shortPromptsFirst;
        this.maxKvSize = maxKvSize;
        this.promptBatch = new PromptBatch(model, maxKvSize);
        this.generationBatch = new GenerationBatch(model);
    }

    /**
     * Queues one row; returns its uid (0, 1, … in insertion order, as mlx-lm's).
     *
     * @throws IllegalArgumentException for an empty prompt, ids outside the vocabulary,
     *     {@code maxTokens <= 0} or sampling settings the model cannot run
     */
    public int insert(BatchRequest request) {
        return insert(request, null, new int[0]);
    }

    /**
     * Queues one row that continues from {@code history}: solo caches that already hold the
     * positions of {@code historyTokens}, the ids before {@code request.prompt()} (a restored
     * prefix; mlx-lm's {@code insert(..., caches=[cache], all_tokens=[ids])}: the ids are the
     * row's logits processors' context too). The generator owns the caches and the request's
     * constraint from here on, also when this throws.
     */
    public int insert(BatchRequest request, KvCache[] history, int[] historyTokens) {
        try {
            return insertRow(request, history, historyTokens);
        } catch (RuntimeException e) {
            if (request.constraint() != null) {
                request.constraint().close();
            }
            if (request.adapter() != null) {
                request.adapter().close();
            }
            if (history != null) {
                for (KvCache c : history) {
                    c.close();
                }
            }
            throw e;
        }
    }

    /**
     * Reports every row that finishes from now on to {@code listener} (e.g. to publish its caches
     * to the prefix cache), on the exec thread inside {@link #next()}. Call before inserting rows.
     */
    public void onFinished(FinishedRows listener) {
        this.finishedRows = listener;
        generationBatch.finished = listener;
    }

    /** Reports every speculating row's verification rounds to {@code listener}, on the exec thread inside {@link #next()}. */
    public void onSpeculated(SpeculatedRows listener) {
        generationBatch.speculated = listener;
    }

    private int insertRow(BatchRequest request, KvCache[] history, int[] historyTokens) {
        int[] prompt = request.prompt();
        model.checkPrompt(prompt);
        checkKvQuantization(request, history);
        int vocab = model.vocabSize();
        if (request.maxTokens() <= 0) {
            throw new IllegalArgumentException("max_tokens must be > 0, got " + request.maxTokens());
        }
        SamplingRun sampling = SamplingRun.start(request.sampling(), vocab, engineRng);
        if (historyTokens.length > 0 && sampling.hasProcessors()) {
            try (ArrayScope scope = ArrayScope.open()) {
                sampling.observe(Mlx.fromInts(historyTokens, historyTokens.length), historyTokens.length);
            }
        }
        RowSpeculation spec;
        try {
            spec = speculation(request, historyTokens, sampling);
        } catch (RuntimeException e) {
            sampling.close();
            throw e;
        }
        TokenMask mask = request.constraint() == null ? null : new TokenMask(request.constraint(), vocab);
        int uid = uidCount++;
        if (spec != null && generationBatch.speculated != null) {
            generationBatch.speculated.speculating(uid);
        }
        unprocessed.add(new Row(
                uid,
                prompt,
                request.segmentLengths(),
                request.maxTokens(),
                request.stopTokenIds(),
                sampling,
                mask,
                history,
                finishedRows != null,
                spec,
                request.kvQuantization(),
                request.adapter()));
        return uid;
    }

    /**
     * Refuses a quantized row this generator cannot run: a model whose attention has no batch
     * form over quantized caches ({@link LanguageModel#batchesQuantizedKv()}; a model that runs
     * rows one at a time keeps solo caches and needs none), a model or cache layout that cannot
     * quantize at all ({@link GenerationRun#kvQuantizationRefusal}), groups that do not divide the
     * head dimension, speculation (quantized rows run it serially), a restored history (the
     * prefix cache's full-precision namespace), and a scheme other than the rows' in flight: one
     * group's caches share one group size and width, so rows of another scheme wait until these
     * have left.
     */
    private void checkKvQuantization(BatchRequest request, KvCache[] history) {
        KvQuantization q = request.kvQuantization();
        if (q == null) {
            if (schemeInFlight() != null) {
                throw new IllegalArgumentException(
                        "a full-precision row cannot join rows with KV scheme " + schemeInFlight());
            }
            return;
        }
        if (model.batchable() && !model.batchesQuantizedKv()) {
            throw new IllegalArgumentException(
                    "model_type '" + model.modelType() + "' cannot batch quantized KV caches (--kv-bits)");
        }
        String refusal = GenerationRun.kvQuantizationRefusal(model, maxKvSize);
        if (refusal != null) {
            throw new IllegalArgumentException(refusal);
        }
        q.checkFits(model.headDim());
        if (history != null) {
            throw new IllegalArgumentException("a quantized KV row cannot start from a restored prefix in a batch");
        }
        if (request.speculation() != null) {
            throw new IllegalArgumentException(
                    "speculative decoding over quantized KV caches runs serially, not in a batch");
        }
        KvQuantization running = schemeInFlight();
        boolean empty = unprocessed.isEmpty()
                && promptBatch.size() == 0
                && (parked == null || parked.size() == 0)
                && generationBatch.size() == 0;
        if (!empty && !q.equals(running)) {
            throw new IllegalArgumentException("a row with KV scheme " + q + " cannot join rows with KV scheme "
                    + (running == null ? "full precision" : running));
        }
    }

    /** The KV scheme of the rows in flight (queued, prefilling, parked or generating); null for full precision or none. */
    private KvQuantization schemeInFlight() {
        for (Row r : unprocessed) {
            return r.kvQuantization;
        }
        for (Row r : promptBatch.rows) {
            return r.kvQuantization;
        }
        if (parked != null) {
            for (Row r : parked.rows) {
                return r.kvQuantization;
            }
        }
        return generationBatch.scheme();
    }

    /**
     * The row's speculation, its source started with the whole prompt (the restored history, then
     * the rest); null when the request asks for none or cannot speculate (a token constraint, or
     * {@link SpeculativeRun#batchRefusal}: logits processors, a sliding window the request could
     * wrap, a model or draft model with recurrent layers),
     * which then decodes one position per step as the serial executor runs it without speculation.
     * A greedy row adapts its proposal length and may stop proposing, as the serial executor's.
     */
    private RowSpeculation speculation(BatchRequest request, int[] historyTokens, SamplingRun sampling) {
        Speculation how = request.speculation();
        if (how == null || request.constraint() != null) {
            return null;
        }
        int[] whole = Arrays.copyOf(historyTokens, historyTokens.length + request.prompt().length);
        System.arraycopy(request.prompt(), 0, whole, historyTokens.length, request.prompt().length);
        GenerationOptions options = new GenerationOptions(
                request.maxTokens(), prefillStepSize, request.stopTokenIds(), false, null, maxKvSize);
        if (SpeculativeRun.batchRefusal(model, whole.length, options, request.sampling(), how) != null) {
            return null;
        }
        DraftSource source = how.open(sampling, options);
        try {
            source.start(whole);
        } catch (RuntimeException e) {
            source.close();
            throw e;
        }
        return new RowSpeculation(
                source, how.numDraftTokens(), request.sampling().greedy(), ForwardCosts.of(model.numerics()));
    }

    /**
     * {@code remove([uid])}: the row leaves wherever it is — the queue, the prompt batch or the
     * generation batch (filtered as when a row finishes) — and its sampling run closes; the other
     * rows continue exactly as mlx-lm's do after the same removal. Between units only.
     *
     * @return false when no such row is in flight (already finished or never inserted)
     */
    public boolean remove(int uid) {
        try (ArrayScope scope = ArrayScope.open()) {
            for (var it = unprocessed.iterator(); it.hasNext(); ) {
                Row r = it.next();
                if (r.uid == uid) {
                    it.remove();
                    r.closeRun();
                    r.closeHistory();
                    return true;
                }
            }
            int i = indexOf(promptBatch.rows, uid);
            if (i >= 0) {
                Row r = promptBatch.rows.get(i);
                promptBatch.filter(without(promptBatch.size(), i));
                r.closeRun();
                return true;
            }
            if (parked != null && (i = indexOf(parked.rows, uid)) >= 0) {
                Row r = parked.rows.get(i);
                parked.filter(without(parked.size(), i));
                r.closeRun();
                return true;
            }
            i = indexOf(generationBatch.rows, uid);
            if (i >= 0) {
                Row r = generationBatch.rows.get(i);
                generationBatch.filter(without(generationBatch.size(), i));
                r.closeRun();
                return true;
            }
            return false;
        }
    }

    private static int indexOf(List<Row> rows, int uid) {
        for (int i = 0; i < rows.size(); i++) {
            if (rows.get(i).uid == uid) {
                return i;
            }
        }
        return -1;
    }

    /** {@code [0, n)} without {@code dropped}, ascending. */
    private static int[] without(int n, int dropped) {
        int[] keep = new int[n - 1];
        for (int i = 0, k = 0; i < n; i++) {
            if (i != dropped) {
                keep[k++] = i;
            }
        }
        return keep;
    }

    /** True when nothing is queued, prefilling or generating. */
    public boolean idle() {
        return unprocessed.isEmpty() && prefilling() == 0 && generationBatch.size() == 0;
    }

    /**
     * True when a full unit ({@link #next()}) would admit queued rows or read prompt tokens: rows
     * are queued, or a prefilling or parked row has prompt tokens left to read. A row whose prompt
     * is read but for its last token is not prefill: it waits only for its first step
     * ({@link #startPending()}).
     */
    public boolean prefillPending() {
        return !unprocessed.isEmpty() || tokensLeft(promptBatch) || parked != null && tokensLeft(parked);
    }

    /**
     * True when rows of the current prompt batch have read their prompts but for the last token:
     * the next full unit splits them off into their first step (their first token), which a
     * decode-only unit would put off.
     */
    public boolean startPending() {
        for (Row r : promptBatch.rows) {
            if (r.remainingPrefill() == 0) {
                return true;
            }
        }
        return false;
    }

    private static boolean tokensLeft(PromptBatch batch) {
        for (Row r : batch.rows) {
            if (r.remainingPrefill() > 0) {
                return true;
            }
        }
        return false;
    }

    /** Rows whose prompt batch is parked for short prompts (for tests and diagnostics). */
    public int parked() {
        return parked == null ? 0 : parked.size();
    }

    /** Rows generating now. */
    public int generating() {
        return generationBatch.size();
    }

    /**
     * True while the generating rows run on solo caches: the B=1 fast path (one row that has not
     * shared its batch since it was inserted; the serial graph). For tests and diagnostics.
     */
    public boolean soloGeneration() {
        return generationBatch.solo();
    }

    /** Rows prefilling now, parked ones included. */
    public int prefilling() {
        return promptBatch.size() + parked();
    }

    /**
     * One unit of work ({@code BatchGenerator._next}); returns the tokens the generating rows
     * produced in it (empty while only prefill ran). Their logprobs stay valid until the next call.
     */
    public List<BatchToken> next() {
        return next(true);
    }

    /**
     * One unit: with {@code prefill} the full unit of {@link #next()}; without, a decode-only
     * unit (the generating rows' step; queued and prefilling rows wait). Their logprobs stay
     * valid until the next call.
     */
    public List<BatchToken> next(boolean prefill) {
        segmentsEnded.clear();
        chunksRead.clear();
        generationBatch.submitHeld();
        // Cache merges, filters and extends build small graphs outside the step's own scopes;
        // their handles are freed when the unit ends (the caches keep what they detached).
        try (ArrayScope scope = ArrayScope.open()) {
            return prefill ? nextUnit() : decodeStep();
        }
    }

    /**
     * The rows (uids) whose prefill chunk in the last {@link #next()} ended one of their prompt
     * segments: mlx-lm's prompt responses with {@code end_of_segment} (never the last prompt
     * token, which is its own segment and goes to the first generation step). They are still
     * prefilling, so {@link #withSegmentCaches} reaches their caches until the next call.
     */
    public List<Integer> segmentsEnded() {
        return List.copyOf(segmentsEnded);
    }

    /**
     * The rows (uids) that read a prompt chunk in the last {@link #next()}, in prompt batch
     * order. They are still prefilling, so {@link #prefilledTokens} and
     * {@link #withSegmentCaches} reach them until the next call.
     */
    public List<Integer> chunksRead() {
        return List.copyOf(chunksRead);
    }

    /** The prompt tokens a prefilling row has fed so far (after its restored prefix); -1 when it is not prefilling. */
    public int prefilledTokens(int uid) {
        int i = indexOf(promptBatch.rows, uid);
        return i < 0 ? -1 : promptBatch.rows.get(i).prefilled;
    }

    /**
     * {@code extract_cache([uid])} of a prefilling row: runs {@code use} on its caches (a solo
     * row's own, or each batch layer's {@code extract(row)}, freed afterwards).
     *
     * @return false when the row is not prefilling
     */
    public boolean withSegmentCaches(int uid, SegmentCaches use) {
        int i = indexOf(promptBatch.rows, uid);
        if (i < 0) {
            return false;
        }
        Row r = promptBatch.rows.get(i);
        int[] fed = Arrays.copyOf(r.prompt, r.prefilled);
        try (ArrayScope scope = ArrayScope.open()) {
            promptBatch.withRow(i, c -> use.accept(fed, c));
        }
        return true;
    }

    /** mlx-lm's decode step with its buffer-cache clearing every 512 steps. */
    private List<BatchToken> decodeStep() {
        if (UnitPhases.ON) {
            UnitPhases.mark();
        }
        if (generationBatch.size() == 0) {
            return List.of();
        }
        List<BatchToken> tokens = generationBatch.next(holdFirstTokenSteps);
        generationSteps++;
        if (generationSteps % 512 == 0) {
            Mlx.clearCache();
        }
        if (UnitPhases.ON) {
            UnitPhases.lap(UnitPhases.STEP);
        }
        return tokens;
    }

    /**
     * {@code shortPromptsFirst} at the start of a unit: resumes a parked batch once the short
     * rows' batch is empty, or parks the current batch for the queue's leading short rows.
     * Returns how many queued rows this unit may admit ({@code Integer.MAX_VALUE}: mlx-lm's limits only).
     */
    private int arrangePromptBatches() {
        if (parked != null && parked.size() == 0) {
            parked.close(); // every parked row was removed
            parked = null;
        }
        if (parked != null && promptBatch.size() == 0) {
            promptBatch.close();
            promptBatch = parked;
            parked = null;
            chunksSinceCurrent = 0;
        }
        if (parked != null) {
            return 0;
        }
        if (promptBatch.size() == 0
                || chunksSinceCurrent == 0
                || unprocessed.isEmpty()
                || generationBatch.size() >= completionBatchSize) {
            return Integer.MAX_VALUE;
        }
        boolean longRow = false;
        for (Row r : promptBatch.rows) {
            longRow |= r.remainingPrefill() > prefillStepSize;
        }
        int shortRows = 0;
        for (Row r : unprocessed) {
            if (r.remainingPrefill() > prefillStepSize) {
                break;
            }
            shortRows++;
        }
        if (!longRow || shortRows == 0) {
            return Integer.MAX_VALUE;
        }
        parked = promptBatch;
        promptBatch = new PromptBatch(model, maxKvSize);
        chunksSinceCurrent = 0;
        return shortRows;
    }

    private List<BatchToken> nextUnit() {
        int admissible = shortPromptsFirst ? arrangePromptBatches() : Integer.MAX_VALUE;
        List<BatchToken> tokens = decodeStep();
        if (generationBatch.size() >= completionBatchSize) {
            return tokens;
        }
        if (!unprocessed.isEmpty() || promptBatch.size() > 0) {
            // This unit goes on (admission, joins, a chunk): the step runs ahead of that work.
            generationBatch.submitHeld();
        }
        int n = Math.min(
                Math.min(prefillBatchSize - promptBatch.size(), completionBatchSize - generationBatch.size()),
                Math.min(unprocessed.size(), admissible));
        if (n > 0) {
            List<Row> joining = new ArrayList<>(n);
            for (int i = 0; i < n; i++) {
                joining.add(unprocessed.poll());
            }
            promptBatch.extend(joining);
        }
        if (UnitPhases.ON) {
            UnitPhases.lap(UnitPhases.ADMIT);
        }
        int[] split = new int[promptBatch.size()];
        int s = 0;
        for (int i = 0; i < promptBatch.size(); i++) {
            if (promptBatch.rows.get(i).remainingPrefill() == 0) {
                split[s++] = i;
            }
        }
        if (s > 0) {
            PromptBatch.Split leaving = promptBatch.split(Arrays.copyOf(split, s));
            int[] last = new int[s];
            for (int i = 0; i < s; i++) {
                Row r = leaving.rows().get(i);
                last[i] = r.prompt[r.prompt.length - 1];
            }
            generationBatch.extend(new GenerationBatch(model, leaving.rows(), leaving.caches(), last));
        }
        if (UnitPhases.ON) {
            UnitPhases.lap(UnitPhases.JOIN);
        }
        List<int[]> chunks = new ArrayList<>(promptBatch.size());
        for (Row r : promptBatch.rows) {
            int count = r.nextChunk(prefillStepSize);
            chunks.add(Arrays.copyOfRange(r.prompt, r.prefilled, r.prefilled + count));
        }
        promptBatch.prompt(chunks);
        if (UnitPhases.ON) {
            UnitPhases.lap(UnitPhases.PROMPT);
        }
        if (!chunks.isEmpty()) {
            chunksSinceCurrent++;
        }
        for (Row r : promptBatch.rows) {
            if (!chunks.isEmpty()) {
                chunksRead.add(r.uid);
            }
            if (r.segmentEnded) {
                segmentsEnded.add(r.uid);
            }
        }
        return tokens;
    }

    /**
     * Whether a decode step that reads some row's first token holds the next forward back for
     * {@link #submitHeldStep} (on by default). Off where every use of the generator must submit
     * alike on other processes too (a sharded group's ranks, whose forwards meet in collectives:
     * a removal on rank 0 would otherwise submit a forward its followers still hold).
     */
    public void holdFirstTokenSteps(boolean on) {
        generationBatch.submitHeld();
        this.holdFirstTokenSteps = on;
    }

    /**
     * Submits the forward the last {@link #next()} built and held back because it read some row's
     * first token (see {@code GenerationBatch}'s step): the caller hands that unit's tokens out
     * first, then calls this. Nothing when no forward waits; the next {@link #next()},
     * {@link #remove} and {@link #close} submit it otherwise. Exec thread only.
     */
    public void submitHeldStep() {
        generationBatch.submitHeld();
    }

    /** Whether the last {@link #next()} holds its next forward for {@link #submitHeldStep}. For tests and diagnostics. */
    public boolean stepHeld() {
        return generationBatch.held();
    }

    /**
     * Frees the last {@link #next()}'s outputs (tokens, per-row logprobs) now rather than at the
     * next call, for a caller that has read them: an idle generator then holds no arrays.
     */
    public void releaseLastStep() {
        generationBatch.closeCurrent();
    }

    @Override
    public void close() {
        for (Row r : unprocessed) {
            r.closeRun();
            r.closeHistory();
        }
        unprocessed.clear();
        for (Row r : promptBatch.rows) {
            r.closeRun();
        }
        if (parked != null) {
            for (Row r : parked.rows) {
                r.closeRun();
            }
            parked.close();
            parked = null;
        }
        for (Row r : generationBatch.rows) {
            r.closeRun();
        }
        promptBatch.close();
        generationBatch.close();
    }
}
