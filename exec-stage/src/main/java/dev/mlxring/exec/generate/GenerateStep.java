package dev.mlxring.exec.generate;

import dev.mlxring.exec.model.LanguageModel;
import dev.mlxring.exec.sample.EngineRng;
import dev.mlxring.exec.sample.TokenLogprobs;
import dev.mlxring.mlx.MlxArray;
import dev.mlxring.pipeline.SamplingParams;
import dev.mlxring.pipeline.TokenConstraint;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.List;

/**
 * A whole generation on the calling thread: {@link GenerationRun} advanced to the end, with
 * tokens handed to a listener as they commit. The CLI, the parity tests and the benchmarks use
 * this; the server drives the same {@link GenerationRun} one unit at a time from its exec loop,
 * so both go through one implementation of generate_step.
 */
public final class GenerateStep {
    /** Receives each committed token; returning false stops generation after it. */
    @FunctionalInterface
    public interface TokenListener {
        boolean onToken(int token);
    }

    /**
     * Receives each committed token with the step's {@code [V]} logprobs (valid only during the
     * call); returning false stops generation after it.
     */
    @FunctionalInterface
    public interface StepListener {
        boolean onToken(int token, MlxArray logprobs);
    }

    private GenerateStep() {}

    /** Greedy generation (mlx-lm's default sampler, no logits processors). */
    public static GenerationResult run(
            LanguageModel model, int[] prompt, GenerationOptions options, TokenListener listener) {
        return run(model, prompt, options, SamplingParams.GREEDY, null, (token, logprobs) -> listener.onToken(token));
    }

    /**
     * Generation with {@code sampling}; a request without a seed draws its key from
     * {@code engineRng} (may be null for greedy or seeded requests).
     */
    public static GenerationResult run(
            LanguageModel model,
            int[] prompt,
            GenerationOptions options,
            SamplingParams sampling,
            EngineRng engineRng,
            TokenListener listener) {
        return run(model, prompt, options, sampling, engineRng, (token, logprobs) -> listener.onToken(token));
    }

    public static GenerationResult run(
            LanguageModel model,
            int[] prompt,
            GenerationOptions options,
            SamplingParams sampling,
            EngineRng engineRng,
            StepListener listener) {
        return run(model, prompt, options, sampling, engineRng, null, listener);
    }

    /**
     * Generation under {@code constraint} (null for none; closed here when the run ends): a
     * constraint that can no longer be satisfied ends the result with reason {@code error}.
     */
    public static GenerationResult run(
            LanguageModel model,
            int[] prompt,
            GenerationOptions options,
            SamplingParams sampling,
            EngineRng engineRng,
            TokenConstraint constraint,
            StepListener listener) {
        boolean wantLogprobs = sampling.logprobs() || sampling.topLogprobs() > 0;
        List<TokenLogprobs> logprobs = wantLogprobs ? new ArrayList<>() : null;
        int[] out = new int[options.maxTokens()];
        int produced = 0;
        GenerationRun opened;
        try {
            opened = new GenerationRun(model, prompt, options, sampling, engineRng);
        } catch (RuntimeException e) {
            if (constraint != null) {
                constraint.close();
            }
            throw e;
        }
        try (GenerationRun run = opened) {
            if (constraint != null) {
                run.constrain(constraint);
            }
            while (true) {
                GenerationRun.Event e = run.advance();
                if (e == GenerationRun.Event.FINISHED) {
                    return run.result(Arrays.copyOf(out, produced), copy(logprobs), run.finishReason());
                }
                if (e == GenerationRun.Event.TOKEN) {
                    int token = run.token();
                    out[produced++] = token;
                    if (logprobs != null) {
                        logprobs.add(run.tokenLogprobs(sampling.topLogprobs()));
                    }
                    if (!listener.onToken(token, run.tokenLogprobs())) {
                        return run.result(Arrays.copyOf(out, produced), copy(logprobs), "stop");
                    }
                }
            }
        }
    }

    private static List<TokenLogprobs> copy(List<TokenLogprobs> l) {
        return l == null ? null : List.copyOf(l);
    }
}
