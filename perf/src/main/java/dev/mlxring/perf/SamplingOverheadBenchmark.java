package dev.mlxring.perf;

import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.ObjectMapper;
import dev.mlxring.exec.sample.EngineRng;
import dev.mlxring.exec.sample.SamplingRun;
import dev.mlxring.mlx.ArrayScope;
import dev.mlxring.mlx.Dtype;
import dev.mlxring.mlx.Mlx;
import dev.mlxring.mlx.MlxArray;
import dev.mlxring.mlx.PythonScript;
import dev.mlxring.pipeline.SamplingParams;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.Arrays;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Locale;
import java.util.Map;

/**
 * Sampling overhead per token, ours against mlx-lm ({@code scripts/bench/sampling_overhead.py}):
 * the per-token work generate_step does after the forward pass - logits processors (with the
 * token history: 64 prompt tokens, then every sampled token), logsumexp, the sampler, and the
 * evaluation of the sampled token - on one fixed {@code [1, V]} logits vector, for greedy, plain
 * temperature, temperature + top-p, the sampler chain alone (top-p, min-p, XTC, top-k), the logits
 * processors alone (logit bias, repetition/presence/frequency penalties, greedy), and both. Both sides build the same logits
 * ({@code 3 sin(0.7 i) + ((i * 2654435761) mod 1000) / 1000}) and history.
 *
 * <pre>
 * SamplingOverheadBenchmark [--vocab 49152] [--dtype float32|bfloat16] [--iterations 200] [--reps 5]
 *                           [--warmup 500] [--no-python]
 * </pre>
 *
 * Prints a markdown table: median ns/token per configuration and side (whole step: graph building
 * + evaluation), the overhead over greedy, and the graph-building part alone (the host-side cost:
 * FFM downcalls here, the Python interpreter there). Each side runs alone (mlx-lm after ours).
 */
public final class SamplingOverheadBenchmark {
    private static final ObjectMapper JSON = new ObjectMapper();

    private SamplingOverheadBenchmark() {}

    static Map<String, SamplingParams> configs() {
        Map<Integer, Double> bias = new LinkedHashMap<>();
        bias.put(9906, 2.0);
        bias.put(28, -100.0);
        bias.put(314, 1.5);
        Map<String, SamplingParams> c = new LinkedHashMap<>();
        c.put("greedy", SamplingParams.GREEDY);
        c.put("temp", SamplingParams.builder().temperature(0.7).build());
        c.put("temp_top_p", SamplingParams.builder().temperature(0.7).topP(0.9).build());
        c.put(
                "sampler_chain",
                SamplingParams.builder()
                        .temperature(0.7)
                        .topP(0.9)
                        .minP(0.05)
                        .topK(40)
                        .xtcProbability(0.5)
                        .xtcThreshold(0.1)
                        .xtcSpecialTokens(198, 2)
                        .build());
        c.put(
                "processors",
                SamplingParams.builder()
                        .logitBias(bias)
                        .repetitionPenalty(1.1)
                        .repetitionContextSize(20)
                        .presencePenalty(0.2)
                        .presenceContextSize(20)
                        .frequencyPenalty(0.1)
                        .frequencyContextSize(20)
                        .build());
        c.put(
                "full_chain",
                SamplingParams.builder()
                        .temperature(0.7)
                        .topP(0.9)
                        .minP(0.05)
                        .topK(40)
                        .xtcProbability(0.5)
                        .xtcThreshold(0.1)
                        .xtcSpecialTokens(198, 2)
                        .logitBias(bias)
                        .repetitionPenalty(1.1)
                        .repetitionContextSize(20)
                        .presencePenalty(0.2)
                        .presenceContextSize(20)
                        .frequencyPenalty(0.1)
                        .frequencyContextSize(20)
                        .build());
        return c;
    }

    static MlxArray logits(int vocab, Dtype dtype) {
        float[] v = new float[vocab];
        for (int i = 0; i < vocab; i++) {
            v[i] = (float) (3.0 * Math.sin(0.7 * i) + ((i * 2654435761L) % 1000) / 1000.0);
        }
        MlxArray x = Mlx.fromFloats(v, 1, vocab);
        return dtype == Dtype.FLOAT32 ? x : Mlx.astype(x, dtype);
    }

    /** {total, graph-building} ns per token over {@code iterations} steps of one fresh request. */
    static double[] run(SamplingParams params, MlxArray logits, int vocab, int iterations) {
        EngineRng rng = EngineRng.seeded(0);
        try (SamplingRun run = SamplingRun.start(params, vocab, rng)) {
            int[] prompt = new int[64];
            for (int i = 0; i < prompt.length; i++) {
                prompt[i] = (37 * i) % vocab;
            }
            try (ArrayScope s = ArrayScope.open()) {
                run.observe(Mlx.fromInts(prompt, prompt.length), prompt.length);
            }
            MlxArray y;
            try (ArrayScope s = ArrayScope.open()) {
                y = Mlx.astype(Mlx.fromInts(new int[] {0}, 1), Dtype.UINT32).detach();
                Mlx.eval(y);
            }
            long build = 0;
            long t0 = System.nanoTime();
            for (int it = 0; it < iterations; it++) {
                try (ArrayScope s = ArrayScope.open()) {
                    long b0 = System.nanoTime();
                    MlxArray x = run.process(y, 1, logits);
                    MlxArray logprobs = Mlx.subtract(x, Mlx.logsumexp(x, true));
                    MlxArray next = run.sample(logprobs);
                    build += System.nanoTime() - b0;
                    Mlx.eval(next);
                    y.close();
                    y = next.detach();
                }
            }
            long elapsed = System.nanoTime() - t0;
            y.close();
            return new double[] {(double) elapsed / iterations, (double) build / iterations};
        }
    }

    public static void main(String[] args) throws Exception {
        int vocab = 49152;
        String dtypeName = "float32";
        int iterations = 200;
        int reps = 5;
        int warmup = 500;
        boolean python = true;
        for (int i = 0; i < args.length; i++) {
            switch (args[i]) {
                case "--vocab" -> vocab = Integer.parseInt(args[++i]);
                case "--dtype" -> dtypeName = args[++i];
                case "--iterations" -> iterations = Integer.parseInt(args[++i]);
                case "--reps" -> reps = Integer.parseInt(args[++i]);
                case "--warmup" -> warmup = Integer.parseInt(args[++i]);
                case "--no-python" -> python = false;
                default -> throw new IllegalArgumentException("unknown argument " + args[i]);
            }
        }
        Dtype dtype = Dtype.parse(dtypeName);
        Mlx.useNewDefaultStream();
        Map<String, Double> ours = new LinkedHashMap<>();
        Map<String, Double> oursBuild = new LinkedHashMap<>();
        try (ArrayScope scope = ArrayScope.open()) {
            MlxArray x = logits(vocab, dtype);
            Mlx.eval(x);
            for (Map.Entry<String, SamplingParams> e : configs().entrySet()) {
                run(e.getValue(), x, vocab, warmup);
                double[] perRep = new double[reps];
                double[] buildRep = new double[reps];
                for (int r = 0; r < reps; r++) {
                    double[] t = run(e.getValue(), x, vocab, iterations);
                    perRep[r] = t[0];
                    buildRep[r] = t[1];
                }
                ours.put(e.getKey(), median(perRep));
                oursBuild.put(e.getKey(), median(buildRep));
                System.err.printf(
                        Locale.ROOT,
                        "ours   %-11s %s ns/token, build %s%n",
                        e.getKey(),
                        Arrays.toString(round(perRep)),
                        Arrays.toString(round(buildRep)));
            }
        }
        Map<String, Double> theirs = new LinkedHashMap<>();
        Map<String, Double> theirsBuild = new LinkedHashMap<>();
        String versions = "";
        if (python) {
            Path out = Files.createTempFile("sampling-overhead", ".json");
            try {
                PythonScript.run(
                        "bench/sampling_overhead.py",
                        1800,
                        List.of(
                                "--vocab",
                                String.valueOf(vocab),
                                "--dtype",
                                dtypeName,
                                "--iterations",
                                String.valueOf(iterations),
                                "--reps",
                                String.valueOf(reps),
                                "--warmup",
                                String.valueOf(warmup),
                                "--out",
                                out.toString()));
                JsonNode doc = JSON.readTree(out.toFile());
                versions = " (mlx " + doc.get("mlx_version").asText() + ", mlx-lm "
                        + doc.get("mlx_lm_version").asText() + ")";
                doc.get("configs").properties().forEach(p -> {
                    theirs.put(p.getKey(), p.getValue().get("median_ns").asDouble());
                    theirsBuild.put(
                            p.getKey(), p.getValue().get("median_build_ns").asDouble());
                    System.err.printf(
                            Locale.ROOT,
                            "mlx-lm %-11s %s ns/token%n",
                            p.getKey(),
                            p.getValue().get("ns_per_token").toString());
                });
            } finally {
                Files.deleteIfExists(out);
            }
        }
        System.out.printf(
                Locale.ROOT,
                "Sampling overhead per token, V=%d %s, %d tokens x %d reps (median)%s%n%n",
                vocab,
                dtypeName,
                iterations,
                reps,
                versions);
        System.out.println("| config | mlx-ring ns/token | over greedy | graph build | mlx-lm ns/token | over greedy"
                + " | graph build |");
        System.out.println("|---|---:|---:|---:|---:|---:|---:|");
        double og = ours.get("greedy");
        Double tg = theirs.get("greedy");
        for (String k : ours.keySet()) {
            Double t = theirs.get(k);
            Double tb = theirsBuild.get(k);
            System.out.printf(
                    Locale.ROOT,
                    "| %s | %.0f | %+.0f | %.0f | %s | %s | %s |%n",
                    k,
                    ours.get(k),
                    ours.get(k) - og,
                    oursBuild.get(k),
                    t == null ? "-" : String.format(Locale.ROOT, "%.0f", t),
                    t == null || tg == null ? "-" : String.format(Locale.ROOT, "%+.0f", t - tg),
                    tb == null ? "-" : String.format(Locale.ROOT, "%.0f", tb));
        }
    }

    private static double median(double[] v) {
        double[] s = v.clone();
        Arrays.sort(s);
        return s.length % 2 == 1 ? s[s.length / 2] : (s[s.length / 2 - 1] + s[s.length / 2]) / 2;
    }

    private static long[] round(double[] v) {
        long[] r = new long[v.length];
        for (int i = 0; i < v.length; i++) {
            r[i] = Math.round(v[i]);
        }
        return r;
    }
}
