package dev.mlxring.ingress.http;

import dev.mlxring.pipeline.CommittedSpan;
import dev.mlxring.pipeline.ToolCall;

/**
 * Turns the sink's committed spans into the ordered output blocks that the Anthropic and
 * Responses codecs frame: runs of reasoning, runs of text, and tool calls between them. A block
 * opens at its first non-empty piece and closes when another kind starts or the output ends, so
 * both codecs see the same block boundaries for the same spans. One instance per session, sink
 * thread only.
 */
public final class OutputSegments {
    /** A block of streamed text: the model's reasoning or its answer. */
    public enum Kind {
        REASONING,
        TEXT
    }

    /** Receives the blocks in output order. */
    public interface Events {
        void open(Kind kind);

        void delta(Kind kind, CharSequence text);

        void close(Kind kind);

        /** A complete tool call; no text block is open around it. */
        void toolCall(ToolCall call);
    }

    private Kind open;

    /** Feeds one span: its reasoning, then its text, then the tool calls it completed. */
    public void accept(CommittedSpan span, Events events) {
        if (span.reasoning.length() > 0) {
            switchTo(Kind.REASONING, events);
            events.delta(Kind.REASONING, span.reasoning);
        }
        if (span.text.length() > 0) {
            switchTo(Kind.TEXT, events);
            events.delta(Kind.TEXT, span.text);
        }
        for (ToolCall call : span.toolCalls) {
            finish(events);
            events.toolCall(call);
        }
    }

    /** Closes the open block, if any. */
    public void finish(Events events) {
        if (open != null) {
            Kind k = open;
            open = null;
            events.close(k);
        }
    }

    private void switchTo(Kind kind, Events events) {
        if (open != kind) {
            finish(events);
            open = kind;
            events.open(kind);
        }
    }
}
