package dev.mlxring.exec.kv;

import dev.mlxring.mlx.Mlx;
import dev.mlxring.mlx.MlxArray;
import java.util.Arrays;

/**
 * The row bookkeeping a left-padded batch cache keeps beside its arrays ({@link BatchKvCache},
 * {@link BatchQuantizedKvCache}): each row's left padding, the shared write index {@code idx}
 * (row {@code i}'s positions are {@code [leftPadding[i], idx)}), and a prefill chunk's pending
 * right padding. It does mlx-lm's padding arithmetic ({@code prepare}, {@code finalize},
 * {@code filter}'s trim, {@code extend}'s shifts) and the per-row trim of rejected speculative
 * positions, and has the cache move its arrays' positions through {@link Positions}, so both
 * caches roll and cut positions by the same indices. Single-threaded (the exec thread).
 */
final class RowPadding {
    /** The arrays of a batch cache, each {@code [B, kvHeads, capacity, ·]}, as the padding moves them. */
    interface Positions {
        /** Whether the cache holds arrays (false while empty). */
        boolean stored();

        /**
         * Replaces each array by its rows' positions (the whole capacity) rolled right by
         * {@code shift[r]}, wrapping: mlx-lm's {@code dynamic_roll} ({@link Mlx#rollRowsRight}).
         */
        void rollRowsRight(int[] shift);

        /** Replaces each array by its positions {@code [start, capacity)}. */
        void dropLeadingPositions(int start);
    }

    private final Positions arrays;
    private int[] leftPadding;
    private int idx;
    /** Set by {@link #prepareRightPadding} for one prefill call, consumed by {@link #finalizePadding}. */
    private int[] rightPadding;

    /** No positions written yet: rows with the given left padding, the index at 0. */
    RowPadding(int[] leftPadding, Positions arrays) {
        this.leftPadding = leftPadding.clone();
        this.arrays = arrays;
    }

    int batchSize() {
        return leftPadding.length;
    }

    /** The shared write index: the key length attention sees. */
    int idx() {
        return idx;
    }

    /** Sets the shared write index (a cache built around arrays it filled itself). */
    void setIdx(int idx) {
        this.idx = idx;
    }

    /** Moves the shared write index on by {@code length} written positions. */
    void advance(int length) {
        idx += length;
    }

    /** Row {@code row}'s left padding: where its positions start. */
    int leftPadding(int row) {
        return leftPadding[row];
    }

    int[] leftPadding() {
        return leftPadding.clone();
    }

    /** mlx-lm's {@code offset} array: each row's rope position, {@code idx - leftPadding[i]} (int32). */
    MlxArray offsets() {
        return Paddings.offsets(idx, leftPadding);
    }

    /** {@code create_causal_mask(N, offset=idx, left_padding)}. */
    MlxArray causalMask(int n) {
        return Paddings.causalMask(idx, leftPadding, n);
    }

    /** {@code prepare(right_padding=...)}: the next prefill call feeds rows right-padded by these amounts. */
    void prepareRightPadding(int[] padding) {
        if (padding.length != leftPadding.length) {
            throw new IllegalArgumentException(
                    "right padding for " + padding.length + " rows, batch has " + leftPadding.length);
        }
        if (Arrays.stream(padding).max().orElse(0) > 0) {
            rightPadding = padding.clone();
        }
    }

    /** Whether a prefill chunk's right padding waits for {@link #finalizePadding}. */
    boolean paddingPending() {
        return rightPadding != null;
    }

    /** {@code finalize()}: each row rolled right by its right padding, which becomes left padding. */
    void finalizePadding() {
        if (rightPadding == null) {
            return;
        }
        if (arrays.stored()) {
            rollRowsRight(rightPadding);
        }
        for (int r = 0; r < leftPadding.length; r++) {
            leftPadding[r] += rightPadding[r];
        }
        rightPadding = null;
    }

    /**
     * Rolls row {@code r} back by {@code counts[r]} positions (speculative decoding's rejected
     * proposals; not an mlx-lm operation), as {@link BatchKvCache#trimRows} describes.
     *
     * @return the counts forgotten per row
     * @throws IllegalArgumentException for a negative count or a count per row that is not one per row
     * @throws IllegalStateException during a prefill chunk (right padding pending)
     */
    int[] trimRows(int[] counts) {
        int b = leftPadding.length;
        if (counts.length != b) {
            throw new IllegalArgumentException("trim counts for " + counts.length + " rows, batch has " + b);
        }
        if (rightPadding != null) {
            throw new IllegalStateException("trimRows during a prefill chunk (finalizePadding first)");
        }
        int[] done = new int[b];
        int common = Integer.MAX_VALUE;
        for (int r = 0; r < b; r++) {
            done[r] = KvCache.trimCount(idx - leftPadding[r], counts[r]);
            common = Math.min(common, done[r]);
        }
        if (b == 0 || !arrays.stored()) {
            return new int[b];
        }
        idx -= common;
        int[] shift = new int[b];
        boolean any = false;
        for (int r = 0; r < b; r++) {
            shift[r] = done[r] - common;
            any |= shift[r] > 0;
        }
        if (any) {
            rollRowsRight(shift);
            for (int r = 0; r < b; r++) {
                leftPadding[r] += shift[r];
            }
            dropCommonPadding();
        }
        return done;
    }

    /**
     * {@code filter}'s bookkeeping, once the cache has kept rows {@code keep} of its arrays: the
     * paddings of those rows, then the left padding every kept row has dropped.
     */
    void keep(int[] keep) {
        gatherRows(keep);
        dropCommonPadding();
    }

    /**
     * {@link #keep} for a cache whose arrays were cut by {@code cut} leading positions before the
     * rows were gathered: {@code cut} must be what the kept rows share
     * ({@link #paddingDroppedByKeeping}).
     */
    void keepCut(int[] keep, int cut) {
        gatherRows(keep);
        int shared = Arrays.stream(leftPadding).min().orElse(0);
        if (cut != shared) {
            throw new IllegalArgumentException("cut " + cut + " positions, the kept rows share " + shared);
        }
        shiftIndex(cut);
    }

    private void gatherRows(int[] keep) {
        leftPadding = Paddings.gather(leftPadding, keep);
        if (rightPadding != null) {
            rightPadding = Paddings.gather(rightPadding, keep);
        }
    }

    /** The left padding {@code keep}'s rows share: the positions {@link #keep} drops, and what {@link #keepCut} must be given. */
    int paddingDroppedByKeeping(int[] keep) {
        int min = Integer.MAX_VALUE;
        for (int k : keep) {
            min = Math.min(min, leftPadding[k]);
        }
        return keep.length == 0 ? 0 : min;
    }

    /** A copy of these paddings and index, for a copy of the cache whose arrays are {@code copyArrays}. */
    RowPadding copy(Positions copyArrays) {
        RowPadding copy = new RowPadding(leftPadding, copyArrays);
        copy.idx = idx;
        copy.rightPadding = rightPadding == null ? null : rightPadding.clone();
        return copy;
    }

    /** {@code extend}'s index: the larger of the two, where both sides' filled positions end. */
    int joinedIdx(RowPadding other) {
        return Math.max(idx, other.idx);
    }

    /**
     * {@code extend}'s bookkeeping, once the cache has joined its arrays with {@code other}'s
     * shifted right to {@link #joinedIdx}: {@code other}'s rows appended, each side's left
     * padding grown by its shift, the index the joined one.
     */
    void append(RowPadding other) {
        int joined = joinedIdx(other);
        leftPadding = Paddings.concat(
                Paddings.shifted(leftPadding, joined - idx), Paddings.shifted(other.leftPadding, joined - other.idx));
        idx = joined;
    }

    /** {@code extend} of two caches that hold no arrays: {@code other}'s rows appended, the index kept. */
    void appendEmpty(RowPadding other) {
        leftPadding = Paddings.concat(leftPadding, other.leftPadding);
    }

    /** No rows, no positions (the cache closed). */
    void clear() {
        idx = 0;
        leftPadding = new int[0];
        rightPadding = null;
    }

    /** Drops the left padding every row has (the positions before the shortest padding), as {@code filter} does. */
    private void dropCommonPadding() {
        int minPad = Arrays.stream(leftPadding).min().orElse(0);
        if (minPad > 0) {
            if (arrays.stored()) {
                arrays.dropLeadingPositions(minPad);
            }
            shiftIndex(minPad);
        }
    }

    /** The index and every row's padding less {@code positions} (the arrays already cut). */
    private void shiftIndex(int positions) {
        idx -= positions;
        for (int i = 0; i < leftPadding.length; i++) {
            leftPadding[i] -= positions;
        }
    }

    /** Each row's positions (the whole capacity) rolled right by its shift, wrapping ({@code dynamic_roll}). */
    private void rollRowsRight(int[] shift) {
        arrays.rollRowsRight(shift);
    }
}
