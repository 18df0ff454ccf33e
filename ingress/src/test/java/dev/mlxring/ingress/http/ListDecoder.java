package dev.mlxring.ingress.http;

import dev.mlxring.pipeline.TokenDecoder;
import java.util.List;
import java.util.OptionalInt;

/**
 * A test vocabulary: token i is the i-th string, and decoding concatenates (the naive
 * detokenizer). Immutable.
 */
record ListDecoder(List<String> vocab) implements TokenDecoder {
    @Override
    public int vocabSize() {
        return vocab.size();
    }

    @Override
    public String tokenString(int id) {
        return id >= 0 && id < vocab.size() ? vocab.get(id) : null;
    }

    @Override
    public OptionalInt tokenId(String token) {
        int i = vocab.indexOf(token);
        return i < 0 ? OptionalInt.empty() : OptionalInt.of(i);
    }

    @Override
    public String decode(int[] ids, int from, int to) {
        StringBuilder b = new StringBuilder();
        for (int i = from; i < to; i++) {
            b.append(vocab.get(ids[i]));
        }
        return b.toString();
    }

    @Override
    public boolean cleanUpTokenizationSpaces() {
        return false;
    }

    @Override
    public Object decoderConfig() {
        return null;
    }
}
