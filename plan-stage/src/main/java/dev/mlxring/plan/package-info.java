/**
 * plan-stage: {@link RequestPlanner}, the pipeline's {@link dev.mlxring.pipeline.Planner}, resolves a
 * request's overrides on top of the server defaults into an immutable
 * {@link dev.mlxring.pipeline.ExecutionPlan}, or refuses it with a reason. Called on the engine's
 * single plan thread; the composition root constructs it.
 */
package dev.mlxring.plan;
