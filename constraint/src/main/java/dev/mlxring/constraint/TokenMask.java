package dev.mlxring.constraint;

import java.lang.foreign.MemorySegment;
import java.lang.foreign.ValueLayout;

/**
 * The layout of a token mask, as llguidance writes it: 32-bit words in native byte order, token id
 * {@code t} allowed iff bit {@code t % 32} of word {@code t / 32} is set; bits past the vocabulary
 * are 0. The same layout as {@code llguidance.numpy.allocate_token_bitmask}'s int32 rows.
 */
public final class TokenMask {
    private TokenMask() {}

    /** Bytes of one mask over {@code vocabSize} token ids. */
    public static long byteSize(int vocabSize) {
        return (vocabSize + 31L) / 32 * Integer.BYTES;
    }

    /** Whether {@code mask} allows {@code tokenId}. */
    public static boolean isAllowed(MemorySegment mask, int tokenId) {
        int word = mask.get(ValueLayout.JAVA_INT_UNALIGNED, (long) (tokenId >>> 5) * Integer.BYTES);
        return (word >>> (tokenId & 31) & 1) != 0;
    }

    /** How many token ids {@code mask} allows. */
    public static int allowedCount(MemorySegment mask) {
        int count = 0;
        for (long offset = 0; offset + Integer.BYTES <= mask.byteSize(); offset += Integer.BYTES) {
            count += Integer.bitCount(mask.get(ValueLayout.JAVA_INT_UNALIGNED, offset));
        }
        return count;
    }
}
