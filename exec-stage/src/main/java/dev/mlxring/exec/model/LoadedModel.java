package dev.mlxring.exec.model;

import dev.mlxring.exec.kv.DenseKvCache;
import dev.mlxring.exec.kv.KvCache;
import dev.mlxring.exec.kv.RotatingKvCache;
import dev.mlxring.exec.nn.Parameters;
import dev.mlxring.mlx.CpuKernels;
import dev.mlxring.mlx.FastKernels;
import dev.mlxring.mlx.Numerics;
import java.util.function.IntPredicate;

/**
 * What every family file shares once its weights are loaded: the facts {@link LanguageModel}
 * reports about the checkpoint, and ownership of its {@link Parameters}. A family keeps only its
 * forward pass, its caches and whatever it holds besides the parameters (closed by
 * {@link #closeLayers()} before the parameters go).
 */
abstract class LoadedModel implements LanguageModel {
    private final String modelType;
    private final int headDim;
    private final int vocabSize;
    private final int[] eosTokenIds;
    private final Parameters params;
    private final int initRandomDraws;

    /** Takes ownership of {@code params}; reads its random-draw count now, once loading is done. */
    LoadedModel(String modelType, int headDim, int vocabSize, ModelConfig config, Parameters params) {
        this.modelType = modelType;
        this.headDim = headDim;
        this.vocabSize = vocabSize;
        this.eosTokenIds = config.eosTokenIds();
        this.params = params;
        this.initRandomDraws = params.initRandomDraws();
    }

    /** Releases what the family holds besides its parameters (e.g. rope frequency arrays). */
    abstract void closeLayers();

    /**
     * {@code make_cache} of a family that mixes full-attention layers (a {@code KVCache} each) with
     * sliding-window ones (a {@code RotatingKVCache(max_size=window, keep=0)} each), as gemma3_text
     * and gpt_oss define it; {@code max_kv_size} does not apply.
     */
    static KvCache[] fullOrSlidingCaches(int layers, IntPredicate fullAttention, int slidingWindow) {
        KvCache[] caches = new KvCache[layers];
        for (int i = 0; i < layers; i++) {
            caches[i] = fullAttention.test(i) ? new DenseKvCache() : new RotatingKvCache(slidingWindow, 0);
        }
        return caches;
    }

    @Override
    public final String modelType() {
        return modelType;
    }

    @Override
    public final int headDim() {
        return headDim;
    }

    @Override
    public final int vocabSize() {
        return vocabSize;
    }

    @Override
    public final int[] eosTokenIds() {
        return eosTokenIds.clone();
    }

    @Override
    public final CpuKernels cpuKernels() {
        return params.kernels();
    }

    @Override
    public final Numerics numerics() {
        return params.numerics();
    }

    @Override
    public final int initRandomDraws() {
        return initRandomDraws;
    }

    @Override
    public final dev.mlxring.exec.nn.AdapterSlots adapterSlots() {
        return params.slots();
    }

    @Override
    public final String adapterFingerprint() {
        return params.adapter() == null ? "" : params.adapter().fingerprint();
    }

    @Override
    public final void close() {
        try {
            closeLayers();
        } finally {
            params.close();
            if (params.numerics() == Numerics.FAST_Q8) {
                // The kernels' widened group parameters of the weights just freed.
                FastKernels.releaseWidenedParams();
            }
        }
    }
}
