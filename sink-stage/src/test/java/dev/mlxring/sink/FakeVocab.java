package dev.mlxring.sink;

import dev.mlxring.pipeline.TokenDecoder;
import java.io.ByteArrayOutputStream;
import java.nio.charset.StandardCharsets;
import java.util.ArrayList;
import java.util.HashMap;
import java.util.List;
import java.util.Map;
import java.util.OptionalInt;

/**
 * An in-memory byte-level (GPT-2 style) vocabulary: {@link #piece} adds the token for a piece of
 * text, {@link #special} a token whose vocabulary string is the text itself (an added token).
 */
final class FakeVocab implements TokenDecoder {
    private final List<String> tokens = new ArrayList<>();
    private final Map<String, Integer> ids = new HashMap<>();

    /** The id of the byte-level token for {@code text} (created on first use). */
    int piece(String text) {
        return raw(byteLevel(text.getBytes(StandardCharsets.UTF_8)));
    }

    /** The id of a byte-level token for raw bytes (may be incomplete UTF-8). */
    int bytes(int... bytes) {
        byte[] b = new byte[bytes.length];
        for (int i = 0; i < bytes.length; i++) {
            b[i] = (byte) bytes[i];
        }
        return raw(byteLevel(b));
    }

    /** The id of an added token whose vocabulary string is {@code text} as is. */
    int special(String text) {
        return raw(text);
    }

    int[] pieces(String... texts) {
        int[] out = new int[texts.length];
        for (int i = 0; i < texts.length; i++) {
            out[i] = piece(texts[i]);
        }
        return out;
    }

    private int raw(String token) {
        return ids.computeIfAbsent(token, t -> {
            tokens.add(t);
            return tokens.size() - 1;
        });
    }

    static String byteLevel(byte[] bytes) {
        StringBuilder sb = new StringBuilder();
        for (byte b : bytes) {
            sb.append(ByteLevel.charOf(b & 0xFF));
        }
        return sb.toString();
    }

    @Override
    public int vocabSize() {
        return tokens.size();
    }

    @Override
    public String tokenString(int id) {
        return id >= 0 && id < tokens.size() ? tokens.get(id) : null;
    }

    @Override
    public OptionalInt tokenId(String token) {
        Integer id = ids.get(token);
        return id == null ? OptionalInt.empty() : OptionalInt.of(id);
    }

    @Override
    public String decode(int[] idsToDecode, int from, int to) {
        ByteArrayOutputStream out = new ByteArrayOutputStream();
        for (int i = from; i < to; i++) {
            String t = tokenString(idsToDecode[i]);
            for (int k = 0; k < t.length(); k++) {
                int b = ByteLevel.byteOf(t.charAt(k));
                if (b >= 0) {
                    out.write(b);
                } else {
                    out.writeBytes(String.valueOf(t.charAt(k)).getBytes(StandardCharsets.UTF_8));
                }
            }
        }
        return out.toString(StandardCharsets.UTF_8);
    }

    @Override
    public boolean cleanUpTokenizationSpaces() {
        return false;
    }

    @Override
    public Object decoderConfig() {
        return Map.of("type", "ByteLevel");
    }
}
