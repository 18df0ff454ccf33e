package dev.mlxring.ingress.http.responses;

import com.fasterxml.jackson.databind.ObjectMapper;
import com.fasterxml.jackson.databind.node.ArrayNode;
import com.fasterxml.jackson.databind.node.ObjectNode;
import dev.mlxring.ingress.http.ApiError;
import dev.mlxring.ingress.http.ChatTools;
import dev.mlxring.ingress.http.ExchangeWriter;
import dev.mlxring.ingress.http.OutputSegments;
import dev.mlxring.ingress.http.SpeculativeUsage;
import dev.mlxring.pipeline.ChatMessage;
import dev.mlxring.pipeline.CommittedSpan;
import dev.mlxring.pipeline.GenerationListener;
import dev.mlxring.pipeline.Lifecycle;
import dev.mlxring.pipeline.Outcome;
import dev.mlxring.pipeline.Session;
import dev.mlxring.pipeline.ToolCall;
import dev.mlxring.pipeline.Usage;
import dev.mlxring.pycompat.PyJsonDumps;
import java.util.ArrayList;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.UUID;

/**
 * Delivers one session as an OpenAI response. The sink's spans become output items through
 * {@link OutputSegments} ({@code reasoning}, {@code message} with one {@code output_text},
 * {@code function_call}); non-streaming they are answered as one response object; streaming as
 * Responses' typed events, each with its {@code sequence_number}, a span's events written
 * together and its credit returned when that write completes. {@code response.created} goes out
 * with the first span, so a request that fails before any output answers with its HTTP status.
 * A stored response keeps its conversation for {@code previous_response_id}.
 *
 * <p>Threads: callbacks on the sink thread; the {@link ExchangeWriter} handles the IO side.
 */
final class ResponsesResponder implements GenerationListener, OutputSegments.Events {
    private static final ObjectMapper JSON = new ObjectMapper();

    private final ExchangeWriter out;
    private final ResponsesRequest req;
    private final ResponseStore store;
    private final String id;
    private final long createdAt = System.currentTimeMillis() / 1000;
    private final OutputSegments segments = new OutputSegments();
    private final ArrayNode output = JSON.createArrayNode();
    private final StringBuilder events = new StringBuilder();
    private int sequence;
    private boolean started;

    /** The open reasoning or message item. */
    private String itemId;

    private final StringBuilder itemText = new StringBuilder();
    /** An output item's status when it closes: "incomplete" for the last one of a cut response. */
    private String closingStatus = "completed";

    // The conversation's assistant turn.
    private final StringBuilder allText = new StringBuilder();
    private final StringBuilder allReasoning = new StringBuilder();
    private final List<Map<String, Object>> calls = new ArrayList<>();
    private int reasoningTokens;

    ResponsesResponder(ExchangeWriter out, ResponsesRequest req, ResponseStore store, String id) {
        this.out = out;
        this.req = req;
        this.store = store;
        this.id = id;
    }

    @Override
    public boolean autoRelease() {
        return !req.stream();
    }

    @Override
    public void onCommitted(Session s, CommittedSpan span) {
        out.attach(s);
        start();
        if (span.tokenId >= 0) {
            out.tokenCommitted();
            if (span.reasoning.length() > 0) {
                reasoningTokens++;
            }
        }
        segments.accept(span, this);
        int credits = span.tokenId >= 0 ? 1 : 0;
        if (!req.stream() || events.isEmpty()) {
            out.release(req.stream() ? credits : 0);
            return;
        }
        out.event(events.toString(), credits);
        events.setLength(0);
    }

    @Override
    public void onComplete(Session s, Outcome outcome) {
        out.attach(s);
        out.account(outcome);
        if (outcome.state() == Lifecycle.FAILED && !(req.stream() && started)) {
            out.error(out.failure(outcome), "");
            return;
        }
        if (outcome.state() == Lifecycle.CANCELLED && !req.stream()) {
            out.error(new ApiError(499, "cancelled", outcome.message(), null, null), "");
            return;
        }
        start();
        // The item open when generation ends is cut short unless it ended of its own accord.
        closingStatus = outcome.state() == Lifecycle.COMPLETED && !"length".equals(outcome.finishReason())
                ? "completed"
                : "incomplete";
        segments.finish(this);
        String status;
        String event;
        ObjectNode r;
        if (outcome.state() == Lifecycle.COMPLETED) {
            boolean cut = "length".equals(outcome.finishReason());
            status = cut ? "incomplete" : "completed";
            event = cut ? "response.incomplete" : "response.completed";
            r = response(status, outcome.usage());
            r.put("completed_at", System.currentTimeMillis() / 1000);
            if (cut) {
                r.putObject("incomplete_details").put("reason", "max_output_tokens");
            }
            if (req.store()) {
                store.put(id, new ResponseStore.Stored(r.deepCopy(), conversation()));
            }
        } else {
            status = outcome.state() == Lifecycle.FAILED ? "failed" : "cancelled";
            event = "response.failed";
            r = response(status, outcome.usage());
            ObjectNode error = r.putObject("error");
            error.put("code", outcome.state() == Lifecycle.FAILED ? "server_error" : "cancelled");
            error.put("message", outcome.message());
        }
        if (!req.stream()) {
            out.json(200, r.toString());
            return;
        }
        ObjectNode e = JSON.createObjectNode();
        e.set("response", r);
        emit(event, e);
        out.end(events.toString());
        events.setLength(0);
    }

    /** The conversation this response ends: what it continued, then its output as one assistant turn. */
    private List<ChatMessage> conversation() {
        List<ChatMessage> c = new ArrayList<>(req.conversation());
        Map<String, Object> extra = new LinkedHashMap<>();
        if (!allReasoning.isEmpty()) {
            extra.put("reasoning_content", allReasoning.toString());
        }
        if (!calls.isEmpty()) {
            extra.put("tool_calls", List.copyOf(calls));
        }
        c.add(new ChatMessage("assistant", allText.toString(), extra));
        return c;
    }

    private ObjectNode response(String status, Usage usage) {
        ObjectNode r = JSON.createObjectNode();
        r.put("id", id);
        r.put("object", "response");
        r.put("created_at", createdAt);
        r.put("status", status);
        r.putNull("error");
        r.putNull("incomplete_details");
        r.put("model", req.model());
        r.set("output", output.deepCopy());
        r.putNull("reasoning");
        r.setAll(req.echo());
        if (usage == null) {
            r.putNull("usage");
        } else {
            ObjectNode u = r.putObject("usage");
            u.put("input_tokens", usage.promptTokens());
            ObjectNode in = u.putObject("input_tokens_details");
            in.put("cached_tokens", usage.cachedTokens());
            in.put("cache_write_tokens", 0);
            u.put("output_tokens", usage.completionTokens());
            u.putObject("output_tokens_details").put("reasoning_tokens", reasoningTokens);
            u.put("total_tokens", usage.totalTokens());
            SpeculativeUsage.put(u, usage);
        }
        return r;
    }

    private void start() {
        if (started) {
            return;
        }
        started = true;
        if (!req.stream()) {
            return;
        }
        out.startEventStream();
        ObjectNode created = JSON.createObjectNode();
        created.set("response", response("in_progress", null));
        emit("response.created", created);
        ObjectNode progress = JSON.createObjectNode();
        progress.set("response", response("in_progress", null));
        emit("response.in_progress", progress);
    }

    private void emit(String type, ObjectNode fields) {
        ObjectNode e = JSON.createObjectNode();
        e.put("type", type);
        e.setAll(fields);
        e.put("sequence_number", sequence++);
        events.append("event: ").append(type).append("\ndata: ").append(e).append("\n\n");
    }

    private ObjectNode at(int outputIndex) {
        ObjectNode e = JSON.createObjectNode();
        e.put("item_id", itemId);
        e.put("output_index", outputIndex);
        return e;
    }

    private static String newId(String prefix) {
        return prefix + UUID.randomUUID().toString().replace("-", "");
    }

    private ObjectNode item(OutputSegments.Kind kind, String status, String text) {
        ObjectNode item = JSON.createObjectNode();
        item.put("id", itemId);
        if (kind == OutputSegments.Kind.REASONING) {
            item.put("type", "reasoning");
            item.putArray("summary");
            ArrayNode content = item.putArray("content");
            if (text != null) {
                content.add(part(kind, text));
            }
        } else {
            item.put("type", "message");
            item.put("role", "assistant");
            ArrayNode content = item.putArray("content");
            if (text != null) {
                content.add(part(kind, text));
            }
        }
        item.put("status", status);
        return item;
    }

    private static ObjectNode part(OutputSegments.Kind kind, String text) {
        ObjectNode p = JSON.createObjectNode();
        if (kind == OutputSegments.Kind.REASONING) {
            p.put("type", "reasoning_text");
            p.put("text", text);
        } else {
            p.put("type", "output_text");
            p.put("text", text);
            p.putArray("annotations");
            p.putArray("logprobs");
        }
        return p;
    }

    @Override
    public void open(OutputSegments.Kind kind) {
        itemId = newId(kind == OutputSegments.Kind.REASONING ? "rs_" : "msg_");
        itemText.setLength(0);
        if (!req.stream()) {
            return;
        }
        int index = output.size();
        ObjectNode added = JSON.createObjectNode();
        added.put("output_index", index);
        added.set("item", item(kind, "in_progress", null));
        emit("response.output_item.added", added);
        ObjectNode part = at(index);
        part.put("content_index", 0);
        part.set("part", part(kind, ""));
        emit("response.content_part.added", part);
    }

    @Override
    public void delta(OutputSegments.Kind kind, CharSequence text) {
        itemText.append(text);
        (kind == OutputSegments.Kind.REASONING ? allReasoning : allText).append(text);
        if (!req.stream()) {
            return;
        }
        ObjectNode d = at(output.size());
        d.put("content_index", 0);
        d.put("delta", text.toString());
        if (kind == OutputSegments.Kind.TEXT) {
            d.putArray("logprobs");
        }
        emit(kind == OutputSegments.Kind.REASONING ? "response.reasoning_text.delta" : "response.output_text.delta", d);
    }

    @Override
    public void close(OutputSegments.Kind kind) {
        int index = output.size();
        String text = itemText.toString();
        ObjectNode item = item(kind, closingStatus, text);
        if (req.stream()) {
            ObjectNode done = at(index);
            done.put("content_index", 0);
            done.put("text", text);
            if (kind == OutputSegments.Kind.TEXT) {
                done.putArray("logprobs");
            }
            emit(
                    kind == OutputSegments.Kind.REASONING
                            ? "response.reasoning_text.done"
                            : "response.output_text.done",
                    done);
            ObjectNode partDone = at(index);
            partDone.put("content_index", 0);
            partDone.set("part", part(kind, text));
            emit("response.content_part.done", partDone);
            itemDone(index, item);
        }
        output.add(item);
    }

    private void itemDone(int index, ObjectNode item) {
        ObjectNode done = JSON.createObjectNode();
        done.put("output_index", index);
        done.set("item", item);
        emit("response.output_item.done", done);
    }

    @Override
    public void toolCall(ToolCall call) {
        itemId = newId("fc_");
        String callId = call.id() != null && !call.id().isEmpty() ? call.id() : newId("call_");
        String arguments = PyJsonDumps.dumps(call.arguments());
        calls.add(ChatTools.call(callId, call.name(), call.arguments()));
        int index = output.size();
        ObjectNode item = JSON.createObjectNode();
        item.put("id", itemId);
        item.put("type", "function_call");
        item.put("call_id", callId);
        item.put("name", call.name());
        item.put("arguments", arguments);
        item.put("status", "completed");
        if (req.stream()) {
            ObjectNode added = JSON.createObjectNode();
            added.put("output_index", index);
            ObjectNode open = item.deepCopy();
            open.put("arguments", "");
            open.put("status", "in_progress");
            added.set("item", open);
            emit("response.output_item.added", added);
            ObjectNode delta = at(index);
            delta.put("delta", arguments);
            emit("response.function_call_arguments.delta", delta);
            ObjectNode done = at(index);
            done.put("name", call.name());
            done.put("arguments", arguments);
            emit("response.function_call_arguments.done", done);
            itemDone(index, item);
        }
        output.add(item);
    }
}
