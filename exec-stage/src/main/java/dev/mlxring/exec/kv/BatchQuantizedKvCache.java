package dev.mlxring.exec.kv;

import dev.mlxring.mlx.Dtype;
import dev.mlxring.mlx.Mlx;
import dev.mlxring.mlx.MlxArray;

/**
 * One layer's quantized keys and values for {@code B} rows decoding together (mlx-lm has no such
 * cache: its {@code BatchGenerator} cannot merge {@code QuantizedKVCache}s). Rows are laid out as
 * {@link BatchKvCache}'s: left-padded, each writing its next position at the shared index
 * {@code idx}, rope offset {@code idx - leftPadding[i]}, the padding masked by {@link #makeMask}.
 * Storage is {@link QuantizedKvCache}'s: the keys and the values each as the {@code (packed
 * uint32 words, scales, biases)} triple of {@code mx.quantize} (affine, {@link #groupSize()},
 * {@link #bits()}), buffers {@code [B, kvHeads, capacity, ·]} grown in steps of {@link #STEP}
 * positions as {@code QuantizedKVCache.update_and_fetch} grows them, each new key and value
 * quantized on its own and slice-written at the shared index. Attention over it is mlx-lm's
 * {@code quantized_scaled_dot_product_attention} with the batch's boolean mask.
 *
 * <p>Affine quantization groups the last (head) axis only, so every position's words, scales and
 * biases depend on that position's vector alone: moving positions between rows, rolling them,
 * padding or cutting them ({@link #merge}, {@link #extend}, {@link #filter}, {@link #extract},
 * {@link #trimRows}, {@link #finalizePadding}) gives the bytes quantizing the moved vectors would
 * give, and a row's filled positions hold exactly the bytes its serial {@link QuantizedKvCache}
 * holds for the same keys.
 *
 * <p>Ownership: the cache owns its six buffers (detached) and frees superseded ones as it replaces
 * them; {@link #extend} takes over (and empties) the other cache; {@link #close()} frees the rest.
 * Views it returns belong to the caller's scope. Single-threaded (the exec thread).
 */
public final class BatchQuantizedKvCache implements KvCache {
    public static final int STEP = QuantizedKvCache.STEP;

    private final int groupSize;
    private final int bits;
    /** {@code kw, ks, kb, vw, vs, vb}, each {@code [B, kvHeads, capacity, ·]}; null while empty. */
    private MlxArray[] buffers;

    /** The rows' paddings and the shared index, rolling and cutting {@link #buffers}. */
    private RowPadding rows;

    /** An empty cache for rows with the given left padding. */
    public BatchQuantizedKvCache(int groupSize, int bits, int[] leftPadding) {
        this.groupSize = groupSize;
        this.bits = bits;
        this.rows = new RowPadding(leftPadding, new Buffers());
    }

    public int groupSize() {
        return groupSize;
    }

    public int bits() {
        return bits;
    }

    public int batchSize() {
        return rows.batchSize();
    }

    /** The shared write index: the key length attention sees. */
    @Override
    public int offset() {
        return rows.idx();
    }

    public int[] leftPadding() {
        return rows.leftPadding();
    }

    /** Each row's rope position, {@code idx - leftPadding[i]} (int32), as {@link BatchKvCache#offsets()}. */
    public MlxArray offsets() {
        return rows.offsets();
    }

    /** {@code create_causal_mask(N, offset=idx, left_padding)}, as {@link BatchKvCache#makeMask}. */
    public MlxArray makeMask(int n) {
        return rows.causalMask(n);
    }

    /**
     * Appends {@code [B, H, L, D]} keys and values at the shared index, quantized as
     * {@code QuantizedKVCache.update_and_fetch} quantizes them; returns {@code kw, ks, kb, vw, vs,
     * vb} over {@code [..., :idx, :]}.
     */
    public MlxArray[] updateAndFetch(MlxArray newKeys, MlxArray newValues) {
        int b = newKeys.dim(0);
        if (b != rows.batchSize()) {
            throw new IllegalArgumentException("keys for " + b + " rows, batch has " + rows.batchSize());
        }
        int heads = newKeys.dim(1);
        int numSteps = newKeys.dim(2);
        int prev = rows.idx();
        if (buffers == null || prev + numSteps > buffers[0].dim(2)) {
            int newSteps = (STEP + numSteps - 1) / STEP * STEP;
            if (buffers != null) {
                MlxArray[] cur = prev % STEP != 0 ? positionsAll(buffers, 0, prev) : buffers;
                MlxArray[] grown = new MlxArray[6];
                for (int i = 0; i < 6; i++) {
                    MlxArray zeros = Mlx.zeros(new int[] {b, heads, newSteps, cur[i].dim(3)}, cur[i].dtype());
                    grown[i] = Mlx.concatenate(2, cur[i], zeros);
                }
                replace(grown);
            } else {
                int elPerInt = 8 * Dtype.UINT32.sizeInBytes / bits;
                MlxArray[] k = initQuant(b, heads, newSteps, newKeys.dim(3), elPerInt, newKeys.dtype());
                MlxArray[] v = initQuant(b, heads, newSteps, newValues.dim(3), elPerInt, newKeys.dtype());
                replace(new MlxArray[] {k[0], k[1], k[2], v[0], v[1], v[2]});
            }
        }
        rows.advance(numSteps);
        int idx = rows.idx();
        MlxArray[] qk = Mlx.quantize(newKeys, groupSize, bits);
        MlxArray[] qv = Mlx.quantize(newValues, groupSize, bits);
        MlxArray[] written = new MlxArray[6];
        int[] strides = {1, 1, 1, 1};
        for (int i = 0; i < 6; i++) {
            MlxArray buf = buffers[i];
            MlxArray update = i < 3 ? qk[i] : qv[i - 3];
            written[i] = Mlx.sliceUpdate(
                    buf,
                    update,
                    new int[] {0, 0, prev, 0},
                    new int[] {buf.dim(0), buf.dim(1), idx, buf.dim(3)},
                    strides);
        }
        replace(written);
        return keysAndValues();
    }

    /** The six arrays over {@code [..., :idx, :]}. */
    public MlxArray[] keysAndValues() {
        return positionsAll(buffers, 0, rows.idx());
    }

    /** The six buffers (whole), for evaluating the cache; empty while nothing is stored. */
    @Override
    public MlxArray[] state() {
        return buffers == null ? new MlxArray[0] : buffers.clone();
    }

    @Override
    public boolean isEmpty() {
        return buffers == null;
    }

    /** As {@link BatchKvCache#prepareRightPadding}. */
    public void prepareRightPadding(int[] padding) {
        rows.prepareRightPadding(padding);
    }

    /** Whether a prefill chunk's right padding waits for {@link #finalizePadding}. */
    public boolean paddingPending() {
        return rows.paddingPending();
    }

    /** As {@link BatchKvCache#finalizePadding}: each row rolled right by its right padding, which becomes left padding. */
    public void finalizePadding() {
        rows.finalizePadding();
    }

    /**
     * Rolls row {@code r} back by {@code counts[r]} positions, as {@link BatchKvCache#trimRows}
     * (speculative decoding's rejected proposals).
     *
     * @return the counts forgotten per row
     * @throws IllegalArgumentException for a negative count or a count per row that is not one per row
     * @throws IllegalStateException during a prefill chunk (right padding pending)
     */
    public int[] trimRows(int[] counts) {
        return rows.trimRows(counts);
    }

    /** In-place filter: keeps those rows, then drops the left padding every kept row has. */
    public void filter(int[] keep) {
        if (keep.length == 0) {
            throw new IllegalArgumentException("filter keeps no row (the batch drops the cache instead)");
        }
        if (buffers != null) {
            MlxArray index = Mlx.fromInts(keep, keep.length);
            MlxArray[] kept = new MlxArray[6];
            for (int i = 0; i < 6; i++) {
                kept[i] = Mlx.take(buffers[i], index, 0);
            }
            replace(kept);
        }
        rows.keep(keep);
    }

    /** A copy of this cache holding only {@code rows}, filtered as {@link #filter} does. */
    public BatchQuantizedKvCache select(int[] rows) {
        BatchQuantizedKvCache copy = new BatchQuantizedKvCache(groupSize, bits, new int[0]);
        copy.rows = this.rows.copy(copy.new Buffers());
        if (buffers != null) {
            // The filter gathers new arrays, so the copy can start from views of these buffers.
            copy.buffers = detachAll(positionsAll(buffers, 0, buffers[0].dim(2)));
        }
        copy.filter(rows);
        return copy;
    }

    /**
     * In-place extend: {@code other}'s rows appended after this cache's, both shifted right with
     * zeros so their filled positions end at the larger index and their buffers have the larger
     * capacity (as {@link BatchKvCache#extend}). Takes over {@code other}'s arrays and leaves it empty.
     *
     * @throws IllegalArgumentException when the two caches quantize with different group sizes or bits
     */
    public void extend(BatchQuantizedKvCache other) {
        if (other.groupSize != groupSize || other.bits != bits) {
            throw new IllegalArgumentException("cannot extend a " + bits + "-bit, group-" + groupSize
                    + " quantized cache with a " + other.bits + "-bit, group-" + other.groupSize + " one");
        }
        if (buffers == null && other.buffers == null) {
            rows.appendEmpty(other.rows);
            other.close();
            return;
        }
        int maxIdx = rows.joinedIdx(other.rows);
        MlxArray[] ref = buffers != null ? buffers : other.buffers;
        int size =
                Math.max(buffers == null ? 0 : buffers[0].dim(2), other.buffers == null ? 0 : other.buffers[0].dim(2));
        MlxArray[] a = justified(this, ref, maxIdx - rows.idx(), size);
        MlxArray[] b = justified(other, ref, maxIdx - other.rows.idx(), size);
        MlxArray[] joined = new MlxArray[6];
        for (int i = 0; i < 6; i++) {
            joined[i] = Mlx.concatenate(0, a[i], b[i]);
        }
        replace(joined);
        rows.append(other.rows);
        other.close();
    }

    /**
     * Row {@code row}'s filled positions as a solo {@link QuantizedKvCache} (contiguous copies of
     * {@code [row, :, padding:idx]} of each buffer); this cache is unchanged.
     */
    public QuantizedKvCache extract(int row) {
        if (buffers == null) {
            return new QuantizedKvCache(groupSize, bits);
        }
        int pad = rows.leftPadding(row);
        int idx = rows.idx();
        MlxArray[] out = new MlxArray[6];
        for (int i = 0; i < 6; i++) {
            MlxArray x = buffers[i];
            out[i] = Mlx.contiguous(Mlx.slice(
                    x, new int[] {row, 0, pad, 0}, new int[] {row + 1, x.dim(1), idx, x.dim(3)}, new int[] {1, 1, 1, 1
                    }));
        }
        return new QuantizedKvCache(
                groupSize, bits, idx - pad, new MlxArray[] {out[0], out[1], out[2]}, new MlxArray[] {
                    out[3], out[4], out[5]
                });
    }

    /**
     * Solo quantized caches (one group size and width) into one batch, each right-aligned to the
     * longest (left padding {@code max - offset}), as {@link BatchKvCache#merge}; an all-empty list
     * gives an empty batch. The solo caches are unchanged (the caller closes them).
     *
     * @throws IllegalArgumentException when the caches quantize with different group sizes or bits
     */
    public static BatchQuantizedKvCache merge(QuantizedKvCache... caches) {
        int b = caches.length;
        int groupSize = caches[0].groupSize();
        int bits = caches[0].bits();
        int maxLength = 0;
        QuantizedKvCache ref = null;
        for (QuantizedKvCache c : caches) {
            if (c.groupSize() != groupSize || c.bits() != bits) {
                throw new IllegalArgumentException("cannot merge quantized caches of different group sizes or bits");
            }
            maxLength = Math.max(maxLength, c.offset());
            if (ref == null && !c.isEmpty()) {
                ref = c;
            }
        }
        int[] padding = new int[b];
        for (int i = 0; i < b; i++) {
            padding[i] = maxLength - caches[i].offset();
        }
        if (maxLength == 0) {
            return new BatchQuantizedKvCache(groupSize, bits, new int[b]);
        }
        BatchQuantizedKvCache cache = new BatchQuantizedKvCache(groupSize, bits, padding);
        MlxArray[] refState = ref.state();
        MlxArray[] merged = new MlxArray[6];
        for (int i = 0; i < 6; i++) {
            MlxArray r = refState[i];
            merged[i] = Mlx.zeros(new int[] {b, r.dim(1), maxLength, r.dim(3)}, r.dtype());
        }
        int[] strides = {1, 1, 1, 1};
        for (int row = 0; row < b; row++) {
            QuantizedKvCache c = caches[row];
            if (c.isEmpty() || c.offset() == 0) {
                continue;
            }
            MlxArray[] kv = c.keysAndValues();
            int p = padding[row];
            for (int i = 0; i < 6; i++) {
                MlxArray m = merged[i];
                merged[i] = KvBuffers.superseding(
                        m,
                        Mlx.sliceUpdate(
                                m,
                                kv[i],
                                new int[] {row, 0, p, 0},
                                new int[] {row + 1, m.dim(1), p + c.offset(), m.dim(3)},
                                strides));
            }
        }
        cache.replace(merged);
        cache.rows.setIdx(maxLength);
        return cache;
    }

    /**
     * {@code to_quantized} of a full-precision batch layer: its whole buffers quantized (each
     * position on its own, so the filled positions get the bytes the serial conversion gives
     * them), index and paddings kept. {@code dense} is unchanged (the caller closes it).
     *
     * @throws IllegalStateException during a prefill chunk (right padding pending)
     */
    public static BatchQuantizedKvCache fromDense(BatchKvCache dense, int groupSize, int bits) {
        if (dense.paddingPending()) {
            throw new IllegalStateException("cannot quantize a batch cache during a prefill chunk");
        }
        BatchQuantizedKvCache cache = new BatchQuantizedKvCache(groupSize, bits, dense.leftPadding());
        cache.rows.setIdx(dense.offset());
        if (!dense.isEmpty()) {
            MlxArray[] k = Mlx.quantize(dense.keys, groupSize, bits);
            MlxArray[] v = Mlx.quantize(dense.values, groupSize, bits);
            cache.replace(new MlxArray[] {k[0], k[1], k[2], v[0], v[1], v[2]});
        }
        return cache;
    }

    /**
     * {@code c}'s six buffers shifted right by {@code left} zero positions, then cut or
     * zero-padded on the right to {@code size}; an empty {@code c} as zero-position buffers shaped
     * as {@code ref}'s.
     */
    private static MlxArray[] justified(BatchQuantizedKvCache c, MlxArray[] ref, int left, int size) {
        int rows = c.rows.batchSize();
        MlxArray[] out = new MlxArray[6];
        for (int i = 0; i < 6; i++) {
            MlxArray x = c.buffers != null
                    ? c.buffers[i]
                    : Mlx.zeros(new int[] {rows, ref[i].dim(1), 0, ref[i].dim(3)}, ref[i].dtype());
            int right = size - x.dim(2) - left;
            if (right < 0) {
                x = KvBuffers.positions(x, 0, x.dim(2) + right);
                right = 0;
            }
            if (left != 0 || right != 0) {
                x = KvBuffers.padPositions(x, left, right);
            }
            out[i] = x;
        }
        return out;
    }

    /** {@code init_quant(dim)}: packed uint32 words, then scales and biases in the keys' dtype. */
    private MlxArray[] initQuant(int b, int heads, int steps, int dim, int elPerInt, Dtype dtype) {
        return new MlxArray[] {
            Mlx.zeros(new int[] {b, heads, steps, dim / elPerInt}, Dtype.UINT32),
            Mlx.zeros(new int[] {b, heads, steps, dim / groupSize}, dtype),
            Mlx.zeros(new int[] {b, heads, steps, dim / groupSize}, dtype)
        };
    }

    private static MlxArray[] positionsAll(MlxArray[] xs, int start, int stop) {
        MlxArray[] out = new MlxArray[xs.length];
        for (int i = 0; i < xs.length; i++) {
            out[i] = KvBuffers.positions(xs[i], start, stop);
        }
        return out;
    }

    private static MlxArray[] detachAll(MlxArray[] xs) {
        for (MlxArray x : xs) {
            x.detach();
        }
        return xs;
    }

    /** Installs six new buffers (detaching them) and frees those they supersede. */
    private void replace(MlxArray[] next) {
        MlxArray[] old = buffers;
        buffers = detachAll(next);
        // MLX's graph holds its own references, so dropping ours after building on them is safe.
        if (old != null) {
            for (int i = 0; i < 6; i++) {
                if (old[i] != buffers[i]) {
                    old[i].close();
                }
            }
        }
    }

    @Override
    public void close() {
        if (buffers != null) {
            for (MlxArray x : buffers) {
                x.close();
            }
            buffers = null;
        }
        rows.clear();
    }

    /** {@link #buffers} as {@link RowPadding} rolls and cuts them. */
    private final class Buffers implements RowPadding.Positions {
        @Override
        public boolean stored() {
            return buffers != null;
        }

        @Override
        public void rollRowsRight(int[] shift) {
            MlxArray[] rolled = new MlxArray[6];
            for (int i = 0; i < 6; i++) {
                rolled[i] = Mlx.rollRowsRight(buffers[i], shift);
            }
            replace(rolled);
        }

        @Override
        public void dropLeadingPositions(int start) {
            replace(positionsAll(buffers, start, buffers[0].dim(2)));
        }
    }
}
