package dev.mlxring.bench;

import java.io.PrintStream;
import java.time.Instant;
import java.util.ArrayList;
import java.util.List;
import java.util.Locale;
import java.util.Map;
import java.util.Random;
import java.util.concurrent.ExecutionException;
import java.util.concurrent.ExecutorService;
import java.util.concurrent.Executors;
import java.util.concurrent.Future;
import java.util.concurrent.ScheduledExecutorService;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicInteger;
import java.util.concurrent.atomic.AtomicLong;

/**
 * Runs a {@code bench serve} plan: probes every target ({@link TargetInfo}), warms each up with
 * {@code --warmup} sequential requests, then runs the phases in {@link PhasePlan}'s ABBA order, one
 * target under load at a time, each phase sending the whole workload at its {@link LoadLevel}
 * (a level's clients, or its arrivals, are conversations: a multi-turn conversation sends its turns
 * one after another, each with the earlier turns and the answers they got; a turn after a failed
 * one is not sent and counts as {@link ErrorClass#EARLIER_TURN_FAILED}) while a progress line on {@code err} counts finished requests and tokens. Around each phase it
 * samples the machine's CPU ({@link CpuMonitor}): busy time less this JVM's and, for a loopback
 * target, the listening server's; a phase above the bound is flagged in the results and on
 * {@code err}.
 */
public final class BenchRunner {
    /** What a run produced: the targets as probed, the phases in the order run, and when it started and ended. */
    public record Run(
            String tool,
            String endpoint,
            List<TargetInfo> targets,
            List<PhaseResult> phases,
            Instant started,
            Instant ended,
            Map<String, Object> machine) {}

    private final BenchOptions options;
    private final PrintStream err;
    private final RequestSender client;
    private final java.util.function.Function<Target, TargetInfo> probe;
    private final String tool;
    private final String endpoint;
    private final boolean measureAllocation;
    private final boolean terminal;

    /**
     * A run over HTTP ({@code bench serve}); {@code terminal}: whether {@code err} is a console (the
     * progress line then redraws in place).
     */
    public BenchRunner(BenchOptions options, PrintStream err, boolean terminal) {
        this(options, err, terminal, new StreamingClient(options.api(), options.timeout()));
    }

    private BenchRunner(BenchOptions options, PrintStream err, boolean terminal, StreamingClient http) {
        this(
                options,
                err,
                terminal,
                http,
                t -> TargetInfo.probe(t, http),
                "mlx-ring bench serve",
                options.api().path());
    }

    /**
     * A run whose requests go through {@code sender} and whose targets {@code probe} describes
     * (what a run records about each), recorded as {@code tool} at {@code endpoint}.
     */
    public BenchRunner(
            BenchOptions options,
            PrintStream err,
            boolean terminal,
            RequestSender sender,
            java.util.function.Function<Target, TargetInfo> probe,
            String tool,
            String endpoint) {
        this.options = options;
        this.err = err;
        this.terminal = terminal;
        this.client = sender;
        this.tool = tool;
        this.endpoint = endpoint;
        // In-process the JVM's allocation is the engine's (and the client's); over HTTP it is only the client's.
        this.measureAllocation = !(sender instanceof StreamingClient);
        this.probe = java.util.Objects.requireNonNull(probe, "probe");
    }

    public Run run() throws InterruptedException {
        Instant started = Instant.now();
        Map<String, Object> machine = MachineInfo.now();
        List<TargetInfo> infos = new ArrayList<>();
        for (Target t : options.targets()) {
            TargetInfo info = probe.apply(t);
            infos.add(info);
            err.printf(
                    Locale.ROOT,
                    "[bench] %s at %s: model %s%s%s%n",
                    t.name(),
                    t.base(),
                    info.modelId(),
                    info.modelsError() == null ? "" : " (GET /v1/models: " + info.modelsError() + ")",
                    info.pid() > 0 ? ", pid " + info.pid() : "");
        }
        for (TargetInfo info : infos) {
            warmUp(info);
        }
        List<Target> probed = infos.stream().map(TargetInfo::target).toList();
        List<PhasePlan.Phase> plan = PhasePlan.of(probed, options.levels(), options.rounds());
        List<PhaseResult> results = new ArrayList<>();
        for (int i = 0; i < plan.size(); i++) {
            PhasePlan.Phase p = plan.get(i);
            TargetInfo info = infos.get(probed.indexOf(p.target()));
            results.add(runPhase(p, i, plan.size(), info));
        }
        return new Run(tool, endpoint, infos, results, started, Instant.now(), machine);
    }

    private void warmUp(TargetInfo info) {
        for (int i = 0; i < options.warmup(); i++) {
            BenchPrompt prompt = new BenchPrompt(null, "Warm-up " + i + ": say hello.", 8, 8);
            RequestRecord r = client.send(info.target(), prompt, i, n -> {});
            if (!r.ok()) {
                throw new IllegalStateException(
                        "warm-up request to " + info.target().name() + " ("
                                + info.target().uri(options.api().path()) + ") failed: " + r.errorClass() + ": "
                                + r.errorDetail());
            }
        }
        if (options.warmup() > 0) {
            err.printf(
                    Locale.ROOT,
                    "[bench] %s warmed up (%d requests)%n",
                    info.target().name(),
                    options.warmup());
        }
    }

    private PhaseResult runPhase(PhasePlan.Phase p, int order, int phases, TargetInfo info)
            throws InterruptedException {
        List<BenchPrompt> prompts = options.prompts();
        RequestRecord[] records = new RequestRecord[prompts.size()];
        AtomicInteger done = new AtomicInteger();
        AtomicInteger failed = new AtomicInteger();
        AtomicLong textEvents = new AtomicLong();
        // A target served by this very JVM (a test's server) is already counted as its own.
        boolean otherProcess =
                info.pid() > 0 && info.pid() != ProcessHandle.current().pid();
        CpuMonitor cpu = otherProcess ? new CpuMonitor(info.pid()) : new CpuMonitor();
        String what = String.format(
                Locale.ROOT,
                "phase %d/%d: round %d, %s=%s, %s",
                order + 1,
                phases,
                p.round(),
                p.level().field(),
                p.level().label(),
                p.target().name());
        CpuMonitor.Sample before = cpu.sample();
        long allocatedBefore = measureAllocation ? allocatedBytes() : -1;
        StageTimed staged = client instanceof StageTimed t ? t : null;
        if (staged != null) {
            staged.startPhase();
        }
        long startNs = System.nanoTime();
        ScheduledExecutorService ticker = Executors.newSingleThreadScheduledExecutor(r -> {
            Thread t = new Thread(r, "bench-progress");
            t.setDaemon(true);
            return t;
        });
        if (terminal) {
            ticker.scheduleAtFixedRate(
                    () -> progress(what, done.get(), failed.get(), prompts.size(), textEvents.get(), startNs, false),
                    0,
                    500,
                    TimeUnit.MILLISECONDS);
        }
        try (ExecutorService pool = Executors.newVirtualThreadPerTaskExecutor()) {
            List<Future<?>> futures = new ArrayList<>();
            int[] starts = conversationStarts(prompts);
            // One task per conversation (a single-turn request is a conversation of one turn): its
            // turns in order, each carrying the earlier turns and the answers they actually got.
            Runnable[] send = new Runnable[starts.length];
            for (int c = 0; c < starts.length; c++) {
                int from = starts[c];
                int to = c + 1 < starts.length ? starts[c + 1] : prompts.size();
                send[c] = () -> {
                    List<BenchPrompt.Exchange> history = new ArrayList<>();
                    RequestRecord broken = null;
                    for (int index = from; index < to; index++) {
                        BenchPrompt prompt = prompts.get(index);
                        RequestRecord r;
                        if (broken != null) {
                            r = earlierTurnFailed(index, prompt.turn(), broken);
                        } else {
                            int[] last = {0};
                            r = client.send(p.target(), prompt.withHistory(history), index, n -> {
                                textEvents.addAndGet(n - last[0]);
                                last[0] = n;
                            });
                            history.add(new BenchPrompt.Exchange(prompt.user(), r.answer()));
                        }
                        records[index] = r;
                        if (!r.ok()) {
                            failed.incrementAndGet();
                            broken = broken == null ? r : broken;
                        }
                        int d = done.incrementAndGet();
                        if (!terminal && d < prompts.size() && prompts.size() >= 8 && d % (prompts.size() / 4) == 0) {
                            progress(what, d, failed.get(), prompts.size(), textEvents.get(), startNs, false);
                        }
                    }
                };
            }
            switch (p.level()) {
                case LoadLevel.Concurrency c -> {
                    AtomicInteger next = new AtomicInteger();
                    for (int w = 0; w < Math.min(c.clients(), send.length); w++) {
                        futures.add(pool.submit(() -> {
                            int i;
                            while ((i = next.getAndIncrement()) < send.length) {
                                send[i].run();
                            }
                        }));
                    }
                }
                case LoadLevel.Rate rate -> {
                    long[] gaps = rate.gapsNs(
                            send.length, new Random(options.workloadParams().seed() + order));
                    long due = System.nanoTime();
                    for (int i = 0; i < send.length; i++) {
                        due += gaps[i];
                        long wait = due - System.nanoTime();
                        if (wait > 0) {
                            TimeUnit.NANOSECONDS.sleep(wait);
                        }
                        futures.add(pool.submit(send[i]));
                    }
                }
            }
            for (Future<?> f : futures) {
                try {
                    f.get();
                } catch (ExecutionException e) {
                    throw new IllegalStateException("a benchmark client failed", e.getCause());
                }
            }
        } finally {
            ticker.shutdownNow();
        }
        StageLatencies stages = staged == null ? null : staged.endPhase();
        long endNs = startNs;
        for (RequestRecord r : records) {
            endNs = Math.max(endNs, r.endNs());
        }
        double foreign = CpuMonitor.foreignCores(before, cpu.sample());
        progress(what, done.get(), failed.get(), prompts.size(), textEvents.get(), startNs, true);
        if (foreign > options.cpuBoundCores()) {
            err.printf(
                    Locale.ROOT,
                    "[bench] WARNING: %s: the rest of the machine used %.2f cores (bound %.2f); its numbers are"
                            + " flagged%n",
                    what,
                    foreign,
                    options.cpuBoundCores());
        }
        long allocated = allocatedBefore >= 0 ? allocatedBytes() - allocatedBefore : -1;
        return new PhaseResult(p, order, List.of(records), Math.max(1, endNs - startNs), foreign, allocated, stages);
    }

    /** Where each conversation starts in {@code prompts}: at every turn 1. */
    static int[] conversationStarts(List<BenchPrompt> prompts) {
        if (!prompts.isEmpty() && prompts.getFirst().turn() != 1) {
            throw new IllegalArgumentException("a workload's first request is a conversation's turn 1");
        }
        return java.util.stream.IntStream.range(0, prompts.size())
                .filter(i -> prompts.get(i).turn() == 1)
                .toArray();
    }

    /** Turn {@code turn}, not sent: an earlier turn of its conversation ({@code cause}) failed, so there is no history to send. */
    private static RequestRecord earlierTurnFailed(int index, int turn, RequestRecord cause) {
        long now = System.nanoTime();
        return new RequestRecord(
                index,
                0,
                now,
                new long[0],
                now,
                -1,
                -1,
                ErrorClass.EARLIER_TURN_FAILED,
                "turn " + turn + " not sent: an earlier turn failed (" + cause.errorClass() + ")");
    }

    /** Bytes every thread of this JVM has allocated so far (HotSpot's count), or -1 where unsupported. */
    private static long allocatedBytes() {
        if (java.lang.management.ManagementFactory.getThreadMXBean() instanceof com.sun.management.ThreadMXBean t
                && t.isThreadAllocatedMemorySupported()) {
            return t.getTotalThreadAllocatedBytes();
        }
        return -1;
    }

    private synchronized void progress(
            String what, int done, int failed, int total, long tokens, long startNs, boolean last) {
        double s = (System.nanoTime() - startNs) / 1e9;
        String line = String.format(
                Locale.ROOT,
                "[bench] %s: %d/%d done, %d failed, %d text events, %.1f events/s, %.1f s",
                what,
                done,
                total,
                failed,
                tokens,
                s > 0 ? tokens / s : 0.0,
                s);
        if (terminal) {
            err.print("\r" + line + (last ? "\n" : "   "));
        } else if (last || done < total) {
            err.println(line);
        }
        err.flush();
    }
}
