/**
 * Structured-output constraints through llguidance's C API (FFM over {@code libllguidance.so}):
 * a model's token vocabulary and canonical tokenizer, schemas, Lark grammars and regexes compiled
 * once, and per-row matchers that write token masks. No MLX arrays. {@link CompiledConstraint#compile}
 * may run on any thread; a {@link ConstraintMatcher} belongs to one thread at a time; a
 * {@link ConstraintVocabulary} is immutable and shared. Called by plan-stage's constraint compiler
 * (whose matchers exec then drives), by the composition root in ingress, and by perf.
 */
package dev.mlxring.constraint;
