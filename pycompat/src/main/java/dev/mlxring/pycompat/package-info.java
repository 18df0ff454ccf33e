/**
 * Python 3 behaviour in plain Java, one copy of each routine, no dependencies beyond the JDK:
 * {@code float.__repr__} and {@code float()} ({@link dev.mlxring.pycompat.PyNumbers}),
 * {@code json.dumps} and {@code json.loads} ({@link dev.mlxring.pycompat.PyJsonDumps},
 * {@link dev.mlxring.pycompat.PyJsonLoads}), {@code ast.literal_eval}
 * ({@link dev.mlxring.pycompat.PyLiteral}), the {@code str} methods
 * ({@link dev.mlxring.pycompat.PyStrings}), escapes, {@code strftime}, libm's {@code log} and
 * {@code pow}. Stateless and thread-safe; prep, sink, exec and ingress call it.
 */
package dev.mlxring.pycompat;
