package dev.mlxring.exec.model;

import dev.mlxring.exec.kv.ArraysCache;
import dev.mlxring.exec.nn.Linear;
import dev.mlxring.exec.nn.Parameters;
import dev.mlxring.exec.nn.RmsNorm;
import dev.mlxring.mlx.Dtype;
import dev.mlxring.mlx.Mlx;
import dev.mlxring.mlx.MlxArray;

/**
 * mlx-lm's {@code GatedDeltaNet} (qwen3_5.py; {@code Qwen3NextGatedDeltaNet} in qwen3_next.py,
 * which differs only in how the input projections are packed, see {@link Projections}): a
 * depthwise causal convolution over the q/k/v projection whose last {@code kernel - 1} inputs are
 * the cache's conv state, then the gated delta rule recurrence over the cache's
 * {@code [B, Hv, Dv, Dk]} float32 state, computed as {@code gated_delta_update} computes it off
 * the GPU ({@code gated_delta_ops}: one compiled {@code _gated_delta_step_ops} call per position),
 * then the gated RMS norm and the output projection. Immutable; the state lives in the
 * {@link ArraysCache} (slot 0 the conv state, slot 1 the recurrence state).
 */
final class GatedDeltaNet {
    /** What the input projections give for {@code x [B, S, hidden]}. */
    record Projected(MlxArray qkv, MlxArray z, MlxArray b, MlxArray a) {}

    /** The layer's input projections: qwen3_5's four, or qwen3_next's two packed ones. */
    interface Projections {
        /**
         * @return {@code qkv [B, S, 2 keyDim + valueDim]} (q, k, v concatenated per position),
         *     {@code z [B, S, Hv, Dv]}, {@code b} and {@code a} {@code [B, S, Hv]}
         */
        Projected project(MlxArray x);
    }

    /** qwen3_5.py's {@code in_proj_qkv}, {@code in_proj_z}, {@code in_proj_b}, {@code in_proj_a}. */
    record SplitProjections(Linear qkv, Linear z, Linear b, Linear a, int numVHeads, int headVDim)
            implements Projections {
        @Override
        public Projected project(MlxArray x) {
            MlxArray qkvOut = qkv.forward(x);
            MlxArray zOut = Mlx.reshape(z.forward(x), x.dim(0), x.dim(1), numVHeads, headVDim);
            return new Projected(qkvOut, zOut, b.forward(x), a.forward(x));
        }
    }

    private final Projections projections;
    private final MlxArray convWeight;
    private final MlxArray dtBias;
    private final MlxArray aLog;
    private final RmsNorm norm;
    private final Linear outProj;
    private final int numKHeads;
    private final int numVHeads;
    private final int headKDim;
    private final int headVDim;
    private final int keyDim;
    private final int convDim;
    private final int convKernel;

    GatedDeltaNet(
            Projections projections,
            MlxArray convWeight,
            MlxArray dtBias,
            MlxArray aLog,
            RmsNorm norm,
            Linear outProj,
            GatedDeltaArgs g) {
        this.projections = projections;
        this.convWeight = convWeight;
        this.dtBias = dtBias;
        this.aLog = aLog;
        this.norm = norm;
        this.outProj = outProj;
        this.numKHeads = g.numKHeads();
        this.numVHeads = g.numVHeads();
        this.headKDim = g.headKDim();
        this.headVDim = g.headVDim();
        this.keyDim = g.keyDim();
        this.convDim = g.convDim();
        this.convKernel = g.convKernel();
    }

    /**
     * The layer's parameters other than its input projections under {@code path}: the conv1d
     * weight {@code [convDim, kernel, 1]}, {@code dt_bias}, {@code A_log}, the gated norm and
     * {@code out_proj}; counts the two random draws mlx-lm's constructor takes besides its Linears
     * (the conv1d weight and {@code A}).
     */
    static GatedDeltaNet load(
            ModelConfig config, Parameters params, String path, Projections projections, GatedDeltaArgs g) {
        MlxArray conv = params.get(path + ".conv1d.weight");
        if (conv.ndim() != 3 || conv.dim(0) != g.convDim() || conv.dim(1) != g.convKernel() || conv.dim(2) != 1) {
            throw new ModelLoadException("parameter '" + path + ".conv1d.weight' has shape " + shape(conv)
                    + ", expected [" + g.convDim() + ", " + g.convKernel() + ", 1] from " + config.file());
        }
        params.countInitRandomDraws(2);
        return new GatedDeltaNet(
                projections,
                conv,
                params.get(path + ".dt_bias"),
                params.get(path + ".A_log"),
                RmsNorm.load(params, path + ".norm", g.rmsNormEps()),
                Linear.load(config, params, path + ".out_proj", g.valueDim()),
                g);
    }

    private static String shape(MlxArray a) {
        StringBuilder s = new StringBuilder("[");
        for (int i = 0; i < a.ndim(); i++) {
            s.append(i == 0 ? "" : ", ").append(a.dim(i));
        }
        return s.append(']').toString();
    }

    /**
     * {@code __call__(inputs, mask, cache)}.
     *
     * @param mask {@code create_ssm_mask}: the cache's {@code [B, S]} boolean mask, null for none
     * @param cache null for none
     */
    MlxArray forward(MlxArray x, MlxArray mask, ArraysCache cache) {
        int b = x.dim(0);
        int s = x.dim(1);
        Projected p = projections.project(x);
        MlxArray qkv = p.qkv();
        MlxArray convState = cache != null && cache.get(0) != null
                ? cache.get(0)
                : Mlx.zeros(new int[] {b, convKernel - 1, convDim}, x.dtype());
        if (mask != null) {
            qkv = Mlx.where(Mlx.expandDims(mask, -1), qkv, Mlx.scalar(0, qkv.dtype()));
        }
        MlxArray convInput = Mlx.concatenate(1, convState, qkv);
        if (cache != null) {
            int nKeep = convKernel - 1;
            int[] lengths = cache.lengths();
            if (lengths != null) {
                // ends = clip(lengths, 0, S); take_along_axis(conv_input, (ends[:, None] + arange(n_keep))[..., None],
                // 1)
                int[] positions = new int[b * nKeep];
                for (int r = 0; r < b; r++) {
                    int end = Math.clamp(lengths[r], 0, s);
                    for (int j = 0; j < nKeep; j++) {
                        positions[r * nKeep + j] = end + j;
                    }
                }
                cache.set(0, Mlx.takeAlongAxis(convInput, Mlx.fromInts(positions, b, nKeep, 1), 1));
            } else {
                int total = convInput.dim(1);
                cache.set(
                        0,
                        Mlx.contiguous(Mlx.slice(
                                convInput, new int[] {0, total - nKeep, 0}, new int[] {b, total, convDim}, new int[] {
                                    1, 1, 1
                                })));
            }
        }
        MlxArray convOut = Mlx.silu(Mlx.conv1d(convInput, convWeight, 1, 0, 1, convDim));

        MlxArray q = Mlx.reshape(lastAxis(convOut, 0, keyDim), b, s, numKHeads, headKDim);
        MlxArray k = Mlx.reshape(lastAxis(convOut, keyDim, 2 * keyDim), b, s, numKHeads, headKDim);
        MlxArray v = Mlx.reshape(lastAxis(convOut, 2 * keyDim, convDim), b, s, numVHeads, headVDim);

        MlxArray state = cache != null ? cache.get(1) : null;
        // normalize_qk(q, k, inv_scale=head_k_dim**-0.5, eps=1e-6)
        double invScale = Math.pow(headKDim, -0.5);
        float rmsEps = (float) (1e-6 * (invScale * invScale));
        q = Mlx.multiply(Mlx.scalar((float) (invScale * invScale), q.dtype()), Mlx.rmsNorm(q, null, rmsEps));
        k = Mlx.multiply(Mlx.scalar((float) invScale, k.dtype()), Mlx.rmsNorm(k, null, rmsEps));

        MlxArray[] steps = cache != null && cache.keepsRollbackPoints() ? new MlxArray[s + 1] : null;
        MlxArray[] out = update(q, k, v, p.a(), p.b(), state, mask, steps);
        if (cache != null) {
            cache.recordPositions(convInput, steps == null ? new MlxArray[0] : steps);
            cache.set(1, out[1]);
            cache.advance(s);
        }
        MlxArray y = Mlx.preciseSwiglu(out[0], p.z(), norm.forward(out[0]));
        return outProj.forward(Mlx.reshape(y, b, s, -1));
    }

    /**
     * {@code gated_delta_update(q, k, v, a, b, A_log, dt_bias, state, mask)} on the ops path:
     * {@code beta = sigmoid(b)}, {@code g = compute_g(A_log, a, dt_bias)}, a zero float32 state
     * when there is none, q and k repeated to the value heads, then one compiled step per position
     * and the outputs stacked along the sequence.
     *
     * @param steps null, or {@code S + 1} slots that receive the state before the first position and
     *     the state after each position (the arrays the recurrence computes; nothing is added to the graph)
     * @return {y [B, S, Hv, Dv], the final state}
     */
    private MlxArray[] update(
            MlxArray q,
            MlxArray k,
            MlxArray v,
            MlxArray a,
            MlxArray bIn,
            MlxArray state,
            MlxArray mask,
            MlxArray[] steps) {
        MlxArray beta = Mlx.sigmoid(bIn);
        MlxArray g = Mlx.gdnComputeG(aLog, a, dtBias);
        int b = q.dim(0);
        int t = q.dim(1);
        if (state == null) {
            state = Mlx.zeros(new int[] {b, numVHeads, headVDim, headKDim}, Dtype.FLOAT32);
        }
        int repeat = numVHeads / numKHeads;
        if (repeat > 1) {
            q = repeatHeads(q, repeat);
            k = repeatHeads(k, repeat);
        }
        MlxArray[] ys = new MlxArray[t];
        if (steps != null) {
            steps[0] = state;
        }
        for (int i = 0; i < t; i++) {
            MlxArray[] r = Mlx.gdnStep(
                    position(q, i),
                    position(k, i),
                    position(v, i),
                    position(g, i),
                    position(beta, i),
                    state,
                    mask == null ? null : position(mask, i));
            ys[i] = Mlx.expandDims(r[0], 1);
            state = r[1];
            if (steps != null) {
                steps[i + 1] = state;
            }
        }
        return new MlxArray[] {t == 1 ? ys[0] : joinPositions(ys), state};
    }

    /** Most arrays one {@link Mlx#concatenate} call takes (the shim's handle scratch). */
    static final int MAX_CONCATENATED = 1024;

    /**
     * {@code concatenate(ys, axis=1)} of any number of positions: in pieces of at most
     * {@link #MAX_CONCATENATED}, then the pieces (a copy either way: the same bytes).
     */
    private static MlxArray joinPositions(MlxArray[] ys) {
        if (ys.length <= MAX_CONCATENATED) {
            return Mlx.concatenate(1, ys);
        }
        MlxArray[] pieces = new MlxArray[(ys.length + MAX_CONCATENATED - 1) / MAX_CONCATENATED];
        for (int p = 0; p < pieces.length; p++) {
            int from = p * MAX_CONCATENATED;
            pieces[p] = Mlx.concatenate(
                    1, java.util.Arrays.copyOfRange(ys, from, Math.min(ys.length, from + MAX_CONCATENATED)));
        }
        return joinPositions(pieces);
    }

    /** {@code x[:, i]}: position {@code i} of a {@code [B, T, ...]} array. */
    private static MlxArray position(MlxArray x, int i) {
        int[] start = new int[x.ndim()];
        int[] stop = new int[x.ndim()];
        int[] strides = new int[x.ndim()];
        for (int d = 0; d < x.ndim(); d++) {
            stop[d] = x.dim(d);
            strides[d] = 1;
        }
        start[1] = i;
        stop[1] = i + 1;
        return Mlx.squeeze(Mlx.slice(x, start, stop, strides), 1);
    }

    /** {@code mx.repeat(x, repeat, -2)}: each head of {@code [B, T, H, D]} {@code repeat} times in a row. */
    private static MlxArray repeatHeads(MlxArray x, int repeat) {
        int b = x.dim(0);
        int t = x.dim(1);
        int h = x.dim(2);
        int d = x.dim(3);
        MlxArray e = Mlx.broadcastTo(Mlx.expandDims(x, 3), b, t, h, repeat, d);
        return Mlx.reshape(e, b, t, h * repeat, d);
    }

    /** {@code x[..., from:to]}. */
    private static MlxArray lastAxis(MlxArray x, int from, int to) {
        int n = x.ndim();
        int[] start = new int[n];
        int[] stop = new int[n];
        int[] strides = new int[n];
        for (int d = 0; d < n; d++) {
            stop[d] = x.dim(d);
            strides[d] = 1;
        }
        start[n - 1] = from;
        stop[n - 1] = to;
        return Mlx.slice(x, start, stop, strides);
    }
}
