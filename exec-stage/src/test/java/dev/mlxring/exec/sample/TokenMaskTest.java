package dev.mlxring.exec.sample;

import static org.junit.jupiter.api.Assertions.assertArrayEquals;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertNotNull;
import static org.junit.jupiter.api.Assertions.assertNull;

import dev.mlxring.mlx.ArrayScope;
import dev.mlxring.mlx.Dtype;
import dev.mlxring.mlx.Mlx;
import dev.mlxring.pipeline.Outcome.ErrorType;
import dev.mlxring.pipeline.TokenConstraint;
import java.util.function.Predicate;
import org.junit.jupiter.api.Test;

/**
 * {@link TokenMask} over a 40-token vocabulary (two words, the second partly outside it): the
 * mask holds exactly the allowed ids below the vocabulary, words are cleared before each call,
 * a set with no allowed id inside the vocabulary or a throwing constraint is a failure of the
 * right type, and the constraint is closed once.
 */
class TokenMaskTest {
    private static final int VOCAB = 40;

    /** Sets the bits {@code setBits} picks (any of the 64 the words hold); records what it saw. */
    private static final class Scripted implements TokenConstraint {
        final Predicate<Integer> setBits;
        boolean sawDirtyWords;
        int closes;
        RuntimeException toThrow;

        Scripted(Predicate<Integer> setBits) {
            this.setBits = setBits;
        }

        @Override
        public boolean allowedTokens(int[] words) {
            if (toThrow != null) {
                throw toThrow;
            }
            for (int w : words) {
                sawDirtyWords |= w != 0;
            }
            for (int t = 0; t < words.length * 32; t++) {
                if (setBits.test(t)) {
                    words[t >>> 5] |= 1 << (t & 31);
                }
            }
            return true;
        }

        @Override
        public void consume(int token) {}

        @Override
        public String error() {
            return "scripted";
        }

        @Override
        public void close() {
            closes++;
        }
    }

    /** {@code where(mask, arange(V), -inf)} as floats. */
    private static float[] masked(TokenMask mask) {
        try (ArrayScope scope = ArrayScope.open()) {
            var allowed = mask.next();
            assertNotNull(allowed, "a mask");
            assertEquals(Dtype.BOOL, allowed.dtype());
            return TokenMask.apply(allowed, Mlx.arange(0, VOCAB, 1, Dtype.FLOAT32))
                    .toFloatArray();
        }
    }

    @Test
    void theMaskHoldsExactlyTheAllowedIdsInsideTheVocabulary() {
        Scripted c = new Scripted(t -> t == 3 || t == 31 || t == 32 || t == 39 || t == 45 || t == 63);
        TokenMask mask = new TokenMask(c, VOCAB);
        float[] want = new float[VOCAB];
        for (int t = 0; t < VOCAB; t++) {
            want[t] = t == 3 || t == 31 || t == 32 || t == 39 ? t : Float.NEGATIVE_INFINITY;
        }
        assertArrayEquals(want, masked(mask));
        mask.consume(3);
        assertArrayEquals(want, masked(mask), "the second step");
        assertFalse(c.sawDirtyWords, "the words are cleared before each call");
        mask.close();
        mask.close();
        assertEquals(1, c.closes);
    }

    @Test
    void onlyIdsOutsideTheVocabularyMeanNoTokenIsAllowed() {
        Scripted c = new Scripted(t -> t >= VOCAB);
        TokenMask mask = new TokenMask(c, VOCAB);
        try (ArrayScope scope = ArrayScope.open()) {
            assertNull(mask.next());
        }
        assertEquals(ErrorType.INVALID_REQUEST, mask.failureType());
        assertEquals(
                "token constraint can no longer be satisfied: no token is allowed after 0 generated tokens"
                        + " (scripted)",
                mask.failure());
        assertFalse(mask.consume(1), "a failed mask consumes nothing");
    }

    @Test
    void aConstraintThatThrowsIsAnInternalFailure() {
        Scripted c = new Scripted(t -> true);
        c.toThrow = new IllegalStateException("parser broke");
        TokenMask mask = new TokenMask(c, VOCAB);
        try (ArrayScope scope = ArrayScope.open()) {
            assertNull(mask.next());
        }
        assertEquals(ErrorType.INTERNAL, mask.failureType());
        assertEquals("token constraint failed after 0 tokens: parser broke", mask.failure());
    }
}
