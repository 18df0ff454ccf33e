package dev.mlxring.exec;

import dev.mlxring.pipeline.TokenConstraint;
import java.util.concurrent.atomic.AtomicInteger;
import java.util.function.IntConsumer;
import java.util.function.Predicate;

/**
 * A token constraint for the executor tests: its mask and its consume are the functions it is
 * given, it reports no error, and it counts its closes (whoever holds a constraint closes it once).
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
