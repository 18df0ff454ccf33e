package dev.mlxring.ingress.cli;

import dev.mlxring.engine.LocalEngine;
import dev.mlxring.engine.SpeculativeDecoding;
import dev.mlxring.exec.generate.GenerationOptions;
import dev.mlxring.exec.shard.ShardFollower;
import dev.mlxring.exec.shard.ShardLaunch;
import dev.mlxring.exec.shard.ShardLeader;
import dev.mlxring.ingress.http.AdapterNames;
import dev.mlxring.ingress.http.ConnectionLimits;
import dev.mlxring.ingress.http.HttpServer;
import dev.mlxring.ingress.http.ModelRoute;
import dev.mlxring.ingress.http.ServerDefaults;
import dev.mlxring.ingress.http.ServerMetrics;
import dev.mlxring.ingress.pool.AsyncMemoryLimits;
import dev.mlxring.ingress.pool.MemoryBudget;
import dev.mlxring.ingress.pool.ModelPool;
import dev.mlxring.ingress.pool.ModelSources;
import dev.mlxring.ingress.pool.ModelSpec;
import dev.mlxring.ingress.pool.PoolMetrics;
import dev.mlxring.ingress.pool.PromptCacheCap;
import dev.mlxring.mlx.CpuKernels;
import dev.mlxring.mlx.Group;
import dev.mlxring.mlx.Mlx;
import dev.mlxring.mlx.Numerics;
import dev.mlxring.mlx.ProjectHome;
import dev.mlxring.pipeline.Engine;
import dev.mlxring.pipeline.EngineConfig;
import dev.mlxring.pipeline.KvQuantization;
import dev.mlxring.pipeline.WaitMode;
import dev.mlxring.plan.RequestPlanner;
import dev.mlxring.tokenizer.HfTokenizer;
import java.io.PrintStream;
import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Duration;
import java.util.List;
import java.util.concurrent.atomic.AtomicBoolean;

/**
 * {@code mlx-ring serve}: the composition root of the server. The only place that knows every
 * stage implementation: prep (template + tokenizer), plan (defaults, admission), exec (the model
 * on the MLX thread), sink (detokenizer, stops, reasoning) and the HTTP surface.
 */
final class ServeCommand {
    /**
     * Requests admitted and waiting at most (then 503): each runs after those ahead of it, so a
     * longer queue only makes its last client wait minutes for a first token.
     */
    static final int DEFAULT_MAX_QUEUED = 32;

    /** Default of {@code --shutdown-grace-seconds}: how long running requests may finish on SIGTERM. */
    static final int DEFAULT_SHUTDOWN_GRACE_SECONDS = 30;

    static final String DEFAULT_HOST = "127.0.0.1";
    static final int DEFAULT_PORT = 8080;
    /** Default of {@code --max-tokens}, as mlx_lm.server's. */
    static final int DEFAULT_MAX_TOKENS = 512;

    /** Every flag {@code serve} accepts: what it parses and what {@code serve --help} prints. */
    static final CommandFlags FLAGS = CommandFlags.of(
            "serve",
            "Serves a model over HTTP: OpenAI chat and responses, Anthropic messages (docs/cli.md, docs/api.md).",
            List.of(
                    List.of(
                            Flag.valued(
                                    "--model",
                                    "DIR",
                                    GenerateCommand.DEFAULT_MODEL,
                                    "MLX model directory (config.json, *.safetensors, tokenizer.json)"),
                            Flag.valued(
                                    "--model-dir",
                                    "DIR",
                                    "none",
                                    "serve every model folder under DIR too, named by its folder, loaded on first use"),
                            Flag.valued(
                                    "--models",
                                    "FILE",
                                    "none",
                                    "JSON: model name -> {path, pinned, kv-bits, max-kv-size, numerics, ...}"),
                            Flag.valued(
                                    "--memory-budget",
                                    "BYTES",
                                    "75% of physical memory",
                                    "models' resident bytes (prompt cache caps included) + admitted requests' peaks stay under it (8GB, 500MB or a count)"),
                            Flag.valued(
                                    "--model-ttl",
                                    "S",
                                    0,
                                    "unload a model idle S seconds (not the default or pinned ones); 0 = only for room"),
                            Flag.valued("--host", "HOST", DEFAULT_HOST, "address to bind"),
                            Flag.valued("--port", "PORT", DEFAULT_PORT, "port to bind; 0 picks a free one"),
                            Flag.valued(
                                    "--max-tokens",
                                    "N",
                                    DEFAULT_MAX_TOKENS,
                                    "max_tokens of requests that leave it out"),
                            Flag.valued("--temp", "T", 0.0, "temperature of requests that leave it out; 0 = greedy"),
                            Flag.valued("--top-p", "P", 1.0, "top_p of requests that leave it out"),
                            Flag.valued("--top-k", "K", 0, "top_k of requests that leave it out; 0 = off"),
                            Flag.valued("--min-p", "P", 0.0, "min_p of requests that leave it out; 0 = off"),
                            Flag.valued(
                                    "--api-key",
                                    "KEY",
                                    "none",
                                    "require Authorization: Bearer KEY on every route but /health"),
                            Flag.valued(
                                    "--allowed-origins",
                                    "LIST",
                                    String.join(",", HttpServer.ANY_ORIGIN),
                                    "comma-separated origins a browser page may call the server from (CORS)"),
                            Flag.valued(
                                    "--prefill-step-size",
                                    "N",
                                    GenerationOptions.DEFAULT_PREFILL_STEP_SIZE,
                                    "prompt tokens per prefill chunk, as mlx-lm"),
                            Flag.valued(
                                    "--max-queued", "N", DEFAULT_MAX_QUEUED, "requests admitted at most; beyond: 503"),
                            Flag.valued(
                                    "--wait-mode",
                                    "blocking|yielding|busy-spin",
                                    "blocking",
                                    "how idle stage threads wait")),
                    ConcurrencyFlags.FLAGS,
                    KvFlags.QUANTIZATION_FLAGS,
                    List.of(
                            KvFlags.MAX_KV_SIZE,
                            Flag.valued(
                                    "--max-body-bytes",
                                    "N",
                                    HttpServer.DEFAULT_MAX_BODY_BYTES,
                                    "larger request bodies are refused with 413 (at most "
                                            + HttpServer.MOST_MAX_BODY_BYTES + ")"),
                            Flag.valued(
                                    "--max-prompt-tokens",
                                    "N",
                                    "the model's context less one",
                                    "longer prompts are refused with 400 context_length_exceeded"),
                            Flag.valued(
                                    "--shutdown-grace-seconds",
                                    "S",
                                    DEFAULT_SHUTDOWN_GRACE_SECONDS,
                                    "on SIGTERM or Ctrl-C, how long accepted requests may still run; 0 cancels them at once")),
                    ConnectionFlags.FLAGS,
                    List.of(CpuKernelsFlag.FLAG, NumericsFlag.FLAG, DequantizedWeightsFlag.FLAG),
                    List.of(AdapterFlag.FLAG),
                    NamedAdapterFlags.FLAGS,
                    PromptCacheFlags.FLAGS,
                    SpeculativeFlags.FLAGS,
                    ShardFlags.FLAGS),
            """
            tensor-parallel, under MLX's launcher (docs/distributed.md):
              .venv/bin/mlx.launch -n 2 -- ./mlx-ring serve --model DIR      (or --hostfile hosts.json)
            """);

    private ServeCommand() {}

    /** What {@link #start} built, closed in reverse order (once). */
    record Running(HttpServer server, ModelPool pool, AsyncMemoryLimits limits, AtomicBoolean closed)
            implements AutoCloseable {
        Running(HttpServer server, ModelPool pool, AsyncMemoryLimits limits) {
            this(server, pool, limits, new AtomicBoolean());
        }

        /** The default model's pipeline. */
        Engine engine() {
            return pool.defaultRoute().engine();
        }

        /** The default model's engine (its prefix cache, tokenizer). */
        LocalEngine local() {
            return ((PooledEngine) pool.defaultLoaded()).local();
        }

        @Override
        public void close() {
            if (closed.compareAndSet(false, true)) {
                server.close();
                pool.close();
                limits.close();
            }
        }
    }

    static int run(String[] args, PrintStream out) {
        CliArgs a = CliArgs.parse(args, 1, FLAGS);
        int grace = a.intValue("--shutdown-grace-seconds", DEFAULT_SHUTDOWN_GRACE_SECONDS, 0);
        GracefulShutdown shutdown = new GracefulShutdown(Duration.ofSeconds(grace));
        // Under mlx.launch every rank runs this command: rank 0 serves, the others follow it.
        ShardLaunch launch = ShardFlags.launch(a);
        Group group = launch.launched() ? launch.join(ShardFlags.STARTUP_NS) : null;
        if (group != null && group.size() > 1 && group.rank() > 0) {
            try {
                return ShardFollower.run(
                        launch, group, modelDir(a), ShardFlags.STARTUP_NS, ShardFlags.rankTimeoutNs(a), System.err);
            } catch (InterruptedException e) {
                Thread.currentThread().interrupt();
                return 1;
            }
        }
        Running running = start(a, out, group != null && group.size() > 1 ? launch : null, group);
        // SIGTERM / SIGINT drain gracefully (below); any other exit still closes cleanly.
        Runtime.getRuntime().addShutdownHook(new Thread(running::close, "mlxring-shutdown"));
        shutdown.onSignals();
        try {
            shutdown.awaitAndDrain(running.server(), running.engine());
        } catch (InterruptedException e) {
            Thread.currentThread().interrupt();
        }
        running.close();
        return 0;
    }

    static Running start(CliArgs a, PrintStream out) {
        return start(a, out, null, null);
    }

    /** The model directory of {@code --model}, else the default model; it must exist. */
    static Path modelDir(CliArgs a) {
        Path modelDir =
                a.has("--model") ? Path.of(a.get("--model")) : ProjectHome.get().resolve(GenerateCommand.DEFAULT_MODEL);
        if (!Files.isDirectory(modelDir)) {
            throw new IllegalArgumentException("model directory " + modelDir + " does not exist"
                    + (a.has("--model") ? "" : " (run ./mlx-ring setup to prepare the default model)"));
        }
        return modelDir;
    }

    /**
     * Starts the server; with {@code launch} and {@code group} (a group of two or more ranks),
     * as rank 0: it waits for the other ranks on the control channel, then serves with its part
     * of the model while they follow.
     */
    static Running start(CliArgs a, PrintStream out, ShardLaunch launch, Group group) {
        ConnectionLimits connections = ConnectionFlags.parse(a);
        KvQuantization kv = KvFlags.parse(a);
        int maxKvSize = KvFlags.maxKvSize(a);
        SpeculativeDecoding speculative = SpeculativeFlags.parse(a);
        if (speculative.on() && maxKvSize > 0) {
            throw new UsageException("--speculative " + speculative.method() + " cannot be used with --max-kv-size "
                    + "(its rotating caches cannot be rolled back)");
        }
        if (speculative.on() && launch != null) {
            throw new UsageException("--speculative " + speculative.method() + " cannot run tensor-parallel");
        }
        CpuKernels kernels = CpuKernelsFlag.parse(a);
        Numerics numerics = NumericsFlag.parse(a, kernels, launch != null);
        boolean dequantizedWeights = DequantizedWeightsFlag.parse(a, kernels, numerics, launch != null);
        Path adapterDir = AdapterFlag.parse(a, launch != null);
        LocalEngine.NamedAdapters namedAdapters = NamedAdapterFlags.parse(a, launch != null, adapterDir);
        LocalEngine.PromptCache promptCache = PromptCacheFlags.parse(a);
        Path modelDir = modelDir(a);
        String host = a.has("--host") ? a.get("--host") : DEFAULT_HOST;
        int port = a.intValue("--port", DEFAULT_PORT, 0);
        int maxTokens = a.intValue("--max-tokens", DEFAULT_MAX_TOKENS, 1);
        int prefillStep = a.intValue("--prefill-step-size", GenerationOptions.DEFAULT_PREFILL_STEP_SIZE, 1);
        double temp = doubleFlag(a, "--temp", 0.0);
        double topP = doubleFlag(a, "--top-p", 1.0);
        double minP = doubleFlag(a, "--min-p", 0.0);
        int topK = a.intValue("--top-k", 0, 0);
        WaitMode waitMode = a.has("--wait-mode") ? waitMode(a.get("--wait-mode")) : WaitMode.BLOCKING;
        EngineConfig engineConfig = ConcurrencyFlags.apply(
                a,
                EngineConfig.defaults()
                        .withWaitMode(waitMode)
                        .withMaxQueued(a.intValue("--max-queued", DEFAULT_MAX_QUEUED, 1)));
        long maxBodyBytes = longFlag(a, "--max-body-bytes", HttpServer.DEFAULT_MAX_BODY_BYTES);
        if (maxBodyBytes > HttpServer.MOST_MAX_BODY_BYTES) {
            throw new UsageException("--max-body-bytes must be at most " + HttpServer.MOST_MAX_BODY_BYTES
                    + " (a body is read whole into memory), got " + maxBodyBytes);
        }
        int maxPromptTokens = a.intValue("--max-prompt-tokens", 0, 1);
        List<String> allowedOrigins =
                a.has("--allowed-origins") ? List.of(a.get("--allowed-origins").split(",")) : HttpServer.ANY_ORIGIN;

        String modelId = modelDir.getFileName().toString();
        List<ModelSpec> specs = modelSpecs(a, modelId, modelDir);
        if (launch != null && specs.size() > 1) {
            throw new UsageException("--model-dir and --models cannot run tensor-parallel (one model only)");
        }
        if (speculative.on() && specs.size() > 1) {
            throw new UsageException("--speculative cannot be used with --model-dir or --models");
        }
        long budgetBytes = a.has("--memory-budget")
                ? PromptCacheFlags.parseSize("--memory-budget", a.get("--memory-budget"))
                : MemoryBudget.defaultBytes();
        if (budgetBytes < 1) {
            throw new UsageException(
                    "--memory-budget must be at least one byte, got '" + a.get("--memory-budget") + "'");
        }
        long ttlSeconds = a.intValue("--model-ttl", 0, 0);
        // Each model's RAM prefix cache is capped and the cap counted in its resident bytes.
        long promptCacheBytes = PromptCacheCap.bytes(
                budgetBytes, promptCache.maxEntries(), a.has("--prompt-cache-bytes") ? promptCache.maxBytes() : -1);
        LocalEngine.PromptCache capped = new LocalEngine.PromptCache(
                promptCache.maxEntries(),
                promptCacheBytes,
                promptCache.dir(),
                promptCache.diskBytes(),
                promptCache.quarantineCap(),
                promptCache.checkpointTokens());
        ShardLeader leader = launch == null
                ? null
                : ShardLeader.start(
                        launch,
                        group,
                        modelDir,
                        prefillStep,
                        maxKvSize,
                        kernels,
                        promptCache.maxEntries(),
                        promptCacheBytes,
                        ShardFlags.STARTUP_NS,
                        ShardFlags.rankTimeoutNs(a));
        ModelPool.Loader loader = spec -> {
            boolean isDefault = spec.name().equals(modelId);
            CliArgs m = a.with(spec.flags());
            int modelMaxKvSize = KvFlags.maxKvSize(m);
            int maxContext = LocalEngine.contextLength(spec.dir());
            LocalEngine local = LocalEngine.open(
                    spec.dir(),
                    LocalEngine.Options.builder(new RequestPlanner.Defaults(
                                            maxTokens, temp, topP, topK, minP, maxContext, KvFlags.parse(m))
                                    .withMaxPromptTokens(maxPromptTokens))
                            .prefillStepSize(prefillStep)
                            .engine(engineConfig)
                            .maxKvSize(modelMaxKvSize)
                            .cpuKernels(kernels)
                            .numerics(NumericsFlag.parse(m, kernels, launch != null))
                            // One SSD tier per folder: the default model's.
                            .promptCache(
                                    isDefault
                                            ? capped
                                            : new LocalEngine.PromptCache(promptCache.maxEntries(), promptCacheBytes))
                            .dequantizedWeights(dequantizedWeights)
                            .speculative(isDefault ? speculative : SpeculativeDecoding.OFF)
                            .adapterPath(isDefault ? adapterDir : null)
                            // Named adapters belong to the default model: <default>:<NAME>.
                            .namedAdapters(isDefault ? namedAdapters : LocalEngine.NamedAdapters.NONE)
                            .build(),
                    isDefault ? leader : null);
            HfTokenizer tokenizer = local.tokenizer();
            return new PooledEngine(
                    local,
                    new ServerDefaults(
                            maxTokens,
                            maxContext,
                            local.vocabSize(),
                            isDefault
                                    ? new AdapterNames(
                                            adapterDir == null ? null : adapterDir.toString(), names(namedAdapters))
                                    : AdapterNames.NONE),
                    id -> tokenizer.decode(new int[] {id}, false),
                    prefillStep,
                    modelMaxKvSize);
        };
        // MLX's set_cache_limit waits for every CPU stream's work in flight: applied off the pool's lock.
        AsyncMemoryLimits limits = new AsyncMemoryLimits(
                ServeCommand::mlxLimits, "mlx-memory-limits", java.util.concurrent.TimeUnit.SECONDS.toNanos(1));
        ModelPool pool;
        try {
            pool = new ModelPool(
                            specs,
                            modelId,
                            new java.util.LinkedHashSet<>(namedAdapters.dirs().keySet()),
                            loader,
                            new MemoryBudget(budgetBytes),
                            java.util.concurrent.TimeUnit.SECONDS.toNanos(ttlSeconds),
                            limits,
                            ModelPool.DEFAULT_LOAD_RETRY_BACKOFF_NS,
                            promptCacheBytes)
                    .start();
        } catch (RuntimeException e) {
            limits.close();
            if (leader != null) {
                leader.abandon();
            }
            throw e;
        }
        ModelRoute defaults = pool.defaultRoute();
        HttpServer server;
        try {
            ServerMetrics metrics = new ServerMetrics(
                    defaults.engine(),
                    () -> Mlx.memory().activeBytes(),
                    () -> Mlx.memory().peakBytes(),
                    Mlx.memory().activeBytes());
            PoolMetrics.register(pool, metrics);
            server = new HttpServer(
                            new HttpServer.Config(
                                    host,
                                    port,
                                    modelId,
                                    a.get("--api-key"),
                                    defaults.defaults(),
                                    "mlx-ring-0.1.0-mlx-" + Mlx.version(),
                                    maxBodyBytes,
                                    allowedOrigins,
                                    connections),
                            pool,
                            metrics)
                    .start();
        } catch (RuntimeException e) {
            pool.close();
            limits.close();
            throw e;
        }
        out.printf(
                "mlx-ring serving %s on http://%s:%d (OpenAI: /v1/chat/completions, /v1/completions,"
                        + " /v1/responses; Anthropic: /v1/messages; /v1/models, /health, /metrics)%s%n",
                modelId,
                host,
                server.port(),
                leader == null
                        ? ""
                        : "; tensor-parallel over " + group.size() + " ranks (" + launch.backendName()
                                + "), this is rank 0");
        if (NumericsFlag.notice(numerics) != null) {
            out.println(NumericsFlag.notice(numerics));
        }
        out.flush();
        return new Running(server, pool, limits);
    }

    /**
     * The models served: {@code --model} (the default, pinned), then {@code --model-dir}'s
     * folders, then {@code --models}' entries; a name given twice must name one directory.
     */
    static List<ModelSpec> modelSpecs(CliArgs a, String defaultName, Path defaultDir) {
        java.util.Map<String, ModelSpec> byName = new java.util.LinkedHashMap<>();
        byName.put(defaultName, ModelSpec.of(defaultName, defaultDir, true));
        List<ModelSpec> more = new java.util.ArrayList<>();
        try {
            if (a.has("--model-dir")) {
                more.addAll(ModelSources.scan(Path.of(a.get("--model-dir"))));
            }
            if (a.has("--models")) {
                more.addAll(ModelSources.read(Path.of(a.get("--models"))));
            }
        } catch (IllegalArgumentException e) {
            throw new UsageException(e.getMessage());
        }
        for (ModelSpec s : more) {
            ModelSpec before = byName.get(s.name());
            if (before == null) {
                byName.put(s.name(), s);
            } else if (!sameDir(before.dir(), s.dir())) {
                throw new UsageException(
                        "two models are named '" + s.name() + "': " + before.dir() + " and " + s.dir());
            } else if (!s.flags().isEmpty() || s.pinned()) {
                // The models file's settings for a model also found elsewhere.
                byName.put(s.name(), new ModelSpec(s.name(), s.dir(), s.pinned() || before.pinned(), s.flags()));
            }
        }
        return List.copyOf(byName.values());
    }

    private static boolean sameDir(Path x, Path y) {
        try {
            return Files.isSameFile(x, y);
        } catch (java.io.IOException e) {
            return x.toAbsolutePath().normalize().equals(y.toAbsolutePath().normalize());
        }
    }

    /** MLX's memory and cache limits, from the pool's budget. */
    private static void mlxLimits(long memoryLimitBytes, long cacheLimitBytes) {
        Mlx.setMemoryLimit(memoryLimitBytes);
        Mlx.setCacheLimit(cacheLimitBytes);
    }

    /** A {@link LocalEngine} as a pool's loaded model; closing it frees its arrays, then MLX's cached buffers. */
    private record PooledEngine(
            LocalEngine local,
            ServerDefaults defaults,
            java.util.function.IntFunction<String> tokenText,
            int prefillChunkTokens,
            int maxKvSize)
            implements ModelPool.Loaded {
        @Override
        public Engine engine() {
            return local.engine();
        }

        @Override
        public void close() {
            local.close();
            Mlx.clearCache();
        }
    }

    /** The named adapters' folders as given, by name. */
    private static java.util.Map<String, String> names(LocalEngine.NamedAdapters named) {
        java.util.Map<String, String> out = new java.util.LinkedHashMap<>();
        named.dirs().forEach((n, d) -> out.put(n, d.toString()));
        return out;
    }

    private static long longFlag(CliArgs a, String flag, long dflt) {
        if (!a.has(flag)) {
            return dflt;
        }
        try {
            long v = Long.parseLong(a.get(flag));
            if (v < 1) {
                throw new NumberFormatException();
            }
            return v;
        } catch (NumberFormatException e) {
            throw new UsageException(flag + " must be a positive integer, got '" + a.get(flag) + "'");
        }
    }

    private static double doubleFlag(CliArgs a, String flag, double dflt) {
        if (!a.has(flag)) {
            return dflt;
        }
        try {
            return Double.parseDouble(a.get(flag));
        } catch (NumberFormatException e) {
            throw new UsageException(flag + " must be a number, got '" + a.get(flag) + "'");
        }
    }

    private static WaitMode waitMode(String v) {
        try {
            return WaitMode.valueOf(v.toUpperCase().replace('-', '_'));
        } catch (IllegalArgumentException e) {
            throw new UsageException("--wait-mode must be blocking, yielding or busy-spin, got '" + v + "'");
        }
    }
}
