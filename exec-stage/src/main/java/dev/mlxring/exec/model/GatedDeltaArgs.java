package dev.mlxring.exec.model;

/**
 * The sizes of a gated delta net layer, from the {@code linear_*} fields of qwen3_5's and
 * qwen3_next's ModelArgs.
 *
 * @param convKernel {@code linear_conv_kernel_dim}
 */
record GatedDeltaArgs(
        int hiddenSize, int numKHeads, int numVHeads, int headKDim, int headVDim, int convKernel, double rmsNormEps) {
    GatedDeltaArgs {
        if (numKHeads < 1 || numVHeads % numKHeads != 0) {
            throw new ModelLoadException(
                    "num_v_heads (" + numVHeads + ") must be divisible by num_k_heads (" + numKHeads + ")");
        }
        if (convKernel < 1) {
            throw new ModelLoadException("linear_conv_kernel_dim must be positive, got " + convKernel);
        }
    }

    int keyDim() {
        return headKDim * numKHeads;
    }

    int valueDim() {
        return headVDim * numVHeads;
    }

    /** {@code key_dim * 2 + value_dim}: the channels of the convolution (q, k, v). */
    int convDim() {
        return keyDim() * 2 + valueDim();
    }

    static GatedDeltaArgs of(ModelConfig c) {
        return new GatedDeltaArgs(
                c.intField("hidden_size"),
                c.intField("linear_num_key_heads"),
                c.intField("linear_num_value_heads"),
                c.intField("linear_key_head_dim"),
                c.intField("linear_value_head_dim"),
                c.intField("linear_conv_kernel_dim"),
                c.doubleField("rms_norm_eps"));
    }
}
