package dev.mlxring.exec.batch;

import dev.mlxring.exec.kv.KvCache;
import dev.mlxring.exec.nn.AdapterCache;
import dev.mlxring.exec.nn.NamedAdapter;
import dev.mlxring.exec.nn.RowAdapters;
import dev.mlxring.exec.sample.SamplingRun;
import dev.mlxring.exec.sample.TokenMask;
import dev.mlxring.pipeline.KvQuantization;
import java.util.Arrays;
import java.util.List;

/**
 * One sequence's bookkeeping in a {@link BatchGenerator}: its prompt split as mlx-lm's
 * {@code insert_segments} splits it ({@code prompt[:-1]} prefilled in chunks that never cross a
 * segment boundary, the last token fed to the first generation step), its sampling run (sampler, processors, key, history), its limits and
 * its count of generated tokens. Exec thread only; the generator closes the sampling run when the
 * row leaves.
 */
final class Row {
    final int uid;
    final int[] prompt;
    final int maxTokens;
    final int[] stopTokenIds;
    final SamplingRun sampling;
    /** The row's token constraint as a mask; null when unconstrained. */
    final TokenMask mask;
    /** Whether a masked step was built for the row: its token is consumed before the next mask. */
    boolean maskStarted;
    /** The row's speculative decoding; null when it decodes one position per step. */
    final RowSpeculation spec;
    /** The row's KV quantization, or null for full precision. */
    final KvQuantization kvQuantization;
    /** The row's hold on its named adapter; null on the base model. */
    final AdapterCache.Lease adapter;
    /**
     * Whether the row's next input (the token its caches have not seen yet) was already given to
     * the caller: the prompt's last token, or a token a verification round committed. False when
     * it is a token sampled by a one-position step and not reported yet (the pipelined step
     * reports each token one step after sampling it).
     */
    boolean pendingReturned;
    /**
     * Solo caches already holding the positions before {@code prompt} (a restored prefix), owned
     * by the row until its prompt batch merges them; null when the row starts empty.
     */
    KvCache[] history;
    /** Prompt tokens already fed to the model (of {@code prompt[:-1]}). */
    int prefilled;
    /**
     * Where the prefill segments end in {@code prompt}, ascending: every segment's end before the
     * last token, then {@code prompt.length - 1} (the last token is its own segment, as
     * {@code insert_segments} splits it off). Empty for a one-token prompt.
     */
    private final int[] prefillEnds;
    /** The prefill segment being fed (an index into {@link #prefillEnds}). */
    private int segment;
    /** Whether the last chunk fed ended a segment ({@code end_of_segment}). */
    boolean segmentEnded;

    int generated;
    /** The generated ids, kept only when the generator reports finished rows' caches. */
    private int[] generatedIds;

    /**
     * @param segmentLengths the prompt's segments (positive lengths summing to its length), or
     *     null for one segment
     */
    Row(
            int uid,
            int[] prompt,
            int[] segmentLengths,
            int maxTokens,
            int[] stopTokenIds,
            SamplingRun sampling,
            TokenMask mask,
            KvCache[] history,
            boolean keepIds,
            RowSpeculation spec,
            KvQuantization kvQuantization,
            AdapterCache.Lease adapter) {
        this.kvQuantization = kvQuantization;
        this.adapter = adapter;
        this.mask = mask;
        this.spec = spec;
        this.uid = uid;
        this.prompt = prompt;
        this.prefillEnds = prefillEnds(prompt.length, segmentLengths);
        this.maxTokens = maxTokens;
        this.stopTokenIds = stopTokenIds;
        this.sampling = sampling;
        this.history = history;
        this.generatedIds = keepIds ? new int[Math.min(maxTokens, 256)] : null;
    }

    /** Counts one generated token (kept when ids are tracked). */
    void generated(int token) {
        if (generatedIds != null) {
            if (generated == generatedIds.length) {
                generatedIds = Arrays.copyOf(generatedIds, Math.min(maxTokens, 2 * generated));
            }
            generatedIds[generated] = token;
        }
        generated++;
    }

    /** The ids whose KV the row's caches hold after its last step: its prompt, then every generated token. */
    int[] cachedSequence() {
        return cachedSequence(generated);
    }

    /** The row's prompt, then its first {@code fedGenerated} generated tokens. */
    int[] cachedSequence(int fedGenerated) {
        int[] out = Arrays.copyOf(prompt, prompt.length + fedGenerated);
        System.arraycopy(generatedIds, 0, out, prompt.length, fedGenerated);
        return out;
    }

    /** Whether the row proposes tokens this step (it speculates and has not stopped proposing). */
    boolean speculating() {
        return spec != null && spec.active();
    }

    /** Whether the row's draft source follows its committed tokens ({@link RowSpeculation#follows()}). */
    boolean followed() {
        return spec != null && spec.follows();
    }

    /** Closes the row's sampling run, its mask (the constraint) and its draft source: the row has left. */
    void closeRun() {
        try {
            sampling.close();
        } finally {
            try {
                if (mask != null) {
                    mask.close();
                }
            } finally {
                try {
                    if (spec != null) {
                        spec.close();
                    }
                } finally {
                    if (adapter != null) {
                        adapter.close();
                    }
                }
            }
        }
    }

    /** The named adapters of {@code rows}, in order, for their forward pass; null when none has one. */
    static RowAdapters adapters(List<Row> rows) {
        NamedAdapter[] a = new NamedAdapter[rows.size()];
        for (int i = 0; i < a.length; i++) {
            AdapterCache.Lease l = rows.get(i).adapter;
            a[i] = l == null ? null : l.adapter();
        }
        return RowAdapters.of(a);
    }

    /** Frees what the row still owns besides its sampling run (a history never merged). */
    void closeHistory() {
        if (history != null) {
            for (KvCache c : history) {
                c.close();
            }
            history = null;
        }
    }

    private static int[] prefillEnds(int length, int[] segmentLengths) {
        if (length <= 1) {
            return new int[0];
        }
        int[] lengths = segmentLengths == null ? new int[] {length} : segmentLengths;
        int[] ends = new int[lengths.length];
        int n = 0;
        int end = 0;
        for (int l : lengths) {
            end += l;
            if (end < length - 1) {
                ends[n++] = end;
            }
        }
        ends[n++] = length - 1;
        return Arrays.copyOf(ends, n);
    }

    /** Tokens of {@code prompt[:-1]} still to prefill; 0 when only the last prompt token remains. */
    int remainingPrefill() {
        return prompt.length - 1 - prefilled;
    }

    /** The next chunk's length: at most {@code step}, never past the current segment's end. */
    int nextChunk(int step) {
        return Math.min(prefillEnds[segment] - prefilled, step);
    }

    /** Counts {@code n} more tokens fed; notes whether they ended the current segment. */
    void fed(int n) {
        prefilled += n;
        segmentEnded = prefilled == prefillEnds[segment];
        if (segmentEnded) {
            segment++;
        }
    }

    boolean isStop(int token) {
        for (int t : stopTokenIds) {
            if (t == token) {
                return true;
            }
        }
        return false;
    }
}
