package dev.mlxring.exec.model;

import com.fasterxml.jackson.databind.JsonNode;
import dev.mlxring.exec.kv.AttentionMask;
import dev.mlxring.exec.kv.BatchKvCache;
import dev.mlxring.exec.kv.BatchRotatingKvCache;
import dev.mlxring.exec.kv.DenseKvCache;
import dev.mlxring.exec.kv.KvCache;
import dev.mlxring.exec.kv.QuantizedKvCache;
import dev.mlxring.exec.kv.RotatingKvCache;
import dev.mlxring.exec.nn.Embedding;
import dev.mlxring.exec.nn.Linear;
import dev.mlxring.exec.nn.Parameters;
import dev.mlxring.exec.nn.RmsNorm;
import dev.mlxring.exec.nn.Rope;
import dev.mlxring.exec.nn.SwitchLinear;
import dev.mlxring.mlx.ArrayScope;
import dev.mlxring.mlx.CpuKernels;
import dev.mlxring.mlx.Mlx;
import dev.mlxring.mlx.MlxArray;
import java.util.ArrayList;
import java.util.HashMap;
import java.util.List;
import java.util.Map;

/**
 * mlx-lm's {@code models/gemma4_text.py} (Gemma 4 text models), read side by side with it:
 * the embedding scaled by {@code sqrt(hidden_size)}; per-layer input embeddings (a second
 * embedding of {@code num_hidden_layers * hidden_size_per_layer_input} per token, mixed with a
 * projection of the embedding and handed to each layer's gate); {@code layer_types} of sliding
 * layers ({@code head_dim}, the sliding rope, a {@link RotatingKvCache} of {@code sliding_window})
 * and full-attention layers ({@code global_head_dim}, the full rope, usually proportional over part
 * of the head, a {@link DenseKvCache}; with {@code attention_k_eq_v} the values are the keys);
 * attention scale 1 with q/k norms and a scale-free v norm; the last {@code num_kv_shared_layers}
 * layers have no keys, values or cache of their own and attend over those of the last earlier
 * layer of their kind (and their MLP is twice as wide with {@code use_double_wide_mlp}); four
 * norms per block, the GELU-gated MLP, a learnt scalar per layer, and logits soft-capped by
 * {@code tanh(x / cap) * cap}.
 *
 * <p>With {@code enable_moe_block} every layer adds a mixture of experts beside its MLP: a router
 * on the residual stream (norm with a learnt scale, top-k, softmax, per-expert scale) and
 * GELU-gated SwitchGLU experts, each branch with its own norms, summed before the last
 * feed-forward norm. A checkpoint's fused {@code experts.gate_up_proj} is split at load as mlx-lm's
 * {@code sanitize} splits it.
 *
 * <p>Owns its parameters; single-threaded (the exec thread).
 */
final class Gemma4Text extends LoadedModel {
    private static final String SLIDING = "sliding_attention";
    private static final String FULL = "full_attention";

    /** The resolved {@code ModelArgs}, with gemma4_text's defaults. */
    record Args(
            int hiddenSize,
            int numHiddenLayers,
            int intermediateSize,
            int numAttentionHeads,
            int headDim,
            int globalHeadDim,
            double rmsNormEps,
            int vocabSize,
            int vocabSizePerLayerInput,
            int numKeyValueHeads,
            Integer numGlobalKeyValueHeads,
            int numKvSharedLayers,
            int hiddenSizePerLayerInput,
            boolean ropeTraditional,
            Map<String, Object> ropeParameters,
            int slidingWindow,
            int maxPositionEmbeddings,
            boolean attentionKEqV,
            Double finalLogitSoftcapping,
            boolean useDoubleWideMlp,
            List<String> layerTypes,
            boolean enableMoeBlock,
            int numExperts,
            int topKExperts,
            int moeIntermediateSize) {
        static Args of(ModelConfig c) {
            boolean moe = c.boolField("enable_moe_block", false);
            if (moe) {
                for (String f : List.of("num_experts", "top_k_experts", "moe_intermediate_size")) {
                    if (!c.has(f)) {
                        throw new ModelLoadException(
                                c.file() + ": field '" + f + "' is required with enable_moe_block");
                    }
                }
            }
            int layers = c.intField("num_hidden_layers", 35);
            int pattern = c.intField("sliding_window_pattern", 5);
            List<String> types = new ArrayList<>();
            JsonNode t = c.json().get("layer_types");
            if (t == null || t.isNull()) {
                if (pattern < 1) {
                    throw new ModelLoadException(
                            c.file() + ": field 'sliding_window_pattern' must be >= 1, got " + pattern);
                }
                // (["sliding_attention"] * (pattern - 1) + ["full_attention"]) repeated, cut to the layers
                for (int i = 0; i < layers; i++) {
                    types.add(i % pattern == pattern - 1 ? FULL : SLIDING);
                }
            } else {
                if (!t.isArray()) {
                    throw new ModelLoadException(c.file() + ": field 'layer_types' must be a list, got " + t);
                }
                for (JsonNode n : t) {
                    String s = n.asText();
                    if (!s.equals(SLIDING) && !s.equals(FULL)) {
                        throw new ModelLoadException(c.file() + ": field 'layer_types' has '" + s
                                + "' (supported: sliding_attention, full_attention)");
                    }
                    types.add(s);
                }
                if (types.size() < layers) {
                    throw new ModelLoadException(c.file() + ": field 'layer_types' gives " + types.size()
                            + " types for " + layers + " layers");
                }
            }
            Map<String, Object> rope = c.has("rope_parameters") ? c.objectAsMap("rope_parameters") : defaultRope();
            // final_logit_softcapping: 30.0 when absent, None (no cap) when null
            Double softcap = c.has("final_logit_softcapping")
                    ? Double.valueOf(c.doubleField("final_logit_softcapping"))
                    : c.json().has("final_logit_softcapping") ? null : Double.valueOf(30.0);
            Integer globalKv = c.has("num_global_key_value_heads")
                    ? Integer.valueOf(c.intField("num_global_key_value_heads"))
                    : null;
            Args a = new Args(
                    c.intField("hidden_size", 1536),
                    layers,
                    c.intField("intermediate_size", 6144),
                    c.intField("num_attention_heads", 8),
                    c.intField("head_dim", 256),
                    c.intField("global_head_dim", 512),
                    c.doubleField("rms_norm_eps", 1.0e-6),
                    c.intField("vocab_size", 262144),
                    c.intField("vocab_size_per_layer_input", 262144),
                    c.intField("num_key_value_heads", 1),
                    globalKv,
                    c.intField("num_kv_shared_layers", 20),
                    c.intField("hidden_size_per_layer_input", 256),
                    c.boolField("rope_traditional", false),
                    rope,
                    c.intField("sliding_window", 512),
                    c.intField("max_position_embeddings", 131072),
                    c.boolField("attention_k_eq_v", false),
                    softcap,
                    c.boolField("use_double_wide_mlp", true),
                    List.copyOf(types.subList(0, layers)),
                    moe,
                    moe ? c.intField("num_experts") : 0,
                    moe ? c.intField("top_k_experts") : 0,
                    moe ? c.intField("moe_intermediate_size") : 0);
            if (moe && (a.topKExperts < 1 || a.topKExperts > a.numExperts)) {
                throw new ModelLoadException(c.file() + ": field 'top_k_experts' must be in [1, " + a.numExperts
                        + "] (num_experts), got " + a.topKExperts);
            }
            if (a.slidingWindow < 1) {
                throw new ModelLoadException(
                        c.file() + ": field 'sliding_window' must be >= 1, got " + a.slidingWindow);
            }
            if (a.numKvSharedLayers < 0 || a.numKvSharedLayers >= layers && a.numKvSharedLayers > 0) {
                throw new ModelLoadException(c.file() + ": field 'num_kv_shared_layers' must be in [0, " + (layers - 1)
                        + "], got " + a.numKvSharedLayers);
            }
            // mlx-lm's previous_kvs: a shared layer reads the last earlier layer of its kind
            // (KeyError there when there is none).
            for (int j = a.firstKvShared(); j < layers && a.numKvSharedLayers > 0; j++) {
                if (a.kvSource(j) < 0) {
                    throw new ModelLoadException(c.file() + ": KV-shared layer " + j + " (" + a.layerTypes.get(j)
                            + ") has no earlier layer of its kind to share keys and values with");
                }
            }
            return a;
        }

        private static Map<String, Object> defaultRope() {
            return Map.of(
                    FULL,
                    Map.of("partial_rotary_factor", 0.25, "rope_theta", 1000000.0, "rope_type", "proportional"),
                    SLIDING,
                    Map.of("partial_rotary_factor", 1.0, "rope_theta", 10000.0, "rope_type", "default"));
        }

        /** A layer's head size: {@code global_head_dim} on full layers when set, else {@code head_dim}. */
        int headDimOf(int layer) {
            return isSliding(layer) || globalHeadDim == 0 ? headDim : globalHeadDim;
        }

        /**
         * The last axis of the caches (which KV quantization groups): the full layers' head size
         * when every layer is full attention, else {@code head_dim} (sliding layers rotate, and
         * rotating caches are never quantized).
         */
        int cachedHeadDim() {
            return layerTypes.contains(SLIDING) ? headDim : headDimOf(0);
        }

        /** {@code num_hidden_layers - num_kv_shared_layers}: the layers with caches. */
        int firstKvShared() {
            return numHiddenLayers - numKvSharedLayers;
        }

        boolean isSliding(int layer) {
            return layerTypes.get(layer).equals(SLIDING);
        }

        boolean hasKv(int layer) {
            return layer < firstKvShared();
        }

        /** {@code previous_kvs[j]}: the layer whose keys and values layer {@code j} attends over. */
        int kvSource(int j) {
            if (numKvSharedLayers == 0 || j < firstKvShared()) {
                return j;
            }
            int source = -1;
            for (int i = 0; i < firstKvShared(); i++) {
                if (layerTypes.get(i).equals(layerTypes.get(j))) {
                    source = i;
                }
            }
            return source;
        }

        /** The first layer of a kind, whose cache {@code _make_masks} reads; -1 when none. */
        int firstOfKind(String kind) {
            return layerTypes.indexOf(kind);
        }
    }

    /** {@code RMSNormNoScale}: {@code mx.fast.rms_norm(x, None, eps)}. */
    record NoScaleNorm(float eps, CpuKernels kernels) {
        MlxArray forward(MlxArray x) {
            return Mlx.rmsNorm(kernels, x, null, eps);
        }
    }

    /** {@code MLP}: {@code down_proj(geglu(gate_proj(x), up_proj(x)))}, geglu = {@code gelu_approx(gate) * x}. */
    record Mlp(Linear gateProj, Linear downProj, Linear upProj) {
        static Mlp load(ModelConfig config, Parameters params, String path, Args a, int layer) {
            boolean shared = layer >= a.firstKvShared() && a.firstKvShared() > 0;
            int inter = a.intermediateSize() * (a.useDoubleWideMlp() && shared ? 2 : 1);
            return new Mlp(
                    Linear.load(config, params, path + ".gate_proj", a.hiddenSize()),
                    Linear.load(config, params, path + ".down_proj", inter),
                    Linear.load(config, params, path + ".up_proj", a.hiddenSize()));
        }

        MlxArray forward(MlxArray x) {
            // mx.compile'd geglu: the same bytes as the two ops (gelu_approx is compiled itself)
            return downProj.forward(Mlx.multiply(Mlx.geluApprox(gateProj.forward(x)), upProj.forward(x)));
        }
    }

    /**
     * {@code Router}: {@code rms_norm(x, scale * hidden_size ** -0.5)}, the projection, the top
     * {@code top_k_experts} scores by {@code argpartition}, softmaxed among themselves and scaled
     * per expert ({@code per_expert_scale[top_k_indices]}).
     */
    record Router(Linear proj, MlxArray scale, MlxArray perExpertScale, float eps, int topK, double rootSize) {
        MlxArray[] forward(MlxArray x) {
            x = Mlx.rmsNorm(x, times(scale, rootSize), eps);
            MlxArray expertScores = proj.forward(x);
            MlxArray topKIndices = TopK.indices(expertScores, topK);
            MlxArray topKWeights = Mlx.takeAlongAxis(expertScores, topKIndices, -1);
            topKWeights = Mlx.softmax(topKWeights, -1, false);
            topKWeights = Mlx.multiply(topKWeights, Mlx.take(perExpertScale, topKIndices, 0));
            return new MlxArray[] {topKIndices, topKWeights};
        }
    }

    /** {@code Experts}: SwitchGLU with the GELU-gated activation, weighted and summed over the selected experts. */
    record Experts(SwitchGlu switchGlu) {
        /** {@code GeGLU()(x, gate)}: {@code geglu(gate, x)}. */
        static final SwitchGlu.Activation GEGLU = (x, gate) -> Mlx.multiply(Mlx.geluApprox(gate), x);

        MlxArray forward(MlxArray x, MlxArray topKIndices, MlxArray topKWeights) {
            MlxArray w = Mlx.expandDims(topKWeights, -1);
            MlxArray y = switchGlu.forward(x, topKIndices);
            return Mlx.sum(Mlx.multiply(w, y), -2, false);
        }
    }

    /** The MoE branch of a layer ({@code enable_moe_block}): router, experts and their three norms. */
    record MoeBranch(
            Router router,
            Experts experts,
            RmsNorm postFeedforwardLayernorm1,
            RmsNorm postFeedforwardLayernorm2,
            RmsNorm preFeedforwardLayernorm2) {
        static MoeBranch load(ModelConfig config, Parameters params, String p, Args a) {
            float eps = (float) a.rmsNormEps();
            String e = p + ".experts.switch_glu";
            return new MoeBranch(
                    new Router(
                            Linear.load(config, params, p + ".router.proj", a.hiddenSize()),
                            params.get(p + ".router.scale"),
                            params.get(p + ".router.per_expert_scale"),
                            eps,
                            a.topKExperts(),
                            Math.pow(a.hiddenSize(), -0.5)),
                    new Experts(new SwitchGlu(
                            SwitchLinear.load(config, params, e + ".gate_proj", a.hiddenSize()),
                            SwitchLinear.load(config, params, e + ".up_proj", a.hiddenSize()),
                            SwitchLinear.load(config, params, e + ".down_proj", a.moeIntermediateSize()),
                            Experts.GEGLU)),
                    RmsNorm.load(params, p + ".post_feedforward_layernorm_1", eps),
                    RmsNorm.load(params, p + ".post_feedforward_layernorm_2", eps),
                    RmsNorm.load(params, p + ".pre_feedforward_layernorm_2", eps));
        }
    }

    /**
     * What a layer hands on ({@code intermediates}): its keys and values after the cache update
     * and the rope offset it used (an int for one row, the rows' array in a batch); null keys for
     * a quantized cache, whose tuples mlx-lm cannot hand to a shared layer either.
     */
    record Shared(MlxArray keys, MlxArray values, int offset, MlxArray offsets) {}

    /** {@code Attention}: its own rope and head size per layer kind; norms on {@code [B, L, H, D]}. */
    record Attention(
            int layer,
            int nHeads,
            int nKvHeads,
            boolean useKEqV,
            Linear qProj,
            Linear kProj,
            Linear vProj,
            Linear oProj,
            RmsNorm qNorm,
            RmsNorm kNorm,
            NoScaleNorm vNorm,
            Rope rope,
            CpuKernels kernels) {
        static Attention load(ModelConfig config, Parameters params, String path, Args a, int layer) {
            boolean sliding = a.isSliding(layer);
            int headDim = a.headDimOf(layer);
            int dim = a.hiddenSize();
            boolean useKEqV = a.attentionKEqV() && !sliding;
            int nKvHeads =
                    useKEqV && a.numGlobalKeyValueHeads() != null ? a.numGlobalKeyValueHeads() : a.numKeyValueHeads();
            boolean hasKv = a.hasKv(layer);
            @SuppressWarnings("unchecked")
            Map<String, Object> ropeParams = a.ropeParameters().get(sliding ? SLIDING : FULL) instanceof Map<?, ?> m
                    ? (Map<String, Object>) m
                    : Map.of();
            double theta = ropeParams.get("rope_theta") instanceof Number n ? n.doubleValue() : 10000.0;
            Rope rope = Rope.initialize(
                    headDim, theta, a.ropeTraditional(), ropeParams, a.maxPositionEmbeddings(), params.kernels());
            float eps = (float) a.rmsNormEps();
            return new Attention(
                    layer,
                    a.numAttentionHeads(),
                    nKvHeads,
                    useKEqV,
                    Linear.load(config, params, path + ".q_proj", dim),
                    hasKv ? Linear.load(config, params, path + ".k_proj", dim) : null,
                    hasKv && !useKEqV ? Linear.load(config, params, path + ".v_proj", dim) : null,
                    Linear.load(config, params, path + ".o_proj", a.numAttentionHeads() * headDim),
                    RmsNorm.load(params, path + ".q_norm", eps),
                    hasKv ? RmsNorm.load(params, path + ".k_norm", eps) : null,
                    hasKv ? new NoScaleNorm(eps, params.kernels()) : null,
                    rope,
                    params.kernels());
        }

        /**
         * The attention output before o_proj's caller adds it, and what this layer shares.
         *
         * @param shared the source layer's keys, values and offset (a KV-shared layer), else null
         */
        MlxArray forward(MlxArray x, AttentionMask mask, KvCache cache, Shared shared, Shared[] out) {
            int b = x.dim(0);
            int l = x.dim(1);
            MlxArray queries = Mlx.reshape(qProj.forward(x), b, l, nHeads, -1);
            queries = qNorm.forward(queries);
            MlxArray keys;
            MlxArray values;
            int offset;
            MlxArray offsets;
            if (shared != null) {
                if (shared.keys() == null) {
                    throw new UnsupportedOperationException("gemma4_text layer " + layer
                            + " shares a quantized KV cache (--kv-bits): mlx-lm cannot run KV-shared layers"
                            + " over quantized caches either");
                }
                keys = shared.keys();
                values = shared.values();
                offset = shared.offset();
                offsets = shared.offsets();
            } else {
                if (kProj == null) {
                    throw new IllegalStateException(
                            "Layer " + layer + " is a KV-shared layer but received no shared_kv");
                }
                keys = Mlx.reshape(kProj.forward(x), b, l, nKvHeads, -1);
                values = keys;
                if (!useKEqV) {
                    values = Mlx.reshape(vProj.forward(x), b, l, nKvHeads, -1);
                }
                // offset = mx.array(cache.offset): the batch caches' per-row array
                boolean batch = cache instanceof BatchKvCache || cache instanceof BatchRotatingKvCache;
                offsets = batch ? mask.offsets() : null;
                offset = cache == null || batch ? 0 : cache.offset();
                keys = kNorm.forward(keys);
                keys = Mlx.transpose(keys, 0, 2, 1, 3);
                keys = offsets != null ? rope.forward(keys, offsets) : rope.forward(keys, offset);
                values = vNorm.forward(values);
                values = Mlx.transpose(values, 0, 2, 1, 3);
            }
            queries = Mlx.transpose(queries, 0, 2, 1, 3);
            queries = offsets != null ? rope.forward(queries, offsets) : rope.forward(queries, offset);

            MlxArray attended;
            if (cache instanceof QuantizedKvCache) {
                attended = SelfAttention.attend(kernels, queries, keys, values, cache, 1.0f, mask);
                out[0] = new Shared(null, null, offset, offsets);
                return oProj.forward(attended);
            }
            MlxArray[] kv = switch (cache) {
                case DenseKvCache d -> d.updateAndFetch(keys, values);
                case RotatingKvCache r -> r.updateAndFetch(keys, values);
                case BatchKvCache bk -> bk.updateAndFetch(keys, values);
                case BatchRotatingKvCache br -> br.updateAndFetch(keys, values);
                case null -> new MlxArray[] {keys, values};
                default -> throw new IllegalStateException("unexpected cache " + cache);
            };
            out[0] = new Shared(kv[0], kv[1], offset, offsets);
            attended = Mlx.sdpaMergedHeads(
                    kernels, queries, kv[0], kv[1], 1.0f, mask.causal(), mask.causal() ? null : mask.array(), null);
            return oProj.forward(attended);
        }
    }

    /** {@code DecoderLayer}: norms around attention and the MLP, the per-layer input gate, the layer scalar. */
    record Block(
            Attention selfAttn,
            Mlp mlp,
            RmsNorm inputLayernorm,
            RmsNorm postAttentionLayernorm,
            RmsNorm preFeedforwardLayernorm,
            RmsNorm postFeedforwardLayernorm,
            Linear perLayerInputGate,
            Linear perLayerProjection,
            RmsNorm postPerLayerInputNorm,
            MlxArray layerScalar,
            MoeBranch moe) {
        MlxArray forward(
                MlxArray x, AttentionMask mask, KvCache cache, MlxArray perLayerInput, Shared shared, Shared[] out) {
            MlxArray residual = x;
            MlxArray h = inputLayernorm.forward(x);
            h = selfAttn.forward(h, mask, cache, shared, out);
            h = postAttentionLayernorm.forward(h);
            h = Mlx.add(residual, h);

            residual = h;
            if (moe != null) {
                MlxArray h1 = preFeedforwardLayernorm.forward(h);
                h1 = mlp.forward(h1);
                h1 = moe.postFeedforwardLayernorm1().forward(h1);

                MlxArray[] routed = moe.router().forward(h);
                MlxArray h2 = moe.preFeedforwardLayernorm2().forward(h);
                h2 = moe.experts().forward(h2, routed[0], routed[1]);
                h2 = moe.postFeedforwardLayernorm2().forward(h2);

                h = Mlx.add(h1, h2);
            } else {
                h = preFeedforwardLayernorm.forward(h);
                h = mlp.forward(h);
            }
            h = postFeedforwardLayernorm.forward(h);
            h = Mlx.add(residual, h);

            if (perLayerInputGate != null && perLayerInput != null) {
                residual = h;
                MlxArray gate = perLayerInputGate.forward(h);
                gate = Mlx.geluApprox(gate);
                gate = Mlx.multiply(gate, perLayerInput);
                gate = perLayerProjection.forward(gate);
                gate = postPerLayerInputNorm.forward(gate);
                h = Mlx.add(residual, gate);
            }
            return Mlx.multiply(h, layerScalar);
        }
    }

    private final Args args;
    private final Embedding embedTokens;
    private final Embedding embedTokensPerLayer;
    private final Linear perLayerModelProjection;
    private final RmsNorm perLayerProjectionNorm;
    private final List<Block> layers;
    private final RmsNorm norm;
    private final Linear lmHead;

    /** Builds the model from {@code params} (which it then owns), as mlx-lm's load_model + sanitize. */
    static Gemma4Text build(ModelConfig config, Parameters params) {
        Args a = Args.of(config);
        sanitize(params, a);
        float eps = (float) a.rmsNormEps();
        Embedding embed = Embedding.load(config, params, "model.embed_tokens", a.hiddenSize());
        int perLayer = a.hiddenSizePerLayerInput();
        List<Block> layers = new ArrayList<>();
        for (int i = 0; i < a.numHiddenLayers(); i++) {
            String p = "model.layers." + i;
            layers.add(new Block(
                    Attention.load(config, params, p + ".self_attn", a, i),
                    Mlp.load(config, params, p + ".mlp", a, i),
                    RmsNorm.load(params, p + ".input_layernorm", eps),
                    RmsNorm.load(params, p + ".post_attention_layernorm", eps),
                    RmsNorm.load(params, p + ".pre_feedforward_layernorm", eps),
                    RmsNorm.load(params, p + ".post_feedforward_layernorm", eps),
                    perLayer > 0 ? Linear.load(config, params, p + ".per_layer_input_gate", a.hiddenSize()) : null,
                    perLayer > 0 ? Linear.load(config, params, p + ".per_layer_projection", perLayer) : null,
                    perLayer > 0 ? RmsNorm.load(params, p + ".post_per_layer_input_norm", eps) : null,
                    params.get(p + ".layer_scalar"),
                    a.enableMoeBlock() ? MoeBranch.load(config, params, p, a) : null));
        }
        RmsNorm norm = RmsNorm.load(params, "model.norm", eps);
        Embedding perLayerEmbed = null;
        Linear perLayerProjection = null;
        RmsNorm perLayerNorm = null;
        if (perLayer > 0) {
            perLayerEmbed =
                    Embedding.load(config, params, "model.embed_tokens_per_layer", a.numHiddenLayers() * perLayer);
            perLayerProjection = Linear.load(config, params, "model.per_layer_model_projection", a.hiddenSize());
            perLayerNorm = RmsNorm.load(params, "model.per_layer_projection_norm", eps);
        }
        boolean tie = config.boolField("tie_word_embeddings", true);
        Linear lmHead = tie ? null : Linear.load(config, params, "lm_head", a.hiddenSize());
        params.requireAllUsed();
        // load_model(lazy=False); also keeps the weights off the loading thread's stream.
        params.evalAll();
        return new Gemma4Text(
                config, a, params, embed, perLayerEmbed, perLayerProjection, perLayerNorm, layers, norm, lmHead);
    }

    /**
     * {@code sanitize}: drops rotary tables and activation ranges, and the K/V projections and
     * k_norm of KV-shared layers. (The experts' weights are split there too; the MoE block is
     * refused before.)
     */
    private static void sanitize(Parameters params, Args a) {
        for (String k : List.copyOf(params.names())) {
            boolean drop = k.contains("self_attn.rotary_emb")
                    || k.contains("input_max")
                    || k.contains("input_min")
                    || k.contains("output_max")
                    || k.contains("output_min");
            if (!drop
                    && (k.contains(".self_attn.k_proj")
                            || k.contains(".self_attn.v_proj")
                            || k.contains(".self_attn.k_norm"))) {
                int at = k.indexOf("layers.");
                if (at >= 0) {
                    String rest = k.substring(at + "layers.".length());
                    int dot = rest.indexOf('.');
                    try {
                        drop = Integer.parseInt(dot < 0 ? rest : rest.substring(0, dot)) >= a.firstKvShared();
                    } catch (NumberFormatException e) {
                        // mlx-lm keeps a key it cannot read a layer index from
                    }
                }
            }
            if (drop) {
                params.discard(k);
            } else if (k.endsWith(".experts.gate_up_proj")) {
                // gate, up = map(mx.contiguous, mx.split(v, 2, axis=-2))
                String base = k.substring(0, k.length() - ".gate_up_proj".length());
                MlxArray v = params.remove(k);
                int[] shape = v.shape();
                int n = shape.length;
                int half = shape[n - 2] / 2;
                int[] start = new int[n];
                int[] mid = shape.clone();
                mid[n - 2] = half;
                int[] strides = new int[n];
                java.util.Arrays.fill(strides, 1);
                int[] start2 = new int[n];
                start2[n - 2] = half;
                try (ArrayScope scope = ArrayScope.open()) {
                    params.put(base + ".switch_glu.gate_proj.weight", detached(Mlx.slice(v, start, mid, strides)));
                    params.put(base + ".switch_glu.up_proj.weight", detached(Mlx.slice(v, start2, shape, strides)));
                }
                v.close();
            } else if (k.endsWith(".experts.down_proj")) {
                String base = k.substring(0, k.length() - ".down_proj".length());
                params.put(base + ".switch_glu.down_proj.weight", params.remove(k));
            }
        }
    }

    /** {@code mx.contiguous} of a split half, evaluated and owned by the parameters. */
    private static MlxArray detached(MlxArray half) {
        MlxArray c = Mlx.contiguous(half);
        Mlx.eval(c);
        return c.detach();
    }

    private Gemma4Text(
            ModelConfig config,
            Args args,
            Parameters params,
            Embedding embedTokens,
            Embedding embedTokensPerLayer,
            Linear perLayerModelProjection,
            RmsNorm perLayerProjectionNorm,
            List<Block> layers,
            RmsNorm norm,
            Linear lmHead) {
        super("gemma4_text", args.cachedHeadDim(), args.vocabSize(), config, params);
        this.args = args;
        this.embedTokens = embedTokens;
        this.embedTokensPerLayer = embedTokensPerLayer;
        this.perLayerModelProjection = perLayerModelProjection;
        this.perLayerProjectionNorm = perLayerProjectionNorm;
        this.layers = List.copyOf(layers);
        this.norm = norm;
        this.lmHead = lmHead;
    }

    /** A Python float meeting an array: an array of the array's dtype, through float. */
    private static MlxArray times(MlxArray x, double v) {
        return Mlx.multiply(x, Mlx.scalar((float) v, x.dtype()));
    }

    @Override
    public MlxArray forward(MlxArray inputs, KvCache[] cache) {
        MlxArray inputEmbeddings = embedTokens.forward(inputs);
        MlxArray h = times(inputEmbeddings, Math.sqrt(args.hiddenSize()));
        int b = h.dim(0);
        int n = h.dim(1);
        int nLayers = layers.size();
        int perLayer = args.hiddenSizePerLayerInput();

        MlxArray[] perLayerInputs = new MlxArray[nLayers];
        if (perLayer > 0) {
            // _get_per_layer_inputs
            MlxArray pli = embedTokensPerLayer.forward(inputs);
            pli = times(pli, Math.sqrt(perLayer));
            pli = Mlx.reshape(pli, b, n, nLayers, perLayer);
            // _project_per_layer_inputs
            MlxArray proj = perLayerModelProjection.forward(h);
            proj = times(proj, Math.pow(args.hiddenSize(), -0.5));
            proj = Mlx.reshape(proj, b, n, nLayers, perLayer);
            proj = perLayerProjectionNorm.forward(proj);
            pli = times(Mlx.add(proj, pli), Math.pow(2.0, -0.5));
            for (int i = 0; i < nLayers; i++) {
                // per_layer_inputs[:, :, i, :]
                perLayerInputs[i] = Mlx.squeeze(
                        Mlx.slice(
                                pli, new int[] {0, 0, i, 0}, new int[] {b, n, i + 1, perLayer}, new int[] {1, 1, 1, 1}),
                        2);
            }
        }

        // _make_masks: one per kind, from the first layer of that kind's cache (None past the caches)
        Map<String, AttentionMask> masks = new HashMap<>();
        for (String kind : List.of(FULL, SLIDING)) {
            int first = args.firstOfKind(kind);
            if (first >= 0) {
                KvCache c = first < cache.length ? cache[first] : null;
                Integer window = kind.equals(SLIDING) ? args.slidingWindow() : null;
                masks.put(kind, c == null ? maskWithoutCache(n, window) : AttentionMask.create(n, c, window));
            }
        }

        Shared[] intermediates = new Shared[nLayers];
        Shared[] out = new Shared[1];
        for (int i = 0; i < nLayers; i++) {
            int source = args.kvSource(i);
            Shared shared = source == i ? null : intermediates[source];
            KvCache c = i < cache.length ? cache[i] : null;
            h = layers.get(i).forward(h, masks.get(args.layerTypes().get(i)), c, perLayerInputs[i], shared, out);
            intermediates[i] = out[0];
        }
        MlxArray logits = norm.forward(h);
        logits = lmHead == null ? embedTokens.asLinear(logits) : lmHead.forward(logits);
        Double cap = args.finalLogitSoftcapping();
        if (cap != null) {
            // mx.compile'd logit_softcap: the same bytes as the three ops
            logits = times(Mlx.tanh(Mlx.divide(logits, Mlx.scalar(cap.floatValue(), logits.dtype()))), cap);
        }
        return logits;
    }

    /** {@code create_attention_mask(h, None, window_size)}. */
    private static AttentionMask maskWithoutCache(int n, Integer window) {
        if (n == 1) {
            return AttentionMask.NONE;
        }
        if (window != null && n > window) {
            return new AttentionMask(false, AttentionMask.createCausalMask(n, 0, window), null);
        }
        return AttentionMask.CAUSAL;
    }

    /**
     * Batchable when every layer's rope takes an offset array: full layers batch over
     * {@link BatchKvCache}, sliding ones over {@link BatchRotatingKvCache}, and the KV-shared
     * layers read their source's batch keys and values.
     */
    @Override
    public boolean batchable() {
        return layers.stream().allMatch(blk -> blk.selfAttn().rope().batchable());
    }

    /**
     * {@code make_cache}: one cache per layer that has its own keys and values (the KV-shared
     * layers have none): full layers keep everything, sliding layers their window;
     * max_kv_size does not apply.
     */
    @Override
    public KvCache[] newCache(int maxKvSize) {
        return fullOrSlidingCaches(args.firstKvShared(), i -> !args.isSliding(i), args.slidingWindow());
    }

    /**
     * KV-shared layers attend over their source layer's fetched keys and values; over a
     * quantized cache those are (weight, scales, biases) tuples, which mlx-lm hands to
     * {@code mx.fast.scaled_dot_product_attention} and fails.
     */
    @Override
    public String kvQuantizationRefusal() {
        return args.numKvSharedLayers() > 0
                ? "model_type 'gemma4_text' has " + args.numKvSharedLayers()
                        + " KV-shared layers, which cannot attend over a quantized cache (mlx-lm fails there too)"
                : null;
    }

    @Override
    public boolean hasOwnCacheLayout() {
        return true;
    }

    @Override
    void closeLayers() {
        for (Block blk : layers) {
            blk.selfAttn().rope().close();
        }
    }
}
