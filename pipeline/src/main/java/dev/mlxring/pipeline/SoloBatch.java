package dev.mlxring.pipeline;

/**
 * A batch of capacity one over {@link Executor#open}: the serial path as an {@link ExecutionBatch},
 * so the {@link BatchScheduler} is the one policy for every session (cancel, stop, credits, the
 * idle-consumer timeout, start failures, ring room). It runs the session's {@link ExecutionRun}
 * unchanged, one {@link ExecutionRun#advance()} per unit, so its bits and speed are the serial
 * path's. Used when the executor offers no batch, {@code decodeConcurrency} is 1, or a session
 * cannot run as a batch row (mlx_lm.server's drain: it runs alone once the batch is empty).
 *
 * <p>Owns the run it holds; {@link #remove}, a finished or failed step and {@link #close()}
 * release it. Exec thread only.
 */
final class SoloBatch implements ExecutionBatch {
    private final Executor executor;
    private ExecutionRun run;
    /** The running row's id; ids are unique among rows in flight (one at most). */
    private int row;

    SoloBatch(Executor executor) {
        this.executor = executor;
    }

    @Override
    public boolean accepts(ExecutionPlan plan) {
        return true;
    }

    /**
     * Opens the session's run.
     *
     * @throws IllegalStateException when a row is in flight already (the policy admits one)
     */
    @Override
    public int insert(ExecutionPlan plan) throws RequestException {
        if (run != null) {
            throw new IllegalStateException("a solo batch runs one row at a time");
        }
        run = executor.open(plan);
        return ++row;
    }

    @Override
    public Usage remove(int id) {
        if (run == null || id != row) {
            return Usage.NONE;
        }
        return release();
    }

    @Override
    public void step(BatchStep out) {
        out.clear();
        if (run == null) {
            return;
        }
        StepResult r = run.advance();
        switch (r.kind) {
            case PREFILLED -> {
                // a prompt chunk ran: nothing to commit yet
            }
            case TOKEN -> {
                StepResult e = out.add(row).token(r.token);
                e.logprob = r.logprob;
                e.topCount = r.topCount;
                System.arraycopy(r.topIds, 0, e.topIds, 0, r.topCount);
                System.arraycopy(r.topLogprobs, 0, e.topLogprobs, 0, r.topCount);
            }
            case FINISHED -> {
                String reason = r.finishReason;
                out.finish(row, reason, release());
            }
            case FAILED -> {
                Outcome.ErrorType type = r.errorType;
                String message = r.errorMessage;
                out.fail(row, type, message, release());
            }
            default -> throw new IllegalStateException("unknown step kind " + r.kind);
        }
    }

    /** Not projected: a session that runs alone is bounded by its own plan, as the serial path was. */
    @Override
    public long projectedKvBytes(int rows, int positions) {
        return 0;
    }

    @Override
    public int cachedTokens(int id) {
        return run != null && id == row ? run.cachedTokens() : 0;
    }

    @Override
    public int rows() {
        return run == null ? 0 : 1;
    }

    /** The run's usage, then its device state freed. */
    private Usage release() {
        ExecutionRun r = run;
        run = null;
        Usage usage = new Usage(r.promptTokens(), r.completionTokens(), r.cachedTokens(), r.speculative());
        r.close();
        return usage;
    }

    @Override
    public void close() {
        if (run != null) {
            ExecutionRun r = run;
            run = null;
            r.close();
        }
    }
}
