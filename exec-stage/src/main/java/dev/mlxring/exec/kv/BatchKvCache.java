package dev.mlxring.exec.kv;

import dev.mlxring.mlx.Dtype;
import dev.mlxring.mlx.Mlx;
import dev.mlxring.mlx.MlxArray;

/**
 * mlx-lm's {@code BatchKVCache}: one layer's keys and values for {@code B} rows decoding together,
 * buffers of shape {@code [B, kvHeads, capacity, headDim]} that grow in steps of {@link #STEP}
 * positions as {@code KVCache}'s do. Rows are <em>left</em>-padded: row {@code i}'s positions are
 * {@code [leftPadding[i], idx)}, so every row writes its next token at the shared index
 * {@code idx}, and its rope offset is {@code idx - leftPadding[i]} (mlx-lm's {@code offset}
 * array). Attention masks the padding ({@link #makeMask}, {@code create_causal_mask} with
 * {@code left_padding}).
 *
 * <p>The batch operations are mlx-lm's, step for step, so the key length {@code idx} and the
 * paddings — everything attention's arithmetic depends on — are equal to the oracle's at every
 * step: {@link #merge} (solo caches into one, right-aligned), {@link #extend} (another batch
 * appended, both right-justified to the larger index), {@link #filter} (rows kept, then the
 * common left padding trimmed), {@link #extract} (one row back as a solo {@link DenseKvCache}),
 * and right padding during a prefill chunk of unequal rows ({@link #prepareRightPadding}) rolled
 * into left padding afterwards ({@link #finalizePadding}, {@code dynamic_roll}).
 *
 * <p>Unlike mlx-lm, the paddings live on the Java side as ints (the values are the same); the
 * offset and padding arrays are built per call in the caller's scope.
 *
 * <p>Ownership: the cache owns its two buffers (detached) and frees superseded ones as it
 * replaces them; {@link #extend} takes over (and empties) the other cache; {@link #close()} frees
 * the rest. Views it returns belong to the caller's scope. Single-threaded (the exec thread).
 */
public final class BatchKvCache extends KvBuffers implements KvCache {
    public static final int STEP = 256;

    /**
     * Whether {@link #filter} and {@link #extend} may leave the buffers with a row capacity instead
     * of copying them ({@code -Dmlxring.rowSlots=false}: never, for A/B runs of the copies).
     */
    private static final boolean ROW_SLOTS = !"false".equals(System.getProperty("mlxring.rowSlots"));

    /** The rows' paddings and the shared index, rolling and cutting {@link #keys} and {@link #values}. */
    private RowPadding rows;

    /**
     * The row capacity's layout, null while the buffers hold the rows in order from position 0
     * (mlx-lm's layout). Otherwise the buffers have at least as many rows as the batch, row
     * {@code i} lives in buffer row {@code slots[i]}, and every row's position {@code p} at buffer
     * position {@code base + p}; the other buffer rows are free (their contents never read).
     * Only {@link #filter} (a leaving row frees its slot, trimmed padding moves {@code base}) and
     * {@link #extend} (a joining row takes a free slot) make it, and only once the batch's steps
     * run the fused rows ({@link #reserve}); anything that needs mlx-lm's layout gathers the rows
     * back into it first ({@link #compact}), the copy {@code filter} would have made.
     */
    private int[] slots;

    private int base;

    /** Set by {@link #reserve} (the fused rows read the slots), cleared by {@link #updateAndFetch} (the graph does not). */
    private boolean slotsRead;

    /** An empty cache for rows with the given left padding ({@code BatchKVCache(left_padding)}). */
    public BatchKvCache(int[] leftPadding) {
        this.rows = new RowPadding(leftPadding, new Buffers());
    }

    public int batchSize() {
        return rows.batchSize();
    }

    /** The shared write index (mlx-lm's {@code _idx}): the key length attention sees. */
    @Override
    public int offset() {
        return rows.idx();
    }

    public int[] leftPadding() {
        return rows.leftPadding();
    }

    /** mlx-lm's {@code offset} array: each row's rope position, {@code idx - leftPadding[i]} (int32). */
    public MlxArray offsets() {
        return rows.offsets();
    }

    /**
     * {@code make_mask(N)} = {@code create_causal_mask(N, offset=idx, left_padding)}: boolean
     * {@code [B, 1, N, idx + N]}, position {@code k} visible to query {@code q} when
     * {@code idx + q >= k} and {@code k >= leftPadding[row]}. Built before the layers update.
     */
    public MlxArray makeMask(int n) {
        return rows.causalMask(n);
    }

    /** Appends {@code [B, H, L, D]} keys and values at {@code idx}; returns views of {@code [..., :idx, :]}. */
    public MlxArray[] updateAndFetch(MlxArray newKeys, MlxArray newValues) {
        slotsRead = false;
        compact();
        int prev = rows.idx();
        int length = newKeys.dim(2);
        if (keys == null || prev + length > keys.dim(2)) {
            int nSteps = (STEP + length - 1) / STEP;
            grow(newKeys, newValues, nSteps * STEP, prev % STEP != 0 ? prev : -1);
        }
        rows.advance(length);
        int idx = rows.idx();
        int[] strides = {1, 1, 1, 1};
        replace(
                Mlx.sliceUpdate(
                        keys,
                        newKeys,
                        new int[] {0, 0, prev, 0},
                        new int[] {keys.dim(0), keys.dim(1), idx, keys.dim(3)},
                        strides),
                Mlx.sliceUpdate(
                        values,
                        newValues,
                        new int[] {0, 0, prev, 0},
                        new int[] {values.dim(0), values.dim(1), idx, values.dim(3)},
                        strides));
        return keysAndValues();
    }

    /**
     * The buffers, grown as {@link #updateAndFetch} grows them for {@code length} new positions of
     * that batch, heads, head dims and dtype, for a caller that writes the positions itself (the
     * fast tier's fused block over the batch's rows); {@link #written} then hands over the buffers
     * it wrote.
     */
    public MlxArray[] reserve(int batch, int heads, int keyDim, int valueDim, Dtype dtype, int length) {
        if (batch != rows.batchSize()) {
            throw new IllegalArgumentException("reserve for " + batch + " rows, batch has " + rows.batchSize());
        }
        slotsRead = true;
        if (slots != null && (base + rows.idx() + length > keys.dim(2) || keys.dtype() != dtype)) {
            compact(); // then grown as mlx-lm grows its buffers
        }
        if (slots != null) {
            return new MlxArray[] {keys, values};
        }
        int idx = rows.idx();
        if (keys == null || idx + length > keys.dim(2)) {
            int nSteps = (STEP + length - 1) / STEP;
            grow(batch, heads, keyDim, valueDim, dtype, nSteps * STEP, idx % STEP != 0 ? idx : -1);
        }
        return new MlxArray[] {keys, values};
    }

    /**
     * Takes ownership of {@code k} and {@code v}: the {@link #reserve reserved} buffers with
     * {@code length} more positions written at the shared index (the slice updates of
     * {@link #updateAndFetch}, done by the caller's primitive); the index advances by {@code length}.
     */
    public void written(MlxArray k, MlxArray v, int length) {
        int idx = base + rows.idx();
        if (keys == null || k.dim(2) != keys.dim(2) || k.dim(0) != keys.dim(0) || idx + length > k.dim(2)) {
            throw new IllegalArgumentException("written buffers of " + k.dim(2) + " positions for index " + idx + " + "
                    + length + " in a buffer of " + (keys == null ? 0 : keys.dim(2)));
        }
        replace(k, v);
        rows.advance(length);
    }

    /**
     * The buffer row of each of the batch's rows, or null while the buffers hold the rows in order
     * (see {@link #slots}); the fused rows read and write these rows from {@link #base()} on.
     */
    public int[] rowSlots() {
        return slots == null ? null : slots.clone();
    }

    /** The buffer position of every row's position 0 (0 unless {@link #rowSlots()} is set). */
    public int base() {
        return base;
    }

    /** {@code keys_and_values()}: always the {@code [..., :idx, :]} views. */
    public MlxArray[] keysAndValues() {
        compact();
        return new MlxArray[] {positions(keys, 0, rows.idx()), positions(values, 0, rows.idx())};
    }

    /**
     * {@code prepare(right_padding=...)}: the next prefill call feeds rows right-padded by these
     * amounts (padding tokens after the real ones, which the causal mask keeps out of their view).
     */
    public void prepareRightPadding(int[] padding) {
        rows.prepareRightPadding(padding);
    }

    /** Whether a prefill chunk's right padding waits for {@link #finalizePadding}. */
    boolean paddingPending() {
        return rows.paddingPending();
    }

    /**
     * {@code finalize()}: rolls each row right by its right padding ({@code dynamic_roll} over the
     * whole buffer, {@code take_along_axis} with {@code (arange(n) - shift) % n}), so the padding
     * becomes left padding.
     */
    public void finalizePadding() {
        rows.finalizePadding();
    }

    /**
     * Rolls row {@code r} back by {@code counts[r]} positions (speculative decoding's rejected
     * proposals; not an mlx-lm operation): afterwards the cache is, position for position, the one
     * that would hold each row's remaining positions had the forgotten ones never been written.
     * The count every row drops is taken off the shared index; a row that drops more is rolled
     * right by the difference ({@code dynamic_roll}, as {@link #finalizePadding}), so its positions
     * still end at the index, and its left padding grows by it (its forgotten positions wrap into
     * that padding, where the mask hides them); then the padding every row has is dropped, as
     * {@link #filter} drops it, so the shared index stays the longest row's length. Counts are
     * capped at each row's filled positions ({@link KvCache#trimCount}).
     *
     * @return the counts forgotten per row
     * @throws IllegalArgumentException for a negative count or a count per row that is not one per row
     * @throws IllegalStateException during a prefill chunk (right padding pending)
     */
    public int[] trimRows(int[] counts) {
        return rows.trimRows(counts);
    }

    /**
     * In-place {@code filter(batch_indices)}: keeps those rows, then trims the common left padding.
     * When the kept rows share left padding, the positions are cut first and the rows gathered
     * from that view: one copy of what stays. mlx-lm gathers every kept row's whole buffer, then
     * cuts a view whose next write copies it again; the bytes kept are the same.
     */
    public void filter(int[] keep) {
        if (keep.length == 0) {
            throw new IllegalArgumentException("filter keeps no row (the batch drops the cache instead)");
        }
        if (keys != null && ROW_SLOTS && slotsRead && !rows.paddingPending()) {
            // the leaving rows' slots are freed; the trimmed padding moves the base (Buffers):
            // nothing copied
            int[] kept = new int[keep.length];
            for (int i = 0; i < keep.length; i++) {
                kept[i] = slotOf(keep[i]);
            }
            slots = kept;
            rows.keep(keep);
            if (keys.dim(0) - keep.length > freeRowsKept(keep.length)) {
                compact(); // more free rows than the batch may keep: what stays is copied, the rest freed
            }
            return;
        }
        compact();
        int drop = rows.paddingDroppedByKeeping(keep);
        // Every row kept in order with no padding to cut (a prompt batch whose rows all finished
        // reading together): mlx-lm's gather would copy the buffers into equal ones.
        if (keys != null && !(drop == 0 && keepsEveryRowInOrder(keep))) {
            MlxArray index = Mlx.fromInts(keep, keep.length);
            MlxArray k = drop > 0 ? positions(keys, drop, keys.dim(2)) : keys;
            MlxArray v = drop > 0 ? positions(values, drop, values.dim(2)) : values;
            replace(Mlx.take(k, index, 0), Mlx.take(v, index, 0));
        }
        rows.keepCut(keep, drop);
    }

    private boolean keepsEveryRowInOrder(int[] keep) {
        if (keep.length != rows.batchSize()) {
            return false;
        }
        for (int i = 0; i < keep.length; i++) {
            if (keep[i] != i) {
                return false;
            }
        }
        return true;
    }

    /**
     * A copy of this cache holding only {@code rows}, filtered as {@link #filter} does
     * ({@code copy.deepcopy} then {@code filter}, as {@code PromptProcessingBatch.split} does).
     */
    public BatchKvCache select(int[] rows) {
        compact();
        BatchKvCache copy = new BatchKvCache(new int[0]);
        copy.rows = this.rows.copy(copy.new Buffers());
        // The first filter step gathers new arrays, so the copy can start from shared views.
        copy.viewsOf(this);
        copy.filter(rows);
        return copy;
    }

    /**
     * In-place {@code extend(other)}: {@code other}'s rows appended after this cache's. Both are
     * padded (zeros) so their filled positions end at the larger index and their buffers have the
     * larger capacity; each row's left padding grows by what its side was shifted. Takes over
     * {@code other}'s arrays and leaves it empty.
     */
    public void extend(BatchKvCache other) {
        other.compact();
        if (keys != null
                && other.keys != null
                && ROW_SLOTS
                && slotsRead
                && !rows.paddingPending()
                && !other.rows.paddingPending()
                && other.rows.idx() <= rows.idx()
                && other.keys.dtype() == keys.dtype()
                && other.keys.dim(1) == keys.dim(1)
                && other.keys.dim(3) == keys.dim(3)
                && other.values.dim(3) == values.dim(3)) {
            extendIntoSlots(other);
            return;
        }
        compact();
        if (keys == null && other.keys == null) {
            rows.appendEmpty(other.rows);
            other.close();
            return;
        }
        int maxIdx = rows.joinedIdx(other.rows);
        MlxArray ref = keys != null ? keys : other.keys;
        MlxArray refV = keys != null ? values : other.values;
        int heads = ref.dim(1);
        int d = ref.dim(3);
        int m = refV.dim(3);
        int maxSize = Math.max(keys == null ? 0 : keys.dim(2), other.keys == null ? 0 : other.keys.dim(2));
        Dtype dtype = ref.dtype();
        int leftA = maxIdx - rows.idx();
        int leftB = maxIdx - other.rows.idx();
        int rowsA = rows.batchSize();
        int rowsB = other.rows.batchSize();
        int filledA = rows.idx();
        int filledB = other.rows.idx();
        replace(
                joined(keys, rowsA, leftA, filledA, other.keys, rowsB, leftB, filledB, maxSize, heads, d, dtype),
                joined(values, rowsA, leftA, filledA, other.values, rowsB, leftB, filledB, maxSize, heads, m, dtype));
        rows.append(other.rows);
        other.close();
    }

    /**
     * {@link #extend} when {@code other}'s rows end at or before this cache's index (it shifts
     * them right; this side does not move): each of {@code other}'s rows is written into a free
     * slot, its {@code extend} padding (zeros) and its positions, {@code [base, base + idx)} of
     * that slot, the very positions mlx-lm's concatenation puts in its row; the slot's later
     * positions are written before they are read. The buffers grow by rows only when too few are
     * free. What this copies is the joining rows, not the batch.
     */
    private void extendIntoSlots(BatchKvCache other) {
        int idx = rows.idx();
        int joining = other.rows.batchSize();
        if (slots == null) {
            slots = new int[rows.batchSize()];
            for (int i = 0; i < slots.length; i++) {
                slots[i] = i;
            }
        }
        int[] free = freeSlots(joining);
        int heads = keys.dim(1);
        int d = keys.dim(3);
        int m = values.dim(3);
        MlxArray[] shifted = justified(other, joining, idx - other.rows.idx(), idx, heads, d, m, keys.dtype());
        MlxArray k = keys;
        MlxArray v = values;
        int[] strides = {1, 1, 1, 1};
        for (int j = 0; j < joining; j++) {
            MlxArray rowK = Mlx.slice(shifted[0], new int[] {j, 0, 0, 0}, new int[] {j + 1, heads, idx, d}, strides);
            MlxArray rowV = Mlx.slice(shifted[1], new int[] {j, 0, 0, 0}, new int[] {j + 1, heads, idx, m}, strides);
            int slot = free[j];
            k = KvBuffers.superseding(
                    k,
                    Mlx.sliceUpdate(
                            k,
                            rowK,
                            new int[] {slot, 0, base, 0},
                            new int[] {slot + 1, heads, base + idx, d},
                            strides));
            v = KvBuffers.superseding(
                    v,
                    Mlx.sliceUpdate(
                            v,
                            rowV,
                            new int[] {slot, 0, base, 0},
                            new int[] {slot + 1, heads, base + idx, m},
                            strides));
        }
        // the first update superseded (and freed) the cache's own buffers
        keys = k.detach();
        values = v.detach();
        int[] joined = java.util.Arrays.copyOf(slots, slots.length + joining);
        System.arraycopy(free, 0, joined, slots.length, joining);
        slots = joined;
        rows.append(other.rows);
        other.close();
    }

    /**
     * {@code n} free buffer rows, the lowest first; the buffers grow by rows (zeros appended) when
     * fewer are free.
     */
    private int[] freeSlots(int n) {
        int capacity = keys.dim(0);
        boolean[] taken = new boolean[capacity];
        for (int s : slots) {
            taken[s] = true;
        }
        int available = capacity - slots.length;
        if (available < n) {
            int grown = slots.length + n;
            int extra = grown - capacity;
            MlxArray zk = Mlx.zeros(new int[] {extra, keys.dim(1), keys.dim(2), keys.dim(3)}, keys.dtype());
            MlxArray zv = Mlx.zeros(new int[] {extra, values.dim(1), values.dim(2), values.dim(3)}, values.dtype());
            replace(Mlx.concatenate(0, keys, zk), Mlx.concatenate(0, values, zv));
            taken = java.util.Arrays.copyOf(taken, grown);
        }
        int[] free = new int[n];
        int found = 0;
        for (int s = 0; found < n; s++) {
            if (!taken[s]) {
                free[found++] = s;
            }
        }
        return free;
    }

    /**
     * The most free buffer rows a batch of {@code rows} keeps after a {@link #filter} (more are
     * given back by a copy of the rows that stay): a quarter of its rows, rounded up, none for a
     * lone row. Its buffers then hold at most {@link #bufferRows} rows.
     */
    static int freeRowsKept(int rows) {
        return rows >= 2 ? (rows + 3) / 4 : 0;
    }

    /**
     * The most buffer rows a batch of {@code rows} holds once its steps run the fused rows: the
     * rows and the free ones it may keep ({@link #freeRowsKept}); {@code rows} under
     * {@code -Dmlxring.rowSlots=false}. What a projection of the batch's memory counts.
     */
    public static int bufferRows(int rows) {
        return ROW_SLOTS ? rows + freeRowsKept(rows) : rows;
    }

    /** The buffer row of the batch's row {@code row}. */
    private int slotOf(int row) {
        return slots == null ? row : slots[row];
    }

    /**
     * Back to mlx-lm's layout: the rows gathered in order from their slots, positions from
     * {@link #base} on (one copy of what the batch holds); nothing while already in it.
     */
    private void compact() {
        if (slots == null) {
            return;
        }
        MlxArray index = Mlx.fromInts(slots, slots.length);
        MlxArray k = base > 0 ? positions(keys, base, keys.dim(2)) : keys;
        MlxArray v = base > 0 ? positions(values, base, values.dim(2)) : values;
        replace(Mlx.take(k, index, 0), Mlx.take(v, index, 0));
        slots = null;
        base = 0;
    }

    /**
     * {@code extract(idx)}: row {@code row}'s filled positions as a solo cache
     * ({@code contiguous(keys[row:row+1, :, padding:idx])}); this cache is unchanged.
     */
    public DenseKvCache extract(int row) {
        int pad = base + rows.leftPadding(row);
        int idx = base + rows.idx();
        int slot = slotOf(row);
        MlxArray k = Mlx.contiguous(Mlx.slice(
                keys, new int[] {slot, 0, pad, 0}, new int[] {slot + 1, keys.dim(1), idx, keys.dim(3)}, new int[] {
                    1, 1, 1, 1
                }));
        MlxArray v = Mlx.contiguous(Mlx.slice(
                values,
                new int[] {slot, 0, pad, 0},
                new int[] {slot + 1, values.dim(1), idx, values.dim(3)},
                new int[] {1, 1, 1, 1}));
        return new DenseKvCache(k, v);
    }

    /**
     * {@code BatchKVCache.merge(caches)} ({@code KVCache.merge}): solo caches into one batch, each
     * right-aligned to the longest (left padding {@code max - offset}); an all-empty list gives an
     * empty batch. The solo caches are unchanged (the caller closes them).
     */
    public static BatchKvCache merge(DenseKvCache... caches) {
        int b = caches.length;
        int maxLength = 0;
        DenseKvCache ref = null;
        for (DenseKvCache c : caches) {
            maxLength = Math.max(maxLength, c.offset());
            if (ref == null && !c.isEmpty()) {
                ref = c;
            }
        }
        if (maxLength == 0) {
            return new BatchKvCache(new int[b]);
        }
        int[] padding = new int[b];
        int heads = 0;
        int dk = 0;
        int dv = 0;
        for (int i = 0; i < b; i++) {
            padding[i] = maxLength - caches[i].offset();
            if (!caches[i].isEmpty()) {
                MlxArray[] s = caches[i].state();
                heads = Math.max(heads, s[0].dim(1));
                dk = Math.max(dk, s[0].dim(3));
                dv = Math.max(dv, s[1].dim(3));
            }
        }
        Dtype dt = ref.state()[0].dtype();
        MlxArray keys = Mlx.zeros(new int[] {b, heads, maxLength, dk}, dt);
        MlxArray values = Mlx.zeros(new int[] {b, heads, maxLength, dv}, dt);
        int[] strides = {1, 1, 1, 1};
        for (int i = 0; i < b; i++) {
            DenseKvCache c = caches[i];
            if (c.isEmpty()) {
                continue;
            }
            MlxArray[] kv = c.keysAndValues();
            int p = padding[i];
            keys = KvBuffers.superseding(
                    keys,
                    Mlx.sliceUpdate(
                            keys,
                            kv[0],
                            new int[] {i, 0, p, 0},
                            new int[] {i + 1, heads, p + c.offset(), dk},
                            strides));
            values = KvBuffers.superseding(
                    values,
                    Mlx.sliceUpdate(
                            values,
                            kv[1],
                            new int[] {i, 0, p, 0},
                            new int[] {i + 1, heads, p + c.offset(), dv},
                            strides));
        }
        BatchKvCache cache = new BatchKvCache(padding);
        cache.replace(keys, values);
        cache.rows.setIdx(maxLength);
        return cache;
    }

    @Override
    public void close() {
        closeBuffers();
        rows.clear();
        slots = null;
        base = 0;
    }

    /** {@link #keys} and {@link #values} as {@link RowPadding} rolls and cuts them. */
    private final class Buffers implements RowPadding.Positions {
        @Override
        public boolean stored() {
            return keys != null;
        }

        @Override
        public void rollRowsRight(int[] shift) {
            compact();
            replace(Mlx.rollRowsRight(keys, shift), Mlx.rollRowsRight(values, shift));
        }

        @Override
        public void dropLeadingPositions(int start) {
            if (slots != null) {
                base += start;
                return;
            }
            replace(positions(keys, start, keys.dim(2)), positions(values, start, values.dim(2)));
        }
    }
}
