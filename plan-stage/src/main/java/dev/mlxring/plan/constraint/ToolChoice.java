package dev.mlxring.plan.constraint;

import java.util.Objects;

/**
 * What a request's tool choice demands of the output, for {@link ToolCallGrammar}: at least one
 * call of any tool ({@link Mode#REQUIRED}: OpenAI {@code "required"}, Anthropic {@code any},
 * Responses {@code "required"}), at least one call of one named tool ({@link Mode#NAMED}: OpenAI
 * {@code {"type": "function", "function": {"name": ...}}}, Anthropic {@code tool}), or text or
 * calls as the model likes with each strict tool's arguments enforced ({@link Mode#AUTO}).
 *
 * @param mode which of the three
 * @param name the forced tool's name ({@link Mode#NAMED}), else null
 * @param parallel whether the output may hold more than one call ({@code parallel_tool_calls},
 *     Anthropic's {@code disable_parallel_tool_use} negated)
 */
public record ToolChoice(Mode mode, String name, boolean parallel) {
    /** The three ways a choice constrains the calls. */
    public enum Mode {
        /** Text, or calls whose strict tools' arguments match their schemas. */
        AUTO,
        /** One call or more, of any tool. */
        REQUIRED,
        /** One call or more, each of the named tool. */
        NAMED
    }

    public ToolChoice {
        Objects.requireNonNull(mode, "mode");
        if ((mode == Mode.NAMED) != (name != null)) {
            throw new IllegalArgumentException("a tool name goes with Mode.NAMED and only with it");
        }
    }

    /** Text or calls; strict tools' arguments enforced. */
    public static ToolChoice auto(boolean parallel) {
        return new ToolChoice(Mode.AUTO, null, parallel);
    }

    /** At least one call, of any tool. */
    public static ToolChoice required(boolean parallel) {
        return new ToolChoice(Mode.REQUIRED, null, parallel);
    }

    /** At least one call, each of {@code name}. */
    public static ToolChoice named(String name, boolean parallel) {
        return new ToolChoice(Mode.NAMED, Objects.requireNonNull(name, "name"), parallel);
    }

    /** The choice as a message names it, e.g. {@code tool_choice "required"}. */
    String describe() {
        return switch (mode) {
            case AUTO -> "tool_choice \"auto\" with strict tools";
            case REQUIRED -> "tool_choice \"required\"";
            case NAMED -> "tool_choice naming function '" + name + "'";
        };
    }
}
