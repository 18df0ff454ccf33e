package dev.mlxring.pipeline;

/**
 * What one safe work unit of an {@link ExecutionRun} committed. Owned and reused by the run (no
 * allocation per token); valid until the next {@code advance()}.
 */
public final class StepResult {
    public enum Kind {
        /** A prefill chunk ran; nothing to publish yet. */
        PREFILLED,
        /** One token was committed. */
        TOKEN,
        /** The run ended (EOS or max tokens); see {@link #finishReason}. */
        FINISHED
    }

    public Kind kind;
    public int token;
    /** The token's log-probability, NaN when not requested. */
    public float logprob = Float.NaN;
    /** Top alternatives (ids and log-probabilities), {@link #topCount} of them valid. */
    public final int[] topIds;
    public final float[] topLogprobs;
    public int topCount;
    public String finishReason;

    public StepResult(int maxTopLogprobs) {
        topIds = new int[maxTopLogprobs];
        topLogprobs = new float[maxTopLogprobs];
    }

    public StepResult prefilled() {
        kind = Kind.PREFILLED;
        return this;
    }

    public StepResult token(int id) {
        kind = Kind.TOKEN;
        token = id;
        logprob = Float.NaN;
        topCount = 0;
        return this;
    }

    public StepResult finished(String reason) {
        kind = Kind.FINISHED;
        finishReason = reason;
        return this;
    }
}
