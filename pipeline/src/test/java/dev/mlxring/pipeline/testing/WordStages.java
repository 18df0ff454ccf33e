package dev.mlxring.pipeline.testing;

import dev.mlxring.pipeline.CommittedSpan;
import dev.mlxring.pipeline.ExecutionPlan;
import dev.mlxring.pipeline.GenerationRequest;
import dev.mlxring.pipeline.Outcome;
import dev.mlxring.pipeline.PreparedPrompt;
import dev.mlxring.pipeline.Prompt;
import dev.mlxring.pipeline.RequestException;
import dev.mlxring.pipeline.SamplingParams;
import dev.mlxring.pipeline.TextSink;

/**
 * The prep, plan and sink doubles around a {@link ScriptedExecutor} (no tokenizer, no model): a text
 * prompt prepares to one id per word, a plan takes the request's max_tokens and stop strings, and
 * the sink writes each token as {@code "<id> "}. Stateless; any stage thread may call them.
 */
public final class WordStages {
    /** The plan's max_tokens when the request names none. */
    public static final int DEFAULT_MAX_TOKENS = 8;

    private WordStages() {}

    /**
     * Tokenizes "a bb c" into one id per word, the word's length; a prompt that contains "FAIL"
     * fails preparation with an invalid-request error.
     */
    public static PreparedPrompt prepare(GenerationRequest r) throws RequestException {
        String text = ((Prompt.Text) r.prompt()).text();
        if (text.contains("FAIL")) {
            throw new RequestException(Outcome.ErrorType.INVALID_REQUEST, "prompt contains FAIL");
        }
        String[] words = text.trim().split(" +");
        int[] ids = new int[words.length];
        for (int i = 0; i < ids.length; i++) {
            ids[i] = words[i].length();
        }
        return new PreparedPrompt(ids, ids.length);
    }

    /** Greedy, the request's max_tokens ({@value #DEFAULT_MAX_TOKENS} when absent) and stop strings, stop id 0. */
    public static ExecutionPlan plan(GenerationRequest r, PreparedPrompt p) {
        return ExecutionPlan.builder()
                .requestId(r.id())
                .prompt(p)
                .sampling(SamplingParams.GREEDY)
                .maxTokens(r.maxTokens() == null ? DEFAULT_MAX_TOKENS : r.maxTokens())
                .stopTokenIds(new int[] {0})
                .stopStrings(r.stop())
                .build();
    }

    /**
     * Text {@code "<id> "} per token; a stop string matches when the text so far contains it (the
     * matching token's text is withheld).
     */
    public static TextSink textSink(ExecutionPlan plan) {
        StringBuilder all = new StringBuilder();
        return new TextSink() {
            @Override
            public boolean onToken(int tokenId, CommittedSpan span) {
                String piece = tokenId + " ";
                all.append(piece);
                for (String stop : plan.stopStrings()) {
                    if (all.indexOf(stop) >= 0) {
                        return true;
                    }
                }
                span.text.append(piece);
                return false;
            }

            @Override
            public String finish(String finishReason, CommittedSpan span) {
                return finishReason;
            }
        };
    }
}
