/**
 * mlx-lm's tool-call parsers ({@code mlx_lm/tool_parsers}) and the choice of parser for a model,
 * with the CPython {@code json} and {@code ast.literal_eval} semantics they rely on. The parsers are
 * stateless and thread-safe; the session's sink calls them on the sink thread, and the composition
 * root chooses a model's parser.
 */
package dev.mlxring.sink.tools;
