package dev.mlxring.ingress.cli;

import com.fasterxml.jackson.databind.ObjectMapper;
import com.fasterxml.jackson.databind.node.ArrayNode;
import com.fasterxml.jackson.databind.node.ObjectNode;
import dev.mlxring.engine.SpeculativeDecoding;
import dev.mlxring.exec.generate.GenerateStep;
import dev.mlxring.exec.generate.GenerationOptions;
import dev.mlxring.exec.generate.GenerationResult;
import dev.mlxring.exec.model.LanguageModel;
import dev.mlxring.exec.model.ModelConfig;
import dev.mlxring.exec.model.Models;
import dev.mlxring.exec.nn.TensorShard;
import dev.mlxring.exec.sample.EngineRng;
import dev.mlxring.exec.sample.TokenLogprobs;
import dev.mlxring.exec.shard.ShardLaunch;
import dev.mlxring.exec.shard.ShardWatch;
import dev.mlxring.exec.spec.Speculation;
import dev.mlxring.exec.spec.SpeculativeGenerate;
import dev.mlxring.mlx.ArrayScope;
import dev.mlxring.mlx.CpuKernels;
import dev.mlxring.mlx.Group;
import dev.mlxring.mlx.Mlx;
import dev.mlxring.mlx.Numerics;
import dev.mlxring.mlx.ProjectHome;
import dev.mlxring.pipeline.KvQuantization;
import dev.mlxring.pipeline.SamplingParams;
import dev.mlxring.prep.ChatTemplate;
import dev.mlxring.tokenizer.HfTokenizer;
import java.io.IOException;
import java.io.OutputStream;
import java.io.PrintStream;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.LinkedHashSet;
import java.util.List;
import java.util.Map;
import java.util.Set;

/**
 * {@code mlx-ring generate}: mlx_lm.generate's flow. The prompt goes through the chat template
 * when the model has one (then encoded without special tokens), else it is encoded with them;
 * decoding (greedy unless {@code --temp} > 0, with mlx-lm's sampler chain and logits processors)
 * stops at the tokenizer's or config's EOS ids or at {@code --max-tokens}.
 */
final class GenerateCommand {
    static final String DEFAULT_MODEL = "models/smollm2-135m-instruct";
    /** Default of {@code --max-tokens}, as mlx_lm.generate's. */
    static final int DEFAULT_MAX_TOKENS = 256;

    private static final ObjectMapper JSON = new ObjectMapper();

    /** The sampling flags: mlx-lm's sampler chain and logits processors (docs/sampling.md). */
    static final List<Flag> SAMPLING_FLAGS = List.of(
            Flag.valued("--temp", "T", 0.0, "temperature; 0 = greedy argmax"),
            Flag.valued("--top-p", "P", 1.0, "nucleus sampling, applied when 0 < P < 1"),
            Flag.valued("--top-k", "K", 0, "keep the K most likely tokens; 0 = off"),
            Flag.valued("--min-p", "P", 0.0, "min-p filter in [0, 1]; 0 = off"),
            Flag.valued("--min-tokens-to-keep", "N", 1, "tokens min-p always keeps"),
            Flag.valued("--xtc-probability", "P", 0.0, "chance XTC applies at a step, in [0, 1]; 0 = off"),
            Flag.valued(
                    "--xtc-threshold",
                    "T",
                    SamplingParams.DEFAULT_XTC_THRESHOLD,
                    "XTC probability threshold in [0, 0.5]"),
            Flag.valued("--repetition-penalty", "R", 0.0, "multiplicative penalty on recent tokens; 0 = off"),
            Flag.valued(
                    "--repetition-context-size",
                    "N",
                    SamplingParams.DEFAULT_CONTEXT_SIZE,
                    "tokens the repetition penalty looks back; 0 = all"),
            Flag.valued("--presence-penalty", "P", 0.0, "additive penalty on recent tokens; 0 = off"),
            Flag.valued(
                    "--presence-context-size",
                    "N",
                    SamplingParams.DEFAULT_CONTEXT_SIZE,
                    "tokens the presence penalty looks back; 0 = all"),
            Flag.valued("--frequency-penalty", "F", 0.0, "additive penalty per occurrence; 0 = off"),
            Flag.valued(
                    "--frequency-context-size",
                    "N",
                    SamplingParams.DEFAULT_CONTEXT_SIZE,
                    "tokens the frequency penalty looks back; 0 = all"),
            Flag.valued("--seed", "S", "clock-seeded", "random seed, as mlx_lm.generate --seed S"));

    /** Every flag {@code generate} accepts: what it parses and what {@code generate --help} prints. */
    static final CommandFlags FLAGS = CommandFlags.of(
            "generate",
            "Generates text from one prompt, as mlx_lm.generate; give exactly one of --prompt and --prompt-tokens.",
            List.of(
                    List.of(
                            Flag.valued(
                                    "--model",
                                    "DIR",
                                    DEFAULT_MODEL,
                                    "MLX model directory (config.json, *.safetensors, tokenizer.json)"),
                            Flag.valued(
                                    "--prompt",
                                    "TEXT",
                                    "none",
                                    "user message, rendered with the model's chat template"),
                            Flag.valued(
                                    "--prompt-tokens", "IDS", "none", "comma-separated prompt token ids, no template"),
                            Flag.valued("--max-tokens", "N", DEFAULT_MAX_TOKENS, "tokens to generate at most"),
                            Flag.valued("--system", "TEXT", "none", "system message (with the chat template)"),
                            Flag.toggle("--ignore-chat-template", "tokenize --prompt as plain text"),
                            Flag.valued(
                                    "--prefill-step-size",
                                    "N",
                                    GenerationOptions.DEFAULT_PREFILL_STEP_SIZE,
                                    "prompt tokens per prefill chunk, as mlx-lm"),
                            Flag.toggle("--json", "print one JSON object: token ids, text, timing, peak memory"),
                            Flag.valued(
                                    "--logprobs",
                                    "N",
                                    "off",
                                    "with --json: each token's logprob and the top N (0..11)")),
                    SAMPLING_FLAGS,
                    KvFlags.QUANTIZATION_FLAGS,
                    List.of(KvFlags.MAX_KV_SIZE),
                    List.of(CpuKernelsFlag.FLAG, NumericsFlag.FLAG, DequantizedWeightsFlag.FLAG),
                    List.of(AdapterFlag.FLAG),
                    SpeculativeFlags.FLAGS,
                    ShardFlags.FLAGS),
            """
            tensor-parallel, under MLX's launcher (docs/distributed.md):
              .venv/bin/mlx.launch -n 2 -- ./mlx-ring generate --model DIR --prompt TEXT
            """);

    private GenerateCommand() {}

    static int run(String[] args, PrintStream out) {
        CliArgs a = CliArgs.parse(args, 1, FLAGS);
        if (a.has("--prompt") == a.has("--prompt-tokens")) {
            throw new UsageException("give exactly one of --prompt or --prompt-tokens");
        }
        int maxTokens = a.intValue("--max-tokens", DEFAULT_MAX_TOKENS, 0);
        int prefillStep = a.intValue("--prefill-step-size", GenerationOptions.DEFAULT_PREFILL_STEP_SIZE, 1);
        KvQuantization kv = KvFlags.parse(a);
        int maxKvSize = KvFlags.maxKvSize(a);
        CpuKernels kernels = CpuKernelsFlag.parse(a);
        SpeculativeDecoding spec = SpeculativeFlags.parse(a);
        if (spec.on() && maxKvSize > 0) {
            throw new UsageException("--speculative " + spec.method() + " cannot be used with --max-kv-size "
                    + "(its rotating caches cannot be rolled back)");
        }
        boolean json = a.has("--json");
        Path modelDir =
                a.has("--model") ? Path.of(a.get("--model")) : ProjectHome.get().resolve(DEFAULT_MODEL);
        if (!Files.isDirectory(modelDir)) {
            throw new IllegalArgumentException("model directory " + modelDir + " does not exist"
                    + (a.has("--model") ? "" : " (run ./mlx-ring setup to prepare the default model)"));
        }

        // The model config first: its errors (malformed JSON, unsupported type) are the ones to report.
        ModelConfig.read(modelDir).modelType();
        // Under mlx.launch every rank runs this same command over its part of the model: the same
        // prompt, the same greedy or seeded steps, so the collectives pair up; rank 0 prints.
        ShardLaunch launch = ShardFlags.launch(a);
        Group group = launch.launched() ? launch.join(ShardFlags.STARTUP_NS) : null;
        boolean sharded = group != null && group.size() > 1;
        if (spec.on() && sharded) {
            throw new UsageException("--speculative " + spec.method() + " cannot run tensor-parallel");
        }
        Numerics numerics = NumericsFlag.parse(a, kernels, sharded);
        boolean dequantizedWeights = DequantizedWeightsFlag.parse(a, kernels, numerics, sharded);
        Path adapterDir = AdapterFlag.parse(a, sharded);
        if (NumericsFlag.notice(numerics) != null) {
            System.err.println(NumericsFlag.notice(numerics));
        }
        if (sharded && group.rank() > 0) {
            out = new PrintStream(OutputStream.nullOutputStream());
        }
        // Liveness: a rank that dies or stops answering ends every rank with the reason instead
        // of leaving it blocked in a collective.
        ShardWatch watch = !sharded
                ? null
                : ShardWatch.start(
                        launch, group, modelDir, ShardFlags.STARTUP_NS, ShardFlags.rankTimeoutNs(a), reason -> {
                            System.err.println("mlx-ring: the tensor-parallel group is down: " + reason);
                            System.err.flush();
                            Runtime.getRuntime().halt(1);
                        });
        if (sharded && group.rank() == 0) {
            System.err.println("mlx-ring: tensor-parallel generate over " + group.size() + " ranks ("
                    + launch.backendName() + "), this is rank 0");
        }
        try (watch;
                HfTokenizer tokenizer = HfTokenizer.load(modelDir);
                LanguageModel model = Models.load(
                        modelDir,
                        kernels,
                        numerics,
                        dequantizedWeights,
                        sharded ? new TensorShard(group) : null,
                        adapterDir);
                LanguageModel draft = spec.draftModel() == null
                        ? null
                        : ((Speculation.DraftModel) spec.open(tokenizer, kernels, numerics, dequantizedWeights))
                                .model()) {
            KvFlags.checkQuantizable(kv, model, maxKvSize);
            if (kv != null) {
                kv.checkFits(model.headDim());
            }
            int[] prompt =
                    a.has("--prompt-tokens") ? a.intList("--prompt-tokens") : encodePrompt(a, modelDir, tokenizer);
            Set<Integer> stops = new LinkedHashSet<>();
            for (int id : tokenizer.eosTokenIds()) {
                stops.add(id);
            }
            for (int id : model.eosTokenIds()) {
                stops.add(id);
            }
            int[] stopIds = stops.stream().mapToInt(Integer::intValue).toArray();
            SamplingParams sampling = samplingParams(a, tokenizer, stopIds);

            TextStream stream = json ? null : new TextStream(tokenizer, out);
            // mlx_lm.generate seeds the global key before it loads the model, and building the model
            // draws initial weights from it: --seed S therefore starts sampling where mx.random.seed(S)
            // plus those draws leaves the key. Without --seed: a clock-seeded generator, as MLX's.
            // Sharded, every rank must draw the same keys: rank 0's clock is the seed of all.
            // A draft model is loaded after the model, so its construction draws follow the model's.
            int initDraws = model.initRandomDraws() + (draft == null ? 0 : draft.initRandomDraws());
            EngineRng engineRng = sampling.seed() != null
                    ? EngineRng.seededThenDrawn(sampling.seed(), initDraws)
                    : sharded ? EngineRng.seeded(rankZeroClock(group)) : EngineRng.fromClock();
            sampling = sampling.toBuilder().seed(null).build();
            GenerationOptions options = new GenerationOptions(maxTokens, prefillStep, stopIds, false, kv, maxKvSize);
            GenerationResult r;
            SpeculativeGenerate.Result speculative = null;
            if (spec.on()) {
                Speculation how = draft != null
                        ? new Speculation.DraftModel(draft, spec.numDraftTokens())
                        : spec.open(tokenizer, kernels, numerics, dequantizedWeights);
                Mlx.resetPeakMemory();
                speculative =
                        SpeculativeGenerate.run(model, prompt, options, sampling, engineRng, how, (token, logprobs) -> {
                            if (stream != null) {
                                stream.add(token);
                            }
                            return true;
                        });
                r = new GenerationResult(
                        prompt,
                        speculative.tokens(),
                        speculative.finishReason(),
                        speculative.promptTimeNs(),
                        speculative.generationTimeNs(),
                        Mlx.memory().peakBytes(),
                        null,
                        null,
                        null,
                        speculative.tokenLogprobs());
            } else {
                r = GenerateStep.run(
                        model, prompt, options, sampling, engineRng, (GenerateStep.TokenListener) token -> {
                            if (stream != null) {
                                stream.add(token);
                            }
                            return true;
                        });
            }
            String text = tokenizer.decode(r.tokens(), true);
            if (json) {
                ObjectNode o = toJson(modelDir, r, text);
                if (speculative != null) {
                    o.putObject("speculative")
                            .put("method", spec.method())
                            .put("proposed", speculative.proposedTokens())
                            .put("accepted", speculative.acceptedTokens());
                }
                out.println(o);
            } else {
                stream.finish();
                out.println();
                out.println("==========");
                out.printf(
                        "Prompt: %d tokens, %.3f tokens-per-sec%n", r.promptTokens().length, r.promptTokensPerSecond());
                out.printf(
                        "Generation: %d tokens, %.3f tokens-per-sec%n",
                        r.tokens().length, r.generationTokensPerSecond());
                out.printf("Peak memory: %.3f GB%n", r.peakMemoryBytes() / 1e9);
                if (speculative != null) {
                    out.printf(
                            "Speculative (%s): %d proposed, %d accepted%n",
                            spec.method(), speculative.proposedTokens(), speculative.acceptedTokens());
                }
            }
            return 0;
        } catch (IOException e) {
            throw new IllegalArgumentException("cannot read the tokenizer of " + modelDir + ": " + e.getMessage(), e);
        }
    }

    /** Rank 0's wall clock in milliseconds on every rank: one {@code all_sum} of it and zeros. */
    private static long rankZeroClock(Group group) {
        long now = group.rank() == 0 ? System.currentTimeMillis() : 0;
        try (ArrayScope scope = ArrayScope.open()) {
            int[] words = group.allSum(Mlx.fromInts(new int[] {(int) (now >>> 32), (int) now}, 2))
                    .toIntArray();
            return ((long) words[0] << 32) | (words[1] & 0xffffffffL);
        }
    }

    /**
     * The sampling flags as {@link SamplingParams} (mlx_lm.generate's defaults; XTC spares the ids
     * of "\n" and the EOS ids, as mlx_lm.generate and the server do). Out-of-range values are
     * rejected by SamplingParams with the field and range named.
     */
    private static SamplingParams samplingParams(CliArgs a, HfTokenizer tokenizer, int[] eosIds) {
        SamplingParams.Builder b = SamplingParams.builder()
                .temperature(a.doubleValue("--temp", 0.0))
                .topP(a.doubleValue("--top-p", 1.0))
                .topK(a.intValue("--top-k", 0, Integer.MIN_VALUE))
                .minP(a.doubleValue("--min-p", 0.0))
                .minTokensToKeep(a.intValue("--min-tokens-to-keep", 1, Integer.MIN_VALUE))
                .xtcProbability(a.doubleValue("--xtc-probability", 0.0))
                .xtcThreshold(a.doubleValue("--xtc-threshold", SamplingParams.DEFAULT_XTC_THRESHOLD))
                .repetitionPenalty(a.doubleValue("--repetition-penalty", 0.0))
                .repetitionContextSize(
                        a.intValue("--repetition-context-size", SamplingParams.DEFAULT_CONTEXT_SIZE, Integer.MIN_VALUE))
                .presencePenalty(a.doubleValue("--presence-penalty", 0.0))
                .presenceContextSize(
                        a.intValue("--presence-context-size", SamplingParams.DEFAULT_CONTEXT_SIZE, Integer.MIN_VALUE))
                .frequencyPenalty(a.doubleValue("--frequency-penalty", 0.0))
                .frequencyContextSize(
                        a.intValue("--frequency-context-size", SamplingParams.DEFAULT_CONTEXT_SIZE, Integer.MIN_VALUE))
                .seed(a.longValue("--seed"));
        if (a.has("--logprobs")) {
            b.logprobs(true).topLogprobs(a.intValue("--logprobs", 0, Integer.MIN_VALUE));
        }
        if (a.doubleValue("--xtc-probability", 0.0) > 0) {
            int[] newline = tokenizer.encode("\n", true);
            int[] special = new int[newline.length + eosIds.length];
            System.arraycopy(newline, 0, special, 0, newline.length);
            System.arraycopy(eosIds, 0, special, newline.length, eosIds.length);
            b.xtcSpecialTokens(special);
        }
        return b.build();
    }

    private static int[] encodePrompt(CliArgs a, Path modelDir, HfTokenizer tokenizer) throws IOException {
        String text = a.get("--prompt").replace("\\n", "\n").replace("\\t", "\t");
        boolean useTemplate = !a.has("--ignore-chat-template") && ChatTemplate.exists(modelDir);
        if (!useTemplate) {
            return tokenizer.encode(text, true);
        }
        List<Map<String, Object>> messages = new ArrayList<>();
        if (a.has("--system")) {
            messages.add(Map.of("role", "system", "content", a.get("--system")));
        }
        messages.add(Map.of("role", "user", "content", text));
        String rendered = ChatTemplate.load(modelDir).render(messages, true, Map.of());
        return tokenizer.encode(rendered, false);
    }

    private static ObjectNode toJson(Path modelDir, GenerationResult r, String text) {
        ObjectNode o = JSON.createObjectNode();
        o.put("model", modelDir.toString());
        o.set("prompt_tokens", JSON.valueToTree(r.promptTokens()));
        o.set("generated_tokens", JSON.valueToTree(r.tokens()));
        o.put("text", text);
        o.put("finish_reason", r.finishReason());
        o.put("prompt_tps", r.promptTokensPerSecond());
        o.put("generation_tps", r.generationTokensPerSecond());
        o.put("prompt_time_s", r.promptTimeNs() / 1e9);
        o.put("generation_time_s", r.generationTimeNs() / 1e9);
        o.put("peak_memory_bytes", r.peakMemoryBytes());
        if (r.tokenLogprobs() != null) {
            // As mlx_lm.server reports them: the chosen token's logprob, and the top ones in
            // argpartition order (not sorted).
            ArrayNode lps = o.putArray("logprobs");
            for (TokenLogprobs t : r.tokenLogprobs()) {
                ObjectNode e = lps.addObject();
                e.put("id", t.token());
                e.put("logprob", (double) t.logprob());
                ArrayNode top = e.putArray("top_logprobs");
                for (int k = 0; k < t.topIds().length; k++) {
                    top.addObject().put("id", t.topIds()[k]).put("logprob", (double) t.topLogprobs()[k]);
                }
            }
        }
        return o;
    }

    /**
     * Prints text as tokens arrive, holding back output while the decoded tail is an incomplete
     * UTF-8 sequence (U+FFFD). Decodes the whole sequence each time: fine for a CLI; the server's
     * sink does this incrementally.
     */
    private static final class TextStream {
        private final HfTokenizer tokenizer;
        private final PrintStream out;
        private final List<Integer> tokens = new ArrayList<>();
        private int printed;

        TextStream(HfTokenizer tokenizer, PrintStream out) {
            this.tokenizer = tokenizer;
            this.out = out;
        }

        void add(int token) {
            tokens.add(token);
            String text =
                    tokenizer.decode(tokens.stream().mapToInt(Integer::intValue).toArray(), true);
            if (!text.endsWith("\uFFFD") && text.length() > printed) {
                out.print(text.substring(printed));
                out.flush();
                printed = text.length();
            }
        }

        void finish() {
            String text =
                    tokenizer.decode(tokens.stream().mapToInt(Integer::intValue).toArray(), true);
            if (text.length() > printed) {
                out.print(text.substring(printed));
            }
            out.flush();
        }
    }
}
