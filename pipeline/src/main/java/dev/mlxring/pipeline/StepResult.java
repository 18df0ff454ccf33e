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
        FINISHED,
        /**
         * The run ended with an error of its own (e.g. its token constraint can no longer be
         * satisfied); see {@link #errorType} and {@link #errorMessage}. Other runs are unaffected.
         */
        FAILED
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
    /** For {@link Kind#FAILED}: why, as the session's failed outcome reports it. */
    public Outcome.ErrorType errorType;

    public String errorMessage;

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

    /** The run ended with {@code message} (a failed outcome of {@code type} for its session alone). */
    public StepResult failed(Outcome.ErrorType type, String message) {
        kind = Kind.FAILED;
        errorType = type;
        errorMessage = message;
        return this;
    }
}
