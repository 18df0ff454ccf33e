package dev.mlxring.sink;

/**
 * The GPT-2 byte-level alphabet: every byte is a printable character (bytes that are printable
 * Latin-1 map to themselves, the rest to U+0100 onwards, e.g. space to {@code Ġ}, newline to
 * {@code Ċ}). Built exactly like mlx-lm's {@code _byte_decoder()}.
 */
final class ByteLevel {
    private ByteLevel() {}

    /** Characters below this have an entry (the table's largest character is U+0143). */
    static final int TABLE_SIZE = 0x144;

    private static final short[] DECODER = build();

    private static short[] build() {
        short[] t = new short[TABLE_SIZE];
        java.util.Arrays.fill(t, (short) -1);
        int[] limits = {0, '!', '~' + 1, 0xA1, 0xAC + 1, 0xAE, 0xFF + 1};
        int n = 0;
        for (int i = 0; i + 1 < limits.length; i++) {
            for (int b = limits[i]; b < limits[i + 1]; b++) {
                if (i % 2 == 0) {
                    t[256 + n++] = (short) b;
                } else {
                    t[b] = (short) b;
                }
            }
        }
        return t;
    }

    /** The byte that {@code codePoint} stands for, or -1 if it is not in the alphabet. */
    static int byteOf(int codePoint) {
        return codePoint >= 0 && codePoint < TABLE_SIZE ? DECODER[codePoint] : -1;
    }

    /** The alphabet character of {@code b} (0..255): the inverse of {@link #byteOf}. */
    static char charOf(int b) {
        for (int c = 0; c < TABLE_SIZE; c++) {
            if (DECODER[c] == b) {
                return (char) c;
            }
        }
        throw new IllegalArgumentException("not a byte: " + b);
    }
}
