package dev.mlxring.plan.constraint;

import dev.mlxring.constraint.ConstraintException;
import dev.mlxring.constraint.ConstraintMatcher;
import dev.mlxring.constraint.TokenMask;
import dev.mlxring.pipeline.TokenConstraint;
import java.lang.foreign.Arena;
import java.lang.foreign.MemorySegment;
import java.lang.foreign.ValueLayout;

/**
 * A {@link TokenConstraint} over one llguidance {@link ConstraintMatcher}: the mask is computed
 * into this row's off-heap buffer and copied into exec's words. Owns the matcher and the buffer;
 * exec thread only once handed over (see {@link TokenConstraint}); the methods are synchronized
 * all the same (uncontended) so that a close from the sink thread, for a session settled while
 * exec still held the row, never frees the matcher under a mask computation.
 */
final class MatcherConstraint implements TokenConstraint {
    private final ConstraintMatcher matcher;
    private final String name;
    private final Arena arena = Arena.ofShared();
    private final MemorySegment mask;
    private final int words;
    private String error;
    private boolean closed;

    MatcherConstraint(ConstraintMatcher matcher, String name) {
        this.matcher = matcher;
        this.name = name;
        this.mask = arena.allocate(matcher.maskByteSize(), Integer.BYTES);
        this.words = (int) (matcher.maskByteSize() / Integer.BYTES);
    }

    @Override
    public synchronized boolean allowedTokens(int[] out) {
        if (closed) {
            throw new IllegalStateException("the constraint is closed");
        }
        try {
            matcher.computeMask(mask);
        } catch (ConstraintException e) {
            error = e.getMessage();
            java.util.Arrays.fill(out, 0);
            return false;
        }
        int n = Math.min(words, out.length);
        MemorySegment.copy(mask, ValueLayout.JAVA_INT, 0, out, 0, n);
        java.util.Arrays.fill(out, n, out.length, 0);
        if (TokenMask.allowedCount(mask) == 0) {
            error = "the constraint allows no next token"
                    + matcher.error().map(m -> ": " + m).orElse("");
            return false;
        }
        return true;
    }

    @Override
    public synchronized void consume(int token) {
        try {
            matcher.consume(token);
        } catch (ConstraintException e) {
            error = e.getMessage();
            throw new IllegalStateException(e.getMessage(), e);
        }
    }

    @Override
    public String name() {
        return name;
    }

    @Override
    public String error() {
        return error;
    }

    @Override
    public synchronized void close() {
        if (closed) {
            return;
        }
        closed = true;
        try {
            matcher.close();
        } finally {
            arena.close();
        }
    }
}
