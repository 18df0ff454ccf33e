package dev.mlxring.pipeline;

import java.util.List;
import java.util.Map;

/** What a request asks the model to continue: chat messages, plain text, or token ids. */
public sealed interface Prompt {

    /**
     * Messages rendered through the model's chat template.
     *
     * @param tools tool definitions handed to the template, or empty
     * @param templateKwargs extra template variables ({@code chat_template_kwargs}, e.g. enable_thinking)
     */
    record Chat(List<ChatMessage> messages, List<Map<String, Object>> tools, Map<String, Object> templateKwargs)
            implements Prompt {
        public Chat {
            messages = List.copyOf(java.util.Objects.requireNonNull(messages, "Prompt.Chat messages"));
            tools = tools == null ? List.of() : List.copyOf(tools);
            // Not Map.copyOf: a kwarg may be JSON null (Python's None), which it would reject.
            templateKwargs = templateKwargs == null
                    ? Map.of()
                    : java.util.Collections.unmodifiableMap(new java.util.LinkedHashMap<>(templateKwargs));
        }
    }

    /** Raw text, encoded with the tokenizer's special tokens ({@code /v1/completions}). */
    record Text(String text) implements Prompt {
        public Text {
            java.util.Objects.requireNonNull(text, "Prompt.Text text");
        }
    }

    /** Token ids fed as they are. */
    record Tokens(int[] ids) implements Prompt {
        public Tokens {
            ids = java.util.Objects.requireNonNull(ids, "Prompt.Tokens ids").clone();
        }
    }
}
