package dev.mlxring.pycompat;

/** Python's character classes for one code point, where they differ from Java's {@link Character}. */
public final class PyUnicode {
    private PyUnicode() {}

    /** Python's {@code str.isspace()} for one code point (bidi WS/B/S or category Zs). */
    public static boolean isSpace(int cp) {
        return switch (cp) {
            case '\t',
                    '\n',
                    0x0b,
                    0x0c,
                    '\r',
                    0x1c,
                    0x1d,
                    0x1e,
                    0x1f,
                    ' ',
                    0x85,
                    0xa0,
                    0x1680,
                    0x2028,
                    0x2029,
                    0x202f,
                    0x205f,
                    0x3000 -> true;
            default -> cp >= 0x2000 && cp <= 0x200a;
        };
    }
}
