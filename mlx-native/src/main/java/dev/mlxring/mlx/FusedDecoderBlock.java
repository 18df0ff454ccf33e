package dev.mlxring.mlx;

import static dev.mlxring.mlx.NativeLibrary.ADDR;
import static dev.mlxring.mlx.NativeLibrary.INT;

import java.lang.foreign.Arena;
import java.lang.foreign.FunctionDescriptor;
import java.lang.foreign.MemorySegment;
import java.lang.foreign.ValueLayout;
import java.lang.invoke.MethodHandle;
import java.util.List;

/**
 * A fused decoder block: a whole pre-norm llama / qwen2 / qwen3 block — norm, the q/k/v
 * projections (with qwen2's biases or qwen3's per-head norms), rope of the default kind, causal
 * attention over a full-precision cache, the o projection and residual, norm, gated MLP and
 * residual — as one MLX primitive ({@code mlxr_block.h}), in one of two tiers:
 * {@link Numerics#EXACT} ({@code mlxr_exact_block.cpp}) runs the graph's own native exact
 * computations in the graph's order, so its bytes are the graph's (float32, float16 or bfloat16
 * activations, over the projections' dequantized layouts where it is given them);
 * {@link Numerics#FAST} and {@link Numerics#FAST_Q8} ({@code mlxr_fast_block.cpp}) the fast tier's
 * kernels (the latter with its projections' activations rounded to 8 bits), everything between
 * its projections in float32. It returns the block's output and the cache's key and value buffers
 * with the new (roped) keys and values written at positions {@code offset ..}, as mlx-lm's
 * {@code update_and_fetch} writes them: in the input buffers where nothing else holds them, else
 * in copies.
 *
 * <p>One per block of a loaded model. It holds the native argument lists (weight handles,
 * shape) in an arena it owns, freed by {@link #close()}; the weights stay the model's. Calls
 * come from the thread that drives MLX; {@link #close()} from any thread once calls have stopped.
 */
public final class FusedDecoderBlock implements AutoCloseable {
    private static final FunctionDescriptor BLOCK_ABI =
            FunctionDescriptor.of(INT, ADDR, ADDR, ADDR, ADDR, INT, ADDR, ADDR, ADDR);
    private static final MethodHandle FAST_BLOCK = NativeLibrary.handle("mlxr_fast_decoder_block", BLOCK_ABI);
    private static final MethodHandle EXACT_BLOCK = NativeLibrary.handle("mlxr_exact_decoder_block", BLOCK_ABI);
    private static final MethodHandle FAST_BLOCK_SLOTS = NativeLibrary.handle(
            "mlxr_fast_decoder_block_slots",
            FunctionDescriptor.of(INT, ADDR, ADDR, ADDR, ADDR, INT, ADDR, ADDR, ADDR, INT, ADDR, INT, ADDR));
    private static final MethodHandle EXACT_BLOCK_SLOTS = NativeLibrary.handle(
            "mlxr_exact_decoder_block_slots",
            FunctionDescriptor.of(
                    INT, ADDR, ADDR, ADDR, ADDR, INT, ADDR, ADDR, ADDR, ADDR, ADDR, INT, ADDR, ADDR, ADDR, INT, INT,
                    ADDR));
    private static final MethodHandle EXACT_AVAILABLE =
            NativeLibrary.handle("mlxr_exact_block_available", FunctionDescriptor.of(INT));
    private static final MethodHandle EXACT_COVERS =
            NativeLibrary.handle("mlxr_native_kernels_cover", FunctionDescriptor.of(INT, INT, INT));
    private static final MethodHandle ATTENTION_ROWS =
            NativeLibrary.handle("mlxr_fast_attention_rows", FunctionDescriptor.of(INT, INT));

    /** Indices in the int arguments of the two that change per call. */
    private static final int OFFSET_INT = 7;

    private static final int CAUSAL_INT = 8;
    /** After them whether the rope's frequencies are given, then bits and group size per projection. */
    private static final int FIRST_PROJECTION_INT = 10;
    /** Then whether the projections' dequantized layouts follow the other weights. */
    private static final int LAYOUTS_INT = FIRST_PROJECTION_INT + 2 * 7;

    private static final int ACTS_INT = LAYOUTS_INT + 1;

    /**
     * The block's attention layout and constants.
     *
     * @param ropeDims leading elements of each head the rope rotates (even, at most {@code headDim})
     * @param ropeScale the positions' scale (1 for the default rope, 1/factor for linear scaling)
     */
    public record Layout(
            int heads,
            int kvHeads,
            int headDim,
            int ropeDims,
            boolean ropeTraditional,
            float ropeBase,
            float ropeScale,
            float normEps,
            float attnScale) {}

    /**
     * One projection's affine-quantized weight, and its dequantized layout ({@link
     * DequantizedWeights#layout}) or null.
     */
    public record Projection(
            MlxArray weight, MlxArray scales, MlxArray biases, int bits, int groupSize, MlxArray layout) {
        public Projection(MlxArray weight, MlxArray scales, MlxArray biases, int bits, int groupSize) {
            this(weight, scales, biases, bits, groupSize, null);
        }
    }

    private final MethodHandle entry;
    private final Numerics numerics;
    private final Arena arena = Arena.ofShared();

    /** The row slots of the last slotted call, reused (grown in {@link #arena} as rows grow). */
    private MemorySegment slotsSegment = MemorySegment.NULL;

    private final MemorySegment weights;
    private final int weightCount;
    private final MemorySegment ints;
    private final MemorySegment floats;
    private final MemorySegment out;

    /**
     * Whether this machine runs the tier's fused block: a CPU default device whose CPU has the
     * tier's kernels (a shim built with its native ops off has no exact block).
     */
    public static boolean available(Numerics numerics) {
        if (numerics.fast()) {
            return FastKernels.selected().isPresent();
        }
        try {
            return (int) EXACT_AVAILABLE.invokeExact() == 1;
        } catch (Throwable t) {
            throw Shim.rethrow(t);
        }
    }

    /**
     * Sets how many query heads of one kv head's group the fast tiers' attention runs at once over
     * the keys and values they share (1: one head at a time; at most 4, and 1 on a CPU without
     * AVX-512); {@code rows <= 0} only reads it. Every head's bytes are the same at any setting:
     * for tests that prove it and A/B runs (the environment's {@code MLXR_FAST_ATTENTION_ROWS=1}
     * starts a process at 1). Process-wide; returns the setting before the call.
     */
    public static int fastAttentionRows(int rows) {
        try {
            return (int) ATTENTION_ROWS.invokeExact(rows);
        } catch (Throwable t) {
            throw Shim.rethrow(t);
        }
    }

    /**
     * Whether the tier's kernels, hence its fused block, take affine weights of {@code bits} in
     * groups of {@code groupSize} (asked of the shim, whose kernels decide).
     */
    public static boolean covers(Numerics numerics, int bits, int groupSize) {
        if (numerics.fast()) {
            return FastKernels.covers(bits, groupSize);
        }
        try {
            return (int) EXACT_COVERS.invokeExact(bits, groupSize) == 1;
        } catch (Throwable t) {
            throw Shim.rethrow(t);
        }
    }

    /**
     * @param numerics the tier, which must be {@link #available}
     * @param projections q, k, v, o, gate, up, down, each with bits and group size the tier's
     *     kernels {@linkplain #covers cover}; where all seven have a dequantized layout the exact
     *     block reads those whenever its activations are of their dtype (and leaves them unbuilt
     *     otherwise)
     * @param qkNorm qwen3's q_norm and k_norm weights, or null
     * @param qkvBias qwen2's q, k and v biases, or null
     * @param ropeFreqs the rope's precomputed frequencies {@code [ropeDims / 2]} (llama3's; then
     *     {@link Layout#ropeBase} is unused), or null; {@link Numerics#EXACT} only
     */
    public FusedDecoderBlock(
            Numerics numerics,
            Layout layout,
            MlxArray inputNorm,
            MlxArray postNorm,
            List<Projection> projections,
            MlxArray[] qkNorm,
            MlxArray[] qkvBias,
            MlxArray ropeFreqs) {
        if (ropeFreqs != null && numerics.fast()) {
            throw new IllegalArgumentException("the fast tier's fused block takes no rope frequencies");
        }
        this.entry = numerics.fast() ? FAST_BLOCK : EXACT_BLOCK;
        this.numerics = numerics;
        if (projections.size() != 7) {
            throw new IllegalArgumentException("a block has 7 projections, got " + projections.size());
        }
        boolean layouts = projections.stream().allMatch(p -> p.layout() != null);
        if (layouts && numerics.fast()) {
            throw new IllegalArgumentException("the fast tier's fused block takes no dequantized layouts");
        }
        weightCount = 2
                + 3 * 7
                + (qkNorm != null ? 2 : 0)
                + (qkvBias != null ? 3 : 0)
                + (ropeFreqs != null ? 1 : 0)
                + (layouts ? 7 : 0);
        weights = arena.allocate(ValueLayout.ADDRESS, weightCount);
        int w = 0;
        weights.setAtIndex(ValueLayout.ADDRESS, w++, inputNorm.handle());
        weights.setAtIndex(ValueLayout.ADDRESS, w++, postNorm.handle());
        for (Projection p : projections) {
            weights.setAtIndex(ValueLayout.ADDRESS, w++, p.weight().handle());
            weights.setAtIndex(ValueLayout.ADDRESS, w++, p.scales().handle());
            weights.setAtIndex(ValueLayout.ADDRESS, w++, p.biases().handle());
        }
        for (MlxArray[] extra :
                new MlxArray[][] {qkNorm, qkvBias, ropeFreqs == null ? null : new MlxArray[] {ropeFreqs}}) {
            if (extra != null) {
                for (MlxArray a : extra) {
                    weights.setAtIndex(ValueLayout.ADDRESS, w++, a.handle());
                }
            }
        }
        if (layouts) {
            for (Projection p : projections) {
                weights.setAtIndex(ValueLayout.ADDRESS, w++, p.layout().handle());
            }
        }
        // ints: heads, kv_heads, head_dim, rope_dims, rope_traditional, qk_norm, qkv_bias, offset,
        // causal, rope_freqs, then (bits, group_size) per projection, then layouts, then the fast
        // kernels' activations code; floats:
        // norm_eps, attn_scale, rope_base, rope_scale (mlxr_block.h's parse_spec)
        ints = arena.allocate(ValueLayout.JAVA_INT, ACTS_INT + 1);
        int[] head = {
            layout.heads(),
            layout.kvHeads(),
            layout.headDim(),
            layout.ropeDims(),
            layout.ropeTraditional() ? 1 : 0,
            qkNorm != null ? 1 : 0,
            qkvBias != null ? 1 : 0,
            0,
            0,
            ropeFreqs != null ? 1 : 0
        };
        MemorySegment.copy(head, 0, ints, ValueLayout.JAVA_INT, 0, head.length);
        for (int p = 0; p < 7; p++) {
            ints.setAtIndex(
                    ValueLayout.JAVA_INT,
                    FIRST_PROJECTION_INT + 2 * p,
                    projections.get(p).bits());
            ints.setAtIndex(
                    ValueLayout.JAVA_INT,
                    FIRST_PROJECTION_INT + 1 + 2 * p,
                    projections.get(p).groupSize());
        }
        ints.setAtIndex(ValueLayout.JAVA_INT, LAYOUTS_INT, layouts ? 1 : 0);
        ints.setAtIndex(ValueLayout.JAVA_INT, ACTS_INT, numerics.activationsCode());
        floats = arena.allocate(ValueLayout.JAVA_FLOAT, 4);
        float[] f = {layout.normEps(), layout.attnScale(), layout.ropeBase(), layout.ropeScale()};
        MemorySegment.copy(f, 0, floats, ValueLayout.JAVA_FLOAT, 0, f.length);
        out = arena.allocate(ValueLayout.ADDRESS, 3);
    }

    /**
     * The block over {@code x} {@code [B, L, D]} at positions {@code offset ..}: {@code {h, keys',
     * values'}}, the latter two the cache buffers with positions {@code offset .. offset + L - 1}
     * written, all in the current scope.
     *
     * @param keys the cache's key buffer {@code [B, kvHeads, capacity >= offset + L, headDim]} in
     *     the activations' dtype (grown by the caller); {@code values} likewise
     * @param causal the attention's mask: "causal", or none (the fast tier is causal either way,
     *     which for one new row is no mask)
     */
    public MlxArray[] forward(MlxArray x, MlxArray keys, MlxArray values, int offset, boolean causal) {
        ints.setAtIndex(ValueLayout.JAVA_INT, OFFSET_INT, offset);
        ints.setAtIndex(ValueLayout.JAVA_INT, CAUSAL_INT, causal ? 1 : 0);
        int rc;
        try {
            rc = (int) entry.invokeExact(
                    x.handle(), keys.handle(), values.handle(), weights, weightCount, ints, floats, out);
        } catch (Throwable t) {
            throw Shim.rethrow(t);
        }
        return outputs(rc);
    }

    /** The tier this block computes in. */
    public Numerics numerics() {
        return numerics;
    }

    /**
     * LoRA deltas on a call's rows, for the {@link Numerics#EXACT} block: mlx-lm's {@code
     * LoRALinear}, {@code y + (scale * ((x @ lora_a) @ lora_b)).astype(x.dtype)}, added to a row's
     * projection output {@code y} (after its bias), each of the two float32 matmuls with the bytes
     * of MLX's (a row's elements depend on that row alone, so a row adding a pair has the bytes of
     * a batch whose every row adds it).
     *
     * <p>Its arguments: {@code arrays}, {@code lora_a} and {@code lora_b} per pair, row-contiguous
     * float32 {@code [in, r]} and {@code [r, out]} (the in and out widths of the projection the pair
     * is on); {@code scales}, each pair's {@code lora_parameters.scale} (as float32, the graph's
     * scalar); {@code rows}, {@code [7 * B]}, projection-major in the order q, k, v, o, gate, up,
     * down: the pair row {@code b} adds to projection {@code p} at {@code rows[p * B + b]}, -1 for
     * none.
     *
     * <p>Immutable; the arrays stay their owner's and must outlive the calls that take them.
     */
    public static final class LowRank {
        /** No delta on any row. */
        public static final LowRank NONE = new LowRank(new MlxArray[0], new float[0], new int[0]);

        private final MlxArray[] arrays;
        private final float[] scales;
        private final int[] rows;
        /** The native argument lists (an auto arena: a LowRank may be kept across steps and shared). */
        private final MemorySegment nativeArrays;

        private final MemorySegment nativeRows;
        private final MemorySegment nativeScales;

        public LowRank(MlxArray[] arrays, float[] scales, int[] rows) {
            if (arrays.length != 2 * scales.length || rows.length % 7 != 0) {
                throw new IllegalArgumentException("a low-rank pair is two arrays and a scale; rows are 7 * B");
            }
            this.arrays = arrays.clone();
            this.scales = scales.clone();
            this.rows = rows.clone();
            Arena arena = Arena.ofAuto();
            nativeArrays = arena.allocate(ValueLayout.ADDRESS, Math.max(1, arrays.length));
            for (int i = 0; i < arrays.length; i++) {
                nativeArrays.setAtIndex(ValueLayout.ADDRESS, i, arrays[i].handle());
            }
            nativeRows = arena.allocate(ValueLayout.JAVA_INT, Math.max(1, rows.length));
            MemorySegment.copy(rows, 0, nativeRows, ValueLayout.JAVA_INT, 0, rows.length);
            nativeScales = arena.allocate(ValueLayout.JAVA_FLOAT, Math.max(1, scales.length));
            MemorySegment.copy(scales, 0, nativeScales, ValueLayout.JAVA_FLOAT, 0, scales.length);
        }

        public MlxArray[] arrays() {
            return arrays.clone();
        }

        public float[] scales() {
            return scales.clone();
        }

        public int[] rows() {
            return rows.clone();
        }
    }

    /**
     * As {@link #forward(MlxArray, MlxArray, MlxArray, int, boolean)} with LoRA deltas on the
     * rows' projections ({@link Numerics#EXACT} only).
     */
    public MlxArray[] forward(MlxArray x, MlxArray keys, MlxArray values, int offset, boolean causal, LowRank lowRank) {
        ints.setAtIndex(ValueLayout.JAVA_INT, OFFSET_INT, offset);
        ints.setAtIndex(ValueLayout.JAVA_INT, CAUSAL_INT, causal ? 1 : 0);
        return withLowRank(x, keys, values, null, null, lowRank);
    }

    /**
     * As {@link #forwardRows(MlxArray, MlxArray, MlxArray, int, MlxArray, MlxArray)} with LoRA
     * deltas on the rows' projections.
     */
    public MlxArray[] forwardRows(
            MlxArray x,
            MlxArray keys,
            MlxArray values,
            int offset,
            MlxArray ropeOffsets,
            MlxArray mask,
            LowRank lowRank) {
        return forwardRows(x, keys, values, offset, ropeOffsets, mask, lowRank, null, 0);
    }

    /**
     * As {@link #forwardRows(MlxArray, MlxArray, MlxArray, int, MlxArray, MlxArray, LowRank)} over
     * buffers with a row capacity ({@code BatchKvCache}'s row slots): {@code keys} and {@code
     * values} are {@code [R, kvHeads, capacity, headDim]} with {@code R >= B}, row {@code b}'s
     * positions lie in buffer row {@code slots[b]}, and every row's position {@code p} at buffer
     * position {@code base + p}; the other buffer rows are left as they are. Each row's bytes are
     * those of the unslotted call over buffers holding the rows in order from position 0.
     *
     * @param slots one distinct buffer row per row of {@code x}; null: the rows in order (base 0)
     * @param base the buffer position of every row's position 0 ({@code capacity >= base + offset + L})
     */
    public MlxArray[] forwardRows(
            MlxArray x,
            MlxArray keys,
            MlxArray values,
            int offset,
            MlxArray ropeOffsets,
            MlxArray mask,
            LowRank lowRank,
            int[] slots,
            int base) {
        ints.setAtIndex(ValueLayout.JAVA_INT, OFFSET_INT, offset);
        ints.setAtIndex(ValueLayout.JAVA_INT, CAUSAL_INT, 0);
        return slots == null
                ? exact(x, keys, values, ropeOffsets, mask, lowRank, MemorySegment.NULL, 0, base)
                : exact(x, keys, values, ropeOffsets, mask, lowRank, slotsOf(slots), slots.length, base);
    }

    /**
     * As {@link #forwardRows(MlxArray, MlxArray, MlxArray, int, int[])} over buffers with a row
     * capacity: row {@code b}'s positions lie in buffer row {@code slots[b]}, every row's position
     * {@code p} at buffer position {@code base + p} (see the exact tier's slotted call).
     */
    public MlxArray[] forwardRows(
            MlxArray x, MlxArray keys, MlxArray values, int offset, int[] leftPadding, int[] slots, int base) {
        if (slots.length != leftPadding.length) {
            throw new IllegalArgumentException(slots.length + " row slots for " + leftPadding.length + " rows");
        }
        return fastRows(x, keys, values, offset, leftPadding, slotsOf(slots), base);
    }

    /** {@code slots} in {@link #slotsSegment}, which grows when they do (the native call copies them). */
    private MemorySegment slotsOf(int[] slots) {
        if (slotsSegment.byteSize() < 4L * slots.length) {
            slotsSegment = arena.allocate(ValueLayout.JAVA_INT, Math.max(16, 2L * slots.length));
        }
        MemorySegment.copy(slots, 0, slotsSegment, ValueLayout.JAVA_INT, 0, slots.length);
        return slotsSegment;
    }

    private MlxArray[] withLowRank(
            MlxArray x, MlxArray keys, MlxArray values, MlxArray ropeOffsets, MlxArray mask, LowRank lowRank) {
        return exact(x, keys, values, ropeOffsets, mask, lowRank, MemorySegment.NULL, 0, 0);
    }

    /** The exact block's native call (the offset and mask mode already set); slots NULL: the rows in order. */
    private MlxArray[] exact(
            MlxArray x,
            MlxArray keys,
            MlxArray values,
            MlxArray ropeOffsets,
            MlxArray mask,
            LowRank lowRank,
            MemorySegment slots,
            int slotCount,
            int base) {
        if (numerics != Numerics.EXACT) {
            throw new IllegalStateException(
                    "a fast-tier block: the exact call (a batch's mask, LoRA deltas) is the exact tier's");
        }
        MemorySegment offsets = ropeOffsets == null ? MemorySegment.NULL : ropeOffsets.handle();
        MemorySegment rowsMask = mask == null ? MemorySegment.NULL : mask.handle();
        int rc;
        try {
            rc = (int) EXACT_BLOCK_SLOTS.invokeExact(
                    x.handle(),
                    keys.handle(),
                    values.handle(),
                    weights,
                    weightCount,
                    ints,
                    floats,
                    offsets,
                    rowsMask,
                    lowRank.nativeArrays,
                    lowRank.scales.length,
                    lowRank.nativeRows,
                    lowRank.nativeScales,
                    slots,
                    slotCount,
                    base,
                    out);
        } catch (Throwable t) {
            throw Shim.rethrow(t);
        }
        return outputs(rc);
    }

    /**
     * The {@linkplain Numerics#fast fast} block over the rows of a left-padded batch cache (mlx-lm's {@code
     * BatchKVCache}): {@code {h, keys', values'}} as {@link #forward}, with row {@code b}'s rope at
     * positions {@code offset - leftPadding[b] ..} and its causal attention over its own positions
     * {@code leftPadding[b] .. offset + L - 1} only (none of its padding read), the new keys and
     * values written at the shared positions {@code offset .. offset + L - 1} of every row.
     *
     * @param leftPadding one per row of {@code x}, each in {@code 0 .. offset}
     * @throws IllegalStateException for an exact-tier block (it takes the rows' offsets and mask:
     *     {@link #forwardRows(MlxArray, MlxArray, MlxArray, int, MlxArray, MlxArray)})
     */
    public MlxArray[] forwardRows(MlxArray x, MlxArray keys, MlxArray values, int offset, int[] leftPadding) {
        return fastRows(x, keys, values, offset, leftPadding, MemorySegment.NULL, 0);
    }

    /** The fast block's call over a batch's rows; slots NULL: the rows in order. */
    private MlxArray[] fastRows(
            MlxArray x, MlxArray keys, MlxArray values, int offset, int[] leftPadding, MemorySegment slots, int base) {
        if (!numerics.fast()) {
            throw new IllegalStateException("the exact tier's block takes a batch's rope offsets and mask");
        }
        ints.setAtIndex(ValueLayout.JAVA_INT, OFFSET_INT, offset);
        ints.setAtIndex(ValueLayout.JAVA_INT, CAUSAL_INT, 1);
        int rc;
        try (Arena call = Arena.ofConfined()) {
            MemorySegment pads = call.allocateFrom(ValueLayout.JAVA_INT, leftPadding);
            rc = (int) FAST_BLOCK_SLOTS.invokeExact(
                    x.handle(),
                    keys.handle(),
                    values.handle(),
                    weights,
                    weightCount,
                    ints,
                    floats,
                    pads,
                    leftPadding.length,
                    slots,
                    base,
                    out);
        } catch (Throwable t) {
            throw Shim.rethrow(t);
        }
        return outputs(rc);
    }

    /**
     * The {@link Numerics#EXACT} block over new positions of a batch cache's rows (mlx-lm's {@code
     * BatchKVCache}), with the bytes of mlx-lm's graph for them: {@code {h, keys', values'}} as
     * {@link #forward}, with row {@code b}'s q and k at position {@code l} roped at
     * {@code ropeOffsets[b] + l}, the new keys and values written from the shared position
     * {@code offset} of every row, and the attention over the cache's first {@code offset + L}
     * positions under {@code mask}, the very arrays the graph's rope and attention take.
     *
     * @param x the rows' new positions {@code [B, L, D]} (a decode step: L = 1; a verification round: K + 1)
     * @param offset the cache's shared index (where every row writes its first new position)
     * @param ropeOffsets the rows' rope positions, int32 {@code [B]} (the cache's {@code offset} array)
     * @param mask the batch's boolean attention mask, broadcastable to {@code [B, heads, L, offset + L]}
     * @throws IllegalStateException for a fast-tier block (see {@link #forwardRows(MlxArray,
     *     MlxArray, MlxArray, int, int[])})
     * @throws MlxException for arguments the native block refuses (it names which)
     */
    public MlxArray[] forwardRows(
            MlxArray x, MlxArray keys, MlxArray values, int offset, MlxArray ropeOffsets, MlxArray mask) {
        return forwardRows(x, keys, values, offset, ropeOffsets, mask, LowRank.NONE, null, 0);
    }

    /** The native call's {@code {h, keys', values'}} once {@code rc} says it succeeded, owned by the caller. */
    private MlxArray[] outputs(int rc) {
        Shim.check(rc);
        return new MlxArray[] {
            MlxArray.own(out.getAtIndex(ValueLayout.ADDRESS, 0)),
            MlxArray.own(out.getAtIndex(ValueLayout.ADDRESS, 1)),
            MlxArray.own(out.getAtIndex(ValueLayout.ADDRESS, 2))
        };
    }

    @Override
    public void close() {
        arena.close();
    }
}
