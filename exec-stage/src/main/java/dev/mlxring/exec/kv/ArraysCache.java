package dev.mlxring.exec.kv;

import dev.mlxring.mlx.MlxArray;
import java.util.Arrays;
import java.util.Objects;

/**
 * mlx-lm's {@code ArraysCache(size)}: a layer's recurrent state as a fixed number of arrays (a
 * gated delta net layer keeps two: the convolution's last {@code kernel - 1} inputs
 * {@code [B, kernel - 1, convDim]} and the recurrence state {@code [B, Hv, Dv, Dk]}), null until
 * the first forward writes them. Unlike the KV caches it does not grow with the sequence: each
 * forward replaces the arrays. {@link #offset()} counts the positions the layer has consumed
 * ({@code advance}), which mlx-lm does not keep but the engine reports; the state cannot be
 * rolled back ({@link #isTrimmable()} is false).
 *
 * <p>Ownership: the cache owns the arrays it holds (detached from any scope), frees superseded
 * ones as {@link #set} replaces them, and the rest on {@link #close()}. Single-threaded (the exec
 * thread).
 */
public final class ArraysCache implements KvCache {
    private final MlxArray[] slots;
    private int offset;

    /** An empty cache of {@code size} arrays ({@code ArraysCache(size=size)}). */
    public ArraysCache(int size) {
        if (size < 1) {
            throw new IllegalArgumentException("an ArraysCache holds at least one array, got " + size);
        }
        this.slots = new MlxArray[size];
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
            old.close();
        }
    }

    /** {@code advance(n)}: the layer consumed {@code n} more positions. */
    public void advance(int n) {
        offset += n;
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
        for (int i = 0; i < slots.length; i++) {
            if (slots[i] != null) {
                slots[i].close();
                slots[i] = null;
            }
        }
    }
}
