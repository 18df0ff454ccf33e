package dev.mlxring.exec.model;

import dev.mlxring.exec.kv.AttentionMask;
import dev.mlxring.exec.kv.BatchKvCache;
import dev.mlxring.exec.kv.DenseKvCache;
import dev.mlxring.exec.kv.KvCache;
import dev.mlxring.exec.nn.AdaptableLinear;
import dev.mlxring.exec.nn.Linear;
import dev.mlxring.exec.nn.LoraLinear;
import dev.mlxring.exec.nn.NamedAdapter;
import dev.mlxring.exec.nn.Parameters;
import dev.mlxring.exec.nn.RmsNorm;
import dev.mlxring.exec.nn.Rope;
import dev.mlxring.exec.nn.RowAdapters;
import dev.mlxring.mlx.CpuKernels;
import dev.mlxring.mlx.Dtype;
import dev.mlxring.mlx.FusedDecoderBlock;
import dev.mlxring.mlx.MlxArray;
import dev.mlxring.mlx.Numerics;
import java.util.ArrayList;
import java.util.List;

/**
 * A {@link DecoderModel.Block} of the llama / qwen2 / qwen3 kind as one fused native primitive
 * ({@link FusedDecoderBlock}) instead of mlx-lm's ~22-28-op graph, whose per-op cost (graph
 * build, scheduling, one task each on MLX's stream thread) rivals the arithmetic at small model
 * sizes. Under {@code --numerics exact} (the default) the primitive runs the graph's own native
 * exact computations in the graph's order, so its bytes are the graph's and mlx-lm's
 * (FusedBlockTest, GreedyParityTest); under {@code --numerics fast} the fast tier's kernels, with
 * everything between its projections in float32 (FusedBlockTest, FastNumericsOracleTest).
 *
 * <p>Built at load only for blocks it covers (see {@link #of}); a covered block takes it for a
 * single-row full-precision cache ({@link DenseKvCache}) with mask None or "causal", and for a
 * batch's rows over a {@link BatchKvCache} ({@link #appliesToRows}: per-row rope offsets, left
 * padding masked; the exact tier's decode steps and verify rounds with the graph's mask array and
 * offsets, the fast tiers' every call, prompt chunks included, skipping the padding); and the
 * graph for everything else (the exact tier's prefill chunks of a batch, rotating or quantized
 * caches, sliding windows). The cache
 * grows as the graph's ({@link DenseKvCache#reserve}) and the primitive writes the new keys and
 * values into its buffers as the graph's two slice updates would (in place only where nothing
 * else holds them), so prefix snapshots and restores see the same buffers.
 *
 * <p>{@code -Dmlxring.fusedBlock=false} keeps the graph (A/B runs). Owned by its model; closed
 * with it. {@code normDtype} and {@code paramDtype} (the norm weights' and the group parameters'
 * dtypes) make, with x's, the activations' and so the cache's dtype. {@code slots} are the
 * block's projections built as slots for named adapters (empty for a model without them),
 * {@code slotProjections} each slot's projection (0-6: q, k, v, o, gate, up, down);
 * {@code fixedLora} per projection the LoRA layer a model loaded with {@code --adapter-path} has
 * there (null where none).
 *
 * <p>LoRA adapters run in the exact tier's block ({@link #lowRankHere}): a projection's LoRA
 * layer (mlx-lm's {@code LoRALinear}, float32 {@code lora_a} and {@code lora_b}) is its base
 * layer's output plus the low-rank delta, which the block adds per row
 * ({@link FusedDecoderBlock.LowRank}), so rows on different adapters, or on none, share one
 * fused call. A DoRA layer, or a LoRA layer of another dtype or in the fast tier, leaves the
 * block to the graph for that call.
 */
record FusedBlock(
        FusedDecoderBlock block,
        int kvHeads,
        int headDim,
        Dtype normDtype,
        Dtype paramDtype,
        AdaptableLinear[] slots,
        int[] slotProjections,
        LoraLinear[] fixedLora,
        LowRankMemo memo)
        implements AutoCloseable {
    /**
     * The last call's LoRA deltas and the rows' adapters they were made for, so the steps of an
     * unchanged batch make them once (exec thread only).
     */
    static final class LowRankMemo {
        private NamedAdapter[] rows;
        private int batch = -1;
        private FusedDecoderBlock.LowRank lowRank;

        FusedDecoderBlock.LowRank get(NamedAdapter[] current, int batchSize) {
            if (lowRank == null || batch != batchSize || (rows == null) != (current == null)) {
                return null;
            }
            for (int i = 0; current != null && i < current.length; i++) {
                if (rows[i] != current[i]) {
                    return null;
                }
            }
            return lowRank;
        }

        void put(NamedAdapter[] current, int batchSize, FusedDecoderBlock.LowRank made) {
            rows = current == null ? null : current.clone();
            batch = batchSize;
            lowRank = made;
        }
    }

    /** No LoRA delta on any row: the block as loaded. */
    static final FusedDecoderBlock.LowRank NO_DELTAS = FusedDecoderBlock.LowRank.NONE;

    /** What the fused block reads of a {@link SelfAttention} (nulls where absent). */
    record AttentionParts(
            Linear q,
            Linear k,
            Linear v,
            Linear o,
            int heads,
            int kvHeads,
            float scale,
            Rope rope,
            RmsNorm qNorm,
            RmsNorm kNorm) {}

    /**
     * The fused form of a block, or null where it does not cover it: the native CPU kernels with
     * the tier's fused block {@linkplain FusedDecoderBlock#available available}; mlx-lm's own
     * attention ({@link SelfAttention}, unsharded) with a default or linear rope (for the exact
     * tier also llama3's) over an even number of dims and a head size in multiples of 8; the
     * gated MLP ({@link Mlp}); all seven projections affine-quantized with widths and groups the
     * tier's kernels cover, biases only on q, k and v (all three or none); one norm epsilon; one
     * dtype for every norm weight and one for every projection's group parameters; for the exact
     * tier, float32, float16 or bfloat16 activations (with half-type activations, q/k/v biases of
     * that type). Projections kept dequantized ({@code --dequantized-weights}) hand the block their
     * layouts, which it reads where the activations are of their type.
     */
    static FusedBlock of(
            Parameters params,
            RmsNorm inputNorm,
            DecoderModel.Attention attention,
            RmsNorm postNorm,
            DecoderModel.FeedForward mlp,
            int headDim) {
        // read per load, so a test can build both forms in one JVM
        boolean off = "false".equals(System.getProperty("mlxring.fusedBlock"));
        Numerics tier = params.numerics();
        if (off
                || params.kernels() != CpuKernels.NATIVE
                || !FusedDecoderBlock.available(tier)
                || !(attention instanceof SelfAttention sa)
                || !(mlp instanceof Mlp m)) {
            return null;
        }
        AttentionParts a = sa.fusedParts();
        // a base and scale (default, linear), or for the exact tier llama3's frequencies
        int ropeDims;
        boolean ropeTraditional;
        float ropeBase = 1.0f;
        float ropeScale = 1.0f;
        MlxArray ropeFreqs = null;
        switch (a.rope()) {
            case Rope.Standard r -> {
                ropeDims = r.dims();
                ropeTraditional = r.traditional();
                ropeBase = r.base();
                ropeScale = r.scale();
            }
            case Rope.Llama3 r
            when tier == Numerics.EXACT -> {
                ropeDims = r.dims();
                ropeTraditional = r.traditional();
                ropeFreqs = r.freqs();
            }
            default -> {
                return null;
            }
        }
        if (headDim % 8 != 0 || ropeDims % 2 != 0 || ropeDims > headDim || a.heads() % a.kvHeads() != 0) {
            return null;
        }
        Linear[] linears = {a.q(), a.k(), a.v(), a.o(), m.gateProj(), m.upProj(), m.downProj()};
        List<AdaptableLinear> slots = new ArrayList<>(7);
        List<Integer> slotProjections = new ArrayList<>(7);
        LoraLinear[] fixedLora = new LoraLinear[7];
        boolean anyFixed = false;
        for (int i = 0; i < linears.length; i++) {
            // a slot for named adapters: the block fuses its base layer, and adds the LoRA deltas
            // of the rows' adapters where it can (lowRankHere)
            if (linears[i] instanceof AdaptableLinear s) {
                slots.add(s);
                slotProjections.add(i);
                linears[i] = s.base();
            }
            // --adapter-path's LoRA layer: its base fused, its delta added on every row
            if (linears[i] instanceof LoraLinear l) {
                if (tier != Numerics.EXACT || !lowRankCovered(l)) {
                    return null;
                }
                fixedLora[i] = l;
                anyFixed = true;
                linears[i] = l.base();
            }
        }
        List<FusedDecoderBlock.Projection> projections = new ArrayList<>(7);
        MlxArray[] qkvBias = new MlxArray[3];
        int biased = 0;
        for (int i = 0; i < linears.length; i++) {
            if (!(linears[i] instanceof Linear.Quantized q)
                    || q.biases() == null
                    || !FusedDecoderBlock.covers(tier, q.spec().bits(), q.spec().groupSize())
                    || q.scales().dtype()
                            != ((Linear.Quantized) linears[0]).scales().dtype()
                    || q.biases().dtype() != q.scales().dtype()) {
                return null;
            }
            if (q.bias() != null) {
                if (i > 2) {
                    return null;
                }
                qkvBias[i] = q.bias();
                biased++;
            }
            projections.add(new FusedDecoderBlock.Projection(
                    q.weight(),
                    q.scales(),
                    q.biases(),
                    q.spec().bits(),
                    q.spec().groupSize(),
                    tier == Numerics.EXACT ? q.layout() : null));
        }
        if (biased != 0 && biased != 3) {
            return null;
        }
        List<RmsNorm> norms = new ArrayList<>(List.of(inputNorm, postNorm));
        if (a.qNorm() != null) {
            norms.add(a.qNorm());
            norms.add(a.kNorm());
        }
        for (RmsNorm n : norms) {
            if (n.eps() != inputNorm.eps()
                    || n.weight().dtype() != inputNorm.weight().dtype()) {
                return null;
            }
        }
        Dtype normDtype = inputNorm.weight().dtype();
        Dtype paramDtype = projections.get(0).scales().dtype();
        Dtype act = promote(normDtype, paramDtype);
        if (tier == Numerics.EXACT && act == Dtype.FLOAT64) {
            return null;
        }
        // half-type activations: the graph's bias adds keep their dtype only for biases of it
        if (tier == Numerics.EXACT && act != Dtype.FLOAT32 && biased == 3) {
            for (MlxArray b : qkvBias) {
                if (b.dtype() != act) {
                    return null;
                }
            }
        }
        FusedDecoderBlock.Layout layout = new FusedDecoderBlock.Layout(
                a.heads(),
                a.kvHeads(),
                headDim,
                ropeDims,
                ropeTraditional,
                ropeBase,
                ropeScale,
                inputNorm.eps(),
                a.scale());
        return new FusedBlock(
                new FusedDecoderBlock(
                        tier,
                        layout,
                        inputNorm.weight(),
                        postNorm.weight(),
                        projections,
                        a.qNorm() == null
                                ? null
                                : new MlxArray[] {a.qNorm().weight(), a.kNorm().weight()},
                        biased == 3 ? qkvBias : null,
                        ropeFreqs),
                a.kvHeads(),
                headDim,
                normDtype,
                paramDtype,
                slots.toArray(AdaptableLinear[]::new),
                slotProjections.stream().mapToInt(Integer::intValue).toArray(),
                anyFixed ? fixedLora : null,
                new LowRankMemo());
    }

    /** Whether the block adds {@code l}'s delta itself: float32 {@code lora_a} and {@code lora_b}. */
    private static boolean lowRankCovered(LoraLinear l) {
        return l.loraA().dtype() == Dtype.FLOAT32 && l.loraB().dtype() == Dtype.FLOAT32;
    }

    /**
     * The LoRA deltas of a forward over {@code batch} rows being built: {@link #NO_DELTAS} where
     * no row adds one (no fixed adapter, and no row's named adapter converts one of this block's
     * projections: {@link RowAdapters#convertsAny}), the rows' pairs where every converting layer
     * is a LoRA layer the block covers (one pair per distinct layer), and null where one is not
     * (a DoRA layer, another dtype, the fast tier, a named adapter over a fixed one): the call then
     * runs the adapted graph.
     */
    FusedDecoderBlock.LowRank lowRankHere(int batch) {
        boolean named = slots.length > 0 && RowAdapters.convertsAny(slots);
        if (!named && fixedLora == null) {
            return NO_DELTAS;
        }
        if (block.numerics() != Numerics.EXACT) {
            return null;
        }
        NamedAdapter[] rows = named ? RowAdapters.currentRows() : null;
        if (rows != null && rows.length != batch) {
            return null; // the graph's layers name the mismatch
        }
        FusedDecoderBlock.LowRank kept = memo.get(rows, batch);
        if (kept != null) {
            return kept;
        }
        FusedDecoderBlock.LowRank made = lowRank(rows, batch);
        if (made != null) {
            memo.put(rows, batch, made);
        }
        return made;
    }

    /** The rows' deltas, made anew (see {@link #lowRankHere}); null where one is not covered. */
    private FusedDecoderBlock.LowRank lowRank(NamedAdapter[] rows, int batch) {
        List<LoraLinear> pairs = new ArrayList<>(4);
        int[] rowPair = new int[7 * batch];
        java.util.Arrays.fill(rowPair, -1);
        if (fixedLora != null) {
            for (int p = 0; p < 7; p++) {
                if (fixedLora[p] != null) {
                    java.util.Arrays.fill(rowPair, p * batch, (p + 1) * batch, pairIndex(pairs, fixedLora[p]));
                }
            }
        }
        for (int i = 0; rows != null && i < slots.length; i++) {
            int p = slotProjections[i];
            for (int r = 0; r < batch; r++) {
                NamedAdapter a = rows[r];
                Linear layer = a == null ? null : slots[i].adapted(a);
                if (layer == null) {
                    continue;
                }
                if (!(layer instanceof LoraLinear l)
                        || !lowRankCovered(l)
                        || (fixedLora != null && fixedLora[p] != null)
                        || l.base() != slots[i].base()) {
                    return null;
                }
                rowPair[p * batch + r] = pairIndex(pairs, l);
            }
        }
        MlxArray[] arrays = new MlxArray[2 * pairs.size()];
        float[] scales = new float[pairs.size()];
        for (int i = 0; i < pairs.size(); i++) {
            arrays[2 * i] = pairs.get(i).loraA();
            arrays[2 * i + 1] = pairs.get(i).loraB();
            scales[i] = (float) pairs.get(i).scale();
        }
        return new FusedDecoderBlock.LowRank(arrays, scales, rowPair);
    }

    private static int pairIndex(List<LoraLinear> pairs, LoraLinear l) {
        for (int i = 0; i < pairs.size(); i++) {
            if (pairs.get(i) == l) {
                return i;
            }
        }
        pairs.add(l);
        return pairs.size() - 1;
    }

    /** Whether this call takes the fused block: a full-precision single-row cache, mask None or "causal". */
    static boolean applies(AttentionMask mask, KvCache cache) {
        return cache instanceof DenseKvCache && mask.array() == null && mask.offsets() == null;
    }

    /** The block over {@code x} {@code [B, L, D]}; its new keys and values written into {@code cache}. */
    MlxArray forward(MlxArray x, AttentionMask mask, DenseKvCache cache, FusedDecoderBlock.LowRank lowRank) {
        int length = x.dim(1);
        // the graph's keys: k_proj(rms_norm(x, w)), of MLX's promotion of the three dtypes
        Dtype act = promote(promote(x.dtype(), normDtype), paramDtype);
        MlxArray[] buffers = cache.reserve(x.dim(0), kvHeads, headDim, headDim, act, length);
        MlxArray[] r = lowRank == NO_DELTAS
                ? block.forward(x, buffers[0], buffers[1], cache.offset(), mask.causal())
                : block.forward(x, buffers[0], buffers[1], cache.offset(), mask.causal(), lowRank);
        cache.written(r[1], r[2], length);
        return r[0];
    }

    /**
     * Whether this call takes the block over a batch's rows: new positions over a full-precision
     * batch cache ({@link BatchKvCache}: left padding, per-row rope offsets) with the batch's
     * boolean mask array and rope offsets. The exact tier takes up to {@value #MAX_ROW_POSITIONS}
     * positions per row (a decode step, or a speculative verification round of {@code K + 1}) over
     * a cache with something stored; its prefill chunks stay on the graph, whose bytes they are.
     * The fast tiers take every such call, a batch's first prompt chunk and its verify rounds
     * included (their bytes answer to their own oracle, FastNumericsOracleTest, not the graph's):
     * rows that prefill together then run the fused kernels as a lone row's prompt does, and under
     * fast-q8 a position's logits are the same bytes however its row was batched. Rotating and
     * quantized batch caches run the graph, and so does every batch under
     * {@code -Dmlxring.fusedBatch=false} (A/B runs of this path alone).
     */
    boolean appliesToRows(MlxArray x, AttentionMask mask, KvCache cache) {
        int positions = x.dim(1);
        boolean fast = block.numerics().fast();
        return !"false".equals(System.getProperty("mlxring.fusedBatch"))
                && (fast || positions <= MAX_ROW_POSITIONS)
                && cache instanceof BatchKvCache batch
                && (fast || !batch.isEmpty())
                && x.dim(0) == batch.batchSize()
                && mask.array() != null
                && mask.array().dtype() == Dtype.BOOL
                && mask.offsets() != null;
    }

    /**
     * The most positions per row a batch's exact fused rows take: a verification round of up to 7
     * proposed tokens ({@code ProposalLength}'s longest); longer inputs are prefill chunks, which
     * stay on the graph.
     */
    static final int MAX_ROW_POSITIONS = 8;

    /**
     * The block over a batch step's rows {@code x} {@code [B, L, D]}: each row's rope at its own
     * offset and attention over its own filled positions, the new keys and values written into
     * {@code cache} at its shared index, as {@code BatchKVCache.update_and_fetch} writes them. The
     * exact tier takes the mask's array and rope offsets as the graph's rope and attention take
     * them (the graph's bytes); the fast tier the cache's left padding. A cache with a row
     * capacity ({@link BatchKvCache#rowSlots}) has each row read and written in its own buffer
     * row from the cache's base, with the same bytes.
     */
    MlxArray forwardRows(MlxArray x, AttentionMask mask, BatchKvCache cache, FusedDecoderBlock.LowRank lowRank) {
        int length = x.dim(1);
        Dtype act = promote(promote(x.dtype(), normDtype), paramDtype);
        MlxArray[] buffers = cache.reserve(x.dim(0), kvHeads, headDim, headDim, act, length);
        int[] slots = cache.rowSlots();
        MlxArray[] r;
        if (slots != null && (block.numerics() == Numerics.EXACT || lowRank == NO_DELTAS)) {
            // a row capacity: each row in its own buffer row, positions from the cache's base
            r = block.numerics() == Numerics.EXACT
                    ? block.forwardRows(
                            x,
                            buffers[0],
                            buffers[1],
                            cache.offset(),
                            mask.offsets(),
                            mask.array(),
                            lowRank,
                            slots,
                            cache.base())
                    : block.forwardRows(
                            x, buffers[0], buffers[1], cache.offset(), cache.leftPadding(), slots, cache.base());
        } else if (lowRank != NO_DELTAS) {
            r = block.forwardRows(x, buffers[0], buffers[1], cache.offset(), mask.offsets(), mask.array(), lowRank);
        } else if (block.numerics() == Numerics.EXACT) {
            r = block.forwardRows(x, buffers[0], buffers[1], cache.offset(), mask.offsets(), mask.array());
        } else {
            r = block.forwardRows(x, buffers[0], buffers[1], cache.offset(), cache.leftPadding());
        }
        cache.written(r[1], r[2], length);
        return r[0];
    }

    /** MLX's promotion of two of the blocks' float dtypes (float16 with bfloat16 is float32). */
    private static Dtype promote(Dtype a, Dtype b) {
        return a == b ? a : a == Dtype.FLOAT64 || b == Dtype.FLOAT64 ? Dtype.FLOAT64 : Dtype.FLOAT32;
    }

    @Override
    public void close() {
        block.close();
    }
}
