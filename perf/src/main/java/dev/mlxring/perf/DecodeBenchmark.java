package dev.mlxring.perf;

import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.ObjectMapper;
import dev.mlxring.bench.CpuMonitor;
import dev.mlxring.bench.MlxLmServe;
import dev.mlxring.exec.generate.GenerateStep;
import dev.mlxring.exec.generate.GenerationOptions;
import dev.mlxring.exec.generate.GenerationResult;
import dev.mlxring.exec.model.LanguageModel;
import dev.mlxring.exec.model.Models;
import dev.mlxring.mlx.CpuKernels;
import dev.mlxring.mlx.Mlx;
import dev.mlxring.mlx.Numerics;
import dev.mlxring.mlx.ProjectHome;
import java.io.IOException;
import java.lang.management.ManagementFactory;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Instant;
import java.time.temporal.ChronoUnit;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.List;
import java.util.Locale;
import java.util.concurrent.TimeUnit;

/**
 * Side-by-side B=1 prefill/decode benchmark: our engine ({@link GenerateStep}, in-process) against
 * mlx-lm ({@code scripts/bench/mlxlm_bench.py}, one long-lived subprocess per model driven line by
 * line), on the same prompt ids, greedy, no stop ids, with mlx-lm {@code stream_generate}'s
 * definitions on both sides: prefill tok/s = prompt tokens / time to the first token, decode tok/s
 * = generated tokens / time from the first token to the last.
 *
 * <p>Per model: load ours and run its warm-up(s); start mlx-lm (it loads and runs its own
 * warm-up(s) before answering); then alternate run by run, ours 1, mlx-lm 1, ours 2, mlx-lm 2,
 * ... so that slow drifts of the machine hit both engines alike. Only one engine computes at a
 * time (the other sits idle between runs). Every run's token ids must equal on both sides (and
 * across runs); a mismatch is reported loudly and makes the exit status 2.
 *
 * <pre>
 * DecodeBenchmark --model DIR [--model DIR ...] [--prompt-tokens 128] [--gen-tokens 64]
 *                 [--runs 5] [--warmup 1] [--seed 42] [--prefill-step-size 2048]
 *                 [--out FILE.md] [--command "how it was run"] [--quiet-cores 0.15] [--max-quiet-wait-s 60]
 *                 [--cpu-kernels native,mlx] [--numerics exact,fast] [--dequantized-weights off,on]
 * </pre>
 *
 * <p>{@code --cpu-kernels} lists the kernel choices of ours to run (default {@code native}); with
 * several, the model is loaded once per choice and each round runs every choice, then mlx-lm.
 * {@code --numerics} likewise lists the numeric tiers (default {@code exact}); every kernel choice
 * runs each tier ({@code fast} only with {@code native}). {@code --dequantized-weights} lists
 * whether ours keeps quantized weights dequantized too (default {@code off}; {@code on} runs
 * only with {@code native} and {@code exact}, and is mlx-lm's bytes). A {@code fast} variant is not mlx-lm's
 * bytes: its tokens are not a mismatch when they differ from mlx-lm's; the table says from which
 * index they do (they must still repeat run to run).
 *
 * <p>The machine may be shared: before every measured run the benchmark waits (up to
 * {@code --max-quiet-wait-s}) until other processes use less than {@code --quiet-cores} of CPU,
 * and it records per run how much CPU others used during it ({@link CpuMonitor}).
 */
public final class DecodeBenchmark {
    private static final ObjectMapper JSON = new ObjectMapper();
    private static final long PYTHON_TIMEOUT_S = 600;

    record Options(
            List<Path> models,
            int promptTokens,
            int genTokens,
            int runs,
            int warmup,
            long seed,
            int prefillStepSize,
            Path out,
            String command,
            double quietCores,
            int maxQuietWaitS,
            List<CpuKernels> kernels,
            List<Numerics> numerics,
            List<Boolean> dequantized) {
        /**
         * Our variants: each kernel choice with each numeric tier it can run ({@code fast}: native
         * only), packed and, where asked, with dequantized weights (native, exact only).
         */
        List<Variant> variants() {
            List<Variant> v = new ArrayList<>();
            for (CpuKernels k : kernels) {
                for (Numerics n : numerics) {
                    for (boolean d : dequantized) {
                        if ((n == Numerics.EXACT || k == CpuKernels.NATIVE)
                                && (!d || (k == CpuKernels.NATIVE && n == Numerics.EXACT))) {
                            v.add(new Variant(k, n, d, new ArrayList<>(), 0, 0));
                        }
                    }
                }
            }
            return v;
        }
    }

    /** One measured run; {@code foreignCores}: CPU the rest of the machine used meanwhile ({@link CpuMonitor}). */
    record Run(
            double promptTps,
            double genTps,
            double promptS,
            double genS,
            long peakBytes,
            int[] tokens,
            double foreignCores,
            double waitedS,
            long jitMs,
            long gcMs) {
        Run withContention(double foreign, double waited) {
            return new Run(promptTps, genTps, promptS, genS, peakBytes, tokens, foreign, waited, jitMs, gcMs);
        }

        /** This run with {@code bytes} that other variants held resident taken out of its peak. */
        Run lessResident(long bytes) {
            return new Run(
                    promptTps, genTps, promptS, genS, peakBytes - bytes, tokens, foreignCores, waitedS, jitMs, gcMs);
        }
    }

    /** Our runs with one kernel choice and numeric tier. */
    record Variant(
            CpuKernels kernels, Numerics numerics, boolean dequantized, List<Run> runs, double loadS, int jitWarmups) {
        String label() {
            return "ours " + choice();
        }

        String choice() {
            return kernels.cliName()
                    + (numerics == Numerics.EXACT ? "" : " " + numerics.cliName())
                    + (dequantized ? " dequantized" : "");
        }

        Variant measured(double load, int warmups) {
            return new Variant(kernels, numerics, dequantized, runs, load, warmups);
        }
    }

    record ModelResult(
            String name,
            Path dir,
            String modelType,
            int vocab,
            int[] prompt,
            List<Variant> variants,
            List<Run> theirs,
            List<String> mismatches,
            double theirsLoadS) {}

    private DecodeBenchmark() {}

    public static void main(String[] argv) throws Exception {
        Options o = Flags.parseOrExit(argv, DecodeBenchmark::parse, USAGE);
        Instant started = Instant.now();
        long t0 = System.nanoTime();
        List<ModelResult> results = new ArrayList<>();
        String[] versions = {"?", "?", "?"};
        for (Path dir : o.models()) {
            results.add(benchModel(o, dir, versions));
        }
        double wallS = (System.nanoTime() - t0) / 1e9;
        String md = markdown(o, results, versions, started, wallS);
        System.out.println();
        System.out.println(md);
        if (o.out() != null) {
            Path parent = o.out().toAbsolutePath().getParent();
            if (parent != null) {
                Files.createDirectories(parent);
            }
            Files.writeString(o.out(), md, StandardCharsets.UTF_8);
            System.err.println("[bench] wrote " + o.out());
        }
        boolean mismatch = results.stream().anyMatch(r -> !r.mismatches().isEmpty());
        if (mismatch) {
            System.err.println();
            System.err.println("!!!!!!!! TOKEN MISMATCH between mlx-ring and mlx-lm !!!!!!!!");
            for (ModelResult r : results) {
                for (String m : r.mismatches()) {
                    System.err.println("!!! " + r.name() + ": " + m);
                }
            }
            System.exit(2);
        }
    }

    // ---- one model ----------------------------------------------------------------

    private static ModelResult benchModel(Options o, Path dir, String[] versions) throws Exception {
        String name = dir.getFileName().toString();
        List<LanguageModel> models = new ArrayList<>();
        try {
            List<Double> loadS = new ArrayList<>();
            // Every variant's weights stay resident through all runs (the runs alternate), so MLX's
            // peak during one variant's run counts the others' weights too: each run's figure has
            // those subtracted, as measured here (active memory across each load).
            List<Long> residentBytes = new ArrayList<>();
            List<Variant> planned = o.variants();
            for (Variant p : planned) {
                System.err.printf(Locale.ROOT, "[bench] %s: loading ours (%s)%n", name, p.choice());
                long l0 = System.nanoTime();
                long active0 = Mlx.memory().activeBytes();
                models.add(Models.load(dir, p.kernels(), p.numerics(), p.dequantized(), null));
                if (p.dequantized()) {
                    // The layouts are built by the first forward pass: one short step here, so that
                    // they count as this variant's resident memory (and its load time), not as
                    // part of every other variant's peak.
                    GenerateStep.run(
                            models.getLast(),
                            new int[] {1, 2, 3},
                            new GenerationOptions(1, o.prefillStepSize(), new int[0], false),
                            token -> true);
                    Mlx.synchronize();
                    Mlx.clearCache();
                }
                residentBytes.add(Mlx.memory().activeBytes() - active0);
                loadS.add((System.nanoTime() - l0) / 1e9);
                System.err.printf(
                        Locale.ROOT,
                        "[bench] %s: loaded ours (%s) in %.2f s, %.1f MB resident%n",
                        name,
                        p.choice(),
                        loadS.getLast(),
                        residentBytes.getLast() / 1e6);
            }
            long allResident = residentBytes.stream().mapToLong(Long::longValue).sum();
            LanguageModel first = models.get(0);
            int[] prompt = splitmix64Prompt(o.seed(), o.promptTokens(), first.vocabSize());
            Path promptFile = ProjectHome.get()
                    .resolve("build/bench")
                    .resolve("prompt-" + name + "-" + o.promptTokens() + "-" + o.seed() + ".json");
            Files.createDirectories(promptFile.getParent());
            Files.writeString(promptFile, "{\"prompt\": " + Arrays.toString(prompt) + "}\n", StandardCharsets.UTF_8);

            List<Variant> variants = new ArrayList<>();
            for (int v = 0; v < models.size(); v++) {
                for (int w = 0; w < o.warmup(); w++) {
                    Run r = ours(models.get(v), prompt, o);
                    System.err.printf(
                            Locale.ROOT,
                            "[bench] %s: ours (%s) warm-up %d (JIT %d ms)%n",
                            name,
                            planned.get(v).choice(),
                            w + 1,
                            r.jitMs());
                }
                int jitWarmups = jitWarmup(models.get(v), prompt, o, name);
                variants.add(planned.get(v).measured(loadS.get(v), jitWarmups));
            }
            List<Run> theirs = new ArrayList<>();
            List<String> mismatches = new ArrayList<>();
            System.err.printf(Locale.ROOT, "[bench] %s: starting mlx-lm (load + %d warm-up)%n", name, o.warmup());
            try (MlxLmServe py = startMlxLm(o, dir, promptFile, name)) {
                JsonNode header = py.header();
                versions[0] = header.path("mlx_version").asText("?");
                versions[1] = header.path("mlx_lm_version").asText("?");
                versions[2] = header.path("python_version").asText("?");
                int[] theirPrompt = JSON.convertValue(header.get("prompt"), int[].class);
                if (!Arrays.equals(prompt, theirPrompt)) {
                    mismatches.add("mlx-lm ran a different prompt than ours");
                }
                CpuMonitor cpu = new CpuMonitor(py.pid());
                for (int i = 0; i < o.runs(); i++) {
                    List<Run> round = new ArrayList<>();
                    for (int v = 0; v < models.size(); v++) {
                        Variant variant = variants.get(v);
                        double waited = waitQuiet(cpu, o, name + " run " + (i + 1) + " " + variant.label());
                        CpuMonitor.Sample s0 = cpu.sample();
                        Run a = ours(models.get(v), prompt, o).lessResident(allResident - residentBytes.get(v));
                        a = a.withContention(CpuMonitor.foreignCores(s0, cpu.sample()), waited);
                        variant.runs().add(a);
                        round.add(a);
                    }
                    double waited = waitQuiet(cpu, o, name + " run " + (i + 1) + " mlx-lm");
                    CpuMonitor.Sample s0 = cpu.sample();
                    Run b = theirs(py.run());
                    b = b.withContention(CpuMonitor.foreignCores(s0, cpu.sample()), waited);
                    theirs.add(b);
                    for (int v = 0; v < round.size(); v++) {
                        Run a = round.get(v);
                        String label = variants.get(v).label();
                        System.err.printf(
                                Locale.ROOT,
                                "[bench] %s run %d: prefill %.1f vs %.1f tok/s, decode %.2f vs %.2f tok/s (%s vs mlx-lm);"
                                        + " foreign CPU %s / %s cores%n",
                                name,
                                i + 1,
                                a.promptTps(),
                                b.promptTps(),
                                a.genTps(),
                                b.genTps(),
                                label,
                                CpuMonitor.cores(a.foreignCores()),
                                CpuMonitor.cores(b.foreignCores()));
                        if (variants.get(v).numerics() == Numerics.EXACT && !Arrays.equals(a.tokens(), b.tokens())) {
                            String m = label + " run " + (i + 1) + ": token ids differ at index "
                                    + firstDiff(a.tokens(), b.tokens()) + " (ours " + a.tokens().length
                                    + " tokens, mlx-lm " + b.tokens().length + ")";
                            mismatches.add(m);
                            System.err.println("!!! TOKEN MISMATCH " + name + " " + m);
                        }
                        if (i > 0
                                && !Arrays.equals(
                                        a.tokens(),
                                        variants.get(v).runs().get(0).tokens())) {
                            mismatches.add(label + " run " + (i + 1) + ": our tokens differ from our run 1");
                        }
                        if (a.tokens().length != o.genTokens() || b.tokens().length != o.genTokens()) {
                            mismatches.add(label + " run " + (i + 1) + ": expected " + o.genTokens()
                                    + " tokens, got ours " + a.tokens().length + ", mlx-lm " + b.tokens().length);
                        }
                    }
                }
                return new ModelResult(
                        name,
                        dir,
                        first.modelType(),
                        first.vocabSize(),
                        prompt,
                        variants,
                        theirs,
                        mismatches,
                        header.path("load_s").asDouble());
            }
        } finally {
            for (LanguageModel m : models) {
                m.close();
            }
        }
    }

    /**
     * The JVM keeps compiling (on background threads, which compete with MLX for the 2 cores) for a
     * while after the first run; mlx-lm has no JIT. To compare steady states, ours gets extra
     * short generations (16-token prompt, 32 tokens) until one of them triggers less than
     * {@value #JIT_QUIET_MS} ms of compilation, at most {@value #MAX_JIT_WARMUPS}. Returns how many.
     */
    private static int jitWarmup(LanguageModel model, int[] prompt, Options o, String name) {
        int[] shortPrompt = Arrays.copyOf(prompt, Math.min(prompt.length, 16));
        Options shortRun = new Options(
                o.models(),
                shortPrompt.length,
                Math.min(o.genTokens(), 32),
                1,
                0,
                o.seed(),
                o.prefillStepSize(),
                null,
                null,
                0,
                0,
                o.kernels(),
                o.numerics(),
                o.dequantized());
        for (int i = 1; i <= MAX_JIT_WARMUPS; i++) {
            Run r = ours(model, shortPrompt, shortRun);
            if (r.jitMs() >= 0 && r.jitMs() < JIT_QUIET_MS) {
                System.err.printf(
                        Locale.ROOT, "[bench] %s: JIT quiet after %d short warm-up(s) (%d ms)%n", name, i, r.jitMs());
                return i;
            }
        }
        System.err.printf(
                Locale.ROOT, "[bench] %s: JIT still compiling after %d short warm-ups%n", name, MAX_JIT_WARMUPS);
        return MAX_JIT_WARMUPS;
    }

    private static final int JIT_QUIET_MS = 20;
    private static final int MAX_JIT_WARMUPS = 8;

    private static long jitMs() {
        var jit = ManagementFactory.getCompilationMXBean();
        return jit != null && jit.isCompilationTimeMonitoringSupported() ? jit.getTotalCompilationTime() : -1;
    }

    private static long gcMs() {
        long t = 0;
        for (var gc : ManagementFactory.getGarbageCollectorMXBeans()) {
            t += Math.max(0, gc.getCollectionTime());
        }
        return t;
    }

    private static Run ours(LanguageModel model, int[] prompt, Options o) {
        long jit0 = jitMs();
        long gc0 = gcMs();
        GenerationResult r = GenerateStep.run(
                model,
                prompt,
                new GenerationOptions(o.genTokens(), o.prefillStepSize(), new int[0], false),
                token -> true);
        // Outside the timed region: let the decode step generate_step had already queued finish,
        // so it does not overlap the other engine's run (mlxlm_bench.py does the same).
        Mlx.synchronize();
        return new Run(
                r.promptTokensPerSecond(),
                r.generationTokensPerSecond(),
                r.promptTimeNs() / 1e9,
                r.generationTimeNs() / 1e9,
                r.peakMemoryBytes(),
                r.tokens(),
                Double.NaN,
                0,
                jitMs() - jit0,
                gcMs() - gc0);
    }

    /**
     * Waits (up to {@code --max-quiet-wait-s}) until the rest of the machine uses less than
     * {@code --quiet-cores} of CPU, so that a run does not share the cores with someone else's
     * build or test; returns the seconds waited. Proceeds anyway after the limit (the run's
     * foreign-CPU figure then shows the contamination).
     */
    private static double waitQuiet(CpuMonitor cpu, Options o, String what) throws InterruptedException {
        if (!CpuMonitor.available() || o.maxQuietWaitS() <= 0) {
            return 0;
        }
        long start = System.nanoTime();
        long deadline = start + TimeUnit.SECONDS.toNanos(o.maxQuietWaitS());
        boolean said = false;
        while (true) {
            double foreign = cpu.foreignNow(300);
            if (foreign < o.quietCores()) {
                break;
            }
            if (System.nanoTime() > deadline) {
                System.err.printf(
                        Locale.ROOT,
                        "[bench] %s: machine still busy (%.2f foreign cores) after %d s; running anyway%n",
                        what,
                        foreign,
                        o.maxQuietWaitS());
                break;
            }
            if (!said) {
                System.err.printf(
                        Locale.ROOT,
                        "[bench] %s: waiting for the machine to go quiet (%.2f foreign cores)%n",
                        what,
                        foreign);
                said = true;
            }
            Thread.sleep(1000);
        }
        return (System.nanoTime() - start) / 1e9 - 0.3;
    }

    /** splitmix64(seed), id = next mod vocab (unsigned); mlxlm_bench.py has the same generator. */
    static int[] splitmix64Prompt(long seed, int n, int vocab) {
        long state = seed;
        int[] out = new int[n];
        for (int i = 0; i < n; i++) {
            state += 0x9E3779B97F4A7C15L;
            long z = state;
            z = (z ^ (z >>> 30)) * 0xBF58476D1CE4E5B9L;
            z = (z ^ (z >>> 27)) * 0x94D049BB133111EBL;
            z = z ^ (z >>> 31);
            out[i] = (int) Long.remainderUnsigned(z, vocab);
        }
        return out;
    }

    private static int firstDiff(int[] a, int[] b) {
        int n = Math.min(a.length, b.length);
        for (int i = 0; i < n; i++) {
            if (a[i] != b[i]) {
                return i;
            }
        }
        return n;
    }

    // ---- the mlx-lm subprocess ----------------------------------------------------

    /** {@code mlxlm_bench.py --serve} on {@code dir}, its stderr to {@code build/bench/mlxlm-<name>.log}. */
    private static MlxLmServe startMlxLm(Options o, Path dir, Path promptFile, String name) throws Exception {
        Path home = ProjectHome.get();
        return MlxLmServe.start(
                ProjectHome.python(),
                home.resolve("scripts/bench/mlxlm_bench.py"),
                new MlxLmServe.Script(
                        dir,
                        promptFile,
                        o.promptTokens(),
                        o.genTokens(),
                        o.runs(),
                        o.seed(),
                        o.warmup(),
                        o.prefillStepSize()),
                home.resolve("build/bench").resolve("mlxlm-" + name + ".log"),
                TimeUnit.SECONDS.toNanos(PYTHON_TIMEOUT_S));
    }

    /** One mlx-lm run as a {@link Run}: the contention is filled in by the caller. */
    private static Run theirs(MlxLmServe.Run r) {
        return new Run(
                r.promptTps(),
                r.genTps(),
                r.promptSeconds(),
                r.genSeconds(),
                r.peakMemoryBytes(),
                r.tokens(),
                Double.NaN,
                0,
                -1,
                -1);
    }

    // ---- statistics and the report ------------------------------------------------

    static double median(double[] xs) {
        double[] s = xs.clone();
        Arrays.sort(s);
        int n = s.length;
        return n % 2 == 1 ? s[n / 2] : (s[n / 2 - 1] + s[n / 2]) / 2;
    }

    private static double median(List<Run> runs, java.util.function.ToDoubleFunction<Run> f) {
        return median(runs.stream().mapToDouble(f).toArray());
    }

    private static long maxPeak(List<Run> runs) {
        return runs.stream().mapToLong(Run::peakBytes).max().orElse(0);
    }

    private static String f1(double v) {
        return String.format(Locale.ROOT, "%.1f", v);
    }

    private static String f2(double v) {
        return String.format(Locale.ROOT, "%.2f", v);
    }

    private static String f3(double v) {
        return String.format(Locale.ROOT, "%.3f", v);
    }

    private static String mb(long bytes) {
        return String.format(Locale.ROOT, "%.1f", bytes / 1e6);
    }

    /** The tokens column: exact variants equal mlx-lm's; a fast one says where its first run departs. */
    private static String tokensVs(Variant v, List<Run> theirs) {
        if (v.numerics() == Numerics.EXACT || v.runs().isEmpty() || theirs.isEmpty()) {
            return "identical";
        }
        int[] a = v.runs().get(0).tokens();
        int[] b = theirs.get(0).tokens();
        return Arrays.equals(a, b)
                ? "identical (not required)"
                : "differ from index " + firstDiff(a, b) + " (not required)";
    }

    static String markdown(Options o, List<ModelResult> results, String[] versions, Instant started, double wallS) {
        StringBuilder sb = new StringBuilder();
        sb.append("## Side-by-side: mlx-ring vs mlx-lm, B=1 prefill and decode\n\n");
        sb.append("Started ")
                .append(started.truncatedTo(ChronoUnit.SECONDS))
                .append(", took ")
                .append(f1(wallS))
                .append(" s. MLX ")
                .append(versions[0])
                .append(", mlx-lm ")
                .append(versions[1])
                .append(" (Python ")
                .append(versions[2])
                .append("), Java ")
                .append(Runtime.version())
                .append(", ")
                .append(cpuName())
                .append(", ")
                .append(Runtime.getRuntime().availableProcessors())
                .append(" CPUs.\n");
        if (o.command() != null) {
            sb.append("Command: `").append(o.command()).append("`\n");
        }
        sb.append("\nGreedy, no stop ids, prefill step ")
                .append(o.prefillStepSize())
                .append(", prompt = ")
                .append(o.promptTokens())
                .append(" ids from splitmix64(seed ")
                .append(o.seed())
                .append(") mod vocab, identical on both sides. ")
                .append(o.warmup())
                .append(
                        " warm-up run(s) per engine (plus, for ours, short JIT warm-ups until the JVM stops compiling), then ")
                .append(o.runs())
                .append(" measured runs each, alternating run by run: ours with each --cpu-kernels choice ")
                .append(o.kernels().stream().map(CpuKernels::cliName).toList())
                .append(" and --numerics tier ")
                .append(o.numerics().stream().map(Numerics::cliName).toList())
                .append(
                        o.dequantized().contains(true)
                                ? " (`dequantized`: --dequantized-weights, whose load time includes the one-token step that"
                                        + " builds the dequantized layouts, counted as its resident memory)"
                                : "")
                .append(", then mlx-lm. "
                        + "Prefill tok/s = prompt tokens / time to first token; decode tok/s = generated tokens / "
                        + "time from first to last token (mlx-lm `stream_generate` definitions). "
                        + "Medians over the runs; ratio = median ours / median mlx-lm (> 1: we are faster). "
                        + "Peak memory = MLX peak allocator memory during a run (max over runs, MB = 10^6 bytes; "
                        + "ours less the weights of our other variants, which stay loaded between the alternating runs). "
                        + "JIT/GC ms = time the JVM spent compiling (background threads) and collecting during "
                        + "our run. Foreign CPU = cores used by other processes during a run (/proc/stat); before each run the "
                        + "benchmark waited for it to drop below " + o.quietCores() + " cores (at most "
                        + o.maxQuietWaitS() + " s).\n\n");
        sb.append(
                "| model | ours | prompt tok | gen tok | runs | prefill tok/s ours | prefill tok/s mlx-lm | prefill ratio "
                        + "| decode tok/s ours | decode tok/s mlx-lm | decode ratio | peak MB ours | peak MB mlx-lm | tokens |\n");
        sb.append("|---|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---|\n");
        for (ModelResult r : results) {
            for (Variant variant : r.variants()) {
                List<Run> ours = variant.runs();
                double po = median(ours, Run::promptTps);
                double pt = median(r.theirs(), Run::promptTps);
                double go = median(ours, Run::genTps);
                double gt = median(r.theirs(), Run::genTps);
                sb.append("| ")
                        .append(r.name())
                        .append(" | ")
                        .append(variant.choice())
                        .append(" | ")
                        .append(o.promptTokens())
                        .append(" | ")
                        .append(o.genTokens())
                        .append(" | ")
                        .append(ours.size())
                        .append(" | ")
                        .append(f1(po))
                        .append(" | ")
                        .append(f1(pt))
                        .append(" | **")
                        .append(f3(po / pt))
                        .append("** | ")
                        .append(f2(go))
                        .append(" | ")
                        .append(f2(gt))
                        .append(" | **")
                        .append(f3(go / gt))
                        .append("** | ")
                        .append(mb(maxPeak(ours)))
                        .append(" | ")
                        .append(mb(maxPeak(r.theirs())))
                        .append(" | ")
                        .append(r.mismatches().isEmpty() ? tokensVs(variant, r.theirs()) : "**MISMATCH**")
                        .append(" |\n");
            }
        }
        double worst = results.stream()
                .flatMap(r -> java.util.stream.Stream.concat(
                        r.variants().stream().flatMap(v -> v.runs().stream()), r.theirs().stream()))
                .mapToDouble(Run::foreignCores)
                .filter(d -> !Double.isNaN(d))
                .max()
                .orElse(Double.NaN);
        if (!Double.isNaN(worst)) {
            sb.append("\nHighest foreign CPU during any run: ")
                    .append(CpuMonitor.cores(worst))
                    .append(" cores")
                    .append(worst > 0.25 ? " -- **some runs shared the machine; see the raw runs**" : "")
                    .append(".\n");
        }
        boolean anyMismatch = results.stream().anyMatch(r -> !r.mismatches().isEmpty());
        if (anyMismatch) {
            sb.append("\n> **TOKEN MISMATCH** — the engines did not generate the same ids:\n");
            for (ModelResult r : results) {
                for (String m : r.mismatches()) {
                    sb.append(">  - ").append(r.name()).append(": ").append(m).append('\n');
                }
            }
        }
        sb.append("\n### Raw runs\n");
        for (ModelResult r : results) {
            for (Variant variant : r.variants()) {
                List<Run> ours = variant.runs();
                sb.append("\n`")
                        .append(r.name())
                        .append("`, ")
                        .append(variant.label())
                        .append(" (")
                        .append(r.modelType())
                        .append(", vocab ")
                        .append(r.vocab())
                        .append(", ")
                        .append(r.dir())
                        .append("; load ours ")
                        .append(f2(variant.loadS()))
                        .append(" s, mlx-lm ")
                        .append(f2(r.theirsLoadS()))
                        .append(" s; ours also ran ")
                        .append(variant.jitWarmups())
                        .append(" short JIT warm-up(s))\n\n");
                sb.append(
                        "| run | prefill s ours | prefill s mlx-lm | prefill tok/s ours | prefill tok/s mlx-lm | ratio "
                                + "| decode s ours | decode s mlx-lm | decode tok/s ours | decode tok/s mlx-lm | ratio "
                                + "| peak MB ours | peak MB mlx-lm | foreign CPU ours | foreign CPU mlx-lm | JIT/GC ms ours |\n");
                sb.append("|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|\n");
                for (int i = 0; i < ours.size(); i++) {
                    Run a = ours.get(i);
                    Run b = r.theirs().get(i);
                    sb.append("| ")
                            .append(i + 1)
                            .append(" | ")
                            .append(f3(a.promptS()))
                            .append(" | ")
                            .append(f3(b.promptS()))
                            .append(" | ")
                            .append(f1(a.promptTps()))
                            .append(" | ")
                            .append(f1(b.promptTps()))
                            .append(" | ")
                            .append(f3(a.promptTps() / b.promptTps()))
                            .append(" | ")
                            .append(f3(a.genS()))
                            .append(" | ")
                            .append(f3(b.genS()))
                            .append(" | ")
                            .append(f2(a.genTps()))
                            .append(" | ")
                            .append(f2(b.genTps()))
                            .append(" | ")
                            .append(f3(a.genTps() / b.genTps()))
                            .append(" | ")
                            .append(mb(a.peakBytes()))
                            .append(" | ")
                            .append(mb(b.peakBytes()))
                            .append(" | ")
                            .append(CpuMonitor.cores(a.foreignCores()))
                            .append(" | ")
                            .append(CpuMonitor.cores(b.foreignCores()))
                            .append(" | ")
                            .append(a.jitMs())
                            .append(" / ")
                            .append(a.gcMs())
                            .append(" |\n");
                }
                double[] pr = new double[ours.size()];
                double[] dr = new double[ours.size()];
                for (int i = 0; i < pr.length; i++) {
                    pr[i] = ours.get(i).promptTps() / r.theirs().get(i).promptTps();
                    dr[i] = ours.get(i).genTps() / r.theirs().get(i).genTps();
                }
                sb.append(
                                "\nPer-run ratios ours/mlx-lm (each run against the mlx-lm run right after it): prefill median ")
                        .append(f3(median(pr)))
                        .append(" (")
                        .append(f3(Arrays.stream(pr).min().orElse(0)))
                        .append("..")
                        .append(f3(Arrays.stream(pr).max().orElse(0)))
                        .append("), decode median ")
                        .append(f3(median(dr)))
                        .append(" (")
                        .append(f3(Arrays.stream(dr).min().orElse(0)))
                        .append("..")
                        .append(f3(Arrays.stream(dr).max().orElse(0)))
                        .append(").\n");
                int[] t = ours.get(0).tokens();
                sb.append("\nGenerated ids (run 1, ")
                        .append(t.length)
                        .append("): `")
                        .append(Arrays.toString(Arrays.copyOf(t, Math.min(t.length, 16))))
                        .append(t.length > 16 ? " ..." : "")
                        .append("`, ")
                        .append(Arrays.stream(t).distinct().count())
                        .append(" distinct.\n");
            }
        }
        return sb.toString();
    }

    private static String cpuName() {
        try {
            for (String line : Files.readAllLines(Path.of("/proc/cpuinfo"))) {
                if (line.startsWith("model name")) {
                    return line.substring(line.indexOf(':') + 1).trim();
                }
            }
        } catch (IOException | RuntimeException e) {
            // not Linux
        }
        return System.getProperty("os.arch");
    }

    // ---- arguments ----------------------------------------------------------------

    static final String USAGE = "DecodeBenchmark --model DIR [--model DIR ...] [--prompt-tokens N] [--gen-tokens M]"
            + " [--runs K] [--warmup W] [--seed S] [--prefill-step-size P] [--out FILE.md] [--command TEXT]"
            + " [--quiet-cores C] [--max-quiet-wait-s S] [--cpu-kernels native,mlx] [--numerics exact,fast]"
            + " [--dequantized-weights off,on]";

    static Options parse(String[] argv) {
        List<Path> models = new ArrayList<>();
        int promptTokens = 128;
        int genTokens = 64;
        int runs = 5;
        int warmup = 1;
        long seed = 42;
        int prefill = GenerationOptions.DEFAULT_PREFILL_STEP_SIZE;
        Path out = null;
        String command = null;
        double quietCores = 0.15;
        int maxQuietWaitS = 60;
        List<CpuKernels> kernels = List.of(CpuKernels.DEFAULT);
        List<Numerics> numerics = List.of(Numerics.DEFAULT);
        List<Boolean> dequantized = List.of(false);
        Flags f = new Flags(argv);
        while (f.next()) {
            switch (f.flag()) {
                case "--model" -> models.add(Path.of(f.value()));
                case "--prompt-tokens" -> promptTokens = f.positive();
                case "--gen-tokens" -> genTokens = f.positive();
                case "--runs" -> runs = f.positive();
                case "--warmup" -> warmup = f.integer();
                case "--seed" -> seed = Long.parseLong(f.value());
                case "--prefill-step-size" -> prefill = f.positive();
                case "--out" -> out = Path.of(f.value());
                case "--command" -> command = f.value();
                case "--quiet-cores" -> quietCores = Double.parseDouble(f.value());
                case "--max-quiet-wait-s" -> maxQuietWaitS = f.integer();
                case "--cpu-kernels" ->
                    kernels = Arrays.stream(f.value().split(","))
                            .map(v -> CpuKernels.parse("--cpu-kernels", v.trim()))
                            .distinct()
                            .toList();
                case "--numerics" ->
                    numerics = Arrays.stream(f.value().split(","))
                            .map(v -> Numerics.parse("--numerics", v.trim()))
                            .distinct()
                            .toList();
                case "--dequantized-weights" ->
                    dequantized = Arrays.stream(f.value().split(","))
                            .map(v -> switch (v.trim()) {
                                case "off" -> false;
                                case "on" -> true;
                                default ->
                                    throw new IllegalArgumentException(
                                            "--dequantized-weights takes off, on or off,on; got '" + v.trim() + "'");
                            })
                            .distinct()
                            .toList();
                default -> throw f.unknown();
            }
        }
        if (models.isEmpty()) {
            throw new IllegalArgumentException("at least one --model DIR is needed");
        }
        for (Path m : models) {
            if (!Files.isRegularFile(m.resolve("config.json"))) {
                throw new IllegalArgumentException("no model at " + m + " (config.json missing)");
            }
        }
        if (genTokens < 2) {
            throw new IllegalArgumentException("--gen-tokens must be >= 2");
        }
        if (warmup < 0) {
            throw new IllegalArgumentException("--warmup must be >= 0");
        }
        return new Options(
                List.copyOf(models),
                promptTokens,
                genTokens,
                runs,
                warmup,
                seed,
                prefill,
                out,
                command,
                quietCores,
                maxQuietWaitS,
                kernels,
                numerics,
                dequantized);
    }
}
