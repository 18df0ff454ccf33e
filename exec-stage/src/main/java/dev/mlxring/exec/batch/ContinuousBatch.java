package dev.mlxring.exec.batch;

import dev.mlxring.exec.kv.ArraysCache;
import dev.mlxring.exec.kv.BatchKvCache;
import dev.mlxring.exec.kv.KvCache;
import dev.mlxring.exec.model.LanguageModel;
import dev.mlxring.exec.model.ModelLoadException;
import dev.mlxring.exec.nn.AdapterCache;
import dev.mlxring.exec.prefix.KvSnapshots;
import dev.mlxring.exec.prefix.PendingSnapshot;
import dev.mlxring.exec.prefix.PrefixReuse;
import dev.mlxring.exec.sample.EngineRng;
import dev.mlxring.exec.sample.TokenLogprobs;
import dev.mlxring.exec.spec.Speculation;
import dev.mlxring.exec.spec.SpeculationPolicy;
import dev.mlxring.kvstore.CacheNamespace;
import dev.mlxring.kvstore.KvSnapshot;
import dev.mlxring.mlx.ArrayScope;
import dev.mlxring.mlx.Mlx;
import dev.mlxring.mlx.MlxArray;
import dev.mlxring.pipeline.BatchStep;
import dev.mlxring.pipeline.ExecutionBatch;
import dev.mlxring.pipeline.ExecutionPlan;
import dev.mlxring.pipeline.KvQuantization;
import dev.mlxring.pipeline.Outcome.ErrorType;
import dev.mlxring.pipeline.PromptSegment;
import dev.mlxring.pipeline.RequestException;
import dev.mlxring.pipeline.SamplingParams;
import dev.mlxring.pipeline.StepResult;
import dev.mlxring.pipeline.Usage;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.List;
import java.util.Objects;
import java.util.function.Consumer;
import org.agrona.collections.Int2ObjectHashMap;

/**
 * The pipeline's {@link ExecutionBatch} over a {@link BatchGenerator}, as mlx_lm.server drives
 * its generator: a plan becomes a row ({@code insert}), its prompt first looked up in the prefix
 * cache ({@code fetch_nearest_cache}; the row then starts from the restored caches and feeds
 * only the rest), a row whose prefill reaches the end of one of its prompt's segments (system
 * prompt, conversation, thinking tail: prep's split, as {@code _tokenize}'s) publishes its caches
 * there with the segment's cache type, and a row that finishes publishes its caches back
 * ({@code insert_cache} of prompt + generated, type assistant) — within one unit the segment
 * snapshots first, then the finished rows', as mlx_lm.server's loop inserts them. Each snapshot
 * is a copy of the row's KV made on the exec thread and is published inside its unit, so after
 * every unit the cache holds mlx_lm.server's entries in its order. A segment snapshot is copied
 * inside its unit; a finished row's is published pending ({@link PendingSnapshot}: its bytes
 * count and shapes final, its bytes written later from MLX arrays of its own), so the unit does
 * not wait for the step already running on the batch's buffers: the next unit submits those
 * arrays for evaluation before its step and writes the bytes once its step is submitted (they are
 * computed by then), or a joiner restoring the entry writes them first, or they are written when
 * no row is left or the batch closes. The SSD tier spills such an entry once its bytes are
 * written. A hybrid model's row also
 * copies its recurrent state between prefill chunks every {@link PrefixReuse#checkpointTokens()}
 * positions, as the serial run does, and its snapshots carry those checkpoints. Each unit maps the
 * generator's tokens to the pipeline's step entries: a token for every row that produced one
 * (not the EOS token, which ends the row unreported, as the serial path does), then the row's
 * end with its usage; a row whose token constraint failed ends alone with its failure.
 *
 * <p>Owns the generator; {@link #close()} frees it (not the model). Exec thread only.
 */
public final class ContinuousBatch implements ExecutionBatch {
    private static final System.Logger LOG = System.getLogger("dev.mlxring.exec.batch");

    /** A row's request-side facts: what it reports and what its usage counts. */
    private static final class RowInfo {
        final int[] prefix;
        final int promptTokens;
        final boolean logprobs;
        final int topN;
        /** The cache types of the row's segments after the restored prefix ({@code segment_types}). */
        final PromptSegment.Kind[] segmentTypes;
        /** The prefix cache namespace of the row's model and adapter; null without a prefix cache. */
        final CacheNamespace namespace;

        /**
         * Copies of the row's recurrent state taken between its prefill chunks (a hybrid model's
         * mid-prompt checkpoints), owned by the row until it ends ({@link #releaseCheckpoints}).
         */
        final List<KvSnapshot> checkpoints = new ArrayList<>();
        /** The position of the row's last boundary: its restored prefix or its last checkpoint. */
        int lastBoundary;

        int nextSegmentType;
        int completionTokens;
        /** Whether the row ran verification rounds, and their proposed and accepted tokens. */
        boolean speculated;

        int proposedTokens;
        int acceptedTokens;

        RowInfo(
                int[] prefix,
                int promptTokens,
                boolean logprobs,
                int topN,
                PromptSegment.Kind[] segmentTypes,
                CacheNamespace namespace) {
            this.namespace = namespace;
            this.prefix = prefix;
            this.promptTokens = promptTokens;
            this.logprobs = logprobs;
            this.topN = topN;
            this.segmentTypes = segmentTypes;
            this.lastBoundary = prefix.length;
        }

        /** The checkpoints below {@code position} (a snapshot's checkpoints lie below its length). */
        List<KvSnapshot> checkpointsBelow(int position) {
            return checkpoints.stream().filter(c -> c.tokens() < position).toList();
        }

        void releaseCheckpoints() {
            checkpoints.forEach(KvSnapshot::release);
            checkpoints.clear();
        }

        Usage usage() {
            return new Usage(
                    promptTokens,
                    completionTokens,
                    prefix.length,
                    speculated ? new Usage.Speculative(proposedTokens, acceptedTokens) : null);
        }
    }

    private final LanguageModel model;
    private final BatchGenerator generator;
    /** The uid the generator last reported inserted speculating ({@code SpeculatedRows#speculating}). */
    private int speculatingInsert = -1;
    /** KV bytes one row holds per position over all layers; measured on first use. */
    private long bytesPerPosition;

    private long recurrentBytesPerRow;

    private final PrefixReuse prefixReuse;
    /** Whether prefilling rows checkpoint their recurrent state (a hybrid model with a prefix cache). */
    private final boolean checkpointing;
    /** The server's default speculation and what a request may ask instead. */
    private final SpeculationPolicy speculation;

    private final CacheNamespace namespace;
    /** The named adapters rows may lease; null when the server serves none. */
    private AdapterCache adapters;

    private final Int2ObjectHashMap<RowInfo> rows = new Int2ObjectHashMap<>();
    /** The KV scheme of the rows in {@link #rows} (null: full precision); meaningless while it is empty. */
    private KvQuantization rowsScheme;
    /** Sees each unit's raw tokens (logprobs vectors included) before they are released; may be null. */
    private Consumer<List<BatchToken>> unitTap;
    /** A finished row's snapshot and the namespace it is published under. */
    private record Finished(CacheNamespace namespace, PrefixReuse.Captured captured) {}

    /** Finished rows' snapshots of this unit, published after its segment snapshots. */
    private final List<Finished> finishedSnapshots = new ArrayList<>();

    /**
     * Finished rows' snapshots whose bytes are not yet written, oldest first: each is completed
     * exactly once ({@link #completePending}), whether or not its snapshot was published.
     */
    private final List<PendingSnapshot> pendingCopies = new ArrayList<>();

    /**
     * @param prefixReuse the prefix cache, or null for none
     */
    public ContinuousBatch(
            LanguageModel model,
            int prefillStepSize,
            int maxRows,
            int maxPrefillRows,
            EngineRng engineRng,
            PrefixReuse prefixReuse) {
        this(model, prefillStepSize, maxRows, maxPrefillRows, engineRng, prefixReuse, false);
    }

    /**
     * @param prefixReuse the prefix cache, or null for none; not used for a model it cannot serve
     *     ({@link PrefixReuse#supports})
     * @param shortPromptsFirst a long prompt's batch is parked for prompts that fit in one chunk
     *     ({@link BatchGenerator}'s class comment)
     */
    public ContinuousBatch(
            LanguageModel model,
            int prefillStepSize,
            int maxRows,
            int maxPrefillRows,
            EngineRng engineRng,
            PrefixReuse prefixReuse,
            boolean shortPromptsFirst) {
        this(
                model,
                prefillStepSize,
                maxRows,
                maxPrefillRows,
                engineRng,
                prefixReuse,
                shortPromptsFirst,
                SpeculationPolicy.of(null));
    }

    /**
     * As above, each row speculating as {@code speculation} resolves its request's choice (the
     * server's default unless the request's {@code speculative} field overrides it; a choice it
     * refuses fails the insert as invalid). A row that cannot speculate (a token constraint,
     * logits processors, a sliding window it could wrap) decodes without, as the serial executor
     * runs it.
     */
    public ContinuousBatch(
            LanguageModel model,
            int prefillStepSize,
            int maxRows,
            int maxPrefillRows,
            EngineRng engineRng,
            PrefixReuse prefixReuse,
            boolean shortPromptsFirst,
            SpeculationPolicy speculation) {
        this.model = model;
        this.speculation = speculation;
        this.generator =
                new BatchGenerator(model, prefillStepSize, maxPrefillRows, maxRows, engineRng, 0, shortPromptsFirst);
        this.prefixReuse = PrefixReuse.forModel(prefixReuse, model);
        this.namespace = this.prefixReuse == null ? null : this.prefixReuse.namespace(null);
        this.checkpointing =
                this.prefixReuse != null && this.prefixReuse.checkpointTokens() > 0 && hasRecurrentLayers(model);
        if (this.prefixReuse != null) {
            generator.onFinished(this::captureFinished);
        }
        generator.onSpeculated(new BatchGenerator.SpeculatedRows() {
            @Override
            public void verified(int uid, int proposed, int accepted) {
                RowInfo info = rows.get(uid);
                if (info != null) {
                    info.speculated = true;
                    info.proposedTokens += proposed;
                    info.acceptedTokens += accepted;
                }
            }

            @Override
            public void speculating(int uid) {
                // inside generator.insert, before the row's RowInfo exists: insert marks it
                speculatingInsert = uid;
            }
        });
    }

    /**
     * Shows every unit's generator tokens (with their {@code [V]} logprobs, valid during the call
     * only) to {@code tap}, after the unit's snapshots are published: parity tests compare the
     * logprobs bytes with mlx-lm's. Exec thread only.
     */
    public void onUnit(Consumer<List<BatchToken>> tap) {
        this.unitTap = tap;
    }

    /**
     * Serves the named adapters of {@code cache} (a plan names one by {@link ExecutionPlan#adapter}):
     * each such row leases its adapter for its lifetime and its prefix cache entries live under the
     * adapter's fingerprint. Call before inserting rows; the cache stays the caller's.
     */
    public void serveAdapters(AdapterCache cache) {
        this.adapters = cache;
    }

    /**
     * Full-precision plans always (while no quantized rows run). A plan with a KV scheme
     * ({@code --kv-bits}) runs as a batch row over {@link dev.mlxring.exec.kv.BatchQuantizedKvCache}s
     * when the model's attention takes them ({@link LanguageModel#batchesQuantizedKv()}) and the
     * plan does not speculate; the batch holds one scheme at a time, so such a plan waits (false)
     * while rows of another scheme (full precision included) are in flight and joins once they
     * have left. Otherwise (a model without the batch form, speculation) it runs alone, as
     * mlx_lm.server runs every {@code --kv-bits} request.
     */
    @Override
    public boolean accepts(ExecutionPlan plan) {
        KvQuantization scheme = plan.kvScheme();
        if (scheme != null) {
            if (!model.batchesQuantizedKv() && model.batchable()) {
                return false;
            }
            try {
                if (speculation.resolve(plan.speculative()) != null) {
                    return false;
                }
            } catch (IllegalArgumentException e) {
                return true; // insert fails it with the reason
            }
        }
        return rows.isEmpty() || Objects.equals(scheme, rowsScheme);
    }

    @Override
    public int insert(ExecutionPlan plan) throws RequestException {
        SamplingParams params = plan.sampling();
        if (!accepts(plan)) {
            closeConstraint(plan);
            throw new RequestException(
                    ErrorType.UNSUPPORTED, "KV scheme " + plan.kvScheme() + " cannot run in this batch now");
        }
        if (plan.kvScheme() != null) {
            try {
                plan.kvScheme().checkFits(model.headDim());
            } catch (IllegalArgumentException e) {
                closeConstraint(plan);
                throw new RequestException(ErrorType.UNSUPPORTED, e.getMessage());
            }
        }
        Speculation how;
        try {
            how = speculation.resolve(plan.speculative());
        } catch (IllegalArgumentException e) {
            closeConstraint(plan);
            throw new RequestException(ErrorType.INVALID_REQUEST, e.getMessage());
        }
        AdapterCache.Lease adapter = lease(plan);
        CacheNamespace ns = adapter == null || prefixReuse == null
                ? namespace
                : prefixReuse.namespace(null, adapter.adapter().fingerprint());
        PrefixReuse.Restored restored;
        try {
            // quantized rows do not use the prefix cache here (its batch namespace is full precision)
            restored = prefixReuse == null
                            || plan.kvScheme() != null
                            || plan.prompt().tokenIds().length == 0
                    ? null
                    : prefixReuse.restore(ns, plan.prompt().tokenIds());
        } catch (RuntimeException e) {
            closeConstraint(plan);
            if (adapter != null) {
                adapter.close();
            }
            throw e;
        }
        return insert(plan, params, restored, how, adapter, ns);
    }

    /** The plan's adapter leased, or null for the base model; refuses (closing the constraint) a name not served or a folder that no longer loads. */
    private AdapterCache.Lease lease(ExecutionPlan plan) throws RequestException {
        if (plan.adapter() == null) {
            return null;
        }
        try {
            if (adapters == null) {
                throw new IllegalArgumentException(
                        "adapter '" + plan.adapter() + "' is not served (this server serves no named adapters)");
            }
            return adapters.lease(plan.adapter());
        } catch (IllegalArgumentException | ModelLoadException e) {
            closeConstraint(plan);
            throw new RequestException(ErrorType.INVALID_REQUEST, e.getMessage());
        }
    }

    private static void closeConstraint(ExecutionPlan plan) {
        if (plan.constraint() != null) {
            plan.constraint().close();
        }
    }

    /** Inserts the row; the generator owns the constraint and the restored caches from here on. */
    private int insert(
            ExecutionPlan plan,
            SamplingParams params,
            PrefixReuse.Restored restored,
            Speculation how,
            AdapterCache.Lease adapter,
            CacheNamespace ns)
            throws RequestException {
        int[] prompt = plan.prompt().tokenIds();
        int cached = restored == null ? 0 : restored.cachedTokens();
        // mlx_lm.server serves a seeded request alone (_serve_single), which neither segments nor
        // snapshots before the end; its row here (own key stream) does the same.
        // A quantized row neither segments nor snapshots either: its chunks are the serial run's.
        List<PromptSegment> rest = params.seed() != null || plan.kvScheme() != null
                ? List.of()
                : afterPrefix(plan.prompt().segments(), cached);
        int[] lengths = new int[rest.size()];
        PromptSegment.Kind[] types = new PromptSegment.Kind[rest.size()];
        for (int i = 0; i < lengths.length; i++) {
            lengths[i] = rest.get(i).length();
            types[i] = rest.get(i).kind();
        }
        int uid;
        try {
            uid = generator.insert(
                    new BatchRequest(
                            Arrays.copyOfRange(prompt, cached, prompt.length),
                            lengths.length == 0 ? null : lengths,
                            plan.maxTokens(),
                            params,
                            plan.stopTokenIds(),
                            plan.constraint(),
                            how,
                            plan.kvScheme(),
                            adapter),
                    restored == null ? null : restored.caches(),
                    Arrays.copyOf(prompt, cached));
        } catch (IllegalArgumentException e) {
            throw new RequestException(ErrorType.INVALID_REQUEST, e.getMessage());
        }
        rowsScheme = plan.kvScheme();
        RowInfo info = new RowInfo(
                Arrays.copyOf(prompt, cached),
                prompt.length,
                plan.logprobs() || plan.topLogprobs() > 0,
                plan.topLogprobs(),
                types,
                ns);
        // a speculating row reports usage.speculative even where the batch verified none of its proposals
        info.speculated = speculatingInsert == uid;
        rows.put(uid, info);
        return uid;
    }

    /**
     * The segments left once the first {@code cached} tokens come from the prefix cache: those it
     * covers whole are dropped (with their types), the one it ends in is shortened (mlx_lm.server's
     * loop over {@code segments} after {@code fetch_nearest_cache}).
     */
    static List<PromptSegment> afterPrefix(List<PromptSegment> segments, int cached) {
        List<PromptSegment> out = new ArrayList<>(segments.size());
        int n = cached;
        for (PromptSegment s : segments) {
            if (n >= s.length()) {
                n -= s.length();
            } else {
                out.add(n == 0 ? s : new PromptSegment(s.length() - n, s.kind()));
                n = 0;
            }
        }
        return out;
    }

    private static boolean hasRecurrentLayers(LanguageModel model) {
        KvCache[] probe = model.newCache();
        try {
            return Arrays.stream(probe).anyMatch(c -> c instanceof ArraysCache);
        } finally {
            for (KvCache c : probe) {
                c.close();
            }
        }
    }

    /** Forgets a row that ended, releasing its checkpoints; null when it is not known. */
    private RowInfo forget(int uid) {
        RowInfo info = rows.remove(uid);
        if (info != null) {
            info.releaseCheckpoints();
        }
        return info;
    }

    @Override
    public Usage remove(int row) {
        RowInfo info = forget(row);
        generator.remove(row);
        if (rows.isEmpty()) {
            completePending(pendingCopies.size()); // no unit follows to write them in
        }
        return info == null ? Usage.NONE : info.usage();
    }

    @Override
    public void step(BatchStep out) {
        step(out, true);
    }

    @Override
    public void submitHeldStep() {
        generator.submitHeldStep();
    }

    /** {@link BatchGenerator#holdFirstTokenSteps}: on by default; a sharded group's ranks turn it off. */
    public void holdFirstTokenSteps(boolean on) {
        generator.holdFirstTokenSteps(on);
    }

    /**
     * Rows are generating and others have prompt tokens to read, and no row waits only for its
     * first step: rows whose prompts are read start in the next unit, whatever the prefill share.
     */
    @Override
    public boolean decodeOnlyUseful() {
        return generator.generating() > 0 && generator.prefillPending() && !generator.startPending();
    }

    @Override
    public boolean prefillPending() {
        return generator.prefillPending();
    }

    @Override
    public int generatingRows() {
        return generator.generating();
    }

    /**
     * {@code -Dmlxring.unitTrace=true}: one line per unit on standard error, for finding where a
     * served load's exec time goes ({@code scripts/bench/unit_trace.py} sums it). Off by default;
     * a constant, so the check costs nothing when off.
     */
    private static final boolean UNIT_TRACE = UnitPhases.ON;

    /** The end of the last unit, for the trace's gap between units. */
    private long lastUnitEndNs = System.nanoTime();

    @Override
    public void step(BatchStep out, boolean prefill) {
        if (!UNIT_TRACE) {
            unit(out, prefill);
            return;
        }
        long startNs = System.nanoTime();
        int generating = generator.generating();
        int prefilling = generator.prefilling();
        boolean pending = generator.prefillPending();
        try {
            unit(out, prefill);
        } finally {
            long endNs = System.nanoTime();
            int ended = 0;
            for (int i = 0; i < out.count; i++) {
                ended += out.results[i].kind != StepResult.Kind.TOKEN ? 1 : 0;
            }
            System.err.printf(
                    "UNIT t=%d gap=%.1f took=%.1f gen=%d pre=%d pend=%b prefill=%b out=%d fin=%d genAfter=%d%s%n",
                    startNs / 1_000_000,
                    (startNs - lastUnitEndNs) / 1e6,
                    (endNs - startNs) / 1e6,
                    generating,
                    prefilling,
                    pending,
                    prefill,
                    out.count,
                    ended,
                    generator.generating(),
                    UnitPhases.drain());
            lastUnitEndNs = endNs;
        }
    }

    private void unit(BatchStep out, boolean prefill) {
        out.clear();
        List<BatchToken> tokens;
        int earlier = pendingCopies.size();
        if (UnitPhases.ON) {
            UnitPhases.mark();
        }
        submitPending();
        if (UnitPhases.ON) {
            UnitPhases.lap(UnitPhases.SUBMIT_SNAPSHOTS);
        }
        boolean unitRan = false;
        try {
            tokens = generator.next(prefill);
            if (earlier > 0) {
                // The copies below wait for the stream: the next step goes ahead of them.
                generator.submitHeldStep();
            }
            if (UnitPhases.ON) {
                UnitPhases.mark();
            }
            completePending(earlier);
            if (UnitPhases.ON) {
                UnitPhases.lap(UnitPhases.COPY_SNAPSHOTS);
            }
            takeCheckpoints();
            publishSnapshots();
            if (UnitPhases.ON) {
                UnitPhases.lap(UnitPhases.PUBLISH);
            }
            if (unitTap != null) {
                unitTap.accept(tokens);
            }
            unitRan = true;
        } finally {
            discardFinishedSnapshots();
            if (!unitRan) {
                completePending(pendingCopies.size());
            }
        }
        for (int i = 0; i < tokens.size(); i++) {
            BatchToken t = tokens.get(i);
            RowInfo info = rows.get(t.uid());
            String reason = t.finishReason();
            if (t.error() != null) {
                forget(t.uid());
                out.fail(t.uid(), t.errorType(), t.error(), info.usage());
                continue;
            }
            if (!"stop".equals(reason)) {
                StepResult r = out.add(t.uid()).token(t.token());
                info.completionTokens++;
                if (info.logprobs) {
                    TokenLogprobs lp = TokenLogprobs.of(t.logprobs(), t.token(), info.topN);
                    r.logprob = lp.logprob();
                    r.topCount = lp.topIds().length;
                    System.arraycopy(lp.topIds(), 0, r.topIds, 0, r.topCount);
                    System.arraycopy(lp.topLogprobs(), 0, r.topLogprobs, 0, r.topCount);
                }
            }
            if (reason != null) {
                forget(t.uid());
                out.finish(t.uid(), reason, info.usage());
            }
        }
        // Everything is read: an idle batch then holds no arrays (no last logprobs kept alive).
        generator.releaseLastStep();
        if (rows.isEmpty()) {
            completePending(pendingCopies.size()); // no unit follows to write them in
        }
    }

    /**
     * {@code rows} rows padded to the longest, each KV buffer grown in mlx-lm's 256-position
     * steps, with the free buffer rows a batch's KV may keep for joiners
     * ({@link BatchKvCache#bufferRows}), plus each row's recurrent state (a hybrid model's delta
     * net layers: the same bytes whatever the positions).
     */
    @Override
    public long projectedKvBytes(int rows, int positions) {
        long step = BatchKvCache.STEP;
        long capacity = (positions + step - 1) / step * step;
        measureRow();
        return BatchKvCache.bufferRows(rows) * capacity * bytesPerPosition + rows * recurrentBytesPerRow;
    }

    /**
     * Measures one row from the shapes and dtypes a one-token forward gives fresh caches (built,
     * never evaluated, so nothing is computed or kept): the KV layers' bytes per position and the
     * {@link ArraysCache} layers' bytes, which do not grow with the sequence.
     */
    private void measureRow() {
        if (bytesPerPosition != 0 || recurrentBytesPerRow != 0) {
            return;
        }
        KvCache[] probe = model.newCache();
        try (ArrayScope scope = ArrayScope.open()) {
            model.forward(Mlx.fromInts(new int[] {0}, 1, 1), probe);
            long perPosition = 0;
            long perRow = 0;
            for (KvCache c : probe) {
                for (MlxArray a : c.state()) {
                    if (c instanceof ArraysCache) {
                        perRow += a.nbytes();
                    } else {
                        perPosition += a.nbytes() / a.dim(2);
                    }
                }
            }
            bytesPerPosition = perPosition;
            recurrentBytesPerRow = perRow;
        } finally {
            for (KvCache c : probe) {
                c.close();
            }
        }
    }

    @Override
    public int rows() {
        return rows.size();
    }

    @Override
    public int cachedTokens(int row) {
        RowInfo info = rows.get(row);
        return info == null ? 0 : info.prefix.length;
    }

    /**
     * Submits the earlier units' pending snapshots' arrays for evaluation before this unit builds
     * its step: they run right behind the step already in flight and ahead of the new one, so
     * writing their bytes once the new step is submitted reads computed arrays. (Submitted in the
     * unit their rows finished in instead, the submission itself waited for the step in flight;
     * evaluated only at the copy, they would queue behind the new step.)
     */
    private void submitPending() {
        for (PendingSnapshot p : pendingCopies) {
            try {
                p.submit();
            } catch (RuntimeException e) {
                LOG.log(System.Logger.Level.WARNING, "prefix cache: could not evaluate a finished row's KV state", e);
            }
        }
    }

    /** Writes the bytes of the oldest {@code count} pending snapshots and lets them go. */
    private void completePending(int count) {
        for (int i = 0; i < count && !pendingCopies.isEmpty(); i++) {
            pendingCopies.removeFirst().complete();
        }
    }

    /**
     * A finished row's caches are taken now as a pending snapshot (the row leaves the batch within
     * the unit; nothing is evaluated) and go to the prefix cache after the unit's segment
     * snapshots; a failure never fails the request.
     */
    private void captureFinished(int uid, int[] cachedSequence, KvCache[] caches) {
        RowInfo info = rows.get(uid);
        if (info == null || rowsScheme != null) {
            return; // quantized rows are not published to the full-precision namespace
        }
        try {
            PrefixReuse.Deferred d = prefixReuse.captureDeferred(
                    info.prefix,
                    cachedSequence,
                    caches,
                    info.checkpointsBelow(info.prefix.length + cachedSequence.length));
            if (d != null) {
                pendingCopies.add(d.pending());
                finishedSnapshots.add(new Finished(info.namespace, d.captured()));
            }
        } catch (RuntimeException e) {
            LOG.log(System.Logger.Level.WARNING, "prefix cache: could not capture a finished row's KV state", e);
        }
    }

    /**
     * A hybrid model's mid-prompt checkpoints, as the serial run takes them: each row that read a
     * prompt chunk this unit and is now at least {@link PrefixReuse#checkpointTokens()} positions
     * past its last boundary copies its own recurrent state (extracted from the batch at the
     * row's own position, never a padded one). A failure never fails the request.
     */
    private void takeCheckpoints() {
        if (!checkpointing || rowsScheme != null) {
            return;
        }
        for (int uid : generator.chunksRead()) {
            RowInfo info = rows.get(uid);
            int fed = generator.prefilledTokens(uid);
            if (info == null || fed < 0) {
                continue;
            }
            int position = info.prefix.length + fed;
            if (position - info.lastBoundary < prefixReuse.checkpointTokens()) {
                continue;
            }
            try {
                generator.withSegmentCaches(uid, (ids, caches) -> {
                    KvSnapshot cp = KvSnapshots.checkpoint(caches);
                    if (cp != null && cp.tokens() == position) {
                        info.checkpoints.add(cp);
                        info.lastBoundary = position;
                    } else if (cp != null) {
                        cp.release();
                    }
                });
            } catch (RuntimeException e) {
                LOG.log(System.Logger.Level.WARNING, "prefix cache: could not checkpoint a row's recurrent state", e);
            }
        }
    }

    /**
     * The unit's snapshots, in mlx_lm.server's order: each row whose prefill ended a segment
     * (while the row has segment types left; the type is the segment's), then the finished rows.
     */
    private void publishSnapshots() {
        if (prefixReuse == null) {
            return;
        }
        for (int uid : generator.segmentsEnded()) {
            RowInfo info = rows.get(uid);
            if (info == null || info.nextSegmentType >= info.segmentTypes.length) {
                continue;
            }
            PromptSegment.Kind kind = info.segmentTypes[info.nextSegmentType++];
            try {
                generator.withSegmentCaches(uid, (fed, caches) -> {
                    PrefixReuse.Captured c = prefixReuse.capture(
                            info.prefix, fed, caches, info.checkpointsBelow(info.prefix.length + fed.length));
                    if (c != null) {
                        prefixReuse.publishSegment(info.namespace, c, kind);
                    }
                });
            } catch (RuntimeException e) {
                LOG.log(System.Logger.Level.WARNING, "prefix cache: could not publish a segment's KV state", e);
            }
        }
        while (!finishedSnapshots.isEmpty()) {
            Finished f = finishedSnapshots.removeFirst();
            try {
                prefixReuse.publish(f.namespace(), f.captured());
            } catch (RuntimeException e) {
                LOG.log(System.Logger.Level.WARNING, "prefix cache: could not publish a finished row's KV state", e);
            }
        }
    }

    /** Snapshots a failed unit left unpublished. */
    private void discardFinishedSnapshots() {
        while (!finishedSnapshots.isEmpty()) {
            finishedSnapshots.removeFirst().captured().discard();
        }
    }

    @Override
    public void close() {
        discardFinishedSnapshots();
        completePending(pendingCopies.size());
        rows.values().forEach(RowInfo::releaseCheckpoints);
        rows.clear();
        generator.close();
    }
}
