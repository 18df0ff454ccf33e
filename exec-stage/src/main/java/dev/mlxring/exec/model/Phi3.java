package dev.mlxring.exec.model;

import dev.mlxring.exec.kv.AttentionMask;
import dev.mlxring.exec.kv.KvCache;
import dev.mlxring.exec.nn.Linear;
import dev.mlxring.exec.nn.Parameters;
import dev.mlxring.exec.nn.Rope;
import dev.mlxring.mlx.CpuKernels;
import dev.mlxring.mlx.Mlx;
import dev.mlxring.mlx.MlxArray;
import java.util.List;
import java.util.Map;

/**
 * mlx-lm's {@code models/phi3.py} (Phi-3, Phi-3.5, Phi-4-mini): the llama-style
 * {@link DecoderModel} stack with a fused {@code qkv_proj} split into queries, keys and values,
 * a fused {@code gate_up_proj} split in halves, {@code head_dim = hidden_size / heads}, and a
 * rope over the first {@code head_dim * partial_rotary_factor} dimensions: {@code SuScaledRoPE}
 * for rope_scaling type {@code longrope}/{@code su}, else {@code nn.RoPE} (scale
 * {@code 1 / factor} for {@code linear}). phi3's Model has no {@code make_cache}, so
 * {@code max_kv_size} gives it rotating caches.
 */
final class Phi3 {
    private Phi3() {}

    /** Builds the model from {@code params} (which it then owns). */
    static LanguageModel build(ModelConfig c, Parameters params) {
        int hidden = c.intField("hidden_size");
        int heads = c.intField("num_attention_heads");
        int kvHeads = c.has("num_key_value_heads") ? c.intField("num_key_value_heads") : heads;
        int headDim = hidden / heads;
        Map<String, Object> scaling = ropeScaling(c);
        DecoderArgs a = new DecoderArgs(
                hidden,
                c.intField("num_hidden_layers"),
                c.intField("intermediate_size"),
                heads,
                kvHeads,
                headDim,
                c.doubleField("rms_norm_eps"),
                c.intField("vocab_size"),
                c.doubleField("rope_theta", 10000),
                c.boolField("rope_traditional", false),
                scaling,
                c.boolField("tie_word_embeddings", false),
                false,
                false,
                c.intField("max_position_embeddings", 131072));
        int ropeDim = (int) (headDim * c.doubleField("partial_rotary_factor", 1.0));
        int originalMax = c.intField("original_max_position_embeddings", 4096);
        return DecoderModel.build(c, params, a, new DecoderModel.LayerLoader() {
            @Override
            public DecoderModel.Attention attention(String path) {
                return new Attention(
                        a.numAttentionHeads(),
                        a.numKeyValueHeads(),
                        headDim,
                        (float) Math.pow(headDim, -0.5),
                        Linear.load(c, params, path + ".qkv_proj", hidden),
                        Linear.load(c, params, path + ".o_proj", heads * headDim),
                        rope(a, ropeDim, originalMax, params.kernels()),
                        params.kernels());
            }

            @Override
            public DecoderModel.FeedForward mlp(int layer, String path) {
                return new Mlp(
                        Linear.load(c, params, path + ".gate_up_proj", hidden),
                        Linear.load(c, params, path + ".down_proj", a.intermediateSize()));
            }
        });
    }

    /**
     * ModelArgs.__post_init__: rope_scaling needs "long_factor" and "type"; a type other than
     * longrope, su or linear is dropped (mlx-lm prints a warning and runs without scaling).
     */
    private static Map<String, Object> ropeScaling(ModelConfig c) {
        Map<String, Object> s = c.ropeScaling().orElse(null);
        if (s == null || s.isEmpty()) {
            return null;
        }
        if (!s.containsKey("long_factor") || !s.containsKey("type")) {
            throw new ModelLoadException(c.file() + ": rope_scaling must contain keys long_factor and type");
        }
        Object type = s.get("type");
        if (!List.of("longrope", "su", "linear").contains(type)) {
            System.getLogger(Phi3.class.getName())
                    .log(
                            System.Logger.Level.WARNING,
                            "rope_scaling type " + type
                                    + " is not supported by phi3; running without rope scaling (as mlx-lm)");
            return null;
        }
        return s;
    }

    private static Rope rope(DecoderArgs a, int ropeDim, int originalMax, CpuKernels kernels) {
        Map<String, Object> s = a.ropeScaling();
        if (s != null && (s.get("type").equals("longrope") || s.get("type").equals("su"))) {
            if (!s.containsKey("short_factor")) {
                throw new ModelLoadException("rope_scaling.short_factor is missing (" + s.get("type") + ")");
            }
            return Rope.SuScaled.of(
                    ropeDim, a.ropeTheta(), a.maxPositionEmbeddings(), originalMax, s.get("long_factor"), kernels);
        }
        double scale = 1.0;
        if (s != null) {
            if (!(s.get("factor") instanceof Double factor)) {
                // mlx-lm asserts isinstance(factor, float)
                throw new ModelLoadException(
                        "rope_scaling.factor must be a float for linear scaling, got " + s.get("factor"));
            }
            scale = 1 / factor;
        }
        return new Rope.Standard(ropeDim, a.ropeTraditional(), (float) a.ropeTheta(), (float) scale, kernels);
    }

    /** {@code Attention}: one projection for q, k and v, split at the head boundaries. */
    record Attention(
            int nHeads,
            int nKvHeads,
            int headDim,
            float scale,
            Linear qkvProj,
            Linear oProj,
            Rope rope,
            CpuKernels kernels)
            implements DecoderModel.Attention {
        @Override
        public MlxArray forward(MlxArray x, AttentionMask mask, KvCache cache) {
            int b = x.dim(0);
            int l = x.dim(1);
            MlxArray qkv = qkvProj.forward(x);
            int queryPos = nHeads * headDim;
            MlxArray[] parts = splitLast(qkv, queryPos, queryPos + nKvHeads * headDim);
            MlxArray queries = Mlx.transpose(Mlx.reshape(parts[0], b, l, nHeads, -1), 0, 2, 1, 3);
            MlxArray keys = Mlx.transpose(Mlx.reshape(parts[1], b, l, nKvHeads, -1), 0, 2, 1, 3);
            MlxArray values = Mlx.transpose(Mlx.reshape(parts[2], b, l, nKvHeads, -1), 0, 2, 1, 3);
            int offset = cache == null ? 0 : cache.offset();
            queries = rope.forward(queries, offset);
            keys = rope.forward(keys, offset);
            return oProj.forward(SelfAttention.attend(kernels, queries, keys, values, cache, scale, mask));
        }

        @Override
        public void close() {
            rope.close();
        }
    }

    /** {@code MLP}: {@code gate, x = split(gate_up_proj(x), 2)}; {@code down_proj(swiglu(gate, x))}. */
    record Mlp(Linear gateUpProj, Linear downProj) implements DecoderModel.FeedForward {
        @Override
        public MlxArray forward(MlxArray x) {
            MlxArray y = gateUpProj.forward(x);
            MlxArray[] parts = splitLast(y, y.dim(-1) / 2);
            return downProj.forward(Mlx.swiglu(parts[0], parts[1]));
        }
    }

    /** {@code mx.split(x, indices, axis=-1)}: the slices between consecutive split points. */
    private static MlxArray[] splitLast(MlxArray x, int... indices) {
        int n = x.ndim();
        int last = x.dim(-1);
        MlxArray[] out = new MlxArray[indices.length + 1];
        int start = 0;
        for (int i = 0; i <= indices.length; i++) {
            int stop = i < indices.length ? indices[i] : last;
            int[] lo = new int[n];
            int[] hi = x.shape();
            int[] strides = new int[n];
            java.util.Arrays.fill(strides, 1);
            lo[n - 1] = start;
            hi[n - 1] = stop;
            out[i] = Mlx.slice(x, lo, hi, strides);
            start = stop;
        }
        return out;
    }
}
