package dev.mlxring.pipeline.testing;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertSame;
import static org.junit.jupiter.api.Assertions.assertTrue;

import dev.mlxring.pipeline.CommittedSpan;
import dev.mlxring.pipeline.GenerationListener;
import dev.mlxring.pipeline.Outcome;
import dev.mlxring.pipeline.Session;
import java.util.List;
import java.util.concurrent.ConcurrentLinkedQueue;
import java.util.concurrent.CountDownLatch;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicInteger;

/**
 * A session listener that records everything it sees: the spans' text and count, the outcomes,
 * and the session's cached prompt count as the first span arrived. Called on the sink thread; the
 * test reads the records (thread-safe) and waits on {@link #done}. Subclasses may add records.
 */
public class RecordingListener implements GenerationListener {
    /** How long {@link #await} waits for the outcome. */
    public static final long AWAIT_SECONDS = 10;

    /** The text of every span, in order. */
    public final StringBuffer text = new StringBuffer();
    /** Every outcome delivered (one on every path). */
    public final ConcurrentLinkedQueue<Outcome> outcomes = new ConcurrentLinkedQueue<>();
    /** Spans delivered. */
    public final AtomicInteger spans = new AtomicInteger();
    /** Counted down by the first outcome. */
    public final CountDownLatch done = new CountDownLatch(1);
    /** The session's cachedPromptTokens() as its first span arrived (-1 before any). */
    public final AtomicInteger cachedAtFirstSpan = new AtomicInteger(-1);

    private final boolean autoRelease;

    /** @param autoRelease what {@link #autoRelease()} answers */
    public RecordingListener(boolean autoRelease) {
        this.autoRelease = autoRelease;
    }

    /** A listener whose spans the engine releases itself. */
    public RecordingListener() {
        this(true);
    }

    @Override
    public void onCommitted(Session session, CommittedSpan span) {
        cachedAtFirstSpan.compareAndSet(-1, session.cachedPromptTokens());
        spans.incrementAndGet();
        text.append(span.text);
    }

    @Override
    public void onComplete(Session session, Outcome outcome) {
        outcomes.add(outcome);
        done.countDown();
    }

    @Override
    public boolean autoRelease() {
        return autoRelease;
    }

    /** The outcomes delivered so far, in order. */
    public List<Outcome> outcomeList() {
        return List.copyOf(outcomes);
    }

    /**
     * Waits up to {@value #AWAIT_SECONDS} s for {@code s}'s outcome and asserts that this listener
     * saw it exactly once and the session is terminal.
     */
    public Outcome await(Session s) throws Exception {
        Outcome o = s.result().get(AWAIT_SECONDS, TimeUnit.SECONDS);
        assertTrue(done.await(AWAIT_SECONDS, TimeUnit.SECONDS));
        assertEquals(1, outcomeList().size(), "exactly one onComplete");
        assertSame(o, outcomeList().get(0));
        assertTrue(s.state().isTerminal());
        return o;
    }
}
