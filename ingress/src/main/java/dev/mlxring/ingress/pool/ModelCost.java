package dev.mlxring.ingress.pool;

import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.ObjectMapper;
import java.io.IOException;
import java.io.UncheckedIOException;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.stream.Stream;

/**
 * A model's memory, known from its files before it loads: its resident bytes (weights and
 * runtime) and the peak bytes of one request on it. Immutable.
 *
 * <p>Resident bytes: the {@code *.safetensors} files' sizes (the weights MLX maps as they are
 * stored), plus {@link #RUNTIME_BASE_BYTES} (stage rings, threads, the sampler's and the
 * tokenizer's fixed state) plus four times {@code tokenizer.json}'s size (the tokenizer's tables
 * on the heap). A request's peak bytes: its KV cache at prompt + max_tokens positions (at most
 * the rotating cache's size), keys and values, every layer, at the activations' element size;
 * plus prefill's activations for one chunk: the chunk's logits over the vocabulary in float32,
 * four hidden-size and two intermediate-size vectors per token in float32, and the attention
 * scores of the chunk against the prompt, every head, in float32. A KV-quantized cache is
 * counted as unquantized (an upper bound). Not counted: memory a numerics tier adds at run time
 * ({@code --numerics fast-q8}'s widened group parameters, 8 bytes per group and weight row).
 */
public final class ModelCost {
    /** What a loaded model holds besides its weights and its tokenizer's tables. */
    public static final long RUNTIME_BASE_BYTES = 16L << 20;

    private static final ObjectMapper JSON = new ObjectMapper();

    private final long residentBytes;
    private final int layers;
    private final int kvHeads;
    private final int heads;
    private final int headDim;
    private final int hidden;
    private final int intermediate;
    private final int vocab;
    private final int kvElementBytes;

    private ModelCost(
            long residentBytes,
            int layers,
            int kvHeads,
            int heads,
            int headDim,
            int hidden,
            int intermediate,
            int vocab,
            int kvElementBytes) {
        this.residentBytes = residentBytes;
        this.layers = layers;
        this.kvHeads = kvHeads;
        this.heads = heads;
        this.headDim = headDim;
        this.hidden = hidden;
        this.intermediate = intermediate;
        this.vocab = vocab;
        this.kvElementBytes = kvElementBytes;
    }

    /**
     * Reads {@code dir}'s {@code config.json} and file sizes.
     *
     * @throws IllegalArgumentException naming the directory and what is missing or unreadable
     */
    public static ModelCost of(Path dir) {
        Path configFile = dir.resolve("config.json");
        JsonNode root;
        try {
            root = JSON.readTree(configFile.toFile());
        } catch (IOException e) {
            throw new IllegalArgumentException("cannot read " + configFile + ": " + e.getMessage(), e);
        }
        if (root == null || !root.isObject()) {
            throw new IllegalArgumentException(configFile + " is not a JSON object");
        }
        JsonNode c = root.path("text_config").isObject() ? root.get("text_config") : root;
        int hidden = positive(c, "hidden_size", configFile);
        int heads = c.path("num_attention_heads").asInt(1);
        int headDim = c.path("head_dim").asInt(Math.max(1, hidden / Math.max(1, heads)));
        String dtype = c.path("torch_dtype").asText(root.path("torch_dtype").asText("float32"));
        long weights;
        try (Stream<Path> files = Files.list(dir)) {
            weights = files.filter(f -> f.getFileName().toString().endsWith(".safetensors"))
                    .mapToLong(ModelCost::size)
                    .sum();
        } catch (IOException e) {
            throw new UncheckedIOException("cannot list " + dir, e);
        }
        if (weights == 0) {
            throw new IllegalArgumentException(dir + " holds no *.safetensors weights");
        }
        Path tokenizer = dir.resolve("tokenizer.json");
        long tokenizerBytes = Files.isRegularFile(tokenizer) ? size(tokenizer) : 0;
        return new ModelCost(
                weights + RUNTIME_BASE_BYTES + 4 * tokenizerBytes,
                positive(c, "num_hidden_layers", configFile),
                c.path("num_key_value_heads").asInt(heads),
                heads,
                headDim,
                hidden,
                c.path("intermediate_size").asInt(4 * hidden),
                positive(c, "vocab_size", configFile),
                dtype.equals("bfloat16") || dtype.equals("float16") ? 2 : 4);
    }

    /** Weights and runtime: what the model holds from its load to its unload. */
    public long residentBytes() {
        return residentBytes;
    }

    /**
     * The peak bytes of one request (see the class comment).
     *
     * @param promptTokens the prompt's tokens
     * @param maxTokens tokens it may generate
     * @param chunkTokens prompt tokens per prefill chunk ({@code --prefill-step-size})
     * @param maxKvSize the rotating cache's size ({@code --max-kv-size}); 0 = none
     */
    public long requestBytes(int promptTokens, int maxTokens, int chunkTokens, int maxKvSize) {
        long positions = (long) promptTokens + maxTokens;
        long prefillKeys = Math.max(1, promptTokens);
        if (maxKvSize > 0) {
            positions = Math.min(positions, maxKvSize);
            prefillKeys = Math.min(prefillKeys, maxKvSize + (long) chunkTokens);
        }
        long kv = 2L * layers * kvHeads * headDim * positions * kvElementBytes;
        long chunk = Math.max(1, Math.min(promptTokens, chunkTokens));
        long activations = chunkActivationBytes((int) chunk) + (long) heads * chunk * prefillKeys * Float.BYTES;
        return kv + activations;
    }

    /**
     * One prefill chunk's activations of {@code chunkTokens} tokens without the attention scores:
     * its logits over the vocabulary, four hidden-size and two intermediate-size vectors per token,
     * in float32. The buffers a forward of that many positions allocates, and frees, each chunk.
     */
    public long chunkActivationBytes(int chunkTokens) {
        return (long) Math.max(1, chunkTokens) * ((long) vocab + 4L * hidden + 2L * intermediate) * Float.BYTES;
    }

    private static long size(Path f) {
        try {
            return Files.size(f);
        } catch (IOException e) {
            throw new UncheckedIOException("cannot read the size of " + f, e);
        }
    }

    private static int positive(JsonNode c, String field, Path file) {
        int v = c.path(field).asInt(0);
        if (v < 1) {
            throw new IllegalArgumentException(file + " has no positive " + field);
        }
        return v;
    }
}
