package dev.mlxring.ingress.cli;

import static dev.mlxring.ingress.cli.CliRun.run;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

import dev.mlxring.bench.BenchOptions;
import dev.mlxring.bench.LoadLevel;
import java.io.IOException;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.List;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

/** {@code bench serve}'s flags: what they become, and bad input refused with exit 2 and one line naming it (no server needed). */
class BenchCommandTest {
    @TempDir
    Path dir;

    @Test
    void flagsBecomeOptionsWithPerTargetHeadersAndAMaskedKey() {
        String[] argv = {
            "bench", "serve",
            "--target", "a=http://127.0.0.1:9/v1",
            "--target", "b=https://example.com/api",
            "--api-key", "a=sk-123",
            "--header", "b=X-Org: acme",
            "--model", "b=llama",
            "--request-rate", "2,inf",
            "--burstiness", "0.5",
            "--api", "messages",
            "--num-prompts", "3",
            "--input-len", "10:20",
            "--out", dir.toString()
        };
        BenchOptions o = BenchCommand.parse(argv);
        assertEquals(2, o.targets().size());
        assertEquals("Bearer sk-123", o.targets().get(0).headers().get("Authorization"));
        assertEquals("http://127.0.0.1:9", o.targets().get(0).base().toString());
        assertEquals("acme", o.targets().get(1).headers().get("X-Org"));
        assertEquals("llama", o.targets().get(1).model());
        assertEquals(
                List.of(new LoadLevel.Rate(2, 0.5), new LoadLevel.Rate(Double.POSITIVE_INFINITY, 0.5)), o.levels());
        assertEquals(3, o.prompts().size());
        assertEquals("/v1/messages", o.api().path());
        assertTrue(o.command().contains("--api-key 'a=***'"), o.command());
        assertTrue(!o.command().contains("sk-123"), o.command());
        assertTrue(o.command().contains("'b=X-Org: acme'"), o.command());
    }

    private static void refused(String message, String... args) {
        CliRun r = run(args);
        assertEquals(2, r.status(), r.err());
        assertTrue(r.err().contains("mlx-ring: " + message), r.err());
        assertTrue(r.err().contains("run 'mlx-ring bench --help' for its flags"), r.err());
    }

    @Test
    void badInputIsAUsageErrorNamingIt() throws IOException {
        String t = "--target";
        refused("bench takes a sub-command: serve, engine, decode or compare; got 'run'", "bench", "run");
        refused(
                "--target is bench serve's; bench engine loads --model DIR in-process",
                "bench",
                "engine",
                "--target",
                "a=http://x",
                "--max-concurrency",
                "1");
        refused(
                "--decode-concurrency configures bench engine's embedded engine; a server sets its own",
                "bench",
                "serve",
                "--target",
                "a=http://x",
                "--max-concurrency",
                "1",
                "--decode-concurrency",
                "2");
        refused(
                "--prompt-cache-size configures bench engine's embedded engine; a server sets its own",
                "bench",
                "serve",
                "--target",
                "a=http://x",
                "--max-concurrency",
                "1",
                "--prompt-cache-size",
                "0");
        refused("bench serve needs at least one --target NAME=URL", "bench", "serve", "--max-concurrency", "1");
        refused(
                "bench serve takes one of --max-concurrency LIST and --request-rate LIST",
                "bench",
                "serve",
                t,
                "a=http://x",
                "--max-concurrency",
                "1",
                "--request-rate",
                "2");
        refused(
                "bench serve takes one of --max-concurrency LIST and --request-rate LIST",
                "bench",
                "serve",
                t,
                "a=http://x");
        refused(
                "--burstiness shapes --request-rate's arrivals",
                "bench",
                "serve",
                t,
                "a=http://x",
                "--max-concurrency",
                "1",
                "--burstiness",
                "2");
        refused(
                "--api-key names target 'b', which no --target declares",
                "bench",
                "serve",
                t,
                "a=http://x",
                "--api-key",
                "b=k",
                "--max-concurrency",
                "1");
        refused(
                "--target a is given twice",
                "bench",
                "serve",
                t,
                "a=http://x",
                t,
                "a=http://y",
                "--max-concurrency",
                "1");
        refused("--target takes NAME=URL", "bench", "serve", t, "http://x", "--max-concurrency", "1");
        refused("target a: the URL must be http://", "bench", "serve", t, "a=ftp://x", "--max-concurrency", "1");
        refused("--max-concurrency values must be >= 1", "bench", "serve", t, "a=http://x", "--max-concurrency", "0");
        refused(
                "--max-concurrency takes comma-separated numbers, got 'x'",
                "bench",
                "serve",
                t,
                "a=http://x",
                "--max-concurrency",
                "1,x");
        refused(
                "--api must be one of chat, completions, messages, responses; got 'grpc'",
                "bench",
                "serve",
                t,
                "a=http://x",
                "--max-concurrency",
                "1",
                "--api",
                "grpc");
        refused(
                "--slo knows ttft, tpot and e2el",
                "bench",
                "serve",
                t,
                "a=http://x",
                "--max-concurrency",
                "1",
                "--slo",
                "p99=3");
        refused(
                "--max-concurrency given more than once",
                "bench",
                "serve",
                t,
                "a=http://x",
                "--max-concurrency",
                "1",
                "--max-concurrency",
                "2");
        refused(
                "--turns applies to --workload multi-turn only; got --workload random",
                "bench",
                "serve",
                t,
                "a=http://x",
                "--max-concurrency",
                "1",
                "--turns",
                "3");
        refused(
                "--turns must be >= 1, got 0",
                "bench",
                "serve",
                t,
                "a=http://x",
                "--max-concurrency",
                "1",
                "--workload",
                "multi-turn",
                "--turns",
                "0");
        refused(
                "bench has no --sweep: the level lists are the sweep",
                "bench",
                "serve",
                t,
                "a=http://x",
                "--sweep",
                "--max-concurrency",
                "1");
        Path bad = dir.resolve("bad.jsonl");
        Files.writeString(bad, "{\"prompt\": \"ok\"}\n{\"prompt\": 5}\n");
        refused(
                bad + ":2: \"prompt\" must be a non-empty string",
                "bench",
                "serve",
                t,
                "a=http://x",
                "--max-concurrency",
                "1",
                "--workload",
                "jsonl:" + bad);
        refused("bench compare takes two results files or folders", "bench", "compare", "a");
        refused(
                dir.resolve("none") + ": no such results file",
                "bench",
                "compare",
                dir.resolve("none").toString(),
                dir.toString());
    }

    /** A target nobody listens on stops the run at its warm-up with one line naming it: exit 1, no results. */
    @Test
    void anUnreachableTargetFailsTheWarmUpNamingIt() throws IOException {
        int port;
        try (java.net.ServerSocket s = new java.net.ServerSocket(0)) {
            port = s.getLocalPort();
        }
        Path out = dir.resolve("out");
        CliRun r = run(
                "bench",
                "serve",
                "--target",
                "gone=http://127.0.0.1:" + port,
                "--max-concurrency",
                "1",
                "--num-prompts",
                "1",
                "--out",
                out.toString());
        assertEquals(1, r.status(), r.err());
        assertTrue(
                r.err()
                        .contains("mlx-ring: warm-up request to gone (http://127.0.0.1:" + port
                                + "/v1/chat/completions) failed: connect"),
                r.err());
        assertTrue(!Files.exists(out.resolve("results.json")));
    }

    /** --workload multi-turn: --num-prompts conversations of --turns turns, in conversation order. */
    @Test
    void multiTurnIsConversationsOfTurns() {
        BenchOptions o = BenchCommand.parse(new String[] {
            "bench",
            "serve",
            "--target",
            "a=http://x",
            "--max-concurrency",
            "2",
            "--workload",
            "multi-turn",
            "--turns",
            "3",
            "--num-prompts",
            "2",
            "--out",
            dir.toString()
        });
        assertEquals(3, o.workloadParams().turns());
        assertEquals(
                List.of(1, 2, 3, 1, 2, 3),
                o.prompts().stream().map(dev.mlxring.bench.BenchPrompt::turn).toList());
    }

    @Test
    void helpListsBothSubCommands() {
        CliRun r = run("bench", "--help");
        assertEquals(0, r.status());
        assertTrue(r.out().startsWith("usage: mlx-ring bench serve --target NAME=URL"), r.out());
        assertTrue(r.out().contains("mlx-ring bench compare A B"), r.out());
    }
}
