package dev.mlxring.exec.model;

import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.node.ObjectNode;
import dev.mlxring.exec.kv.ArraysCache;
import dev.mlxring.exec.kv.AttentionMask;
import dev.mlxring.exec.kv.DenseKvCache;
import dev.mlxring.exec.kv.KvCache;
import dev.mlxring.exec.nn.Embedding;
import dev.mlxring.exec.nn.Linear;
import dev.mlxring.exec.nn.Parameters;
import dev.mlxring.exec.nn.RmsNorm;
import dev.mlxring.mlx.ArrayScope;
import dev.mlxring.mlx.Mlx;
import dev.mlxring.mlx.MlxArray;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;

/**
 * mlx-lm's {@code models/qwen3_5.py} (Qwen3.5, the text model of {@code Qwen3_5ForConditionalGeneration}):
 * a hybrid decoder whose every {@code full_attention_interval}-th layer is {@link GatedAttention}
 * over a KV cache and the others a {@link GatedDeltaNet} over an {@link ArraysCache} (conv state
 * and recurrence state), each followed by a dense {@link Mlp}. The text settings are read from
 * {@code text_config} when the config has one, else from the top level, with TextModelArgs'
 * defaults; the rope settings come from {@code rope_parameters} (its default when absent).
 *
 * <p>Weights, as {@code Model.sanitize}: vision tower and {@code mtp.} entries are dropped; names
 * are read under {@code language_model.} ({@code model.language_model.} and unprefixed names are
 * moved there); a checkpoint whose conv1d weights are in the Hugging Face layout
 * ({@code [C, 1, K]}) gets them moved to MLX's {@code [C, K, 1]} and 1 added to its
 * decoder-layer, final and q/k norm weights. {@code make_cache} gives the layout, so
 * {@code max_kv_size} does not apply.
 */
final class Qwen35 extends LoadedModel {
    private static final String ROOT = "language_model.";

    /** One decoder layer: a gated delta net or gated attention, then the MLP. */
    private record Layer(
            RmsNorm inputLayernorm,
            GatedDeltaNet linearAttn,
            GatedAttention selfAttn,
            RmsNorm postAttentionLayernorm,
            DecoderModel.FeedForward mlp) {
        boolean isLinear() {
            return linearAttn != null;
        }

        MlxArray forward(MlxArray x, MlxArray ssmMask, AttentionMask faMask, KvCache cache) {
            MlxArray n = inputLayernorm.forward(x);
            MlxArray r = isLinear()
                    ? linearAttn.forward(n, ssmMask, (ArraysCache) cache)
                    : selfAttn.forward(n, faMask, cache);
            MlxArray h = Mlx.add(x, r);
            return Mlx.add(h, mlp.forward(postAttentionLayernorm.forward(h)));
        }
    }

    private final Embedding embedTokens;
    private final List<Layer> layers;
    private final RmsNorm norm;
    private final Linear lmHead;
    private final int ssmIdx;
    private final int faIdx;

    private Qwen35(
            ModelConfig config,
            Parameters params,
            HybridArgs a,
            Embedding embedTokens,
            List<Layer> layers,
            RmsNorm norm,
            Linear lmHead) {
        super(config.modelType(), a.headDim(), a.vocabSize(), config, params);
        this.embedTokens = embedTokens;
        this.layers = List.copyOf(layers);
        this.norm = norm;
        this.lmHead = lmHead;
        this.ssmIdx = 0;
        this.faIdx = a.fullAttentionInterval() - 1;
    }

    /** The text model's settings: {@code text_config} when present (mlx-lm's ModelArgs.from_dict), else the config itself. */
    static ModelConfig textConfig(ModelConfig c) {
        JsonNode t = c.json().get("text_config");
        if (t == null || t.isNull()) {
            return c;
        }
        if (!t.isObject()) {
            throw new ModelLoadException(c.file() + ": field 'text_config' must be an object, got " + t);
        }
        ObjectNode copy = ((ObjectNode) t).deepCopy();
        if (!copy.has("model_type")) {
            copy.put("model_type", c.modelType());
        }
        return ModelConfig.of(c.file(), copy);
    }

    /** Builds the model from {@code params} (which it then owns), as load_model + sanitize. */
    static LanguageModel build(ModelConfig config, Parameters params) {
        ModelConfig t = textConfig(config);
        int hidden = t.intField("hidden_size", 4096);
        int layersCount = t.intField("num_hidden_layers", 32);
        int heads = t.intField("num_attention_heads", 32);
        int kvHeads = t.intField("num_key_value_heads", 8);
        int headDim = t.has("head_dim") && !t.json().get("head_dim").isNull() ? t.intField("head_dim") : hidden / heads;
        double eps = t.doubleField("rms_norm_eps", 1e-6);
        int interval = t.intField("full_attention_interval", 4);
        boolean tie = t.boolField("tie_word_embeddings", false);
        int maxPos = t.intField("max_position_embeddings", 131072);
        int numExperts = t.intField("num_experts", 0);
        int topK = t.intField("num_experts_per_tok", 0);
        if (numExperts > 0 && (topK <= 0 || topK > numExperts)) {
            throw new ModelLoadException(config.file() + ": field 'num_experts_per_tok' must be in [1, num_experts="
                    + numExperts + "], got " + topK);
        }
        GatedDeltaArgs g = new GatedDeltaArgs(
                hidden,
                t.intField("linear_num_key_heads", 16),
                t.intField("linear_num_value_heads", 64),
                t.intField("linear_key_head_dim", 192),
                t.intField("linear_value_head_dim", 128),
                t.intField("linear_conv_kernel_dim", 4),
                eps);
        // rope_parameters: its default_factory when absent; rope_theta and partial_rotary_factor
        // read from it (with their defaults) when it is a non-empty object.
        double ropeTheta = t.doubleField("rope_theta", 100000.0);
        double partial = t.doubleField("partial_rotary_factor", 0.25);
        Map<String, Object> ropeScaling = t.ropeScaling().orElse(null);
        JsonNode rp = t.json().get("rope_parameters");
        if (rp == null) {
            ropeTheta = 100000.0;
            partial = 0.25;
            ropeScaling = Map.of("type", "default", "rope_theta", 100000, "partial_rotary_factor", 0.25);
        } else if (rp.isObject() && !rp.isEmpty()) {
            Map<String, Object> m = t.objectAsMap("rope_parameters");
            if (!m.containsKey("type") && m.containsKey("rope_type")) {
                m = new java.util.HashMap<>(m);
                m.put("type", m.remove("rope_type"));
            }
            partial = rp.has("partial_rotary_factor")
                    ? rp.get("partial_rotary_factor").doubleValue()
                    : 0.25;
            ropeTheta = rp.has("rope_theta") ? rp.get("rope_theta").doubleValue() : 100000.0;
            ropeScaling = m;
        }
        int ropeDims = (int) (headDim * partial);

        sanitize(params, layersCount);
        HybridArgs a = new HybridArgs(
                ROOT,
                hidden,
                layersCount,
                heads,
                kvHeads,
                headDim,
                eps,
                interval,
                tie,
                maxPos,
                t.intField("vocab_size", 151936),
                ropeDims,
                ropeTheta,
                ropeScaling,
                g);
        int moeIntermediate = t.intField("moe_intermediate_size", 0);
        int sharedIntermediate = t.intField("shared_expert_intermediate_size", 0);
        boolean normTopkProb = t.boolField("norm_topk_prob", true);
        int intermediate = t.intField("intermediate_size", 14336);
        return assemble(
                config,
                params,
                a,
                path -> new GatedDeltaNet.SplitProjections(
                        Linear.load(config, params, path + ".in_proj_qkv", hidden),
                        Linear.load(config, params, path + ".in_proj_z", hidden),
                        Linear.load(config, params, path + ".in_proj_b", hidden),
                        Linear.load(config, params, path + ".in_proj_a", hidden),
                        g.numVHeads(),
                        g.headVDim()),
                // DecoderLayer: the mixture of experts on every layer when num_experts > 0
                (layer, path) -> numExperts > 0
                        ? Qwen3NextSparseBlock.load(
                                config, params, path, hidden, moeIntermediate, sharedIntermediate, topK, normTopkProb)
                        : Mlp.load(config, params, path, hidden, intermediate));
    }

    /**
     * The settings a hybrid family's file resolves from its config.
     *
     * @param root the weight-name prefix ({@code language_model.} for qwen3_5, none for qwen3_next)
     * @param ropeDims {@code int(head_dim * partial_rotary_factor)}
     */
    record HybridArgs(
            String root,
            int hiddenSize,
            int numHiddenLayers,
            int numAttentionHeads,
            int numKeyValueHeads,
            int headDim,
            double rmsNormEps,
            int fullAttentionInterval,
            boolean tieWordEmbeddings,
            int maxPositionEmbeddings,
            int vocabSize,
            int ropeDims,
            double ropeTheta,
            Map<String, Object> ropeScaling,
            GatedDeltaArgs gatedDelta) {}

    /** A family's delta net input projections under a {@code linear_attn} path. */
    interface ProjectionLoader {
        GatedDeltaNet.Projections load(String path);
    }

    /** A family's MLP of layer {@code layer} under its {@code mlp} path. */
    interface MlpLoader {
        DecoderModel.FeedForward load(int layer, String path);
    }

    /**
     * The decoder of {@code a} from {@code params} (sanitized; the model then owns them): every
     * {@code full_attention_interval}-th layer gated attention, the others gated delta nets with
     * the family's projections, each with the family's MLP; the final norm and a tied or untied
     * head. Fails if a parameter is left unused.
     */
    static LanguageModel assemble(
            ModelConfig config, Parameters params, HybridArgs a, ProjectionLoader projections, MlpLoader mlps) {
        if (a.fullAttentionInterval() < 1 || a.fullAttentionInterval() > a.numHiddenLayers()) {
            throw new ModelLoadException(config.file() + ": full_attention_interval " + a.fullAttentionInterval()
                    + " must be in [1, num_hidden_layers=" + a.numHiddenLayers() + "] (mlx-lm reads the first"
                    + " attention layer's cache at index full_attention_interval - 1)");
        }
        List<Layer> layers = new ArrayList<>();
        for (int i = 0; i < a.numHiddenLayers(); i++) {
            String p = a.root() + "model.layers." + i;
            boolean linear = (i + 1) % a.fullAttentionInterval() != 0;
            RmsNorm inputNorm = RmsNorm.load(params, p + ".input_layernorm", a.rmsNormEps());
            GatedDeltaNet gdn = null;
            GatedAttention attn = null;
            if (linear) {
                String path = p + ".linear_attn";
                gdn = GatedDeltaNet.load(config, params, path, projections.load(path), a.gatedDelta());
            } else {
                attn = new GatedAttention(
                        config,
                        params,
                        p + ".self_attn",
                        a.hiddenSize(),
                        a.numAttentionHeads(),
                        a.numKeyValueHeads(),
                        a.headDim(),
                        a.rmsNormEps(),
                        a.ropeDims(),
                        a.ropeTheta(),
                        a.ropeScaling(),
                        a.maxPositionEmbeddings());
            }
            RmsNorm postNorm = RmsNorm.load(params, p + ".post_attention_layernorm", a.rmsNormEps());
            layers.add(new Layer(inputNorm, gdn, attn, postNorm, mlps.load(i, p + ".mlp")));
        }
        Embedding embed = Embedding.load(config, params, a.root() + "model.embed_tokens", a.hiddenSize());
        RmsNorm finalNorm = RmsNorm.load(params, a.root() + "model.norm", a.rmsNormEps());
        Linear head = a.tieWordEmbeddings() ? null : Linear.load(config, params, a.root() + "lm_head", a.hiddenSize());
        Qwen35 model = new Qwen35(config, params, a, embed, layers, finalNorm, head);
        params.requireAllUsed();
        params.evalAll();
        return model;
    }

    /**
     * {@code Model.sanitize} then {@code TextModel.sanitize}: names moved under
     * {@code language_model.}, vision and multi-token-prediction weights dropped, and a Hugging
     * Face checkpoint's conv1d weights ({@code [C, 1, K]}) moved to {@code [C, K, 1]} with 1 added
     * to its norms.
     */
    private static void sanitize(Parameters params, int layers) {
        for (String name : List.copyOf(params.names())) {
            String to = name;
            if (name.startsWith("vision_tower") || name.startsWith("model.visual")) {
                params.discard(name);
                continue;
            }
            if (name.startsWith("model.language_model")) {
                to = name.replaceFirst("^model\\.language_model", "language_model.model");
            } else if (!name.startsWith(ROOT)) {
                to = ROOT + name;
            }
            if (to.contains("mtp.")) {
                params.discard(name);
                continue;
            }
            if (!to.equals(name)) {
                params.put(to, params.remove(name));
            }
        }
        // qwen3_5_moe's sanitize: a fused experts.gate_up_proj [E, 2 * I, D] split in halves along
        // its rows into switch_mlp.gate_proj / up_proj, experts.down_proj renamed.
        for (int l = 0; l < layers; l++) {
            String prefix = ROOT + "model.layers." + l + ".mlp";
            MlxArray gateUp = params.remove(prefix + ".experts.gate_up_proj");
            if (gateUp == null) {
                continue;
            }
            try (ArrayScope scope = ArrayScope.open()) {
                int n = gateUp.ndim();
                int mid = gateUp.dim(-2) / 2;
                int[] strides = new int[n];
                java.util.Arrays.fill(strides, 1);
                int[] midStop = gateUp.shape();
                midStop[n - 2] = mid;
                int[] midStart = new int[n];
                midStart[n - 2] = mid;
                MlxArray gate = Mlx.contiguous(Mlx.slice(gateUp, new int[n], midStop, strides));
                MlxArray up = Mlx.contiguous(Mlx.slice(gateUp, midStart, gateUp.shape(), strides));
                Mlx.eval(gate, up);
                params.put(prefix + ".switch_mlp.gate_proj.weight", gate.detach());
                params.put(prefix + ".switch_mlp.up_proj.weight", up.detach());
            } finally {
                gateUp.close();
            }
            MlxArray down = params.remove(prefix + ".experts.down_proj");
            if (down == null) {
                throw new ModelLoadException("weights are missing parameter '" + prefix + ".experts.down_proj'");
            }
            params.put(prefix + ".switch_mlp.down_proj.weight", down);
        }
        boolean unsanitized = false;
        for (String name : params.names()) {
            if (name.contains("conv1d.weight") && params.get(name).dim(-1) != 1) {
                unsanitized = true;
                break;
            }
        }
        if (unsanitized) {
            fixHuggingFaceLayout(params, true);
        }
    }

    /**
     * The Hugging Face layout's fixes in {@code sanitize}: conv1d weights {@code [C, 1, K]} moved
     * to MLX's {@code [C, K, 1]} ({@code moveaxis(2, 1)}) and, with {@code shiftNorms}, 1 added to
     * the decoder-layer, final and q/k norm weights (those checkpoints store {@code weight - 1}).
     */
    static void fixHuggingFaceLayout(Parameters params, boolean shiftNorms) {
        List<String> norms = List.of(
                ".input_layernorm.weight",
                ".post_attention_layernorm.weight",
                "model.norm.weight",
                ".q_norm.weight",
                ".k_norm.weight");
        for (String name : List.copyOf(params.names())) {
            boolean conv = name.contains("conv1d.weight") && params.get(name).dim(-1) != 1;
            boolean isNorm = shiftNorms
                    && norms.stream().anyMatch(name::endsWith)
                    && params.get(name).ndim() == 1;
            if (!conv && !isNorm) {
                continue;
            }
            try (ArrayScope scope = ArrayScope.open()) {
                MlxArray v = params.remove(name);
                MlxArray fixed = conv ? Mlx.transpose(v, 0, 2, 1) : Mlx.add(v, Mlx.scalar(1.0, v.dtype()));
                Mlx.eval(fixed);
                params.put(name, fixed.detach());
                v.close();
            }
        }
    }

    @Override
    public MlxArray forward(MlxArray inputs, KvCache[] cache) {
        MlxArray h = embedTokens.forward(inputs);
        int n = h.dim(1);
        AttentionMask faMask = AttentionMask.create(n, cache[faIdx], null);
        // create_ssm_mask(h, cache[ssm_idx]): the batch's padding mask, null for a solo row
        MlxArray ssmMask = cache[ssmIdx] instanceof ArraysCache a ? a.makeMask(n) : null;
        for (int i = 0; i < layers.size(); i++) {
            h = layers.get(i).forward(h, ssmMask, faMask, cache[i]);
        }
        MlxArray out = norm.forward(h);
        return lmHead == null ? embedTokens.asLinear(out) : lmHead.forward(out);
    }

    /** {@code make_cache}: an {@link ArraysCache} of two arrays per linear layer, a KV cache per attention layer. */
    @Override
    public KvCache[] newCache(int maxKvSize) {
        KvCache[] caches = new KvCache[layers.size()];
        for (int i = 0; i < caches.length; i++) {
            caches[i] = layers.get(i).isLinear() ? new ArraysCache(2) : new DenseKvCache();
        }
        return caches;
    }

    /** Rows batch over {@link dev.mlxring.exec.kv.BatchKvCache}s and merged {@link ArraysCache}s. */
    @Override
    public boolean batchable() {
        return layers.stream().allMatch(l -> l.isLinear() || l.selfAttn().batchable());
    }

    @Override
    public boolean hasOwnCacheLayout() {
        return true;
    }

    @Override
    void closeLayers() {
        for (Layer l : layers) {
            if (l.selfAttn() != null) {
                l.selfAttn().close();
            }
        }
    }
}
