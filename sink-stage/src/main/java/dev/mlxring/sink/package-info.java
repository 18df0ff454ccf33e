/**
 * sink-stage: {@link DetokenizingSinks}, the pipeline's {@link dev.mlxring.pipeline.TextSink.Factory},
 * turns committed token ids into text as mlx-lm does: its streaming detokenizers, token-level stop
 * sequences, then mlx_lm.server's text rules (stop strings, reasoning separation, tool calls). One
 * sink per session, opened and used on the engine's sink thread only; the composition root
 * constructs the factory.
 */
package dev.mlxring.sink;
