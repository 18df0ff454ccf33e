package dev.mlxring.perf.pipeline;

import dev.mlxring.perf.pipeline.Probe.Samples;
import dev.mlxring.perf.pipeline.TrivialStages.Stamps;
import dev.mlxring.pipeline.CommittedSpan;
import dev.mlxring.pipeline.Engine;
import dev.mlxring.pipeline.EngineConfig;
import dev.mlxring.pipeline.GenerationListener;
import dev.mlxring.pipeline.GenerationRequest;
import dev.mlxring.pipeline.Outcome;
import dev.mlxring.pipeline.Session;
import dev.mlxring.pipeline.WaitMode;
import java.util.LinkedHashMap;
import java.util.Map;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.locks.LockSupport;
import org.openjdk.jmh.annotations.Benchmark;
import org.openjdk.jmh.annotations.BenchmarkMode;
import org.openjdk.jmh.annotations.Fork;
import org.openjdk.jmh.annotations.Level;
import org.openjdk.jmh.annotations.Measurement;
import org.openjdk.jmh.annotations.Mode;
import org.openjdk.jmh.annotations.OperationsPerInvocation;
import org.openjdk.jmh.annotations.OutputTimeUnit;
import org.openjdk.jmh.annotations.Param;
import org.openjdk.jmh.annotations.Scope;
import org.openjdk.jmh.annotations.Setup;
import org.openjdk.jmh.annotations.State;
import org.openjdk.jmh.annotations.TearDown;
import org.openjdk.jmh.annotations.Warmup;
import org.openjdk.jmh.infra.IterationParams;
import org.openjdk.jmh.runner.IterationType;

/**
 * The stage pipeline's own cost, model excluded: an {@link Engine} over {@link TrivialStages}
 * (prep returns fixed ids, plan a fixed plan, exec commits one token per {@code advance()} with no
 * work, the sink appends a constant), per {@link WaitMode}. SampleTime mode, so JMH reports
 * percentiles; run with {@code -prof gc} for allocation ({@code gc.alloc.rate.norm} is per
 * operation, and an operation is one token where the method says so).
 *
 * <ul>
 *   <li>{@link #firstSpan}: submit → request ring → prep → plan → exec poll → token ring → sink →
 *       listener, one request of one token at a time (the previous one has settled before the
 *       next submit, outside the timing). The caller either parks until the listener unparks it
 *       ({@code waiter=park}: JMH's time includes that wake-up, as a real consumer thread's would)
 *       or yield-spins ({@code waiter=yield}: on a 2-core box it competes with the stage threads
 *       for a core). {@link Stamps} split the submit → listener latency by hand-off (probe rows).
 *   <li>{@link #stream}: one session of {@value #STREAM_TOKENS} tokens with no work between
 *       them, submit to settled, per token: the pipeline's throughput (ns/token = 1 / tokens per
 *       second). {@code window=default} is {@link EngineConfig#defaults()} (512 credits per
 *       session, 4096 token-ring slots); {@code unbounded} gives the session more credits and
 *       slots than tokens, so exec never waits for the sink.
 *   <li>{@link #paced}: one session of {@value #PACED_TOKENS} tokens with a busy pause of
 *       {@code paceUs} before each (a stand-in for the forward pass, occupying the exec thread as
 *       real decoding does): per token, JMH's time minus the pace is the exec loop's own cost, and
 *       the probe rows are each token's latency from its commit on the exec thread to the listener
 *       on the sink thread, and the time the exec thread spent outside {@code advance()} between
 *       two tokens (publishing to the token ring, waking the sink, the safe-point checks).
 * </ul>
 */
@BenchmarkMode(Mode.SampleTime)
@OutputTimeUnit(TimeUnit.NANOSECONDS)
@Warmup(iterations = 3, time = 2)
@Measurement(iterations = 5, time = 2)
@Fork(
        value = 1,
        jvmArgs = {
            "--enable-native-access=ALL-UNNAMED",
            "--sun-misc-unsafe-memory-access=allow",
            "--add-exports=java.base/jdk.internal.misc=ALL-UNNAMED",
            "-Xms1g",
            "-Xmx1g"
        })
public class PipelineBenchmark {
    public static final int STREAM_TOKENS = 4096;
    public static final int PACED_TOKENS = 256;

    /**
     * What every benchmark's state holds: an {@link Engine} over {@link TrivialStages} per
     * {@link WaitMode}, the one request it serves, the listener, and the {@link Probe}, which
     * reports its rows at the end of the trial before the engine closes.
     */
    @State(Scope.Benchmark)
    public abstract static class EngineState implements GenerationListener {
        @Param({"BLOCKING", "YIELDING"})
        public WaitMode waitMode;

        Engine engine;
        final GenerationRequest request = TrivialStages.request();
        Probe probe;

        @Override
        public void onComplete(Session session, Outcome outcome) {}

        /** What the probe counts ({@code requests}, {@code tokens}) and its latency rows. */
        abstract void report();

        @TearDown(Level.Trial)
        public void stop() {
            report(); // before close: the stage threads' counters die with them
            engine.close();
        }
    }

    /** One request of one token at a time; records the per-stage stamps of each. */
    public static class FirstSpanState extends EngineState {
        /** How the caller waits for the first span: parked (unparked by the listener) or yield-spinning. */
        @Param({"park", "yield"})
        public String waiter;

        @Param({"2"})
        public int prepShards;

        final Stamps stamps = new Stamps();
        volatile Thread caller;
        boolean park;
        final Samples[] hops = new Samples[Stamps.COUNT];
        final Samples total = new Samples(1 << 20);
        Session current;
        volatile boolean firstSeen;

        @Setup(Level.Trial)
        public void start() {
            for (int i = 1; i < Stamps.COUNT; i++) {
                hops[i] = new Samples(1 << 20);
            }
            park = switch (waiter) {
                case "park" -> true;
                case "yield" -> false;
                default -> throw new IllegalArgumentException("waiter: park or yield, got " + waiter);
            };
            EngineConfig c = EngineConfig.builder()
                    .waitMode(waitMode)
                    .prepShards(prepShards)
                    .build();
            engine = TrivialStages.engine(c, 1, 0, stamps, null, null);
            probe = new Probe(
                    "firstSpan", waitMode.name() + "/" + waiter + (prepShards == 2 ? "" : "/prep" + prepShards));
        }

        @Setup(Level.Iteration)
        public void iteration(IterationParams p) {
            Samples[] all = new Samples[Stamps.COUNT];
            System.arraycopy(hops, 1, all, 0, Stamps.COUNT - 1);
            all[Stamps.COUNT - 1] = total;
            probe.iteration(p.getType() == IterationType.MEASUREMENT, all);
        }

        /** Not timed: the previous request settles (its terminal event) before the next submit. */
        @Setup(Level.Invocation)
        public void settlePrevious() {
            if (current != null) {
                current.result().join();
                current = null;
            }
            firstSeen = false;
        }

        @Override
        public void onCommitted(Session session, CommittedSpan span) {
            if (span.sequence != 0) {
                return;
            }
            stamps.stamp(Stamps.LISTENER);
            if (probe.measuring()) {
                long[] t = stamps.t;
                for (int i = 1; i < Stamps.COUNT; i++) {
                    hops[i].add(t[i] - t[i - 1]);
                }
                total.add(t[Stamps.LISTENER] - t[Stamps.SUBMIT]);
                probe.units++;
            }
            firstSeen = true;
            if (park) {
                LockSupport.unpark(caller);
            }
        }

        @Override
        void report() {
            Map<String, Samples> rows = new LinkedHashMap<>();
            for (int i = 1; i < Stamps.COUNT; i++) {
                rows.put(Stamps.NAMES[i - 1] + "→" + Stamps.NAMES[i], hops[i]);
            }
            rows.put("submit→listener", total);
            probe.report("requests", rows);
        }
    }

    @Benchmark
    public Session firstSpan(FirstSpanState st) {
        st.caller = Thread.currentThread();
        st.stamps.stamp(Stamps.SUBMIT);
        Session s = st.engine.submit(st.request, st);
        st.current = s;
        if (st.park) {
            while (!st.firstSeen) {
                LockSupport.park(st);
            }
        } else {
            while (!st.firstSeen) {
                Thread.yield();
            }
        }
        return s;
    }

    /** Sessions of {@value #STREAM_TOKENS} tokens with no work between them. */
    public static class StreamState extends EngineState {
        @Param({"default", "unbounded"})
        public String window;

        long chars;

        @Setup(Level.Trial)
        public void start() {
            EngineConfig d = EngineConfig.defaults().withWaitMode(waitMode);
            EngineConfig c = switch (window) {
                case "default" -> d;
                case "unbounded" ->
                    d.toBuilder()
                            .tokenRingSize(2 * STREAM_TOKENS)
                            .creditsPerSession(4 * STREAM_TOKENS)
                            .build();
                default -> throw new IllegalArgumentException("window: default or unbounded, got " + window);
            };
            engine = TrivialStages.engine(c, STREAM_TOKENS, 0, null, null, null);
            probe = new Probe("stream", waitMode.name() + "/" + window);
        }

        @Setup(Level.Iteration)
        public void iteration(IterationParams p) {
            probe.iteration(p.getType() == IterationType.MEASUREMENT);
        }

        @Override
        public void onCommitted(Session session, CommittedSpan span) {
            chars += span.text.length();
            if (probe.measuring()) {
                probe.units++;
            }
        }

        @Override
        void report() {
            probe.report("tokens", Map.of());
        }
    }

    @Benchmark
    @OperationsPerInvocation(STREAM_TOKENS)
    public Outcome stream(StreamState st) {
        return st.engine.submit(st.request, st).result().join();
    }

    /** Sessions of {@value #PACED_TOKENS} tokens, each after a busy pause on the exec thread. */
    public static class PacedState extends EngineState {
        @Param({"1000"})
        public long paceUs;

        final long[] tokenStamps = new long[4096];
        final Samples latency = new Samples(1 << 20);
        /** Written by the exec thread only while a session runs; reset between iterations. */
        final Samples execGaps = new Samples(1 << 20);

        @Setup(Level.Trial)
        public void start() {
            engine = TrivialStages.engine(
                    EngineConfig.defaults().withWaitMode(waitMode),
                    PACED_TOKENS,
                    paceUs * 1000,
                    null,
                    tokenStamps,
                    execGaps);
            probe = new Probe("paced", waitMode.name() + "/" + paceUs + "us");
        }

        @Setup(Level.Iteration)
        public void iteration(IterationParams p) {
            probe.iteration(p.getType() == IterationType.MEASUREMENT, latency, execGaps);
        }

        @Override
        public void onCommitted(Session session, CommittedSpan span) {
            long now = System.nanoTime();
            if (probe.measuring()) {
                latency.add(now - tokenStamps[span.tokenId % tokenStamps.length]);
                probe.units++;
            }
        }

        @Override
        void report() {
            Map<String, Samples> rows = new LinkedHashMap<>();
            rows.put("exec→listener", latency);
            rows.put("exec outside advance", execGaps);
            probe.report("tokens", rows);
        }
    }

    @Benchmark
    @OperationsPerInvocation(PACED_TOKENS)
    public Outcome paced(PacedState st) {
        return st.engine.submit(st.request, st).result().join();
    }
}
