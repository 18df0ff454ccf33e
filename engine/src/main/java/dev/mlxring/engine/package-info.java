/**
 * The composition root for one model: {@link dev.mlxring.engine.LocalEngine} loads a model
 * directory (weights, tokenizer, chat template, tool-call format) and wires it into the stage
 * pipeline (prep, plan, exec, sink). It is the in-process entry point of embedding hosts and of
 * {@code ingress}'s {@code serve} and {@code generate}; this package knows nothing of HTTP. Any
 * module may call it; it may depend on every stage. {@code submit} may be called from any thread;
 * a session's output arrives on the engine's sink thread.
 */
package dev.mlxring.engine;
