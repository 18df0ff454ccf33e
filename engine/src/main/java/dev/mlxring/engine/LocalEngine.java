package dev.mlxring.engine;

import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.ObjectMapper;
import dev.mlxring.constraint.ConstraintTokenizer;
import dev.mlxring.constraint.ConstraintVocabulary;
import dev.mlxring.exec.generate.GenerationOptions;
import dev.mlxring.exec.generate.GenerationRun;
import dev.mlxring.exec.generate.ModelExecutor;
import dev.mlxring.exec.model.LanguageModel;
import dev.mlxring.exec.model.ModelConfig;
import dev.mlxring.exec.model.Models;
import dev.mlxring.exec.nn.AdapterCache;
import dev.mlxring.exec.prefix.PrefixReuse;
import dev.mlxring.exec.sample.EngineRng;
import dev.mlxring.exec.shard.ShardLeader;
import dev.mlxring.exec.shard.ShardedExecutor;
import dev.mlxring.exec.spec.Speculation;
import dev.mlxring.kvstore.ModelFingerprint;
import dev.mlxring.kvstore.QuarantineCap;
import dev.mlxring.kvstore.RamPrefixCache;
import dev.mlxring.kvstore.TieredPrefixCache;
import dev.mlxring.mlx.CpuKernels;
import dev.mlxring.mlx.Numerics;
import dev.mlxring.pipeline.Engine;
import dev.mlxring.pipeline.EngineConfig;
import dev.mlxring.pipeline.GenerationListener;
import dev.mlxring.pipeline.GenerationRequest;
import dev.mlxring.pipeline.Session;
import dev.mlxring.pipeline.TokenDecoder;
import dev.mlxring.plan.RequestPlanner;
import dev.mlxring.plan.constraint.ConstraintCompiler;
import dev.mlxring.plan.constraint.ModelTools;
import dev.mlxring.plan.constraint.ToolSyntax;
import dev.mlxring.prep.ChatTemplate;
import dev.mlxring.prep.PromptPreparer;
import dev.mlxring.sink.DetokenizingSinks;
import dev.mlxring.sink.ThinkMarkers;
import dev.mlxring.sink.tools.ToolCallParser;
import dev.mlxring.sink.tools.ToolCallParsers;
import dev.mlxring.tokenizer.HfTokenizer;
import java.io.IOException;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.LinkedHashSet;
import java.util.Map;
import java.util.Set;
import java.util.function.Supplier;
import java.util.stream.IntStream;

/**
 * The composition root: one model directory wired into the stage pipeline — prep (chat template
 * + tokenizer), plan (defaults, admission), exec (the model on the MLX thread), sink (detokenizer,
 * stops, reasoning, tool calls). The HTTP server and in-process hosts both start here; a host then calls
 * {@link #submit} with a {@link GenerationListener}, no HTTP involved.
 */
public final class LocalEngine implements AutoCloseable {
    private static final System.Logger LOG = System.getLogger(LocalEngine.class.getName());

    /**
     * How {@link #open} loads and serves a model; built with {@link #builder} (or
     * {@link #defaults(int)} for mlx_lm.server's), changed with the with-methods.
     *
     * @param defaults server-wide request defaults (max tokens, sampling, context)
     * @param prefillStepSize prompt tokens per prefill chunk (mlx-lm: 2048)
     * @param engine the pipeline's sizes and policies (concurrency, wait mode, rings, KV budget)
     * @param maxKvSize {@code --max-kv-size} (mlx-lm's {@code max_kv_size}); 0 = none
     * @param cpuKernels the CPU kernels of the model's quantized matmuls ({@code --cpu-kernels})
     * @param numerics their numeric tier ({@code --numerics}; {@link Numerics#FAST} is not mlx-lm's bytes)
     * @param promptCache the prefix cache's tiers and caps ({@code --prompt-cache-*})
     * @param dequantizedWeights keep quantized weights dequantized too ({@code --dequantized-weights}:
     *     same bytes, faster with float16/bfloat16 activations, 2 bytes a weight more memory)
     * @param speculative speculative decoding ({@code --speculative}, {@code --draft-model}): when on,
     *     requests run one at a time and each that can speculate does
     * @param adapterPath an adapter folder applied to the model at load ({@code --adapter-path}), or
     *     null; the prefix cache's namespace carries its fingerprint
     * @param namedAdapters the adapters a request may name ({@code --adapter NAME=DIR},
     *     {@code --adapter-cache-bytes}); {@link NamedAdapters#NONE} for none
     */
    public record Options(
            RequestPlanner.Defaults defaults,
            int prefillStepSize,
            EngineConfig engine,
            int maxKvSize,
            CpuKernels cpuKernels,
            Numerics numerics,
            PromptCache promptCache,
            boolean dequantizedWeights,
            SpeculativeDecoding speculative,
            Path adapterPath,
            NamedAdapters namedAdapters) {
        public Options {
            java.util.Objects.requireNonNull(namedAdapters, "namedAdapters");
        }

        /** mlx_lm.server's defaults for a model with {@code maxContextTokens}. */
        public static Options defaults(int maxContextTokens) {
            return builder(RequestPlanner.Defaults.mlxLm(maxContextTokens)).build();
        }

        /**
         * A builder from the request defaults {@code defaults}; every other knob starts at
         * mlx-ring's default, as {@link Builder} lists.
         */
        public static Builder builder(RequestPlanner.Defaults defaults) {
            return new Builder(defaults);
        }

        /** A builder with every field of these options set, for a copy that changes some. */
        public Builder toBuilder() {
            return new Builder(defaults)
                    .prefillStepSize(prefillStepSize)
                    .engine(engine)
                    .maxKvSize(maxKvSize)
                    .cpuKernels(cpuKernels)
                    .numerics(numerics)
                    .promptCache(promptCache)
                    .dequantizedWeights(dequantizedWeights)
                    .speculative(speculative)
                    .adapterPath(adapterPath)
                    .namedAdapters(namedAdapters);
        }

        /** These options with {@code config} as the pipeline's sizes and policies (concurrency, wait mode, ...). */
        public Options withEngine(EngineConfig config) {
            return toBuilder().engine(config).build();
        }

        /** These options with {@code p} as the prefix cache. */
        public Options withPromptCache(PromptCache p) {
            return toBuilder().promptCache(p).build();
        }

        /** These options with {@code s} as the speculative decoding. */
        public Options withSpeculative(SpeculativeDecoding s) {
            return toBuilder().speculative(s).build();
        }

        /** These options with the adapter folder {@code dir} (null: none). */
        public Options withAdapter(Path dir) {
            return toBuilder().adapterPath(dir).build();
        }

        /** These options with {@code a} as the named adapters. */
        public Options withNamedAdapters(NamedAdapters a) {
            return toBuilder().namedAdapters(a).build();
        }

        /**
         * Names each knob of {@link Options}; the request defaults are given to
         * {@link Options#builder}. What is not set: mlx-lm's prefill step
         * ({@link GenerationOptions#DEFAULT_PREFILL_STEP_SIZE}), {@link EngineConfig#defaults()},
         * no rotating cache, {@link CpuKernels#DEFAULT}, {@link Numerics#DEFAULT}, no prompt cache
         * ({@link PromptCache#OFF}), weights kept packed only, no speculative decoding
         * ({@link SpeculativeDecoding#OFF}), no adapter and no named adapters
         * ({@link NamedAdapters#NONE}).
         */
        public static final class Builder {
            private final RequestPlanner.Defaults defaults;
            private int prefillStepSize = GenerationOptions.DEFAULT_PREFILL_STEP_SIZE;
            private EngineConfig engine = EngineConfig.defaults();
            private int maxKvSize;
            private CpuKernels cpuKernels = CpuKernels.DEFAULT;
            private Numerics numerics = Numerics.DEFAULT;
            private PromptCache promptCache = PromptCache.OFF;
            private boolean dequantizedWeights;
            private SpeculativeDecoding speculative = SpeculativeDecoding.OFF;
            private Path adapterPath;
            private NamedAdapters namedAdapters = NamedAdapters.NONE;

            private Builder(RequestPlanner.Defaults defaults) {
                this.defaults = defaults;
            }

            /** Prompt tokens per prefill chunk ({@code --prefill-step-size}; mlx-lm: 2048). */
            public Builder prefillStepSize(int prefillStepSize) {
                this.prefillStepSize = prefillStepSize;
                return this;
            }

            /** The pipeline's sizes and policies: concurrency, wait mode, rings, KV budget. */
            public Builder engine(EngineConfig engine) {
                this.engine = java.util.Objects.requireNonNull(engine, "engine");
                return this;
            }

            /** {@code --max-kv-size} (mlx-lm's {@code max_kv_size}): a rotating cache of that many tokens; 0 = none. */
            public Builder maxKvSize(int maxKvSize) {
                this.maxKvSize = maxKvSize;
                return this;
            }

            /** The CPU kernels of the model's quantized matmuls ({@code --cpu-kernels}). */
            public Builder cpuKernels(CpuKernels cpuKernels) {
                this.cpuKernels = cpuKernels;
                return this;
            }

            /** Their numeric tier ({@code --numerics}; {@link Numerics#FAST} is not mlx-lm's bytes). */
            public Builder numerics(Numerics numerics) {
                this.numerics = numerics;
                return this;
            }

            /** The prefix cache's tiers and caps ({@code --prompt-cache-*}). */
            public Builder promptCache(PromptCache promptCache) {
                this.promptCache = promptCache;
                return this;
            }

            /**
             * Keep quantized weights dequantized too ({@code --dequantized-weights}): same bytes,
             * faster with float16/bfloat16 activations, 2 bytes a weight more memory.
             */
            public Builder dequantizedWeights(boolean dequantizedWeights) {
                this.dequantizedWeights = dequantizedWeights;
                return this;
            }

            /** Speculative decoding ({@code --speculative}, {@code --draft-model}). */
            public Builder speculative(SpeculativeDecoding speculative) {
                this.speculative = speculative;
                return this;
            }

            /** An adapter folder applied to the model at load ({@code --adapter-path}); null = none. */
            public Builder adapterPath(Path adapterPath) {
                this.adapterPath = adapterPath;
                return this;
            }

            /** The adapters a request may name ({@code --adapter NAME=DIR}, {@code --adapter-cache-bytes}). */
            public Builder namedAdapters(NamedAdapters namedAdapters) {
                this.namedAdapters = namedAdapters;
                return this;
            }

            /** The options. */
            public Options build() {
                return new Options(
                        defaults,
                        prefillStepSize,
                        engine,
                        maxKvSize,
                        cpuKernels,
                        numerics,
                        promptCache,
                        dequantizedWeights,
                        speculative,
                        adapterPath,
                        namedAdapters);
            }
        }
    }

    /**
     * The adapters requests may name ({@code --adapter NAME=DIR}, repeatable) and the byte cap of
     * those kept loaded ({@code --adapter-cache-bytes}): see {@link AdapterCache}.
     *
     * @param dirs adapter folders by name, in the order given
     */
    public record NamedAdapters(Map<String, Path> dirs, long cacheBytes) {
        /** mlx-ring's default cap: 1 GiB of adapter arrays kept loaded. */
        public static final long DEFAULT_CACHE_BYTES = 1L << 30;

        public static final NamedAdapters NONE = new NamedAdapters(Map.of(), DEFAULT_CACHE_BYTES);

        public NamedAdapters {
            dirs = java.util.Collections.unmodifiableMap(new java.util.LinkedHashMap<>(dirs));
            if (cacheBytes <= 0) {
                throw new IllegalArgumentException("the adapter cache's byte cap must be > 0, got " + cacheBytes);
            }
        }

        public boolean any() {
            return !dirs.isEmpty();
        }
    }

    /**
     * The prefix cache: the RAM tier's caps ({@code --prompt-cache-size}, {@code --prompt-cache-bytes};
     * 0 entries = no RAM tier) and the SSD tier ({@code --prompt-cache-dir}, null = none,
     * {@code --prompt-cache-disk-bytes}, and its quarantine's cap,
     * {@code --prompt-cache-quarantine-files} / {@code --prompt-cache-quarantine-bytes}), and the
     * prompt positions between a hybrid model's checkpoints of its recurrent state
     * ({@code --prompt-cache-checkpoint}, 0 = only at a run's end). Off when both tiers are.
     */
    public record PromptCache(
            int maxEntries,
            long maxBytes,
            Path dir,
            long diskBytes,
            QuarantineCap quarantineCap,
            int checkpointTokens) {
        public static final PromptCache OFF = new PromptCache(0, 0, null, 0);

        public PromptCache {
            java.util.Objects.requireNonNull(quarantineCap, "quarantineCap");
            if (checkpointTokens < 0) {
                throw new IllegalArgumentException("--prompt-cache-checkpoint must be >= 0, got " + checkpointTokens);
            }
        }

        /** With the default checkpoint interval ({@link PrefixReuse#DEFAULT_CHECKPOINT_TOKENS}). */
        public PromptCache(int maxEntries, long maxBytes, Path dir, long diskBytes, QuarantineCap quarantineCap) {
            this(maxEntries, maxBytes, dir, diskBytes, quarantineCap, PrefixReuse.DEFAULT_CHECKPOINT_TOKENS);
        }

        public PromptCache(int maxEntries, long maxBytes) {
            this(maxEntries, maxBytes, null, 0);
        }

        /** With the default quarantine cap. */
        public PromptCache(int maxEntries, long maxBytes, Path dir, long diskBytes) {
            this(maxEntries, maxBytes, dir, diskBytes, QuarantineCap.DEFAULT);
        }

        boolean on() {
            return maxEntries > 0 || dir != null;
        }
    }

    private final Engine engine;
    private final HfTokenizer tokenizer;
    private final String modelId;
    private final int maxContextTokens;
    private final int vocabSize;
    /** Null when off; closed after the engine (whose exec thread uses it) has stopped. */
    private final TieredPrefixCache prefixCache;
    /** Compiles output constraints on the plan thread; its tokenizer is closed after the engine has stopped. */
    private final ConstraintCompiler constraints;

    private LocalEngine(
            Engine engine,
            HfTokenizer tokenizer,
            String modelId,
            int maxContextTokens,
            int vocabSize,
            TieredPrefixCache prefixCache,
            ConstraintCompiler constraints) {
        this.prefixCache = prefixCache;
        this.constraints = constraints;
        this.engine = engine;
        this.tokenizer = tokenizer;
        this.modelId = modelId;
        this.maxContextTokens = maxContextTokens;
        this.vocabSize = vocabSize;
    }

    /** The model's context length from config.json ({@code max_position_embeddings}, else 32768). */
    public static int contextLength(Path modelDir) {
        return ModelConfig.read(modelDir).intField("max_position_embeddings", 32768);
    }

    /** Loads the model and starts the stage threads. */
    public static LocalEngine open(Path modelDir, Options options) {
        return open(modelDir, options, null);
    }

    /**
     * As {@link #open(Path, Options)}; with {@code leader}, as rank 0 of a tensor-parallel group:
     * this rank's part of the model, and an executor that has every other rank run the same
     * batch ({@link ShardLeader#executor}). The prefix cache is off then.
     */
    public static LocalEngine open(Path modelDir, Options options, ShardLeader leader) {
        if (!Files.isDirectory(modelDir)) {
            throw new IllegalArgumentException("model directory " + modelDir + " does not exist");
        }
        int maxContext = contextLength(modelDir);
        HfTokenizer tokenizer;
        ChatTemplate template;
        try {
            tokenizer = HfTokenizer.load(modelDir);
            template = ChatTemplate.exists(modelDir) ? ChatTemplate.load(modelDir) : null;
        } catch (IOException e) {
            throw new IllegalArgumentException("cannot read the tokenizer of " + modelDir + ": " + e.getMessage(), e);
        }
        LanguageModel model;
        try {
            model = Models.load(
                    modelDir,
                    options.cpuKernels(),
                    options.numerics(),
                    options.dequantizedWeights(),
                    leader == null ? null : leader.tensorShard(),
                    options.adapterPath(),
                    options.namedAdapters().any());
        } catch (RuntimeException e) {
            tokenizer.close();
            throw e;
        }
        AdapterCache adapters = null;
        if (options.namedAdapters().any()) {
            try {
                // each adapter is loaded once now, so a broken one stops start-up naming it
                adapters = new AdapterCache(
                        model.adapterSlots(),
                        options.namedAdapters().dirs(),
                        options.namedAdapters().cacheBytes());
                adapters.validate();
            } catch (RuntimeException e) {
                if (adapters != null) {
                    adapters.close();
                }
                model.close();
                tokenizer.close();
                throw e;
            }
        }
        if (options.defaults().kvQuantization() != null) {
            try {
                // Refused at start-up: every request would otherwise fail once its cache converts.
                String refusal = GenerationRun.kvQuantizationRefusal(model, options.maxKvSize());
                if (refusal != null) {
                    throw new IllegalArgumentException(refusal);
                }
                options.defaults().kvQuantization().checkFits(model.headDim());
            } catch (IllegalArgumentException e) {
                model.close();
                tokenizer.close();
                throw e;
            }
        }
        Speculation speculation = null;
        if (options.speculative().on()) {
            try {
                if (leader != null) {
                    throw new IllegalArgumentException(
                            "--speculative " + options.speculative().method() + " cannot run tensor-parallel");
                }
                speculation = options.speculative()
                        .open(tokenizer, options.cpuKernels(), options.numerics(), options.dequantizedWeights());
            } catch (RuntimeException e) {
                model.close();
                tokenizer.close();
                throw e;
            }
        }
        Set<Integer> eos = new LinkedHashSet<>();
        IntStream.of(tokenizer.eosTokenIds()).forEach(eos::add);
        IntStream.of(model.eosTokenIds()).forEach(eos::add);
        int[] eosIds = eos.stream().mapToInt(Integer::intValue).toArray();
        // mlx_lm.server: xtc_special_tokens = encode("\n") + eos ids.
        int[] xtcSpecial = IntStream.concat(IntStream.of(tokenizer.encode("\n", false)), IntStream.of(eosIds))
                .toArray();
        int vocab = model.vocabSize();
        TieredPrefixCache prefixCache = null;
        PrefixReuse reuse = null;
        PromptCache pc = options.promptCache();
        if (leader != null) {
            // Every rank keeps the same RAM tier (its size went to them in the Welcome); the SSD
            // tier's background spills would not be alike on every rank, so it is left out.
            if (pc != null && pc.dir() != null) {
                LOG.log(
                        System.Logger.Level.INFO,
                        "prefix cache: the SSD tier (--prompt-cache-dir) is off under"
                                + " tensor-parallel sharding; the RAM tier stays");
            }
            if (leader.settings().promptCacheEntries() > 0) {
                prefixCache = new TieredPrefixCache(
                        new RamPrefixCache(
                                leader.settings().promptCacheEntries(),
                                leader.settings().promptCacheBytes()),
                        null,
                        0);
                reuse = new PrefixReuse(prefixCache, ModelFingerprint.of(modelDir));
            }
        } else if (pc != null && pc.on()) {
            prefixCache = new TieredPrefixCache(
                    new RamPrefixCache(pc.maxEntries(), pc.maxBytes()), pc.dir(), pc.diskBytes(), pc.quarantineCap());
            reuse = new PrefixReuse(
                    prefixCache, ModelFingerprint.of(modelDir), model.adapterFingerprint(), pc.checkpointTokens());
        }
        ShardedExecutor sharded = leader == null ? null : leader.executor(model, reuse);
        DetokenizingSinks sinks = DetokenizingSinks.inferred(tokenizer, s -> tokenizer.encode(s, false))
                .toolParser(toolParser(modelDir, template, tokenizer))
                .build();
        // mlx_lm.server's _tokenize starts a chat prompt's tail segment at the thinking marker.
        ThinkMarkers think = sinks.thinkMarkers();
        int[] thinkStart = think == null ? null : think.startIds();
        // llguidance's view of the vocabulary: read on the first constrained request (up to a second).
        Supplier<ConstraintVocabulary> vocabulary = new LazyVocabulary(modelDir.resolve("tokenizer.json"), vocab);
        ConstraintCompiler constraints = ConstraintCompiler.lazy(
                () -> ConstraintTokenizer.create(vocabulary.get(), eosIds, t -> tokenizer.encode(t, false)));
        ModelTools modelTools = new ModelTools(
                ToolSyntax.of(
                        toolFormat(modelDir, template, tokenizer).orElse(null),
                        think == null ? null : think.start(),
                        think == null ? null : think.end(),
                        t -> tokenizer.encode(t, false),
                        vocabulary),
                ids -> think != null && think.opensInPrompt(ids));
        Engine engine = Engine.builder()
                .config(options.engine())
                .preparer(new PromptPreparer(tokenizer, template, vocab, promptLimit(options.defaults()), thinkStart))
                .planner(new RequestPlanner(options.defaults(), eosIds, xtcSpecial, vocab, constraints, modelTools))
                .executor(
                        sharded != null
                                ? sharded
                                : new ModelExecutor(
                                                model,
                                                options.prefillStepSize(),
                                                options.maxKvSize(),
                                                reuse,
                                                EngineRng.fromClock(),
                                                speculation)
                                        .serveAdapters(adapters))
                .sinks(sinks)
                .start();
        if (sharded != null) {
            // A collective MLX cannot abort must not leave the requests in flight hanging.
            sharded.onWedged(engine::abandonInFlight, ShardedExecutor.WEDGE_GRACE_NS);
        }
        return new LocalEngine(
                engine, tokenizer, modelDir.getFileName().toString(), maxContext, vocab, prefixCache, constraints);
    }

    /** The most prompt tokens plan accepts: the operator's limit, else the context less one. */
    static int promptLimit(RequestPlanner.Defaults d) {
        int context = d.maxContextTokens() - 1;
        return d.maxPromptTokens() > 0 ? Math.min(d.maxPromptTokens(), context) : context;
    }

    /**
     * The model's tool-call parser as {@code mlx_lm.tokenizer_utils.load} picks it: {@code
     * tokenizer_config.json}'s {@code tool_parser_type}, else inferred from the chat template and
     * the vocabulary. Logs the choice; null (tool-call markup stays in the content) when there is
     * none or mlx-ring does not implement that format.
     */
    static ToolCallParser toolParser(Path modelDir, ChatTemplate template, TokenDecoder vocab) {
        String configured = configuredToolFormat(modelDir);
        String how = configured != null
                ? "tool_parser_type in tokenizer_config.json"
                : "inferred from the chat template / vocabulary";
        var type = toolFormat(modelDir, template, vocab);
        if (type.isEmpty()) {
            LOG.log(System.Logger.Level.INFO, "no tool-call format: tool calls are not parsed");
            return null;
        }
        var parser = ToolCallParsers.forType(type.get());
        if (parser.isEmpty()) {
            LOG.log(
                    System.Logger.Level.WARNING,
                    "tool-call format {0} ({1}) is not supported: tool-call markup " + "stays in the content",
                    type.get(),
                    how);
            return null;
        }
        LOG.log(System.Logger.Level.INFO, "tool-call parser: {0} ({1})", type.get(), how);
        return parser.get();
    }

    /**
     * The model's tool-call format (mlx-lm's parser module name) as {@link #toolParser} resolves
     * it, whether or not mlx-ring parses it; empty when the model has none.
     */
    static java.util.Optional<String> toolFormat(Path modelDir, ChatTemplate template, TokenDecoder vocab) {
        return ToolCallParsers.resolveType(
                configuredToolFormat(modelDir), template == null ? null : template.text(), vocab);
    }

    /** {@code tokenizer_config.json}'s {@code tool_parser_type}, or null. */
    private static String configuredToolFormat(Path modelDir) {
        String configured = null;
        Path config = modelDir.resolve("tokenizer_config.json");
        if (Files.isRegularFile(config)) {
            try {
                JsonNode t = new ObjectMapper().readTree(config.toFile()).get("tool_parser_type");
                configured = t != null && t.isTextual() ? t.asText() : null;
            } catch (IOException e) {
                // HfTokenizer.load has read this file already; a failure here leaves inference
            }
        }
        return configured;
    }

    /**
     * Submits one request; never blocks. As {@link Engine#submit}: the listener is called on the
     * sink thread, and the session settles exactly once.
     *
     * @throws dev.mlxring.pipeline.OverloadedException when the request ring is full
     * @throws dev.mlxring.pipeline.EngineUnavailableException after {@link #close}
     */
    public Session submit(GenerationRequest request, GenerationListener listener) {
        return engine.submit(request, listener);
    }

    /** The stage pipeline this engine runs (its activity, live sessions and close). */
    public Engine engine() {
        return engine;
    }

    /** The model's tokenizer; closed by {@link #close}. */
    public HfTokenizer tokenizer() {
        return tokenizer;
    }

    /** The model directory's name, the id the server reports for the model. */
    public String modelId() {
        return modelId;
    }

    /** The model's context length ({@link #contextLength}). */
    public int maxContextTokens() {
        return maxContextTokens;
    }

    /** The model's vocabulary size (rows of its output layer): valid token ids are below it. */
    public int vocabSize() {
        return vocabSize;
    }

    /**
     * Cancels what is running, joins the stage threads, frees the model (on the exec thread), then
     * llguidance's tokenizer and the tokenizer.
     */
    @Override
    public void close() {
        engine.close();
        try {
            constraints.close(); // uses the tokenizer (canonical tokenization): before it
        } catch (RuntimeException e) {
            LOG.log(System.Logger.Level.WARNING, "closing the structured-output tokenizer failed", e);
        }
        tokenizer.close();
        if (prefixCache != null) {
            prefixCache.close();
        }
    }

    /** The prefix cache, or null when it is off. */
    public TieredPrefixCache prefixCache() {
        return prefixCache;
    }
}
