package dev.mlxring.pipeline;

import com.lmax.disruptor.InsufficientCapacityException;
import com.lmax.disruptor.RingBuffer;

/**
 * Exec's side of the token ring: non-blocking publication of committed tokens and terminal
 * events. Exec never waits on the sink; a full ring is reported ({@link #ringFull()}) and the
 * caller retries at its next safe point.
 *
 * <p>Exec thread only. Exec is the ring's single producer, so capacity seen by
 * {@link #hasRoom} can only grow until exec itself claims a slot.
 */
final class TokenPublisher {
    private final RingBuffer<TokenEvent> tokens;
    /** Alternatives an event holds (every event of the ring alike). */
    private final int topCapacity;
    /** A claim or a room check found the ring full since the last {@link #resetRingFull()}. */
    private boolean ringFull;

    TokenPublisher(RingBuffer<TokenEvent> tokens) {
        this.tokens = tokens;
        this.topCapacity = tokens.get(0).topIds.length;
    }

    boolean ringFull() {
        return ringFull;
    }

    void resetRingFull() {
        ringFull = false;
    }

    /** Whether {@code events} slots are free now (then the next {@code events} publications succeed). */
    boolean hasRoom(int events) {
        if (tokens.remainingCapacity() >= events) {
            return true;
        }
        ringFull = true;
        return false;
    }

    /** Claims a token-ring slot without blocking; -1 when the ring is full. */
    private long tryClaim() {
        try {
            return tokens.tryNext();
        } catch (InsufficientCapacityException e) {
            ringFull = true;
            return -1;
        }
    }

    /**
     * Publishes the session's terminal event; first closes its plan's token constraint when the
     * executor never took it over. False (nothing done) when the ring is full.
     */
    boolean publishTerminal(Session s, Outcome outcome) {
        long seq = tryClaim();
        if (seq < 0) {
            return false;
        }
        s.closeUnclaimedConstraint();
        TokenEvent e = tokens.get(seq);
        e.session = s;
        e.kind = TokenEvent.TERMINAL;
        e.outcome = outcome;
        tokens.publish(seq);
        return true;
    }

    /**
     * Throws before claiming a slot when the token does not fit an event: a claimed slot must be
     * published, or the sink waits on it forever and every session behind it with it.
     */
    boolean publishToken(Session s, StepResult r) {
        if (r.topCount > topCapacity) {
            throw new IllegalStateException(r.topCount + " top logprobs for a token ring that holds " + topCapacity);
        }
        long seq = tryClaim();
        if (seq < 0) {
            return false;
        }
        TokenEvent e = tokens.get(seq);
        e.session = s;
        e.kind = TokenEvent.TOKEN;
        e.token = r.token;
        e.logprob = r.logprob;
        e.topCount = r.topCount;
        System.arraycopy(r.topIds, 0, e.topIds, 0, r.topCount);
        System.arraycopy(r.topLogprobs, 0, e.topLogprobs, 0, r.topCount);
        e.publishedNs = System.nanoTime();
        s.stamp(Session.Stage.FIRST_TOKEN, e.publishedNs);
        tokens.publish(seq);
        return true;
    }
}
