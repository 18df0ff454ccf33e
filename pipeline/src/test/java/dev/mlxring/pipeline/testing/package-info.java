/**
 * The stage doubles every module's tests share (no MLX, no model, deterministic, observable):
 * {@link dev.mlxring.pipeline.testing.ScriptedExecutor} with its
 * {@link dev.mlxring.pipeline.testing.ScriptedBatch} for exec, {@link
 * dev.mlxring.pipeline.testing.WordStages} for prep, plan and sink, {@link
 * dev.mlxring.pipeline.testing.RecordingListener} for a host's listener and {@link
 * dev.mlxring.pipeline.testing.CountingConstraint} for a plan's token constraint. Shipped as
 * pipeline's test-jar ({@code <type>test-jar</type>}, test scope); tests of any module may use them,
 * main code may not.
 */
package dev.mlxring.pipeline.testing;
