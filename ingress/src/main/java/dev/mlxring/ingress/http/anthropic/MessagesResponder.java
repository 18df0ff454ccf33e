package dev.mlxring.ingress.http.anthropic;

import com.fasterxml.jackson.databind.ObjectMapper;
import com.fasterxml.jackson.databind.node.ArrayNode;
import com.fasterxml.jackson.databind.node.ObjectNode;
import dev.mlxring.ingress.http.ApiError;
import dev.mlxring.ingress.http.ExchangeWriter;
import dev.mlxring.ingress.http.OutputSegments;
import dev.mlxring.ingress.http.SpeculativeUsage;
import dev.mlxring.pipeline.CommittedSpan;
import dev.mlxring.pipeline.GenerationListener;
import dev.mlxring.pipeline.Lifecycle;
import dev.mlxring.pipeline.Outcome;
import dev.mlxring.pipeline.Session;
import dev.mlxring.pipeline.ToolCall;
import dev.mlxring.pipeline.Usage;
import dev.mlxring.pycompat.PyJsonDumps;
import java.util.UUID;

/**
 * Delivers one session as an Anthropic message. The sink's spans become content blocks through
 * {@link OutputSegments} ({@code thinking}, {@code text}, {@code tool_use}); non-streaming, they
 * are collected into one {@code message}; streaming, each span's events ({@code
 * content_block_start} / {@code _delta} / {@code _stop}) are written together and its credit
 * returns when that write completes. {@code message_start} (then a {@code ping}) goes out with
 * the first span, so a request that fails before any output still answers with its HTTP status.
 *
 * <p>Threads: callbacks on the sink thread; the {@link ExchangeWriter} handles the IO side.
 */
final class MessagesResponder implements GenerationListener, OutputSegments.Events {
    private static final ObjectMapper JSON = new ObjectMapper();

    private final ExchangeWriter out;
    private final MessagesRequest req;
    private final String id;
    private final OutputSegments segments = new OutputSegments();
    private final ArrayNode content = JSON.createArrayNode();
    /** The open text/thinking block's text (non-streaming). */
    private final StringBuilder blockText = new StringBuilder();
    /** The events of the span being handled (streaming). */
    private final StringBuilder events = new StringBuilder();

    private int index = -1;
    private Session session;

    MessagesResponder(ExchangeWriter out, MessagesRequest req, String id) {
        this.out = out;
        this.req = req;
        this.id = id;
    }

    @Override
    public boolean autoRelease() {
        return !req.stream();
    }

    @Override
    public void onCommitted(Session s, CommittedSpan span) {
        session = s;
        out.attach(s);
        if (span.tokenId >= 0) {
            out.tokenCommitted();
        }
        startStream();
        segments.accept(span, this);
        flush(span.tokenId >= 0 ? 1 : 0);
    }

    @Override
    public void onComplete(Session s, Outcome outcome) {
        session = s;
        out.attach(s);
        out.account(outcome);
        if (outcome.state() == Lifecycle.FAILED) {
            out.error(out.failure(outcome), "");
            return;
        }
        if (outcome.state() == Lifecycle.CANCELLED && !req.stream()) {
            out.error(new ApiError(499, "cancelled", outcome.message(), null, null), "");
            return;
        }
        startStream();
        segments.finish(this);
        String stopReason = stopReason(outcome);
        String stopSequence = "stop_sequence".equals(stopReason) ? outcome.stopSequence() : null;
        if (!req.stream()) {
            ObjectNode m = message(content, stopReason, stopSequence, outcome.usage());
            out.json(200, m.toString());
            return;
        }
        ObjectNode delta = JSON.createObjectNode();
        delta.put("type", "message_delta");
        ObjectNode d = delta.putObject("delta");
        d.put("stop_reason", stopReason);
        putNullable(d, "stop_sequence", stopSequence);
        usage(delta.putObject("usage"), outcome.usage());
        event("message_delta", delta);
        event("message_stop", JSON.createObjectNode().put("type", "message_stop"));
        out.end(events.toString());
        events.setLength(0);
    }

    /** The finish reason in Anthropic's words. */
    static String stopReason(Outcome outcome) {
        if (outcome.state() != Lifecycle.COMPLETED) {
            return "end_turn";
        }
        return switch (outcome.finishReason()) {
            case "length" -> "max_tokens";
            case "tool_calls" -> "tool_use";
            default -> outcome.stopSequence() != null ? "stop_sequence" : "end_turn";
        };
    }

    private ObjectNode message(ArrayNode blocks, String stopReason, String stopSequence, Usage usage) {
        ObjectNode m = JSON.createObjectNode();
        m.put("id", id);
        m.put("type", "message");
        m.put("role", "assistant");
        m.put("model", req.model());
        m.set("content", blocks);
        putNullable(m, "stop_reason", stopReason);
        putNullable(m, "stop_sequence", stopSequence);
        usage(m.putObject("usage"), usage);
        return m;
    }

    /**
     * Anthropic counts prompt tokens read from a cache apart from {@code input_tokens}, so the
     * two add up to the prompt.
     */
    private static void usage(ObjectNode u, Usage usage) {
        u.put("input_tokens", usage.promptTokens() - usage.cachedTokens());
        u.put("cache_creation_input_tokens", 0);
        u.put("cache_read_input_tokens", usage.cachedTokens());
        u.put("output_tokens", usage.completionTokens());
        SpeculativeUsage.put(u, usage);
    }

    private void startStream() {
        if (!req.stream() || out.started()) {
            return;
        }
        out.startEventStream();
        int prompt = session == null ? 0 : session.promptTokens();
        int cached = session == null ? 0 : session.cachedPromptTokens();
        ObjectNode start = JSON.createObjectNode();
        start.put("type", "message_start");
        // The same split of the prompt as message_delta's final usage (cache reads apart).
        start.set("message", message(JSON.createArrayNode(), null, null, new Usage(prompt, 0, cached)));
        event("message_start", start);
        event("ping", JSON.createObjectNode().put("type", "ping"));
    }

    private void flush(int credits) {
        if (!req.stream() || events.isEmpty()) {
            out.release(req.stream() ? credits : 0);
            return;
        }
        out.event(events.toString(), credits);
        events.setLength(0);
    }

    private void event(String name, ObjectNode data) {
        events.append("event: ").append(name).append("\ndata: ").append(data).append("\n\n");
    }

    private static void putNullable(ObjectNode o, String field, String value) {
        if (value == null) {
            o.putNull(field);
        } else {
            o.put(field, value);
        }
    }

    private static String blockType(OutputSegments.Kind kind) {
        return kind == OutputSegments.Kind.REASONING ? "thinking" : "text";
    }

    @Override
    public void open(OutputSegments.Kind kind) {
        index++;
        blockText.setLength(0);
        if (req.stream()) {
            ObjectNode e = JSON.createObjectNode();
            e.put("type", "content_block_start");
            e.put("index", index);
            e.set("content_block", block(kind, ""));
            event("content_block_start", e);
        }
    }

    @Override
    public void delta(OutputSegments.Kind kind, CharSequence text) {
        if (!req.stream()) {
            blockText.append(text);
            return;
        }
        ObjectNode e = JSON.createObjectNode();
        e.put("type", "content_block_delta");
        e.put("index", index);
        ObjectNode d = e.putObject("delta");
        if (kind == OutputSegments.Kind.REASONING) {
            d.put("type", "thinking_delta");
            d.put("thinking", text.toString());
        } else {
            d.put("type", "text_delta");
            d.put("text", text.toString());
        }
        event("content_block_delta", e);
    }

    @Override
    public void close(OutputSegments.Kind kind) {
        if (!req.stream()) {
            content.add(block(kind, blockText.toString()));
            return;
        }
        blockStop();
    }

    private void blockStop() {
        ObjectNode e = JSON.createObjectNode();
        e.put("type", "content_block_stop");
        e.put("index", index);
        event("content_block_stop", e);
    }

    private static ObjectNode block(OutputSegments.Kind kind, String text) {
        ObjectNode b = JSON.createObjectNode();
        b.put("type", blockType(kind));
        if (kind == OutputSegments.Kind.REASONING) {
            b.put("thinking", text);
            // no signature: this server's thinking is not signed, and it reads thinking back unsigned
            b.put("signature", "");
        } else {
            b.put("text", text);
        }
        return b;
    }

    @Override
    public void toolCall(ToolCall call) {
        index++;
        ObjectNode b = JSON.createObjectNode();
        b.put("type", "tool_use");
        b.put(
                "id",
                call.id() != null && !call.id().isEmpty()
                        ? call.id()
                        : "toolu_" + UUID.randomUUID().toString().replace("-", ""));
        b.put("name", call.name());
        if (!req.stream()) {
            b.set(
                    "input",
                    JSON.valueToTree(call.arguments() instanceof java.util.Map<?, ?> m ? m : java.util.Map.of()));
            content.add(b);
            return;
        }
        b.putObject("input");
        ObjectNode start = JSON.createObjectNode();
        start.put("type", "content_block_start");
        start.put("index", index);
        start.set("content_block", b);
        event("content_block_start", start);
        ObjectNode e = JSON.createObjectNode();
        e.put("type", "content_block_delta");
        e.put("index", index);
        ObjectNode d = e.putObject("delta");
        d.put("type", "input_json_delta");
        d.put(
                "partial_json",
                PyJsonDumps.dumps(call.arguments() instanceof java.util.Map<?, ?> m ? m : java.util.Map.of()));
        event("content_block_delta", e);
        blockStop();
    }
}
