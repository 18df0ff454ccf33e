/**
 * The contracts and the flow: the request, prompt, plan, span and outcome records, the stage
 * interfaces ({@link Preparer}, {@link Planner}, {@link Executor} with {@link ExecutionRun} and
 * {@link ExecutionBatch}, {@link TextSink}), and {@link Engine}, the Disruptor rings and the stage
 * threads that call them (prep shards, plan, exec with its {@link BatchScheduler}, sink). No MLX
 * and no stage implementation. {@link Engine#submit} may be called from any thread; each stage
 * interface states the threads it is called on. Every stage module and every host depend on it.
 */
package dev.mlxring.pipeline;
