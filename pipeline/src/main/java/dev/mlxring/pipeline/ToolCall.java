package dev.mlxring.pipeline;

/**
 * One parsed tool call, as an mlx-lm tool parser's {@code parse_tool_call} returns it: a
 * function name, its arguments as a plain JSON value (Map, List, String, Number, Boolean or null,
 * as Jackson/Python would hold them) and the model's own call id if the format carries one
 * (otherwise null: the server then makes one up, as mlx_lm.server uses {@code uuid4()}).
 */
public record ToolCall(String name, Object arguments, String id) {}
