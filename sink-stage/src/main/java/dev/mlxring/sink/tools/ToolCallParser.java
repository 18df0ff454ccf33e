package dev.mlxring.sink.tools;

import dev.mlxring.pipeline.ToolCall;
import java.util.List;
import java.util.Map;

/**
 * One of mlx-lm's tool-call formats ({@code mlx_lm/tool_parsers/<type>.py}): the markers that
 * open and close a call in the generated text, and the parser of the text between them.
 * Implementations are stateless and thread-safe.
 */
public interface ToolCallParser {
    /** mlx-lm's module name, e.g. {@code json_tools}, {@code mistral}, {@code qwen3_coder}. */
    String type();

    /** {@code tool_call_start}: the text that switches the output into the tool state. */
    String callStart();

    /** {@code tool_call_end}, or the empty string when the format has none (the call runs to the end). */
    String callEnd();

    /**
     * {@code parse_tool_call(text, tools)}: the calls in one tool-state text (a parser may return
     * several).
     *
     * @param tools the request's tool definitions (OpenAI shape), or an empty list
     * @throws IllegalArgumentException where mlx-lm raises ValueError / JSONDecodeError (the
     *     server then drops that text, e.g. a call cut off by max_tokens)
     */
    List<ToolCall> parse(String text, List<Map<String, Object>> tools);
}
