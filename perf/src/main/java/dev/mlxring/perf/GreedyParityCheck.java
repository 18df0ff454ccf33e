package dev.mlxring.perf;

import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.ObjectMapper;
import dev.mlxring.exec.generate.GenerateStep;
import dev.mlxring.exec.generate.GenerationOptions;
import dev.mlxring.exec.generate.GenerationResult;
import dev.mlxring.exec.model.LanguageModel;
import dev.mlxring.exec.model.Models;
import dev.mlxring.mlx.Mlx;
import java.nio.file.Path;
import java.util.Arrays;
import java.util.Base64;

/**
 * GreedyParityTest's check as a program, for machines without Maven (the lent NVIDIA GPU, see
 * scripts/gpu): reads what {@code scripts/oracle/greedy.py} wrote (mlx-lm's {@code generate_step}
 * on the same model, device and libmlx), runs every prompt through our {@link GenerateStep} with
 * the oracle's max tokens and prefill step, and compares the greedy tokens and the first step's
 * logits and logprobs byte for byte.
 *
 * <pre>
 * GreedyParityCheck --model DIR --expected FILE.json
 * </pre>
 *
 * <p>Prints one line per prompt and a summary; exit status 0 when every prompt matches, 2 when
 * one differs (64 for a usage error). Single-threaded; owns the model it loads.
 */
public final class GreedyParityCheck {
    private static final String USAGE = "GreedyParityCheck --model DIR --expected FILE.json";

    record Options(Path model, Path expected) {}

    private GreedyParityCheck() {}

    static Options parse(String[] argv) {
        Path model = null;
        Path expected = null;
        Flags f = new Flags(argv);
        while (f.next()) {
            switch (f.flag()) {
                case "--model" -> model = Path.of(f.value());
                case "--expected" -> expected = Path.of(f.value());
                default -> throw f.unknown();
            }
        }
        if (model == null || expected == null) {
            throw new IllegalArgumentException("--model DIR and --expected FILE.json are needed");
        }
        return new Options(model, expected);
    }

    public static void main(String[] argv) throws Exception {
        Options o = Flags.parseOrExit(argv, GreedyParityCheck::parse, USAGE);
        JsonNode expected = new ObjectMapper().readTree(o.expected().toFile());
        int maxTokens = expected.get("max_tokens").asInt();
        int prefillStep = expected.get("prefill_step_size").asInt();
        int failures = 0;
        int prompts = 0;
        try (LanguageModel model = Models.load(o.model())) {
            for (JsonNode r : expected.get("results")) {
                int[] prompt = ints(r.get("prompt"));
                int[] tokens = ints(r.get("tokens"));
                GenerationResult got = GenerateStep.run(
                        model,
                        prompt,
                        new GenerationOptions(maxTokens, prefillStep, new int[0], true, null, 0),
                        t -> true);
                boolean tokensEqual = Arrays.equals(tokens, got.tokens());
                boolean dtypeEqual = r.get("logits0").get("dtype").asText().equals(got.logitsDtype());
                boolean logitsEqual = Arrays.equals(bytes(r.get("logits0")), got.firstLogits());
                boolean logprobsEqual = Arrays.equals(bytes(r.get("logprobs0")), got.firstLogprobs());
                boolean ok = tokensEqual && dtypeEqual && logitsEqual && logprobsEqual;
                System.out.printf(
                        "%s prompt %d (%d tokens): tokens %s (%d), logits0 %s %s, logprobs0 %s%n",
                        ok ? "MATCH" : "DIFFER",
                        prompts,
                        prompt.length,
                        tokensEqual ? "equal" : "differ",
                        tokens.length,
                        got.logitsDtype(),
                        logitsEqual && dtypeEqual ? "bytes equal" : "bytes differ",
                        logprobsEqual ? "bytes equal" : "bytes differ");
                if (!tokensEqual) {
                    System.out.println("  mlx-lm: " + Arrays.toString(tokens));
                    System.out.println("  ours:   " + Arrays.toString(got.tokens()));
                }
                failures += ok ? 0 : 1;
                prompts++;
            }
        }
        System.out.printf(
                "%s: %d/%d prompts match mlx-lm (%s, default device %s)%n",
                o.model(), prompts - failures, prompts, o.expected(), Mlx.defaultDeviceIsGpu() ? "gpu" : "cpu");
        System.exit(failures == 0 && prompts > 0 ? 0 : 2);
    }

    private static int[] ints(JsonNode array) {
        int[] out = new int[array.size()];
        for (int i = 0; i < out.length; i++) {
            out[i] = array.get(i).asInt();
        }
        return out;
    }

    private static byte[] bytes(JsonNode encoded) {
        return Base64.getDecoder().decode(encoded.get("b64").asText());
    }
}
