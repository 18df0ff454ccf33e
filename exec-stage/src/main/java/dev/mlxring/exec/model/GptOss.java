package dev.mlxring.exec.model;

import com.fasterxml.jackson.databind.JsonNode;
import dev.mlxring.exec.kv.AttentionMask;
import dev.mlxring.exec.kv.BatchKvCache;
import dev.mlxring.exec.kv.BatchRotatingKvCache;
import dev.mlxring.exec.kv.DenseKvCache;
import dev.mlxring.exec.kv.KvCache;
import dev.mlxring.exec.kv.RotatingKvCache;
import dev.mlxring.exec.nn.Embedding;
import dev.mlxring.exec.nn.Linear;
import dev.mlxring.exec.nn.Parameters;
import dev.mlxring.exec.nn.RmsNorm;
import dev.mlxring.exec.nn.Rope;
import dev.mlxring.exec.nn.SwitchLinear;
import dev.mlxring.exec.nn.TensorShard;
import dev.mlxring.mlx.CpuKernels;
import dev.mlxring.mlx.Group;
import dev.mlxring.mlx.Mlx;
import dev.mlxring.mlx.MlxArray;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;

/**
 * mlx-lm's {@code models/gpt_oss.py} (gpt-oss-20b / 120b), read side by side with it: attention
 * with q/k/v/o biases and learned per-head attention sinks, layers alternating between a sliding
 * window ({@code sliding_window} positions in a {@link RotatingKvCache}) and full attention
 * ({@code layer_types}), and on every layer a mixture of experts: a biased linear router, the top
 * {@code num_experts_per_tok} logits softmaxed among themselves, and biased SwitchGLU experts with
 * the clamped {@code swiglu_oai} activation. The head is never tied.
 *
 * <p>Owns its parameters; single-threaded (the exec thread).
 */
final class GptOss extends LoadedModel {
    /** The resolved {@code ModelArgs}, with gpt_oss's defaults. */
    record Args(
            int numHiddenLayers,
            int numLocalExperts,
            int numExpertsPerTok,
            int vocabSize,
            double rmsNormEps,
            int hiddenSize,
            int intermediateSize,
            int headDim,
            int numAttentionHeads,
            int numKeyValueHeads,
            int slidingWindow,
            double ropeTheta,
            Map<String, Object> ropeScaling,
            List<Boolean> fullAttention) {
        static Args of(ModelConfig c) {
            int layers = c.intField("num_hidden_layers", 36);
            List<Boolean> full = new ArrayList<>();
            JsonNode types = c.json().get("layer_types");
            if (types == null || types.isNull()) {
                // ["sliding_attention", "full_attention"] * (num_hidden_layers // 2)
                for (int i = 0; i < layers / 2 * 2; i++) {
                    full.add(i % 2 == 1);
                }
            } else {
                if (!types.isArray()) {
                    throw new ModelLoadException(c.file() + ": field 'layer_types' must be a list, got " + types);
                }
                for (JsonNode t : types) {
                    String s = t.asText();
                    if (!s.equals("sliding_attention") && !s.equals("full_attention")) {
                        throw new ModelLoadException(c.file() + ": field 'layer_types' has '" + s
                                + "' (supported: sliding_attention, full_attention)");
                    }
                    full.add(s.equals("full_attention"));
                }
            }
            // mlx-lm zips layers with layer_types and indexes the first of each kind.
            if (full.size() < layers || !full.contains(true) || !full.contains(false)) {
                throw new ModelLoadException(c.file() + ": field 'layer_types' must give each of the " + layers
                        + " layers a type and include both sliding_attention and full_attention, got " + full.size()
                        + " entries");
            }
            Args a = new Args(
                    layers,
                    c.intField("num_local_experts", 128),
                    c.intField("num_experts_per_tok", 4),
                    c.intField("vocab_size", 201088),
                    c.doubleField("rms_norm_eps", 1e-5),
                    c.intField("hidden_size", 2880),
                    c.intField("intermediate_size", 2880),
                    c.intField("head_dim", 64),
                    c.intField("num_attention_heads", 64),
                    c.intField("num_key_value_heads", 8),
                    c.intField("sliding_window", 128),
                    c.doubleField("rope_theta", 150000),
                    c.ropeScaling().orElse(null),
                    List.copyOf(full.subList(0, layers)));
            if (a.numExpertsPerTok < 1 || a.numExpertsPerTok > a.numLocalExperts) {
                throw new ModelLoadException(
                        c.file() + ": field 'num_experts_per_tok' must be in [1, num_local_experts=" + a.numLocalExperts
                                + "], got " + a.numExpertsPerTok);
            }
            if (a.slidingWindow < 1) {
                throw new ModelLoadException(
                        c.file() + ": field 'sliding_window' must be >= 1, got " + a.slidingWindow);
            }
            return a;
        }
    }

    /** {@code AttentionBlock}: biased projections, rope, attention with the layer's sinks. */
    record Attention(
            int headDim,
            float smScale,
            MlxArray sinks,
            Linear qProj,
            Linear kProj,
            Linear vProj,
            Linear oProj,
            Rope rope,
            CpuKernels kernels) {
        /**
         * With a {@code shard}, this rank's part as mlx-lm's {@code shard()}: q/k/v all-to-sharded,
         * o sharded-to-all, the head counts divided and the sinks of this rank's heads
         * ({@code sinks[heads * rank : heads * (rank + 1)]}).
         */
        static Attention load(ModelConfig config, Parameters params, String path, Args a, TensorShard shard) {
            int dim = a.hiddenSize();
            int oInDims = a.numAttentionHeads() * a.headDim();
            Rope rope = Rope.initialize(a.headDim(), a.ropeTheta(), false, a.ropeScaling(), null, params.kernels());
            float scale = (float) (1 / Math.sqrt(a.headDim()));
            if (shard == null) {
                return new Attention(
                        a.headDim(),
                        scale,
                        params.get(path + ".sinks"),
                        Linear.load(config, params, path + ".q_proj", dim),
                        Linear.load(config, params, path + ".k_proj", dim),
                        Linear.load(config, params, path + ".v_proj", dim),
                        Linear.load(config, params, path + ".o_proj", oInDims),
                        rope,
                        params.kernels());
            }
            shard.divide("num_attention_heads", a.numAttentionHeads());
            shard.divide("num_key_value_heads", a.numKeyValueHeads());
            Linear q = shard.allToSharded(config, params, path + ".q_proj", dim);
            Linear k = shard.allToSharded(config, params, path + ".k_proj", dim);
            Linear v = shard.allToSharded(config, params, path + ".v_proj", dim);
            Linear o = shard.shardedToAll(config, params, path + ".o_proj", oInDims);
            shard.keepBlock(params, path + ".sinks", 0);
            return new Attention(a.headDim(), scale, params.get(path + ".sinks"), q, k, v, o, rope, params.kernels());
        }

        MlxArray forward(MlxArray x, AttentionMask mask, KvCache cache) {
            int b = x.dim(0);
            int l = x.dim(1);
            MlxArray q = Mlx.transpose(Mlx.reshape(qProj.forward(x), b, l, -1, headDim), 0, 2, 1, 3);
            MlxArray k = Mlx.transpose(Mlx.reshape(kProj.forward(x), b, l, -1, headDim), 0, 2, 1, 3);
            MlxArray v = Mlx.transpose(Mlx.reshape(vProj.forward(x), b, l, -1, headDim), 0, 2, 1, 3);
            if (mask.offsets() != null) {
                // A batch: rope(x, offset=cache.offset) with the rows' offset array (read before
                // any layer updated its cache; every cache of this layer's kind holds the same).
                q = rope.forward(q, mask.offsets());
                k = rope.forward(k, mask.offsets());
            } else {
                int offset = cache == null ? 0 : cache.offset();
                q = rope.forward(q, offset);
                k = rope.forward(k, offset);
            }
            MlxArray[] kv = switch (cache) {
                case DenseKvCache d -> d.updateAndFetch(k, v);
                case RotatingKvCache r -> r.updateAndFetch(k, v);
                case BatchKvCache bk -> bk.updateAndFetch(k, v);
                case BatchRotatingKvCache br -> br.updateAndFetch(k, v);
                case null -> new MlxArray[] {k, v};
                // mlx-lm: "Quantized SDPA does not support attention sinks."; --kv-bits is refused
                // before a run because the sliding layers rotate.
                default -> throw new IllegalStateException("gpt_oss attention cannot run over " + cache);
            };
            return oProj.forward(Mlx.sdpaMergedHeads(
                    kernels, q, kv[0], kv[1], smScale, mask.causal(), mask.causal() ? null : mask.array(), sinks));
        }
    }

    /**
     * {@code MLPBlock}: the router's top-k logits, softmaxed, weigh the selected experts.
     *
     * @param shardingGroup mlx-lm's {@code sharding_group}: the block's output is summed over it; null when whole
     */
    record MlpBlock(Linear router, SwitchGlu experts, int numExpertsPerTok, Group shardingGroup) {
        /**
         * With a {@code shard}, this rank's part as mlx-lm's {@code shard()}: the experts' gate and
         * up projections split by output rows (biases too), down by input columns in place, down's
         * bias divided by the group size (every rank adds it before the sum), the router whole.
         */
        static MlpBlock load(ModelConfig config, Parameters params, String path, Args a, TensorShard shard) {
            String e = path + ".experts";
            int downInDims = a.intermediateSize();
            if (shard != null) {
                shard.splitOutputs(params, e + ".gate_proj");
                shard.splitInputs(params, e + ".down_proj");
                shard.divideBias(params, e + ".down_proj");
                shard.splitOutputs(params, e + ".up_proj");
                downInDims = shard.divide(e + ".down_proj input features", downInDims);
            }
            return new MlpBlock(
                    Linear.load(config, params, path + ".router", a.hiddenSize()),
                    new SwitchGlu(
                            SwitchLinear.load(config, params, e + ".gate_proj", a.hiddenSize()),
                            SwitchLinear.load(config, params, e + ".up_proj", a.hiddenSize()),
                            SwitchLinear.load(config, params, e + ".down_proj", downInDims),
                            SwitchGlu.SWIGLU_OAI),
                    a.numExpertsPerTok(),
                    shard == null ? null : shard.group());
        }

        MlxArray forward(MlxArray x) {
            MlxArray g = router.forward(x);
            // mlx_topk: argpartition, the last k, take_along_axis
            MlxArray indices = TopK.indices(g, numExpertsPerTok);
            MlxArray expertLogits = Mlx.takeAlongAxis(g, indices, -1);
            MlxArray expertWeights = Mlx.softmax(expertLogits, -1, true);
            MlxArray y = experts.forward(x, indices);
            y = Mlx.multiply(y, Mlx.expandDims(expertWeights, -1));
            MlxArray out = Mlx.sum(y, -2, false);
            return shardingGroup == null ? out : shardingGroup.allSum(out);
        }
    }

    /** {@code TransformerBlock}: pre-norm residual attention, then pre-norm residual experts. */
    record Block(Attention selfAttn, MlpBlock mlp, RmsNorm inputLayernorm, RmsNorm postAttentionLayernorm) {
        MlxArray forward(MlxArray x, AttentionMask mask, KvCache cache) {
            MlxArray h = Mlx.add(x, selfAttn.forward(inputLayernorm.forward(x), mask, cache));
            return Mlx.add(h, mlp.forward(postAttentionLayernorm.forward(h)));
        }
    }

    private final Args args;
    private final Embedding embedTokens;
    private final List<Block> layers;
    private final RmsNorm norm;
    private final Linear lmHead;
    private final int swaIdx;
    private final int gaIdx;

    /**
     * Builds the model from {@code params} (which it then owns), as mlx-lm's load_model; with a
     * {@code shard}, this rank's part, as its {@code shard(group)} leaves it.
     */
    static GptOss build(ModelConfig config, Parameters params, TensorShard shard) {
        Args a = Args.of(config);
        if (!params.has("model.layers.0.mlp.experts.gate_proj.weight")
                && params.names().stream().anyMatch(n -> n.contains("gate_up_proj"))) {
            throw new ModelLoadException("gpt_oss weights in the original layout (fused gate_up_proj) are not"
                    + " supported: convert them with mlx_lm.convert (affine quantization) first");
        }
        Embedding embed = Embedding.load(config, params, "model.embed_tokens", a.hiddenSize());
        List<Block> layers = new ArrayList<>();
        for (int i = 0; i < a.numHiddenLayers(); i++) {
            String p = "model.layers." + i;
            layers.add(new Block(
                    Attention.load(config, params, p + ".self_attn", a, shard),
                    MlpBlock.load(config, params, p + ".mlp", a, shard),
                    RmsNorm.load(params, p + ".input_layernorm", a.rmsNormEps()),
                    RmsNorm.load(params, p + ".post_attention_layernorm", a.rmsNormEps())));
        }
        RmsNorm norm = RmsNorm.load(params, "model.norm", a.rmsNormEps());
        Linear lmHead = Linear.load(config, params, "lm_head", a.hiddenSize());
        params.requireAllUsed();
        // load_model(lazy=False); also keeps the weights off the loading thread's stream.
        params.evalAll();
        return new GptOss(config, a, params, embed, layers, norm, lmHead);
    }

    private GptOss(
            ModelConfig config,
            Args args,
            Parameters params,
            Embedding embedTokens,
            List<Block> layers,
            RmsNorm norm,
            Linear lmHead) {
        super("gpt_oss", args.headDim(), args.vocabSize(), config, params);
        this.args = args;
        this.embedTokens = embedTokens;
        this.layers = List.copyOf(layers);
        this.norm = norm;
        this.lmHead = lmHead;
        this.swaIdx = args.fullAttention().indexOf(false);
        this.gaIdx = args.fullAttention().indexOf(true);
    }

    @Override
    public MlxArray forward(MlxArray inputs, KvCache[] cache) {
        MlxArray x = embedTokens.forward(inputs);
        int n = x.dim(1);
        AttentionMask fullMask = AttentionMask.create(n, cache[gaIdx], null);
        AttentionMask swaMask = AttentionMask.create(n, cache[swaIdx], args.slidingWindow());
        for (int i = 0; i < layers.size(); i++) {
            x = layers.get(i).forward(x, args.fullAttention().get(i) ? fullMask : swaMask, cache[i]);
        }
        return lmHead.forward(norm.forward(x));
    }

    /**
     * Batchable when the rope takes an offset array: full layers batch over
     * {@link BatchKvCache}, sliding ones over {@link BatchRotatingKvCache}, as mlx-lm's
     * {@code BatchGenerator} runs them.
     */
    @Override
    public boolean batchable() {
        return layers.stream().allMatch(b -> b.selfAttn().rope().batchable());
    }

    /** {@code make_cache}: full layers keep everything, sliding layers their window; max_kv_size does not apply. */
    @Override
    public KvCache[] newCache(int maxKvSize) {
        return fullOrSlidingCaches(layers.size(), args.fullAttention()::get, args.slidingWindow());
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
