package dev.mlxring.ingress.cli;

import dev.mlxring.bench.CpuMonitor;
import dev.mlxring.bench.DecodeOrder;
import dev.mlxring.bench.DecodeReport;
import dev.mlxring.bench.DecodeRun;
import dev.mlxring.bench.MachineInfo;
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
import java.io.PrintStream;
import java.io.UncheckedIOException;
import java.nio.file.Files;
import java.nio.file.Path;
import java.time.LocalDateTime;
import java.time.format.DateTimeFormatter;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Locale;
import java.util.Map;
import java.util.Set;
import java.util.concurrent.TimeUnit;

/**
 * {@code mlx-ring bench decode}: B=1 prefill and decode tok/s of our engine (each of
 * {@code --variants}: {@code exact} and {@code fast} on the native kernels, {@code mlx} on MLX's)
 * against mlx-lm ({@link MlxLmServe}, unless {@code --no-mlx-lm}) and, with {@code --gguf FILE
 * --llama-bench BIN}, llama.cpp ({@link LlamaBenchDecode}). Every engine of ours and mlx-lm get the
 * same prompt ids (splitmix64 of {@code --seed} over the vocabulary), greedy, no stop ids;
 * {@code --warmup} unrecorded runs each first; then {@code --runs} rounds, one engine at a time in
 * {@link DecodeOrder}'s alternating order, the machine's foreign CPU sampled around each run.
 * Results go to a folder as JSON and Markdown ({@link DecodeReport}).
 */
final class DecodeCommand {
    static final Set<String> VALUED = Set.of(
            "--model",
            "--prompt-tokens",
            "--gen-tokens",
            "--runs",
            "--warmup",
            "--seed",
            "--prefill-step-size",
            "--variants",
            "--gguf",
            "--llama-bench",
            "--threads",
            "--cpu-bound",
            "--out");
    static final Set<String> SWITCHES = Set.of("--no-mlx-lm");
    static final String MLX_LM = "mlx-lm";
    static final String LLAMA_CPP = "llama.cpp";
    /** How long mlx-lm may take to send its header (load and warm-up) or one run's line. */
    private static final long MLX_LM_LINE_TIMEOUT_S = 600;

    /** One configuration of our engine: {@code exact}, {@code fast} (native kernels) or {@code mlx} (MLX's). */
    record Variant(String flag, CpuKernels kernels, Numerics numerics) {
        String engine() {
            return "ours-" + flag;
        }

        static Variant parse(String flag) {
            return switch (flag) {
                case "exact" -> new Variant(flag, CpuKernels.NATIVE, Numerics.EXACT);
                case "fast" -> new Variant(flag, CpuKernels.NATIVE, Numerics.FAST);
                case "fast-q8" -> new Variant(flag, CpuKernels.NATIVE, Numerics.FAST_Q8);
                case "mlx" -> new Variant(flag, CpuKernels.MLX, Numerics.EXACT);
                default ->
                    throw new UsageException(
                            "--variants takes exact, fast, fast-q8 and mlx (comma-separated), got '" + flag + "'");
            };
        }
    }

    /** The validated options. */
    record Options(
            Path model,
            int promptTokens,
            int genTokens,
            int runs,
            int warmup,
            long seed,
            int prefillStepSize,
            List<Variant> variants,
            boolean mlxLm,
            Path gguf,
            Path llamaBench,
            int threads,
            double cpuBound,
            Path out,
            String command) {}

    private DecodeCommand() {}

    /** Parses {@code bench decode …}; every usage error before anything loads. */
    static Options parse(String[] args) {
        CliArgs a = CliArgs.parse(args, 2, VALUED, SWITCHES);
        Path model =
                a.has("--model") ? Path.of(a.get("--model")) : ProjectHome.get().resolve(GenerateCommand.DEFAULT_MODEL);
        if (!Files.isRegularFile(model.resolve("config.json"))) {
            throw new UsageException("--model " + model + " is not a model directory (no config.json)");
        }
        List<Variant> variants = new ArrayList<>();
        for (String v : (a.has("--variants") ? a.get("--variants") : "exact,fast,mlx").split(",")) {
            Variant parsed = Variant.parse(v.trim());
            if (variants.contains(parsed)) {
                throw new UsageException("--variants names " + v.trim() + " twice");
            }
            variants.add(parsed);
        }
        if (a.has("--gguf") != a.has("--llama-bench")) {
            throw new UsageException("llama.cpp needs both --gguf FILE and --llama-bench BIN");
        }
        Path gguf = a.has("--gguf") ? Path.of(a.get("--gguf")) : null;
        Path llama = a.has("--llama-bench") ? Path.of(a.get("--llama-bench")) : null;
        if (gguf != null && !Files.isRegularFile(gguf)) {
            throw new UsageException("--gguf " + gguf + ": no such file");
        }
        if (llama != null && !Files.isExecutable(llama)) {
            throw new UsageException("--llama-bench " + llama + " is not an executable file");
        }
        boolean mlxLm = !a.has("--no-mlx-lm");
        if (variants.isEmpty() && !mlxLm && gguf == null) {
            throw new UsageException("bench decode has no engine to run");
        }
        double cpuBound = a.doubleValue("--cpu-bound", BenchCommand.DEFAULT_CPU_BOUND);
        if (!(cpuBound >= 0)) {
            throw new UsageException("--cpu-bound must be a number of cores >= 0, got " + cpuBound);
        }
        Long seed = a.longValue("--seed");
        return new Options(
                model,
                a.intValue("--prompt-tokens", 128, 1),
                a.intValue("--gen-tokens", 64, 1),
                a.intValue("--runs", 3, 1),
                a.intValue("--warmup", 1, 0),
                seed == null ? 42 : seed,
                a.intValue("--prefill-step-size", GenerationOptions.DEFAULT_PREFILL_STEP_SIZE, 1),
                List.copyOf(variants),
                mlxLm,
                gguf,
                llama,
                a.intValue("--threads", Runtime.getRuntime().availableProcessors(), 1),
                cpuBound,
                a.has("--out")
                        ? Path.of(a.get("--out"))
                        : Path.of(
                                "bench-results",
                                "decode-" + LocalDateTime.now().format(DateTimeFormatter.ofPattern("yyyyMMdd-HHmmss"))),
                BenchCommand.commandLine(args));
    }

    static int run(String[] args, PrintStream out, PrintStream err) {
        Options o = parse(args);
        try {
            Map<String, Object> doc = measure(o, err);
            DecodeReport.write(o.out(), doc);
            out.print(DecodeReport.markdown(doc));
            err.println("[bench] results in " + o.out().toAbsolutePath());
        } catch (IOException e) {
            throw new UncheckedIOException(e);
        } catch (InterruptedException e) {
            Thread.currentThread().interrupt();
            throw new IllegalStateException("interrupted");
        }
        return 0;
    }

    private static Map<String, Object> measure(Options o, PrintStream err) throws IOException, InterruptedException {
        Map<String, Object> machine = MachineInfo.now();
        Map<String, LanguageModel> ours = new LinkedHashMap<>();
        MlxLmServe mlxLm = null;
        try {
            for (Variant v : o.variants()) {
                err.println("[bench] loading " + o.model() + " as " + v.engine());
                ours.put(v.engine(), Models.load(o.model(), v.kernels(), v.numerics(), null));
            }
            int vocab = ours.isEmpty() ? -1 : ours.values().iterator().next().vocabSize();
            if (vocab < 0) {
                vocab = dev.mlxring.exec.model.ModelConfig.read(o.model()).intField("vocab_size", 32000);
            }
            int[] prompt = splitmix64Prompt(o.seed(), o.promptTokens(), vocab);
            Files.createDirectories(o.out());
            Path promptFile = o.out().resolve("prompt.json");
            Files.writeString(promptFile, "{\"prompt\": " + Arrays.toString(prompt) + "}");
            for (Map.Entry<String, LanguageModel> e : ours.entrySet()) {
                for (int i = 0; i < o.warmup(); i++) {
                    ours(e.getValue(), prompt, o);
                }
            }
            List<String> engines = new ArrayList<>(ours.keySet());
            Map<String, Object> versions = new LinkedHashMap<>();
            if (o.mlxLm()) {
                err.println("[bench] starting mlx-lm (scripts/bench/mlxlm_bench.py) on " + o.model());
                Path python = ProjectHome.python();
                if (!Files.isExecutable(python)) {
                    throw new IllegalStateException(
                            "mlx-lm needs the project venv (" + python + "); or pass --no-mlx-lm");
                }
                mlxLm = MlxLmServe.start(
                        python,
                        ProjectHome.get().resolve("scripts/bench/mlxlm_bench.py"),
                        new MlxLmServe.Script(
                                o.model(),
                                promptFile,
                                o.promptTokens(),
                                o.genTokens(),
                                1,
                                null,
                                o.warmup(),
                                o.prefillStepSize()),
                        o.out().resolve("mlx-lm.log"),
                        TimeUnit.SECONDS.toNanos(MLX_LM_LINE_TIMEOUT_S));
                engines.add(MLX_LM);
                versions.put(MLX_LM, mlxLm.versions());
            }
            LlamaBenchDecode llama = null;
            if (o.gguf() != null) {
                llama = new LlamaBenchDecode(o.llamaBench(), o.gguf(), o.threads());
                for (int i = 0; i < o.warmup(); i++) {
                    llama.run(o.promptTokens(), o.genTokens());
                }
                engines.add(LLAMA_CPP);
            }
            List<DecodeRun> runs = new ArrayList<>();
            List<DecodeOrder.Slot> order = DecodeOrder.of(engines, o.runs());
            for (int i = 0; i < order.size(); i++) {
                DecodeOrder.Slot slot = order.get(i);
                CpuMonitor cpu = slot.engine().equals(LLAMA_CPP)
                        ? CpuMonitor.withReapedChildren()
                        : mlxLm != null ? new CpuMonitor(mlxLm.pid()) : new CpuMonitor();
                CpuMonitor.Sample before = cpu.sample();
                DecodeRun r;
                if (slot.engine().equals(MLX_LM)) {
                    MlxLmServe.Run m = mlxLm.run();
                    r = new DecodeRun(
                            MLX_LM,
                            slot.round(),
                            m.promptTokens(),
                            m.genTokens(),
                            m.promptSeconds(),
                            m.genSeconds(),
                            CpuMonitor.foreignCores(before, cpu.sample()),
                            m.tokens());
                } else if (slot.engine().equals(LLAMA_CPP)) {
                    LlamaBenchDecode.Result l = llama.run(o.promptTokens(), o.genTokens());
                    versions.put(LLAMA_CPP, l.build());
                    r = new DecodeRun(
                            LLAMA_CPP,
                            slot.round(),
                            o.promptTokens(),
                            o.genTokens(),
                            l.promptSeconds(),
                            l.genSeconds(),
                            CpuMonitor.foreignCores(before, cpu.sample()),
                            null);
                } else {
                    GenerationResult g = ours(ours.get(slot.engine()), prompt, o);
                    r = new DecodeRun(
                            slot.engine(),
                            slot.round(),
                            g.promptTokens().length,
                            g.tokens().length,
                            g.promptTimeNs() / 1e9,
                            g.generationTimeNs() / 1e9,
                            CpuMonitor.foreignCores(before, cpu.sample()),
                            g.tokens());
                }
                runs.add(r);
                err.printf(
                        Locale.ROOT,
                        "[bench] run %d/%d: round %d, %s: prefill %.1f tok/s, decode %.2f tok/s, foreign CPU %s%n",
                        i + 1,
                        order.size(),
                        slot.round(),
                        slot.engine(),
                        r.prefillTps(),
                        r.decodeTps(),
                        CpuMonitor.cores(r.foreignCores()));
            }
            Map<String, Object> config = new LinkedHashMap<>();
            config.put("model", o.model().toString());
            config.put("prompt_tokens", o.promptTokens());
            config.put("gen_tokens", o.genTokens());
            config.put("runs", o.runs());
            config.put("warmup", o.warmup());
            config.put("seed", o.seed());
            config.put("prefill_step_size", o.prefillStepSize());
            config.put("variants", o.variants().stream().map(Variant::flag).toList());
            config.put("gguf", o.gguf() == null ? null : o.gguf().toString());
            config.put("llama_threads", o.gguf() == null ? null : o.threads());
            config.put("cpu_bound_cores", o.cpuBound());
            config.put("versions", versions);
            return DecodeReport.document(
                    o.command(), machine, config, engines, runs, o.mlxLm() ? MLX_LM : null, o.cpuBound());
        } finally {
            if (mlxLm != null) {
                mlxLm.close();
            }
            ours.values().forEach(LanguageModel::close);
        }
    }

    /** One greedy run of ours, the queued step finished outside the timing (as mlxlm_bench.py does). */
    private static GenerationResult ours(LanguageModel model, int[] prompt, Options o) {
        GenerationResult r = GenerateStep.run(
                model,
                prompt,
                new GenerationOptions(o.genTokens(), o.prefillStepSize(), new int[0], false),
                token -> true);
        Mlx.synchronize();
        return r;
    }

    /** splitmix64(seed), id = next mod vocab (unsigned): the generator mlxlm_bench.py has too. */
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
}
