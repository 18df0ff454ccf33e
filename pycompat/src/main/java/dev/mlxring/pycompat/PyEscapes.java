package dev.mlxring.pycompat;

/**
 * Python's backslash escapes in a str literal (what the tokenizer and the {@code unicode-escape}
 * codec decode): {@code \\ \' \" \a \b \f \n \r \t \v}, octal {@code \ooo}, {@code \xhh}, {@code
 * \}{@code uXXXX}, {@code \UXXXXXXXX}, {@code \N{name}}, backslash-newline as a line
 * continuation; an unknown escape ({@code \q}) stays as written.
 */
public final class PyEscapes {
    private PyEscapes() {}

    /**
     * Decodes the escape whose letter is at {@code src.charAt(at)} (the character after the
     * backslash) onto {@code out}.
     *
     * @return the index just past the escape
     * @throws PyError for a malformed {@code \x}, {@code \}{@code u}, {@code \U} or {@code \N}
     *     escape, with Python's message
     */
    public static int decode(String src, int at, StringBuilder out) {
        char e = src.charAt(at);
        int pos = at + 1;
        switch (e) {
            case '\n' -> {}
            case '\\', '\'', '"' -> out.append(e);
            case 'a' -> out.append('\u0007');
            case 'b' -> out.append('\b');
            case 'f' -> out.append('\f');
            case 'n' -> out.append('\n');
            case 'r' -> out.append('\r');
            case 't' -> out.append('\t');
            case 'v' -> out.append('\u000B');
            case '0', '1', '2', '3', '4', '5', '6', '7' -> {
                int v = e - '0';
                for (int k = 0; k < 2 && pos < src.length() && src.charAt(pos) >= '0' && src.charAt(pos) <= '7'; k++) {
                    v = v * 8 + (src.charAt(pos++) - '0');
                }
                out.append((char) v);
            }
            case 'x' -> {
                out.append((char) hex(src, pos, 2, "truncated \\xXX escape"));
                pos += 2;
            }
            case 'u' -> {
                out.append((char) hex(src, pos, 4, "truncated \\uXXXX escape"));
                pos += 4;
            }
            case 'U' -> {
                int v = hex(src, pos, 8, "truncated \\UXXXXXXXX escape");
                if (v > 0x10FFFF || v < 0) {
                    throw new PyError("illegal Unicode character");
                }
                out.appendCodePoint(v);
                pos += 8;
            }
            case 'N' -> {
                int close = src.indexOf('}', pos);
                if (pos >= src.length() || src.charAt(pos) != '{' || close < 0 || close == pos + 1) {
                    throw new PyError("malformed \\N character escape");
                }
                String name = src.substring(pos + 1, close);
                if (!name.equals(name.strip()) || name.indexOf('\n') >= 0) {
                    throw new PyError("unknown Unicode character name");
                }
                try {
                    out.appendCodePoint(Character.codePointOf(name));
                } catch (IllegalArgumentException ex) {
                    throw new PyError("unknown Unicode character name");
                }
                pos = close + 1;
            }
            default -> out.append('\\').append(e);
        }
        return pos;
    }

    /** {@code n} ASCII hex digits at {@code src[pos]} as a number (an int: 8 digits may wrap negative). */
    private static int hex(String src, int pos, int n, String truncated) {
        if (pos + n > src.length()) {
            throw new PyError(truncated);
        }
        int v = 0;
        for (int k = 0; k < n; k++) {
            char c = src.charAt(pos + k);
            int h = Character.digit(c, 16);
            if (h < 0 || c >= 0x80) {
                throw new PyError(truncated);
            }
            v = (v << 4) | h;
        }
        return v;
    }
}
