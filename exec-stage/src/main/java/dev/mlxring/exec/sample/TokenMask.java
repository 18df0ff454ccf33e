package dev.mlxring.exec.sample;

import dev.mlxring.mlx.Dtype;
import dev.mlxring.mlx.Mlx;
import dev.mlxring.mlx.MlxArray;
import dev.mlxring.pipeline.Outcome.ErrorType;
import dev.mlxring.pipeline.TokenConstraint;
import java.lang.foreign.Arena;
import java.lang.foreign.MemorySegment;
import java.lang.foreign.ValueLayout;
import java.util.Arrays;

/**
 * A request's {@link TokenConstraint} as the last of its logits processors: each step's mask is
 * the constraint's allowed set as a bool {@code [vocab]} array, applied as mlx-lm's
 * {@code logits = mx.where(mask, logits, -inf)} after the request's own processors (bias,
 * penalties) and before logsumexp, so the step's logprobs are those of the masked logits. The
 * run calls {@link #next()} when it builds a step and {@link #consume} with the token that step
 * sampled, before it builds the following one.
 *
 * <p>When the constraint allows no token, or throws, or refuses a sampled token, the mask
 * records a {@link #failure()} and its row ends with it. Owns the constraint and closes it once
 * ({@link #close()}). Exec thread only.
 */
public final class TokenMask implements AutoCloseable {
    private final TokenConstraint constraint;
    private final int vocab;
    private final int[] words;
    private final byte[] allowed;
    private final MemorySegment staging;
    private int consumed;
    private String failure;
    private ErrorType failureType;
    private boolean closed;

    /** Takes ownership of {@code constraint} over a model of {@code vocab} logits. */
    public TokenMask(TokenConstraint constraint, int vocab) {
        if (vocab <= 0) {
            throw new IllegalArgumentException("vocab must be > 0, got " + vocab);
        }
        this.constraint = constraint;
        this.vocab = vocab;
        this.words = new int[(vocab + 31) / 32];
        this.allowed = new byte[vocab];
        this.staging = Arena.ofAuto().allocate(vocab);
    }

    /**
     * The next token's mask: a bool {@code [vocab]} array in the current scope, or null when no
     * token is allowed or the constraint failed ({@link #failure()} then says why; the step's
     * token must not be used).
     */
    public MlxArray next() {
        if (failure != null) {
            return null;
        }
        Arrays.fill(words, 0);
        boolean any;
        try {
            any = constraint.allowedTokens(words);
        } catch (RuntimeException e) {
            fail(ErrorType.INTERNAL, constraint.name() + " failed after " + consumed + " tokens: " + e.getMessage());
            return null;
        }
        if (!any || expand() == 0) {
            String why = constraint.error();
            fail(
                    ErrorType.INVALID_REQUEST,
                    constraint.name() + " can no longer be satisfied: no token is allowed after " + consumed
                            + " generated tokens" + (why == null ? "" : " (" + why + ")"));
            return null;
        }
        MemorySegment.copy(allowed, 0, staging, ValueLayout.JAVA_BYTE, 0, vocab);
        return Mlx.fromBytes(staging, new int[] {vocab}, Dtype.BOOL);
    }

    /** {@code mx.where(mask, logits, -inf)}: the result has {@code logits}' shape and dtype. */
    public static MlxArray apply(MlxArray mask, MlxArray logits) {
        return Mlx.where(mask, logits, Mlx.scalar(Double.NEGATIVE_INFINITY, logits.dtype()));
    }

    /**
     * Advances the constraint past {@code token}, the token the last mask's step sampled.
     *
     * @return false when the constraint refused it or threw ({@link #failure()} says why)
     */
    public boolean consume(int token) {
        if (failure != null) {
            return false;
        }
        try {
            constraint.consume(token);
        } catch (RuntimeException e) {
            fail(
                    ErrorType.INTERNAL,
                    constraint.name() + " refused sampled token " + token + " after " + consumed + " tokens: "
                            + e.getMessage());
            return false;
        }
        consumed++;
        return true;
    }

    /** Why the row must end (the constraint allows nothing, failed or refused a token), or null. */
    public String failure() {
        return failure;
    }

    /** The failure's type: INVALID_REQUEST when nothing is allowed, INTERNAL when the constraint broke. */
    public ErrorType failureType() {
        return failureType;
    }

    /** Words into {@link #allowed} bytes; returns how many tokens below {@code vocab} are allowed. */
    private int expand() {
        int count = 0;
        for (int w = 0; w < words.length; w++) {
            int bits = words[w];
            int base = w << 5;
            int end = Math.min(32, vocab - base);
            if (bits == 0) {
                Arrays.fill(allowed, base, base + end, (byte) 0);
                continue;
            }
            for (int b = 0; b < end; b++) {
                int on = (bits >>> b) & 1;
                allowed[base + b] = (byte) on;
                count += on;
            }
        }
        return count;
    }

    private void fail(ErrorType type, String message) {
        failure = message;
        failureType = type;
    }

    /** Closes the constraint (once). */
    @Override
    public void close() {
        if (!closed) {
            closed = true;
            constraint.close();
        }
    }
}
