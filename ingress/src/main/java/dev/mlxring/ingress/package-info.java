/**
 * The composition root: {@link LocalEngine} wires one model directory into the stage pipeline (prep,
 * plan, exec, sink) and is the in-process entry point that embedding hosts and {@code serve} use. {@code submit} may be called from any thread; a session's output arrives on the
 * engine's sink thread.
 */
package dev.mlxring.ingress;
