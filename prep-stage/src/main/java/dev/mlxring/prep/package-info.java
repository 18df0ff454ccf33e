/**
 * prep-stage: {@link PromptPreparer}, the pipeline's {@link dev.mlxring.pipeline.Preparer}, renders
 * chat messages through the model's Hugging Face chat template ({@link ChatTemplate}: Jinjava
 * extended with Jinja2's and Python's semantics) and tokenizes them ({@link dev.mlxring.tokenizer.HfTokenizer}). All of
 * it is thread-safe: the prep shards call it concurrently, and {@code Engine.prepare} on the
 * caller's thread. The composition root constructs it.
 */
package dev.mlxring.prep;
