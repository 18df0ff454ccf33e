package dev.mlxring.mlx;

import java.util.ArrayList;

/**
 * Owns every {@link MlxArray} created on this thread while it is the innermost open scope, and
 * frees them all in {@link #close()}. This is how a forward pass releases its intermediates
 * deterministically without the GC: open a scope per step, {@link MlxArray#detach() detach} what
 * must outlive it (logits, cache buffers), close the scope.
 *
 * <p>Thread contract: a scope is confined to the thread that opened it, and scopes nest strictly
 * (close in reverse order of opening). Closing an array's handle only drops this side's reference:
 * MLX keeps graph inputs alive on its own, so freeing an intermediate after building on it is safe.
 */
public final class ArrayScope implements AutoCloseable {
    private static final ThreadLocal<ArrayScope> CURRENT = new ThreadLocal<>();

    private final ArrayScope parent;
    private final Thread owner;
    private final ArrayList<MlxArray> owned = new ArrayList<>(256);
    private boolean closed;

    private ArrayScope(ArrayScope parent) {
        this.parent = parent;
        this.owner = Thread.currentThread();
    }

    /** Opens a scope nested in the current one (if any) and makes it current. */
    public static ArrayScope open() {
        ArrayScope scope = new ArrayScope(CURRENT.get());
        CURRENT.set(scope);
        return scope;
    }

    /** The innermost open scope of this thread. */
    static ArrayScope current() {
        ArrayScope scope = CURRENT.get();
        if (scope == null) {
            throw new IllegalStateException(
                    "no ArrayScope is open on thread " + Thread.currentThread().getName()
                            + ": MLX results must have an owner (open one with ArrayScope.open())");
        }
        return scope;
    }

    void adopt(MlxArray array) {
        owned.add(array);
        array.scope = this;
    }

    /** Moves {@code array} into this scope (e.g. from an inner scope that is about to close). */
    public MlxArray take(MlxArray array) {
        if (array.scope != this) {
            array.scope = null;
            adopt(array);
        }
        return array;
    }

    /** Number of arrays this scope still owns (for tests and leak checks). */
    public int ownedCount() {
        int n = 0;
        for (MlxArray a : owned) {
            if (a.scope == this && !a.isClosed()) {
                n++;
            }
        }
        return n;
    }

    @Override
    public void close() {
        if (closed) {
            return;
        }
        if (Thread.currentThread() != owner) {
            throw new IllegalStateException("ArrayScope closed from a thread that did not open it");
        }
        if (CURRENT.get() != this) {
            throw new IllegalStateException("ArrayScopes must close innermost first");
        }
        closed = true;
        for (int i = owned.size() - 1; i >= 0; i--) {
            MlxArray a = owned.get(i);
            if (a.scope == this) {
                a.free();
            }
        }
        owned.clear();
        if (parent == null) {
            CURRENT.remove();
        } else {
            CURRENT.set(parent);
        }
    }
}
