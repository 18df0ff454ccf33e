package dev.mlxring.exec.kv;

import dev.mlxring.mlx.ArrayScope;
import dev.mlxring.mlx.Dtype;
import dev.mlxring.mlx.Mlx;
import dev.mlxring.mlx.MlxArray;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.Collections;
import java.util.IdentityHashMap;
import java.util.List;
import java.util.Objects;
import java.util.Set;

/**
 * mlx-lm's {@code ArraysCache(size, left_padding)}: a layer's recurrent state as a fixed number
 * of arrays (a gated delta net layer keeps two: the convolution's last {@code kernel - 1} inputs
 * {@code [B, kernel - 1, convDim]} and the recurrence state {@code [B, Hv, Dv, Dk]}), null until
 * the first forward writes them. Unlike the KV caches it does not grow with the sequence: each
 * forward replaces the arrays. {@link #offset()} counts the positions the layer has consumed
 * ({@code advance}), which mlx-lm does not keep but the engine reports. In a batch {@link #offset()}
 * is the positions the batch stepped (padding included) and {@link #rowOffset(int)} each row's own:
 * the positions its state has consumed, which a padded or masked position does not count (a row's
 * state is valid only at that position, so {@link #extract} gives it as the solo cache's offset).
 *
 * <p>Rollback: the state cannot be trimmed as a KV cache is, so a caller that may need to forget
 * positions (a speculative verification, a draft model's steps) first calls
 * {@link #keepRollbackPoints()}; the forwards that follow {@link #recordPositions record} the
 * convolution's whole input and the recurrence's state after each position, which the layer
 * computes anyway, and {@link #trim trim(n)} then makes the state the one after the last kept
 * position: the conv state the {@code kernel - 1} inputs ending there (a slice of the recorded
 * input, the same values) and the recurrence's state after that step (the very array the forward
 * computed). Trimming ends the recording; without a recording the cache is not
 * {@link #isTrimmable() trimmable}.
 *
 * <p>One class serves a solo row and a batch of rows, as in mlx-lm: {@link #merge} builds a
 * batch from solo caches, {@link #extract} gives one row back, {@link #filter}, {@link #select}
 * and {@link #extend} change the rows. A batch may carry {@code left_padding} (an all-empty
 * merge: zeros) and, while a right-padded prompt chunk runs, {@code lengths} ({@link #prepare});
 * {@link #makeMask} turns them into the {@code [B, N]} mask the layer applies, and
 * {@link #advance} steps both back by the positions consumed, as mlx-lm does.
 *
 * <p>Ownership: the cache owns the arrays it holds (detached from any scope), frees superseded
 * ones as {@link #set} replaces them, and the rest on {@link #close()}. Single-threaded (the exec
 * thread).
 */
public final class ArraysCache implements KvCache {
    private final MlxArray[] slots;
    private int offset;
    /** Each row's consumed positions; null while every row is at {@link #offset}. */
    private int[] rowOffsets;

    private int[] leftPadding;
    private int[] lengths;
    /** The forwards recorded since {@link #keepRollbackPoints()}, oldest first; null while not recording. */
    private List<Span> recorded;
    /** Arrays the recording keeps alive (its spans' and the slots' superseded ones), freed when it ends. */
    private final Set<MlxArray> recordingOwns = Collections.newSetFromMap(new IdentityHashMap<>());

    /**
     * One recorded forward over {@code states.length - 1} positions.
     *
     * @param convInput the convolution's input {@code [1, kernel - 1 + T, convDim]}: the conv state before, then the
     *     positions
     * @param states {@code states[0]} the recurrence's state before the forward, {@code states[t + 1]} after position
     *     {@code t}
     */
    private record Span(MlxArray convInput, MlxArray[] states) {
        int positions() {
            return states.length - 1;
        }
    }

    /** An empty cache of {@code size} arrays ({@code ArraysCache(size=size)}). */
    public ArraysCache(int size) {
        if (size < 1) {
            throw new IllegalArgumentException("an ArraysCache holds at least one array, got " + size);
        }
        this.slots = new MlxArray[size];
    }

    /**
     * A solo cache holding {@code arrays} (one per slot, taking ownership) after {@code offset}
     * positions: a prefix-cache restore of a recurrent layer's state.
     */
    public static ArraysCache restored(MlxArray[] arrays, int offset) {
        ArraysCache c = new ArraysCache(arrays.length);
        for (int i = 0; i < arrays.length; i++) {
            c.set(i, arrays[i]);
        }
        c.offset = offset;
        return c;
    }

    /** Whether every slot holds an array (a state a snapshot can restore whole). */
    public boolean isFull() {
        return Arrays.stream(slots).allMatch(Objects::nonNull);
    }

    /** How many arrays the cache holds. */
    public int size() {
        return slots.length;
    }

    /** {@code cache[i]}: the array in slot {@code i}, owned by the cache; null while unset. */
    public MlxArray get(int i) {
        return slots[i];
    }

    /** {@code cache[i] = value}: takes ownership of {@code value} and frees the array it replaces. */
    public void set(int i, MlxArray value) {
        Objects.requireNonNull(value, "value");
        MlxArray old = slots[i];
        slots[i] = value.detach();
        if (old != null && old != value) {
            if (recorded != null) {
                recordingOwns.add(old);
            } else {
                old.close();
            }
        }
    }

    /**
     * Starts (or restarts) recording the positions of the forwards that follow, so that
     * {@link #trim} can roll back within them. A solo cache only ({@code batch_size} 1, no padding
     * or lengths).
     *
     * @throws IllegalStateException for a batch or a padded cache
     */
    public void keepRollbackPoints() {
        if (batchSize() != 1 || leftPadding != null || lengths != null) {
            throw new IllegalStateException("rollback points are kept for a solo unpadded cache only, this one has "
                    + batchSize() + " rows" + (leftPadding != null || lengths != null ? " and padding" : ""));
        }
        endRecording();
        recorded = new ArrayList<>();
    }

    /** {@link #keepRollbackPoints()} on every {@link ArraysCache} among {@code caches}; the other caches trim as they are. */
    public static void keepRollbackPoints(KvCache[] caches) {
        for (KvCache c : caches) {
            if (c instanceof ArraysCache a) {
                a.keepRollbackPoints();
            }
        }
    }

    /** Whether the forwards are being recorded ({@link #keepRollbackPoints()} and no {@link #trim} since). */
    public boolean keepsRollbackPoints() {
        return recorded != null;
    }

    /**
     * The layer's forward over {@code states.length - 1} positions, while recording: takes
     * ownership of {@code convInput} ({@code [1, kernel - 1 + T, convDim]}, the conv state before
     * the forward then the positions' inputs) and of every state ({@code states[0]} the recurrence's
     * state before the forward, {@code states[t + 1]} after position {@code t}). Ignored when not
     * recording (the caller's scope keeps the arrays).
     */
    public void recordPositions(MlxArray convInput, MlxArray[] states) {
        if (recorded == null) {
            return;
        }
        if (states.length < 2 || convInput.dim(1) < states.length - 1) {
            throw new IllegalArgumentException("a recorded forward needs at least one position and its conv input, got "
                    + (states.length - 1) + " positions and " + convInput.dim(1) + " conv inputs");
        }
        recordingOwns.add(convInput.detach());
        for (MlxArray s : states) {
            recordingOwns.add(s.detach());
        }
        recorded.add(new Span(convInput, states.clone()));
    }

    private void endRecording() {
        recorded = null;
        for (MlxArray a : recordingOwns) {
            if (!isHeld(a)) {
                a.close();
            }
        }
        recordingOwns.clear();
    }

    private boolean isHeld(MlxArray a) {
        for (MlxArray s : slots) {
            if (s == a) {
                return true;
            }
        }
        return false;
    }

    /** Trimmable while {@link #keepsRollbackPoints() recording}: within the recorded positions. */
    @Override
    public boolean isTrimmable() {
        return recorded != null;
    }

    /**
     * Forgets the last {@code n} recorded positions: the conv state becomes the {@code kernel - 1}
     * inputs ending at the last kept position and the recurrence's state the one after it, and
     * {@link #offset()} steps back by {@code n}; then the recording ends (a {@code trim(0)} only
     * ends it).
     *
     * @return {@code n}
     * @throws IllegalStateException when not recording (and {@code n > 0}), or {@code n} exceeds the positions recorded
     */
    @Override
    public int trim(int n) {
        if (recorded == null && n == 0) {
            return 0;
        }
        if (recorded == null) {
            throw new IllegalStateException("ArraysCache cannot be trimmed: no rollback points were kept"
                    + " (keepRollbackPoints before the forwards to roll back)");
        }
        int total = recorded.stream().mapToInt(Span::positions).sum();
        if (n < 0 || n > total) {
            endRecording();
            throw new IllegalStateException("cannot roll back " + n + " positions, " + total + " were recorded");
        }
        if (n > 0) {
            int keep = total - n;
            Span span = recorded.getFirst();
            int at = keep;
            for (Span sp : recorded) {
                span = sp;
                if (at <= sp.positions()) {
                    break;
                }
                at -= sp.positions();
            }
            // span's first `at` positions are kept: its conv input rows [at, at + kernel - 1), its states[at].
            try (ArrayScope scope = ArrayScope.open()) {
                MlxArray in = span.convInput();
                int nKeep = in.dim(1) - span.positions();
                set(
                        0,
                        Mlx.contiguous(Mlx.slice(
                                in, new int[] {0, at, 0}, new int[] {in.dim(0), at + nKeep, in.dim(2)}, new int[] {
                                    1, 1, 1
                                })));
                set(1, span.states()[at]);
            }
            offset -= n;
            if (rowOffsets != null) {
                for (int i = 0; i < rowOffsets.length; i++) {
                    rowOffsets[i] -= n;
                }
            }
        }
        endRecording();
        return n;
    }

    /** {@code lengths}: each row's valid positions in the chunk being prompted ({@link #prepare}), or null. */
    public int[] lengths() {
        return lengths == null ? null : lengths.clone();
    }

    /** {@code batch_size}: the rows of the first array held, else of the padding or lengths, else 1. */
    public int batchSize() {
        for (MlxArray s : slots) {
            if (s != null) {
                return s.dim(0);
            }
        }
        if (leftPadding != null) {
            return leftPadding.length;
        }
        return lengths != null ? lengths.length : 1;
    }

    /**
     * {@code advance(n)}: the layer stepped {@code n} more positions; lengths and left padding step
     * back by {@code n}. Each row's own offset grows by the positions {@link #makeMask} leaves
     * valid for it ({@code pos >= left_padding} and {@code pos < lengths}), so a padded position
     * never counts.
     */
    public void advance(int n) {
        if (leftPadding != null || lengths != null) {
            int[] rows = rowOffsets();
            for (int i = 0; i < rows.length; i++) {
                int from = leftPadding == null ? 0 : Math.clamp(leftPadding[i], 0, n);
                int to = lengths == null ? n : Math.clamp(lengths[i], 0, n);
                rows[i] += Math.max(0, to - from);
            }
            rowOffsets = rows;
        } else if (rowOffsets != null) {
            for (int i = 0; i < rowOffsets.length; i++) {
                rowOffsets[i] += n;
            }
        }
        offset += n;
        if (lengths != null) {
            lengths = Paddings.shifted(lengths, -n);
        }
        if (leftPadding != null) {
            leftPadding = Paddings.shifted(leftPadding, -n);
        }
    }

    /**
     * {@code make_mask(N)}: null without left padding and lengths; else {@code [B, N]} booleans,
     * true where {@code pos >= left_padding} and {@code pos < lengths} (each where present).
     */
    public MlxArray makeMask(int n) {
        if (leftPadding == null && lengths == null) {
            return null;
        }
        MlxArray pos = Mlx.arange(0, n, 1, Dtype.INT32);
        MlxArray mask = null;
        if (leftPadding != null) {
            mask = Mlx.greaterEqual(pos, Mlx.expandDims(Mlx.fromInts(leftPadding, leftPadding.length), 1));
        }
        if (lengths != null) {
            MlxArray in = Mlx.less(pos, Mlx.expandDims(Mlx.fromInts(lengths, lengths.length), 1));
            mask = mask == null ? in : Mlx.logicalAnd(mask, in);
        }
        return mask;
    }

    /**
     * Row {@code row}'s own offset: the positions its state has consumed (not the padding the
     * batch stepped through), the position at which its state is valid.
     */
    public int rowOffset(int row) {
        Objects.checkIndex(row, batchSize());
        return rowOffsets == null ? offset : rowOffsets[row];
    }

    /** Every row's own offset (a fresh array): {@link #offset} each while none differs. */
    private int[] rowOffsets() {
        if (rowOffsets != null) {
            return rowOffsets.clone();
        }
        int[] rows = new int[batchSize()];
        Arrays.fill(rows, offset);
        return rows;
    }

    /** {@code prepare(lengths=lengths)}: the rows of the next chunk hold {@code lengths} valid positions each. */
    public void prepare(int[] rowLengths) {
        this.lengths = rowLengths.clone();
    }

    /** {@code finalize()}: drops the lengths and the left padding. */
    public void finalizePadding() {
        lengths = null;
        leftPadding = null;
    }

    /** In-place {@code filter(batch_indices)}: keeps those rows of every array, the padding and the lengths. */
    public void filter(int[] keep) {
        MlxArray index = Mlx.fromInts(keep, keep.length);
        for (int i = 0; i < slots.length; i++) {
            if (slots[i] != null) {
                set(i, Mlx.take(slots[i], index, 0));
            }
        }
        if (leftPadding != null) {
            leftPadding = Paddings.gather(leftPadding, keep);
        }
        if (lengths != null) {
            lengths = Paddings.gather(lengths, keep);
        }
        if (rowOffsets != null) {
            rowOffsets = Paddings.gather(rowOffsets, keep);
        }
    }

    /** A copy holding only {@code rows} ({@code copy.deepcopy} then {@code filter}); this cache is unchanged. */
    public ArraysCache select(int[] rows) {
        ArraysCache copy = new ArraysCache(slots.length);
        copy.offset = offset;
        copy.leftPadding = leftPadding == null ? null : leftPadding.clone();
        copy.lengths = lengths == null ? null : lengths.clone();
        copy.rowOffsets = rowOffsets == null ? null : Paddings.gather(rowOffsets, rows);
        MlxArray index = Mlx.fromInts(rows, rows.length);
        for (int i = 0; i < slots.length; i++) {
            if (slots[i] != null) {
                copy.set(i, Mlx.take(slots[i], index, 0));
            }
        }
        if (copy.leftPadding != null) {
            copy.leftPadding = Paddings.gather(copy.leftPadding, rows);
        }
        if (copy.lengths != null) {
            copy.lengths = Paddings.gather(copy.lengths, rows);
        }
        return copy;
    }

    /**
     * In-place {@code extend(other)}: {@code other}'s rows appended after this cache's; an array
     * one side lacks is zeros of the other's shape for its rows, likewise the padding and lengths.
     * Takes over {@code other}'s arrays and leaves it empty.
     */
    public void extend(ArraysCache other) {
        int a = batchSize();
        int b = other.batchSize();
        for (int i = 0; i < slots.length; i++) {
            MlxArray x = slots[i];
            MlxArray y = other.slots[i];
            if (x == null && y == null) {
                continue;
            }
            MlxArray ref = y != null ? y : x;
            MlxArray left = x != null ? x : Mlx.zeros(withRows(ref, a), ref.dtype());
            MlxArray right = y != null ? y : Mlx.zeros(withRows(ref, b), ref.dtype());
            set(i, Mlx.concatenate(0, left, right));
        }
        leftPadding = concat(leftPadding, a, other.leftPadding, b);
        lengths = concat(lengths, a, other.lengths, b);
        rowOffsets = rowOffsets == null && other.rowOffsets == null && offset == other.offset
                ? null
                : Paddings.concat(rowOffsets(a), other.rowOffsets(b));
        offset = Math.max(offset, other.offset);
        other.close();
    }

    private static int[] concat(int[] x, int a, int[] y, int b) {
        if (x == null && y == null) {
            return null;
        }
        return Paddings.concat(x != null ? x : new int[a], y != null ? y : new int[b]);
    }

    /** {@link #rowOffsets()} for a side of {@code rows} rows (its batch size before an extend). */
    private int[] rowOffsets(int rows) {
        if (rowOffsets != null) {
            return rowOffsets.clone();
        }
        int[] all = new int[rows];
        Arrays.fill(all, offset);
        return all;
    }

    private static int[] withRows(MlxArray ref, int rows) {
        int[] shape = ref.shape();
        shape[0] = rows;
        return shape;
    }

    /**
     * {@code extract(idx)}: row {@code row}'s arrays ({@code c[idx:idx+1]}) as a solo cache whose
     * offset is the row's own ({@link #rowOffset}); this cache is unchanged.
     */
    public ArraysCache extract(int row) {
        ArraysCache c = new ArraysCache(slots.length);
        c.offset = rowOffset(row);
        for (int i = 0; i < slots.length; i++) {
            MlxArray s = slots[i];
            int[] start = new int[s.ndim()];
            int[] stop = s.shape();
            int[] strides = new int[s.ndim()];
            Arrays.fill(strides, 1);
            start[0] = row;
            stop[0] = row + 1;
            c.set(i, Mlx.slice(s, start, stop, strides));
        }
        return c;
    }

    /**
     * {@code ArraysCache.merge(caches)}: solo caches into one batch; when all are empty, an empty
     * batch with a left padding of zeros, else each array zeros with every row's own copied in
     * (a row without it stays zero). The solo caches are unchanged (the caller closes them).
     */
    public static ArraysCache merge(ArraysCache... caches) {
        int n = caches[0].slots.length;
        int b = caches.length;
        ArraysCache cache = new ArraysCache(n);
        if (Arrays.stream(caches).allMatch(ArraysCache::isEmpty)) {
            cache.leftPadding = new int[b];
            cache.rowOffsets =
                    Arrays.stream(caches).mapToInt(ArraysCache::offset).toArray();
            cache.offset = Arrays.stream(cache.rowOffsets).max().orElse(0);
            return cache;
        }
        for (int e = 0; e < n; e++) {
            MlxArray init = null;
            for (ArraysCache c : caches) {
                if (c.slots[e] != null) {
                    init = c.slots[e];
                    break;
                }
            }
            MlxArray merged = Mlx.zeros(withRows(init, b), init.dtype());
            for (int i = 0; i < b; i++) {
                MlxArray s = caches[i].slots[e];
                if (s == null) {
                    continue;
                }
                int[] start = new int[s.ndim()];
                int[] stop = s.shape();
                int[] strides = new int[s.ndim()];
                Arrays.fill(strides, 1);
                start[0] = i;
                stop[0] = i + 1;
                merged = KvBuffers.superseding(merged, Mlx.sliceUpdate(merged, s, start, stop, strides));
            }
            cache.set(e, merged);
        }
        cache.rowOffsets = Arrays.stream(caches).mapToInt(ArraysCache::offset).toArray();
        cache.offset = Arrays.stream(cache.rowOffsets).max().orElse(0);
        return cache;
    }

    @Override
    public int offset() {
        return offset;
    }

    @Override
    public MlxArray[] state() {
        return Arrays.stream(slots).filter(Objects::nonNull).toArray(MlxArray[]::new);
    }

    /** mlx-lm's {@code empty()}: {@code cache[0] is None}. */
    @Override
    public boolean isEmpty() {
        return slots[0] == null;
    }

    @Override
    public void close() {
        recorded = null;
        for (MlxArray a : recordingOwns) {
            if (!isHeld(a)) {
                a.close();
            }
        }
        recordingOwns.clear();
        for (int i = 0; i < slots.length; i++) {
            if (slots[i] != null) {
                slots[i].close();
                slots[i] = null;
            }
        }
        leftPadding = null;
        lengths = null;
        rowOffsets = null;
    }
}
