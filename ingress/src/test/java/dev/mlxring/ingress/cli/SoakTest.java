package dev.mlxring.ingress.cli;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;
import static org.junit.jupiter.api.Assertions.fail;

import dev.mlxring.ingress.http.MetricsText;
import dev.mlxring.mlx.Mlx;
import dev.mlxring.mlx.ProjectHome;
import dev.mlxring.mlx.PythonScript;
import dev.mlxring.pipeline.Engine;
import java.io.BufferedReader;
import java.io.ByteArrayOutputStream;
import java.io.InputStreamReader;
import java.io.OutputStream;
import java.io.PrintStream;
import java.lang.management.BufferPoolMXBean;
import java.lang.management.ManagementFactory;
import java.net.Socket;
import java.nio.charset.StandardCharsets;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.Random;
import java.util.Set;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.ExecutorService;
import java.util.concurrent.Executors;
import java.util.concurrent.Future;
import java.util.concurrent.TimeUnit;
import java.util.function.BooleanSupplier;
import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Test;

/**
 * The bounded CI form of {@code scripts/soak.sh}: 100 streamed requests through the real server
 * (in process) on a tiny random-weight llama with the default model's tokenizer
 * ({@code scripts/soak/make_soak_model.py}), 80% of them disconnected at a random point (before
 * the response, or after a random number of events; FIN or RST), 4 at a time. Afterwards the
 * engine holds no session (so no credits and no run with its KV cache), MLX active memory is back
 * to its warm baseline to the byte, the JVM's direct buffers grew by at most 1 MiB, and a whole
 * request still succeeds.
 */
class SoakTest {
    private static final int REQUESTS = 100;
    private static final int CONCURRENCY = 4;
    private static final double DISCONNECT = 0.8;
    private static final long DIRECT_TOLERANCE = 1L << 20;
    private static final String[] PROMPTS = {
        "Once upon a time", "The capital of France is", "List three colors:", "What is 2 + 2?"
    };
    private static ServeCommand.Running server;
    private static int port;

    @BeforeAll
    static void start() {
        Path model = ProjectHome.get().resolve("build/soak-model");
        PythonScript.run(
                "soak/make_soak_model.py",
                600,
                List.of(
                        "--out",
                        model.toString(),
                        "--tokenizer-from",
                        ProjectHome.get().resolve(GenerateCommand.DEFAULT_MODEL).toString()));
        server = ServeCommand.start(
                CliArgs.parse(
                        new String[] {"serve", "--model", model.toString(), "--port", "0"},
                        1,
                        Set.of("--model", "--port"),
                        Set.of()),
                new PrintStream(new ByteArrayOutputStream()));
        port = server.server().port();
    }

    @AfterAll
    static void stop() {
        if (server != null) {
            server.close();
        }
    }

    /** One streamed request; returns "completed", "disconnected" or what went wrong. */
    private static String request(Random rng, boolean mayDisconnect) throws Exception {
        boolean chat = rng.nextBoolean();
        int maxTokens = 2 + rng.nextInt(11);
        String prompt = PROMPTS[rng.nextInt(PROMPTS.length)];
        String body = (chat
                        ? "{\"messages\":[{\"role\":\"user\",\"content\":\"" + prompt + "\"}]"
                        : "{\"prompt\":\"" + prompt + "\"")
                + ",\"max_tokens\":" + maxTokens + ",\"stream\":true}";
        int readEvents = mayDisconnect && rng.nextDouble() < DISCONNECT ? rng.nextInt(maxTokens) : -1;
        boolean rst = rng.nextBoolean();
        byte[] bytes = body.getBytes(StandardCharsets.UTF_8);
        try (Socket s = new Socket("127.0.0.1", port)) {
            s.setSoTimeout(120_000);
            OutputStream out = s.getOutputStream();
            out.write(("POST " + (chat ? "/v1/chat/completions" : "/v1/completions") + " HTTP/1.1\r\nHost: x\r\n"
                            + "Content-Type: application/json\r\nContent-Length: " + bytes.length
                            + "\r\nConnection: close\r\n\r\n")
                    .getBytes(StandardCharsets.US_ASCII));
            out.write(bytes);
            out.flush();
            if (rst) {
                s.setSoLinger(true, 0);
            }
            if (readEvents == 0) {
                return "disconnected";
            }
            BufferedReader in = new BufferedReader(new InputStreamReader(s.getInputStream(), StandardCharsets.UTF_8));
            String status = in.readLine();
            if (status == null || !status.startsWith("HTTP/1.1 200")) {
                return "status " + status;
            }
            int events = 0;
            for (String line = in.readLine(); line != null; line = in.readLine()) {
                if (line.startsWith("data: ")) {
                    if (line.equals("data: [DONE]")) {
                        return "completed";
                    }
                    if (++events == readEvents) {
                        return "disconnected";
                    }
                }
            }
            return "truncated";
        }
    }

    private static long direct() {
        for (BufferPoolMXBean pool : ManagementFactory.getPlatformMXBeans(BufferPoolMXBean.class)) {
            if (pool.getName().equals("direct")) {
                return pool.getMemoryUsed();
            }
        }
        throw new IllegalStateException("no direct buffer pool");
    }

    private static void await(String what, BooleanSupplier condition) throws InterruptedException {
        long deadline = System.nanoTime() + TimeUnit.SECONDS.toNanos(60);
        while (!condition.getAsBoolean()) {
            if (System.nanoTime() > deadline) {
                fail(what + " within 60 s");
            }
            Thread.sleep(10);
        }
    }

    /** Idle, and MLX memory steady: a run's last pipelined step may still be evaluating for a moment after it settled. */
    private static long awaitIdleMemory(Engine engine) throws InterruptedException {
        await("engine idle", () -> engine.liveSessions() == 0 && engine.admittedCount() == 0);
        long[] last = {-1};
        await("MLX active memory steady", () -> {
            long now = Mlx.memory().activeBytes();
            boolean steady = now == last[0];
            last[0] = now;
            return steady;
        });
        return last[0];
    }

    @Test
    void disconnectsMidStreamLeakNothing() throws Exception {
        Engine engine = server.engine();
        Random seeds = new Random(20261130);
        for (int i = 0; i < 4; i++) {
            assertEquals("completed", request(new Random(seeds.nextLong()), false));
        }
        long mlxBaseline = awaitIdleMemory(engine);
        long directBaseline = direct();

        Map<String, Integer> outcomes = new ConcurrentHashMap<>();
        ExecutorService pool = Executors.newFixedThreadPool(CONCURRENCY);
        List<Future<String>> results = new ArrayList<>();
        for (int i = 0; i < REQUESTS; i++) {
            Random rng = new Random(seeds.nextLong());
            results.add(pool.submit(() -> request(rng, true)));
        }
        for (Future<String> f : results) {
            outcomes.merge(f.get(5, TimeUnit.MINUTES), 1, Integer::sum);
        }
        pool.shutdown();
        assertEquals(Set.of("completed", "disconnected"), outcomes.keySet(), outcomes.toString());
        assertTrue(outcomes.get("disconnected") >= REQUESTS / 2, outcomes.toString());

        // The engine lets every session go and MLX frees what they held, to the byte.
        await(
                "MLX active memory back to its warm baseline (" + mlxBaseline + " bytes)",
                () -> engine.liveSessions() == 0
                        && engine.admittedCount() == 0
                        && Mlx.memory().activeBytes() == mlxBaseline);
        long directGrowth = direct() - directBaseline;
        assertTrue(directGrowth <= DIRECT_TOLERANCE, "direct buffers grew by " + directGrowth + " bytes");

        String base = "http://127.0.0.1:" + port;
        MetricsText m = MetricsText.scrape(base, null);
        assertEquals(0, m.value("mlxring_live_sessions"));
        assertEquals(0, m.value("mlxring_queue_depth"));
        assertEquals(0, m.value("mlxring_active_rows"));
        assertEquals(0, m.value("mlxring_kv_bytes_in_use"));
        // Disconnects really cancelled generation mid-stream (not only stopped the client reading).
        assertTrue(
                m.value("mlxring_completions_total{outcome=\"cancelled\"}") > 0,
                m.series().toString());
        assertEquals(
                0,
                m.value("mlxring_completions_total{outcome=\"failed\"}"),
                m.series().toString());

        assertEquals("completed", request(new Random(7), false));
        await(
                "MLX memory back after one more request",
                () -> engine.liveSessions() == 0 && Mlx.memory().activeBytes() == mlxBaseline);
    }
}
