package dev.mlxring.mlx;

import java.lang.foreign.Arena;
import java.lang.foreign.MemorySegment;
import java.lang.foreign.ValueLayout;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.Collections;
import java.util.LinkedHashMap;
import java.util.Map;
import java.util.TreeMap;

/**
 * Named arrays loaded from safetensors or GGUF files, plus the files' string metadata. The
 * arrays are owned by this object (not by any {@link ArrayScope}) until {@link #remove} hands one
 * to a new owner; {@link #close()} frees the rest.
 */
public final class Weights implements AutoCloseable {
    private final Map<String, MlxArray> arrays = new TreeMap<>();
    private final Map<String, String> metadata = new TreeMap<>();

    private Weights() {}

    public static Weights loadSafetensors(Path file) {
        return load(file, false);
    }

    /** GGUF: Q4_0/Q4_1/Q8_0 tensors load as MLX affine-quantized triples, others as float16. */
    public static Weights loadGguf(Path file) {
        return load(file, true);
    }

    private static Weights load(Path file, boolean gguf) {
        if (!Files.isReadable(file)) {
            throw new MlxException("cannot read weights file " + file);
        }
        Weights w = new Weights();
        MemorySegment map;
        try (Arena arena = Arena.ofConfined()) {
            MemorySegment path = arena.allocateFrom(file.toAbsolutePath().toString());
            map = gguf ? Shim.loadGguf(path) : Shim.loadSafetensors(path);
        }
        if (map.address() == 0) {
            throw new MlxException("loading " + file + ": " + Shim.lastError());
        }
        try (ArrayScope scope = ArrayScope.open()) {
            int n = Shim.weightsCount(map);
            for (int i = 0; i < n; i++) {
                String name = cString(Shim.weightsName(map, i));
                w.arrays.put(name, MlxArray.own(Shim.weightsArray(map, i)).detach());
            }
            int m = Shim.weightsMetaCount(map);
            for (int i = 0; i < m; i++) {
                w.metadata.put(cString(Shim.weightsMetaKey(map, i)), cString(Shim.weightsMetaValue(map, i)));
            }
        } finally {
            Shim.weightsFree(map);
        }
        return w;
    }

    private static String cString(MemorySegment s) {
        return s.reinterpret(Integer.MAX_VALUE).getString(0);
    }

    /** Merges another file's arrays into this one (sharded checkpoints); it must not repeat names. */
    public void putAll(Weights other) {
        for (var e : other.arrays.entrySet()) {
            if (arrays.putIfAbsent(e.getKey(), e.getValue()) != null) {
                throw new MlxException("weight " + e.getKey() + " appears in more than one file");
            }
        }
        other.arrays.clear();
        metadata.putAll(other.metadata);
    }

    /** Adds an array under a new name; this object becomes its owner (it must be detached from any scope). */
    public void put(String name, MlxArray array) {
        if (arrays.putIfAbsent(name, array) != null) {
            throw new MlxException("weight " + name + " already exists");
        }
    }

    public boolean contains(String name) {
        return arrays.containsKey(name);
    }

    /** Borrows an array; it stays owned by this object. */
    public MlxArray get(String name) {
        MlxArray a = arrays.get(name);
        if (a == null) {
            throw new MlxException("missing weight '" + name + "'");
        }
        return a;
    }

    /** Removes and returns an array: the caller becomes its owner. Null if absent. */
    public MlxArray remove(String name) {
        return arrays.remove(name);
    }

    public Map<String, MlxArray> arrays() {
        return Collections.unmodifiableMap(arrays);
    }

    public Map<String, String> metadata() {
        return Collections.unmodifiableMap(metadata);
    }

    @Override
    public void close() {
        for (MlxArray a : arrays.values()) {
            a.close();
        }
        arrays.clear();
    }

    /** Writes {@code arrays} to a safetensors file with string {@code metadata}. */
    public static void saveSafetensors(Path file, Map<String, MlxArray> arrays, Map<String, String> metadata) {
        Map<String, MlxArray> ordered = new LinkedHashMap<>(arrays);
        try (Arena arena = Arena.ofConfined()) {
            int n = ordered.size();
            MemorySegment names = arena.allocate(ValueLayout.ADDRESS, Math.max(n, 1));
            MemorySegment handles = arena.allocate(ValueLayout.ADDRESS, Math.max(n, 1));
            int i = 0;
            for (var e : ordered.entrySet()) {
                names.setAtIndex(ValueLayout.ADDRESS, i, arena.allocateFrom(e.getKey()));
                handles.setAtIndex(ValueLayout.ADDRESS, i, e.getValue().handle());
                i++;
            }
            int m = metadata.size();
            MemorySegment keys = arena.allocate(ValueLayout.ADDRESS, Math.max(m, 1));
            MemorySegment values = arena.allocate(ValueLayout.ADDRESS, Math.max(m, 1));
            int j = 0;
            for (var e : metadata.entrySet()) {
                keys.setAtIndex(ValueLayout.ADDRESS, j, arena.allocateFrom(e.getKey()));
                values.setAtIndex(ValueLayout.ADDRESS, j, arena.allocateFrom(e.getValue()));
                j++;
            }
            Shim.check(Shim.saveSafetensors(
                    arena.allocateFrom(file.toAbsolutePath().toString()), names, handles, n, keys, values, m));
        }
    }
}
