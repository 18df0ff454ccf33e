package dev.mlxring.exec.sample;

import dev.mlxring.mlx.ArrayScope;
import dev.mlxring.mlx.Dtype;
import dev.mlxring.mlx.Mlx;
import dev.mlxring.mlx.MlxArray;

/**
 * The sampler state of one request: its random key (mlx-lm's {@code mx.random.state[0]}, here
 * per request) and the token history its penalties read (generate_step's {@code tokens}). Owned
 * by the request's run and confined to the thread that drives MLX; both arrays are detached and
 * freed in {@link #close()}.
 */
public final class SamplingState implements AutoCloseable {
    private MlxArray key;
    private MlxArray history;
    private int historyLength;
    /** Tokens of history to keep: 0 = all, -1 = none (no processor reads it). */
    private final int keep;

    private SamplingState(MlxArray key, int keep) {
        this.key = key;
        this.keep = keep;
    }

    /** A state without a key, for greedy runs (argmax draws nothing). */
    public static SamplingState keyless(int keep) {
        return new SamplingState(null, keep);
    }

    /** A state whose key is {@code mx.random.key(seed)}, as after {@code mx.random.seed(seed)}. */
    public static SamplingState seeded(long seed, int keep) {
        try (ArrayScope s = ArrayScope.open()) {
            return new SamplingState(Mlx.randomKey(seed).detach(), keep);
        }
    }

    /** A state starting from the raw key {@code (k0, k1)} (uint32 pair, as {@code mx.random.state[0]} holds it). */
    public static SamplingState ofKey(int k0, int k1, int keep) {
        try (ArrayScope s = ArrayScope.open()) {
            MlxArray k = Mlx.astype(Mlx.fromInts(new int[] {k0, k1}, 2), Dtype.UINT32);
            Mlx.eval(k);
            return new SamplingState(k.detach(), keep);
        }
    }

    /** How much history the processors read: the largest context (0 if any reads all), -1 if none reads it. */
    public static int historyToKeep(java.util.List<LogitsProcessor> processors) {
        int keep = -1;
        for (LogitsProcessor p : processors) {
            int c = p.contextSize();
            if (c == 0) {
                return 0;
            }
            keep = Math.max(keep, c);
        }
        return keep;
    }

    /** The current key (owned by this state). */
    public MlxArray key() {
        if (key == null) {
            throw new IllegalStateException("a greedy run has no random key");
        }
        return key;
    }

    /** Takes {result, new key} from a compiled sampler call: keeps the key, returns the result. */
    MlxArray advance(MlxArray[] resultAndKey) {
        MlxArray old = key;
        key = resultAndKey[1].detach();
        old.close();
        return resultAndKey[0];
    }

    /** The history as a 1-D array (owned by this state; null before any token). */
    public MlxArray history() {
        return history;
    }

    public int historyLength() {
        return historyLength;
    }

    /**
     * Appends {@code n} tokens ({@code tokens}, 1-D) to the history: {@code concat([tokens, input])},
     * trimmed to the longest context a processor reads (the values every {@code tokens[-c:]} sees are
     * unchanged).
     */
    public void append(MlxArray tokens, int n) {
        if (keep < 0) {
            return;
        }
        try (ArrayScope s = ArrayScope.open()) {
            MlxArray h = history == null ? tokens : Mlx.concatenate(0, history, tokens);
            int length = historyLength + n;
            if (keep > 0 && length > keep) {
                h = Mlx.slice(h, new int[] {length - keep}, new int[] {length}, new int[] {1});
                length = keep;
            }
            MlxArray kept = h == tokens ? Mlx.contiguous(h) : h;
            kept.detach();
            if (history != null) {
                history.close();
            }
            history = kept;
            historyLength = length;
        }
    }

    /** Evaluates the key and returns it as the uint32 pair {@code (k0, k1)}. */
    public int[] keyWords() {
        return key.toIntArray();
    }

    @Override
    public void close() {
        if (key != null) {
            key.close();
            key = null;
        }
        if (history != null) {
            history.close();
            history = null;
        }
    }
}
