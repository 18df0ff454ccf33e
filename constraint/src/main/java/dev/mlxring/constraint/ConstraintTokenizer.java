package dev.mlxring.constraint;

import java.lang.foreign.Arena;
import java.lang.foreign.MemoryLayout;
import java.lang.foreign.MemorySegment;
import java.lang.foreign.StructLayout;
import java.lang.foreign.ValueLayout;
import java.lang.invoke.MethodHandle;
import java.lang.invoke.MethodHandles;
import java.lang.invoke.MethodType;
import java.nio.ByteBuffer;
import java.nio.charset.CharacterCodingException;
import java.nio.charset.CodingErrorAction;
import java.nio.charset.StandardCharsets;
import java.util.concurrent.atomic.AtomicReference;

/**
 * A model's vocabulary as llguidance's tokenizer ({@code LlgTokenizer}): the token trie that every
 * mask is computed over, its EOS ids, and the model's {@link CanonicalTokenizer} (called back from
 * llguidance through an FFM upcall). Built once per model, shared by every constraint compiled for
 * that model.
 *
 * <p><b>Threading.</b> {@link CompiledConstraint#compile} may use one instance from any number of
 * threads at once. {@link #close()} frees the native tokenizer; it refuses (throws) while a {@link
 * CompiledConstraint} or {@link ConstraintMatcher} made from it is still open, since those use it
 * (and the upcall) until they are closed.
 *
 * <p><b>Fail closed.</b> Should the canonical tokenizer throw (or return an id outside the
 * vocabulary) inside a callback, llguidance gets no tokens for that text and the failure is kept:
 * the operation that triggered it, and every later one on any constraint of this tokenizer, throws
 * a {@link ConstraintException} naming it.
 */
public final class ConstraintTokenizer implements AutoCloseable {
    private static final int ERROR_BUFFER_BYTES = 1024;
    private static final MethodHandle TOKENIZE_UPCALL;

    static {
        try {
            TOKENIZE_UPCALL = MethodHandles.lookup()
                    .findVirtual(
                            ConstraintTokenizer.class,
                            "tokenizeUpcall",
                            MethodType.methodType(
                                    long.class,
                                    MemorySegment.class,
                                    MemorySegment.class,
                                    long.class,
                                    MemorySegment.class,
                                    long.class));
        } catch (ReflectiveOperationException e) {
            throw new ExceptionInInitializerError(e);
        }
    }

    private final Arena arena;
    private final MemorySegment handle;
    private final int vocabSize;
    private final int[] eosTokenIds;
    private final CanonicalTokenizer canonical;
    private final AtomicReference<Throwable> tokenizeFailure = new AtomicReference<>();
    private int openDependents; // guarded by this
    private boolean closed; // guarded by this

    private ConstraintTokenizer(ConstraintVocabulary vocabulary, int[] eosTokenIds, CanonicalTokenizer canonical) {
        this.vocabSize = vocabulary.size();
        this.eosTokenIds = eosTokenIds;
        this.canonical = canonical;
        this.arena = Arena.ofShared();
        try {
            this.handle = newNativeTokenizer(vocabulary);
        } catch (RuntimeException | Error e) {
            arena.close();
            throw e;
        }
    }

    /**
     * Builds llguidance's tokenizer for a model.
     *
     * @param vocabulary the model's token bytes ({@link ConstraintVocabulary#fromTokenizerJson})
     * @param eosTokenIds the ids that end a generation (at least one; the first is llguidance's
     *     main EOS): where the constraint accepts, the mask allows them, and consuming one stops it
     * @param canonical the model's own tokenization (thread-safe; see {@link CanonicalTokenizer})
     * @return the tokenizer; the caller owns it and must {@link #close()} it
     * @throws IllegalArgumentException if no EOS id is given, one is outside the vocabulary, or
     *     llguidance refuses the vocabulary (its message)
     */
    public static ConstraintTokenizer create(
            ConstraintVocabulary vocabulary, int[] eosTokenIds, CanonicalTokenizer canonical) {
        if (eosTokenIds.length == 0) {
            throw new IllegalArgumentException("at least one EOS token id is needed");
        }
        for (int id : eosTokenIds) {
            if (id < 0 || id >= vocabulary.size()) {
                throw new IllegalArgumentException(
                        "EOS token id " + id + " is outside the vocabulary of " + vocabulary.size() + " ids");
            }
        }
        if (canonical == null) {
            throw new IllegalArgumentException("a canonical tokenizer is needed");
        }
        return new ConstraintTokenizer(vocabulary, eosTokenIds.clone(), canonical);
    }

    /** The number of token ids a mask covers. */
    public int vocabSize() {
        return vocabSize;
    }

    /** The EOS ids (a copy). */
    public int[] eosTokenIds() {
        return eosTokenIds.clone();
    }

    /** Whether {@code tokenId} is one of the EOS ids. */
    public boolean isEos(int tokenId) {
        for (int id : eosTokenIds) {
            if (id == tokenId) {
                return true;
            }
        }
        return false;
    }

    /** Bytes of one token mask: one bit per token id, rounded up to whole 32-bit words. */
    public long maskByteSize() {
        return TokenMask.byteSize(vocabSize);
    }

    /**
     * Frees the native tokenizer. Idempotent.
     *
     * @throws IllegalStateException while a constraint or matcher made from it is open
     */
    @Override
    public synchronized void close() {
        if (closed) {
            return;
        }
        if (openDependents > 0) {
            throw new IllegalStateException("cannot close the constraint tokenizer: " + openDependents
                    + " compiled constraint(s) or matcher(s) made from it are still open");
        }
        closed = true;
        try {
            Llguidance.FREE_TOKENIZER.invokeExact(handle);
        } catch (Throwable t) {
            throw Llguidance.rethrow(t);
        } finally {
            arena.close();
        }
    }

    /** Registers one open user of the native tokenizer; returns the handle to use. */
    synchronized MemorySegment acquire() {
        if (closed) {
            throw new IllegalStateException("the constraint tokenizer is closed");
        }
        openDependents++;
        return handle;
    }

    /** Ends one {@link #acquire()}. */
    synchronized void release() {
        openDependents--;
    }

    /**
     * A zeroed {@code LlgConstraintInit} in {@code scratch} with llguidance's defaults (no
     * fast-forward tokens, no backtracking, default parser limits), logging off.
     */
    MemorySegment constraintInit(Arena scratch) {
        MemorySegment init = scratch.allocate(Llguidance.CONSTRAINT_INIT);
        try {
            Llguidance.CONSTRAINT_INIT_SET_DEFAULTS.invokeExact(init, handle);
        } catch (Throwable t) {
            throw Llguidance.rethrow(t);
        }
        init.set(Llguidance.INT, offset(Llguidance.CONSTRAINT_INIT, "log_buffer_level"), 0);
        init.set(Llguidance.INT, offset(Llguidance.CONSTRAINT_INIT, "log_stderr_level"), 0);
        return init;
    }

    /** Throws if the canonical tokenizer has failed inside a callback (see the class comment). */
    void checkTokenizeFailure() {
        Throwable t = tokenizeFailure.get();
        if (t != null) {
            throw new ConstraintException("the model's canonical tokenizer failed inside llguidance: " + t);
        }
    }

    private MemorySegment newNativeTokenizer(ConstraintVocabulary vocabulary) {
        try (Arena scratch = Arena.ofConfined()) {
            long totalBytes = 0;
            for (int id = 0; id < vocabSize; id++) {
                totalBytes += vocabulary.lengthInBytes(id);
            }
            MemorySegment lens = scratch.allocate(ValueLayout.JAVA_INT, vocabSize);
            MemorySegment bytes = scratch.allocate(Math.max(1, totalBytes));
            long offset = 0;
            for (int id = 0; id < vocabSize; id++) {
                byte[] b = vocabulary.bytesUnsafe(id);
                lens.setAtIndex(ValueLayout.JAVA_INT, id, b.length);
                MemorySegment.copy(b, 0, bytes, ValueLayout.JAVA_BYTE, offset, b.length);
                offset += b.length;
            }
            MemorySegment extraEos = scratch.allocate(ValueLayout.JAVA_INT, Math.max(1, eosTokenIds.length - 1));
            for (int i = 1; i < eosTokenIds.length; i++) {
                extraEos.setAtIndex(ValueLayout.JAVA_INT, i - 1, eosTokenIds[i]);
            }
            MemorySegment stub = Llguidance.upcallStub(TOKENIZE_UPCALL.bindTo(this), arena);
            var layout = Llguidance.TOKENIZER_INIT_V2;
            MemorySegment init = scratch.allocate(layout); // zeroed: every field not set below is 0 / NULL
            init.set(Llguidance.SIZE_T, offset(layout, "struct_size"), layout.byteSize());
            init.set(Llguidance.INT, offset(layout, "vocab_size"), vocabSize);
            init.set(Llguidance.INT, offset(layout, "tok_eos"), eosTokenIds[0]);
            init.set(Llguidance.ADDR, offset(layout, "token_lens"), lens);
            init.set(Llguidance.ADDR, offset(layout, "token_bytes"), bytes);
            // The canonical tokenizer takes text: llguidance hands it each valid UTF-8 run and
            // tokenizes invalid bytes greedily, as its Hugging Face front end does.
            init.set(Llguidance.BOOL, offset(layout, "tokenize_assumes_string"), true);
            init.set(Llguidance.ADDR, offset(layout, "tokenize_fn"), stub);
            if (eosTokenIds.length > 1) {
                init.set(Llguidance.ADDR, offset(layout, "tok_eos_extra"), extraEos);
                init.set(Llguidance.INT, offset(layout, "tok_eos_extra_count"), eosTokenIds.length - 1);
            }
            MemorySegment error = scratch.allocate(ERROR_BUFFER_BYTES);
            MemorySegment tokenizer;
            try {
                tokenizer =
                        (MemorySegment) Llguidance.NEW_TOKENIZER_V2.invokeExact(init, error, (long) ERROR_BUFFER_BYTES);
            } catch (Throwable t) {
                throw Llguidance.rethrow(t);
            }
            if (tokenizer.equals(MemorySegment.NULL)) {
                throw new IllegalArgumentException("llguidance refused the vocabulary: " + error.getString(0));
            }
            return tokenizer;
        }
    }

    private static long offset(StructLayout layout, String field) {
        return layout.byteOffset(MemoryLayout.PathElement.groupElement(field));
    }

    /** {@code LlgTokenizeFn}: never throws into native code (see the class comment). */
    @SuppressWarnings("unused") // the upcall target
    private long tokenizeUpcall(
            MemorySegment userData, MemorySegment bytes, long lengthInBytes, MemorySegment out, long outCapacity) {
        try {
            ByteBuffer utf8 = bytes.reinterpret(lengthInBytes).asByteBuffer();
            String text = StandardCharsets.UTF_8
                    .newDecoder()
                    .onMalformedInput(CodingErrorAction.REPORT)
                    .onUnmappableCharacter(CodingErrorAction.REPORT)
                    .decode(utf8)
                    .toString();
            int[] ids = canonical.encode(text);
            for (int id : ids) {
                if (id < 0 || id >= vocabSize) {
                    throw new IllegalStateException(
                            "it returned the token id " + id + ", outside the vocabulary of " + vocabSize + " ids");
                }
            }
            MemorySegment dest = out.reinterpret(outCapacity * Integer.BYTES);
            int n = (int) Math.min(ids.length, outCapacity);
            MemorySegment.copy(ids, 0, dest, ValueLayout.JAVA_INT, 0, n);
            return ids.length;
        } catch (CharacterCodingException e) {
            tokenizeFailure.compareAndSet(null, new IllegalStateException("llguidance passed invalid UTF-8 text", e));
            return 0;
        } catch (Throwable t) {
            tokenizeFailure.compareAndSet(null, t);
            return 0;
        }
    }
}
