package dev.mlxring.sink;

import dev.mlxring.pipeline.TokenDecoder;
import dev.mlxring.pycompat.PyUtf8Decoder;

/**
 * mlx-lm's {@code SPMStreamingDetokenizer} (SentencePiece-style tokenizer.json decoders: Replace
 * {@code ▁}→space, ByteFallback, Fuse[, Strip]): a token contributes its UTF-8 bytes, or one byte
 * for a {@code <0xNN>} byte-fallback token; {@code ▁} reads as a space; pending bytes are emitted as
 * soon as they decode without a trailing U+FFFD. With {@code trimSpace} (the decoder ends with
 * {@code Strip}), the first emitted text loses one leading space.
 *
 * <p>mlx-lm replaces the separator bytes in the pending buffer before decoding; decoding U+2581 as
 * a space is the same thing, since E2 96 81 always starts a fresh sequence. Ids without a
 * vocabulary string (mlx-lm would raise) contribute nothing. No allocation per token.
 */
final class SpmDetokenizer implements StreamingDetokenizer {
    private final TokenDecoder vocab;
    private final boolean trimSpace;
    private final PyUtf8Decoder decoder = new PyUtf8Decoder(true);
    private final StringBuilder pendingText = new StringBuilder(32);
    private final PyUtf8Decoder.ByteSink toPending = b -> decoder.feed(b, pendingText);
    private boolean anyText;

    SpmDetokenizer(TokenDecoder vocab, boolean trimSpace) {
        this.vocab = vocab;
        this.trimSpace = trimSpace;
    }

    static StreamingDetokenizer.Factory factory(TokenDecoder vocab, boolean trimSpace) {
        return () -> new SpmDetokenizer(vocab, trimSpace);
    }

    @Override
    public void addToken(int tokenId, StringBuilder out) {
        String t = vocab.tokenString(tokenId);
        if (t != null) {
            int hex = byteFallback(t);
            if (hex >= 0) {
                decoder.feed(hex, pendingText);
            } else {
                for (int i = 0, n = t.length(); i < n; ) {
                    int c = t.codePointAt(i);
                    i += Character.charCount(c);
                    PyUtf8Decoder.encodeCodePoint(c, toPending);
                }
            }
        }
        if (decoder.pending() || pendingText.length() > 0 && pendingText.charAt(pendingText.length() - 1) == '\uFFFD') {
            return;
        }
        emit(out);
    }

    @Override
    public void finalizeTo(StringBuilder out) {
        decoder.end(pendingText);
        emit(out);
    }

    private void emit(StringBuilder out) {
        int start = !anyText && trimSpace && pendingText.length() > 0 && pendingText.charAt(0) == ' ' ? 1 : 0;
        if (pendingText.length() > start) {
            out.append(pendingText, start, pendingText.length());
            anyText = true;
        }
        pendingText.setLength(0);
    }

    /**
     * {@code bytes([int(t[3:5], 16)]) if t.startswith("<0x")}: the byte of a byte-fallback token,
     * or -1. (Python's {@code int} would also accept odd spellings such as {@code "<0x A>"}; such
     * tokens do not occur in SentencePiece vocabularies, and we read them as text.)
     */
    static int byteFallback(String t) {
        if (!t.startsWith("<0x") || t.length() < 4) {
            return -1;
        }
        int end = Math.min(5, t.length());
        int v = 0;
        for (int i = 3; i < end; i++) {
            int d = Character.digit(t.charAt(i), 16);
            if (d < 0 || t.charAt(i) > 0x7F) {
                return -1;
            }
            v = v * 16 + d;
        }
        return v;
    }
}
