package dev.mlxring.exec.spec;

import dev.mlxring.exec.generate.GenerateStep;
import dev.mlxring.exec.generate.GenerationOptions;
import dev.mlxring.exec.model.LanguageModel;
import dev.mlxring.exec.sample.EngineRng;
import dev.mlxring.exec.sample.TokenLogprobs;
import dev.mlxring.mlx.ArrayScope;
import dev.mlxring.pipeline.SamplingParams;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.List;

/**
 * A whole speculative generation on the calling thread: {@link SpeculativeRun} advanced to the end,
 * each committed token handed to a listener with its {@code [V]} logprobs, as
 * {@link GenerateStep} does for the plain run. The CLI and the parity tests use it.
 */
public final class SpeculativeGenerate {
    /**
     * What the run produced.
     *
     * @param finishReason {@code stop}, {@code length}, or {@code stop} when the listener ended it
     * @param proposedTokens proposed tokens the target verified
     * @param acceptedTokens proposed tokens the target accepted
     * @param tokenLogprobs per token, its logprob and top logprobs (null unless the params ask)
     * @param promptTimeNs from the start to the first token (mlx-lm's prompt time)
     * @param generationTimeNs from the first token to the last
     */
    public record Result(
            int[] tokens,
            String finishReason,
            int proposedTokens,
            int acceptedTokens,
            List<TokenLogprobs> tokenLogprobs,
            long promptTimeNs,
            long generationTimeNs) {

        public double promptTokensPerSecond(int promptTokens) {
            return promptTimeNs == 0 ? 0 : promptTokens / (promptTimeNs / 1e9);
        }

        public double generationTokensPerSecond() {
            return generationTimeNs == 0 ? 0 : tokens.length / (generationTimeNs / 1e9);
        }
    }

    private SpeculativeGenerate() {}

    public static Result run(
            LanguageModel model,
            int[] prompt,
            GenerationOptions options,
            SamplingParams params,
            EngineRng engineRng,
            Speculation speculation,
            GenerateStep.StepListener listener) {
        boolean wantLogprobs = params.logprobs() || params.topLogprobs() > 0;
        List<TokenLogprobs> logprobs = wantLogprobs ? new ArrayList<>() : null;
        int[] out = new int[options.maxTokens()];
        int produced = 0;
        long[] clock = {System.nanoTime(), 0, 0};
        try (SpeculativeRun run = new SpeculativeRun(model, prompt, options, params, engineRng, speculation)) {
            while (true) {
                SpeculativeRun.Event e = run.advance();
                if (e == SpeculativeRun.Event.TOKENS) {
                    int[] tokens = run.roundTokens();
                    clock[2] = System.nanoTime();
                    if (clock[1] == 0) {
                        clock[1] = clock[2];
                    }
                    for (int i = 0; i < tokens.length; i++) {
                        out[produced++] = tokens[i];
                        if (logprobs != null) {
                            logprobs.add(run.roundTokenLogprobs(i, params.topLogprobs()));
                        }
                        boolean more;
                        try (ArrayScope scope = ArrayScope.open()) {
                            more = listener.onToken(tokens[i], run.roundLogprobs(i));
                        }
                        if (!more) {
                            return result(out, produced, "stop", run, logprobs, clock);
                        }
                    }
                }
                if (run.isFinished()) {
                    return result(out, produced, run.finishReason(), run, logprobs, clock);
                }
            }
        }
    }

    private static Result result(
            int[] out, int produced, String reason, SpeculativeRun run, List<TokenLogprobs> logprobs, long[] clock) {
        long first = clock[1] == 0 ? System.nanoTime() : clock[1];
        long last = clock[2] == 0 ? first : clock[2];
        return new Result(
                Arrays.copyOf(out, produced),
                reason,
                run.proposedTokens(),
                run.acceptedTokens(),
                logprobs == null ? null : List.copyOf(logprobs),
                first - clock[0],
                last - first);
    }
}
