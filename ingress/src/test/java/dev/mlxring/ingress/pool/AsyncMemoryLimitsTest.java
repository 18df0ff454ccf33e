package dev.mlxring.ingress.pool;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertTimeoutPreemptively;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.time.Duration;
import java.util.List;
import java.util.concurrent.CopyOnWriteArrayList;
import java.util.concurrent.CountDownLatch;
import java.util.concurrent.TimeUnit;
import org.junit.jupiter.api.Test;

/**
 * The pool calls its limits under its lock on every admission and release, and MLX's {@code
 * set_cache_limit} waits for every CPU stream's work in flight (forever, with a tensor-parallel
 * rank lost mid-collective): the applier must take the calls without ever waiting on the
 * delegate, and still end with the latest values applied.
 */
class AsyncMemoryLimitsTest {
    private static final long WAIT_NS = TimeUnit.SECONDS.toNanos(10);

    private record Pair(long memory, long cache) {}

    /** Records each call, says it entered, then waits for {@code release} (as MLX behind a collective). */
    private static ModelPool.MemoryLimits blocking(List<Pair> applied, CountDownLatch entered, CountDownLatch release) {
        return (memory, cache) -> {
            applied.add(new Pair(memory, cache));
            entered.countDown();
            try {
                release.await();
            } catch (InterruptedException e) {
                Thread.currentThread().interrupt();
            }
        };
    }

    @Test
    void aCallReturnsWhileTheDelegateIsBlockedAndTheLatestValuesWinOnceItReturns() throws Exception {
        CountDownLatch entered = new CountDownLatch(1);
        CountDownLatch unblock = new CountDownLatch(1);
        List<Pair> applied = new CopyOnWriteArrayList<>();
        try (AsyncMemoryLimits limits = new AsyncMemoryLimits(
                blocking(applied, entered, unblock), "limits-test", TimeUnit.SECONDS.toNanos(1))) {
            limits.apply(100, 10);
            assertTrue(entered.await(10, TimeUnit.SECONDS), "the applier took the first values");
            // The delegate is blocked (as MLX's set_cache_limit behind a collective that never ends):
            // every further call must still return at once.
            assertTimeoutPreemptively(Duration.ofSeconds(5), () -> {
                for (long c = 11; c <= 1_000; c++) {
                    limits.apply(100, c);
                }
            });
            assertFalse(limits.awaitApplied(TimeUnit.MILLISECONDS.toNanos(50)), "still blocked");
            unblock.countDown();
            assertTrue(limits.awaitApplied(WAIT_NS));
            assertEquals(
                    List.of(new Pair(100, 10), new Pair(100, 1_000)),
                    applied,
                    "the calls made while it was busy are superseded by the newest");
        }
    }

    @Test
    void valuesEqualToTheLastAppliedAreNotAppliedAgain() throws Exception {
        List<Pair> applied = new CopyOnWriteArrayList<>();
        try (AsyncMemoryLimits limits =
                new AsyncMemoryLimits((memory, cache) -> applied.add(new Pair(memory, cache)), "limits-test", 0)) {
            limits.apply(100, 10);
            assertTrue(limits.awaitApplied(WAIT_NS));
            limits.apply(100, 10);
            assertTrue(limits.awaitApplied(WAIT_NS));
            limits.apply(100, 20);
            assertTrue(limits.awaitApplied(WAIT_NS));
            assertEquals(List.of(new Pair(100, 10), new Pair(100, 20)), applied);
        }
    }

    @Test
    void aFailingDelegateDoesNotStopTheApplier() throws Exception {
        List<Pair> applied = new CopyOnWriteArrayList<>();
        try (AsyncMemoryLimits limits = new AsyncMemoryLimits(
                (memory, cache) -> {
                    if (cache == 10) {
                        throw new IllegalStateException("MLX refused");
                    }
                    applied.add(new Pair(memory, cache));
                },
                "limits-test",
                0)) {
            limits.apply(100, 10);
            assertTrue(limits.awaitApplied(WAIT_NS));
            limits.apply(100, 20);
            assertTrue(limits.awaitApplied(WAIT_NS));
            assertEquals(List.of(new Pair(100, 20)), applied);
        }
    }

    @Test
    void closeReturnsWithinItsTimeoutWhileTheDelegateNeverReturns() {
        CountDownLatch entered = new CountDownLatch(1);
        CountDownLatch never = new CountDownLatch(1);
        AsyncMemoryLimits limits = new AsyncMemoryLimits(
                blocking(new CopyOnWriteArrayList<>(), entered, never),
                "limits-test",
                TimeUnit.MILLISECONDS.toNanos(100));
        limits.apply(100, 10);
        assertTimeoutPreemptively(Duration.ofSeconds(10), () -> {
            assertTrue(entered.await(10, TimeUnit.SECONDS));
            limits.close();
        });
        limits.apply(100, 20); // after close: ignored, returns
        never.countDown();
    }
}
