package dev.mlxring.constraint;

import java.lang.foreign.Arena;
import java.lang.foreign.MemorySegment;

/**
 * A schema, grammar or regex compiled by llguidance for one model's {@link ConstraintTokenizer}:
 * compile once per request (off the exec thread; compiling a large schema takes milliseconds), then
 * make one {@link ConstraintMatcher} per generated row with {@link #newMatcher()} (a cheap copy of
 * the compiled start state).
 *
 * <p><b>Threading.</b> {@link #compile} may run on any thread, several at once over one tokenizer.
 * {@link #newMatcher()} may be called from any thread. {@link #close()} frees the compiled state;
 * matchers already made stay valid (each owns its copy).
 */
public final class CompiledConstraint implements AutoCloseable {
    private final ConstraintTokenizer tokenizer;
    private final ConstraintKind kind;
    private final MemorySegment template; // LlgMatcher* in the start state; never advanced
    private final long maskByteSize;
    private boolean closed; // guarded by this

    private CompiledConstraint(
            ConstraintTokenizer tokenizer, ConstraintKind kind, MemorySegment template, long maskByteSize) {
        this.tokenizer = tokenizer;
        this.kind = kind;
        this.template = template;
        this.maskByteSize = maskByteSize;
    }

    /**
     * Compiles {@code source} with llguidance's default options and parser limits.
     *
     * @param tokenizer the model's tokenizer (must stay open until this constraint and every
     *     matcher made from it are closed)
     * @param kind the language {@code source} is written in
     * @param source the schema (JSON text), grammar or regex
     * @return the compiled constraint; the caller owns it and must {@link #close()} it
     * @throws ConstraintException if llguidance refuses {@code source}; the message is {@code kind}'s
     *     tag followed by llguidance's error, which names the unsupported keyword, the undefined rule
     *     or the position of the syntax error
     * @throws IllegalStateException if the tokenizer is closed
     */
    public static CompiledConstraint compile(ConstraintTokenizer tokenizer, ConstraintKind kind, String source) {
        if (source.indexOf('\0') >= 0) {
            throw new ConstraintException(kind.llguidanceTag() + " constraint contains the character U+0000,"
                    + " which llguidance's C API cannot take");
        }
        MemorySegment tokenizerHandle = tokenizer.acquire();
        MemorySegment matcher = MemorySegment.NULL;
        try (Arena scratch = Arena.ofConfined()) {
            MemorySegment init = tokenizer.constraintInit(scratch);
            matcher = (MemorySegment) Llguidance.NEW_MATCHER.invokeExact(
                    init, scratch.allocateFrom(kind.llguidanceTag()), scratch.allocateFrom(source));
            tokenizer.checkTokenizeFailure();
            String error = Llguidance.string((MemorySegment) Llguidance.MATCHER_GET_ERROR.invokeExact(matcher));
            if (error != null) {
                throw new ConstraintException(kind.llguidanceTag() + " constraint does not compile: " + error);
            }
            long maskByteSize = (long) Llguidance.MATCHER_GET_MASK_BYTE_SIZE.invokeExact(matcher);
            if (maskByteSize != tokenizer.maskByteSize()) {
                throw new IllegalStateException("llguidance's mask is " + maskByteSize + " bytes, expected "
                        + tokenizer.maskByteSize() + " for " + tokenizer.vocabSize() + " token ids");
            }
            assert tokenizerHandle != null;
            return new CompiledConstraint(tokenizer, kind, matcher, maskByteSize);
        } catch (Throwable t) {
            free(matcher);
            tokenizer.release();
            throw Llguidance.rethrow(t);
        }
    }

    /** The language this constraint was written in. */
    public ConstraintKind kind() {
        return kind;
    }

    /** Bytes of one mask ({@link TokenMask#byteSize} of the tokenizer's vocabulary). */
    public long maskByteSize() {
        return maskByteSize;
    }

    /**
     * A matcher in the start state, for one row.
     *
     * @return the matcher; the caller owns it and must {@link ConstraintMatcher#close()} it
     * @throws IllegalStateException if this constraint is closed
     */
    public synchronized ConstraintMatcher newMatcher() {
        if (closed) {
            throw new IllegalStateException("the compiled constraint is closed");
        }
        tokenizer.acquire();
        MemorySegment copy;
        try {
            copy = (MemorySegment) Llguidance.CLONE_MATCHER.invokeExact(template);
        } catch (Throwable t) {
            tokenizer.release();
            throw Llguidance.rethrow(t);
        }
        if (copy.equals(MemorySegment.NULL)) {
            tokenizer.release();
            throw new IllegalStateException("llguidance could not copy the compiled constraint");
        }
        return new ConstraintMatcher(tokenizer, copy, maskByteSize);
    }

    /** Frees the compiled start state. Idempotent; matchers already made stay valid. */
    @Override
    public synchronized void close() {
        if (closed) {
            return;
        }
        closed = true;
        free(template);
        tokenizer.release();
    }

    private static void free(MemorySegment matcher) {
        try {
            Llguidance.FREE_MATCHER.invokeExact(matcher); // null is a no-op
        } catch (Throwable t) {
            throw Llguidance.rethrow(t);
        }
    }
}
