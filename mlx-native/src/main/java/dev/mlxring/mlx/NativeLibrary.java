package dev.mlxring.mlx;

import java.lang.foreign.Arena;
import java.lang.foreign.FunctionDescriptor;
import java.lang.foreign.Linker;
import java.lang.foreign.MemorySegment;
import java.lang.foreign.SymbolLookup;
import java.lang.foreign.ValueLayout;
import java.lang.invoke.MethodHandle;
import java.nio.file.Files;
import java.nio.file.Path;

/**
 * Loads {@code libmlxr.so} (the shim built by {@code scripts/build_shim.sh}) once and hands out
 * downcall handles. The library stays mapped for the life of the JVM (global arena): MLX keeps
 * process-wide state (allocator, streams, compile cache) that must never be unloaded, and whose
 * queued work must end before the process does ({@link ExitDrain}).
 */
final class NativeLibrary {
    static final Linker LINKER = Linker.nativeLinker();
    static final ValueLayout ADDR = ValueLayout.ADDRESS;
    static final ValueLayout.OfInt INT = ValueLayout.JAVA_INT;
    static final ValueLayout.OfLong LONG = ValueLayout.JAVA_LONG;
    static final ValueLayout.OfFloat FLOAT = ValueLayout.JAVA_FLOAT;
    static final ValueLayout.OfDouble DOUBLE = ValueLayout.JAVA_DOUBLE;
    static final ValueLayout.OfBoolean BOOL = ValueLayout.JAVA_BOOLEAN;

    private static final SymbolLookup LOOKUP = load();

    private NativeLibrary() {}

    static Path libraryPath() {
        String explicit = System.getProperty("mlxring.shim", System.getenv("MLXRING_SHIM"));
        if (explicit != null && !explicit.isBlank()) {
            return Path.of(explicit);
        }
        return ProjectHome.get().resolve("build/native/libmlxr.so");
    }

    private static SymbolLookup load() {
        Path lib = libraryPath();
        if (!Files.isRegularFile(lib)) {
            throw new MlxException(
                    "MLX shim not found at " + lib + " (run ./mlx-ring setup to build it, or set -Dmlxring.shim)");
        }
        SymbolLookup lookup = SymbolLookup.libraryLookup(lib, Arena.global());
        ExitDrain.install(lookup);
        return lookup;
    }

    static MethodHandle handle(String name, FunctionDescriptor descriptor) {
        return handle(LOOKUP, name, descriptor);
    }

    /** As {@link #handle(String, FunctionDescriptor)} while the library is still being loaded. */
    static MethodHandle handle(SymbolLookup lookup, String name, FunctionDescriptor descriptor) {
        MemorySegment symbol = lookup.find(name)
                .orElseThrow(() -> new MlxException(
                        "symbol " + name + " missing from " + libraryPath() + " (stale shim? rerun ./mlx-ring setup)"));
        return LINKER.downcallHandle(symbol, descriptor);
    }
}
