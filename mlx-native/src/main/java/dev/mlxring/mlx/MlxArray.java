package dev.mlxring.mlx;

import java.lang.foreign.Arena;
import java.lang.foreign.MemorySegment;
import java.lang.foreign.ValueLayout;

/**
 * One Java-side reference to an MLX array (a lazily evaluated graph node). Exactly one owner
 * frees it: the {@link ArrayScope} it was created in, or - after {@link #detach()} - whoever
 * detached it, by calling {@link #close()}. Not thread-safe: only the thread that drives MLX uses it.
 */
public final class MlxArray implements AutoCloseable {
    private MemorySegment handle;
    ArrayScope scope;

    private MlxArray(MemorySegment handle) {
        this.handle = handle;
    }

    /** Wraps a fresh handle from the shim into the current scope; NULL means the shim reported an error. */
    static MlxArray own(MemorySegment handle) {
        if (handle.address() == 0) {
            throw new MlxException(Shim.lastError());
        }
        MlxArray array = new MlxArray(handle);
        ArrayScope.current().adopt(array);
        return array;
    }

    MemorySegment handle() {
        if (handle == null) {
            throw new IllegalStateException("MlxArray used after close");
        }
        return handle;
    }

    static MemorySegment handleOrNull(MlxArray a) {
        return a == null ? MemorySegment.NULL : a.handle();
    }

    /** Removes this array from its scope: the caller now owns it and must {@link #close()} it. */
    public MlxArray detach() {
        scope = null;
        return this;
    }

    public boolean isClosed() {
        return handle == null;
    }

    @Override
    public void close() {
        scope = null;
        free();
    }

    void free() {
        if (handle != null) {
            Shim.free(handle);
            handle = null;
        }
    }

    public int ndim() {
        return Shim.ndim(handle());
    }

    public int dim(int axis) {
        int n = ndim();
        return Shim.dim(handle(), axis < 0 ? axis + n : axis);
    }

    public int[] shape() {
        int[] s = new int[ndim()];
        for (int i = 0; i < s.length; i++) {
            s[i] = Shim.dim(handle(), i);
        }
        return s;
    }

    public Dtype dtype() {
        return Dtype.ofCode(Shim.dtype(handle()));
    }

    public long size() {
        return Shim.size(handle());
    }

    public long nbytes() {
        return Shim.nbytes(handle());
    }

    /**
     * Evaluates and copies the row-major bytes into {@code dst} (native memory of at least
     * {@link #nbytes()} bytes), with no heap copy in between.
     */
    public void copyTo(MemorySegment dst) {
        long n = nbytes();
        if (dst.byteSize() < n) {
            throw new IllegalArgumentException("destination holds " + dst.byteSize() + " bytes, the array " + n);
        }
        Shim.toBytes(handle(), dst, n);
    }

    /** Evaluates and copies the row-major bytes out. */
    public byte[] toBytes() {
        long n = nbytes();
        try (Arena arena = Arena.ofConfined()) {
            MemorySegment dst = arena.allocate(Math.max(n, 1));
            Shim.toBytes(handle(), dst, n);
            return dst.asSlice(0, n).toArray(ValueLayout.JAVA_BYTE);
        }
    }

    /** Evaluates and copies the elements out as ints (the array must be int32 or uint32). */
    public int[] toIntArray() {
        Dtype dt = dtype();
        if (dt != Dtype.INT32 && dt != Dtype.UINT32) {
            throw new IllegalStateException("toIntArray on a " + dt.mlxName + " array");
        }
        long n = size();
        try (Arena arena = Arena.ofConfined()) {
            MemorySegment dst = arena.allocate(Math.max(n * 4, 4));
            Shim.toBytes(handle(), dst, n * 4);
            return dst.asSlice(0, n * 4).toArray(ValueLayout.JAVA_INT);
        }
    }

    /** Evaluates and converts to float32 values. */
    public float[] toFloatArray() {
        try (ArrayScope s = ArrayScope.open()) {
            MlxArray f = dtype() == Dtype.FLOAT32 ? this : Mlx.astype(this, Dtype.FLOAT32);
            long n = size();
            try (Arena arena = Arena.ofConfined()) {
                MemorySegment dst = arena.allocate(Math.max(n * 4, 4));
                Shim.toBytes(f.handle(), dst, n * 4);
                return dst.asSlice(0, n * 4).toArray(ValueLayout.JAVA_FLOAT);
            }
        }
    }

    /** The single element of a one-element integer array, evaluating it ({@code item()}). */
    public int itemInt() {
        int[] v = toIntArray();
        if (v.length != 1) {
            throw new IllegalStateException("itemInt on an array of " + v.length + " elements");
        }
        return v[0];
    }
}
