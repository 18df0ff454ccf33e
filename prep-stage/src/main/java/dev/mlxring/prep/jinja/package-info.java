/**
 * Jinjava extended with Jinja2's and Python's semantics for chat templates: the entry point is
 * {@link dev.mlxring.prep.jinja.PyJinjava}; expressions, filters, tests, globals and method calls
 * behave as Jinja2 over Python values, through {@code pycompat} for the Python routines
 * themselves. Used by prep-stage's {@code ChatTemplate} only; thread-safe once built.
 */
package dev.mlxring.prep.jinja;
