package dev.mlxring.pipeline;

/**
 * plan-stage: resolves defaults and overrides once into an immutable {@link ExecutionPlan}, or
 * refuses with a reason (never substitutes a cheaper composition). Called on the single plan
 * thread.
 */
@FunctionalInterface
public interface Planner {
    ExecutionPlan plan(GenerationRequest request, PreparedPrompt prompt) throws RequestException;
}
