package dev.mlxring.exec.shard;

import static org.junit.jupiter.api.Assertions.assertArrayEquals;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertNull;
import static org.junit.jupiter.api.Assertions.assertSame;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import dev.mlxring.mlx.CpuKernels;
import dev.mlxring.pipeline.ExecutionPlan;
import dev.mlxring.pipeline.KvQuantization;
import dev.mlxring.pipeline.PreparedPrompt;
import dev.mlxring.pipeline.PromptSegment;
import dev.mlxring.pipeline.SamplingParams;
import java.io.BufferedInputStream;
import java.io.BufferedOutputStream;
import java.io.DataInputStream;
import java.io.DataOutputStream;
import java.io.IOException;
import java.net.InetAddress;
import java.net.InetSocketAddress;
import java.net.ServerSocket;
import java.net.Socket;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicReference;
import org.junit.jupiter.api.Test;

/**
 * The control channel without MLX: plans cross it bit for bit, calls arrive in order, and every
 * way a peer can go away (silence, a closed connection, another model) fails the group once,
 * within the timeout, with a reason that names the rank, running the abort.
 */
class ControlChannelTest {
    private static final long SECOND_NS = TimeUnit.SECONDS.toNanos(1);
    private static final Welcome WELCOME = new Welcome(1234567L, 512, 0, CpuKernels.MLX, 10, 1L << 30);

    private static InetSocketAddress loopback() throws IOException {
        try (ServerSocket s = new ServerSocket(0)) {
            return new InetSocketAddress(InetAddress.getLoopbackAddress(), s.getLocalPort());
        }
    }

    @Test
    void aPlanCrossesWithEverySamplingFieldAndTheKvScheme() throws Exception {
        Map<Integer, Double> bias = new LinkedHashMap<>();
        bias.put(7, 2.5);
        bias.put(3, -0.1);
        SamplingParams sampling = SamplingParams.builder()
                .temperature(0.7)
                .topP(0.9)
                .minP(0.05)
                .minTokensToKeep(2)
                .topK(40)
                .xtcProbability(0.3)
                .xtcThreshold(0.2)
                .xtcSpecialTokens(1, 2)
                .logitBias(bias)
                .repetitionPenalty(1.1)
                .repetitionContextSize(0)
                .presencePenalty(-0.4)
                .presenceContextSize(5)
                .frequencyPenalty(0.3)
                .frequencyContextSize(9)
                .seed(42L)
                .logprobs(true)
                .topLogprobs(3)
                .build();
        List<PromptSegment> segments =
                List.of(new PromptSegment(1, PromptSegment.Kind.SYSTEM), new PromptSegment(2, PromptSegment.Kind.USER));
        ExecutionPlan plan = ExecutionPlan.builder()
                .requestId("req-1")
                .prompt(new PreparedPrompt(new int[] {5, 6, 7}, 2, true, segments))
                .sampling(sampling)
                .maxTokens(99)
                .stopTokenIds(new int[] {2})
                .stopStrings(List.of("STOP"))
                .logprobs(true)
                .topLogprobs(3)
                .kvScheme(new KvQuantization(4, 32, 100))
                .build();
        Frame f = Frame.of(Frame.OPEN_RUN, o -> PlanCodec.write(o, plan));
        ExecutionPlan back = PlanCodec.read(f.body());
        assertEquals(sampling, back.sampling());
        assertEquals(List.of(7, 3), List.copyOf(back.sampling().logitBias().keySet()), "logit_bias order");
        assertArrayEquals(plan.prompt().tokenIds(), back.prompt().tokenIds());
        assertEquals(2, back.prompt().stablePrefixLength());
        assertEquals(segments, back.prompt().segments(), "segments decide every rank's chunks and snapshots");
        assertEquals(99, back.maxTokens());
        assertArrayEquals(new int[] {2}, back.stopTokenIds());
        assertEquals(new KvQuantization(4, 32, 100), back.kvScheme());
        assertTrue(back.logprobs() && back.topLogprobs() == 3);
        assertEquals("req-1", back.requestId());
        ExecutionPlan unseeded = ExecutionPlan.builder()
                .requestId("r")
                .prompt(new PreparedPrompt(new int[] {1}, 1))
                .sampling(SamplingParams.GREEDY)
                .maxTokens(1)
                .build();
        ExecutionPlan back2 = PlanCodec.read(
                Frame.of(Frame.INSERT, o -> PlanCodec.write(o, unseeded)).body());
        assertEquals(SamplingParams.GREEDY, back2.sampling());
        assertNull(back2.kvScheme());
    }

    @Test
    void callsArriveInOrderAndShutdownEndsTheFollower() throws Exception {
        InetSocketAddress at = loopback();
        CompletableFuture<LeaderChannel> leader = OwnThread.supply(() -> accept(at, "fp", () -> {}));
        AtomicReference<String> lost = new AtomicReference<>();
        try (FollowerChannel follower =
                FollowerChannel.connect(at, 1, "fp", 10 * SECOND_NS, 5 * SECOND_NS, lost::set)) {
            assertEquals(WELCOME, follower.welcome());
            LeaderChannel l = leader.get(10, TimeUnit.SECONDS);
            for (int i = 0; i < 5; i++) {
                int n = i;
                l.send(Frame.of(Frame.STEP, o -> o.writeInt(n)));
            }
            for (int i = 0; i < 5; i++) {
                Frame f = follower.take();
                assertEquals(Frame.STEP, f.type());
                assertEquals(i, f.body().readInt());
            }
            l.close();
            assertEquals(Frame.SHUTDOWN, follower.take().type());
            assertNull(l.failure(), "an orderly close is no failure");
            assertNull(lost.get(), "the follower lost nothing: " + lost.get());
        }
    }

    @Test
    void aFollowerThatStopsAnsweringFailsTheGroupWithinTheTimeout() throws Exception {
        InetSocketAddress at = loopback();
        CompletableFuture<Void> aborted = new CompletableFuture<>();
        CompletableFuture<LeaderChannel> leader =
                OwnThread.supply(() -> accept(at, "fp", () -> aborted.complete(null)));
        // A rank that says hello and then never reads or answers again (a stopped process).
        try (Socket silent = connectWhenListening(at)) {
            DataOutputStream out = new DataOutputStream(new BufferedOutputStream(silent.getOutputStream()));
            Frame.of(Frame.HELLO, o -> {
                        o.writeInt(1);
                        o.writeUTF("fp");
                    })
                    .writeTo(out);
            assertEquals(
                    Frame.WELCOME,
                    Frame.readFrom(new DataInputStream(silent.getInputStream())).type());
            LeaderChannel l = leader.get(10, TimeUnit.SECONDS);
            long t0 = System.nanoTime();
            aborted.get(10, TimeUnit.SECONDS);
            long tookMs = TimeUnit.NANOSECONDS.toMillis(System.nanoTime() - t0);
            assertTrue(l.failure().startsWith("rank 1 stopped answering"), l.failure());
            assertTrue(tookMs < 5_000, "failed after " + tookMs + " ms with a 1 s timeout");
            ShardGroupException e = assertThrows(ShardGroupException.class, () -> l.send(Frame.empty(Frame.STEP)));
            assertTrue(e.getMessage().contains("rank 1 stopped answering"), e.getMessage());
        }
    }

    @Test
    void aFollowerThatGoesAwayFailsTheGroupAtOnce() throws Exception {
        InetSocketAddress at = loopback();
        CompletableFuture<Void> aborted = new CompletableFuture<>();
        CompletableFuture<LeaderChannel> leader =
                OwnThread.supply(() -> accept(at, "fp", () -> aborted.complete(null)));
        FollowerChannel follower = FollowerChannel.connect(at, 1, "fp", 10 * SECOND_NS, 60 * SECOND_NS, r -> {});
        LeaderChannel l = leader.get(10, TimeUnit.SECONDS);
        follower.close();
        aborted.get(10, TimeUnit.SECONDS);
        assertTrue(l.failure().startsWith("rank 1 closed its control connection"), l.failure());
    }

    @Test
    void aSilentLeaderIsLostByTheFollower() throws Exception {
        try (ServerSocket server = new ServerSocket(0, 1, InetAddress.getLoopbackAddress())) {
            CompletableFuture<Socket> accepted = OwnThread.supply(() -> {
                try {
                    Socket s = server.accept();
                    DataInputStream in = new DataInputStream(new BufferedInputStream(s.getInputStream()));
                    assertEquals(Frame.HELLO, Frame.readFrom(in).type());
                    DataOutputStream out = new DataOutputStream(new BufferedOutputStream(s.getOutputStream()));
                    Frame.of(Frame.WELCOME, WELCOME::write).writeTo(out);
                    return s; // and then nothing: no heartbeat
                } catch (IOException e) {
                    throw new IllegalStateException(e);
                }
            });
            CompletableFuture<String> lost = new CompletableFuture<>();
            try (FollowerChannel follower = FollowerChannel.connect(
                    new InetSocketAddress(InetAddress.getLoopbackAddress(), server.getLocalPort()),
                    1,
                    "fp",
                    10 * SECOND_NS,
                    SECOND_NS,
                    lost::complete)) {
                String reason = lost.get(10, TimeUnit.SECONDS);
                assertTrue(reason.startsWith("rank 0 stopped answering"), reason);
                assertSame(FollowerChannel.LOST, follower.take());
            } finally {
                accepted.get(10, TimeUnit.SECONDS).close();
            }
        }
    }

    @Test
    void aRankWithAnotherModelIsRefusedAtConnect() throws Exception {
        InetSocketAddress at = loopback();
        CompletableFuture<LeaderChannel> leader = OwnThread.supply(() -> accept(at, "fp-a", () -> {}));
        IllegalStateException onFollower = assertThrows(
                IllegalStateException.class,
                () -> FollowerChannel.connect(at, 1, "fp-b", 10 * SECOND_NS, SECOND_NS, r -> {}));
        assertTrue(onFollower.getMessage().contains("another model"), onFollower.getMessage());
        Throwable onLeader = assertThrows(Exception.class, () -> leader.get(10, TimeUnit.SECONDS))
                .getCause();
        assertTrue(onLeader.getMessage().contains("rank 1 loaded another model"), onLeader.getMessage());
    }

    /** Connects once the leader listens (it binds on its own thread). */
    private static Socket connectWhenListening(InetSocketAddress at) throws Exception {
        long deadline = System.nanoTime() + 10 * SECOND_NS;
        while (true) {
            try {
                return new Socket(at.getAddress(), at.getPort());
            } catch (IOException e) {
                if (System.nanoTime() > deadline) {
                    throw e;
                }
                Thread.sleep(10);
            }
        }
    }

    private static LeaderChannel accept(InetSocketAddress at, String fingerprint, Runnable abort) {
        try {
            return LeaderChannel.accept(at, 2, fingerprint, WELCOME, 10 * SECOND_NS, SECOND_NS, abort);
        } catch (IOException e) {
            throw new IllegalStateException(e);
        }
    }
}
