package dev.mlxring.pycompat;

/**
 * A streaming UTF-8 decoder that replaces bad input exactly like Python's {@code
 * bytes.decode("utf-8", "replace")}: one U+FFFD per maximal subpart of an ill-formed sequence
 * (Unicode's "substitution of maximal subparts"), and one U+FFFD for a sequence cut off by the end
 * of the input. Bytes are fed one at a time; a sequence that is still incomplete stays pending
 * until more bytes (or {@link #end}) decide it. No allocation.
 */
public final class PyUtf8Decoder {
    private final boolean spaceForSentencePieceSeparator;
    private int need;
    private int cp;
    private int lo = 0x80;
    private int hi = 0xBF;

    /**
     * @param spaceForSentencePieceSeparator decode U+2581 ({@code ▁}, bytes E2 96 81) as a space,
     *     which is what mlx-lm's {@code bytes.replace("▁".encode(), b" ")} before decoding amounts to
     */
    public PyUtf8Decoder(boolean spaceForSentencePieceSeparator) {
        this.spaceForSentencePieceSeparator = spaceForSentencePieceSeparator;
    }

    /** Decodes one more byte into {@code out}. */
    public void feed(int b, StringBuilder out) {
        b &= 0xFF;
        if (need > 0) {
            if (b >= lo && b <= hi) {
                cp = cp << 6 | b & 0x3F;
                lo = 0x80;
                hi = 0xBF;
                if (--need == 0) {
                    emit(cp, out);
                }
                return;
            }
            // The pending bytes are a maximal subpart: one replacement, then b starts afresh.
            out.append('\uFFFD');
            need = 0;
            lo = 0x80;
            hi = 0xBF;
        }
        if (b < 0x80) {
            out.append((char) b);
        } else if (b >= 0xC2 && b <= 0xDF) {
            need = 1;
            cp = b & 0x1F;
        } else if (b >= 0xE0 && b <= 0xEF) {
            need = 2;
            cp = b & 0x0F;
            lo = b == 0xE0 ? 0xA0 : 0x80;
            hi = b == 0xED ? 0x9F : 0xBF;
        } else if (b >= 0xF0 && b <= 0xF4) {
            need = 3;
            cp = b & 0x07;
            lo = b == 0xF0 ? 0x90 : 0x80;
            hi = b == 0xF4 ? 0x8F : 0xBF;
        } else {
            out.append('\uFFFD');
        }
    }

    /** Decodes all of {@code bytes}. */
    public void feed(byte[] bytes, StringBuilder out) {
        for (byte b : bytes) {
            feed(b, out);
        }
    }

    /** Whether an incomplete (so far valid) sequence is pending. */
    public boolean pending() {
        return need > 0;
    }

    /** Ends the input: a pending incomplete sequence becomes one U+FFFD. */
    public void end(StringBuilder out) {
        if (need > 0) {
            out.append('\uFFFD');
        }
        reset();
    }

    public void reset() {
        need = 0;
        lo = 0x80;
        hi = 0xBF;
    }

    private void emit(int codePoint, StringBuilder out) {
        if (spaceForSentencePieceSeparator && codePoint == 0x2581) {
            out.append(' ');
        } else if (codePoint < 0x10000) {
            out.append((char) codePoint);
        } else { // appendCodePoint would allocate a char[2]
            out.append(Character.highSurrogate(codePoint)).append(Character.lowSurrogate(codePoint));
        }
    }

    /** Appends the UTF-8 encoding of one code point (a lone surrogate as its 3-byte form). */
    public static void encodeCodePoint(int c, ByteSink sink) {
        if (c < 0x80) {
            sink.put(c);
        } else if (c < 0x800) {
            sink.put(0xC0 | c >> 6);
            sink.put(0x80 | c & 0x3F);
        } else if (c < 0x10000) {
            sink.put(0xE0 | c >> 12);
            sink.put(0x80 | c >> 6 & 0x3F);
            sink.put(0x80 | c & 0x3F);
        } else {
            sink.put(0xF0 | c >> 18);
            sink.put(0x80 | c >> 12 & 0x3F);
            sink.put(0x80 | c >> 6 & 0x3F);
            sink.put(0x80 | c & 0x3F);
        }
    }

    /** Where {@link #encodeCodePoint} puts bytes. */
    @FunctionalInterface
    public interface ByteSink {
        void put(int b);
    }
}
