package dev.mlxring.ingress.cli;

import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.ObjectMapper;
import java.io.IOException;
import java.io.InputStream;
import java.nio.charset.StandardCharsets;
import java.nio.file.Path;
import java.util.List;
import java.util.concurrent.TimeUnit;

/**
 * {@code bench decode}'s llama.cpp side: one {@code llama-bench -m GGUF -p N -n M -r 1 -t T -o json}
 * per run. llama-bench times prompt processing ({@code pp}: {@code n_prompt} N, {@code n_gen} 0)
 * and generation ({@code tg}: {@code n_gen} M) as two tests; their {@code avg_ns} are the prefill
 * and decode times. A run that exits non-zero, takes longer than {@value #TIMEOUT_S} s or prints no
 * such tests fails with what it printed.
 */
final class LlamaBenchDecode {
    /** One run: the two tests' times, and the llama.cpp build llama-bench reported. */
    record Result(double promptSeconds, double genSeconds, String build) {}

    private static final ObjectMapper JSON = new ObjectMapper();
    private static final long TIMEOUT_S = 600;

    private final Path binary;
    private final Path gguf;
    private final int threads;

    LlamaBenchDecode(Path binary, Path gguf, int threads) {
        this.binary = binary;
        this.gguf = gguf;
        this.threads = threads;
    }

    Result run(int promptTokens, int genTokens) throws IOException, InterruptedException {
        List<String> cmd = List.of(
                binary.toString(),
                "-m",
                gguf.toString(),
                "-p",
                Integer.toString(promptTokens),
                "-n",
                Integer.toString(genTokens),
                "-r",
                "1",
                "-t",
                Integer.toString(threads),
                "-o",
                "json");
        Process p = new ProcessBuilder(cmd)
                .redirectError(ProcessBuilder.Redirect.DISCARD)
                .start();
        String out;
        try (InputStream in = p.getInputStream()) {
            out = new String(in.readAllBytes(), StandardCharsets.UTF_8);
        }
        if (!p.waitFor(TIMEOUT_S, TimeUnit.SECONDS)) {
            p.destroyForcibly();
            throw new IllegalStateException("llama-bench did not finish within " + TIMEOUT_S + " s");
        }
        if (p.exitValue() != 0) {
            throw new IllegalStateException("llama-bench (" + String.join(" ", cmd) + ") exited with " + p.exitValue()
                    + ": " + abbreviate(out));
        }
        return parse(out, promptTokens, genTokens);
    }

    /** The prefill and decode times of llama-bench's JSON output {@code json} for N prompt and M generated tokens. */
    static Result parse(String json, int promptTokens, int genTokens) {
        JsonNode tests;
        try {
            tests = JSON.readTree(json);
        } catch (IOException e) {
            throw new IllegalStateException("llama-bench's output is not JSON: " + abbreviate(json));
        }
        double prompt = Double.NaN;
        double gen = Double.NaN;
        String build = null;
        if (tests != null && tests.isArray()) {
            for (JsonNode t : tests) {
                int n = t.path("n_prompt").asInt(-1);
                int m = t.path("n_gen").asInt(-1);
                double s = t.path("avg_ns").asDouble(Double.NaN) / 1e9;
                if (n == promptTokens && m == 0) {
                    prompt = s;
                } else if (n == 0 && m == genTokens) {
                    gen = s;
                }
                if (t.has("build_commit")) {
                    build = t.path("build_commit").asText() + " (build "
                            + t.path("build_number").asText() + ")";
                }
            }
        }
        if (!(prompt > 0) || !(gen > 0)) {
            throw new IllegalStateException("llama-bench's output has no pp" + promptTokens + " and tg" + genTokens
                    + " tests with avg_ns: " + abbreviate(json));
        }
        return new Result(prompt, gen, build);
    }

    private static String abbreviate(String s) {
        return s.length() <= 500 ? s : s.substring(0, 500) + "…";
    }
}
