package dev.mlxring.ingress.cli;

import dev.mlxring.bench.ApiDialect;
import dev.mlxring.bench.BenchOptions;
import dev.mlxring.bench.BenchRunner;
import dev.mlxring.bench.BenchServe;
import dev.mlxring.bench.LengthRange;
import dev.mlxring.bench.LoadLevel;
import dev.mlxring.bench.ResultsComparison;
import dev.mlxring.bench.Slo;
import dev.mlxring.bench.Target;
import dev.mlxring.bench.TargetInfo;
import dev.mlxring.bench.Workloads;
import dev.mlxring.engine.LocalEngine;
import dev.mlxring.mlx.ProjectHome;
import dev.mlxring.pipeline.EngineConfig;
import java.io.IOException;
import java.io.PrintStream;
import java.io.UncheckedIOException;
import java.nio.file.Path;
import java.time.Duration;
import java.time.LocalDateTime;
import java.time.format.DateTimeFormatter;
import java.util.ArrayList;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;

/**
 * {@code mlx-ring bench serve}: benchmarks one or more OpenAI-compatible servers side by side
 * ({@link BenchServe}), the flags parsed here into {@link BenchOptions}. Per-target flags
 * ({@code --api-key}, {@code --header}, {@code --model}) name the target they belong to
 * ({@code NAME=…}); a name no {@code --target} declares is refused.
 */
final class BenchCommand {
    static final int DEFAULT_NUM_PROMPTS = 32;
    static final String DEFAULT_LEN = "128";
    static final int DEFAULT_PREFIX_COUNT = 4;
    static final int DEFAULT_TURNS = 4;
    static final int DEFAULT_ROUNDS = 1;
    static final int DEFAULT_WARMUP = 2;
    static final int DEFAULT_TIMEOUT_SECONDS = 600;
    static final double DEFAULT_CPU_BOUND = 0.5;

    static final CommandFlags FLAGS = CommandFlags.of(
            "bench",
            "bench serve --target NAME=URL [--target …] (--max-concurrency LIST | --request-rate LIST) [options]\n"
                    + "       mlx-ring bench engine [--model DIR] (--max-concurrency LIST | --request-rate LIST) [options]",
            "benchmark OpenAI-compatible servers side by side, one at a time in ABBA order (docs/bench.md)",
            List.of(
                    List.of(
                            Flag.repeated(
                                    "--target",
                                    "NAME=URL",
                                    "none",
                                    "a server to load, by name and base URL; repeat for more"),
                            Flag.repeated(
                                    "--api-key", "NAME=KEY", "none", "send Authorization: Bearer KEY to target NAME"),
                            Flag.repeated(
                                    "--header",
                                    "NAME=H:V",
                                    "none",
                                    "send header H with value V to target NAME; repeatable"),
                            Flag.repeated(
                                    "--model",
                                    "NAME=ID|DIR",
                                    "the first id of the target's /v1/models; engine: " + GenerateCommand.DEFAULT_MODEL,
                                    "serve: the model id requests to target NAME carry; engine: the model directory to load"),
                            Flag.valued(
                                    "--decode-concurrency",
                                    "N",
                                    ConcurrencyFlags.DEFAULT_DECODE_CONCURRENCY,
                                    "engine: rows of the embedded engine's batch (as serve's flag)"),
                            Flag.valued("--api", "API", "chat", "chat, completions, messages (Anthropic) or responses"),
                            Flag.valued(
                                    "--max-concurrency",
                                    "LIST",
                                    "none",
                                    "closed loop: each of these numbers of clients (1,4,8), each sending its next request when"
                                            + " its last ends; the list is the sweep"),
                            Flag.valued(
                                    "--request-rate",
                                    "LIST",
                                    "none",
                                    "open loop: each of these mean request rates per second (inf: all at once); the list is"
                                            + " the sweep"),
                            Flag.valued(
                                    "--burstiness", "B", 1.0, "gamma shape of the gaps between arrivals (1: Poisson)"),
                            Flag.valued(
                                    "--workload",
                                    "W",
                                    "random",
                                    "random, prefix-shared, agent-edit, multi-turn, sharegpt:FILE or jsonl:FILE"),
                            Flag.valued(
                                    "--turns",
                                    "N",
                                    DEFAULT_TURNS,
                                    "multi-turn: turns of each conversation (--num-prompts counts conversations)"),
                            Flag.valued("--input-len", "N|MIN:MAX", DEFAULT_LEN, "prompt length in tokens, about"),
                            Flag.valued("--output-len", "N|MIN:MAX", DEFAULT_LEN, "max_tokens of each request"),
                            Flag.valued("--num-prompts", "N", DEFAULT_NUM_PROMPTS, "requests per phase"),
                            Flag.valued(
                                    "--prefix-count",
                                    "N",
                                    DEFAULT_PREFIX_COUNT,
                                    "shared system prompts (prefix-shared) or files (agent-edit)"),
                            Flag.valued("--seed", "N", 0, "seed of the workload and of the arrival times"),
                            Flag.valued(
                                    "--rounds",
                                    "N",
                                    DEFAULT_ROUNDS,
                                    "times every target runs every level (results pool them and give the spread)"),
                            Flag.valued("--warmup", "N", DEFAULT_WARMUP, "unrecorded requests to each target first"),
                            Flag.valued(
                                    "--slo",
                                    "ttft=MS,tpot=MS",
                                    "none",
                                    "goodput objectives (also e2el=MS): requests/s meeting all of them"),
                            Flag.valued(
                                    "--timeout-seconds",
                                    "S",
                                    DEFAULT_TIMEOUT_SECONDS,
                                    "a request without response headers after S seconds fails (timeout)"),
                            Flag.valued(
                                    "--cpu-bound",
                                    "CORES",
                                    DEFAULT_CPU_BOUND,
                                    "flag a phase in which the rest of the machine used more CPU than this"),
                            Flag.valued("--out", "DIR", "bench-results/DATE-TIME", "the results folder"),
                            Flag.toggle("--no-plots", "write the JSON and Markdown only, no PNG plots")),
                    // bench engine's embedded engine keeps prompt caches as serve does, with serve's defaults
                    PromptCacheFlags.FLAGS),
            """
            mlx-ring bench engine runs the same workloads in-process through LocalEngine (no HTTP),
            the one target named engine; --target, --api-key, --header and --api are serve's.
            mlx-ring bench decode [--model DIR] [--prompt-tokens 128] [--gen-tokens 64] [--runs 3]
                   [--warmup 1] [--seed 42] [--variants exact,fast,mlx] [--no-mlx-lm]
                   [--gguf FILE --llama-bench BIN [--threads N]] [--prefill-step-size 2048]
                   [--cpu-bound 0.5] [--out DIR]
                                          B=1 prefill/decode tok/s of ours (each variant) against
                                          mlx-lm and llama.cpp, alternating, into results.json/md
            mlx-ring bench compare A B    two runs' results.json (or their folders) side by side:
                                          output tok/s, B/A, TTFT and TPOT p50, and whether the
                                          rounds' spreads overlap

            Rows use vllm bench serve's field names (completed, request_throughput, output_throughput,
            total_token_throughput, mean_/median_/p99_ttft_ms, tpot, itl, e2el) plus target and
            max_concurrency or request_rate. See docs/bench.md.
            """);

    private BenchCommand() {}

    static int run(String[] args, PrintStream out, PrintStream err) {
        for (String arg : args) {
            if (arg.equals("--sweep") || arg.startsWith("--sweep=")) {
                throw new UsageException("bench has no --sweep: the level lists are the sweep (--max-concurrency"
                        + " 1,2,4,8 or --request-rate 1,2,4,inf runs every level in turn)");
            }
        }
        if (args.length >= 2 && args[1].equals("compare")) {
            return compare(args, out);
        }
        if (args.length >= 2 && args[1].equals("engine")) {
            return engine(args, out, err);
        }
        if (args.length >= 2 && args[1].equals("decode")) {
            return DecodeCommand.run(args, out, err);
        }
        if (args.length < 2 || !args[1].equals("serve")) {
            throw new UsageException("bench takes a sub-command: serve, engine, decode or compare; got '"
                    + (args.length < 2 ? "" : args[1]) + "'");
        }
        BenchOptions options = parse(args);
        try {
            BenchServe.run(options, out, err, System.console() != null);
        } catch (IOException e) {
            throw new UncheckedIOException(e);
        } catch (InterruptedException e) {
            Thread.currentThread().interrupt();
            throw new IllegalStateException("interrupted");
        }
        return 0;
    }

    /**
     * {@code bench engine}: the same workloads in-process through an embedded {@link LocalEngine}
     * (no HTTP), the results written as {@code bench serve}'s with the one target {@code engine}.
     */
    private static int engine(String[] args, PrintStream out, PrintStream err) {
        CliArgs a = CliArgs.parse(args, 2, FLAGS);
        for (String serveOnly : List.of("--target", "--api-key", "--header", "--api")) {
            if (a.has(serveOnly)) {
                throw new UsageException(serveOnly + " is bench serve's; bench engine loads --model DIR in-process");
            }
        }
        List<String> models = a.all("--model");
        if (models.size() > 1) {
            throw new UsageException("bench engine loads one --model DIR");
        }
        Path modelDir = models.isEmpty()
                ? ProjectHome.get().resolve(GenerateCommand.DEFAULT_MODEL)
                : Path.of(models.getFirst());
        int rows = a.intValue("--decode-concurrency", ConcurrencyFlags.DEFAULT_DECODE_CONCURRENCY, 1);
        LocalEngine.PromptCache promptCache = PromptCacheFlags.parse(a);
        BenchOptions parsed;
        try {
            parsed = options(a, List.of(Target.inProcess("engine", "default_model")), args);
        } catch (IllegalArgumentException e) {
            throw new UsageException(e.getMessage());
        }
        EngineConfig config = EngineConfig.builder()
                .decodeConcurrency(rows)
                .promptConcurrency(rows)
                .build();
        try (LocalEngine engine = LocalEngine.open(
                modelDir,
                LocalEngine.Options.defaults(LocalEngine.contextLength(modelDir))
                        .withEngine(config)
                        .withPromptCache(promptCache))) {
            Target target = Target.inProcess("engine", engine.modelId());
            BenchOptions options = new BenchOptions(
                    List.of(target),
                    parsed.api(),
                    parsed.levels(),
                    parsed.workload(),
                    parsed.workloadParams(),
                    parsed.prompts(),
                    parsed.rounds(),
                    parsed.warmup(),
                    parsed.slo(),
                    parsed.out(),
                    parsed.timeout(),
                    parsed.cpuBoundCores(),
                    parsed.plots(),
                    parsed.command());
            BenchRunner runner = new BenchRunner(
                    options,
                    err,
                    System.console() != null,
                    new EngineSender(engine, options.timeout()),
                    t -> new TargetInfo(
                            t,
                            null,
                            null,
                            "mlx-ring LocalEngine, decode concurrency " + rows + ", prompt cache "
                                    + (promptCache.maxEntries() > 0 ? promptCache.maxEntries() + " entries" : "off"),
                            engine.modelId(),
                            -1),
                    "mlx-ring bench engine",
                    "in-process (LocalEngine.submit)");
            BenchServe.write(options, runner.run(), out, err);
        } catch (IOException e) {
            throw new UncheckedIOException(e);
        } catch (InterruptedException e) {
            Thread.currentThread().interrupt();
            throw new IllegalStateException("interrupted");
        }
        return 0;
    }

    /**
     * {@code bench compare A B}: two results JSONs (or folders holding one) side by side
     * ({@link ResultsComparison}), printed as Markdown.
     */
    private static int compare(String[] args, PrintStream out) {
        if (args.length != 4 || args[2].startsWith("--") || args[3].startsWith("--")) {
            throw new UsageException("bench compare takes two results files or folders: bench compare A B");
        }
        try {
            out.print(ResultsComparison.markdown(
                    ResultsComparison.read(Path.of(args[2])),
                    args[2],
                    ResultsComparison.read(Path.of(args[3])),
                    args[3]));
        } catch (IllegalArgumentException e) {
            throw new UsageException(e.getMessage());
        }
        return 0;
    }

    /** The options of {@code args} ({@code bench serve …}); bad input raises {@link UsageException}. */
    static BenchOptions parse(String[] args) {
        CliArgs a = CliArgs.parse(args, 2, FLAGS);
        try {
            Map<String, Target> targets = new LinkedHashMap<>();
            for (String spec : a.all("--target")) {
                Target t = Target.parse(spec);
                if (targets.put(t.name(), t) != null) {
                    throw new UsageException("--target " + t.name() + " is given twice");
                }
            }
            if (targets.isEmpty()) {
                throw new UsageException("bench serve needs at least one --target NAME=URL");
            }
            for (String spec : a.all("--api-key")) {
                String[] kv = perTarget("--api-key", spec, targets);
                targets.put(kv[0], targets.get(kv[0]).withHeader("Authorization", "Bearer " + kv[1]));
            }
            for (String spec : a.all("--header")) {
                String[] kv = perTarget("--header", spec, targets);
                int colon = kv[1].indexOf(':');
                if (colon <= 0) {
                    throw new UsageException("--header takes NAME=HEADER:VALUE, got '" + spec + "'");
                }
                targets.put(
                        kv[0],
                        targets.get(kv[0])
                                .withHeader(
                                        kv[1].substring(0, colon).trim(),
                                        kv[1].substring(colon + 1).trim()));
            }
            for (String spec : a.all("--model")) {
                String[] kv = perTarget("--model", spec, targets);
                targets.put(kv[0], targets.get(kv[0]).withModel(kv[1]));
            }
            for (String engineOnly : engineOnlyFlags()) {
                if (a.has(engineOnly)) {
                    throw new UsageException(
                            engineOnly + " configures bench engine's embedded engine; a server sets its" + " own");
                }
            }
            return options(a, List.copyOf(targets.values()), args);
        } catch (IllegalArgumentException e) {
            throw new UsageException(e.getMessage());
        }
    }

    /** The flags only bench engine takes: the embedded engine's batch rows and prompt cache. */
    private static List<String> engineOnlyFlags() {
        List<String> out = new ArrayList<>(List.of("--decode-concurrency"));
        out.addAll(PromptCacheFlags.NAMES);
        return out;
    }

    /** The options every sub-command shares (levels, workload, rounds, SLOs, output), for {@code targets}. */
    private static BenchOptions options(CliArgs a, List<Target> targets, String[] args) {
        try {
            if (a.has("--max-concurrency") == a.has("--request-rate")) {
                throw new UsageException(
                        "bench " + args[1] + " takes one of --max-concurrency LIST and --request-rate LIST");
            }
            double burstiness = a.doubleValue("--burstiness", 1.0);
            if (a.has("--burstiness") && !a.has("--request-rate")) {
                throw new UsageException("--burstiness shapes --request-rate's arrivals; it needs --request-rate");
            }
            List<LoadLevel> levels = new ArrayList<>();
            String flag = a.has("--max-concurrency") ? "--max-concurrency" : "--request-rate";
            for (String v : a.get(flag).split(",")) {
                String s = v.trim();
                try {
                    if (flag.equals("--max-concurrency")) {
                        levels.add(new LoadLevel.Concurrency(Integer.parseInt(s)));
                    } else {
                        double rate = s.equals("inf") ? Double.POSITIVE_INFINITY : Double.parseDouble(s);
                        levels.add(new LoadLevel.Rate(rate, burstiness));
                    }
                } catch (NumberFormatException e) {
                    throw new UsageException(flag + " takes comma-separated numbers, got '" + s + "'");
                }
            }
            Long seed = a.longValue("--seed");
            String workload = a.has("--workload") ? a.get("--workload") : "random";
            if (a.has("--turns") && !workload.equals(Workloads.MULTI_TURN)) {
                throw new UsageException(
                        "--turns applies to --workload " + Workloads.MULTI_TURN + " only; got --workload " + workload);
            }
            Workloads.Params params = new Workloads.Params(
                    LengthRange.parse("--input-len", a.has("--input-len") ? a.get("--input-len") : DEFAULT_LEN),
                    LengthRange.parse("--output-len", a.has("--output-len") ? a.get("--output-len") : DEFAULT_LEN),
                    a.intValue("--num-prompts", DEFAULT_NUM_PROMPTS, 1),
                    a.intValue("--prefix-count", DEFAULT_PREFIX_COUNT, 1),
                    seed == null ? 0 : seed,
                    workload.equals(Workloads.MULTI_TURN) ? a.intValue("--turns", DEFAULT_TURNS, 1) : 1);
            double cpuBound = a.doubleValue("--cpu-bound", DEFAULT_CPU_BOUND);
            if (!(cpuBound >= 0)) {
                throw new UsageException("--cpu-bound must be a number of cores >= 0, got " + cpuBound);
            }
            Path outDir = a.has("--out")
                    ? Path.of(a.get("--out"))
                    : Path.of(
                            "bench-results",
                            LocalDateTime.now().format(DateTimeFormatter.ofPattern("yyyyMMdd-HHmmss")));
            return new BenchOptions(
                    targets,
                    ApiDialect.parse(a.has("--api") ? a.get("--api") : "chat"),
                    levels,
                    workload,
                    params,
                    Workloads.load(workload, params),
                    a.intValue("--rounds", DEFAULT_ROUNDS, 1),
                    a.intValue("--warmup", DEFAULT_WARMUP, 0),
                    a.has("--slo") ? Slo.parse(a.get("--slo")) : Slo.NONE,
                    outDir,
                    Duration.ofSeconds(a.intValue("--timeout-seconds", DEFAULT_TIMEOUT_SECONDS, 1)),
                    cpuBound,
                    !a.has("--no-plots"),
                    commandLine(args));
        } catch (IllegalArgumentException e) {
            throw new UsageException(e.getMessage());
        }
    }

    /** {@code NAME=VALUE} of a per-target flag, NAME one of {@code targets}. */
    private static String[] perTarget(String flag, String spec, Map<String, Target> targets) {
        int eq = spec.indexOf('=');
        if (eq <= 0) {
            throw new UsageException(flag + " takes NAME=VALUE, NAME a --target's name; got '" + spec + "'");
        }
        String name = spec.substring(0, eq);
        if (!targets.containsKey(name)) {
            throw new UsageException(
                    flag + " names target '" + name + "', which no --target declares (" + targets.keySet() + ")");
        }
        return new String[] {name, spec.substring(eq + 1)};
    }

    /** The command as typed, each argument shell-quoted where it needs it; API keys masked. */
    static String commandLine(String[] args) {
        StringBuilder sb = new StringBuilder("mlx-ring");
        for (int i = 0; i < args.length; i++) {
            String arg = args[i];
            if (i > 0 && args[i - 1].equals("--api-key") && arg.contains("=")) {
                arg = arg.substring(0, arg.indexOf('=') + 1) + "***";
            } else if (arg.startsWith("--api-key=")) {
                arg = "--api-key=***";
            }
            sb.append(' ');
            sb.append(arg.matches("[A-Za-z0-9_./:=,@%+-]+") ? arg : "'" + arg.replace("'", "'\\''") + "'");
        }
        return sb.toString();
    }
}
