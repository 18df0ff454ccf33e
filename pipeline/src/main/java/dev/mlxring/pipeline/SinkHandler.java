package dev.mlxring.pipeline;

import com.lmax.disruptor.EventHandler;
import java.util.concurrent.atomic.AtomicInteger;

/**
 * The sink stage (one thread): committed tokens become text through each session's
 * {@link TextSink} and reach its listener; the terminal event settles the session after its last
 * span. A listener that throws cancels only its own session; a text sink that throws (or any
 * other failure while handling a session's event) fails only that session: exec is asked to stop
 * it and its terminal event settles it as FAILED ({@link TextSinkFailure}'s type, else INTERNAL). The sink thread itself never dies of a request.
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
        // The session stays attached until the event is handled, so the stage's exception
        // handler (failEvent) can still find it; the slot is not reused before we return.
        Session s = e.session;
        if (s.state().isTerminal()) {
            // Settled already (Engine.abandonInFlight gave up on exec): late events are dropped.
            e.session = null;
            e.outcome = null;
            return;
        }
        if (e.kind == TokenEvent.TOKEN) {
            onToken(s, e);
        } else {
            Outcome outcome = e.outcome;
            e.outcome = null;
            onTerminal(s, outcome);
        }
        e.session = null;
    }

    /**
     * The sink's {@link StageExceptionHandler} action: something escaped the handling of this
     * event. A token: the session fails (exec stops it, its terminal settles it). A terminal: the
     * session settles as FAILED here, once.
     */
    void failEvent(TokenEvent e, Throwable ex) {
        Session s = e.session;
        e.session = null;
        e.outcome = null;
        if (s == null) {
            return;
        }
        if (e.kind == TokenEvent.TOKEN) {
            failSink(s, ex);
        } else if (!s.state().isTerminal()) {
            settle(
                    s,
                    Outcome.failed(Outcome.ErrorType.INTERNAL, StageExceptionHandler.describe("sink", ex), Usage.NONE));
        }
    }

    /** The session's text sink failed: stop it; its terminal event reports the failure. */
    private static void failSink(Session s, Throwable ex) {
        if (s.sinkFailure == null) {
            if (ex instanceof TextSinkFailure f) {
                s.sinkFailure = f.getMessage();
                s.sinkFailureType = f.type();
            } else {
                s.sinkFailure = StageExceptionHandler.describe("text sink", ex);
            }
        }
        s.sinkStopped = true;
        s.cancel(s.sinkFailure);
    }

    private void onToken(Session s, TokenEvent e) {
        long takenNs = System.nanoTime();
        s.stamp(Session.Stage.SINK, takenNs);
        if (s.sinkStopped) {
            s.release(1);
            return;
        }
        if (s.textSink == null) {
            try {
                s.textSink = sinks.open(s.plan);
            } catch (RuntimeException | StackOverflowError ex) {
                failSink(s, ex);
                s.release(1);
                return;
            }
        }
        span.clear();
        span.sequence = s.spanSequence++;
        span.tokenId = e.token;
        span.committedNs = e.publishedNs;
        span.sinkNs = takenNs;
        span.logprob = e.logprob;
        span.topCount = e.topCount;
        System.arraycopy(e.topIds, 0, span.topIds, 0, e.topCount);
        System.arraycopy(e.topLogprobs, 0, span.topLogprobs, 0, e.topCount);
        s.deliveredTokens++;
        boolean delivered = false;
        try {
            if (s.textSink.onToken(e.token, span)) {
                s.sinkStopped = true;
                s.requestStop();
            }
        } catch (RuntimeException | StackOverflowError ex) {
            failSink(s, ex);
            s.release(1);
            return;
        }
        try {
            s.listener().onCommitted(s, span);
            delivered = true;
        } catch (RuntimeException | Error ex) {
            // An Error too (a host's assert, say): it is the listener's, not the text sink's.
            s.sinkStopped = true;
            s.listenerFailure = "listener failed: " + ex;
            s.cancel(s.listenerFailure);
        }
        if (!delivered || s.listener().autoRelease()) {
            // A listener that threw will never release this span's credit.
            s.release(1);
        }
    }

    private void onTerminal(Session s, Outcome outcome) {
        if (s.sinkFailure != null) {
            outcome = Outcome.failed(s.sinkFailureType, s.sinkFailure, outcome.usage());
        } else if (s.listenerFailure != null) {
            // The consumer lost output: whatever exec finished with, the session did not complete.
            outcome = Outcome.cancelled(s.listenerFailure, outcome.usage());
        } else if (outcome.state() == Lifecycle.COMPLETED && s.isStopRequested()) {
            // Exec ran on while the stop string was being matched here: the completion is the
            // tokens up to the match (mlx_lm.server's count), not what exec had generated.
            Usage u = outcome.usage();
            outcome = Outcome.completed(
                    "stop",
                    new Usage(
                            u.promptTokens(),
                            Math.min(u.completionTokens(), s.deliveredTokens),
                            u.cachedTokens(),
                            u.speculative()));
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
            } catch (TextSinkFailure ex) {
                sinkFailed = true;
                outcome = Outcome.failed(ex.type(), ex.getMessage(), outcome.usage());
            } catch (RuntimeException | StackOverflowError ex) {
                sinkFailed = true;
                outcome = Outcome.failed(
                        Outcome.ErrorType.INTERNAL, StageExceptionHandler.describe("text sink", ex), outcome.usage());
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
        settle(s, outcome);
    }

    /** The single terminal transition: releases the admission slot once and tells the listener. */
    private void settle(Session s, Outcome outcome) {
        s.advanceTo(Lifecycle.SETTLING);
        if (s.plan != null && !s.admissionReleased) {
            s.admissionReleased = true;
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
