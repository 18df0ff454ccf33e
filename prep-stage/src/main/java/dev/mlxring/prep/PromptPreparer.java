package dev.mlxring.prep;

import dev.mlxring.pipeline.ChatMessage;
import dev.mlxring.pipeline.GenerationRequest;
import dev.mlxring.pipeline.Outcome.ErrorType;
import dev.mlxring.pipeline.PreparedPrompt;
import dev.mlxring.pipeline.Preparer;
import dev.mlxring.pipeline.Prompt;
import dev.mlxring.pipeline.RequestException;
import java.util.ArrayList;
import java.util.HashMap;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;

/**
 * prep-stage: chat messages through the model's template then encoded without special tokens
 * (as mlx_lm.server's {@code apply_chat_template(..., tokenize=True)}); plain text encoded with
 * them; token ids checked against the vocabulary. Thread-safe: the template and tokenizer are.
 */
public final class PromptPreparer implements Preparer {
    private final HfTokenizer tokenizer;
    private final ChatTemplate template;
    private final int vocabSize;

    /** @param template the model's chat template, or null when it has none */
    public PromptPreparer(HfTokenizer tokenizer, ChatTemplate template, int vocabSize) {
        this.tokenizer = tokenizer;
        this.template = template;
        this.vocabSize = vocabSize;
    }

    @Override
    public PreparedPrompt prepare(GenerationRequest request) throws RequestException {
        int[] ids = switch (request.prompt()) {
            case Prompt.Chat chat -> encodeChat(chat);
            case Prompt.Text text -> tokenizer.encode(text.text(), true);
            case Prompt.Tokens tokens -> checked(tokens.ids());
        };
        if (ids.length == 0) {
            throw new RequestException(ErrorType.INVALID_REQUEST, "the prompt is empty after tokenization");
        }
        return new PreparedPrompt(ids, ids.length, request.prompt() instanceof Prompt.Chat);
    }

    private int[] encodeChat(Prompt.Chat chat) throws RequestException {
        if (template == null) {
            throw new RequestException(ErrorType.UNSUPPORTED,
                    "this model has no chat template; use /v1/completions with a plain prompt");
        }
        List<Map<String, Object>> messages = new ArrayList<>(chat.messages().size());
        for (ChatMessage m : chat.messages()) {
            Map<String, Object> map = new LinkedHashMap<>(m.extra());
            map.put("role", m.role());
            map.put("content", m.content());
            messages.add(map);
        }
        Map<String, Object> extra = new HashMap<>(chat.templateKwargs());
        if (!chat.tools().isEmpty()) {
            extra.put("tools", chat.tools());
        }
        extra.remove("messages");
        extra.remove("add_generation_prompt");
        String text;
        try {
            text = template.render(messages, true, extra);
        } catch (ChatTemplate.TemplateException | IllegalArgumentException e) {
            throw new RequestException(ErrorType.INVALID_REQUEST, "chat template: " + e.getMessage());
        }
        return tokenizer.encode(text, false);
    }

    private int[] checked(int[] ids) throws RequestException {
        for (int i = 0; i < ids.length; i++) {
            if (ids[i] < 0 || ids[i] >= vocabSize) {
                throw new RequestException(ErrorType.INVALID_REQUEST,
                        "prompt token " + ids[i] + " at position " + i + " is outside the vocabulary [0, " + vocabSize + ")");
            }
        }
        return ids;
    }
}
