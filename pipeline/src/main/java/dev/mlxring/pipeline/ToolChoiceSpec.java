package dev.mlxring.pipeline;

import java.util.Objects;

/**
 * How a request lets the model use its tools, as the client wrote it (OpenAI {@code tool_choice}
 * and {@code parallel_tool_calls}, Anthropic {@code tool_choice} and {@code
 * disable_parallel_tool_use}, Responses {@code tool_choice} and {@code parallel_tool_calls}).
 * plan-stage turns a choice that demands something of the output (a forced call, strict tools,
 * at most one call) into a grammar in the model's tool-call syntax, or refuses it with a 400.
 *
 * @param mode which calls the model may or must make
 * @param name the forced tool's name ({@link Mode#NAMED}), else null
 * @param parallel whether the output may hold more than one call
 * @param schemaKey where a tool's argument schema sits under {@code tools[i]} in the client's
 *     request ({@code function.parameters}, {@code input_schema}, {@code parameters}), for errors
 */
public record ToolChoiceSpec(Mode mode, String name, boolean parallel, String schemaKey) {
    /** The client's choices. */
    public enum Mode {
        /** Text or calls, as the model likes (strict tools' arguments still enforced). */
        AUTO,
        /** No call at all. */
        NONE,
        /** One call or more, of any tool. */
        REQUIRED,
        /** One call or more, each of the named tool. */
        NAMED
    }

    /** {@code auto}, calls in parallel allowed, OpenAI chat's schema key: what a request without a choice means. */
    public static final ToolChoiceSpec DEFAULT = new ToolChoiceSpec(Mode.AUTO, null, true, "function.parameters");

    public ToolChoiceSpec {
        Objects.requireNonNull(mode, "mode");
        Objects.requireNonNull(schemaKey, "schemaKey");
        if ((mode == Mode.NAMED) != (name != null)) {
            throw new IllegalArgumentException("a tool name goes with Mode.NAMED and only with it");
        }
    }

    /** Whether the output must hold a call ({@link Mode#REQUIRED} or {@link Mode#NAMED}). */
    public boolean forced() {
        return mode == Mode.REQUIRED || mode == Mode.NAMED;
    }
}
