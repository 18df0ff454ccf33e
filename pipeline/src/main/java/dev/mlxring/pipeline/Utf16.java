package dev.mlxring.pipeline;

/**
 * Well-formedness of Java strings as UTF-16. JSON's {@code \\uD800} escapes and Java strings can
 * hold a lone surrogate, which no tokenizer encodes, no decoded text ever matches and UTF-8 cannot
 * represent; every stage that takes text from outside refuses it with the position.
 */
public final class Utf16 {
    private Utf16() {}

    /** Index of the first unpaired surrogate in {@code s}, or -1 when it is well-formed. */
    public static int firstUnpairedSurrogate(CharSequence s) {
        for (int i = 0, n = s.length(); i < n; i++) {
            char c = s.charAt(i);
            if (Character.isHighSurrogate(c) && i + 1 < n && Character.isLowSurrogate(s.charAt(i + 1))) {
                i++;
            } else if (Character.isSurrogate(c)) {
                return i;
            }
        }
        return -1;
    }
}
