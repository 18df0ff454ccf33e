package dev.mlxring.ingress.http;

import dev.mlxring.pipeline.CommittedSpan;
import dev.mlxring.pipeline.Engine;
import dev.mlxring.pipeline.ExecutionPlan;
import dev.mlxring.pipeline.Executor;
import dev.mlxring.pipeline.Outcome;
import dev.mlxring.pipeline.PreparedPrompt;
import dev.mlxring.pipeline.RequestException;
import dev.mlxring.pipeline.SamplingParams;
import dev.mlxring.pipeline.TextSink;
import dev.mlxring.plan.RequestPlanner;

/**
 * Stage doubles for the HTTP tests (no model): every prompt prepares to the two ids 7 and 8; the
 * plan takes the request's max_tokens (512 when absent) and stop strings; each token is rendered
 * as {@code "t<id> "}. Tests set their own executor, and may override any stage on the builder.
 */
final class StageDoubles {
    private StageDoubles() {}

    static Engine.Builder engine(Executor executor) {
        return Engine.builder()
                .preparer(r -> new PreparedPrompt(new int[] {7, 8}, 2))
                .planner((r, p) -> {
                    refuseConstraint(r);
                    return ExecutionPlan.builder()
                            .requestId(r.id())
                            .prompt(p)
                            .sampling(SamplingParams.GREEDY)
                            .maxTokens(r.maxTokens() == null ? 512 : r.maxTokens())
                            .stopStrings(r.stop())
                            .logprobs(r.logprobs())
                            .topLogprobs(r.topLogprobs())
                            .adapter(r.adapter())
                            .build();
                })
                .executor(executor)
                .sinks(StageDoubles::tokenText);
    }

    /** What RequestPlanner without a compiler does with a request's output constraint: never drops it. */
    static void refuseConstraint(dev.mlxring.pipeline.GenerationRequest r) throws RequestException {
        if (r.constraint() != null) {
            throw new RequestException(
                    Outcome.ErrorType.UNSUPPORTED, RequestPlanner.unsupportedConstraint(r.constraint()));
        }
    }

    static TextSink tokenText(ExecutionPlan plan) {
        return new TextSink() {
            @Override
            public boolean onToken(int tokenId, CommittedSpan span) {
                span.text.append("t").append(tokenId).append(' ');
                return false;
            }

            @Override
            public String finish(String finishReason, CommittedSpan span) {
                return finishReason;
            }
        };
    }
}
