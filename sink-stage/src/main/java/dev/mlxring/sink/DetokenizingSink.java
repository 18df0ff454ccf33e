package dev.mlxring.sink;

import dev.mlxring.pipeline.CommittedSpan;
import dev.mlxring.pipeline.TextSink;

/**
 * One session's text: detokenizer segment per token, then token-level stop sequences, then the
 * text rules (reasoning, markers, stop strings). Sink thread only; no allocation per token beyond
 * the growth of reused buffers.
 */
final class DetokenizingSink implements TextSink {
    private final StreamingDetokenizer detokenizer;
    private final TextRules.Cursor text;
    private final TokenStopRules.Cursor tokenStops;
    private final boolean flushAtEos;
    private final StringBuilder segment = new StringBuilder(32);
    private boolean stopped;

    DetokenizingSink(StreamingDetokenizer detokenizer, TextRules.Cursor text, TokenStopRules.Cursor tokenStops,
            boolean flushAtEos) {
        this.detokenizer = detokenizer;
        this.text = text;
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
            // mlx_lm.server: the response that finishes with "stop" contributes no text, and the
            // state machine's held-back text is discarded.
            text.discard();
            stopped = true;
            return true;
        }
        if (text.feed(segment, span)) {
            stopped = true;
            return true;
        }
        return false;
    }

    @Override
    public boolean finish(String finishReason, CommittedSpan span) {
        if (stopped) {
            return false;
        }
        stopped = true;
        if ("stop".equals(finishReason) && !flushAtEos) {
            // mlx_lm.server: the EOS response finishes with "stop", so its text (the
            // detokenizer's finalize flush) and the state machine's buffer are discarded.
            text.discard();
            return false;
        }
        segment.setLength(0);
        detokenizer.finalizeTo(segment);
        if (text.feed(segment, span)) {
            return true;
        }
        text.flush(span);
        return false;
    }
}
