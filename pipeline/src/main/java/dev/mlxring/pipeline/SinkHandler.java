package dev.mlxring.pipeline;

import com.lmax.disruptor.EventHandler;
import java.util.concurrent.atomic.AtomicInteger;

/**
 * The sink stage (one thread): committed tokens become text through each session's
 * {@link TextSink} and reach its listener; the terminal event settles the session after its last
 * span. A listener that throws fails only its own session.
 */
final class SinkHandler implements EventHandler<TokenEvent> {
    private final TextSink.Factory sinks;
    private final CommittedSpan span;
    private final AtomicInteger admitted;

    SinkHandler(TextSink.Factory sinks, int maxTopLogprobs, AtomicInteger admitted) {
        this.sinks = sinks;
        this.span = new CommittedSpan(maxTopLogprobs);
        this.admitted = admitted;
    }

    @Override
    public void onEvent(TokenEvent e, long sequence, boolean endOfBatch) {
        Session s = e.session;
        e.session = null;
        if (e.kind == TokenEvent.TOKEN) {
            onToken(s, e);
        } else {
            Outcome outcome = e.outcome;
            e.outcome = null;
            onTerminal(s, outcome);
        }
    }

    private void onToken(Session s, TokenEvent e) {
        if (s.sinkStopped) {
            s.release(1);
            return;
        }
        if (s.textSink == null) {
            s.textSink = sinks.open(s.plan);
        }
        span.clear();
        span.sequence = s.spanSequence++;
        span.tokenId = e.token;
        span.logprob = e.logprob;
        span.topCount = e.topCount;
        System.arraycopy(e.topIds, 0, span.topIds, 0, e.topCount);
        System.arraycopy(e.topLogprobs, 0, span.topLogprobs, 0, e.topCount);
        s.deliveredTokens++;
        try {
            if (s.textSink.onToken(e.token, span)) {
                s.sinkStopped = true;
                s.requestStop();
            }
            s.listener().onCommitted(s, span);
        } catch (RuntimeException ex) {
            s.sinkStopped = true;
            s.listenerFailure = "listener failed: " + ex;
            s.cancel(s.listenerFailure);
        } finally {
            if (s.listener().autoRelease()) {
                s.release(1);
            }
        }
    }

    private void onTerminal(Session s, Outcome outcome) {
        if (s.listenerFailure != null) {
            // The consumer lost output: whatever exec finished with, the session did not complete.
            outcome = Outcome.cancelled(s.listenerFailure, outcome.usage());
        } else if (outcome.state() == Lifecycle.COMPLETED && s.isStopRequested()) {
            outcome = Outcome.completed("stop", outcome.usage());
        }
        if (s.textSink != null && outcome.state() == Lifecycle.COMPLETED) {
            // Also after a stop-string match (finish reason "stop"): the sink may still parse an
            // open tool call and turn the reason into "tool_calls".
            span.clear();
            span.sequence = s.spanSequence++;
            String reason = outcome.finishReason();
            boolean sinkFailed = false;
            try {
                String r = s.textSink.finish(reason, span);
                reason = r != null ? r : reason;
            } catch (RuntimeException ex) {
                sinkFailed = true;
                outcome = Outcome.failed(Outcome.ErrorType.INTERNAL, "text sink failed: " + ex, outcome.usage());
            }
            if (!sinkFailed) {
                String stop = s.textSink.matchedStop();
                if (!reason.equals(outcome.finishReason()) || stop != null) {
                    outcome = Outcome.completed(reason, outcome.usage(), stop);
                }
                if (span.text.length() > 0 || span.reasoning.length() > 0 || !span.toolCalls.isEmpty()) {
                    try {
                        s.listener().onCommitted(s, span);
                    } catch (RuntimeException ignored) {
                        // the session is ending either way; onComplete below still runs
                    }
                }
            }
        }
        s.advanceTo(Lifecycle.SETTLING);
        if (s.plan != null) {
            admitted.decrementAndGet();
        }
        s.settle(outcome);
        try {
            s.listener().onComplete(s, outcome);
        } catch (RuntimeException ignored) {
            // a failing listener must not take the sink thread down
        }
    }
}
