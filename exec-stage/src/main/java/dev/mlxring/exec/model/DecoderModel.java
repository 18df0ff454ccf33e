package dev.mlxring.exec.model;

import dev.mlxring.exec.kv.AttentionMask;
import dev.mlxring.exec.kv.BatchKvCache;
import dev.mlxring.exec.kv.DenseKvCache;
import dev.mlxring.exec.kv.KvCache;
import dev.mlxring.exec.kv.RotatingKvCache;
import dev.mlxring.exec.nn.Embedding;
import dev.mlxring.exec.nn.Linear;
import dev.mlxring.exec.nn.Parameters;
import dev.mlxring.exec.nn.RmsNorm;
import dev.mlxring.exec.nn.TensorShard;
import dev.mlxring.mlx.FusedDecoderBlock;
import dev.mlxring.mlx.Mlx;
import dev.mlxring.mlx.MlxArray;
import java.util.ArrayList;
import java.util.List;
import java.util.Set;

/**
 * The decoder stack shared by llama, qwen2, qwen3, qwen3_moe and phi3 ({@code LlamaModel} + {@code Model}
 * in mlx-lm): embed, pre-norm blocks, final norm, tied or untied head. llama, qwen2 and qwen3
 * differ only in their {@link DecoderArgs} (defaults, biases, q/k norms); phi3 brings its own
 * fused attention and MLP through a {@link LayerLoader}, qwen3_moe its mixture-of-experts
 * blocks.
 */
final class DecoderModel extends LoadedModel {
    /** A block's attention: {@link SelfAttention}, or a family's own. */
    interface Attention extends AutoCloseable {
        MlxArray forward(MlxArray x, AttentionMask mask, KvCache cache);

        /** Whether it runs over a {@link dev.mlxring.exec.kv.BatchKvCache} (rope with per-row offsets). */
        default boolean batchable() {
            return false;
        }

        /** Whether it runs over a {@link dev.mlxring.exec.kv.BatchQuantizedKvCache} (quantized rows in a batch). */
        default boolean batchesQuantizedKv() {
            return false;
        }

        @Override
        void close();
    }

    /** A block's MLP. */
    interface FeedForward {
        MlxArray forward(MlxArray x);
    }

    /** Builds one block's attention and MLP from the parameters under a path prefix. */
    interface LayerLoader {
        Attention attention(String path);

        /** Block {@code layer}'s MLP (a family may vary it by layer, e.g. dense or mixture of experts). */
        FeedForward mlp(int layer, String path);
    }

    /**
     * {@code TransformerBlock}: pre-norm residual attention then pre-norm residual MLP; the same
     * block fused into one primitive where {@code fused} (null where the block has none) covers
     * the call and its rows' adapters (LoRA layers: {@link FusedBlock#lowRankHere}).
     */
    record Block(
            RmsNorm inputLayernorm,
            Attention selfAttn,
            RmsNorm postAttentionLayernorm,
            FeedForward mlp,
            FusedBlock fused) {
        MlxArray forward(MlxArray x, AttentionMask mask, KvCache cache) {
            // the rows' LoRA deltas run in the fused block; null where a row's adapter has a layer
            // the block does not hold (DoRA, another dtype), which the adapted graph then runs
            FusedDecoderBlock.LowRank lowRank = fused == null ? null : fused.lowRankHere(x.dim(0));
            if (lowRank != null && FusedBlock.applies(mask, cache)) {
                return fused.forward(x, mask, (DenseKvCache) cache, lowRank);
            }
            if (lowRank != null && fused.appliesToRows(x, mask, cache)) {
                return fused.forwardRows(x, mask, (BatchKvCache) cache, lowRank);
            }
            MlxArray r = selfAttn.forward(inputLayernorm.forward(x), mask, cache);
            MlxArray h = Mlx.add(x, r);
            r = mlp.forward(postAttentionLayernorm.forward(h));
            return Mlx.add(h, r);
        }
    }

    /** Families whose mlx-lm Model has {@code make_cache}. */
    private static final Set<String> MAKE_CACHE_FAMILIES = Set.of("llama", "mistral");

    private final Embedding embedTokens;
    private final List<Block> layers;
    private final RmsNorm norm;
    private final Linear lmHead;

    /** Builds the model from {@code params} (which it then owns), as mlx-lm's load_model + sanitize. */
    static DecoderModel build(ModelConfig config, Parameters params, DecoderArgs a) {
        return build(config, params, a, (TensorShard) null);
    }

    /**
     * As {@link #build(ModelConfig, Parameters, DecoderArgs)}, this rank's part of the model when
     * {@code shard} is not null (mlx-lm's {@code Model.shard(group)} after {@code load_model}):
     * every block's attention and MLP sharded, the embedding, norms and head whole on every rank.
     */
    static DecoderModel build(ModelConfig config, Parameters params, DecoderArgs a, TensorShard shard) {
        return build(config, params, a, new LayerLoader() {
            @Override
            public Attention attention(String path) {
                return new SelfAttention(config, params, path, a, shard);
            }

            @Override
            public FeedForward mlp(int layer, String path) {
                return Mlp.load(config, params, path, a.hiddenSize(), a.intermediateSize(), shard);
            }
        });
    }

    /** As {@link #build(ModelConfig, Parameters, DecoderArgs)} with the family's own attention and MLP. */
    static DecoderModel build(ModelConfig config, Parameters params, DecoderArgs a, LayerLoader loader) {
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
            RmsNorm inputNorm = RmsNorm.load(params, p + ".input_layernorm", a.rmsNormEps());
            Attention attention = loader.attention(p + ".self_attn");
            RmsNorm postNorm = RmsNorm.load(params, p + ".post_attention_layernorm", a.rmsNormEps());
            FeedForward mlp = loader.mlp(i, p + ".mlp");
            layers.add(new Block(
                    inputNorm,
                    attention,
                    postNorm,
                    mlp,
                    FusedBlock.of(params, inputNorm, attention, postNorm, mlp, a.headDim())));
        }
        DecoderModel model = new DecoderModel(
                config,
                params,
                a.headDim(),
                Embedding.load(config, params, "model.embed_tokens", a.hiddenSize()),
                layers,
                RmsNorm.load(params, "model.norm", a.rmsNormEps()),
                a.tieWordEmbeddings() ? null : Linear.load(config, params, "lm_head", a.hiddenSize()));
        params.requireAllUsed();
        // mlx-lm's load_model(lazy=False) evaluates the parameters; it also matters here because
        // MLX streams are per thread: lazily loaded weights would reference the loading thread's
        // stream, which the exec thread cannot run.
        params.evalAll();
        return model;
    }

    private DecoderModel(
            ModelConfig config,
            Parameters params,
            int headDim,
            Embedding embedTokens,
            List<Block> layers,
            RmsNorm norm,
            Linear lmHead) {
        super(config.modelType(), headDim, config.intField("vocab_size"), config, params);
        this.embedTokens = embedTokens;
        this.layers = List.copyOf(layers);
        this.norm = norm;
        this.lmHead = lmHead;
    }

    @Override
    public MlxArray forward(MlxArray inputs, KvCache[] cache) {
        MlxArray h = embedTokens.forward(inputs);
        // create_attention_mask(h, cache[0]): None for a single token, "causal" otherwise; a
        // rotating cache (--max-kv-size) masks what its trimmed buffer no longer aligns; a batch
        // cache makes its own (left padding, per-row offsets).
        AttentionMask mask = AttentionMask.create(h.dim(1), cache[0], null);
        for (int i = 0; i < layers.size(); i++) {
            h = layers.get(i).forward(h, mask, cache[i]);
        }
        MlxArray out = norm.forward(h);
        return lmHead == null ? embedTokens.asLinear(out) : lmHead.forward(out);
    }

    /**
     * make_prompt_cache: mlx-lm's llama.py (also mistral's) defines {@code make_cache} (a KVCache
     * per full-attention layer), so max_kv_size does not apply to it; qwen2 and qwen3 take the
     * generic path: rotating caches of max_kv_size keeping 4 positions, else KVCache.
     */
    @Override
    public KvCache[] newCache(int maxKvSize) {
        boolean rotating = maxKvSize > 0 && !hasOwnCacheLayout();
        KvCache[] caches = new KvCache[layers.size()];
        for (int i = 0; i < caches.length; i++) {
            caches[i] = rotating ? new RotatingKvCache(maxKvSize, LanguageModel.MAX_KV_SIZE_KEEP) : new DenseKvCache();
        }
        return caches;
    }

    @Override
    public boolean hasOwnCacheLayout() {
        return MAKE_CACHE_FAMILIES.contains(modelType());
    }

    @Override
    public boolean batchable() {
        return layers.stream().allMatch(b -> b.selfAttn().batchable());
    }

    @Override
    public boolean batchesQuantizedKv() {
        return batchable() && layers.stream().allMatch(b -> b.selfAttn().batchesQuantizedKv());
    }

    @Override
    void closeLayers() {
        for (Block b : layers) {
            b.selfAttn().close();
            if (b.fused() != null) {
                b.fused().close();
            }
        }
    }
}
