package dev.mlxring.ingress.http.openai;

import com.fasterxml.jackson.databind.ObjectMapper;
import com.fasterxml.jackson.databind.node.ArrayNode;
import com.fasterxml.jackson.databind.node.ObjectNode;
import dev.mlxring.ingress.http.SpeculativeUsage;
import dev.mlxring.pipeline.ToolCall;
import dev.mlxring.pipeline.Usage;
import dev.mlxring.pycompat.PyJsonDumps;
import java.util.List;
import java.util.UUID;
import java.util.function.IntFunction;

/**
 * OpenAI / mlx_lm.server response shapes: {@code chat.completion(.chunk)} and
 * {@code text_completion} objects, usage, logprobs, tool calls. One instance per request (it
 * carries the id, model and creation time every chunk repeats, and the streamed tool-call index);
 * used by one thread at a time.
 */
final class OpenAiFrames {
    private static final ObjectMapper JSON = new ObjectMapper();

    private final String id;
    private final String model;
    private final long created;
    private final boolean chat;
    private final String fingerprint;
    private final IntFunction<String> tokenText;
    /** mlx_lm.server's {@code ToolCallFormatter._idx}: streamed tool calls are numbered per request. */
    private int toolCallIndex;
    /** Alternatives per token in the legacy logprobs shape, or -1 for mlx_lm.server's shape. */
    private final int legacyTopLogprobs;
    /** The legacy shape's {@code text_offset} of the next token, in code points. */
    private int textOffsetInCodePoints;

    OpenAiFrames(String id, String model, boolean chat, String fingerprint, IntFunction<String> tokenText) {
        this(id, model, chat, fingerprint, tokenText, -1);
    }

    /**
     * @param legacyTopLogprobs text completions' integer {@code logprobs}: logprobs are written in
     *     OpenAI's legacy shape with that many alternatives per token; -1 for mlx_lm.server's shape
     */
    OpenAiFrames(
            String id,
            String model,
            boolean chat,
            String fingerprint,
            IntFunction<String> tokenText,
            int legacyTopLogprobs) {
        this.legacyTopLogprobs = legacyTopLogprobs;
        this.id = id;
        this.model = model;
        this.created = System.currentTimeMillis() / 1000;
        this.chat = chat;
        this.fingerprint = fingerprint;
        this.tokenText = tokenText;
    }

    private ObjectNode envelope(boolean stream) {
        ObjectNode o = JSON.createObjectNode();
        o.put("id", id);
        o.put("system_fingerprint", fingerprint);
        o.put("object", chat ? (stream ? "chat.completion.chunk" : "chat.completion") : "text_completion");
        o.put("model", model);
        o.put("created", created);
        return o;
    }

    private ObjectNode choice(ObjectNode envelope, String finishReason) {
        ArrayNode choices = envelope.putArray("choices");
        ObjectNode c = choices.addObject();
        c.put("index", 0);
        if (finishReason == null) {
            c.putNull("finish_reason");
        } else {
            c.put("finish_reason", finishReason);
        }
        return c;
    }

    /**
     * One streamed chunk carrying text, reasoning and/or tool calls (and the token's logprobs when
     * asked). Text completions carry only text, as in mlx_lm.server.
     */
    String chunk(
            CharSequence text,
            CharSequence reasoning,
            List<ToolCall> toolCalls,
            LogprobEntry logprob,
            String finishReason) {
        ObjectNode o = envelope(true);
        ObjectNode c = choice(o, finishReason);
        if (chat) {
            ObjectNode delta = c.putObject("delta");
            delta.put("role", "assistant");
            if (text.length() > 0) {
                delta.put("content", text.toString());
            }
            if (reasoning.length() > 0) {
                delta.put("reasoning", reasoning.toString());
            }
            if (!toolCalls.isEmpty()) {
                toolCalls(delta.putArray("tool_calls"), toolCalls, true);
            }
        } else {
            c.put("text", text.toString());
        }
        if (logprob != null && legacyTopLogprobs >= 0) {
            c.set("logprobs", legacy(List.of(logprob)));
        } else if (logprob != null) {
            logprob.writeTo(c.putObject("logprobs").putArray("content"), tokenText);
        }
        return o.toString();
    }

    /** The usage-only chunk of {@code stream_options.include_usage}. */
    String usageChunk(Usage usage) {
        ObjectNode o = envelope(true);
        o.putArray("choices");
        usage(o, usage);
        return o.toString();
    }

    /** A whole non-streamed response. */
    String complete(
            String text,
            String reasoning,
            List<ToolCall> toolCalls,
            List<LogprobEntry> logprobs,
            String finishReason,
            Usage usage) {
        ObjectNode o = envelope(false);
        ObjectNode c = choice(o, finishReason);
        if (chat) {
            ObjectNode message = c.putObject("message");
            message.put("role", "assistant");
            if (text.isEmpty()) {
                message.putNull("content");
            } else {
                message.put("content", text);
            }
            if (!reasoning.isEmpty()) {
                message.put("reasoning", reasoning);
            }
            if (!toolCalls.isEmpty()) {
                toolCalls(message.putArray("tool_calls"), toolCalls, false);
            }
        } else {
            c.put("text", text);
        }
        if (logprobs != null && legacyTopLogprobs >= 0) {
            c.set("logprobs", legacy(logprobs));
        } else if (logprobs != null) {
            ArrayNode content = c.putObject("logprobs").putArray("content");
            for (LogprobEntry e : logprobs) {
                e.writeTo(content, tokenText);
            }
        }
        usage(o, usage);
        return o.toString();
    }

    /**
     * OpenAI's legacy completions logprobs: {@code {"tokens": [text], "token_logprobs": [logprob],
     * "top_logprobs": [{text: logprob}], "text_offset": [offset]}}, one entry per token. Each
     * {@code top_logprobs} object holds the {@code legacyTopLogprobs} most likely tokens, most
     * likely first (two ids with the same text keep the likelier). {@code text_offset} is where the
     * token's text starts, in code points, in the concatenation of the request's {@code tokens}
     * (counted across streamed chunks).
     */
    private ObjectNode legacy(List<LogprobEntry> entries) {
        ObjectNode lp = JSON.createObjectNode();
        ArrayNode tokens = lp.putArray("tokens");
        ArrayNode tokenLogprobs = lp.putArray("token_logprobs");
        ArrayNode top = lp.putArray("top_logprobs");
        ArrayNode offsets = lp.putArray("text_offset");
        for (LogprobEntry e : entries) {
            String text = tokenText.apply(e.token());
            tokens.add(text);
            tokenLogprobs.add(e.logprob());
            ObjectNode alternatives = top.addObject();
            Integer[] order = new Integer[e.topIds().length];
            for (int i = 0; i < order.length; i++) {
                order[i] = i;
            }
            java.util.Arrays.sort(order, (a, b) -> Float.compare(e.topLogprobs()[b], e.topLogprobs()[a]));
            for (int i = 0; i < Math.min(legacyTopLogprobs, order.length); i++) {
                String alt = tokenText.apply(e.topIds()[order[i]]);
                if (!alternatives.has(alt)) {
                    alternatives.put(alt, e.topLogprobs()[order[i]]);
                }
            }
            offsets.add(textOffsetInCodePoints);
            textOffsetInCodePoints += text.codePointCount(0, text.length());
        }
        return lp;
    }

    /**
     * mlx_lm.server's {@code ToolCallFormatter._format}: {@code {"function": {"name", "arguments":
     * json.dumps(arguments, ensure_ascii=False)}, "type": "function", "id": the model's id or a
     * random UUID}}, plus {@code "index"} when streaming.
     */
    private void toolCalls(ArrayNode out, List<ToolCall> calls, boolean stream) {
        for (ToolCall tc : calls) {
            ObjectNode call = out.addObject();
            ObjectNode function = call.putObject("function");
            function.put("name", tc.name());
            function.put("arguments", PyJsonDumps.dumps(tc.arguments()));
            call.put("type", "function");
            call.put(
                    "id",
                    tc.id() != null && !tc.id().isEmpty()
                            ? tc.id()
                            : UUID.randomUUID().toString());
            if (stream) {
                call.put("index", toolCallIndex++);
            }
        }
    }

    private static void usage(ObjectNode o, Usage usage) {
        ObjectNode u = o.putObject("usage");
        u.put("prompt_tokens", usage.promptTokens());
        u.put("completion_tokens", usage.completionTokens());
        u.put("total_tokens", usage.totalTokens());
        u.putObject("prompt_tokens_details").put("cached_tokens", usage.cachedTokens());
        SpeculativeUsage.put(u, usage);
    }

    /** One token's log-probability and its top alternatives, copied off the sink's flyweight. */
    record LogprobEntry(int token, float logprob, int[] topIds, float[] topLogprobs) {
        void writeTo(ArrayNode content, IntFunction<String> tokenText) {
            ObjectNode e = content.addObject();
            e.put("id", token);
            e.put("token", tokenText.apply(token));
            e.put("logprob", logprob);
            ArrayNode top = e.putArray("top_logprobs");
            for (int i = 0; i < topIds.length; i++) {
                ObjectNode t = top.addObject();
                t.put("id", topIds[i]);
                t.put("token", tokenText.apply(topIds[i]));
                t.put("logprob", topLogprobs[i]);
            }
        }
    }
}
