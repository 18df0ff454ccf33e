package dev.mlxring.constraint;

import dev.mlxring.mlx.ProjectHome;
import java.lang.foreign.AddressLayout;
import java.lang.foreign.Arena;
import java.lang.foreign.FunctionDescriptor;
import java.lang.foreign.Linker;
import java.lang.foreign.MemoryLayout;
import java.lang.foreign.MemorySegment;
import java.lang.foreign.StructLayout;
import java.lang.foreign.SymbolLookup;
import java.lang.foreign.ValueLayout;
import java.lang.invoke.MethodHandle;
import java.nio.file.Files;
import java.nio.file.Path;

/**
 * llguidance's C API ({@code llguidance.h} of the crate version pinned in {@code
 * constraint/src/main/rust/Cargo.toml}), loaded once from {@code libllguidance.so} (built by {@code
 * scripts/build_llguidance.sh}) and mapped for the life of the JVM. Holds the downcall handles and
 * the layouts of the structs this binding fills; the public types of this package own the native
 * objects.
 *
 * <p>The library is looked up at {@code -Dmlxring.llguidance}, then {@code $MLXRING_LLGUIDANCE},
 * then {@code build/native/libllguidance.so} under the project home. Loading it loads nothing of
 * MLX.
 */
final class Llguidance {
    static final AddressLayout ADDR = ValueLayout.ADDRESS;
    static final ValueLayout.OfInt INT = ValueLayout.JAVA_INT;
    static final ValueLayout.OfLong SIZE_T = ValueLayout.JAVA_LONG;
    static final ValueLayout.OfBoolean BOOL = ValueLayout.JAVA_BOOLEAN;

    /** {@code LlgParserLimits} (x86-64 and aarch64 LP64: 56 bytes). */
    static final StructLayout PARSER_LIMITS = MemoryLayout.structLayout(
            SIZE_T.withName("max_items_in_row"),
            ValueLayout.JAVA_LONG.withName("initial_lexer_fuel"),
            ValueLayout.JAVA_LONG.withName("step_lexer_fuel"),
            SIZE_T.withName("step_max_items"),
            SIZE_T.withName("max_lexer_states"),
            SIZE_T.withName("max_grammar_size"),
            BOOL.withName("precompute_large_lexemes"),
            BOOL.withName("verbose_errors"),
            MemoryLayout.paddingLayout(6));

    /** {@code LlgConstraintInit} (80 bytes). */
    static final StructLayout CONSTRAINT_INIT = MemoryLayout.structLayout(
            ADDR.withName("tokenizer"),
            INT.withName("log_buffer_level"),
            INT.withName("log_stderr_level"),
            BOOL.withName("ff_tokens_ok"),
            BOOL.withName("backtrack_ok"),
            MemoryLayout.paddingLayout(6),
            PARSER_LIMITS.withName("limits"));

    /** {@code LlgTokenizerInitV2} (96 bytes). */
    static final StructLayout TOKENIZER_INIT_V2 = MemoryLayout.structLayout(
            SIZE_T.withName("struct_size"),
            INT.withName("vocab_size"),
            INT.withName("tok_eos"),
            ADDR.withName("token_lens"),
            ADDR.withName("token_bytes"),
            ADDR.withName("tokenizer_json"),
            BOOL.withName("tokenize_assumes_string"),
            MemoryLayout.paddingLayout(7),
            ADDR.withName("tokenize_fn"),
            BOOL.withName("use_approximate_greedy_tokenize_fn"),
            MemoryLayout.paddingLayout(7),
            ADDR.withName("tokenize_user_data"),
            ADDR.withName("slices"),
            ADDR.withName("tok_eos_extra"),
            INT.withName("tok_eos_extra_count"),
            MemoryLayout.paddingLayout(4));

    /** {@code LlgTokenizeFn}: {@code size_t (const void*, const uint8_t*, size_t, uint32_t*, size_t)}. */
    static final FunctionDescriptor TOKENIZE_FN = FunctionDescriptor.of(SIZE_T, ADDR, ADDR, SIZE_T, ADDR, SIZE_T);

    private static final Linker LINKER = Linker.nativeLinker();
    private static final SymbolLookup LOOKUP = load();

    static final MethodHandle CONSTRAINT_INIT_SET_DEFAULTS =
            handle("llg_constraint_init_set_defaults", FunctionDescriptor.ofVoid(ADDR, ADDR));
    static final MethodHandle NEW_TOKENIZER_V2 =
            handle("llg_new_tokenizer_v2", FunctionDescriptor.of(ADDR, ADDR, ADDR, SIZE_T));
    static final MethodHandle FREE_TOKENIZER = handle("llg_free_tokenizer", FunctionDescriptor.ofVoid(ADDR));
    static final MethodHandle NEW_MATCHER = handle("llg_new_matcher", FunctionDescriptor.of(ADDR, ADDR, ADDR, ADDR));
    static final MethodHandle CLONE_MATCHER = handle("llg_clone_matcher", FunctionDescriptor.of(ADDR, ADDR));
    static final MethodHandle FREE_MATCHER = handle("llg_free_matcher", FunctionDescriptor.ofVoid(ADDR));
    static final MethodHandle MATCHER_GET_ERROR = handle("llg_matcher_get_error", FunctionDescriptor.of(ADDR, ADDR));
    static final MethodHandle MATCHER_IS_ERROR = handle("llg_matcher_is_error", FunctionDescriptor.of(BOOL, ADDR));
    static final MethodHandle MATCHER_GET_MASK_BYTE_SIZE =
            handle("llg_matcher_get_mask_byte_size", FunctionDescriptor.of(SIZE_T, ADDR));
    static final MethodHandle MATCHER_COMPUTE_MASK_INTO =
            handle("llg_matcher_compute_mask_into", FunctionDescriptor.of(INT, ADDR, ADDR, SIZE_T));
    static final MethodHandle MATCHER_CONSUME_TOKEN =
            handle("llg_matcher_consume_token", FunctionDescriptor.of(INT, ADDR, INT));
    static final MethodHandle MATCHER_VALIDATE_TOKENS =
            handle("llg_matcher_validate_tokens", FunctionDescriptor.of(INT, ADDR, ADDR, SIZE_T));
    static final MethodHandle MATCHER_IS_ACCEPTING =
            handle("llg_matcher_is_accepting", FunctionDescriptor.of(BOOL, ADDR));
    static final MethodHandle MATCHER_IS_STOPPED = handle("llg_matcher_is_stopped", FunctionDescriptor.of(BOOL, ADDR));
    static final MethodHandle MATCHER_ROLLBACK =
            handle("llg_matcher_rollback", FunctionDescriptor.of(INT, ADDR, SIZE_T));
    static final MethodHandle GET_VERSION = handle("llg_get_version", FunctionDescriptor.of(ADDR));

    private Llguidance() {}

    /** Where the library is looked up (see the class comment). */
    static Path libraryPath() {
        String explicit = System.getProperty("mlxring.llguidance", System.getenv("MLXRING_LLGUIDANCE"));
        if (explicit != null && !explicit.isBlank()) {
            return Path.of(explicit);
        }
        return ProjectHome.get().resolve("build/native/libllguidance.so");
    }

    /**
     * The loaded library's {@code llg_get_version()}: llguidance's version and its key
     * dependencies', e.g. {@code "llguidance@1.9.1 derivre@0.3.13 ..."}.
     */
    static String version() {
        try {
            return ((MemorySegment) GET_VERSION.invokeExact())
                    .reinterpret(Long.MAX_VALUE)
                    .getString(0);
        } catch (Throwable t) {
            throw rethrow(t);
        }
    }

    /** The NUL-terminated UTF-8 string at {@code cString}, or {@code null} for a null pointer. */
    static String string(MemorySegment cString) {
        return cString.equals(MemorySegment.NULL)
                ? null
                : cString.reinterpret(Long.MAX_VALUE).getString(0);
    }

    /** A downcall's throwable as an unchecked exception (downcalls declare Throwable). */
    static RuntimeException rethrow(Throwable t) {
        if (t instanceof RuntimeException r) {
            throw r;
        }
        if (t instanceof Error e) {
            throw e;
        }
        throw new IllegalStateException("llguidance call failed: " + t, t);
    }

    static MemorySegment upcallStub(MethodHandle target, Arena arena) {
        return LINKER.upcallStub(target, TOKENIZE_FN, arena);
    }

    private static SymbolLookup load() {
        Path lib = libraryPath();
        if (!Files.isRegularFile(lib)) {
            throw new IllegalStateException("llguidance library not found at " + lib
                    + " (run ./mlx-ring setup to build it with cargo, or set -Dmlxring.llguidance)");
        }
        return SymbolLookup.libraryLookup(lib, Arena.global());
    }

    private static MethodHandle handle(String name, FunctionDescriptor descriptor) {
        MemorySegment symbol = LOOKUP.find(name)
                .orElseThrow(() -> new IllegalStateException("symbol " + name + " missing from " + libraryPath()
                        + " (stale build? rerun ./mlx-ring setup)"));
        return LINKER.downcallHandle(symbol, descriptor);
    }
}
