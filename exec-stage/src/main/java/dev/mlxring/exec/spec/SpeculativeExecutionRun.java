package dev.mlxring.exec.spec;

import dev.mlxring.exec.sample.TokenLogprobs;
import dev.mlxring.pipeline.ExecutionRun;
import dev.mlxring.pipeline.StepResult;
import dev.mlxring.pipeline.Usage;

/**
 * A {@link SpeculativeRun} under the pipeline's step contract: a verification round commits
 * several tokens at once, and this hands them to the exec loop one per {@link #advance()} (the
 * later ones without running the model), then the run's end. Each token's logprobs are read from
 * the round's vector before the next round runs. Reuses one {@link StepResult}. Exec thread only.
 */
public final class SpeculativeExecutionRun implements ExecutionRun {
    private final SpeculativeRun run;
    private final boolean logprobs;
    private final int topN;
    private final StepResult result;
    private int[] round = new int[0];
    private int next;
    private int delivered;

    /** Takes ownership of {@code run}. */
    public SpeculativeExecutionRun(SpeculativeRun run, boolean logprobs, int topN) {
        this.run = run;
        this.logprobs = logprobs;
        this.topN = topN;
        this.result = new StepResult(topN);
    }

    @Override
    public StepResult advance() {
        if (next < round.length) {
            return deliver();
        }
        if (run.isFinished()) {
            return result.finished(run.finishReason());
        }
        return switch (run.advance()) {
            case PREFILLED -> result.prefilled();
            case FINISHED -> result.finished(run.finishReason());
            case TOKENS -> {
                round = run.roundTokens();
                next = 0;
                yield deliver();
            }
        };
    }

    private StepResult deliver() {
        int i = next++;
        result.token(round[i]);
        if (logprobs) {
            TokenLogprobs lp = run.roundTokenLogprobs(i, topN);
            result.logprob = lp.logprob();
            result.topCount = lp.topIds().length;
            System.arraycopy(lp.topIds(), 0, result.topIds, 0, result.topCount);
            System.arraycopy(lp.topLogprobs(), 0, result.topLogprobs, 0, result.topCount);
        }
        delivered++;
        return result;
    }

    @Override
    public int promptTokens() {
        return run.promptTokens();
    }

    /** Tokens handed to the exec loop so far (a round's later tokens count once delivered). */
    @Override
    public int completionTokens() {
        return delivered;
    }

    /** The run's proposed and accepted tokens so far. */
    @Override
    public Usage.Speculative speculative() {
        return new Usage.Speculative(run.proposedTokens(), run.acceptedTokens());
    }

    /** The run's proposed tokens so far. */
    public int proposedTokens() {
        return run.proposedTokens();
    }

    public int acceptedTokens() {
        return run.acceptedTokens();
    }

    @Override
    public void close() {
        run.close();
    }
}
