package dev.mlxring.exec.model;

import java.util.Map;

/**
 * The resolved {@code ModelArgs} of a llama-style decoder. Each family file fills it from
 * config.json with that family's defaults, exactly as its mlx-lm {@code ModelArgs} does.
 *
 * @param qkNorm qwen3's per-head RMSNorm of queries and keys before rope
 * @param qkvBias qwen2's q/k/v projection biases (required, not optional, when set)
 * @param maxPositionEmbeddings passed to initialize_rope; null where ModelArgs leaves it None
 */
record DecoderArgs(
        int hiddenSize,
        int numHiddenLayers,
        int intermediateSize,
        int numAttentionHeads,
        int numKeyValueHeads,
        int headDim,
        double rmsNormEps,
        int vocabSize,
        double ropeTheta,
        boolean ropeTraditional,
        Map<String, Object> ropeScaling,
        boolean tieWordEmbeddings,
        boolean qkNorm,
        boolean qkvBias,
        Integer maxPositionEmbeddings) {}
