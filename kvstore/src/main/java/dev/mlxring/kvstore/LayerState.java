package dev.mlxring.kvstore;

import java.util.List;

/**
 * One layer's cache as mlx-lm's {@code cache.state}: a full-precision {@code KVCache}
 * ({@link Kind#DENSE}: keys, values) or a {@code QuantizedKVCache} ({@link Kind#QUANTIZED}: the
 * keys' weight/scales/biases then the values'), with the whole buffers (capacity included, so a
 * restored cache grows exactly as the one it was taken from) and the filled {@code offset}; or
 * an {@code ArraysCache} ({@link Kind#RECURRENT}: a gated delta net's conv state then its
 * recurrence state, one or more arrays of a fixed size) after consuming {@code offset} positions,
 * which restores only at exactly that offset (it cannot be trimmed).
 *
 * @param groupSize and {@code bits}: the quantization of a QUANTIZED layer; 0 for DENSE
 */
public record LayerState(Kind kind, int offset, int groupSize, int bits, List<KvTensor> tensors) {
    public enum Kind {
        DENSE,
        QUANTIZED,
        RECURRENT
    }

    public LayerState {
        tensors = List.copyOf(tensors);
        int expected = kind == Kind.DENSE ? 2 : kind == Kind.QUANTIZED ? 6 : Math.max(1, tensors.size());
        if (tensors.size() != expected) {
            throw new IllegalArgumentException(kind + " layer needs " + expected + " tensors, got " + tensors.size());
        }
        if (offset < 0) {
            throw new IllegalArgumentException("offset must be >= 0, got " + offset);
        }
    }

    long nbytes() {
        long n = 0;
        for (KvTensor t : tensors) {
            n += t.data().byteSize();
        }
        return n;
    }
}
