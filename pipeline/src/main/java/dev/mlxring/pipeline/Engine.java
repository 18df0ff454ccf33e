package dev.mlxring.pipeline;

import com.lmax.disruptor.BatchEventProcessor;
import com.lmax.disruptor.BatchEventProcessorBuilder;
import com.lmax.disruptor.EventPoller;
import com.lmax.disruptor.InsufficientCapacityException;
import com.lmax.disruptor.RingBuffer;
import com.lmax.disruptor.Sequence;
import com.lmax.disruptor.SequenceBarrier;
import java.util.ArrayList;
import java.util.List;
import java.util.Objects;
import java.util.Set;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.atomic.AtomicBoolean;
import java.util.concurrent.atomic.AtomicInteger;
import java.util.concurrent.atomic.AtomicLong;

/**
 * The in-process engine: the stage pipeline as two Disruptor rings and explicit threads.
 *
 * <pre>
 * submit ──▶ [request ring] ──▶ prep × N (sharded by sequence) ──▶ plan ──▶ exec (EventPoller)
 *                                                                         │
 *            listener ◀── sink ◀── [token ring] ◀────────────────────────┘
 * </pre>
 *
 * Threads: {@code mlxring-prep-i}, {@code mlxring-plan}, {@code mlxring-exec} (the only MLX
 * thread), {@code mlxring-sink}. {@link #submit} never blocks: a full request ring throws
 * {@link OverloadedException} at once. Every accepted session ends in exactly one outcome, also
 * across {@link #close()}.
 */
public final class Engine implements AutoCloseable {
    private final EngineConfig config;
    private final Preparer preparer;
    private final Executor executor;
    private final RingBuffer<RequestEvent> requests;
    private final RingBuffer<TokenEvent> tokens;
    private final List<BatchEventProcessor<?>> processors = new ArrayList<>();
    private final List<Thread> threads = new ArrayList<>();
    private final ExecLoop execLoop;
    private final Thread execThread;
    private final AtomicInteger admitted = new AtomicInteger();
    private final AtomicLong ids = new AtomicLong();
    private final AtomicBoolean closed = new AtomicBoolean();
    /** Why {@link #abandonInFlight} gave up on the exec thread; null while it runs. */
    private volatile String abandoned;
    /** Accepted sessions not yet terminal: what operators and leak checks count (see {@link #liveSessions}). */
    private final Set<Session> live = ConcurrentHashMap.newKeySet();

    private Engine(EngineConfig config, Preparer preparer, Planner planner, Executor executor, TextSink.Factory sinks) {
        this.config = config;
        this.preparer = preparer;
        this.executor = executor;
        this.requests = RingBuffer.createMultiProducer(
                RequestEvent::new, config.requestRingSize(), config.waitMode().strategy());
        // Two producers: exec (tokens, terminals) and plan (terminals of sessions that failed early).
        this.tokens = RingBuffer.createMultiProducer(
                () -> new TokenEvent(config.maxTopLogprobs()),
                config.tokenRingSize(),
                config.waitMode().strategy());

        SequenceBarrier fromIngress = requests.newBarrier();
        Sequence[] prepSequences = new Sequence[config.prepShards()];
        for (int i = 0; i < config.prepShards(); i++) {
            var p = new BatchEventProcessorBuilder()
                    .build(requests, fromIngress, new PrepHandler(preparer, i, config.prepShards()));
            p.setExceptionHandler(new StageExceptionHandler<>("prep-" + i, PrepHandler::failEvent));
            prepSequences[i] = p.getSequence();
            start(p, "mlxring-prep-" + i);
        }
        EventPoller<RequestEvent> poller;
        ExecLoop[] loopRef = new ExecLoop[1];
        var planHandler = new PlanHandler(
                planner, admitted, config.maxQueued(), config.maxTopLogprobs(), () -> loopRef[0].wake(), tokens);
        var plan = new BatchEventProcessorBuilder().build(requests, requests.newBarrier(prepSequences), planHandler);
        plan.setExceptionHandler(new StageExceptionHandler<>("plan", planHandler::failEvent));
        poller = requests.newPoller(plan.getSequence());
        requests.addGatingSequences(poller.getSequence());
        this.execLoop = new ExecLoop(poller, tokens, executor, config);
        loopRef[0] = execLoop;
        start(plan, "mlxring-plan");

        var sinkHandler = new SinkHandler(sinks, config.maxTopLogprobs(), admitted);
        var sink = new BatchEventProcessorBuilder().build(tokens, tokens.newBarrier(), sinkHandler);
        sink.setExceptionHandler(new StageExceptionHandler<>("sink", sinkHandler::failEvent));
        tokens.addGatingSequences(sink.getSequence());
        start(sink, "mlxring-sink");

        execThread = new Thread(execLoop, "mlxring-exec");
        execThread.start();
    }

    private void start(BatchEventProcessor<?> p, String name) {
        processors.add(p);
        Thread t = new Thread(p, name);
        t.setDaemon(true);
        threads.add(t);
        t.start();
    }

    public static Builder builder() {
        return new Builder();
    }

    public EngineConfig config() {
        return config;
    }

    /**
     * Accepts a request: the session starts in CREATED and moves through the stages; output goes
     * to {@code listener} on the sink thread.
     *
     * @throws OverloadedException when the request ring is full (HTTP 429)
     * @throws EngineUnavailableException after {@link #close()}, or when a stage thread is gone
     *     (see {@link #health()})
     */
    public Session submit(GenerationRequest request, GenerationListener listener) {
        return submit(request, null, listener);
    }

    /**
     * As {@link #submit(GenerationRequest, GenerationListener)}, with the request's prompt already
     * prepared by {@link #prepare} (for instance to count its tokens for admission): prep hands
     * {@code prepared} on instead of rendering and tokenizing the prompt again.
     *
     * @param prepared what {@link #prepare} returned for this very request; null: prep prepares it
     */
    public Session submit(GenerationRequest request, PreparedPrompt prepared, GenerationListener listener) {
        Objects.requireNonNull(request, "request");
        Objects.requireNonNull(listener, "listener");
        EngineHealth health = health();
        if (!health.ready()) {
            throw new EngineUnavailableException(health.reason());
        }
        String id = request.id() != null ? request.id() : "req-" + ids.incrementAndGet();
        Session session = new Session(id, request, listener, config.creditsPerSession(), execLoop::wake);
        // Published with the ring slot below: prep's thread sees it.
        session.prepared = prepared;
        long seq;
        try {
            seq = requests.tryNext();
        } catch (InsufficientCapacityException e) {
            throw new OverloadedException("request queue is full (" + config.requestRingSize() + " pending)");
        }
        requests.get(seq).session = session;
        live.add(session);
        // Every accepted session settles exactly once (also across close), so this always runs.
        session.result().whenComplete((outcome, error) -> live.remove(session));
        requests.publish(seq);
        return session;
    }

    /**
     * Runs prep alone on the calling thread (the same chat-template rendering and tokenization a
     * submitted request gets) without generating: token counting ({@code count_tokens}). The
     * preparer is thread-safe; the caller should not be an IO thread for long prompts.
     *
     * @throws RequestException as prep would fail the request
     * @throws EngineUnavailableException once the engine is closed (its tokenizer may be freed)
     */
    public PreparedPrompt prepare(GenerationRequest request) throws RequestException {
        Objects.requireNonNull(request, "request");
        if (closed.get()) {
            throw new EngineUnavailableException("the engine is closed");
        }
        return preparer.prepare(request);
    }

    /**
     * Ready when the engine is open and every stage thread runs. A stage survives any request's
     * failure (each has an exception handler that fails only that request), so not ready means a
     * failure outside every request, or shutdown.
     */
    public EngineHealth health() {
        if (closed.get()) {
            return EngineHealth.notReady("the engine is shutting down");
        }
        String gaveUp = abandoned;
        if (gaveUp != null) {
            return EngineHealth.notReady("the exec stage is blocked: " + gaveUp);
        }
        Throwable execFailure = execLoop.fatal();
        if (execFailure != null || !execThread.isAlive()) {
            return EngineHealth.notReady(
                    "the exec stage is not running" + (execFailure != null ? ": " + execFailure : ""));
        }
        for (Thread t : threads) {
            if (!t.isAlive()) {
                return EngineHealth.notReady("stage thread " + t.getName() + " is not running");
            }
        }
        String executorDown = executor.unavailableReason();
        if (executorDown != null) {
            return EngineHealth.notReady(executorDown);
        }
        return EngineHealth.READY;
    }

    /**
     * What the exec thread is doing now: the kind of unit it is inside, over how many rows, and
     * for how long ({@link ExecActivity.Snapshot#IDLE} between units). A unit whose age keeps
     * growing is a stall (a huge prefill chunk, a blocked collective). Any thread.
     */
    public ExecActivity.Snapshot execActivity() {
        return execLoop.activity().snapshot();
    }

    /**
     * Fails every accepted session that has not settled yet, from any thread: for an exec thread
     * blocked in native code it cannot return from (a collective waiting on a lost rank of a
     * tensor-parallel group). Each session's terminal event goes through the token ring as exec's
     * would, so it still settles once, on the sink thread, after the spans already published;
     * anything exec publishes for it later is dropped there. Health reports {@code reason} from
     * then on, so no new work is accepted. Idempotent (the first reason stays).
     */
    public void abandonInFlight(String reason) {
        execWedged = true;
        abandonInFlight(Outcome.failed(Outcome.ErrorType.INTERNAL, reason, Usage.NONE), reason);
    }

    /** Set by {@link #abandonInFlight(String)}: exec may never return, so close does not wait on it for ever. */
    private volatile boolean execWedged;

    private void abandonInFlight(Outcome outcome, String reason) {
        synchronized (this) {
            if (abandoned != null) {
                return;
            }
            abandoned = reason;
        }
        long deadline = System.nanoTime() + 5_000_000_000L;
        for (Session s : List.copyOf(live)) {
            if (s.state().isTerminal()) {
                continue;
            }
            while (true) {
                try {
                    long seq = tokens.tryNext();
                    TokenEvent e = tokens.get(seq);
                    e.session = s;
                    e.kind = TokenEvent.TERMINAL;
                    e.outcome = outcome;
                    tokens.publish(seq);
                    break;
                } catch (InsufficientCapacityException full) {
                    if (System.nanoTime() > deadline) {
                        return;
                    }
                    Thread.onSpinWait();
                }
            }
        }
    }

    /** Sessions admitted by plan and not yet terminal. */
    public int admittedCount() {
        return admitted.get();
    }

    /**
     * Accepted sessions that have not reached their terminal outcome yet (queued, running or
     * settling). Zero when idle: a session, its credits and its run (with its KV cache) are all
     * released by then. Any thread; a snapshot.
     */
    public int liveSessions() {
        return live.size();
    }

    /** Live sessions in {@code state} right now (e.g. RUNNING = rows on the exec thread). Any thread; O(live). */
    public int sessionsIn(Lifecycle state) {
        int n = 0;
        for (Session s : live) {
            if (s.state() == state) {
                n++;
            }
        }
        return n;
    }

    /** Whether {@link #close()} has begun: no new work is accepted. */
    public boolean isClosed() {
        return closed.get();
    }

    /**
     * Stops accepting work, ends every queued and running session as cancelled (each still
     * settles once), releases the executor on the exec thread and joins the stage threads.
     *
     * <p>Exec stops at its next safe point, which can be a whole prefill chunk away (tens of
     * seconds for a long prompt on a slow CPU): after {@link #EXEC_SETTLE_WAIT_NS} without it, the
     * sessions still open are settled as cancelled at once, through the sink, so hosts waiting on
     * them go on; close itself keeps waiting for exec, which owns the model's native memory and
     * releases it on its way out, before it returns (unless {@link #abandonInFlight(String)} said
     * exec is blocked where it cannot return: then close stops waiting after that same time).
     * Called on one of the engine's own threads (a listener callback), close cannot wait for that
     * thread: it starts on a thread of its own and returns at once.
     */
    @Override
    public void close() {
        if (!closed.compareAndSet(false, true)) {
            return;
        }
        Thread me = Thread.currentThread();
        if (me == execThread || threads.contains(me)) {
            Thread closer = new Thread(this::shutDown, "mlxring-close");
            closer.setDaemon(true);
            closer.start();
            return;
        }
        shutDown();
    }

    /** How long close waits for exec's safe point before it settles the open sessions itself. */
    static final long EXEC_SETTLE_WAIT_NS = 10_000_000_000L;

    private void shutDown() {
        // Let prep/plan hand everything already published to exec before exec drains.
        long published = requests.getCursor();
        long deadline = System.nanoTime() + 5_000_000_000L;
        while (processors.get(config.prepShards()).getSequence().get() < published && System.nanoTime() < deadline) {
            Thread.onSpinWait();
        }
        execLoop.stop();
        awaitExec();
        long lastToken = tokens.getCursor();
        BatchEventProcessor<?> sink = processors.get(processors.size() - 1);
        deadline = System.nanoTime() + 5_000_000_000L;
        while (sink.getSequence().get() < lastToken && System.nanoTime() < deadline) {
            Thread.onSpinWait();
        }
        for (BatchEventProcessor<?> p : processors) {
            p.halt();
        }
        for (Thread t : threads) {
            joinQuietly(t);
        }
    }

    private void awaitExec() {
        long start = System.nanoTime();
        long settleAt = start + EXEC_SETTLE_WAIT_NS;
        boolean settled = false;
        while (true) {
            try {
                execThread.join(1_000);
            } catch (InterruptedException e) {
                Thread.currentThread().interrupt();
                return;
            }
            if (!execThread.isAlive()) {
                return;
            }
            if (execWedged && System.nanoTime() - start > EXEC_SETTLE_WAIT_NS) {
                System.getLogger(Engine.class.getName())
                        .log(
                                System.Logger.Level.WARNING,
                                "close: the exec thread is blocked where it cannot return ({0}); closing without it",
                                abandoned);
                return;
            }
            if (System.nanoTime() - settleAt >= 0) {
                if (!settled) {
                    settled = true;
                    abandonInFlight(Outcome.cancelled("engine shut down", Usage.NONE), "engine shut down");
                }
                System.getLogger(Engine.class.getName())
                        .log(
                                System.Logger.Level.WARNING,
                                "close: still waiting for the exec thread to reach a safe point ({0} s)",
                                (System.nanoTime() - start) / 1_000_000_000L);
                settleAt += EXEC_SETTLE_WAIT_NS;
            }
        }
    }

    private static void joinQuietly(Thread t) {
        try {
            t.join(10_000);
        } catch (InterruptedException e) {
            Thread.currentThread().interrupt();
        }
    }

    /** Wires the stage implementations; only the composition root knows them all. */
    public static final class Builder {
        private EngineConfig config = EngineConfig.defaults();
        private Preparer preparer;
        private Planner planner;
        private Executor executor;
        private TextSink.Factory sinks;

        public Builder config(EngineConfig c) {
            this.config = c;
            return this;
        }

        public Builder preparer(Preparer p) {
            this.preparer = p;
            return this;
        }

        public Builder planner(Planner p) {
            this.planner = p;
            return this;
        }

        public Builder executor(Executor e) {
            this.executor = e;
            return this;
        }

        public Builder sinks(TextSink.Factory f) {
            this.sinks = f;
            return this;
        }

        public Engine start() {
            return new Engine(
                    config,
                    Objects.requireNonNull(preparer, "preparer"),
                    Objects.requireNonNull(planner, "planner"),
                    Objects.requireNonNull(executor, "executor"),
                    Objects.requireNonNull(sinks, "sinks"));
        }
    }
}
