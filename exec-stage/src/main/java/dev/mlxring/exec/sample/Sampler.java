package dev.mlxring.exec.sample;

import dev.mlxring.mlx.Mlx;
import dev.mlxring.mlx.MlxArray;
import dev.mlxring.pipeline.SamplingParams;

/**
 * mlx-lm's {@code make_sampler}: {@code temperature == 0} is {@code greedy_sampler} (argmax);
 * otherwise the chain top-p (when 0 < top_p < 1), min-p (when min_p != 0), XTC (when
 * xtc_probability > 0), top-k (when top_k > 0), then {@code categorical_sampling(logprobs, temp)}
 * - each step the compiled C++ twin of the mlx-lm function, with the request's random key
 * threaded through as mx.compile threads {@code mx.random.state}. Stateless and immutable: the
 * key lives in the request's {@link SamplingState}.
 */
public final class Sampler {
    private final SamplingParams params;
    private final boolean topP;
    private final boolean minP;
    private final boolean xtc;
    private final boolean topK;
    private final int[] xtcSpecialTokens;

    private Sampler(SamplingParams params) {
        this.params = params;
        this.topP = 0 < params.topP() && params.topP() < 1.0;
        this.minP = params.minP() != 0.0;
        this.xtc = params.xtcProbability() > 0.0;
        this.topK = params.topK() > 0;
        this.xtcSpecialTokens = params.xtcSpecialTokens();
    }

    /**
     * The sampler for {@code params} over a vocabulary of {@code vocab} tokens. Rejects what mlx-lm
     * would reject only once sampling starts (top_k not below the vocabulary size) and token ids
     * outside the vocabulary, with IllegalArgumentException.
     */
    public static Sampler create(SamplingParams params, int vocab) {
        if (!params.greedy() && params.topK() > 0 && params.topK() >= vocab) {
            throw new IllegalArgumentException("top_k must be in [0, " + vocab + ") for a vocabulary of " + vocab
                    + " tokens, got " + params.topK());
        }
        for (int t : params.xtcSpecialTokens()) {
            if (t >= vocab) {
                throw new IllegalArgumentException(
                        "xtc_special_tokens must be token ids in [0, " + vocab + "), got " + t);
            }
        }
        for (int t : params.logitBias().keySet()) {
            if (t >= vocab) {
                throw new IllegalArgumentException("logit_bias keys must be token ids in [0, " + vocab + "), got " + t);
            }
        }
        return new Sampler(params);
    }

    public boolean greedy() {
        return params.greedy();
    }

    public SamplingParams params() {
        return params;
    }

    /** Samples from {@code logprobs} ({@code [1, V]}) -> token ids {@code [1]}; advances {@code state}'s key. */
    public MlxArray sample(MlxArray logprobs, SamplingState state) {
        if (params.greedy()) {
            return Mlx.argmax(logprobs, -1, false);
        }
        MlxArray x = logprobs;
        if (topP) {
            x = state.advance(Mlx.applyTopP(x, params.topP(), state.key()));
        }
        if (minP) {
            x = state.advance(Mlx.applyMinP(x, params.minP(), params.minTokensToKeep(), state.key()));
        }
        if (xtc) {
            x = state.advance(
                    Mlx.applyXtc(x, params.xtcProbability(), params.xtcThreshold(), xtcSpecialTokens, state.key()));
        }
        if (topK) {
            x = state.advance(Mlx.applyTopK(x, params.topK(), state.key()));
        }
        return state.advance(Mlx.categoricalSampling(x, params.temperature(), state.key()));
    }
}
