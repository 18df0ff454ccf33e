package dev.mlxring.exec.batch;

import dev.mlxring.mlx.FastBlockPhases;
import java.util.Locale;

/**
 * Profiling only ({@code -Dmlxring.unitTrace=true}): where one batch unit's wall time goes, for
 * the unit trace's line ({@code scripts/bench/unit_trace.py} sums it by the kind of unit). Each
 * phase is the time from the previous mark to its own; {@code stepWait} and {@code stepRead} are
 * the two blocking calls of every pipelined step the unit ran (the submission of the next forward,
 * which waits while MLX has the step before it in flight, and the read of the current tokens):
 * parts of {@code step}, and of {@code join} when joining rows ran their first step alone.
 *
 * <p>Off by default: {@link #ON} is a constant, so the engine's calls, each behind {@code if
 * (UnitPhases.ON)}, cost nothing then. Exec thread only (the unit's caller); a static because the
 * unit's parts live in three classes and the trace is one per process.
 */
final class UnitPhases {
    static final boolean ON = Boolean.getBoolean("mlxring.unitTrace");

    /** Submitting earlier units' pending prefix snapshots for evaluation. */
    static final int SUBMIT_SNAPSHOTS = 0;
    /** The generating rows' decode step (the whole call). */
    static final int STEP = 1;
    /** Queued rows admitted into the prompt batch. */
    static final int ADMIT = 2;
    /** Prefilled rows split off, their first step run alone, and merged into the generating rows. */
    static final int JOIN = 3;
    /** The prompt batch's chunk: one prefill forward, evaluated. */
    static final int PROMPT = 4;
    /** Writing the bytes of earlier units' pending snapshots. */
    static final int COPY_SNAPSHOTS = 5;
    /** Checkpoints and this unit's segment and finished-row snapshots. */
    static final int PUBLISH = 6;
    /** Inside {@link #STEP} or {@link #JOIN}: {@code async_eval} of a step's forward (MLX waits for the one in flight). */
    static final int STEP_WAIT = 7;
    /** Inside {@link #STEP} or {@link #JOIN}: evaluating and reading a step's current tokens and logprobs. */
    static final int STEP_READ = 8;

    private static final String[] NAMES = {
        "snapSubmit", "step", "admit", "join", "prompt", "snapCopy", "publish", "stepWait", "stepRead"
    };

    private static final long[] NS = new long[NAMES.length];
    private static long markNs;

    private UnitPhases() {}

    /** Starts the phases' clock (a unit's or a step's first phase starts here). */
    static void mark() {
        markNs = System.nanoTime();
    }

    /** Charges the time since the last mark to {@code phase} and marks now. */
    static void lap(int phase) {
        long now = System.nanoTime();
        NS[phase] += now - markNs;
        markNs = now;
    }

    /** Charges {@code ns} to {@code phase}, leaving the mark alone (a phase inside another). */
    static void add(int phase, long ns) {
        NS[phase] += ns;
    }

    /**
     * The unit's phases as {@code " name=ms …"} and, when the process times the fast tier's fused
     * blocks ({@code MLXR_FAST_BLOCK_PHASES=1}), their count and summed time
     * ({@code " blocks=n fused=ms"}); then zeroes the phases.
     */
    static String drain() {
        StringBuilder sb = new StringBuilder(128);
        for (int i = 0; i < NS.length; i++) {
            sb.append(String.format(Locale.ROOT, " %s=%.1f", NAMES[i], NS[i] / 1e6));
            NS[i] = 0;
        }
        FastBlockPhases.Reading fused = FastBlockPhases.read();
        if (fused != null) {
            long sum = 0;
            for (long ns : fused.phaseNs()) {
                sum += ns;
            }
            sb.append(String.format(Locale.ROOT, " blocks=%d fused=%.1f", fused.blocks(), sum / 1e6));
        }
        return sb.toString();
    }
}
