package dev.mlxring.pipeline;

/**
 * exec-stage's continuous-batching mechanics, driven by the exec loop's scheduling policy: rows
 * join ({@link #insert}) and leave ({@link #remove}) between units, and each {@link #step} runs
 * one bounded unit over all of them (one decode step of every generating row in one forward,
 * then at most one prefill chunk of the rows still reading their prompts). The policy decides
 * who is inserted when and how many rows run; this side decides nothing beyond the mechanics.
 *
 * <p>Owns every row's device state (KV caches, sampler state, pending arrays); a removed or
 * finished row's state is released when it leaves, and {@link #close()} releases the rest.
 * Every method is called on the one exec thread.
 */
public interface ExecutionBatch extends AutoCloseable {
    /**
     * Whether {@code plan} can run as a batch row now. A plan refused while rows run (a KV scheme
     * other than theirs) waits at the head of the queue; one the batch still refuses once it is
     * empty (a quantized KV scheme the model's batch has no form for) runs alone through
     * {@link Executor#open}, as mlx_lm.server serves every quantized-KV request.
     */
    boolean accepts(ExecutionPlan plan);

    /**
     * Queues {@code plan} as a new row; it starts at the next {@link #step}.
     *
     * @return the row's id, unique among the rows in flight
     * @throws RequestException when the plan cannot run (the request fails alone)
     */
    int insert(ExecutionPlan plan) throws RequestException;

    /** Takes a row out wherever it is (queued, prefilling, generating) and frees its state; returns its usage. */
    Usage remove(int row);

    /**
     * One unit of work. {@code out} is cleared, then receives what the rows committed in this unit:
     * each generating row's token, and for a row that ended its {@code FINISHED} entry (after its
     * last token) with its usage, or its {@code FAILED} entry when the row alone failed (its token
     * constraint can no longer be satisfied); such a row has left the batch. Throws when the unit itself failed
     * (every row's state is then undefined: the caller fails all of them and closes the batch).
     */
    void step(BatchStep out);

    /**
     * One unit as {@link #step(BatchStep)} when {@code prefill}; without, a decode-only unit: the
     * generating rows' step alone, while queued and prefilling rows wait (the policy's way to
     * keep running rows going between the chunks of a long prompt). The default runs the full
     * unit: mechanics without decode-only units ignore the hint.
     */
    default void step(BatchStep out, boolean prefill) {
        step(out);
    }

    /**
     * Submits the next forward that the last {@link #step} built and held back so that its tokens
     * (among them a row's first) could be handed out first; the caller calls it once it has
     * published them. Nothing when no forward waits; the next {@link #step}, {@link #remove} or
     * {@link #close} submits it otherwise. The default does nothing: mechanics that do not hold a
     * forward back. Exec thread only.
     */
    default void submitHeldStep() {}

    /**
     * Whether a decode-only unit would differ from a full one now: rows are generating and others
     * are queued or reading their prompts. False for mechanics without decode-only units.
     */
    default boolean decodeOnlyUseful() {
        return false;
    }

    /**
     * Rows past their prompts: those a decode-only unit steps. The rest of {@link #rows()} wait
     * for their first token (queued, reading their prompts, or read and not yet stepped). 0 for
     * mechanics that do not say (they offer no decode-only units either).
     */
    default int generatingRows() {
        return 0;
    }

    /**
     * Whether rows are queued or reading their prompts, i.e. a full unit would read a prompt
     * chunk. False for mechanics that do not say (the policy then counts no unit as prefill).
     */
    default boolean prefillPending() {
        return false;
    }

    /**
     * The KV-cache bytes a batch of {@code rows} rows would hold at most once its longest row
     * holds {@code positions} positions (rows are padded to the longest; buffers grow in steps).
     * What {@code --kv-budget} admission compares with its limit.
     */
    long projectedKvBytes(int rows, int positions);

    /**
     * How many of row {@code row}'s prompt tokens came from the prefix cache at insert (0 when
     * none, or the row is unknown): what a tensor-parallel group checks every rank agrees on
     * before any of them computes the row.
     */
    default int cachedTokens(int row) {
        return 0;
    }

    /** Rows in flight: inserted and neither finished nor removed. */
    int rows();

    @Override
    void close();
}
