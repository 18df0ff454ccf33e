package dev.mlxring.exec.sample;

import dev.mlxring.mlx.ArrayScope;
import dev.mlxring.mlx.Mlx;
import dev.mlxring.mlx.MlxArray;
import java.util.SplittableRandom;

/**
 * The engine-level random generator that requests without a seed draw from: the counterpart of
 * the process-wide {@code mx.random.state} that mlx-lm's unseeded requests share.
 *
 * <p>mlx-lm: {@code mx.random.state} starts as {@code key(t)} with {@code t} the wall clock in
 * milliseconds when the state is first used, and every random draw anywhere in the process
 * ({@code (state, subkey) = split(state)}) advances it; {@code mx.random.seed(s)} resets it to
 * {@code key(s)}. So consecutive unseeded requests continue one key stream.
 *
 * <p>Here: the engine holds that key as a uint32 pair (no MLX array, so this object is safe to
 * share across threads). A request without a seed {@link #acquire() acquires} it, samples with it
 * in its own run, and {@link #release releases} the key it ended with - so a sequence of unseeded
 * requests on an engine made with {@link #seeded seeded(s)} yields exactly the tokens mlx-lm yields
 * for the same requests run one after another after {@code mx.random.seed(s)}. A request that
 * starts while another holds the engine key gets an independent key instead ({@code key(r)} with
 * {@code r} the next value of a generator seeded from the engine seed) and leaves the engine key
 * alone: mlx-lm has no per-request streams for overlapping unseeded requests (its batch shares
 * one draw per step), so there is nothing to be identical to there.
 */
public final class EngineRng {
    private int k0;
    private int k1;
    private boolean held;
    private long leases;
    private final SplittableRandom forks;

    private EngineRng(int k0, int k1, long forkSeed) {
        this.k0 = k0;
        this.k1 = k1;
        this.forks = new SplittableRandom(forkSeed);
    }

    /** An engine generator in the state {@code mx.random.seed(seed)} leaves. */
    public static EngineRng seeded(long seed) {
        // mx.random.key(seed) = [seed >> 32, seed & 0xffffffff] (uint32)
        return new EngineRng((int) (seed >>> 32), (int) seed, seed);
    }

    /**
     * The state {@code mx.random.seed(seed)} followed by {@code draws} random draws leaves
     * ({@code draws} times {@code state = split(state)[0]}): what mlx_lm.generate's sampling
     * starts from, since it seeds before load_model builds the model with random initial weights
     * (see LanguageModel#initRandomDraws). Runs MLX on the calling thread.
     */
    public static EngineRng seededThenDrawn(long seed, int draws) {
        try (ArrayScope s = ArrayScope.open()) {
            MlxArray k = Mlx.randomKey(seed);
            for (int i = 0; i < draws; i++) {
                k = Mlx.randomSplit(k)[0];
                if (i % 64 == 63) {
                    Mlx.eval(k);
                }
            }
            int[] w = k.toIntArray();
            return new EngineRng(w[0], w[1], seed);
        }
    }

    /** An engine generator seeded from the wall clock in milliseconds, as MLX seeds its default key. */
    public static EngineRng fromClock() {
        return seeded(System.currentTimeMillis());
    }

    /** A key for one unseeded request; give it back with {@link #release}. */
    public synchronized Lease acquire() {
        leases++;
        if (!held) {
            held = true;
            return new Lease(this, leases, true, k0, k1, 0);
        }
        return new Lease(this, leases, false, 0, 0, forks.nextLong() >>> 1);
    }

    /** Stores the key a continuing request ended with; independent leases change nothing. */
    public synchronized void release(Lease lease, int[] finalKey) {
        if (lease.engine != this || !lease.continuing || !held) {
            return;
        }
        if (finalKey != null) {
            k0 = finalKey[0];
            k1 = finalKey[1];
        }
        held = false;
    }

    /** The engine key now ({@code mx.random.state[0]} as two uint32 words), for tests and logs. */
    public synchronized int[] keyWords() {
        return new int[] {k0, k1};
    }

    /**
     * One request's claim on the generator: either the engine key itself ({@code continuing}) or
     * an independent seed.
     */
    public record Lease(EngineRng engine, long id, boolean continuing, int k0, int k1, long independentSeed) {
        /** The request's initial sampler state. */
        public SamplingState newState(int historyToKeep) {
            return continuing
                    ? SamplingState.ofKey(k0, k1, historyToKeep)
                    : SamplingState.seeded(independentSeed, historyToKeep);
        }
    }
}
