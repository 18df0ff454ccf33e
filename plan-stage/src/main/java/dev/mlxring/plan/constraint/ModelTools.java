package dev.mlxring.plan.constraint;

import java.util.Objects;
import java.util.function.Predicate;

/**
 * What plan knows of a model's tool calling, to build a request's {@link ToolCallGrammar}: its
 * tool-call syntax, and whether a prompt leaves its reasoning block open (sink-stage's {@code
 * ThinkMarkers.opensInPrompt}). Made once per model by the composition root; thread-safe when
 * both parts are.
 *
 * @param syntax the model's tool-call syntax ({@link ToolSyntax#format()} null when it has none)
 * @param reasoningOpenInPrompt given a prompt's token ids, whether generation starts inside a
 *     reasoning block
 */
public record ModelTools(ToolSyntax syntax, Predicate<int[]> reasoningOpenInPrompt) {
    public ModelTools {
        Objects.requireNonNull(syntax, "syntax");
        Objects.requireNonNull(reasoningOpenInPrompt, "reasoningOpenInPrompt");
    }
}
