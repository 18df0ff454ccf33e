package dev.mlxring.prep;

import dev.mlxring.pipeline.ChatMessage;
import dev.mlxring.pipeline.GenerationRequest;
import dev.mlxring.pipeline.Outcome.ErrorType;
import dev.mlxring.pipeline.PreparedPrompt;
import dev.mlxring.pipeline.Preparer;
import dev.mlxring.pipeline.Prompt;
import dev.mlxring.pipeline.PromptSegment;
import dev.mlxring.pipeline.RequestException;
import dev.mlxring.tokenizer.HfTokenizer;
import java.util.ArrayList;
import java.util.HashMap;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;

/**
 * prep-stage: chat messages through the model's template then encoded without special tokens
 * (as mlx_lm.server's {@code apply_chat_template(..., tokenize=True)}); plain text encoded with
 * them; token ids checked against the vocabulary. A chat prompt is split into segments as
 * mlx_lm.server's {@code _tokenize} splits it ({@link ChatSegments}): system prompt, conversation,
 * thinking tail. Thread-safe: the template and tokenizer are.
 */
public final class PromptPreparer implements Preparer {
    /**
     * Headroom of the pre-tokenization length bound for tokenizers with a normalizer, which may
     * shorten text before it is split (NFC composes "e" + U+0301 into one char): the bound then
     * assumes up to 4× fewer chars. Without a normalizer the bound is exact.
     */
    private static final long NORMALIZATION_HEADROOM = 4;

    private final HfTokenizer tokenizer;
    private final ChatTemplate template;
    private final int vocabSize;
    /**
     * Texts longer than this cannot fit in the prompt limit, whatever their tokens: every token
     * covers at most the longest vocabulary string's length in chars (byte-level vocabularies spell
     * one char per byte, and a UTF-16 char is at least one UTF-8 byte). Checked before tokenizing, so
     * a multi-megabyte prompt is refused at once instead of after seconds of tokenization.
     */
    private final long maxPromptChars;

    private final int maxPromptTokens;
    /** The thinking start marker's ids (the chat tail segment starts there); null when none. */
    private final int[] thinkStartIds;

    /** @param template the model's chat template, or null when it has none */
    public PromptPreparer(HfTokenizer tokenizer, ChatTemplate template, int vocabSize) {
        this(tokenizer, template, vocabSize, 0, null);
    }

    /** As below, for a model without a thinking marker. */
    public PromptPreparer(HfTokenizer tokenizer, ChatTemplate template, int vocabSize, int maxPromptTokens) {
        this(tokenizer, template, vocabSize, maxPromptTokens, null);
    }

    /**
     * @param maxPromptTokens prompts that certainly exceed this many tokens are refused before
     *     tokenization (plan checks the exact count); 0 = no bound
     * @param thinkStartIds the model's thinking start marker as ids (the sink's think markers),
     *     or null when it has none: a chat prompt's tail segment starts at that marker
     */
    public PromptPreparer(
            HfTokenizer tokenizer, ChatTemplate template, int vocabSize, int maxPromptTokens, int[] thinkStartIds) {
        this.thinkStartIds = thinkStartIds == null || thinkStartIds.length == 0 ? null : thinkStartIds.clone();
        this.tokenizer = tokenizer;
        this.template = template;
        this.vocabSize = vocabSize;
        this.maxPromptTokens = maxPromptTokens;
        int longest = 1;
        for (int id = 0; id < tokenizer.vocabSize(); id++) {
            String t = tokenizer.token(id);
            if (t != null) {
                longest = Math.max(longest, t.length());
            }
        }
        long headroom = tokenizer.hasNormalizer() ? NORMALIZATION_HEADROOM : 1;
        this.maxPromptChars = maxPromptTokens > 0 ? headroom * longest * maxPromptTokens : Long.MAX_VALUE;
    }

    @Override
    public PreparedPrompt prepare(GenerationRequest request) throws RequestException {
        return switch (request.prompt()) {
            case Prompt.Chat chat -> encodeChat(chat);
            case Prompt.Text text -> unsplit(encode(text.text(), true));
            case Prompt.Tokens tokens -> unsplit(checked(tokens.ids()));
        };
    }

    /** A prompt that is not a chat: one segment, as {@code _tokenize} returns it. */
    private static PreparedPrompt unsplit(int[] ids) throws RequestException {
        return new PreparedPrompt(nonEmpty(ids), ids.length, false);
    }

    private static int[] nonEmpty(int[] ids) throws RequestException {
        if (ids.length == 0) {
            throw new RequestException(ErrorType.INVALID_REQUEST, "the prompt is empty after tokenization");
        }
        return ids;
    }

    private PreparedPrompt encodeChat(Prompt.Chat chat) throws RequestException {
        if (template == null) {
            throw new RequestException(
                    ErrorType.UNSUPPORTED, "this model has no chat template; use /v1/completions with a plain prompt");
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
        int[] ids = nonEmpty(encode(text, false));
        boolean lastIsUser = "user".equals(chat.messages().getLast().role());
        List<PromptSegment> segments =
                ChatSegments.split(ids, lastIsUser, lastIsUser ? systemTokens(messages, extra) : null, thinkStartIds);
        return new PreparedPrompt(ids, ids.length, true, segments);
    }

    /**
     * {@code _tokenize}'s system rendering: the leading system messages and an empty user message,
     * without the generation prompt; null without system messages. A template that refuses this
     * shortened conversation (the full one did render) gives no system segment rather than
     * failing the request (mlx-lm's _tokenize would raise there).
     */
    private int[] systemTokens(List<Map<String, Object>> messages, Map<String, Object> extra) {
        int system = 0;
        while (system < messages.size() && "system".equals(messages.get(system).get("role"))) {
            system++;
        }
        if (system == 0) {
            return null;
        }
        List<Map<String, Object>> head = new ArrayList<>(messages.subList(0, system));
        Map<String, Object> emptyUser = new LinkedHashMap<>();
        emptyUser.put("role", "user");
        emptyUser.put("content", "");
        head.add(emptyUser);
        try {
            return tokenizer.encode(template.render(head, false, extra), false);
        } catch (ChatTemplate.TemplateException | IllegalArgumentException e) {
            return null;
        }
    }

    private int[] encode(String text, boolean addSpecialTokens) throws RequestException {
        if (text.length() > maxPromptChars) {
            throw new RequestException(
                    ErrorType.CONTEXT_LENGTH_EXCEEDED,
                    "The prompt is " + text.length()
                            + " characters, more than " + maxPromptTokens + " tokens can hold (at most "
                            + maxPromptChars
                            + " characters for this tokenizer). Please reduce the length of the messages.");
        }
        try {
            return tokenizer.encode(text, addSpecialTokens);
        } catch (IllegalArgumentException e) {
            // Not well-formed UTF-16 (a lone surrogate): ingress refuses it first; hosts may not.
            throw new RequestException(ErrorType.INVALID_REQUEST, "the prompt cannot be tokenized: " + e.getMessage());
        }
    }

    private int[] checked(int[] ids) throws RequestException {
        for (int i = 0; i < ids.length; i++) {
            if (ids[i] < 0 || ids[i] >= vocabSize) {
                throw new RequestException(
                        ErrorType.INVALID_REQUEST,
                        "prompt token " + ids[i] + " at position " + i + " is outside the vocabulary [0, " + vocabSize
                                + ")");
            }
        }
        return ids;
    }
}
