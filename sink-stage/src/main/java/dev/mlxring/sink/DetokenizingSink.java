package dev.mlxring.sink;

import dev.mlxring.pipeline.CommittedSpan;
import dev.mlxring.pipeline.Outcome.ErrorType;
import dev.mlxring.pipeline.TextSink;
import dev.mlxring.pipeline.TextSinkFailure;
import dev.mlxring.pipeline.ToolCall;
import dev.mlxring.sink.tools.ToolCallParser;
import java.util.List;
import java.util.Map;

/**
 * One session's text: detokenizer segment per token, then token-level stop sequences, then the
 * text rules (reasoning, tool calls, markers, stop strings). Tool-call text is parsed when the
 * output leaves the tool state and, for a call still open, at the end (mlx_lm.server's {@code
 * handle_completion}). Sink thread only; no allocation per token beyond the growth of reused
 * buffers (parsing a tool call allocates).
 */
final class DetokenizingSink implements TextSink {
    private static final System.Logger LOG = System.getLogger(DetokenizingSink.class.getName());

    private final StreamingDetokenizer detokenizer;
    private final TextRules.Cursor text;
    private final TokenStopRules.Cursor tokenStops;
    private final boolean flushAtEos;
    private final ToolCallParser toolParser;
    private final List<Map<String, Object>> tools;
    private final boolean callsConstrained;
    /** The finish reason while {@link #finish} parses a call still open, else null. */
    private String finishing;

    private final StringBuilder segment = new StringBuilder(32);
    /** The text has ended: a stop string matched, or finish ran. */
    private boolean stopped;

    private boolean finished;
    /** mlx_lm.server's {@code made_tool_call}: the output entered and left (or ended in) a tool call. */
    private boolean madeToolCall;
    /** The stop string that ended the text, or null. */
    private String matchedStop;

    /**
     * @param rules the compiled rules; a tool state needs {@code toolParser}
     * @param toolParser parses tool-state text, or null when the rules have no tool state
     * @param tools the request's tool definitions, handed to the parser
     * @param callsConstrained whether the row's output is constrained and it has tools (a forced,
     *     strict or single-call tool choice): a call that does not parse then fails the session
     *     ({@link TextSinkFailure}) instead of being dropped with a warning
     */
    DetokenizingSink(
            StreamingDetokenizer detokenizer,
            TextRules rules,
            int initialState,
            TokenStopRules.Cursor tokenStops,
            boolean flushAtEos,
            ToolCallParser toolParser,
            List<Map<String, Object>> tools,
            boolean callsConstrained) {
        this.detokenizer = detokenizer;
        this.toolParser = toolParser;
        this.tools = tools;
        this.callsConstrained = callsConstrained;
        this.text = rules.cursor(initialState, toolParser == null ? null : this::toolCallEnded);
        this.tokenStops = tokenStops;
        this.flushAtEos = flushAtEos;
    }

    @Override
    public boolean onToken(int tokenId, CommittedSpan span) {
        if (stopped) {
            return true;
        }
        segment.setLength(0);
        detokenizer.addToken(tokenId, segment);
        if (tokenStops != null && tokenStops.advance(tokenId)) {
            matchedStop = tokenStops.matched();
            // mlx_lm.server: the response that finishes with "stop" contributes no text, and the
            // state machine's held-back text is discarded.
            text.discard();
            stopped = true;
            return true;
        }
        if (text.feed(segment, span)) {
            matchedStop = text.matchedStop();
            stopped = true;
            return true;
        }
        return false;
    }

    @Override
    public String finish(String finishReason, CommittedSpan span) {
        if (finished) {
            return finishReason;
        }
        finished = true;
        String reason = finishReason;
        if (!stopped) {
            stopped = true;
            if ("stop".equals(finishReason) && !flushAtEos) {
                // mlx_lm.server: the EOS response finishes with "stop", so its text (the
                // detokenizer's finalize flush) and the state machine's buffer are discarded.
                text.discard();
            } else {
                segment.setLength(0);
                detokenizer.finalizeTo(segment);
                if (text.feed(segment, span)) {
                    matchedStop = text.matchedStop();
                    reason = "stop";
                } else {
                    text.flush(span);
                }
            }
        }
        // mlx_lm.server after its loop: a call still open at the end is parsed as it stands.
        if (text.state() == TextRules.TOOL && !text.toolText().isEmpty()) {
            finishing = finishReason;
            toolCallEnded(text.toolText(), span);
            text.toolText().setLength(0);
        }
        return "stop".equals(reason) && madeToolCall ? "tool_calls" : reason;
    }

    @Override
    public String matchedStop() {
        return matchedStop;
    }

    /**
     * mlx_lm.server's {@code ToolCallFormatter}: a text that does not parse is dropped with a
     * warning; on a row whose calls are constrained it fails the session instead, naming {@code
     * max_tokens} when the limit cut the call off.
     */
    private void toolCallEnded(CharSequence toolText, CommittedSpan out) {
        madeToolCall = true;
        List<ToolCall> calls;
        try {
            calls = toolParser.parse(toolText.toString(), tools);
        } catch (RuntimeException e) {
            if (callsConstrained && "length".equals(finishing)) {
                throw new TextSinkFailure(
                        ErrorType.INVALID_REQUEST,
                        "max_tokens must leave room for the whole "
                                + "tool call: generation reached it inside the call the tool choice holds to its grammar; "
                                + "raise max_tokens");
            }
            if (callsConstrained) {
                throw new TextSinkFailure(
                        ErrorType.INTERNAL,
                        "the tool call the tool choice held to its grammar "
                                + "does not parse as " + toolParser.type() + " ("
                                + e.getClass().getSimpleName() + ": "
                                + e.getMessage() + ")");
            }
            LOG.log(
                    System.Logger.Level.WARNING,
                    "Failed to parse tool call ({0}: {1}) — tool text was likely" + " truncated mid-generation.",
                    e.getClass().getSimpleName(),
                    e.getMessage());
            return;
        }
        out.toolCalls.addAll(calls);
    }
}
