package dev.mlxring.exec.model;

import dev.mlxring.exec.nn.Parameters;
import dev.mlxring.mlx.CpuKernels;

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
    public final int initRandomDraws() {
        return initRandomDraws;
    }

    @Override
    public final void close() {
        try {
            closeLayers();
        } finally {
            params.close();
        }
    }
}
