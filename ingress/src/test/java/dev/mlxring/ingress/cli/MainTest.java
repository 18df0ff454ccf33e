package dev.mlxring.ingress.cli;

import static dev.mlxring.ingress.cli.CliRun.run;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.ObjectMapper;
import com.fasterxml.jackson.databind.node.ArrayNode;
import com.fasterxml.jackson.databind.node.ObjectNode;
import dev.mlxring.mlx.ProjectHome;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

class MainTest {
    private static final ObjectMapper JSON = new ObjectMapper();

    private static Path defaultModel() {
        Path dir = ProjectHome.get().resolve(GenerateCommand.DEFAULT_MODEL);
        assertTrue(Files.isRegularFile(dir.resolve("config.json")), "default model missing: run ./mlx-ring setup");
        return dir;
    }

    @Test
    void helpAfterACommandPrintsItsUsageAndRunsNothing() {
        for (String cmd : new String[] {"serve", "generate"}) {
            CliRun r = run(cmd, "--port", "1", "--help");
            assertEquals(0, r.status(), r.err());
            assertTrue(r.out().startsWith("usage: mlx-ring " + cmd + " [options]"), r.out());
        }
    }

    @Test
    void generatesFromTokenIdsAsJson() throws Exception {
        CliRun r = run(
                "generate",
                "--model",
                defaultModel().toString(),
                "--prompt-tokens",
                "1,9690,198,504,3575,282",
                "--max-tokens",
                "5",
                "--json");
        assertEquals(0, r.status(), r.err());
        JsonNode o = JSON.readTree(r.out());
        assertEquals(6, o.get("prompt_tokens").size());
        assertTrue(
                o.get("generated_tokens").size() <= 5
                        && o.get("generated_tokens").size() > 0,
                r.out());
        assertTrue(o.get("generation_tps").asDouble() >= 0);
        assertTrue(o.get("peak_memory_bytes").asLong() > 0);
    }

    @Test
    void bothCpuKernelChoicesGenerateTheSameIds() throws Exception {
        JsonNode[] ids = new JsonNode[2];
        String[] kernels = {"native", "mlx"};
        for (int i = 0; i < 2; i++) {
            CliRun r = run(
                    "generate",
                    "--prompt-tokens",
                    "1,9690,198,504,3575,282",
                    "--max-tokens",
                    "4",
                    "--json",
                    "--cpu-kernels",
                    kernels[i]);
            assertEquals(0, r.status(), r.err());
            ids[i] = JSON.readTree(r.out()).get("generated_tokens");
        }
        assertEquals(ids[1], ids[0]);
        assertEquals(
                2, run("generate", "--prompt", "x", "--cpu-kernels", "fast").status());
        assertTrue(run("generate", "--prompt", "x", "--cpu-kernels", "fast")
                .err()
                .contains("--cpu-kernels must be one of [mlx, native], got 'fast'"));
    }

    /** --numerics fast and fast-q8 run; they are refused with MLX's kernels, and an unknown name is. */
    @Test
    void numericsFastIsOptInAndChecked() throws Exception {
        for (String tier : new String[] {"fast", "fast-q8"}) {
            CliRun r = run(
                    "generate",
                    "--prompt-tokens",
                    "1,9690,198,504,3575,282",
                    "--max-tokens",
                    "4",
                    "--json",
                    "--numerics",
                    tier);
            assertEquals(0, r.status(), r.err());
            assertEquals(4, JSON.readTree(r.out()).get("generated_tokens").size());
            CliRun mlx = run("generate", "--prompt", "x", "--numerics", tier, "--cpu-kernels", "mlx");
            assertEquals(2, mlx.status());
            assertTrue(mlx.err().contains("--numerics " + tier + " needs --cpu-kernels native"), mlx.err());
        }
        CliRun bad = run("generate", "--prompt", "x", "--numerics", "quick");
        assertEquals(2, bad.status());
        assertTrue(bad.err().contains("--numerics must be one of [exact, fast, fast-q8], got 'quick'"), bad.err());
    }

    /**
     * --dequantized-weights is a switch of generate (the default model's float32 activations leave
     * it without effect: the same tokens) and is refused with MLX's kernels or the fast tier.
     */
    @Test
    void dequantizedWeightsIsASwitchAndChecked() throws Exception {
        JsonNode[] ids = new JsonNode[2];
        String[][] extra = {{}, {"--dequantized-weights"}};
        for (int i = 0; i < 2; i++) {
            List<String> args = new ArrayList<>(
                    List.of("generate", "--prompt-tokens", "1,9690,198,504,3575,282", "--max-tokens", "4", "--json"));
            args.addAll(List.of(extra[i]));
            CliRun r = run(args.toArray(new String[0]));
            assertEquals(0, r.status(), r.err());
            ids[i] = JSON.readTree(r.out()).get("generated_tokens");
        }
        assertEquals(ids[0], ids[1]);
        CliRun mlx = run("generate", "--prompt", "x", "--dequantized-weights", "--cpu-kernels", "mlx");
        assertEquals(2, mlx.status());
        assertTrue(mlx.err().contains("--dequantized-weights needs --cpu-kernels native"), mlx.err());
        CliRun fast = run("generate", "--prompt", "x", "--dequantized-weights", "--numerics", "fast");
        assertEquals(2, fast.status());
        assertTrue(fast.err().contains("--dequantized-weights applies to --numerics exact"), fast.err());
        CliRun serve = run("serve", "--dequantized-weights", "--cpu-kernels", "mlx");
        assertEquals(2, serve.status());
        assertTrue(serve.err().contains("--dequantized-weights needs --cpu-kernels native"), serve.err());
    }

    @Test
    void answersASimpleQuestionWithTheChatTemplate() {
        CliRun r = run("generate", "--prompt", "What is the capital of France?", "--max-tokens", "20");
        assertEquals(0, r.status(), r.err());
        assertTrue(r.out().contains("Paris"), r.out());
        assertTrue(r.out().contains("Generation:"), r.out());
    }

    @Test
    void badFlagsAreUsageErrors() {
        assertEquals(2, run("generate", "--bogus").status());
        assertTrue(run("generate", "--prompt", "x", "--max-tokens", "ten")
                .err()
                .contains("--max-tokens must be an integer"));
        assertTrue(run("generate", "--prompt", "x", "--max-tokens", "-1").err().contains("--max-tokens must be >= 0"));
        assertTrue(run("generate").err().contains("exactly one of --prompt or --prompt-tokens"));
        assertTrue(run("generate", "--prompt-tokens", "1,a").err().contains("token ids"));
        assertEquals(2, run("frobnicate").status());
        assertTrue(run("generate", "--prompt", "x", "--kv-group-size", "32")
                .err()
                .contains("--kv-group-size needs --kv-bits"));
        assertTrue(run("generate", "--prompt", "x", "--kv-bits", "7")
                .err()
                .contains("--kv-bits must be one of 2, 3, 4, 5, 6, 8, got 7"));
        assertTrue(run("generate", "--prompt", "x", "--kv-bits", "4", "--kv-group-size", "48")
                .err()
                .contains("--kv-group-size must be 32, 64 or 128"));
        assertTrue(run("serve", "--quantized-kv-start", "10").err().contains("--quantized-kv-start needs --kv-bits"));
        assertTrue(run("generate", "--prompt", "x", "--max-kv-size", "4").err().contains("--max-kv-size must be >= 5"));
        // SmolLM2's head dimension is 64: group 128 cannot quantize it.
        assertTrue(run("generate", "--prompt", "x", "--kv-bits", "4", "--kv-group-size", "128")
                .err()
                .contains("--kv-group-size 128 does not divide this model's attention head dimension 64"));
    }

    @Test
    void serveRefusesBadConnectionFlagsBeforeLoadingAModel() {
        CliRun r = run("serve", "--max-connections", "0");
        assertEquals(2, r.status(), r.err());
        assertTrue(r.err().contains("--max-connections must be >= 1, got 0"), r.err());
        assertTrue(run("serve", "--read-timeout-seconds", "0").err().contains("--read-timeout-seconds must be >= 1"));
        assertTrue(run("serve", "--idle-timeout-seconds", "x")
                .err()
                .contains("--idle-timeout-seconds must be an integer"));
        String usage = ServeCommand.FLAGS.usage().replaceAll("\\s+", " ");
        assertTrue(
                usage.contains("--read-timeout-seconds S")
                        && usage.contains("--idle-timeout-seconds S")
                        && usage.contains("--max-connections N")
                        && usage.contains("(default: 30)")
                        && usage.contains("(default: 60)")
                        && usage.contains("(default: 1024)"),
                "the usage names the flags with their defaults");
    }

    @Test
    void seededSamplingIsReproducibleAndReportsLogprobs() throws Exception {
        String[] args = {
            "generate",
            "--model",
            defaultModel().toString(),
            "--prompt-tokens",
            "1,9690,198,504,3575,282",
            "--max-tokens",
            "4",
            "--temp",
            "0.8",
            "--top-p",
            "0.9",
            "--repetition-penalty",
            "1.1",
            "--seed",
            "5",
            "--json",
            "--logprobs",
            "3"
        };
        CliRun a = run(args);
        CliRun b = run(args);
        assertEquals(0, a.status(), a.err());
        JsonNode x = JSON.readTree(a.out());
        assertEquals(x.get("generated_tokens"), JSON.readTree(b.out()).get("generated_tokens"));
        JsonNode lps = x.get("logprobs");
        assertEquals(x.get("generated_tokens").size(), lps.size(), a.out());
        for (int i = 0; i < lps.size(); i++) {
            assertEquals(
                    x.get("generated_tokens").get(i).asInt(),
                    lps.get(i).get("id").asInt());
            assertTrue(lps.get(i).get("logprob").asDouble() <= 0);
            assertEquals(3, lps.get(i).get("top_logprobs").size());
        }
    }

    @Test
    void outOfRangeSamplingValuesAreNamed() {
        CliRun r = run("generate", "--prompt", "x", "--top-p", "1.5");
        assertEquals(1, r.status());
        assertTrue(r.err().contains("top_p must be in [0, 1], got 1.5"), r.err());
        r = run("generate", "--prompt", "x", "--temp", "-1");
        assertTrue(r.err().contains("temperature must be in [0, +inf)"), r.err());
        r = run("generate", "--prompt", "x", "--xtc-threshold", "0.7");
        assertTrue(r.err().contains("xtc_threshold must be in [0, 0.5]"), r.err());
        r = run("generate", "--prompt", "x", "--logprobs", "12");
        assertTrue(r.err().contains("top_logprobs must be in [0, 11]"), r.err());
        r = run("generate", "--prompt", "x", "--temp", "warm");
        assertEquals(2, r.status());
        assertTrue(r.err().contains("--temp must be a number"), r.err());
    }

    @Test
    void missingModelDirectoryIsNamed(@TempDir Path tmp) {
        CliRun r = run("generate", "--model", tmp.resolve("nope").toString(), "--prompt", "hi");
        assertEquals(1, r.status());
        assertTrue(r.err().contains("does not exist"), r.err());
    }

    @Test
    void unsupportedModelTypeNamesTheSupportedOnes(@TempDir Path tmp) throws Exception {
        Path dir = copyModel(tmp);
        String config = Files.readString(dir.resolve("config.json")).replace("\"llama\"", "\"gpt_bigcode\"");
        Files.writeString(dir.resolve("config.json"), config);
        CliRun r = run("generate", "--model", dir.toString(), "--prompt-tokens", "1,2");
        assertEquals(1, r.status());
        assertTrue(
                r.err().contains("gpt_bigcode")
                        && r.err()
                                .contains(
                                        "(supported: gemma3_text, gemma4_text, gpt_oss, llama, mistral, phi3, qwen2, qwen3, qwen3_5,"
                                                + " qwen3_5_moe, qwen3_moe, qwen3_next)"),
                r.err());
    }

    @Test
    void malformedConfigIsReported(@TempDir Path tmp) throws Exception {
        Path dir = copyModel(tmp);
        Files.writeString(dir.resolve("config.json"), "{\"model_type\": \"llama\", \"hidden_size\": ");
        CliRun r = run("generate", "--model", dir.toString(), "--prompt-tokens", "1,2");
        assertEquals(1, r.status());
        assertTrue(r.err().contains("malformed") && r.err().contains("config.json"), r.err());

        Files.writeString(dir.resolve("config.json"), "{\"model_type\": \"llama\", \"hidden_size\": \"big\"}");
        r = run("generate", "--model", dir.toString(), "--prompt-tokens", "1,2");
        assertTrue(r.err().contains("'hidden_size' must be an integer"), r.err());
    }

    @Test
    void outOfVocabularyPromptTokenIsRejected() {
        CliRun r = run("generate", "--model", defaultModel().toString(), "--prompt-tokens", "1,999999");
        assertEquals(1, r.status());
        assertTrue(r.err().contains("999999") && r.err().contains("vocabulary"), r.err());
    }

    /** The default model's small files plus a link to its weights. */
    private static Path copyModel(Path tmp) throws Exception {
        Path src = defaultModel();
        Path dir = Files.createDirectories(tmp.resolve("model"));
        for (String f : new String[] {"config.json", "tokenizer.json", "tokenizer_config.json"}) {
            Files.copy(src.resolve(f), dir.resolve(f));
        }
        Files.createSymbolicLink(dir.resolve("model.safetensors"), src.resolve("model.safetensors"));
        return dir;
    }

    /**
     * generate --speculative ngram and draft (the default model drafting for itself) end like the
     * plain greedy run on a prompt that repeats itself, and report what they proposed and accepted.
     */
    @Test
    void speculativeGenerateReportsItsProposalsAndEndsLikeThePlainRun() throws Exception {
        String prompt = "1,9690,198,504,3575,282,504,3575,282,504,3575";
        CliRun plain = run("generate", "--prompt-tokens", prompt, "--max-tokens", "10", "--json");
        assertEquals(0, plain.status(), plain.err());
        JsonNode want = JSON.readTree(plain.out()).get("generated_tokens");
        for (List<String> flags : List.of(
                List.of("--speculative", "ngram"),
                List.of("--draft-model", defaultModel().toString(), "--num-draft-tokens", "2"))) {
            List<String> args =
                    new ArrayList<>(List.of("generate", "--prompt-tokens", prompt, "--max-tokens", "10", "--json"));
            args.addAll(flags);
            CliRun r = run(args.toArray(String[]::new));
            assertEquals(0, r.status(), r.err());
            JsonNode o = JSON.readTree(r.out());
            assertEquals(want, o.get("generated_tokens"), flags + ": " + r.out());
            JsonNode spec = o.get("speculative");
            assertEquals(
                    flags.get(0).equals("--speculative") ? "ngram" : "draft",
                    spec.get("method").asText());
            assertTrue(
                    spec.get("proposed").asInt() > 0
                            && spec.get("accepted").asInt()
                                    <= spec.get("proposed").asInt(),
                    r.out());
        }
    }

    /** Speculative flags the run would not use, and settings it cannot honour, are refused by name. */
    @Test
    void speculativeFlagsThatCannotApplyAreRefused(@TempDir Path tmp) throws Exception {
        Map<List<String>, String> cases = new LinkedHashMap<>();
        cases.put(List.of("--num-draft-tokens", "2"), "--num-draft-tokens needs speculative decoding");
        cases.put(List.of("--speculative", "draft"), "--speculative draft needs --draft-model DIR");
        cases.put(List.of("--speculative", "maybe"), "--speculative must be ngram, draft or off, got 'maybe'");
        cases.put(
                List.of("--speculative", "ngram", "--prompt-lookup-min", "3", "--prompt-lookup-max", "2"),
                "--prompt-lookup-max 2 is below --prompt-lookup-min 3");
        cases.put(List.of("--speculative", "ngram", "--max-kv-size", "64"), "cannot be used with --max-kv-size");
        cases.put(List.of("--speculative", "ngram", "--repetition-penalty", "1.2"), "does not take logits processors");
        // A draft whose tokenizer holds one more token than the model's.
        ObjectNode tok = (ObjectNode)
                JSON.readTree(defaultModel().resolve("tokenizer.json").toFile());
        ObjectNode extra = ((ArrayNode) tok.get("added_tokens")).addObject();
        extra.put("id", 49152)
                .put("content", "<extra_draft_token>")
                .put("single_word", false)
                .put("lstrip", false)
                .put("rstrip", false)
                .put("normalized", false)
                .put("special", true);
        Files.writeString(tmp.resolve("tokenizer.json"), JSON.writeValueAsString(tok));
        Files.copy(defaultModel().resolve("tokenizer_config.json"), tmp.resolve("tokenizer_config.json"));
        Files.copy(defaultModel().resolve("config.json"), tmp.resolve("config.json"));
        cases.put(List.of("--draft-model", tmp.toString()), "the draft model's tokenizer does not match the model's");
        for (Map.Entry<List<String>, String> c : cases.entrySet()) {
            List<String> args =
                    new ArrayList<>(List.of("generate", "--prompt-tokens", "1,9690,198", "--max-tokens", "2"));
            args.addAll(c.getKey());
            CliRun r = run(args.toArray(String[]::new));
            assertTrue(
                    r.status() != 0 && r.err().contains(c.getValue()), c.getKey() + ": " + r.status() + " " + r.err());
        }
    }
}
