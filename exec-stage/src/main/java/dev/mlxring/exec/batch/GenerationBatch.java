package dev.mlxring.exec.batch;

import dev.mlxring.exec.model.LanguageModel;
import dev.mlxring.exec.nn.RowAdapters;
import dev.mlxring.exec.sample.TokenMask;
import dev.mlxring.exec.spec.ForwardCosts;
import dev.mlxring.exec.spec.RoundWidth;
import dev.mlxring.exec.spec.SpeculativeRun;
import dev.mlxring.mlx.ArrayScope;
import dev.mlxring.mlx.Dtype;
import dev.mlxring.mlx.Mlx;
import dev.mlxring.mlx.MlxArray;
import dev.mlxring.pipeline.KvQuantization;
import java.util.ArrayList;
import java.util.List;

/**
 * mlx-lm's {@code GenerationBatch}: the rows that are generating, one forward over all of them per
 * step, pipelined as generate_step is — each step builds and {@code async_eval}s step n+1 before
 * reading step n's tokens. Per row: its logits processors on its own {@code [1, V]} slice (only
 * when some row has processors), then {@code logits - logsumexp(logits, axis=-1)} over the batch,
 * then one batched argmax when every row is greedy, else each row's own sampler on its slice
 * (its own key). A row with a token constraint masks its processed slice ({@link TokenMask}, its
 * mask for step n+1 following its token n: when any row is constrained, the step submits the
 * forward ({@code async_eval} of its logits), then reads the current tokens and computes the
 * masks while it runs); a row whose constraint allows nothing, or
 * refuses its token, is reported failed ({@link BatchToken#failed}) at the step whose token it
 * cannot give, and leaves alone. Rows leave by {@link #filter} after the step that finished them, and a batch of
 * newly prefilled rows joins by {@link #extend} (after its own first step, run on its rows alone).
 *
 * <p>Owns its caches and pending arrays (tokens, per-row logprobs); the rows' sampling runs
 * belong to the generator. Exec thread only.
 */
final class GenerationBatch implements AutoCloseable {
    private final LanguageModel model;
    /** The model's tier's forward costs, which a round's width is weighed at. */
    private final ForwardCosts costs;

    final List<Row> rows;
    private RowCaches caches;
    private MlxArray currentTokens;
    private List<MlxArray> currentLogprobs = new ArrayList<>();
    private MlxArray nextTokens;
    private List<MlxArray> nextLogprobs = new ArrayList<>();
    /**
     * The next step is built but not yet submitted ({@link #submitHeld}): the last
     * {@link #next()} read a row's first token, which the caller hands out first.
     */
    private boolean stepHeld;
    /** Per row of the last {@link #step(boolean)}: whether its current token is unusable (its mask failed). */
    private boolean[] failedRows = new boolean[0];
    /** Told about each row that finishes, with its caches, before the row is filtered out; may be null. */
    BatchGenerator.FinishedRows finished;
    /** Told about each speculating row's verification round; may be null. */
    BatchGenerator.SpeculatedRows speculated;

    /** An empty batch. */
    GenerationBatch(LanguageModel model) {
        this.model = model;
        this.costs = ForwardCosts.of(model.numerics());
        this.rows = new ArrayList<>();
    }

    /** Rows whose prompts are prefilled but for {@code lastTokens}; runs their first step. */
    GenerationBatch(LanguageModel model, List<Row> rows, RowCaches caches, int[] lastTokens) {
        this.model = model;
        this.costs = ForwardCosts.of(model.numerics());
        this.rows = new ArrayList<>(rows);
        this.caches = caches;
        try (ArrayScope scope = ArrayScope.open()) {
            // uint32, as the sampler's tokens are, so batches that merge concatenate one dtype.
            nextTokens = Mlx.astype(Mlx.fromInts(lastTokens, lastTokens.length), Dtype.UINT32)
                    .detach();
        }
        boolean speculating = false;
        for (Row r : rows) {
            speculating |= r.spec != null;
            r.pendingReturned = true;
        }
        if (speculating) {
            // A speculating row's first round verifies its proposal after the prompt's last token,
            // as the serial path's first round does: the rows run their first step with the batch.
            for (int i = 0; i < rows.size(); i++) {
                nextLogprobs.add(null);
            }
            return;
        }
        step(false);
        for (Row r : rows) {
            r.pendingReturned = false;
        }
    }

    int size() {
        return rows.size();
    }

    /** The rows' KV quantization; null for full precision or no rows. */
    KvQuantization scheme() {
        return rows.isEmpty() ? null : rows.getFirst().kvQuantization;
    }

    /** True when the batch holds rows on solo caches (one row, never merged). */
    boolean solo() {
        return caches != null && caches.solo();
    }

    /**
     * Generates one token per row ({@code next()}), or, when some row speculates and a round
     * pays ({@link #verifiesProposals}), one verification round ({@link #verifyStep}); rows that
     * finished are filtered out after it.
     */
    List<BatchToken> next() {
        return next(false);
    }

    /**
     * As {@link #next()}; with {@code holdForFirstToken}, a plain step that reads some row's first
     * token leaves the next forward for {@link #submitHeld} ({@link #step(boolean)}).
     */
    List<BatchToken> next(boolean holdForFirstToken) {
        List<BatchToken> out = new ArrayList<>(rows.size());
        if (rows.isEmpty()) {
            return out;
        }
        if (verifiesProposals()) {
            return verifyStep();
        }
        boolean[] returned = new boolean[rows.size()];
        boolean firstToken = false;
        for (int i = 0; i < returned.length; i++) {
            Row row = rows.get(i);
            returned[i] = row.pendingReturned;
            firstToken |= !row.pendingReturned && row.generated == 0;
            row.pendingReturned = false;
        }
        int[] tokens = step(holdForFirstToken && firstToken);
        int[] keep = new int[rows.size()];
        int kept = 0;
        for (int i = 0; i < rows.size(); i++) {
            Row row = rows.get(i);
            if (returned[i] && !failedRows[i]) {
                // Its input was reported when it was committed; its sampled token follows next step.
                keep[kept++] = i;
                continue;
            }
            if (failedRows[i]) {
                // No token for this row: its caches are not published, and it leaves alone.
                out.add(BatchToken.failed(row.uid, row.mask.failureType(), row.mask.failure()));
                row.closeRun();
                continue;
            }
            String reason = null;
            row.generated(tokens[i]);
            if (row.followed()) {
                row.spec.observed(tokens[i]);
            }
            if (row.generated >= row.maxTokens) {
                reason = "length";
            }
            if (row.isStop(tokens[i])) {
                reason = "stop";
            }
            out.add(new BatchToken(row.uid, tokens[i], currentLogprobs.get(i), reason));
            if (reason == null) {
                keep[kept++] = i;
            } else {
                if (finished != null) {
                    caches.withRow(i, c -> finished.finished(row.uid, row.cachedSequence(), c));
                }
                // The row leaves: its sampling run closes (an unseeded row hands its key back).
                row.closeRun();
            }
        }
        if (kept < rows.size()) {
            filter(java.util.Arrays.copyOf(keep, kept));
        }
        return out;
    }

    /**
     * One verification round over every row, in one forward of {@code K + 1} positions per row
     * ({@code K}: the longest proposal of the round). The rows' next inputs are read first; a
     * token a one-position step sampled and has not reported yet is reported now (a row it ends
     * leaves before the forward). Each speculating row then asks its source for up to
     * {@code min(max_tokens - generated, its proposal length, the caches' room)} tokens, a greedy
     * row no more than the {@link RoundWidth} those lengths give, and {@code K} is the
     * {@link RoundWidth} of what the sources proposed (a greedy row's proposal is cut to it); a
     * speculating row feeds its input and its proposal; every other row feeds its input alone; the positions after a
     * row's own are padding, which its queries never see (causal) and its cache forgets. Per row,
     * on its own {@code [m + 1, V]} slice of the logits: {@code logits - logsumexp}, then one
     * sampler call (a speculating row: all {@code m + 1} positions, as the serial round; the other
     * rows: their processors and mask on position 0, as the pipelined step). A speculating row
     * accepts the longest prefix of its proposal equal to its sampled tokens (mlx-lm's rule),
     * reports the accepted tokens and the target's token after them at once, and keeps that
     * token as its next input; the other rows keep their sampled token, reported next step. Then
     * every row's caches are rolled back to what it keeps ({@link RowCaches#trimRows}).
     */
    private List<BatchToken> verifyStep() {
        submitHeld();
        closeCurrent();
        List<BatchToken> out = new ArrayList<>(rows.size());
        int[] pending;
        try (ArrayScope scope = ArrayScope.open()) {
            Mlx.eval(nextArrays());
            pending = nextTokens.toIntArray();
        }
        int n = rows.size();
        boolean[] leaves = new boolean[n];
        boolean anyLeaves = false;
        for (int e = 0; e < n; e++) {
            Row row = rows.get(e);
            if (row.mask != null && row.maskStarted && (row.mask.failure() != null || !row.mask.consume(pending[e]))) {
                out.add(BatchToken.failed(row.uid, row.mask.failureType(), row.mask.failure()));
                row.closeRun();
                leaves[e] = anyLeaves = true;
                continue;
            }
            if (!row.pendingReturned) {
                MlxArray logprobs = nextLogprobs.set(e, null);
                currentLogprobs.add(logprobs);
                row.pendingReturned = true;
                String reason = commit(row, pending[e]);
                out.add(new BatchToken(row.uid, pending[e], logprobs, reason));
                if (reason != null) {
                    // Its caches have not seen this token.
                    finish(e, row, row.generated - 1);
                    leaves[e] = anyLeaves = true;
                } else if (row.followed()) {
                    // A plain step sampled it: the source has not seen it yet.
                    row.spec.observed(pending[e]);
                }
            }
        }
        if (anyLeaves) {
            int[] keep = kept(leaves);
            int[] stay = new int[keep.length];
            for (int i = 0; i < keep.length; i++) {
                stay[i] = pending[keep[i]];
            }
            pending = stay;
            filter(keep);
            if (keep.length == 0) {
                return out;
            }
        }
        n = rows.size();
        // The rows that left above are gone: the round's leavers are indexed over the rows left.
        leaves = new boolean[n];
        Widths wanted = widths(caches.speculativeRoom());
        // The width the wanted lengths could use at most: no source proposes more than a round verifies.
        int limit = RoundWidth.choose(costs, wanted.lengths, wanted.acceptance, wanted.cuttable);
        int[][] proposals = new int[n][];
        int[] lengths = new int[n];
        int vocab = model.vocabSize();
        for (int e = 0; e < n; e++) {
            Row row = rows.get(e);
            int asked = wanted.cuttable[e] ? Math.min(wanted.lengths[e], limit) : wanted.lengths[e];
            proposals[e] = row.speculating() ? withinVocabulary(row.spec.propose(asked), vocab) : new int[0];
            lengths[e] = proposals[e].length;
        }
        int k = RoundWidth.choose(costs, lengths, wanted.acceptance, wanted.cuttable);
        for (int e = 0; e < n; e++) {
            if (proposals[e].length > k) {
                proposals[e] = java.util.Arrays.copyOf(proposals[e], k);
            }
        }
        int width = k + 1;
        int[][] sampled = new int[n][];
        MlxArray[] roundLogprobs = new MlxArray[n];
        MlxArray[] plainLogprobs = new MlxArray[n];
        try (ArrayScope scope = ArrayScope.open()) {
            int[] ids = new int[n * width];
            for (int e = 0; e < n; e++) {
                ids[e * width] = pending[e];
                System.arraycopy(proposals[e], 0, ids, e * width + 1, proposals[e].length);
            }
            int rowCount = n;
            MlxArray logits = RowAdapters.during(
                    Row.adapters(rows), () -> model.forward(Mlx.fromInts(ids, rowCount, width), caches.layers()));
            caches.maybeQuantize();
            int length = logits.dim(1);
            int v = logits.dim(2);
            MlxArray[] tokens = new MlxArray[n];
            List<MlxArray> evaluate = new ArrayList<>(2 * n);
            for (int e = 0; e < n; e++) {
                Row row = rows.get(e);
                int m = proposals[e].length;
                int first = length - width;
                MlxArray rowLogits = Mlx.squeeze(
                        Mlx.slice(
                                logits, new int[] {e, first, 0}, new int[] {e + 1, first + m + 1, v}, new int[] {1, 1, 1
                                }),
                        0);
                if (!row.speculating()) {
                    if (row.sampling.hasProcessors()) {
                        rowLogits = row.sampling.process(Mlx.fromInts(new int[] {pending[e]}, 1), 1, rowLogits);
                    }
                    if (row.mask != null) {
                        MlxArray allowed = row.mask.next();
                        if (allowed != null) {
                            rowLogits = TokenMask.apply(allowed, rowLogits);
                        }
                        row.maskStarted = true;
                    }
                }
                MlxArray logprobs = Mlx.subtract(rowLogits, Mlx.logsumexp(model.cpuKernels(), rowLogits, -1, true));
                tokens[e] = row.speculating() || !row.sampling.params().greedy()
                        ? row.sampling.sample(logprobs)
                        : Mlx.argmax(model.cpuKernels(), logprobs, -1, false);
                if (row.speculating()) {
                    roundLogprobs[e] = logprobs.detach();
                    evaluate.add(roundLogprobs[e]);
                } else {
                    plainLogprobs[e] = Mlx.squeeze(logprobs, 0).detach();
                    evaluate.add(plainLogprobs[e]);
                }
                evaluate.add(tokens[e]);
            }
            Mlx.eval(evaluate.toArray(new MlxArray[0]));
            for (int e = 0; e < n; e++) {
                sampled[e] = tokens[e].toIntArray();
            }
        }
        int[] accepted = new int[n];
        int[] trim = new int[n];
        boolean anyTrim = false;
        for (int e = 0; e < n; e++) {
            accepted[e] = rows.get(e).speculating() ? SpeculativeRun.acceptedPrefix(proposals[e], sampled[e]) : 0;
            trim[e] = k - accepted[e];
            anyTrim |= trim[e] > 0;
        }
        if (anyTrim) {
            caches.trimRows(trim);
        }
        int[] next = new int[n];
        java.util.Arrays.fill(leaves, false);
        anyLeaves = false;
        for (int e = 0; e < n; e++) {
            Row row = rows.get(e);
            int a = accepted[e];
            next[e] = sampled[e][a];
            if (!row.speculating()) {
                nextLogprobs.set(e, plainLogprobs[e]);
                row.pendingReturned = false;
                continue;
            }
            row.spec.verified(proposals[e].length, a, sampled[e][a]);
            if (speculated != null) {
                speculated.verified(row.uid, proposals[e].length, a);
            }
            currentLogprobs.add(roundLogprobs[e]);
            row.pendingReturned = true;
            for (int i = 0; i <= a; i++) {
                MlxArray logprobs;
                try (ArrayScope scope = ArrayScope.open()) {
                    logprobs = Mlx.squeeze(
                                    Mlx.slice(
                                            roundLogprobs[e],
                                            new int[] {i, 0},
                                            new int[] {i + 1, roundLogprobs[e].dim(1)},
                                            new int[] {1, 1}),
                                    0)
                            .detach();
                }
                currentLogprobs.add(logprobs);
                String reason = commit(row, sampled[e][i]);
                out.add(new BatchToken(row.uid, sampled[e][i], logprobs, reason));
                if (reason != null) {
                    // The caches hold the round's input and accepted tokens; those past the one
                    // that ended the row are forgotten, so they hold exactly what was reported.
                    if (i < a) {
                        int[] extra = new int[n];
                        extra[e] = a - 1 - i;
                        caches.trimRows(extra);
                    }
                    finish(e, row, i < a ? row.generated : row.generated - 1);
                    leaves[e] = anyLeaves = true;
                    break;
                }
            }
        }
        try (ArrayScope scope = ArrayScope.open()) {
            MlxArray old = nextTokens;
            // uint32, as the sampler's tokens are: a batch joining later concatenates its sampled
            // uint32 tokens to these, and int32 with uint32 would promote to int64.
            nextTokens = Mlx.astype(Mlx.fromInts(next, n), Dtype.UINT32).detach();
            old.close();
        }
        if (anyLeaves) {
            filter(kept(leaves));
        }
        return out;
    }

    /** Per row of the batch: the tokens it would propose, its acceptance, whether it may be cut. */
    private record Widths(int[] lengths, double[] acceptance, boolean[] cuttable) {}

    /** The rows' wanted proposals, as {@link RoundWidth} weighs them; none for a row that does not speculate. */
    private Widths widths(int room) {
        int n = rows.size();
        Widths w = new Widths(new int[n], new double[n], new boolean[n]);
        for (int e = 0; e < n; e++) {
            Row row = rows.get(e);
            if (row.speculating()) {
                w.lengths[e] = row.spec.wanted(row.maxTokens - row.generated, room);
                w.acceptance[e] = row.spec.acceptance();
                w.cuttable[e] = row.spec.cuttable();
            }
        }
        return w;
    }

    /**
     * Whether this step is a verification round: some row speculates and, at the lengths the rows
     * would propose, {@link RoundWidth} finds a round of {@code K > 0} worth more tokens per unit
     * of cost than a plain step. Otherwise the batch takes the pipelined one-position step, and a
     * speculating row's source is told its token ({@link RowSpeculation#observed}).
     */
    private boolean verifiesProposals() {
        boolean any = false;
        for (Row r : rows) {
            any |= r.speculating();
        }
        if (!any) {
            return false;
        }
        Widths w = widths(caches.speculativeRoom());
        return RoundWidth.choose(costs, w.lengths, w.acceptance, w.cuttable) > 0;
    }

    /** Counts {@code token} as generated; {@code "length"} or {@code "stop"} when it ends the row, else null. */
    private static String commit(Row row, int token) {
        row.generated(token);
        String reason = null;
        if (row.generated >= row.maxTokens) {
            reason = "length";
        }
        if (row.isStop(token)) {
            reason = "stop";
        }
        return reason;
    }

    /** A row that ends: its caches (holding its prompt and its first {@code fed} tokens) go to the listener, its run closes. */
    private void finish(int e, Row row, int fed) {
        if (finished != null) {
            caches.withRow(e, c -> finished.finished(row.uid, row.cachedSequence(fed), c));
        }
        row.closeRun();
    }

    private static int[] kept(boolean[] leaves) {
        int[] keep = new int[leaves.length];
        int kept = 0;
        for (int i = 0; i < leaves.length; i++) {
            if (!leaves[i]) {
                keep[kept++] = i;
            }
        }
        return java.util.Arrays.copyOf(keep, kept);
    }

    /** The proposal cut before its first id outside {@code [0, vocab)}, as the serial round cuts it. */
    private static int[] withinVocabulary(int[] proposal, int vocab) {
        for (int i = 0; i < proposal.length; i++) {
            if (proposal[i] < 0 || proposal[i] >= vocab) {
                return java.util.Arrays.copyOf(proposal, i);
            }
        }
        return proposal;
    }

    /**
     * {@code _step()}: returns the current step's tokens; the next step is already submitted, or,
     * with {@code readFirst}, built and left for {@link #submitHeld}.
     *
     * <p>MLX's {@code async_eval} returns only once at most ten of the submitted tasks are left
     * (its back-pressure; on the CPU every primitive is a task), so tokens read after the next
     * step's submission reach the caller most of a step after they were computed. A step whose
     * current tokens include a row's first reads them before it submits the next forward: the
     * first token is handed out as soon as it exists (the time to first token), at the cost of the
     * stream waiting for the hand-out once per row.
     */
    private int[] step(boolean readFirst) {
        submitHeld();
        closeCurrent();
        currentTokens = nextTokens;
        currentLogprobs = nextLogprobs;
        nextTokens = null;
        nextLogprobs = new ArrayList<>(rows.size());
        try (ArrayScope scope = ArrayScope.open()) {
            MlxArray inputs = currentTokens;
            int b = rows.size();
            MlxArray logits = RowAdapters.during(
                    Row.adapters(rows), () -> model.forward(Mlx.expandDims(inputs, 1), caches.layers()));
            caches.maybeQuantize();
            int length = logits.dim(1);
            int vocab = logits.dim(2);
            logits = Mlx.squeeze(
                    Mlx.slice(logits, new int[] {0, length - 1, 0}, new int[] {b, length, vocab}, new int[] {1, 1, 1}),
                    1);
            int[] read = consumeMaskedTokens(inputs, logits);
            boolean anyProcessors = read != null;
            boolean allGreedy = true;
            for (Row r : rows) {
                anyProcessors |= r.sampling.hasProcessors();
                allGreedy &= r.sampling.params().greedy();
            }
            if (anyProcessors) {
                MlxArray[] processed = new MlxArray[b];
                for (int e = 0; e < b; e++) {
                    MlxArray rowLogits = rowSlice(logits, e);
                    Row row = rows.get(e);
                    if (row.sampling.hasProcessors()) {
                        MlxArray input = Mlx.slice(inputs, new int[] {e}, new int[] {e + 1}, new int[] {1});
                        rowLogits = row.sampling.process(input, 1, rowLogits);
                    }
                    if (row.mask != null) {
                        MlxArray allowed = row.mask.next();
                        if (allowed != null) {
                            rowLogits = TokenMask.apply(allowed, rowLogits);
                        }
                        row.maskStarted = true;
                    }
                    processed[e] = rowLogits;
                }
                logits = Mlx.concatenate(0, processed);
            }
            MlxArray logprobs = Mlx.subtract(logits, Mlx.logsumexp(model.cpuKernels(), logits, -1, true));
            MlxArray sampled;
            if (allGreedy) {
                sampled = Mlx.argmax(model.cpuKernels(), logprobs, -1, false);
            } else {
                MlxArray[] each = new MlxArray[b];
                for (int e = 0; e < b; e++) {
                    each[e] = rows.get(e).sampling.sample(rowSlice(logprobs, e));
                }
                sampled = Mlx.concatenate(0, each);
            }
            nextTokens = sampled.detach();
            MlxArray[] submit = new MlxArray[b + 1];
            submit[0] = nextTokens;
            for (int e = 0; e < b; e++) {
                MlxArray row = Mlx.squeeze(rowSlice(logprobs, e), 0).detach();
                nextLogprobs.add(row);
                submit[e + 1] = row;
            }
            long submitNs = UnitPhases.ON ? System.nanoTime() : 0;
            if (readFirst) {
                stepHeld = true;
            } else {
                Mlx.asyncEval(submit);
            }
            long readNs = UnitPhases.ON ? System.nanoTime() : 0;
            if (UnitPhases.ON) {
                UnitPhases.add(UnitPhases.STEP_WAIT, readNs - submitNs);
            }
            List<MlxArray> now = new ArrayList<>(currentLogprobs.size() + 1);
            now.add(inputs);
            for (MlxArray a : currentLogprobs) {
                if (a != null) {
                    now.add(a);
                }
            }
            Mlx.eval(now.toArray(new MlxArray[0]));
            if (UnitPhases.ON) {
                UnitPhases.add(UnitPhases.STEP_READ, System.nanoTime() - readNs);
            }
            return read != null ? read : inputs.toIntArray();
        }
    }

    /**
     * When some row is constrained, submits {@code logits} (the next step's forward, which runs
     * meanwhile), reads the current tokens (the next step's masks follow them) and hands each
     * constrained row's token to its constraint; notes in
     * {@link #failedRows} the rows whose current token is unusable (their step had no mask, or
     * the constraint refused the token). Returns the tokens read, or null when no row is
     * constrained (the step then stays pipelined and nothing is read here).
     */
    private int[] consumeMaskedTokens(MlxArray inputs, MlxArray logits) {
        int b = rows.size();
        if (failedRows.length != b) {
            failedRows = new boolean[b];
        } else {
            java.util.Arrays.fill(failedRows, false);
        }
        boolean any = false;
        for (Row r : rows) {
            any |= r.mask != null;
        }
        if (!any) {
            return null;
        }
        Mlx.asyncEval(logits);
        int[] read = inputs.toIntArray();
        for (int e = 0; e < b; e++) {
            Row r = rows.get(e);
            if (r.mask != null && r.maskStarted) {
                failedRows[e] = r.mask.failure() != null || !r.mask.consume(read[e]);
            }
        }
        return read;
    }

    private static MlxArray rowSlice(MlxArray x, int row) {
        return Mlx.slice(x, new int[] {row, 0}, new int[] {row + 1, x.dim(1)}, new int[] {1, 1});
    }

    /** In-place {@code filter(keep)}: rows, caches, pending tokens and logprobs. */
    void filter(int[] keep) {
        submitHeld();
        List<Row> kept = new ArrayList<>(keep.length);
        List<MlxArray> keptLogprobs = new ArrayList<>(keep.length);
        boolean[] stays = new boolean[rows.size()];
        for (int k : keep) {
            kept.add(rows.get(k));
            keptLogprobs.add(nextLogprobs.get(k));
            stays[k] = true;
        }
        for (int i = 0; i < stays.length; i++) {
            if (!stays[i] && nextLogprobs.get(i) != null) {
                nextLogprobs.get(i).close();
            }
        }
        rows.clear();
        rows.addAll(kept);
        nextLogprobs = keptLogprobs;
        if (keep.length == 0) {
            caches.close();
            caches = null;
            nextTokens.close();
            nextTokens = null;
            return;
        }
        caches.filter(keep);
        try (ArrayScope scope = ArrayScope.open()) {
            MlxArray old = nextTokens;
            nextTokens = Mlx.take(old, Mlx.fromInts(keep, keep.length), 0).detach();
            old.close();
        }
        submitNextTokens();
    }

    /**
     * Submits {@link #nextTokens}, rebuilt by a filter or an extend, for evaluation on its own,
     * right behind the step that samples them: the next {@link #step(boolean)} reads them as its inputs
     * once it has submitted its own forward, and an input first computed inside that forward's
     * evaluation would make the read wait for the whole forward (no step would then overlap the
     * reading and the handing out of tokens).
     */
    private void submitNextTokens() {
        Mlx.asyncEval(nextTokens);
    }

    /**
     * {@code extend(batch)}: {@code other}'s rows appended (caches merged as mlx-lm's
     * {@code _extend_cache}: an empty batch adopts the other's caches as they are).
     */
    void extend(GenerationBatch other) {
        submitHeld();
        other.submitHeld();
        rows.addAll(other.rows);
        if (caches == null) {
            caches = other.caches;
        } else if (other.caches != null) {
            caches.extend(other.caches);
            other.caches.close();
        }
        other.caches = null;
        if (nextTokens == null) {
            nextTokens = other.nextTokens;
        } else if (other.nextTokens != null) {
            try (ArrayScope scope = ArrayScope.open()) {
                MlxArray a = nextTokens;
                nextTokens = Mlx.concatenate(0, a, other.nextTokens).detach();
                a.close();
                other.nextTokens.close();
            }
            submitNextTokens();
        }
        other.nextTokens = null;
        nextLogprobs.addAll(other.nextLogprobs);
        other.nextLogprobs = new ArrayList<>();
        other.rows.clear();
        other.close();
    }

    /** Whether the next step is built and held for {@link #submitHeld}. */
    boolean held() {
        return stepHeld;
    }

    /**
     * Submits the next step a {@link #next()} that read a row's first token left built; nothing
     * when there is none. Every other use of the batch submits it first.
     */
    void submitHeld() {
        if (!stepHeld) {
            return;
        }
        stepHeld = false;
        if (nextTokens == null) {
            return;
        }
        Mlx.asyncEval(nextArrays());
    }

    /** The next step's outputs: its tokens, then each row's logprobs where it has them. */
    private MlxArray[] nextArrays() {
        List<MlxArray> next = new ArrayList<>(nextLogprobs.size() + 1);
        next.add(nextTokens);
        for (MlxArray a : nextLogprobs) {
            if (a != null) {
                next.add(a);
            }
        }
        return next.toArray(new MlxArray[0]);
    }

    /** Frees the current step's outputs (read by the caller); the pending step is untouched. */
    void closeCurrent() {
        if (currentTokens != null) {
            currentTokens.close();
            currentTokens = null;
        }
        for (MlxArray a : currentLogprobs) {
            if (a != null) {
                a.close();
            }
        }
        currentLogprobs = new ArrayList<>();
    }

    @Override
    public void close() {
        stepHeld = false;
        closeCurrent();
        if (nextTokens != null) {
            nextTokens.close();
            nextTokens = null;
        }
        for (MlxArray a : nextLogprobs) {
            if (a != null) {
                a.close();
            }
        }
        nextLogprobs = new ArrayList<>();
        if (caches != null) {
            caches.close();
            caches = null;
        }
    }
}
