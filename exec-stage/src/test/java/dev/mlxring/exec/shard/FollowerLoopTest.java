package dev.mlxring.exec.shard;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import dev.mlxring.mlx.CpuKernels;
import dev.mlxring.pipeline.BatchStep;
import dev.mlxring.pipeline.ExecutionBatch;
import dev.mlxring.pipeline.ExecutionPlan;
import dev.mlxring.pipeline.ExecutionRun;
import dev.mlxring.pipeline.Executor;
import dev.mlxring.pipeline.PreparedPrompt;
import dev.mlxring.pipeline.SamplingParams;
import dev.mlxring.pipeline.StepResult;
import dev.mlxring.pipeline.Usage;
import java.io.IOException;
import java.net.InetAddress;
import java.net.InetSocketAddress;
import java.net.ServerSocket;
import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.CountDownLatch;
import java.util.concurrent.ExecutionException;
import java.util.concurrent.TimeUnit;
import java.util.function.IntUnaryOperator;
import org.junit.jupiter.api.Test;

/**
 * {@link ShardedExecutor} on one side, {@link FollowerLoop} on the other, over a real control
 * channel and executors without MLX (a row's token at step n is a function of n): the follower
 * replays exactly rank 0's calls; a follower whose tokens differ is caught at the next unit
 * (the digest), and rank 0 learns why.
 */
class FollowerLoopTest {
    private static final long SECOND_NS = TimeUnit.SECONDS.toNanos(1);

    /** A batch whose every row commits {@code tokens(step)} at each step; records the calls. */
    static final class FakeExecutor implements Executor {
        final List<String> calls = new ArrayList<>();
        final IntUnaryOperator tokens;
        /** What every row reports it reused from the prefix cache. */
        volatile int cached;

        FakeExecutor(IntUnaryOperator tokens) {
            this.tokens = tokens;
        }

        @Override
        public ExecutionRun open(ExecutionPlan plan) {
            calls.add("open " + plan.requestId());
            return new ExecutionRun() {
                int steps;
                final StepResult result = new StepResult(0);

                @Override
                public StepResult advance() {
                    calls.add("advance");
                    return result.token(tokens.applyAsInt(steps++));
                }

                @Override
                public int promptTokens() {
                    return plan.prompt().length();
                }

                @Override
                public int completionTokens() {
                    return steps;
                }

                @Override
                public void close() {
                    calls.add("closeRun");
                }
            };
        }

        @Override
        public ExecutionBatch openBatch(int maxRows, int maxPrefillRows) {
            calls.add("openBatch " + maxRows + "/" + maxPrefillRows);
            return new ExecutionBatch() {
                int nextRow;
                int steps;
                final List<Integer> rows = new ArrayList<>();

                @Override
                public boolean accepts(ExecutionPlan plan) {
                    return true;
                }

                @Override
                public int insert(ExecutionPlan plan) {
                    calls.add("insert " + plan.requestId() + " " + plan.prompt().length() + " tokens");
                    rows.add(nextRow);
                    return nextRow++;
                }

                @Override
                public Usage remove(int row) {
                    calls.add("remove " + row);
                    rows.remove(Integer.valueOf(row));
                    return Usage.NONE;
                }

                @Override
                public void step(BatchStep out) {
                    calls.add("step");
                    out.clear();
                    int t = tokens.applyAsInt(steps++);
                    for (int row : rows) {
                        out.add(row).token(t);
                    }
                }

                @Override
                public long projectedKvBytes(int rows, int positions) {
                    return 0;
                }

                @Override
                public int rows() {
                    return rows.size();
                }

                @Override
                public int cachedTokens(int row) {
                    return cached;
                }

                @Override
                public void close() {
                    calls.add("closeBatch");
                }
            };
        }

        @Override
        public void close() {
            calls.add("close");
        }
    }

    private static ExecutionPlan plan(String id) {
        return ExecutionPlan.builder()
                .requestId(id)
                .prompt(new PreparedPrompt(new int[] {1, 2, 3}, 3))
                .sampling(SamplingParams.GREEDY)
                .maxTokens(8)
                .build();
    }

    private record Pair(
            ShardedExecutor leader,
            FakeExecutor leaderLocal,
            LeaderChannel channel,
            CompletableFuture<Long> follower,
            FakeExecutor followerLocal) {}

    private static Pair pair(IntUnaryOperator leaderTokens, IntUnaryOperator followerTokens) throws Exception {
        InetSocketAddress at;
        try (ServerSocket s = new ServerSocket(0)) {
            at = new InetSocketAddress(InetAddress.getLoopbackAddress(), s.getLocalPort());
        }
        Welcome w = new Welcome(1, 16, 0, CpuKernels.MLX, 0, 0);
        CompletableFuture<LeaderChannel> channel = OwnThread.supply(() -> {
            try {
                return LeaderChannel.accept(at, 2, "fp", w, 10 * SECOND_NS, 5 * SECOND_NS, () -> {});
            } catch (IOException e) {
                throw new IllegalStateException(e);
            }
        });
        FollowerChannel fc = FollowerChannel.connect(at, 1, "fp", 10 * SECOND_NS, 5 * SECOND_NS, r -> {});
        FakeExecutor followerLocal = new FakeExecutor(followerTokens);
        CompletableFuture<Long> follower = OwnThread.supply(() -> {
            try (fc) {
                return new FollowerLoop(followerLocal, fc).run();
            } catch (InterruptedException e) {
                throw new IllegalStateException(e);
            }
        });
        FakeExecutor leaderLocal = new FakeExecutor(leaderTokens);
        LeaderChannel lc = channel.get(10, TimeUnit.SECONDS);
        return new Pair(new ShardedExecutor(leaderLocal, lc), leaderLocal, lc, follower, followerLocal);
    }

    @Test
    void theFollowerReplaysRankZerosCallsInOrder() throws Exception {
        Pair p = pair(n -> 100 + n, n -> 100 + n);
        ExecutionBatch b = p.leader().openBatch(4, 2);
        BatchStep out = new BatchStep(4, 0);
        int r0 = b.insert(plan("a"));
        b.step(out);
        int r1 = b.insert(plan("b"));
        b.step(out);
        b.remove(r0);
        b.step(out);
        b.step(out);
        assertEquals(1, r1);
        b.close();
        p.leader().close();
        assertEquals(
                9L, p.follower().get(10, TimeUnit.SECONDS), "calls replayed (open, 2 inserts, 4 steps, remove, close)");
        List<String> leaderCalls = new ArrayList<>(p.leaderLocal().calls);
        leaderCalls.remove("close"); // the follower's own executor is closed by its owner, not the loop
        assertEquals(leaderCalls, p.followerLocal().calls, "the follower's executor saw rank 0's calls");
    }

    @Test
    void anExecThreadBlockedPastTheGraceIsReportedWedged() throws Exception {
        CountDownLatch collective = new CountDownLatch(1);
        CountDownLatch inside = new CountDownLatch(1);
        // rank 0's third unit never returns (a collective waiting on a rank that left)
        Pair p = pair(
                n -> {
                    if (n == 2) {
                        inside.countDown();
                        try {
                            collective.await();
                        } catch (InterruptedException e) {
                            Thread.currentThread().interrupt();
                        }
                    }
                    return 100 + n;
                },
                n -> 100 + n);
        CompletableFuture<String> wedged = new CompletableFuture<>();
        p.leader().onWedged(wedged::complete, TimeUnit.MILLISECONDS.toNanos(200));
        ExecutionBatch b = p.leader().openBatch(4, 2);
        BatchStep out = new BatchStep(4, 0);
        b.insert(plan("a"));
        b.step(out);
        b.step(out);
        CompletableFuture<Void> stuckStep = OwnThread.run(() -> b.step(out));
        assertTrue(inside.await(10, TimeUnit.SECONDS), "the third unit started");
        p.channel().fail("rank 1 stopped answering (test)");
        String reason = wedged.get(10, TimeUnit.SECONDS);
        assertTrue(
                reason.contains("rank 1 stopped answering (test)") && reason.contains("blocked in a collective"),
                reason);
        collective.countDown();
        stuckStep.get(10, TimeUnit.SECONDS);
        p.leader().close();
    }

    @Test
    void aGroupFailureOutsideACallIsNoWedge() throws Exception {
        Pair p = pair(n -> 100 + n, n -> 100 + n);
        CompletableFuture<String> wedged = new CompletableFuture<>();
        p.leader().onWedged(wedged::complete, TimeUnit.MILLISECONDS.toNanos(100));
        ExecutionBatch b = p.leader().openBatch(4, 2);
        b.insert(plan("a"));
        p.channel().fail("rank 1 closed its control connection (test)");
        // The watch decides once, grace after the failure; exec was between calls then.
        assertThrows(java.util.concurrent.TimeoutException.class, () -> wedged.get(1, TimeUnit.SECONDS));
        p.leader().close();
    }

    @Test
    void aRowThatReusesAnotherPrefixThanOnRankZeroStopsTheGroupBeforeItRuns() throws Exception {
        Pair p = pair(n -> 100 + n, n -> 100 + n);
        p.leaderLocal().cached = 20;
        p.followerLocal().cached = 12;
        ExecutionBatch b = p.leader().openBatch(4, 2);
        b.insert(plan("a"));
        Throwable e = assertThrows(
                        ExecutionException.class,
                        () -> p.follower().get(10, TimeUnit.SECONDS),
                        "the follower must stop")
                .getCause();
        assertTrue(
                e instanceof ShardGroupException
                        && e.getMessage().contains("row 0 reused 12 cached prompt tokens here" + " and 20 on rank 0"),
                String.valueOf(e));
        assertEquals(
                List.of("openBatch 4/2", "insert a 3 tokens", "closeBatch"),
                p.followerLocal().calls,
                "no step ran; the follower closed what it held");
        p.leader().close();
    }

    @Test
    void aSerialRunIsReplayedAndItsDivergenceCaughtToo() throws Exception {
        Pair p = pair(n -> 100 + n, n -> n == 2 ? 5 : 100 + n);
        ExecutionRun run = p.leader().open(plan("s"));
        run.advance();
        run.advance();
        run.advance(); // the follower commits 5 here
        assertEquals(103, run.advance().token, "rank 0 goes on with its own tokens; the digest it sends now is of 102");
        Throwable e = assertThrows(
                        ExecutionException.class,
                        () -> p.follower().get(10, TimeUnit.SECONDS),
                        "the follower must stop")
                .getCause();
        assertTrue(e instanceof ShardGroupException && e.getMessage().contains("diverged: run 0"), String.valueOf(e));
        assertEquals(
                List.of("open s", "advance", "advance", "advance"),
                p.followerLocal().calls.subList(0, 4));
        p.leader().close();
    }

    @Test
    void aFollowerWhoseTokensDivergeIsCaughtAtTheNextUnit() throws Exception {
        Pair p = pair(n -> 100 + n, n -> n == 1 ? 7 : 100 + n);
        ExecutionBatch b = p.leader().openBatch(4, 2);
        BatchStep out = new BatchStep(4, 0);
        b.insert(plan("a"));
        b.step(out);
        b.step(out); // the follower commits 7 where rank 0 committed 101
        b.step(out); // carries rank 0's digest of the previous unit: the follower finds it differs
        Throwable e = assertThrows(
                        ExecutionException.class,
                        () -> p.follower().get(10, TimeUnit.SECONDS),
                        "the follower must stop")
                .getCause();
        assertTrue(e instanceof ShardGroupException && e.getMessage().contains("diverged"), String.valueOf(e));
        long deadline = System.nanoTime() + 10 * SECOND_NS;
        while (p.channel().failure() == null && System.nanoTime() < deadline) {
            Thread.onSpinWait();
        }
        assertTrue(
                p.channel().failure() != null
                        && p.channel().failure().contains("rank 1 failed")
                        && p.channel().failure().contains("diverged"),
                p.channel().failure());
        assertTrue(
                p.leader().unavailableReason().contains("diverged"), p.leader().unavailableReason());
        assertThrows(ShardGroupException.class, () -> b.step(out));
        p.leader().close();
    }
}
