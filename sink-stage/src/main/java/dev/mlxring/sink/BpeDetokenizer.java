package dev.mlxring.sink;

import dev.mlxring.pipeline.TokenDecoder;
import dev.mlxring.pycompat.PyUtf8Decoder;

/**
 * mlx-lm's {@code BPEStreamingDetokenizer} (byte-level BPE, tokenizer.json decoder {@code
 * ByteLevel}): a token's characters are mapped back to bytes through the GPT-2 alphabet and the
 * pending bytes are emitted once they decode without a trailing U+FFFD and the token is not a lone
 * space ({@code Ġ}), which waits for the next token. The very first emitted text loses one leading
 * space.
 *
 * <p>Reproduced quirks: while streaming, the character for byte 0 ({@code Ā}) is taken as its own
 * UTF-8 ({@code byte_decoder.get(c, False)} is falsy for 0), but {@code finalize()} maps it to
 * 0x00; characters outside the alphabet (in added tokens) are taken as UTF-8 (where mlx-lm's
 * {@code finalize()} would raise a KeyError); ids at or beyond {@code len(tokenizer)} read as
 * {@code "!"}; an id without a vocabulary string reads as empty (mlx-lm would raise).
 *
 * <p>Cost: each token's bytes are decoded once, incrementally; nothing already emitted is decoded
 * again. No allocation per token.
 */
final class BpeDetokenizer implements StreamingDetokenizer {
    private static final String OUT_OF_RANGE = "!";

    private final TokenDecoder vocab;
    private final int size;
    private final PyUtf8Decoder decoder = new PyUtf8Decoder(false);
    /** decode(_unflushed) so far, minus an incomplete tail still pending in {@link #decoder}. */
    private final StringBuilder pendingText = new StringBuilder(32);

    private final PyUtf8Decoder.ByteSink toPending = b -> decoder.feed(b, pendingText);
    /** The ids whose strings make up mlx-lm's {@code _unflushed}. */
    private int[] pendingIds = new int[8];

    private int pendingCount;
    /** Whether mlx-lm's {@code self.text} is non-empty. */
    private boolean anyText;

    BpeDetokenizer(TokenDecoder vocab) {
        this.vocab = vocab;
        this.size = vocab.vocabSize();
    }

    static StreamingDetokenizer.Factory factory(TokenDecoder vocab) {
        return () -> new BpeDetokenizer(vocab);
    }

    private String piece(int id) {
        if (id >= size) {
            return OUT_OF_RANGE;
        }
        String s = vocab.tokenString(id);
        return s == null ? "" : s;
    }

    @Override
    public void addToken(int tokenId, StringBuilder out) {
        if (pendingCount == pendingIds.length) {
            pendingIds = java.util.Arrays.copyOf(pendingIds, pendingCount * 2);
        }
        pendingIds[pendingCount++] = tokenId;
        String v = piece(tokenId);
        for (int i = 0, n = v.length(); i < n; ) {
            int c = v.codePointAt(i);
            i += Character.charCount(c);
            int b = ByteLevel.byteOf(c);
            if (b > 0) {
                decoder.feed(b, pendingText);
            } else { // not in the alphabet, or byte 0 (falsy in mlx-lm): the character's own UTF-8
                PyUtf8Decoder.encodeCodePoint(c, toPending);
            }
        }
        boolean endsWithReplacement = decoder.pending()
                || pendingText.length() > 0 && pendingText.charAt(pendingText.length() - 1) == '\uFFFD';
        boolean loneSpace = v.length() == 1 && ByteLevel.byteOf(v.charAt(0)) == ' ';
        if (!endsWithReplacement && !loneSpace) {
            emit(pendingText, out);
            pendingCount = 0;
        }
    }

    @Override
    public void finalizeTo(StringBuilder out) {
        // finalize() decodes _unflushed afresh with byte_decoder[c] (byte 0 included).
        decoder.reset();
        pendingText.setLength(0);
        for (int k = 0; k < pendingCount; k++) {
            String v = piece(pendingIds[k]);
            for (int i = 0, n = v.length(); i < n; ) {
                int c = v.codePointAt(i);
                i += Character.charCount(c);
                int b = ByteLevel.byteOf(c);
                if (b >= 0) {
                    decoder.feed(b, pendingText);
                } else {
                    PyUtf8Decoder.encodeCodePoint(c, toPending);
                }
            }
        }
        decoder.end(pendingText);
        emit(pendingText, out);
        pendingCount = 0;
    }

    /** {@code self.text += self._maybe_trim_space(text)}; clears {@code text}. */
    private void emit(StringBuilder text, StringBuilder out) {
        int start = !anyText && text.length() > 0 && text.charAt(0) == ' ' ? 1 : 0;
        if (text.length() > start) {
            out.append(text, start, text.length());
            anyText = true;
        }
        text.setLength(0);
    }
}
