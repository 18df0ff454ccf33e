package dev.mlxring.ingress.cli;

import static dev.mlxring.ingress.cli.CliRun.run;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.ObjectMapper;
import java.io.IOException;
import java.nio.file.Files;
import java.nio.file.Path;
import java.nio.file.attribute.PosixFilePermissions;
import java.util.Set;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

/**
 * {@code mlx-ring bench decode}: argument errors refused before anything loads, llama-bench's JSON
 * read into prefill and decode times, and one short live run (the default model, 8 + 4 tokens,
 * ours exact and mlx-lm, and a scripted llama-bench) into the results folder.
 */
class DecodeCommandTest {
    private static final ObjectMapper JSON = new ObjectMapper();

    /** What llama-bench -o json prints for -p 8 -n 4: 8 prompt tokens in 4 ms, 4 generated in 200 ms. */
    private static final String LLAMA_JSON = "[{\"build_commit\": \"abc123\", \"build_number\": 7, \"n_prompt\": 8,"
            + " \"n_gen\": 0, \"avg_ns\": 4000000}, {\"build_commit\": \"abc123\", \"build_number\": 7,"
            + " \"n_prompt\": 0, \"n_gen\": 4, \"avg_ns\": 200000000}]";

    @TempDir
    Path dir;

    private static void refused(String message, String... args) {
        CliRun r = run(args);
        assertEquals(2, r.status(), r.err());
        assertTrue(r.err().contains("mlx-ring: " + message), r.err());
    }

    /** A stand-in llama-bench that records its arguments and prints {@link #LLAMA_JSON}. */
    private Path fakeLlamaBench() throws IOException {
        Path script = dir.resolve("llama-bench");
        Files.writeString(
                script,
                "#!/bin/sh\necho \"$@\" >> '" + dir.resolve("llama-args.txt") + "'\ncat <<'EOF'\n" + LLAMA_JSON
                        + "\nEOF\n");
        Files.setPosixFilePermissions(script, PosixFilePermissions.fromString("rwx------"));
        return script;
    }

    @Test
    void badArgumentsAreUsageErrorsNamingThem() throws IOException {
        Path gguf = Files.writeString(dir.resolve("m.gguf"), "not really");
        refused(
                "--variants takes exact, fast, fast-q8 and mlx (comma-separated), got 'turbo'",
                "bench",
                "decode",
                "--variants",
                "exact,turbo");
        refused("--variants names exact twice", "bench", "decode", "--variants", "exact,exact");
        refused("llama.cpp needs both --gguf FILE and --llama-bench BIN", "bench", "decode", "--gguf", gguf.toString());
        refused(
                "--gguf " + dir.resolve("none.gguf") + ": no such file",
                "bench",
                "decode",
                "--gguf",
                dir.resolve("none.gguf").toString(),
                "--llama-bench",
                fakeLlamaBench().toString());
        refused(
                "--llama-bench " + gguf + " is not an executable file",
                "bench",
                "decode",
                "--gguf",
                gguf.toString(),
                "--llama-bench",
                gguf.toString());
        refused(
                "--model " + dir + " is not a model directory (no config.json)",
                "bench",
                "decode",
                "--model",
                dir.toString());
        refused("--gen-tokens must be >= 1, got 0", "bench", "decode", "--gen-tokens", "0");
        refused("unknown argument --max-concurrency", "bench", "decode", "--max-concurrency", "1");
    }

    @Test
    void llamaBenchJsonGivesThePrefillAndDecodeTimes() {
        LlamaBenchDecode.Result r = LlamaBenchDecode.parse(LLAMA_JSON, 8, 4);
        assertEquals(0.004, r.promptSeconds(), 1e-12);
        assertEquals(0.2, r.genSeconds(), 1e-12);
        assertEquals("abc123 (build 7)", r.build());
        IllegalStateException e =
                assertThrows(IllegalStateException.class, () -> LlamaBenchDecode.parse(LLAMA_JSON, 16, 4));
        assertTrue(e.getMessage().startsWith("llama-bench's output has no pp16 and tg4 tests"), e.getMessage());
        e = assertThrows(IllegalStateException.class, () -> LlamaBenchDecode.parse("| model | size |", 8, 4));
        assertTrue(e.getMessage().startsWith("llama-bench's output is not JSON"), e.getMessage());
    }

    @Test
    void aShortLiveRunAlternatesOursMlxLmAndLlamaCppIntoTheResultsFolder() throws Exception {
        Path out = dir.resolve("decode");
        CliRun r = run(
                "bench",
                "decode",
                "--variants",
                "exact",
                "--prompt-tokens",
                "8",
                "--gen-tokens",
                "4",
                "--runs",
                "2",
                "--warmup",
                "0",
                "--gguf",
                Files.writeString(dir.resolve("m.gguf"), "x").toString(),
                "--llama-bench",
                fakeLlamaBench().toString(),
                "--out",
                out.toString());
        assertEquals(0, r.status(), r.err());
        JsonNode doc = JSON.readTree(out.resolve("results.json").toFile());
        assertEquals("mlx-ring bench decode", doc.get("tool").asText());
        assertEquals("mlx-lm", doc.get("reference").asText());
        JsonNode engines = doc.get("engines");
        assertEquals(3, engines.size(), engines.toString());
        JsonNode ours = engines.get(0);
        assertEquals("ours-exact", ours.get("engine").asText());
        assertEquals(2, ours.get("runs").asInt());
        assertEquals(4, ours.get("gen_tokens").asInt());
        assertTrue(ours.get("decode_tps_median").asDouble() > 0, ours.toString());
        assertTrue(ours.get("tokens_match_reference").asBoolean(), "exact is mlx-lm's tokens: " + ours);
        assertTrue(ours.get("decode_vs_reference").asDouble() > 0, ours.toString());
        JsonNode llama = engines.get(2);
        assertEquals("llama.cpp", llama.get("engine").asText());
        assertEquals(2000.0, llama.get("prefill_tps_median").asDouble(), 1e-9, "8 tokens in 4 ms");
        assertEquals(20.0, llama.get("decode_tps_median").asDouble(), 1e-9, "4 tokens in 200 ms");
        assertTrue(
                doc.at("/config/versions/mlx-lm").asText().startsWith("mlx "),
                doc.get("config").toString());
        assertEquals("abc123 (build 7)", doc.at("/config/versions/llama.cpp").asText());
        // one engine at a time, the order reversed in round 2
        StringBuilder order = new StringBuilder();
        doc.get("runs").forEach(x -> order.append(x.get("engine").asText()).append(' '));
        assertEquals("ours-exact mlx-lm llama.cpp llama.cpp mlx-lm ours-exact ", order.toString());
        String args = Files.readString(dir.resolve("llama-args.txt"));
        assertTrue(args.contains("-p 8 -n 4 -r 1 -t "), args);
        assertTrue(Files.readString(out.resolve("results.md")).contains("| llama.cpp | 2 | 2000.0 (2000.0–2000.0)"));
        assertTrue(r.out().startsWith("# mlx-ring bench decode"), r.out());
        assertTrue(
                Set.of(r.err().split("\n")).stream()
                        .anyMatch(l -> l.startsWith("[bench] run 6/6: round 2, ours-exact")),
                r.err());
    }
}
