package dev.mlxring.pycompat;

import java.util.regex.Pattern;

/**
 * The third-party {@code regex} module's classes as Java regex fragments, for ports of patterns
 * that mlx-lm compiles with {@code regex} rather than {@code re}.
 */
public final class PyRegex {
    private PyRegex() {}

    /** The {@code regex} module's {@code \s} for str patterns: the Unicode White_Space property. */
    public static final String SPACE_CHARS =
            "\\t\\n\\x0B\\f\\r\\x20\\x85\\xA0\\u1680\\u2000-\\u200A\\u2028\\u2029\\u202F\\u205F\\u3000";

    /** {@code regex}'s {@code \s}. */
    public static final String S = "[" + SPACE_CHARS + "]";

    /**
     * Flags for a port of a {@code regex}-module pattern: Unicode {@code \w} (Java's
     * UNICODE_CHARACTER_CLASS is the same Unicode TR18 definition; the tables are Java's Unicode
     * 16, the module's newer) and {@code $} before a final {@code \n} only.
     */
    public static final int FLAGS = Pattern.UNICODE_CHARACTER_CLASS | Pattern.UNIX_LINES;
}
