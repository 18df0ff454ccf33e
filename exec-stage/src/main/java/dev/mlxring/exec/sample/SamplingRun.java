package dev.mlxring.exec.sample;

import dev.mlxring.mlx.MlxArray;
import dev.mlxring.pipeline.SamplingParams;
import java.util.List;

/**
 * The sampling side of one request's run: its sampler, its logits processors and its
 * {@link SamplingState} (key and token history). Created when the request starts and closed when
 * it ends; nothing here is shared with other requests (an unseeded request hands its final key
 * back to the {@link EngineRng} it drew from when it closes). Confined to the MLX thread.
 */
public final class SamplingRun implements AutoCloseable {
    private final Sampler sampler;
    private final List<LogitsProcessor> processors;
    private final LogitsProcessor[] processorArray;
    private final SamplingState state;
    private final EngineRng engineRng;
    private final EngineRng.Lease lease;

    private SamplingRun(
            Sampler sampler,
            List<LogitsProcessor> processors,
            SamplingState state,
            EngineRng engineRng,
            EngineRng.Lease lease) {
        this.sampler = sampler;
        this.processors = processors;
        this.processorArray = processors.toArray(new LogitsProcessor[0]);
        this.state = state;
        this.engineRng = engineRng;
        this.lease = lease;
    }

    /**
     * Starts the sampling of one request over a {@code vocab}-token model. The key is
     * {@code key(seed)} when the params carry a seed, else drawn from {@code engineRng}; a greedy
     * request never touches the generator ({@code engineRng} may then be null).
     */
    public static SamplingRun start(SamplingParams params, int vocab, EngineRng engineRng) {
        Sampler sampler = Sampler.create(params, vocab);
        List<LogitsProcessor> processors = LogitsProcessors.make(params);
        int keep = SamplingState.historyToKeep(processors);
        if (params.greedy()) {
            return new SamplingRun(sampler, processors, SamplingState.keyless(keep), null, null);
        }
        if (params.seed() != null) {
            return new SamplingRun(sampler, processors, SamplingState.seeded(params.seed(), keep), null, null);
        }
        if (engineRng == null) {
            throw new IllegalArgumentException("a sampling request without a seed needs the engine's random generator");
        }
        EngineRng.Lease lease = engineRng.acquire();
        try {
            return new SamplingRun(sampler, processors, lease.newState(keep), engineRng, lease);
        } catch (RuntimeException e) {
            engineRng.release(lease, null);
            throw e;
        }
    }

    /** True when this run samples exactly as the plain greedy path does (argmax, no processors). */
    public boolean plainGreedy() {
        return sampler.greedy() && processors.isEmpty();
    }

    public boolean hasProcessors() {
        return processorArray.length > 0;
    }

    public SamplingParams params() {
        return sampler.params();
    }

    /** Prefill: adds a chunk of prompt tokens (1-D, {@code n} long) to the penalty history. */
    public void observe(MlxArray tokens, int n) {
        if (processorArray.length > 0) {
            state.append(tokens, n);
        }
    }

    /**
     * generate_step's {@code _step} body before logsumexp: adds the step's input tokens to the
     * history and runs every processor in order on {@code logits} ({@code [1, V]}).
     */
    public MlxArray process(MlxArray inputTokens, int n, MlxArray logits) {
        if (processorArray.length == 0) {
            return logits;
        }
        state.append(inputTokens, n);
        MlxArray x = logits;
        for (LogitsProcessor p : processorArray) {
            x = p.apply(state.history(), state.historyLength(), x);
        }
        return x;
    }

    /** The sampler on {@code [1, V]} logprobs -> {@code [1]} token ids. */
    public MlxArray sample(MlxArray logprobs) {
        return sampler.sample(logprobs, state);
    }

    /** The request's current key as a uint32 pair (evaluates it). */
    public int[] keyWords() {
        return state.keyWords();
    }

    @Override
    public void close() {
        try {
            if (lease != null) {
                int[] finalKey = null;
                try {
                    finalKey = state.keyWords();
                } finally {
                    engineRng.release(lease, finalKey);
                }
            }
        } finally {
            state.close();
        }
    }
}
