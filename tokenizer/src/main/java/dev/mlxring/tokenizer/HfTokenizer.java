package dev.mlxring.tokenizer;

import ai.djl.huggingface.tokenizers.HuggingFaceTokenizer;
import com.fasterxml.jackson.core.JacksonException;
import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.ObjectMapper;
import dev.mlxring.pipeline.TokenDecoder;
import dev.mlxring.pipeline.Utf16;
import java.io.ByteArrayInputStream;
import java.io.IOException;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.NoSuchFileException;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.Collections;
import java.util.HashMap;
import java.util.LinkedHashMap;
import java.util.LinkedHashSet;
import java.util.List;
import java.util.Map;
import java.util.Optional;
import java.util.OptionalInt;
import java.util.Set;

/**
 * A Hugging Face {@code tokenizer.json} tokenizer, run by the Rust {@code tokenizers} library that
 * DJL ({@code ai.djl.huggingface:tokenizers}) ships as a JNI library, fully offline.
 *
 * <p><b>Parity contract.</b> {@link #encode} and {@link #decode} return exactly what Python's
 * {@code tokenizers.Tokenizer.from_file(".../tokenizer.json")} returns for {@code encode(text,
 * add_special_tokens=...).ids} and {@code decode(ids, skip_special_tokens=...)}: no truncation, no
 * padding, no lower-casing / accent stripping / prefix space added on the Java side, and no
 * {@code clean_up_tokenization_spaces} on decode (that is a {@code transformers} feature, not a
 * {@code tokenizers} one). {@code tokenizer_config.json} is read only for the informational {@link
 * #bosToken()}, {@link #eosToken()} and {@link #addBosToken()}; it is deliberately <em>not</em>
 * handed to DJL, whose {@code TokenizerConfig} would apply {@code add_prefix_space}, {@code
 * strip_accents} and space clean-up in Java. Whether {@code encode(text, true)} prepends a BOS is
 * decided solely by the {@code post_processor} in {@code tokenizer.json}, as in Python.
 *
 * <p><b>Offline.</b> The tokenizer is built from the bytes of the local file; nothing is ever
 * fetched from the Hub. Loading this class sets, unless already set, the DJL properties {@code
 * ai.djl.offline=true} and {@code OPT_OUT_TRACKING=true} (DJL otherwise probes the EC2 metadata
 * endpoint for telemetry on every tokenizer creation) and {@code RUST_FLAVOR=cpu} (on a CUDA host DJL
 * would otherwise download a CUDA build of the JNI library). The {@code libtokenizers} binary that
 * the DJL jar carries (linux-x86_64, linux-aarch64, osx-aarch64, win-x86_64) is extracted once into
 * the native cache directory, see {@link #nativeCacheDir()}.
 *
 * <p><b>Thread safety.</b> After {@link #load} returns, {@link #encode}, {@link #decode} and the
 * vocabulary lookups may be called concurrently from any number of threads: the native tokenizer is
 * only read (its truncation/padding parameters are fixed during {@code load}), and the vocabulary
 * maps are immutable. {@link #close()} is <em>not</em> synchronised with them: the caller must make
 * sure no call is in flight (and none starts) when closing. Calls on a closed instance throw {@link
 * IllegalStateException}; vocabulary lookups keep working since they are pure Java.
 *
 * <p><b>Native resources.</b> Each instance owns one native {@code tokenizers::Tokenizer} (a Rust
 * heap object of a few MB for a 50k vocabulary). {@link #close()} frees it; closing twice is a
 * no-op. DJL has a finalizer as a last resort, but do not rely on it.
 *
 * <p><b>Sink side.</b> As a {@link TokenDecoder} it hands sink-stage the raw vocabulary strings,
 * tokenizer.json's {@code decoder} section and the transformers clean-up flag, from which sink-stage
 * rebuilds mlx-lm's streaming detokenizers.
 */
public final class HfTokenizer implements AutoCloseable, TokenDecoder {

    /** System property: directory into which DJL extracts {@code libtokenizers}. */
    public static final String CACHE_PROPERTY = "mlxring.djl.cache";

    private static final ObjectMapper JSON = new ObjectMapper();
    private static final Path NATIVE_CACHE_DIR = configureDjl();

    private final Path tokenizerFile;
    private final HuggingFaceTokenizer nativeTokenizer;
    private final Map<String, Integer> tokenToId;
    private final String[] idToToken;
    private final int[] eosTokenIds;
    private final String bosToken;
    private final String eosToken;
    private final Boolean addBosToken;
    private final Object decoderConfig;
    private final boolean hasNormalizer;
    private final boolean cleanUpTokenizationSpaces;

    private HfTokenizer(
            Path tokenizerFile,
            HuggingFaceTokenizer tokenizer,
            Map<String, Integer> tokenToId,
            String[] idToToken,
            int[] eosTokenIds,
            String bosToken,
            String eosToken,
            Boolean addBosToken,
            Object decoderConfig,
            boolean cleanUpTokenizationSpaces,
            boolean hasNormalizer) {
        this.tokenizerFile = tokenizerFile;
        this.nativeTokenizer = tokenizer;
        this.tokenToId = tokenToId;
        this.idToToken = idToToken;
        this.eosTokenIds = eosTokenIds;
        this.bosToken = bosToken;
        this.eosToken = eosToken;
        this.addBosToken = addBosToken;
        this.decoderConfig = decoderConfig;
        this.cleanUpTokenizationSpaces = cleanUpTokenizationSpaces;
        this.hasNormalizer = hasNormalizer;
    }

    /**
     * Loads {@code modelDir/tokenizer.json}, plus {@code tokenizer_config.json}, {@code config.json}
     * and {@code generation_config.json} when present.
     *
     * @param modelDir a model directory (a path to a {@code tokenizer.json} file is accepted too)
     * @return the tokenizer; the caller owns it and must {@link #close()} it
     * @throws NoSuchFileException if {@code tokenizer.json} does not exist (message names the path)
     * @throws IOException if a file cannot be read or is malformed (message names the file)
     * @throws IllegalStateException if the DJL native library cannot be loaded
     */
    public static HfTokenizer load(Path modelDir) throws IOException {
        Path file = Files.isRegularFile(modelDir) ? modelDir : modelDir.resolve("tokenizer.json");
        Path dir = file.toAbsolutePath().getParent();
        if (!Files.isRegularFile(file)) {
            throw new NoSuchFileException(
                    file.toString(),
                    null,
                    "tokenizer.json not found (is " + modelDir + " a prepared model directory?)");
        }
        String json = Files.readString(file, StandardCharsets.UTF_8);
        JsonNode root = readJson(file, json);
        JsonNode model = root.get("model");
        if (model == null || !model.isObject()) {
            throw malformed(file, "no \"model\" object; not a Hugging Face tokenizers file", null);
        }

        // Vocabulary: model vocab (BPE/WordPiece/WordLevel: {token: id}; Unigram: [[piece, score]]),
        // then added_tokens, which win on conflicts exactly like Rust's AddedVocabulary lookups.
        Map<String, Integer> t2i = new HashMap<>();
        JsonNode vocab = model.get("vocab");
        if (vocab != null && vocab.isObject()) {
            for (var it = vocab.properties().iterator(); it.hasNext(); ) {
                var e = it.next();
                if (!e.getValue().canConvertToInt()) {
                    throw malformed(file, "vocab id of " + e.getKey() + " is not an int", null);
                }
                t2i.put(e.getKey(), e.getValue().intValue());
            }
        } else if (vocab != null && vocab.isArray()) {
            for (int i = 0; i < vocab.size(); i++) {
                t2i.put(vocab.get(i).path(0).asText(), i);
            }
        } else {
            throw malformed(file, "model.vocab is missing", null);
        }
        Map<Integer, String> addedById = new HashMap<>();
        for (JsonNode added : root.path("added_tokens")) {
            JsonNode id = added.get("id");
            JsonNode content = added.get("content");
            if (id == null || !id.canConvertToInt() || content == null || !content.isTextual()) {
                throw malformed(file, "added_tokens entry without int id / string content: " + added, null);
            }
            t2i.put(content.asText(), id.intValue());
            addedById.put(id.intValue(), content.asText());
        }
        int maxId = t2i.values().stream().mapToInt(Integer::intValue).max().orElse(-1);
        String[] i2t = new String[maxId + 1];
        t2i.forEach((tok, id) -> {
            if (id >= 0 && i2t[id] == null) {
                i2t[id] = tok;
            }
        });
        addedById.forEach((id, tok) -> {
            if (id >= 0) {
                i2t[id] = tok;
            }
        });

        // Special-token strings (informational) and EOS ids (union of the model configs).
        JsonNode tokConfig = readOptionalJson(dir.resolve("tokenizer_config.json"));
        String bos = tokenString(tokConfig.get("bos_token"));
        String eos = tokenString(tokConfig.get("eos_token"));
        JsonNode addBos = tokConfig.get("add_bos_token");
        // transformers 5: clean_up_tokenization_spaces defaults to false and is ignored for BPE models
        // unless the explicit "corrupt output" override is set.
        boolean isBpe = model.has("type") ? "BPE".equals(model.path("type").asText()) : model.has("merges");
        boolean cleanUp = tokConfig.path("clean_up_tokenization_spaces").asBoolean(false)
                && (!isBpe
                        || tokConfig
                                .path("clean_up_tokenization_spaces_for_bpe_even_though_it_will_corrupt_output")
                                .asBoolean(false));
        JsonNode decoderNode = root.get("decoder");
        Object decoderConfig = decoderNode == null || decoderNode.isNull() ? null : plain(decoderNode);
        Set<Integer> eosIds = new LinkedHashSet<>();
        for (String name : new String[] {"config.json", "generation_config.json"}) {
            JsonNode cfg = readOptionalJson(dir.resolve(name));
            collectIds(cfg.get("eos_token_id"), eosIds);
            collectIds(cfg.path("text_config").get("eos_token_id"), eosIds);
        }
        if (eosIds.isEmpty() && eos != null && t2i.containsKey(eos)) {
            eosIds.add(t2i.get(eos));
        }

        HuggingFaceTokenizer tokenizer;
        try {
            tokenizer = HuggingFaceTokenizer.newInstance(
                    new ByteArrayInputStream(json.getBytes(StandardCharsets.UTF_8)), djlOptions());
        } catch (ai.djl.engine.EngineException e) {
            throw new IllegalStateException(
                    "Cannot load DJL's native tokenizers library (cache dir " + NATIVE_CACHE_DIR + ", override with -D"
                            + CACHE_PROPERTY + "=DIR)",
                    e);
        } catch (RuntimeException e) { // the Rust side rejected the file (unknown component, bad field)
            throw malformed(file, String.valueOf(e.getMessage()), e);
        }
        return new HfTokenizer(
                file,
                tokenizer,
                Map.copyOf(t2i),
                i2t,
                eosIds.stream().mapToInt(Integer::intValue).toArray(),
                bos,
                eos,
                addBos != null && addBos.isBoolean() ? addBos.booleanValue() : null,
                decoderConfig,
                cleanUp,
                root.hasNonNull("normalizer"));
    }

    /**
     * DJL options. DJL's defaults are for BERT-style classification, not for an LLM: truncation
     * LONGEST_FIRST at {@code modelMaxLength} = 512 and padding LONGEST, both written into the native
     * tokenizer at construction. We turn both off (which also clears any truncation/padding section of
     * tokenizer.json, as transformers does for a plain call). {@code addSpecialTokens} and {@code
     * withOverflowingTokens} are only defaults for DJL's one-argument encode; we always pass them
     * explicitly. {@code doLowerCase} is off by default and stays off.
     */
    private static Map<String, String> djlOptions() {
        return Map.of(
                "truncation", "false",
                "padding", "false",
                "addSpecialTokens", "false",
                "withOverflowingTokens", "false",
                "doLowerCase", "false");
    }

    /**
     * Encodes {@code text} to token ids.
     *
     * @param text any string without unpaired surrogates (Python cannot encode those either)
     * @param addSpecialTokens apply tokenizer.json's post-processor (e.g. BOS), like {@code
     *     add_special_tokens=True} in Python
     * @return the ids, never truncated or padded
     * @throws IllegalArgumentException if {@code text} contains an unpaired surrogate
     * @throws IllegalStateException if closed
     */
    public int[] encode(String text, boolean addSpecialTokens) {
        checkWellFormed(text);
        long[] ids = nativeTokenizer.encode(text, addSpecialTokens, false).getIds();
        int[] out = new int[ids.length];
        for (int i = 0; i < ids.length; i++) {
            out[i] = Math.toIntExact(ids[i]);
        }
        return out;
    }

    /**
     * Decodes ids to text, exactly as Python's {@code Tokenizer.decode}: byte-level pieces that do
     * not form complete UTF-8 come out as U+FFFD, ids unknown to the vocabulary are silently dropped,
     * and no tokenization-space clean-up is done.
     *
     * @param ids token ids, each {@code >= 0}
     * @param skipSpecialTokens drop tokens marked {@code special} in tokenizer.json
     * @return the text
     * @throws IllegalArgumentException if an id is negative
     * @throws IllegalStateException if closed
     */
    public String decode(int[] ids, boolean skipSpecialTokens) {
        long[] wide = new long[ids.length];
        for (int i = 0; i < ids.length; i++) {
            if (ids[i] < 0) {
                throw new IllegalArgumentException("negative token id " + ids[i] + " at index " + i);
            }
            wide[i] = ids[i];
        }
        return nativeTokenizer.decode(wide, skipSpecialTokens);
    }

    /**
     * Decodes {@code ids[from, to)} keeping special tokens, as {@link #decode(int[], boolean)} with
     * {@code skipSpecialTokens = false}.
     *
     * @throws IndexOutOfBoundsException if the range is outside {@code ids}
     * @throws IllegalArgumentException if an id is negative
     */
    @Override
    public String decode(int[] ids, int from, int to) {
        java.util.Objects.checkFromToIndex(from, to, ids.length);
        long[] wide = new long[to - from];
        for (int i = from; i < to; i++) {
            if (ids[i] < 0) {
                throw new IllegalArgumentException("negative token id " + ids[i] + " at index " + i);
            }
            wide[i - from] = ids[i];
        }
        return nativeTokenizer.decode(wide, false);
    }

    /** Same as {@link #token(int)}: the raw vocabulary string of {@code id}, or {@code null}. */
    @Override
    public String tokenString(int id) {
        return token(id);
    }

    /**
     * Whether transformers' {@code decode} would clean up tokenization spaces: {@code
     * clean_up_tokenization_spaces} of tokenizer_config.json (default false), ignored for BPE models
     * unless {@code clean_up_tokenization_spaces_for_bpe_even_though_it_will_corrupt_output} is set.
     */
    @Override
    public boolean cleanUpTokenizationSpaces() {
        return cleanUpTokenizationSpaces;
    }

    /** tokenizer.json's {@code decoder} section as unmodifiable plain Java values, or null. */
    @Override
    public Object decoderConfig() {
        return decoderConfig;
    }

    /**
     * Whether tokenizer.json has a normalizer, which may change the text's length before it is
     * split (byte-level BPE tokenizers such as SmolLM2's have none).
     */
    public boolean hasNormalizer() {
        return hasNormalizer;
    }

    /** Number of distinct tokens including added tokens, as Python's {@code get_vocab_size(True)}. */
    @Override
    public int vocabSize() {
        return tokenToId.size();
    }

    /** The id of {@code token} (a raw vocabulary string, e.g. {@code "Ġthe"}), as {@code token_to_id}. */
    @Override
    public OptionalInt tokenId(String token) {
        Integer id = tokenToId.get(token);
        return id == null ? OptionalInt.empty() : OptionalInt.of(id);
    }

    /** The raw vocabulary string of {@code id}, or {@code null} if unknown, as {@code id_to_token}. */
    public String token(int id) {
        return id >= 0 && id < idToToken.length ? idToToken[id] : null;
    }

    /**
     * End-of-sequence ids: the union of {@code eos_token_id} (int or list) in {@code config.json} and
     * {@code generation_config.json}, in first-seen order; if neither defines one, the id of {@link
     * #eosToken()}; empty if nothing is known.
     */
    public int[] eosTokenIds() {
        return eosTokenIds.clone();
    }

    /** {@code bos_token} of tokenizer_config.json, if present. */
    public Optional<String> bosToken() {
        return Optional.ofNullable(bosToken);
    }

    /** {@code eos_token} of tokenizer_config.json, if present. */
    public Optional<String> eosToken() {
        return Optional.ofNullable(eosToken);
    }

    /**
     * {@code add_bos_token} of tokenizer_config.json, if present. Informational only: {@link #encode}
     * never consults it (tokenizer.json's post-processor decides, as in Python {@code tokenizers}).
     */
    public Optional<Boolean> addBosToken() {
        return Optional.ofNullable(addBosToken);
    }

    /** The tokenizer.json this instance was loaded from. */
    public Path tokenizerFile() {
        return tokenizerFile;
    }

    /** Where DJL's native {@code libtokenizers} is extracted (and re-used from). */
    public static Path nativeCacheDir() {
        return NATIVE_CACHE_DIR;
    }

    /** Frees the native tokenizer. Idempotent; see the class comment for the threading rule. */
    @Override
    public void close() {
        nativeTokenizer.close();
    }

    // ---------------------------------------------------------------------------------------------

    private static Path configureDjl() {
        setIfAbsent("ai.djl.offline", "DJL_OFFLINE", "true");
        setIfAbsent("OPT_OUT_TRACKING", "OPT_OUT_TRACKING", "true");
        setIfAbsent("RUST_FLAVOR", "RUST_FLAVOR", "cpu");
        // DJL extracts libtokenizers into $ENGINE_CACHE_DIR/tokenizers/<version>-cpu-<os>-<arch>/
        // (an ENGINE_CACHE_DIR environment variable beats any system property inside DJL).
        String env = System.getenv("ENGINE_CACHE_DIR");
        if (env != null && !env.isEmpty()) {
            return Path.of(env);
        }
        String explicit = System.getProperty(CACHE_PROPERTY);
        if (explicit == null || explicit.isEmpty()) {
            explicit = System.getProperty("ENGINE_CACHE_DIR");
        }
        Path dir = explicit != null && !explicit.isEmpty() ? Path.of(explicit) : defaultCacheDir();
        System.setProperty("ENGINE_CACHE_DIR", dir.toAbsolutePath().toString());
        return dir.toAbsolutePath();
    }

    private static Path defaultCacheDir() {
        String xdg = System.getenv("XDG_CACHE_HOME");
        Path base = xdg != null && !xdg.isEmpty() ? Path.of(xdg) : Path.of(System.getProperty("user.home"), ".cache");
        Path dir = base.resolve("mlx-ring").resolve("djl");
        try {
            Files.createDirectories(dir);
            if (Files.isWritable(dir)) {
                return dir;
            }
        } catch (IOException | SecurityException ignored) {
            // fall through to the temp dir
        }
        return Path.of(System.getProperty("java.io.tmpdir"), "mlx-ring-djl-" + System.getProperty("user.name"));
    }

    private static void setIfAbsent(String property, String envName, String value) {
        if (System.getenv(envName) == null && System.getProperty(property) == null) {
            System.setProperty(property, value);
        }
    }

    private static JsonNode readJson(Path file, String text) throws IOException {
        try {
            JsonNode node = JSON.readTree(text);
            if (node == null || !node.isObject()) {
                throw malformed(file, "not a JSON object", null);
            }
            return node;
        } catch (JacksonException e) {
            throw malformed(file, e.getOriginalMessage(), e);
        }
    }

    private static JsonNode readOptionalJson(Path file) throws IOException {
        if (!Files.isRegularFile(file)) {
            return JSON.createObjectNode();
        }
        return readJson(file, Files.readString(file, StandardCharsets.UTF_8));
    }

    private static IOException malformed(Path file, String detail, Throwable cause) {
        return new IOException("Malformed " + file.getFileName() + " (" + file + "): " + detail, cause);
    }

    /** A special token in tokenizer_config.json is either a string or an AddedToken object. */
    private static String tokenString(JsonNode node) {
        if (node == null || node.isNull()) {
            return null;
        }
        if (node.isTextual()) {
            return node.asText();
        }
        JsonNode content = node.get("content");
        return content != null && content.isTextual() ? content.asText() : null;
    }

    private static void collectIds(JsonNode node, Set<Integer> into) {
        if (node == null) {
            return;
        }
        if (node.canConvertToInt()) {
            into.add(node.intValue());
        } else if (node.isArray()) {
            node.forEach(n -> {
                if (n.canConvertToInt()) {
                    into.add(n.intValue());
                }
            });
        }
    }

    /** A JSON tree as unmodifiable maps, lists, strings, numbers and booleans. */
    private static Object plain(JsonNode node) {
        if (node.isObject()) {
            Map<String, Object> m = new LinkedHashMap<>();
            node.properties().forEach(e -> m.put(e.getKey(), plain(e.getValue())));
            return Collections.unmodifiableMap(m);
        }
        if (node.isArray()) {
            List<Object> l = new ArrayList<>(node.size());
            node.forEach(n -> l.add(plain(n)));
            return Collections.unmodifiableList(l);
        }
        if (node.isNull() || node.isMissingNode()) {
            return null;
        }
        if (node.isBoolean()) {
            return node.booleanValue();
        }
        if (node.isIntegralNumber()) {
            return node.canConvertToInt() ? (Object) node.intValue() : (Object) node.longValue();
        }
        if (node.isNumber()) {
            return node.doubleValue();
        }
        return node.asText();
    }

    private static void checkWellFormed(String text) {
        int i = Utf16.firstUnpairedSurrogate(text);
        if (i >= 0) {
            throw new IllegalArgumentException("unpaired surrogate U+"
                    + Integer.toHexString(text.charAt(i)).toUpperCase() + " at index " + i);
        }
    }

    @Override
    public String toString() {
        return "HfTokenizer[" + tokenizerFile + ", vocab=" + vocabSize() + "]";
    }
}
