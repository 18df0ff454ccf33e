package dev.mlxring.pipeline.testing;

import dev.mlxring.pipeline.TokenConstraint;
import java.util.Arrays;
import java.util.concurrent.atomic.AtomicInteger;
import java.util.function.IntConsumer;
import java.util.function.Predicate;

/**
 * A token constraint double: its mask and its consume are the functions it is given, it reports
 * no error, and it counts its closes (whoever holds a constraint closes it once, so a test asserts
 * the count). Thread-safe as its functions are.
 */
public final class CountingConstraint implements TokenConstraint {
    private final Predicate<int[]> allowedTokens;
    private final IntConsumer consume;
    private final AtomicInteger closes = new AtomicInteger();

    /**
     * @param allowedTokens fills the mask words and answers as {@link TokenConstraint#allowedTokens} does
     * @param consume takes each sampled token, as {@link TokenConstraint#consume} does
     */
    public CountingConstraint(Predicate<int[]> allowedTokens, IntConsumer consume) {
        this.allowedTokens = allowedTokens;
        this.consume = consume;
    }

    /** Allows every token and ignores what it consumes. */
    public static CountingConstraint allowingEverything() {
        return new CountingConstraint(
                words -> {
                    Arrays.fill(words, -1);
                    return true;
                },
                token -> {});
    }

    /** How many times {@link #close} was called. */
    public int closes() {
        return closes.get();
    }

    @Override
    public boolean allowedTokens(int[] words) {
        return allowedTokens.test(words);
    }

    @Override
    public void consume(int token) {
        consume.accept(token);
    }

    @Override
    public String error() {
        return null;
    }

    @Override
    public void close() {
        closes.incrementAndGet();
    }
}
