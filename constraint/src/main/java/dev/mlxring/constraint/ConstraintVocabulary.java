package dev.mlxring.constraint;

import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.ObjectMapper;
import java.io.IOException;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.Arrays;

/**
 * The bytes each token id stands for, as llguidance needs them to match text against tokens: read
 * once from a Hugging Face {@code tokenizer.json}, immutable, safe to share between threads.
 *
 * <p>The mapping is the one llguidance's own Hugging Face front end ({@code LLTokenizer} from a
 * {@code tokenizer.json}, the Python oracle's) applies:
 * <ul>
 *   <li>byte-level BPE (decoder {@code ByteLevel}, GPT-2 style, as SmolLM2, Llama 3, Qwen): each
 *       character of a vocabulary entry is mapped back to its byte through GPT-2's
 *       byte-to-unicode table reversed;
 *   <li>byte fallback (a {@code Sequence} decoder with {@code ByteFallback}, SentencePiece style):
 *       {@code <0xAB>} is the byte 0xAB, any other entry its UTF-8 with the {@code Replace}
 *       decoder's space character (usually U+2581) turned back into a space;
 *   <li>every entry of {@code added_tokens} (special or not) is its content prefixed with the byte
 *       0xFF, llguidance's special-token marker: the model may emit it where the grammar names it
 *       (or as EOS), never as text.
 * </ul>
 * Ids that no entry names (a model whose embedding has more rows than the tokenizer has tokens)
 * have no bytes: llguidance never allows them.
 */
public final class ConstraintVocabulary {
    /** llguidance's marker byte in front of a special token's bytes ({@code TokTrie::SPECIAL_TOKEN_MARKER}). */
    public static final byte SPECIAL_TOKEN_MARKER = (byte) 0xFF;

    private static final ObjectMapper JSON = new ObjectMapper();

    private final byte[][] tokenBytes;

    private ConstraintVocabulary(byte[][] tokenBytes) {
        this.tokenBytes = tokenBytes;
    }

    /**
     * Reads {@code tokenizerJson}.
     *
     * @param tokenizerJson a Hugging Face {@code tokenizer.json}
     * @param vocabSize the number of token ids the model scores (its logits' last dimension, {@code
     *     vocab_size} of config.json), or 0 for exactly as many as the tokenizer names; masks then
     *     cover this many ids
     * @throws IOException if the file cannot be read or is not a tokenizer.json (message names it)
     * @throws IllegalArgumentException if its decoder is neither byte-level nor byte-fallback, an
     *     entry does not map to bytes, or {@code vocabSize} is below the tokenizer's largest id + 1
     */
    public static ConstraintVocabulary fromTokenizerJson(Path tokenizerJson, int vocabSize) throws IOException {
        JsonNode root;
        try {
            root = JSON.readTree(Files.readString(tokenizerJson, StandardCharsets.UTF_8));
        } catch (IOException e) {
            throw new IOException("cannot read " + tokenizerJson + ": " + e.getMessage(), e);
        }
        JsonNode vocab = root.path("model").path("vocab");
        if (!vocab.isObject() && !vocab.isArray()) {
            throw new IOException(tokenizerJson + " has no model.vocab; not a Hugging Face tokenizer.json");
        }
        Decoding decoding = Decoding.of(root.path("decoder"), tokenizerJson);
        int maxId = -1;
        for (JsonNode added : root.path("added_tokens")) {
            maxId = Math.max(maxId, id(added.path("id"), tokenizerJson));
        }
        if (vocab.isObject()) {
            for (var it = vocab.properties().iterator(); it.hasNext(); ) {
                maxId = Math.max(maxId, id(it.next().getValue(), tokenizerJson));
            }
        } else {
            maxId = Math.max(maxId, vocab.size() - 1);
        }
        if (vocabSize != 0 && vocabSize < maxId + 1) {
            throw new IllegalArgumentException("vocabSize " + vocabSize + " is below the " + (maxId + 1)
                    + " token ids that " + tokenizerJson + " names");
        }
        byte[][] bytes = new byte[Math.max(vocabSize, maxId + 1)][];
        if (vocab.isObject()) {
            for (var it = vocab.properties().iterator(); it.hasNext(); ) {
                var entry = it.next();
                bytes[entry.getValue().intValue()] = decoding.bytes(entry.getKey());
            }
        } else {
            for (int id = 0; id < vocab.size(); id++) {
                bytes[id] = decoding.bytes(vocab.get(id).path(0).asText());
            }
        }
        for (JsonNode added : root.path("added_tokens")) {
            byte[] content = added.path("content").asText().getBytes(StandardCharsets.UTF_8);
            byte[] marked = new byte[content.length + 1];
            marked[0] = SPECIAL_TOKEN_MARKER;
            System.arraycopy(content, 0, marked, 1, content.length);
            bytes[added.path("id").intValue()] = marked;
        }
        for (int id = 0; id < bytes.length; id++) {
            if (bytes[id] == null) {
                bytes[id] = new byte[0];
            }
        }
        return new ConstraintVocabulary(bytes);
    }

    /** The number of token ids (a mask covers this many). */
    public int size() {
        return tokenBytes.length;
    }

    /** The bytes of {@code tokenId} (a copy; special tokens start with {@link #SPECIAL_TOKEN_MARKER}). */
    public byte[] tokenBytes(int tokenId) {
        return tokenBytes[tokenId].clone();
    }

    /** Whether {@code tokenId} is special (an added token: emitted only as itself, never as text). */
    public boolean isSpecial(int tokenId) {
        byte[] b = tokenBytes[tokenId];
        return b.length > 0 && b[0] == SPECIAL_TOKEN_MARKER;
    }

    int lengthInBytes(int tokenId) {
        return tokenBytes[tokenId].length;
    }

    byte[] bytesUnsafe(int tokenId) {
        return tokenBytes[tokenId];
    }

    private static int id(JsonNode node, Path file) throws IOException {
        if (!node.canConvertToInt() || node.intValue() < 0) {
            throw new IOException(file + ": token id " + node + " is not a non-negative int");
        }
        return node.intValue();
    }

    /** How a vocabulary entry's characters become bytes, from tokenizer.json's {@code decoder}. */
    private record Decoding(boolean byteLevel, char spaceChar) {
        private static final int[] UNICODE_TO_BYTE = unicodeToByte();

        static Decoding of(JsonNode decoder, Path file) {
            String type = decoder.path("type").asText("");
            if (type.equals("ByteLevel")) {
                return new Decoding(true, ' ');
            }
            if (type.equals("Sequence")) {
                boolean byteFallback = false;
                char space = ' ';
                for (JsonNode d : decoder.path("decoders")) {
                    String t = d.path("type").asText("");
                    if (t.equals("ByteFallback")) {
                        byteFallback = true;
                    } else if (t.equals("Replace")
                            && d.path("content").asText("").equals(" ")) {
                        String pattern = d.path("pattern").path("String").asText("");
                        if (pattern.length() == 1) {
                            space = pattern.charAt(0);
                        }
                    }
                }
                if (byteFallback) {
                    return new Decoding(false, space);
                }
            }
            throw new IllegalArgumentException(file + ": decoder " + (decoder.isMissingNode() ? "(none)" : decoder)
                    + " is neither ByteLevel nor a Sequence with ByteFallback; structured outputs cannot map"
                    + " its tokens to bytes");
        }

        byte[] bytes(String entry) {
            if (byteLevel) {
                byte[] out = new byte[entry.length()];
                for (int i = 0; i < entry.length(); i++) {
                    char c = entry.charAt(i);
                    int b = c < UNICODE_TO_BYTE.length ? UNICODE_TO_BYTE[c] : -1;
                    if (b < 0) {
                        throw new IllegalArgumentException("byte-level vocabulary entry " + JSON.valueToTree(entry)
                                + " has the character U+"
                                + Integer.toHexString(c).toUpperCase()
                                + ", which GPT-2's byte-to-unicode table does not produce");
                    }
                    out[i] = (byte) b;
                }
                return out;
            }
            if (entry.length() == 6 && entry.startsWith("<0x") && entry.endsWith(">")) {
                return new byte[] {(byte) Integer.parseInt(entry.substring(3, 5), 16)};
            }
            return entry.replace(spaceChar, ' ').getBytes(StandardCharsets.UTF_8);
        }

        /**
         * GPT-2's {@code bytes_to_unicode} reversed: the printable bytes {@code !..~}, {@code ¡..¬},
         * {@code ®..ÿ} stand for themselves; the other 68 bytes, in order, for U+0100 onwards.
         */
        private static int[] unicodeToByte() {
            int[] table = new int[0x100 + 68];
            Arrays.fill(table, -1);
            int next = 0x100;
            for (int b = 0; b < 256; b++) {
                boolean self = (b >= '!' && b <= '~') || (b >= 0xA1 && b <= 0xAC) || (b >= 0xAE && b <= 0xFF);
                table[self ? b : next++] = b;
            }
            return table;
        }
    }
}
