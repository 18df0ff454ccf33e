package dev.mlxring.exec.batch;

import dev.mlxring.exec.kv.BatchKvCache;
import dev.mlxring.exec.kv.KvCache;
import dev.mlxring.exec.prefix.PrefixReuse;
import dev.mlxring.exec.model.LanguageModel;
import dev.mlxring.exec.sample.EngineRng;
import dev.mlxring.exec.sample.SamplingParams;
import dev.mlxring.exec.sample.TokenLogprobs;
import dev.mlxring.kvstore.CacheNamespace;
import dev.mlxring.mlx.ArrayScope;
import dev.mlxring.mlx.Mlx;
import dev.mlxring.mlx.MlxArray;
import dev.mlxring.pipeline.BatchStep;
import dev.mlxring.pipeline.ExecutionBatch;
import dev.mlxring.pipeline.ExecutionPlan;
import dev.mlxring.pipeline.Outcome.ErrorType;
import dev.mlxring.pipeline.RequestException;
import dev.mlxring.pipeline.StepResult;
import dev.mlxring.pipeline.Usage;
import java.util.Arrays;
import java.util.List;
import org.agrona.collections.Int2ObjectHashMap;

/**
 * The pipeline's {@link ExecutionBatch} over a {@link BatchGenerator}, as mlx_lm.server drives
 * its generator: a plan becomes a row ({@code insert}), its prompt first looked up in the prefix
 * cache ({@code fetch_nearest_cache}; the row then starts from the restored caches and feeds
 * only the rest), and a row that finishes publishes its caches back ({@code insert_cache} of
 * prompt + generated). Each unit maps the generator's tokens to the pipeline's step entries: a
 * token for every row that produced one (not the EOS token, which ends the row unreported, as
 * the serial path does), then the row's end with its usage.
 *
 * <p>Owns the generator; {@link #close()} frees it (not the model). Exec thread only.
 */
public final class ContinuousBatch implements ExecutionBatch {
    private static final System.Logger LOG = System.getLogger("dev.mlxring.exec.batch");

    /** A row's request-side facts: what it reports and what its usage counts. */
    private static final class RowInfo {
        final int[] prefix;
        final int promptTokens;
        final boolean logprobs;
        final int topN;
        int completionTokens;

        RowInfo(int[] prefix, int promptTokens, boolean logprobs, int topN) {
            this.prefix = prefix;
            this.promptTokens = promptTokens;
            this.logprobs = logprobs;
            this.topN = topN;
        }

        Usage usage() {
            return new Usage(promptTokens, completionTokens, prefix.length);
        }
    }

    private final LanguageModel model;
    private final BatchGenerator generator;
    /** KV bytes one row holds per position over all layers; measured on first use. */
    private long bytesPerPosition;
    private final PrefixReuse prefixReuse;
    private final CacheNamespace namespace;
    private final Int2ObjectHashMap<RowInfo> rows = new Int2ObjectHashMap<>();

    /**
     * @param prefixReuse the prefix cache, or null for none
     */
    public ContinuousBatch(LanguageModel model, int prefillStepSize, int maxRows, int maxPrefillRows,
            EngineRng engineRng, PrefixReuse prefixReuse) {
        this.model = model;
        this.generator = new BatchGenerator(model, prefillStepSize, maxPrefillRows, maxRows, engineRng);
        this.prefixReuse = prefixReuse;
        this.namespace = prefixReuse == null ? null : prefixReuse.namespace(null);
        if (prefixReuse != null) {
            generator.onFinished(this::publish);
        }
    }

    /** Full-precision KV only: mlx-lm cannot merge quantized caches (mlx_lm.server runs --kv-bits alone). */
    @Override
    public boolean accepts(ExecutionPlan plan) {
        return plan.kvScheme() == null;
    }

    @Override
    public int insert(ExecutionPlan plan) throws RequestException {
        if (!(plan.sampling() instanceof SamplingParams params)) {
            throw new RequestException(ErrorType.INTERNAL, "plan carries no SamplingParams");
        }
        if (!accepts(plan)) {
            throw new RequestException(ErrorType.UNSUPPORTED, "KV scheme " + plan.kvScheme() + " cannot run in a batch");
        }
        int[] prompt = plan.prompt().tokenIds();
        PrefixReuse.Restored restored = prefixReuse == null || prompt.length == 0 ? null
                : prefixReuse.restore(namespace, prompt);
        int cached = restored == null ? 0 : restored.cachedTokens();
        int uid;
        try {
            uid = generator.insert(new BatchRequest(Arrays.copyOfRange(prompt, cached, prompt.length), plan.maxTokens(),
                    params, plan.stopTokenIds()), restored == null ? null : restored.caches(), Arrays.copyOf(prompt, cached));
        } catch (IllegalArgumentException e) {
            throw new RequestException(ErrorType.INVALID_REQUEST, e.getMessage());
        }
        rows.put(uid, new RowInfo(Arrays.copyOf(prompt, cached), prompt.length,
                plan.logprobs() || plan.topLogprobs() > 0, plan.topLogprobs()));
        return uid;
    }

    @Override
    public Usage remove(int row) {
        RowInfo info = rows.remove(row);
        generator.remove(row);
        return info == null ? Usage.NONE : info.usage();
    }

    @Override
    public void step(BatchStep out) {
        out.clear();
        List<BatchToken> tokens = generator.next();
        for (int i = 0; i < tokens.size(); i++) {
            BatchToken t = tokens.get(i);
            RowInfo info = rows.get(t.uid());
            String reason = t.finishReason();
            if (!"stop".equals(reason)) {
                StepResult r = out.add(t.uid()).token(t.token());
                info.completionTokens++;
                if (info.logprobs) {
                    TokenLogprobs lp = TokenLogprobs.of(t.logprobs(), t.token(), info.topN);
                    r.logprob = lp.logprob();
                    r.topCount = lp.topIds().length;
                    System.arraycopy(lp.topIds(), 0, r.topIds, 0, r.topCount);
                    System.arraycopy(lp.topLogprobs(), 0, r.topLogprobs, 0, r.topCount);
                }
            }
            if (reason != null) {
                rows.remove(t.uid());
                out.finish(t.uid(), reason, info.usage());
            }
        }
        // Everything is read: an idle batch then holds no arrays (no last logprobs kept alive).
        generator.releaseLastStep();
    }

    /** {@code rows} rows padded to the longest, each buffer grown in mlx-lm's 256-position steps. */
    @Override
    public long projectedKvBytes(int rows, int positions) {
        long step = BatchKvCache.STEP;
        long capacity = (positions + step - 1) / step * step;
        return rows * capacity * bytesPerPosition();
    }

    /**
     * The layers' KV bytes per position of one row: the shapes and dtypes a one-token forward
     * gives its fresh caches (built, never evaluated, so nothing is computed or kept).
     */
    private long bytesPerPosition() {
        if (bytesPerPosition == 0) {
            KvCache[] probe = model.newCache();
            try (ArrayScope scope = ArrayScope.open()) {
                model.forward(Mlx.fromInts(new int[] {0}, 1, 1), probe);
                long bytes = 0;
                for (KvCache c : probe) {
                    for (MlxArray a : c.state()) {
                        bytes += a.nbytes() / a.dim(2);
                    }
                }
                bytesPerPosition = bytes;
            } finally {
                for (KvCache c : probe) {
                    c.close();
                }
            }
        }
        return bytesPerPosition;
    }

    @Override
    public int rows() {
        return rows.size();
    }

    @Override
    public int cachedTokens(int row) {
        RowInfo info = rows.get(row);
        return info == null ? 0 : info.prefix.length;
    }

    /** A finished row's caches go to the prefix cache; a failure there never fails the request. */
    private void publish(int uid, int[] cachedSequence, KvCache[] caches) {
        RowInfo info = rows.get(uid);
        if (info == null) {
            return;
        }
        try {
            prefixReuse.publish(namespace, info.prefix, cachedSequence, caches);
        } catch (RuntimeException e) {
            LOG.log(System.Logger.Level.WARNING, "prefix cache: could not publish a finished row's KV state", e);
        }
    }

    @Override
    public void close() {
        rows.clear();
        generator.close();
    }
}
