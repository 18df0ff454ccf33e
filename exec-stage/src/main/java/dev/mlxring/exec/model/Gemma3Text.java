package dev.mlxring.exec.model;

import dev.mlxring.exec.kv.AttentionMask;
import dev.mlxring.exec.kv.DenseKvCache;
import dev.mlxring.exec.kv.KvCache;
import dev.mlxring.exec.kv.RotatingKvCache;
import dev.mlxring.exec.nn.Embedding;
import dev.mlxring.exec.nn.Linear;
import dev.mlxring.exec.nn.Parameters;
import dev.mlxring.exec.nn.Rope;
import dev.mlxring.mlx.CpuKernels;
import dev.mlxring.mlx.Dtype;
import dev.mlxring.mlx.Mlx;
import dev.mlxring.mlx.MlxArray;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;

/**
 * mlx-lm's {@code models/gemma3_text.py} (Gemma 3 text models), read side by side with it: the
 * {@code (1 + weight)} RMSNorm, the embedding scaled by {@code sqrt(hidden_size)} rounded to
 * bfloat16, attention scaled by {@code query_pre_attn_scalar ** -0.5} with q/k norms after the
 * head transpose, four norms per block around {@code clip_residual}, the GELU-approx MLP, and
 * interleaved layers: every {@code sliding_window_pattern}-th layer is global (rope_theta with
 * the configured scaling, a full {@link DenseKvCache}), the others slide over
 * {@code sliding_window} positions (rope_local_base_freq, a {@link RotatingKvCache}).
 *
 * <p>Owns its parameters; single-threaded (the exec thread).
 */
final class Gemma3Text extends LoadedModel {
    /** The resolved {@code ModelArgs}, with gemma3_text's defaults. */
    record Args(
            int hiddenSize,
            int numHiddenLayers,
            int intermediateSize,
            int numAttentionHeads,
            int headDim,
            double rmsNormEps,
            int vocabSize,
            int numKeyValueHeads,
            double ropeTheta,
            double ropeLocalBaseFreq,
            double queryPreAttnScalar,
            int slidingWindow,
            int slidingWindowPattern,
            int maxPositionEmbeddings,
            Map<String, Object> ropeScaling) {
        static Args of(ModelConfig c) {
            Args a = new Args(
                    c.intField("hidden_size", 1152),
                    c.intField("num_hidden_layers", 26),
                    c.intField("intermediate_size", 6912),
                    c.intField("num_attention_heads", 4),
                    c.intField("head_dim", 256),
                    c.doubleField("rms_norm_eps", 1.0e-6),
                    c.intField("vocab_size", 262144),
                    c.intField("num_key_value_heads", 1),
                    c.doubleField("rope_theta", 1_000_000.0),
                    c.doubleField("rope_local_base_freq", 10_000.0),
                    c.doubleField("query_pre_attn_scalar", 256),
                    c.intField("sliding_window", 512),
                    c.intField("sliding_window_pattern", 6),
                    c.intField("max_position_embeddings", 32768),
                    c.ropeScaling().orElse(null));
            if (a.slidingWindowPattern < 1 || a.slidingWindowPattern > a.numHiddenLayers) {
                // mlx-lm indexes cache[sliding_window_pattern - 1] for the global mask.
                throw new ModelLoadException(c.file() + ": field 'sliding_window_pattern' must be in [1, "
                        + a.numHiddenLayers + "] (num_hidden_layers), got " + a.slidingWindowPattern);
            }
            if (a.slidingWindow < 1) {
                throw new ModelLoadException(
                        c.file() + ": field 'sliding_window' must be >= 1, got " + a.slidingWindow);
            }
            return a;
        }

        boolean isGlobal(int layer) {
            return layer % slidingWindowPattern == slidingWindowPattern - 1;
        }
    }

    /** gemma3_text's {@code RMSNorm}: {@code mx.fast.rms_norm(x, 1.0 + weight, eps)}. */
    record RmsNorm(MlxArray weight, float eps, CpuKernels kernels) {
        static RmsNorm load(Parameters params, String path, double eps) {
            return new RmsNorm(params.get(path + ".weight"), (float) eps, params.kernels());
        }

        MlxArray forward(MlxArray x) {
            return Mlx.rmsNorm(kernels, x, Mlx.add(weight, Mlx.scalar(1.0, weight.dtype())), eps);
        }
    }

    /** {@code MLP}: {@code down_proj(gelu_approx(gate_proj(x)) * up_proj(x))}. */
    record Mlp(Linear gateProj, Linear downProj, Linear upProj) {
        static Mlp load(ModelConfig config, Parameters params, String path, Args a) {
            return new Mlp(
                    Linear.load(config, params, path + ".gate_proj", a.hiddenSize()),
                    Linear.load(config, params, path + ".down_proj", a.intermediateSize()),
                    Linear.load(config, params, path + ".up_proj", a.hiddenSize()));
        }

        MlxArray forward(MlxArray x) {
            return downProj.forward(Mlx.multiply(Mlx.geluApprox(gateProj.forward(x)), upProj.forward(x)));
        }
    }

    /** {@code Attention}: its own rope per layer kind; q/k norms on {@code [B, H, L, D]}. */
    record Attention(
            int nHeads,
            int nKvHeads,
            float scale,
            Linear qProj,
            Linear kProj,
            Linear vProj,
            Linear oProj,
            RmsNorm qNorm,
            RmsNorm kNorm,
            Rope rope,
            CpuKernels kernels) {
        static Attention load(ModelConfig config, Parameters params, String path, Args a, int layer) {
            int dim = a.hiddenSize();
            Rope rope = a.isGlobal(layer)
                    ? Rope.initialize(
                            a.headDim(),
                            a.ropeTheta(),
                            false,
                            a.ropeScaling(),
                            a.maxPositionEmbeddings(),
                            params.kernels())
                    : Rope.initialize(a.headDim(), a.ropeLocalBaseFreq(), false, null, null, params.kernels());
            return new Attention(
                    a.numAttentionHeads(),
                    a.numKeyValueHeads(),
                    (float) Math.pow(a.queryPreAttnScalar(), -0.5),
                    Linear.load(config, params, path + ".q_proj", dim),
                    Linear.load(config, params, path + ".k_proj", dim),
                    Linear.load(config, params, path + ".v_proj", dim),
                    Linear.load(config, params, path + ".o_proj", a.numAttentionHeads() * a.headDim()),
                    RmsNorm.load(params, path + ".q_norm", a.rmsNormEps()),
                    RmsNorm.load(params, path + ".k_norm", a.rmsNormEps()),
                    rope,
                    params.kernels());
        }

        MlxArray forward(MlxArray x, AttentionMask mask, KvCache cache) {
            int b = x.dim(0);
            int l = x.dim(1);
            MlxArray queries = Mlx.transpose(Mlx.reshape(qProj.forward(x), b, l, nHeads, -1), 0, 2, 1, 3);
            MlxArray keys = Mlx.transpose(Mlx.reshape(kProj.forward(x), b, l, nKvHeads, -1), 0, 2, 1, 3);
            MlxArray values = Mlx.transpose(Mlx.reshape(vProj.forward(x), b, l, nKvHeads, -1), 0, 2, 1, 3);
            queries = qNorm.forward(queries);
            keys = kNorm.forward(keys);
            if (mask.offsets() != null) {
                // A batch: rope(x, offset=cache.offset) with the rows' offset array (read before
                // any layer updated its cache; every cache of this layer's kind holds the same).
                queries = rope.forward(queries, mask.offsets());
                keys = rope.forward(keys, mask.offsets());
            } else {
                int offset = cache == null ? 0 : cache.offset();
                queries = rope.forward(queries, offset);
                keys = rope.forward(keys, offset);
            }
            return oProj.forward(SelfAttention.attend(kernels, queries, keys, values, cache, scale, mask));
        }
    }

    /** {@code TransformerBlock}: norms on both sides of attention and of the MLP. */
    record Block(
            Attention selfAttn,
            Mlp mlp,
            RmsNorm inputLayernorm,
            RmsNorm postAttentionLayernorm,
            RmsNorm preFeedforwardLayernorm,
            RmsNorm postFeedforwardLayernorm) {
        MlxArray forward(MlxArray x, AttentionMask mask, KvCache cache) {
            MlxArray r = selfAttn.forward(inputLayernorm.forward(x), mask, cache);
            MlxArray h = Mlx.clipResidual(x, postAttentionLayernorm.forward(r));
            r = mlp.forward(preFeedforwardLayernorm.forward(h));
            return Mlx.clipResidual(h, postFeedforwardLayernorm.forward(r));
        }
    }

    private final Args args;
    private final Embedding embedTokens;
    private final List<Block> layers;
    private final RmsNorm norm;
    private final Linear lmHead;

    /** Builds the model from {@code params} (which it then owns), as mlx-lm's load_model + sanitize. */
    static Gemma3Text build(ModelConfig config, Parameters params) {
        Args a = Args.of(config);
        Embedding embed = Embedding.load(config, params, "model.embed_tokens", a.hiddenSize());
        List<Block> layers = new ArrayList<>();
        for (int i = 0; i < a.numHiddenLayers(); i++) {
            String p = "model.layers." + i;
            double eps = a.rmsNormEps();
            layers.add(new Block(
                    Attention.load(config, params, p + ".self_attn", a, i),
                    Mlp.load(config, params, p + ".mlp", a),
                    RmsNorm.load(params, p + ".input_layernorm", eps),
                    RmsNorm.load(params, p + ".post_attention_layernorm", eps),
                    RmsNorm.load(params, p + ".pre_feedforward_layernorm", eps),
                    RmsNorm.load(params, p + ".post_feedforward_layernorm", eps)));
        }
        RmsNorm norm = RmsNorm.load(params, "model.norm", a.rmsNormEps());
        // sanitize: without lm_head.weight the head is the tied embedding. Model() built the
        // nn.Linear lm_head (one initial random draw) before sanitize popped it.
        Linear lmHead = null;
        if (params.has("lm_head.weight")) {
            lmHead = Linear.load(config, params, "lm_head", a.hiddenSize());
        } else {
            params.countInitRandomDraws(1);
        }
        params.requireAllUsed();
        // load_model(lazy=False); also keeps the weights off the loading thread's stream.
        params.evalAll();
        return new Gemma3Text(config, a, params, embed, layers, norm, lmHead);
    }

    private Gemma3Text(
            ModelConfig config,
            Args args,
            Parameters params,
            Embedding embedTokens,
            List<Block> layers,
            RmsNorm norm,
            Linear lmHead) {
        super("gemma3_text", args.headDim(), args.vocabSize(), config, params);
        this.args = args;
        this.embedTokens = embedTokens;
        this.layers = List.copyOf(layers);
        this.norm = norm;
        this.lmHead = lmHead;
    }

    @Override
    public MlxArray forward(MlxArray inputs, KvCache[] cache) {
        MlxArray h = embedTokens.forward(inputs);
        // h *= mx.array(hidden_size**0.5, mx.bfloat16).astype(h.dtype)
        h = Mlx.multiply(h, Mlx.astype(Mlx.scalar(Math.sqrt(args.hiddenSize()), Dtype.BFLOAT16), h.dtype()));
        int n = h.dim(1);
        int pattern = args.slidingWindowPattern();
        AttentionMask globalMask = AttentionMask.create(n, cache[pattern - 1], null);
        AttentionMask slidingMask = pattern > 1 ? AttentionMask.create(n, cache[0], args.slidingWindow()) : null;
        for (int i = 0; i < layers.size(); i++) {
            h = layers.get(i).forward(h, args.isGlobal(i) ? globalMask : slidingMask, cache[i]);
        }
        MlxArray out = norm.forward(h);
        return lmHead == null ? embedTokens.asLinear(out) : lmHead.forward(out);
    }

    /**
     * Batchable when every layer's rope takes an offset array: global layers batch over
     * {@link dev.mlxring.exec.kv.BatchKvCache}, sliding ones over
     * {@link dev.mlxring.exec.kv.BatchRotatingKvCache} (mlx-lm's {@code BatchGenerator} does the same).
     */
    @Override
    public boolean batchable() {
        return layers.stream().allMatch(b -> b.selfAttn().rope().batchable());
    }

    /** {@code make_cache}: global layers keep everything, sliding layers their window; max_kv_size does not apply. */
    @Override
    public KvCache[] newCache(int maxKvSize) {
        return fullOrSlidingCaches(layers.size(), args::isGlobal, args.slidingWindow());
    }

    @Override
    public boolean hasOwnCacheLayout() {
        return true;
    }

    @Override
    void closeLayers() {
        for (Block b : layers) {
            b.selfAttn().rope().close();
        }
    }
}
