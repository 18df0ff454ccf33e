package dev.mlxring.bench;

import java.util.Random;

/**
 * A length in tokens, fixed ({@code 128}) or drawn uniformly from a closed range
 * ({@code 64:256}), as {@code --input-len} and {@code --output-len} take it.
 */
public record LengthRange(int min, int max) {
    public LengthRange {
        if (min < 1 || max < min) {
            throw new IllegalArgumentException("a length range is 1 <= MIN <= MAX, got " + min + ":" + max);
        }
    }

    /** Parses {@code N} or {@code MIN:MAX} for {@code flag}, naming it in the error. */
    public static LengthRange parse(String flag, String spec) {
        String[] parts = spec.trim().split(":", -1);
        if (parts.length > 2) {
            throw new IllegalArgumentException(flag + " takes N or MIN:MAX, got '" + spec + "'");
        }
        try {
            int lo = Integer.parseInt(parts[0].trim());
            int hi = parts.length == 2 ? Integer.parseInt(parts[1].trim()) : lo;
            if (lo < 1 || hi < lo) {
                throw new IllegalArgumentException(
                        flag + " takes N >= 1 or MIN:MAX with 1 <= MIN <= MAX, got '" + spec + "'");
            }
            return new LengthRange(lo, hi);
        } catch (NumberFormatException e) {
            throw new IllegalArgumentException(flag + " takes N or MIN:MAX (whole numbers), got '" + spec + "'");
        }
    }

    public static LengthRange fixed(int n) {
        return new LengthRange(n, n);
    }

    /** A length drawn uniformly from [min, max]. */
    public int sample(Random random) {
        return min == max ? min : min + random.nextInt(max - min + 1);
    }

    @Override
    public String toString() {
        return min == max ? Integer.toString(min) : min + ":" + max;
    }
}
