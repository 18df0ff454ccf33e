package dev.mlxring.constraint;

import java.lang.foreign.Arena;
import java.lang.foreign.MemorySegment;
import java.lang.foreign.ValueLayout;
import java.util.Optional;

/**
 * One row's position in a {@link CompiledConstraint}: computes the mask of the tokens the
 * constraint allows next ({@link #computeMask}), then advances by the token sampled ({@link
 * #consume}). Where the constraint accepts, the mask allows the EOS ids; once it has ended (EOS
 * consumed, or nothing more can follow) the mask allows only EOS.
 *
 * <p><b>Threading.</b> Not thread-safe: one owner at a time (llguidance's matcher is not safe for
 * concurrent use). Different matchers may run on different threads at once. The owner may change
 * between calls given a happens-before edge (e.g. a ring-buffer hand-off), so the mask for step
 * t+1 can be computed on a worker while the forward of step t runs.
 *
 * <p><b>Errors.</b> A refused token, an exhausted parser limit or a failed tokenizer callback puts
 * the matcher in an error state: the call throws a {@link ConstraintException} with llguidance's
 * message, and so does every later mask or consume. It cannot be reset.
 */
public final class ConstraintMatcher implements AutoCloseable {
    private final ConstraintTokenizer tokenizer;
    private final MemorySegment handle; // LlgMatcher*
    private final long maskByteSize;
    private boolean closed;

    ConstraintMatcher(ConstraintTokenizer tokenizer, MemorySegment handle, long maskByteSize) {
        this.tokenizer = tokenizer;
        this.handle = handle;
        this.maskByteSize = maskByteSize;
    }

    /** Bytes {@link #computeMask} writes. */
    public long maskByteSize() {
        return maskByteSize;
    }

    /**
     * Writes the mask of the tokens allowed next into the first {@link #maskByteSize()} bytes of
     * {@code dest} (layout: {@link TokenMask}).
     *
     * @param dest caller-owned native memory, 4-byte aligned, at least {@link #maskByteSize()} bytes
     * @throws ConstraintException if the matcher is in an error state; the mask bytes are then all 0
     * @throws IllegalArgumentException if {@code dest} is on the heap, misaligned or too small
     */
    public void computeMask(MemorySegment dest) {
        checkOpen();
        if (!dest.isNative() || dest.address() % Integer.BYTES != 0 || dest.byteSize() < maskByteSize) {
            throw new IllegalArgumentException(
                    "the mask needs " + maskByteSize + " bytes of 4-byte aligned" + " native memory; got " + dest);
        }
        int rc;
        try {
            rc = (int) Llguidance.MATCHER_COMPUTE_MASK_INTO.invokeExact(handle, dest, maskByteSize);
        } catch (Throwable t) {
            throw Llguidance.rethrow(t);
        }
        try {
            tokenizer.checkTokenizeFailure();
            if (rc != 0) {
                throw new ConstraintException("the constraint cannot compute a mask: " + errorOrUnknown());
            }
        } catch (ConstraintException e) {
            dest.asSlice(0, maskByteSize).fill((byte) 0);
            throw e;
        }
    }

    /**
     * Advances by one token (the one sampled under the last mask). An EOS id after the constraint
     * has ended (where the mask allows only EOS) is accepted and changes nothing: the generation
     * ends there.
     *
     * @throws ConstraintException if the constraint does not allow {@code tokenId} here (the
     *     matcher is then in an error state) or is already in one
     */
    public void consume(int tokenId) {
        checkOpen();
        if (tokenizer.isEos(tokenId) && isStopped() && !isError()) {
            return;
        }
        int rc;
        try {
            rc = (int) Llguidance.MATCHER_CONSUME_TOKEN.invokeExact(handle, tokenId);
        } catch (Throwable t) {
            throw Llguidance.rethrow(t);
        }
        tokenizer.checkTokenizeFailure();
        if (rc != 0) {
            throw new ConstraintException("the constraint refused token " + tokenId + ": " + errorOrUnknown());
        }
    }

    /**
     * How many of {@code tokenIds}, from the first, the constraint would accept in turn from here;
     * the matcher does not move.
     *
     * @throws ConstraintException if the matcher is in an error state
     */
    public int acceptedPrefixLength(int... tokenIds) {
        checkOpen();
        int n;
        try (Arena scratch = Arena.ofConfined()) {
            MemorySegment ids = scratch.allocateFrom(ValueLayout.JAVA_INT, tokenIds);
            n = (int) Llguidance.MATCHER_VALIDATE_TOKENS.invokeExact(handle, ids, (long) tokenIds.length);
        } catch (Throwable t) {
            throw Llguidance.rethrow(t);
        }
        tokenizer.checkTokenizeFailure();
        if (n < 0) {
            throw new ConstraintException("the constraint cannot check tokens: " + errorOrUnknown());
        }
        return n;
    }

    /** Whether the output so far is a complete match (EOS would be allowed now). */
    public boolean isAccepting() {
        checkOpen();
        try {
            return (boolean) Llguidance.MATCHER_IS_ACCEPTING.invokeExact(handle);
        } catch (Throwable t) {
            throw Llguidance.rethrow(t);
        }
    }

    /** Whether the matcher has ended: EOS consumed, nothing more can follow, or an error. */
    public boolean isStopped() {
        checkOpen();
        try {
            return (boolean) Llguidance.MATCHER_IS_STOPPED.invokeExact(handle);
        } catch (Throwable t) {
            throw Llguidance.rethrow(t);
        }
    }

    /** Whether the matcher is in an error state (see the class comment). */
    public boolean isError() {
        checkOpen();
        try {
            return (boolean) Llguidance.MATCHER_IS_ERROR.invokeExact(handle);
        } catch (Throwable t) {
            throw Llguidance.rethrow(t);
        }
    }

    /** llguidance's error message, if the matcher is in an error state. */
    public Optional<String> error() {
        checkOpen();
        try {
            return Optional.ofNullable(
                    Llguidance.string((MemorySegment) Llguidance.MATCHER_GET_ERROR.invokeExact(handle)));
        } catch (Throwable t) {
            throw Llguidance.rethrow(t);
        }
    }

    /**
     * Undoes the last {@code tokenCount} consumed tokens.
     *
     * @throws ConstraintException if fewer were consumed or the matcher is in an error state
     */
    public void rollback(int tokenCount) {
        checkOpen();
        if (tokenCount < 0) {
            throw new IllegalArgumentException("tokenCount must be >= 0, got " + tokenCount);
        }
        int rc;
        try {
            rc = (int) Llguidance.MATCHER_ROLLBACK.invokeExact(handle, (long) tokenCount);
        } catch (Throwable t) {
            throw Llguidance.rethrow(t);
        }
        if (rc != 0) {
            throw new ConstraintException(
                    "the constraint cannot roll back " + tokenCount + " token(s): " + errorOrUnknown());
        }
    }

    /** Frees the matcher. Idempotent. */
    @Override
    public void close() {
        if (closed) {
            return;
        }
        closed = true;
        try {
            Llguidance.FREE_MATCHER.invokeExact(handle);
        } catch (Throwable t) {
            throw Llguidance.rethrow(t);
        } finally {
            tokenizer.release();
        }
    }

    private String errorOrUnknown() {
        return error().orElse("(llguidance gave no message)");
    }

    private void checkOpen() {
        if (closed) {
            throw new IllegalStateException("the constraint matcher is closed");
        }
    }
}
