package dev.mlxring.exec.prefix;

import dev.mlxring.exec.generate.GenerationOptions;
import dev.mlxring.exec.generate.GenerationRun;
import dev.mlxring.exec.kv.ArraysCache;
import dev.mlxring.exec.model.LanguageModel;
import dev.mlxring.exec.sample.EngineRng;
import dev.mlxring.kvstore.CacheNamespace;
import dev.mlxring.kvstore.KvSnapshot;
import dev.mlxring.pipeline.SamplingParams;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.List;

/**
 * A {@link GenerationRun} around the prefix cache, as mlx_lm.server's serial path: look up the
 * prompt ({@code fetch_nearest_cache}), run {@code generate_step} on the rest of the prompt with
 * the restored caches, and when the run has finished publish its caches under the ids they hold
 * ({@code insert_cache(prompt + generated)}). A cancelled or failed run publishes nothing; a
 * failed publish is logged and never fails the request. A hybrid model's run also copies its
 * recurrent state at the prefill chunk ends {@link PrefixReuse#checkpointTokens()} apart, which
 * the published entry carries as restorable positions.
 *
 * <p>Owns the run; {@link #close()} publishes (if it finished without a failure) then frees it. Exec thread only.
 */
public final class PrefixedRun implements AutoCloseable {
    private static final System.Logger LOG = System.getLogger("dev.mlxring.exec.prefix");

    private final GenerationRun run;
    private final PrefixReuse reuse;
    private final CacheNamespace ns;
    private final int[] prefix;
    /** Checkpoints of the recurrent state taken during the prefill, owned until {@link #close()}. */
    private final List<KvSnapshot> checkpoints = new ArrayList<>();

    private int lastBoundary;

    private PrefixedRun(GenerationRun run, PrefixReuse reuse, CacheNamespace ns, int[] prefix) {
        this.run = run;
        this.reuse = reuse;
        this.ns = ns;
        this.prefix = prefix;
        this.lastBoundary = prefix.length;
        if (reuse != null
                && reuse.checkpointTokens() > 0
                && Arrays.stream(run.caches()).anyMatch(c -> c instanceof ArraysCache)) {
            run.onPrefillChunk(this::maybeCheckpoint);
        }
    }

    private void maybeCheckpoint(int processed) {
        int position = prefix.length + processed;
        if (position - lastBoundary < reuse.checkpointTokens()) {
            return;
        }
        try {
            KvSnapshot cp = KvSnapshots.checkpoint(run.caches());
            if (cp != null && cp.tokens() == position) {
                checkpoints.add(cp);
                lastBoundary = position;
            } else if (cp != null) {
                cp.release();
            }
        } catch (RuntimeException e) {
            LOG.log(System.Logger.Level.WARNING, "prefix cache: could not checkpoint a run's recurrent state", e);
        }
    }

    /**
     * Opens a run of {@code prompt}; {@code reuse} null = no prefix cache (the whole prompt runs),
     * as for a model the prefix cache cannot serve ({@link PrefixReuse#supports}: rotating layers).
     *
     * @throws IllegalArgumentException as {@link GenerationRun}'s constructor (restored caches are freed)
     */
    public static PrefixedRun open(
            PrefixReuse reuse,
            LanguageModel model,
            int[] prompt,
            GenerationOptions options,
            SamplingParams params,
            EngineRng engineRng) {
        if (reuse == null || prompt.length == 0 || !PrefixReuse.supports(model)) {
            return new PrefixedRun(
                    new GenerationRun(model, prompt, options, params, engineRng), null, null, new int[0]);
        }
        CacheNamespace ns = reuse.namespace(options.kvQuantization());
        PrefixReuse.Restored restored = reuse.restore(ns, prompt);
        int cached = restored == null ? 0 : restored.cachedTokens();
        GenerationRun run = new GenerationRun(
                model,
                Arrays.copyOfRange(prompt, cached, prompt.length),
                options,
                params,
                engineRng,
                restored == null ? null : restored.caches());
        return new PrefixedRun(run, reuse, ns, Arrays.copyOf(prompt, cached));
    }

    public GenerationRun run() {
        return run;
    }

    /** The positions where this run checkpointed its recurrent state so far, ascending. */
    public int[] checkpointPositions() {
        return checkpoints.stream().mapToInt(KvSnapshot::tokens).toArray();
    }

    /** Prompt tokens restored from the cache (not computed). */
    public int cachedTokens() {
        return prefix.length;
    }

    /** The whole prompt's length, cached part included. */
    public int promptTokens() {
        return prefix.length + run.promptTokens();
    }

    @Override
    public void close() {
        try {
            // A run that failed (its token constraint) publishes nothing, as a failed batch row.
            if (reuse != null && run.isFinished() && run.failure() == null) {
                reuse.publish(ns, prefix, run.cachedSequence(), run.caches(), checkpoints);
            }
        } catch (RuntimeException e) {
            LOG.log(System.Logger.Level.WARNING, "prefix cache: could not publish a finished run's KV state", e);
        } finally {
            checkpoints.forEach(KvSnapshot::release);
            checkpoints.clear();
            run.close();
        }
    }
}
