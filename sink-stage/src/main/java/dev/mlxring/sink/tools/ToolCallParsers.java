package dev.mlxring.sink.tools;

import dev.mlxring.pipeline.TokenDecoder;
import java.util.Optional;

/**
 * Which tool-call parser a model uses, as {@code mlx_lm.tokenizer_utils.load} decides it: the
 * tokenizer config's {@code tool_parser_type} when present ({@link #forType}), else
 * {@code _infer_tool_parser} over the chat template and the vocabulary ({@link #inferType} /
 * {@link #infer}).
 *
 * <p>Implemented: json_tools, mistral, qwen3_coder, pythonic. mlx-lm's other modules (gemma4,
 * function_gemma, glm47, kimi_k2, kimi_k3, laguna, longcat, minicpm5, minimax_m2, muse_spark) are
 * not: {@link #forType} / {@link #infer} give empty for them, and a caller should say so
 * (tool-call markup then stays in the content) using {@link #inferType}.
 */
public final class ToolCallParsers {
    private ToolCallParsers() {}

    private static final String[] XTML_TOKENS = {"<|open|>", "<|close|>", "<|sep|>", "<|end_of_msg|>"};

    /** The parser for an mlx-lm module name, or empty when it is not implemented here. */
    public static Optional<ToolCallParser> forType(String type) {
        if (type == null) {
            return Optional.empty();
        }
        return Optional.ofNullable(
                switch (type) {
                    case "json_tools" -> new JsonToolsParser();
                    case "mistral" -> new MistralParser();
                    case "qwen3_coder" -> new Qwen3CoderParser();
                    case "pythonic" -> new PythonicParser();
                    default -> null;
                });
    }

    /** {@code _infer_tool_parser}'s module name (implemented here or not), or empty. */
    public static Optional<String> inferType(String chatTemplate, TokenDecoder vocab) {
        String t = chatTemplate;
        if (t != null) {
            if (t.contains("<minimax:tool_call>")) {
                return Optional.of("minimax_m2");
            } else if (t.contains("<|tool_call>") && t.contains("<tool_call|>")) {
                return Optional.of("gemma4");
            } else if (t.contains("<start_function_call>")) {
                return Optional.of("function_gemma");
            } else if (t.contains("<longcat_tool_call>")) {
                return Optional.of("longcat");
            } else if (t.contains("<arg_key>")) {
                return Optional.of("glm47");
            } else if (t.contains("<|tool_list_start|>") || t.contains("<|tool_call_start|>")) {
                return Optional.of("pythonic");
            } else if (t.contains("<tool_call>\\n<function=") || t.contains("<tool_call>\n<function=")) {
                return Optional.of("qwen3_coder");
            } else if (t.contains("<|tool_calls_section_begin|>")) {
                return Optional.of("kimi_k2");
            } else if (t.contains("<function name=\"") && t.contains("<param name=\"")) {
                return Optional.of("minicpm5");
            } else if (t.contains("[TOOL_CALLS]")) {
                return Optional.of("mistral");
            } else if (t.contains("<atem:function_calls>")) {
                return Optional.of("muse_spark");
            } else if (t.contains("<tool_call>") && t.contains("tool_call.name")) {
                return Optional.of("json_tools");
            }
        }
        if (vocab != null) {
            boolean xtml = true;
            for (String tok : XTML_TOKENS) {
                xtml &= vocab.tokenId(tok).isPresent();
            }
            if (xtml) {
                return Optional.of("kimi_k3");
            } else if (vocab.tokenId("<|tool_call_start|>").isPresent()
                    && vocab.tokenId("<|tool_call_end|>").isPresent()) {
                return Optional.of("pythonic");
            }
        }
        return Optional.empty();
    }

    /**
     * The module {@code tokenizer_utils.load} picks: the tokenizer config's (or the model
     * defaults') {@code tool_parser_type} when not null, else {@link #inferType}.
     */
    public static Optional<String> resolveType(String toolParserType, String chatTemplate, TokenDecoder vocab) {
        return toolParserType != null ? Optional.of(toolParserType) : inferType(chatTemplate, vocab);
    }

    /** {@code _infer_tool_parser}, then {@link #forType}: empty when none is inferred or it is not implemented. */
    public static Optional<ToolCallParser> infer(String chatTemplate, TokenDecoder vocab) {
        return inferType(chatTemplate, vocab).flatMap(ToolCallParsers::forType);
    }
}
