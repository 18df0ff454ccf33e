package dev.mlxring.mlx;

import static org.junit.jupiter.api.Assertions.assertFalse;

import dev.mlxring.mlx.SameBytes.Data;
import java.util.ArrayList;
import java.util.List;
import java.util.SplittableRandom;
import java.util.stream.Stream;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.MethodSource;

/**
 * The native {@code fast::scaled_dot_product_attention} primitive against MLX's own op (its CPU
 * fallback graph: two matmuls, the mask, precise softmax), live, in one process on the same
 * inputs: the output bytes must be identical. Cases cover the three dtypes; SmolLM2's heads
 * (9 query heads over 3 kv heads, head dim 64) and other GQA ratios (1, 4, 8) and head dim 128;
 * decode (one query, no mask) over 1..600 keys, prefill with the causal mode (a first chunk and
 * a later chunk over a longer cache), batched rows with left padding (bool masks as
 * {@code create_causal_mask} makes them, decode and prefill), additive masks, gpt_oss's sinks;
 * keys and values as slices of a larger cache buffer (the layout the KV caches hand over);
 * ordinary, subnormal and NaN/Inf data and scores that overflow.
 */
class AttentionExactnessTest {

    enum Mask {
        NONE,
        CAUSAL,
        BOOL_PADDED,
        ADDITIVE
    }

    record Case(
            Dtype dtype,
            int b,
            int hq,
            int hkv,
            int l,
            int s,
            int d,
            int dv,
            Mask mask,
            boolean sinks,
            boolean cacheSlices,
            Data data,
            float scale) {
        @Override
        public String toString() {
            return dtype.mlxName + " B" + b + " Hq" + hq + " Hkv" + hkv + " L" + l + " S" + s + " D" + d
                    + (dv != d ? " Dv" + dv : "") + " " + mask + (sinks ? " sinks" : "")
                    + (cacheSlices ? " cache-slices" : "") + " " + data + " scale " + scale;
        }
    }

    static Stream<Case> cases() {
        List<Case> c = new ArrayList<>();
        Dtype[] dtypes = {Dtype.FLOAT32, Dtype.BFLOAT16, Dtype.FLOAT16};
        float smol = (float) Math.pow(64, -0.5);
        for (Dtype dt : dtypes) {
            // decode over a growing context (SmolLM2's heads), one query, no mask
            for (int s : new int[] {1, 7, 64, 261, 600}) {
                c.add(new Case(dt, 1, 9, 3, 1, s, 64, 64, Mask.NONE, false, true, Data.NORMAL, smol));
            }
            // other GQA ratios and head dims
            c.add(new Case(dt, 1, 4, 4, 1, 45, 64, 64, Mask.NONE, false, true, Data.NORMAL, smol));
            c.add(new Case(dt, 1, 8, 2, 1, 77, 128, 128, Mask.NONE, false, true, Data.NORMAL, 0.0884f));
            c.add(new Case(dt, 1, 8, 1, 3, 19, 64, 64, Mask.CAUSAL, false, true, Data.NORMAL, smol));
            // prefill: a first chunk, a later chunk over a longer cache, no cache at all
            c.add(new Case(dt, 1, 9, 3, 37, 37, 64, 64, Mask.CAUSAL, false, true, Data.NORMAL, smol));
            c.add(new Case(dt, 1, 9, 3, 32, 96, 64, 64, Mask.CAUSAL, false, true, Data.NORMAL, smol));
            c.add(new Case(dt, 1, 4, 2, 13, 13, 128, 128, Mask.CAUSAL, false, false, Data.NORMAL, 0.0884f));
            // batched rows with left padding: decode and prefill
            c.add(new Case(dt, 3, 9, 3, 1, 40, 64, 64, Mask.BOOL_PADDED, false, true, Data.NORMAL, smol));
            c.add(new Case(dt, 3, 9, 3, 11, 11, 64, 64, Mask.BOOL_PADDED, false, true, Data.NORMAL, smol));
            c.add(new Case(dt, 2, 4, 2, 5, 21, 64, 64, Mask.ADDITIVE, false, true, Data.NORMAL, smol));
            // gpt_oss's sinks, causal and masked
            c.add(new Case(dt, 1, 8, 2, 9, 9, 64, 64, Mask.CAUSAL, true, true, Data.NORMAL, 0.125f));
            c.add(new Case(dt, 1, 8, 2, 1, 30, 64, 64, Mask.NONE, true, true, Data.NORMAL, 0.125f));
            c.add(new Case(dt, 2, 8, 2, 4, 12, 64, 64, Mask.BOOL_PADDED, true, true, Data.NORMAL, 0.125f));
            // value head dim other than the key's, key count not a multiple of 8
            c.add(new Case(dt, 1, 2, 1, 2, 13, 64, 40, Mask.CAUSAL, false, false, Data.NORMAL, smol));
            // special data, overflowing scores
            c.add(new Case(dt, 1, 9, 3, 1, 50, 64, 64, Mask.NONE, false, true, Data.SPECIAL, smol));
            c.add(new Case(dt, 1, 9, 3, 6, 6, 64, 64, Mask.CAUSAL, false, true, Data.SUBNORMAL, smol));
            c.add(new Case(dt, 1, 3, 3, 4, 20, 64, 64, Mask.CAUSAL, false, true, Data.NORMAL, 50f));
            // causal chunks whose 4-row blocks straddle two heads (38 positions a head), a first and
            // a later one; and with NaN and infinite scores, keys and values (the rows the kernel
            // cuts at their last visible key must keep MLX's bytes there too)
            c.add(new Case(dt, 1, 9, 3, 38, 38, 64, 64, Mask.CAUSAL, false, true, Data.NORMAL, smol));
            c.add(new Case(dt, 1, 9, 3, 38, 101, 64, 64, Mask.CAUSAL, false, true, Data.NORMAL, smol));
            c.add(new Case(dt, 1, 4, 2, 21, 21, 64, 64, Mask.CAUSAL, false, true, Data.SPECIAL, smol));
            c.add(new Case(dt, 1, 4, 2, 21, 45, 64, 64, Mask.CAUSAL, false, true, Data.SPECIAL, smol));
        }
        return c.stream();
    }

    @ParameterizedTest(name = "{0}")
    @MethodSource("cases")
    void sameBytesAsMlx(Case c) {
        SplittableRandom rnd = SameBytes.seeded(c);
        try (ArrayScope scope = ArrayScope.open()) {
            float mag = SameBytes.magnitude(c.data, c.dtype);
            // queries as rope leaves them: [B, Hq, L, D] contiguous
            MlxArray q = SameBytes.array(rnd, c.dtype, mag, c.data, c.b, c.hq, c.l, c.d);
            MlxArray k = keysOrValues(c, rnd, mag, c.d);
            MlxArray v = keysOrValues(c, rnd, mag, c.dv);
            MlxArray sinks = c.sinks ? SameBytes.array(rnd, c.dtype, 1f, Data.NORMAL, c.hq) : null;
            MlxArray mask = switch (c.mask) {
                case NONE, CAUSAL -> null;
                case BOOL_PADDED -> paddedCausal(c);
                case ADDITIVE -> SameBytes.array(rnd, c.dtype, 3f, Data.NORMAL, c.b, 1, c.l, c.s);
            };
            MlxArray expected;
            MlxArray actual;
            if (c.mask == Mask.CAUSAL) {
                expected = Mlx.sdpaCausal(CpuKernels.MLX, q, k, v, c.scale, sinks);
                actual = Mlx.sdpaCausal(CpuKernels.NATIVE, q, k, v, c.scale, sinks);
            } else {
                expected = Mlx.sdpa(CpuKernels.MLX, q, k, v, c.scale, mask, sinks);
                actual = Mlx.sdpa(CpuKernels.NATIVE, q, k, v, c.scale, mask, sinks);
            }
            SameBytes.assertSame(c.toString(), expected, actual);
            // the heads merged as o_proj takes them: MLX's op and two view ops, or one primitive
            SameBytes.assertSame(
                    c + " (heads merged)",
                    Mlx.sdpaMergedHeads(CpuKernels.MLX, q, k, v, c.scale, c.mask == Mask.CAUSAL, mask, sinks),
                    Mlx.sdpaMergedHeads(CpuKernels.NATIVE, q, k, v, c.scale, c.mask == Mask.CAUSAL, mask, sinks));
        }
    }

    /**
     * A causal chunk's rows stop at their last visible key only where that keeps MLX's bytes: a
     * value row past a query's keys that holds an infinity or a NaN (0 times it is NaN in MLX's
     * sum), and a query whose only visible score is -inf (its softmax then spreads over the
     * masked keys), each in a first chunk and a later one, in every dtype.
     */
    @Test
    void causalRowsWithNonFiniteValuesAndScoresPastTheirKeysKeepMlxsBytes() {
        for (Dtype dt : new Dtype[] {Dtype.FLOAT32, Dtype.BFLOAT16, Dtype.FLOAT16}) {
            for (int s : new int[] {24, 50}) {
                int l = 24;
                int d = 64;
                SplittableRandom rnd = new SplittableRandom(31 * s + dt.ordinal());
                float[] q = new float[4 * l * d];
                for (int i = 0; i < q.length; i++) {
                    q[i] = (float) Math.abs(rnd.nextGaussian()) + 0.01f; // positive: a -inf key scores -inf
                }
                float[] k = new float[2 * s * d];
                float[] v = new float[2 * s * d];
                for (int i = 0; i < k.length; i++) {
                    k[i] = (float) rnd.nextGaussian();
                    v[i] = (float) rnd.nextGaussian();
                }
                // kv head 0: key 0 is -inf throughout (a first chunk's query 0 sees only it)
                for (int i = 0; i < d; i++) {
                    k[i] = Float.NEGATIVE_INFINITY;
                }
                // kv head 1: an infinite and a NaN value in rows most queries do not see
                v[(s + s - 2) * d + 5] = Float.POSITIVE_INFINITY;
                v[(s + s - 5) * d + 9] = Float.NaN;
                String label = dt.mlxName + " causal L" + l + " S" + s + " non-finite past the keys";
                try (ArrayScope scope = ArrayScope.open()) {
                    MlxArray qa = Mlx.astype(Mlx.fromFloats(q, 1, 4, l, d), dt);
                    MlxArray ka = Mlx.astype(Mlx.fromFloats(k, 1, 2, s, d), dt);
                    MlxArray va = Mlx.astype(Mlx.fromFloats(v, 1, 2, s, d), dt);
                    float scale = (float) Math.pow(d, -0.5);
                    SameBytes.assertSame(
                            label,
                            Mlx.sdpaCausal(CpuKernels.MLX, qa, ka, va, scale, null),
                            Mlx.sdpaCausal(CpuKernels.NATIVE, qa, ka, va, scale, null));
                }
            }
        }
    }

    /** [B, Hkv, S, width], as a slice of a [B, Hkv, S + 256, width] cache buffer when the case asks. */
    private static MlxArray keysOrValues(Case c, SplittableRandom rnd, float mag, int width) {
        if (!c.cacheSlices) {
            return SameBytes.array(rnd, c.dtype, mag, c.data, c.b, c.hkv, c.s, width);
        }
        MlxArray buffer = SameBytes.array(rnd, c.dtype, mag, c.data, c.b, c.hkv, c.s + 256, width);
        return Mlx.slice(buffer, new int[] {0, 0, 0, 0}, new int[] {c.b, c.hkv, c.s, width}, new int[] {1, 1, 1, 1});
    }

    /**
     * {@code create_causal_mask(N, offset, lengths)} for left-padded rows, {@code [B, 1, L, S]}
     * bool: row b's key j is visible to its query i when j <= i + S - L and j >= the row's padding.
     */
    private static MlxArray paddedCausal(Case c) {
        int[] m = new int[c.b * c.l * c.s];
        for (int b = 0; b < c.b; b++) {
            int pad = (b * 5) % Math.max(1, c.s - c.l + 1);
            for (int i = 0; i < c.l; i++) {
                for (int j = 0; j < c.s; j++) {
                    m[(b * c.l + i) * c.s + j] = j <= i + c.s - c.l && j >= pad ? 1 : 0;
                }
            }
        }
        return Mlx.astype(Mlx.fromInts(m, c.b, 1, c.l, c.s), Dtype.BOOL);
    }

    @Test
    void uncoveredCasesTakeMlxsOp() {
        try (ArrayScope s = ArrayScope.open()) {
            MlxArray q = Mlx.fromFloats(new float[2 * 64], 1, 2, 1, 64);
            MlxArray k = Mlx.fromFloats(new float[2 * 3 * 64], 1, 2, 3, 64);
            assertFalse(Mlx.isNativeFastOp(Mlx.sdpa(CpuKernels.MLX, q, k, k, 0.125f, null, null)), "--cpu-kernels mlx");
            MlxArray kHalf = Mlx.astype(k, Dtype.BFLOAT16);
            assertFalse(
                    Mlx.isNativeFastOp(Mlx.sdpa(CpuKernels.NATIVE, q, kHalf, kHalf, 0.125f, null, null)),
                    "mixed dtypes (MLX promotes them first)");
        }
    }
}
