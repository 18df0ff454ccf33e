package dev.mlxring.exec.spec;

import dev.mlxring.mlx.Numerics;
import java.util.Arrays;

/**
 * What a forward of {@code m} positions costs, in plain single-row decode steps, under one
 * numerics tier: the price {@link RoundWidth} and {@link ProposalLength} weigh a verification
 * round's positions at. Measured on the default model (SmolLM2-135M, 4-bit) on the two-core
 * AVX-512 machine (docs/benchmarks.md, "What a verification round costs"); another model or CPU
 * has other figures, but the shape (what a further position costs once the weights are read
 * anyway) is the kernels'. Immutable; any thread.
 *
 * <ul>
 *   <li>{@link #EXACT}: the exact CPU kernels decoded each weight once per pass of at most 8
 *       positions when {@link #EXACT_CPU_COSTS} was measured, so {@code cost(m) = (m / 8) cost(8) +
 *       cost(m % 8)}: past a full pass every position costs its share. Since the AVX-512 kernels
 *       decode a call of 5 or more positions once into a panel (docs/benchmarks.md, "The exact
 *       kernels' many rows") those forwards cost less than this prices: on the Zen 4, 1-8
 *       positions 1.00, 1.21, 1.59, 1.65, 1.94, 2.08, 2.40, 2.49 plain steps (six rounds'
 *       medians). Replaying the two speculative workloads' greedy tokens through {@link
 *       ProposalLength} priced at those costs, deciding by this table or by them gives the same
 *       speed-up (edit 1.68 against 1.66 times, story 1.28 both; docs/benchmarks.md), so the
 *       table stays; the proposals it misses are lengths that gain nothing.
 *   <li>{@link #FAST} and {@link #FAST_Q8}: the fused block's kernels take every position of a
 *       call in one pass over the weights, so a position costs less the more there are. Up to 8
 *       positions, a lone row's verification forward after a 600-token prompt
 *       ({@code VerifyForwardProfile}); from 8 to 32, a batch step of that many rows after
 *       64-token prompts ({@code BatchStepProfile}) scaled to meet it at 8; past 32, the last
 *       measured slope. After 512-token prompts attention's share makes 16 positions 1.63 times
 *       8 rather than 1.45, but that curve, which verifies less often, measured slower on 8
 *       streams of the edit workload (0.56 times plain decoding under fast-q8, against 1.03-1.14
 *       with this one; docs/benchmarks.md, "Speculative decoding").
 * </ul>
 */
public final class ForwardCosts {
    /**
     * A forward of {@code i + 1} positions in plain steps, default model (SmolLM2-135M, 4-bit) on the
     * two-core AVX-512 machine, exact tier ({@code VerifyForwardProfile}, docs/benchmarks.md "What a
     * verification round costs"; 5 positions, not measured, priced as 6: two passes, 4 + 1 rows).
     */
    static final double[] EXACT_CPU_COSTS = {1.00, 1.15, 1.72, 1.79, 2.57, 2.57, 2.49, 2.49};

    /** The exact tier: passes of 8 positions over {@link #EXACT_CPU_COSTS}. */
    public static final ForwardCosts EXACT = passes(EXACT_CPU_COSTS);

    /**
     * {@code --numerics fast}: lone-row forwards of 1-8 positions 10.8, 13.9, 17.0, 18.8, -, 24.7,
     * -, 26.4 ms (two rounds' means; 5 and 7 interpolated), batch steps of 8 / 12 / 16 / 24 / 32
     * rows after 64-token prompts 23.4 / 28.8 / 36.5 / 47.7 / 63.6 ms (2026-12-06, `fcc927c`).
     */
    public static final ForwardCosts FAST = new ForwardCosts(
            new double[] {1.00, 1.29, 1.57, 1.74, 2.01, 2.29, 2.37, 2.45},
            new int[] {8, 12, 16, 24, 32},
            new double[] {23.4, 28.8, 36.5, 47.7, 63.6});

    /**
     * {@code --numerics fast-q8}: lone-row forwards of 1-8 positions 10.5, 11.6, 13.8, 14.6, -,
     * 17.5, -, 20.2 ms (two rounds' means; 5 and 7 interpolated), batch steps of 8 / 12 / 16 / 24 /
     * 32 rows after 64-token prompts 16.9 / 20.4 / 24.5 / 34.4 / 42.5 ms (2026-12-06, `fcc927c`).
     */
    public static final ForwardCosts FAST_Q8 = new ForwardCosts(
            new double[] {1.00, 1.10, 1.31, 1.40, 1.53, 1.66, 1.80, 1.93},
            new int[] {8, 12, 16, 24, 32},
            new double[] {16.9, 20.4, 24.5, 34.4, 42.5});

    /** {@code lone[i]}: a forward of {@code i + 1} positions; the exact tier's pass. */
    private final double[] lone;

    /** Past {@code lone}: positions where the batch curve was measured (null: passes of {@code lone}). */
    private final int[] batchPositions;

    /** The batch curve at {@link #batchPositions}, in plain steps (scaled to {@code lone}'s last). */
    private final double[] batchCosts;

    private ForwardCosts(double[] lone, int[] batchPositions, double[] batchMs) {
        this.lone = lone.clone();
        this.batchPositions = batchPositions == null ? null : batchPositions.clone();
        if (batchPositions == null) {
            this.batchCosts = null;
        } else {
            if (batchPositions[0] != lone.length) {
                throw new IllegalArgumentException("the batch curve starts where the lone forwards end");
            }
            this.batchCosts = new double[batchMs.length];
            for (int i = 0; i < batchMs.length; i++) {
                batchCosts[i] = lone[lone.length - 1] * batchMs[i] / batchMs[0];
            }
        }
    }

    /**
     * Passes of {@code pass.length} positions, a pass of {@code i} positions costing {@code
     * pass[i - 1]} (the exact kernels' structure; a cost table of a test's own).
     */
    static ForwardCosts passes(double[] pass) {
        return new ForwardCosts(pass, null, null);
    }

    /** The tier's costs; {@link #EXACT} for the exact tier. */
    public static ForwardCosts of(Numerics numerics) {
        return switch (numerics) {
            case EXACT -> EXACT;
            case FAST -> FAST;
            case FAST_Q8 -> FAST_Q8;
        };
    }

    /** A forward of 1 .. {@code lone().length} positions, as {@link ProposalLength} prices a lone row's rounds. */
    public double[] lone() {
        return lone.clone();
    }

    /**
     * A forward of {@code positions} positions in plain single-row steps.
     *
     * @throws IllegalArgumentException for {@code positions < 1}
     */
    public double cost(long positions) {
        if (positions < 1) {
            throw new IllegalArgumentException("a forward has at least one position, got " + positions);
        }
        int pass = lone.length;
        if (positions <= pass) {
            return lone[(int) positions - 1];
        }
        if (batchPositions == null) {
            long full = positions / pass;
            int rest = (int) (positions % pass);
            return full * lone[pass - 1] + (rest == 0 ? 0 : lone[rest - 1]);
        }
        int last = batchPositions.length - 1;
        int i = 1;
        while (i < last && batchPositions[i] < positions) {
            i++;
        }
        // between measured points i - 1 and i, or past the last on its slope
        double slope = (batchCosts[i] - batchCosts[i - 1]) / (batchPositions[i] - batchPositions[i - 1]);
        return batchCosts[i - 1] + slope * (positions - batchPositions[i - 1]);
    }

    @Override
    public String toString() {
        return "ForwardCosts" + Arrays.toString(lone);
    }
}
