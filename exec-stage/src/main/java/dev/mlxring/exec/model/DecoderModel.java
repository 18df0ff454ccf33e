package dev.mlxring.exec.model;

import dev.mlxring.exec.kv.BatchKvCache;
import dev.mlxring.exec.kv.DenseKvCache;
import dev.mlxring.exec.kv.KvCache;
import dev.mlxring.exec.nn.Embedding;
import dev.mlxring.exec.nn.Linear;
import dev.mlxring.exec.nn.Parameters;
import dev.mlxring.exec.nn.RmsNorm;
import dev.mlxring.mlx.Mlx;
import dev.mlxring.mlx.MlxArray;
import java.util.ArrayList;
import java.util.List;

/**
 * The decoder stack shared by llama, qwen2 and qwen3 ({@code LlamaModel} + {@code Model} in
 * mlx-lm): embed, pre-norm blocks, final norm, tied or untied head. Families differ only in
 * their {@link DecoderArgs} (defaults, biases, q/k norms).
 */
final class DecoderModel implements LanguageModel {
    /** {@code TransformerBlock}: pre-norm residual attention then pre-norm residual MLP. */
    record Block(RmsNorm inputLayernorm, SelfAttention selfAttn, RmsNorm postAttentionLayernorm, Mlp mlp) {
        MlxArray forward(MlxArray x, SelfAttention.Mask mask, KvCache cache) {
            MlxArray r = selfAttn.forward(inputLayernorm.forward(x), mask, cache);
            MlxArray h = Mlx.add(x, r);
            r = mlp.forward(postAttentionLayernorm.forward(h));
            return Mlx.add(h, r);
        }
    }

    private final String modelType;
    private final int headDim;
    private final int vocabSize;
    private final int[] eosTokenIds;
    private final Parameters params;
    private final Embedding embedTokens;
    private final List<Block> layers;
    private final RmsNorm norm;
    private final Linear lmHead;
    private final int initRandomDraws;

    /** Builds the model from {@code params} (which it then owns), as mlx-lm's load_model + sanitize. */
    static DecoderModel build(ModelConfig config, Parameters params, DecoderArgs a) {
        if (a.tieWordEmbeddings()) {
            params.discard("lm_head.weight");
        }
        for (String name : List.copyOf(params.names())) {
            if (name.contains("self_attn.rotary_emb.inv_freq")) {
                params.discard(name);
            }
        }
        List<Block> layers = new ArrayList<>();
        for (int i = 0; i < a.numHiddenLayers(); i++) {
            String p = "model.layers." + i;
            layers.add(new Block(
                    RmsNorm.load(params, p + ".input_layernorm", a.rmsNormEps()),
                    new SelfAttention(config, params, p + ".self_attn", a),
                    RmsNorm.load(params, p + ".post_attention_layernorm", a.rmsNormEps()),
                    Mlp.load(config, params, p + ".mlp", a.hiddenSize(), a.intermediateSize())));
        }
        DecoderModel model = new DecoderModel(config, params, a.headDim(),
                Embedding.load(config, params, "model.embed_tokens", a.hiddenSize()), layers,
                RmsNorm.load(params, "model.norm", a.rmsNormEps()),
                a.tieWordEmbeddings() ? null : Linear.load(config, params, "lm_head", a.hiddenSize()));
        params.requireAllUsed();
        // mlx-lm's load_model(lazy=False) evaluates the parameters; it also matters here because
        // MLX streams are per thread: lazily loaded weights would reference the loading thread's
        // stream, which the exec thread cannot run.
        params.evalAll();
        return model;
    }

    private DecoderModel(ModelConfig config, Parameters params, int headDim, Embedding embedTokens,
            List<Block> layers, RmsNorm norm, Linear lmHead) {
        this.modelType = config.modelType();
        this.headDim = headDim;
        this.vocabSize = config.intField("vocab_size");
        this.eosTokenIds = config.eosTokenIds();
        this.params = params;
        this.embedTokens = embedTokens;
        this.layers = List.copyOf(layers);
        this.norm = norm;
        this.lmHead = lmHead;
        this.initRandomDraws = params.initRandomDraws();
    }

    @Override
    public int initRandomDraws() {
        return initRandomDraws;
    }

    @Override
    public MlxArray forward(MlxArray inputs, KvCache[] cache) {
        MlxArray h = embedTokens.forward(inputs);
        // create_attention_mask: a batch cache makes its own (left padding, per-row offsets, read
        // before any layer updates); otherwise None for a single token, the "causal" mode else.
        SelfAttention.Mask mask = cache[0] instanceof BatchKvCache batch
                ? SelfAttention.Mask.batch(batch.makeMask(h.dim(1)), batch.offsets())
                : SelfAttention.Mask.solo(h.dim(1) > 1);
        for (int i = 0; i < layers.size(); i++) {
            h = layers.get(i).forward(h, mask, cache[i]);
        }
        MlxArray out = norm.forward(h);
        return lmHead == null ? embedTokens.asLinear(out) : lmHead.forward(out);
    }

    @Override
    public KvCache[] newCache() {
        KvCache[] caches = new KvCache[layers.size()];
        for (int i = 0; i < caches.length; i++) {
            caches[i] = new DenseKvCache();
        }
        return caches;
    }

    @Override
    public boolean batchable() {
        return layers.stream().allMatch(b -> b.selfAttn().batchable());
    }

    @Override
    public String modelType() {
        return modelType;
    }

    @Override
    public int headDim() {
        return headDim;
    }

    @Override
    public int vocabSize() {
        return vocabSize;
    }

    @Override
    public int[] eosTokenIds() {
        return eosTokenIds.clone();
    }

    @Override
    public void close() {
        for (Block b : layers) {
            b.selfAttn().close();
        }
        params.close();
    }
}
