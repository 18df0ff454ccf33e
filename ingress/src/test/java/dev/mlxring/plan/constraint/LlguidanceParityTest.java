package dev.mlxring.plan.constraint;

import static org.junit.jupiter.api.Assertions.assertArrayEquals;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertNull;
import static org.junit.jupiter.api.Assertions.assertTrue;

import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.ObjectMapper;
import com.fasterxml.jackson.databind.node.ArrayNode;
import com.fasterxml.jackson.databind.node.ObjectNode;
import dev.mlxring.constraint.ConstraintTokenizer;
import dev.mlxring.constraint.ConstraintVocabulary;
import dev.mlxring.exec.BatchParityTest;
import dev.mlxring.exec.batch.BatchGenerator;
import dev.mlxring.exec.batch.BatchRequest;
import dev.mlxring.exec.batch.BatchToken;
import dev.mlxring.exec.generate.GenerateStep;
import dev.mlxring.exec.generate.GenerationOptions;
import dev.mlxring.exec.generate.GenerationResult;
import dev.mlxring.exec.model.LanguageModel;
import dev.mlxring.exec.model.Models;
import dev.mlxring.exec.sample.TokenLogprobs;
import dev.mlxring.mlx.ProjectHome;
import dev.mlxring.mlx.PythonScript;
import dev.mlxring.pipeline.OutputConstraint;
import dev.mlxring.pipeline.SamplingParams;
import dev.mlxring.pipeline.TokenConstraint;
import dev.mlxring.tokenizer.HfTokenizer;
import java.nio.file.Files;
import java.nio.file.Path;
import java.security.MessageDigest;
import java.util.ArrayList;
import java.util.HexFormat;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.stream.Stream;
import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.MethodSource;

/**
 * Issue 42's exactness: with a request's constraint compiled by {@link ConstraintCompiler} (the
 * constraint module's llguidance binding), our tokens are bit-exact with mlx-lm whose
 * {@code logits_processors} hold a matcher built by llguidance's own Python package over the
 * same grammar ({@code scripts/oracle/llg_processor.py}). Serial cells run {@code generate_step}
 * ({@code sample.py --llguidance}) against {@link GenerateStep}; batched cells run mlx-lm's
 * {@code BatchGenerator} with per-row processors ({@code batch.py}, rows' {@code "llguidance"})
 * against our {@link BatchGenerator}, constrained and free rows together. Compared per token: the
 * id, the sha256 of the step's logprobs and (serial) the chosen logprob; a row ends on the EOS
 * its constraint allows once complete ({@code stop}: serially the EOS is not reported, batched it
 * is, as mlx-lm does) or at its length.
 *
 * <p>Models: the default model and tiny random-weight models over its vocabulary
 * ({@code llama-serve}, {@code gemma3-serve}, built by make_tiny_models.py), whose tokenizer is
 * the default model's tokenizer.json. {@code -Dllg.cells=REGEX} runs a subset.
 *
 * <p>It runs plan-stage's compiler into exec-stage's generators, so it lives in {@code ingress},
 * the composition root (stage modules do not depend on each other).
 */
class LlguidanceParityTest {
    private static final ObjectMapper JSON = new ObjectMapper();
    private static final Path DEFAULT_DIR = ProjectHome.get().resolve("models/smollm2-135m-instruct");
    private static final List<String> TINY = List.of("llama-serve", "gemma3-serve");
    private static final int PREFILL_STEP = 32;

    /** One grammar: its kind and source, the same text on both sides. */
    record Grammar(String name, OutputConstraint.Kind kind, String source) {}

    static final Map<String, Grammar> GRAMMARS = grammars();

    private static Map<String, Grammar> grammars() {
        Map<String, Grammar> g = new LinkedHashMap<>();
        schema(g, "nested", """
                {"type":"object","properties":{"person":{"type":"object","properties":{
                "name":{"type":"string","maxLength":20},"age":{"type":"integer","minimum":0,"maximum":120}},
                "required":["name","age"],"additionalProperties":false}},
                "required":["person"],"additionalProperties":false}""");
        schema(g, "array", """
                {"type":"object","properties":{"tags":{"type":"array","items":{"type":"string","maxLength":12},
                "minItems":2,"maxItems":4}},"required":["tags"],"additionalProperties":false}""");
        schema(g, "enum", """
                {"type":"object","properties":{"color":{"enum":["red","green","blue"]},
                "size":{"type":"string","enum":["S","M","L"]}},"required":["color","size"],"additionalProperties":false}""");
        schema(g, "ref", """
                {"$defs":{"point":{"type":"object","properties":{"x":{"type":"integer","minimum":-100,"maximum":100},
                "y":{"type":"integer","minimum":-100,"maximum":100}},"required":["x","y"],"additionalProperties":false}},
                "type":"object","properties":{"from":{"$ref":"#/$defs/point"},"to":{"$ref":"#/$defs/point"}},
                "required":["from","to"],"additionalProperties":false}""");
        schema(g, "pattern", """
                {"type":"object","properties":{"phone":{"type":"string","pattern":"^[0-9]{3}-[0-9]{4}$"},
                "code":{"type":"string","pattern":"^[A-Z]{2}[0-9]{2}$"}},"required":["phone","code"],
                "additionalProperties":false}""");
        schema(g, "nullable", """
                {"type":"object","properties":{"title":{"type":"string","maxLength":20},
                "subtitle":{"anyOf":[{"type":"string","maxLength":20},{"type":"null"}]}},
                "required":["title","subtitle"],"additionalProperties":false}""");
        schema(g, "const", """
                {"type":"object","properties":{"kind":{"const":"event"},"items":{"type":"array","items":{"enum":[1,2,3]},
                "maxItems":3}},"required":["kind","items"],"additionalProperties":false}""");
        schema(g, "numbers", """
                {"type":"object","properties":{"price":{"type":"number","minimum":0,"maximum":1000},
                "count":{"type":"integer","minimum":1,"maximum":99},"in_stock":{"type":"boolean"}},
                "required":["price","count","in_stock"],"additionalProperties":false}""");
        g.put("regex", new Grammar("regex", OutputConstraint.Kind.REGEX, "(yes|no): [0-9]{1,3} (apples|pears)"));
        g.put("lark", new Grammar("lark", OutputConstraint.Kind.LARK, """
                start: item ("," item)*
                item: WORD "=" NUMBER
                WORD: /[a-z]{1,8}/
                NUMBER: /[0-9]{1,3}/
                """));
        return g;
    }

    private static void schema(Map<String, Grammar> g, String name, String source) {
        g.put(name, new Grammar(name, OutputConstraint.Kind.JSON_SCHEMA, source.replace("\n", "")));
    }

    /**
     * A serial cell: every grammar in {@code grammars} constrains one prompt of its own.
     *
     * @param sampling in batch.py's row format (null: greedy)
     */
    record Cell(String name, String model, Map<String, Object> sampling, List<String> grammars, int maxTokens) {
        @Override
        public String toString() {
            return name;
        }
    }

    /** A batched row: {@code grammar} null is a free row. */
    record Row(int at, String prompt, String grammar, Map<String, Object> sampling, int maxTokens) {}

    /** A batched cell over mlx-lm's BatchGenerator schedule. */
    record BatchCell(String name, String model, int prefillBatch, int completionBatch, List<Row> rows) {
        @Override
        public String toString() {
            return name;
        }
    }

    private static Path work;
    private static HfTokenizer hf;
    private static ConstraintTokenizer tokenizer;
    private static ConstraintCompiler compiler;
    private static int vocab;
    private static int eos;

    @BeforeAll
    static void open() throws Exception {
        assertTrue(
                Files.isRegularFile(DEFAULT_DIR.resolve("tokenizer.json")),
                "the default model is missing at " + DEFAULT_DIR + " (run ./mlx-ring setup)");
        work = ProjectHome.get().resolve("build/oracle");
        Files.createDirectories(work.resolve("llguidance"));
        PythonScript.run(
                "oracle/make_tiny_models.py",
                600,
                List.of("--out", work.resolve("models").toString(), "--only", String.join(",", TINY)));
        vocab = JSON.readTree(DEFAULT_DIR.resolve("config.json").toFile())
                .path("vocab_size")
                .intValue();
        hf = HfTokenizer.load(DEFAULT_DIR);
        int[] eosIds = hf.eosTokenIds();
        assertEquals(1, eosIds.length, "the oracle's matcher takes one EOS id");
        eos = eosIds[0];
        tokenizer = ConstraintTokenizer.create(
                ConstraintVocabulary.fromTokenizerJson(DEFAULT_DIR.resolve("tokenizer.json"), vocab),
                eosIds,
                text -> hf.encode(text, false));
        compiler = new ConstraintCompiler(tokenizer);
    }

    @AfterAll
    static void close() {
        if (tokenizer != null) {
            tokenizer.close();
        }
    }

    private static final List<String> ALL = List.copyOf(GRAMMARS.keySet());

    static Map<String, Object> sampling(Object... kv) {
        Map<String, Object> m = new LinkedHashMap<>();
        for (int i = 0; i < kv.length; i += 2) {
            m.put((String) kv[i], kv[i + 1]);
        }
        return m;
    }

    static Stream<Cell> cells() {
        Map<String, Object> seeded = sampling("temp", 0.9, "top_k", 40, "seed", 7);
        Map<String, Object> seededTopP = sampling("temp", 1.0, "top_p", 0.95, "seed", 11);
        // A bias and a penalty ahead of the mask (mlx-lm's processors first, the constraint last).
        Map<String, Object> penalties = sampling(
                "temp", 0.7, "seed", 5, "logit_bias", Map.of("28", 3.0, "90", -2.0), "repetition_penalty", 1.3);
        List<Cell> cells = List.of(
                new Cell("default/greedy", "default", null, ALL, 14),
                new Cell(
                        "default/seeded", "default", seeded, List.of("nested", "ref", "nullable", "regex", "lark"), 14),
                new Cell("llama-serve/greedy", "llama-serve", null, ALL, 24),
                new Cell("llama-serve/seeded-top-p", "llama-serve", seededTopP, ALL, 24),
                new Cell("llama-serve/penalties", "llama-serve", penalties, ALL, 24),
                new Cell("gemma3-serve/seeded", "gemma3-serve", seeded, ALL, 24));
        return cells.stream().filter(c -> selected(c.name()));
    }

    static Stream<BatchCell> batchCells() {
        Map<String, Object> seeded = sampling("temp", 0.9, "top_k", 40, "seed", 3);
        Map<String, Object> seededTopP = sampling("temp", 1.0, "top_p", 0.9, "seed", 21);
        List<BatchCell> cells = List.of(
                new BatchCell(
                        "batch/default",
                        "default",
                        8,
                        32,
                        List.of(
                                new Row(0, "Give me a person as JSON.", "nested", null, 12),
                                new Row(0, "Write anything.", null, null, 10),
                                new Row(1, "Answer yes or no.", "regex", seeded, 12),
                                new Row(2, "Key-value pairs:", "lark", seededTopP, 10))),
                new BatchCell(
                        "batch/llama-serve",
                        "llama-serve",
                        4,
                        8,
                        List.of(
                                new Row(0, "Give me a person as JSON.", "nested", null, 20),
                                new Row(0, "Some tags please.", "array", seeded, 20),
                                new Row(0, "Write anything at all, as you like.", null, seededTopP, 16),
                                new Row(1, "A color and a size.", "enum", seededTopP, 20),
                                new Row(1, "Two points.", "ref", null, 20),
                                new Row(2, "Phone and code.", "pattern", seeded, 20),
                                new Row(3, "A title.", "nullable", seededTopP, 20),
                                new Row(3, "Free text.", null, null, 12),
                                new Row(4, "An event.", "const", seeded, 20),
                                new Row(4, "A price and a count.", "numbers", seededTopP, 20),
                                new Row(5, "Answer yes or no.", "regex", null, 16),
                                new Row(6, "Key-value pairs:", "lark", seeded, 16))));
        return cells.stream().filter(c -> selected(c.name()));
    }

    private static boolean selected(String name) {
        String only = System.getProperty("llg.cells");
        return only == null || only.isBlank() || name.matches(only);
    }

    private static Path modelDir(String name) {
        Path dir = name.equals("default") ? DEFAULT_DIR : work.resolve("models").resolve(name);
        assertTrue(Files.isRegularFile(dir.resolve("config.json")), "model " + dir + " is missing");
        return dir;
    }

    /** The oracle's constraint spec for {@code grammar} (llg_processor.py). */
    private static Map<String, Object> spec(String grammar) {
        Grammar g = GRAMMARS.get(grammar);
        Map<String, Object> m = new LinkedHashMap<>();
        m.put(
                "kind",
                switch (g.kind()) {
                    case JSON_SCHEMA -> "json_schema";
                    case REGEX -> "regex";
                    case LARK -> "lark";
                    case GRAMMAR -> "llguidance";
                });
        m.put("source", g.source());
        m.put("tokenizer_json", DEFAULT_DIR.resolve("tokenizer.json").toString());
        m.put("vocab_size", vocab);
        m.put("eos", new int[] {eos});
        return m;
    }

    /** Our constraint for {@code grammar}, compiled as plan compiles a request's. */
    private static TokenConstraint compile(String grammar) throws Exception {
        Grammar g = GRAMMARS.get(grammar);
        return compiler.compile(new OutputConstraint(g.kind(), g.source(), "response_format"));
    }

    private static int[] prompt(String text) {
        return hf.encode(text, false);
    }

    private static String promptFor(String grammar) {
        return "Give me an answer in the " + grammar + " format:";
    }

    static SamplingParams params(Map<String, Object> s, boolean logprobs) {
        return BatchParityTest.params(s).toBuilder().logprobs(logprobs).build();
    }

    /** sample.py's flags for the same settings (its defaults are mlx-lm's, as ours). */
    private static List<String> sampleFlags(Map<String, Object> s) throws Exception {
        List<String> a = new ArrayList<>();
        if (s == null) {
            return a;
        }
        Map<String, String> flags = Map.of(
                "temp",
                "--temp",
                "top_k",
                "--top-k",
                "top_p",
                "--top-p",
                "seed",
                "--seed",
                "repetition_penalty",
                "--repetition-penalty");
        for (Map.Entry<String, Object> e : s.entrySet()) {
            if (e.getKey().equals("logit_bias")) {
                a.addAll(List.of("--logit-bias", JSON.writeValueAsString(e.getValue())));
            } else {
                a.addAll(List.of(flags.get(e.getKey()), String.valueOf(e.getValue())));
            }
        }
        return a;
    }

    @ParameterizedTest(name = "{0}", allowZeroInvocations = true)
    @MethodSource("cells")
    void serialRunMatchesGenerateStepWithLlguidance(Cell cell) throws Exception {
        Path dir = work.resolve("llguidance");
        String file = cell.name().replace('/', '-');
        List<int[]> prompts =
                cell.grammars().stream().map(g -> prompt(promptFor(g))).toList();
        Path promptFile = dir.resolve("prompts-" + file + ".json");
        JSON.writeValue(promptFile.toFile(), Map.of("prompts", prompts));
        Path specFile = dir.resolve("specs-" + file + ".json");
        JSON.writeValue(
                specFile.toFile(),
                cell.grammars().stream().map(LlguidanceParityTest::spec).toList());
        Path expectedFile = dir.resolve("expected-" + file + ".json");
        List<String> args = new ArrayList<>(List.of(
                "--model",
                modelDir(cell.model()).toString(),
                "--prompts",
                promptFile.toString(),
                "--max-tokens",
                String.valueOf(cell.maxTokens()),
                "--prefill-step-size",
                String.valueOf(PREFILL_STEP),
                "--llguidance",
                specFile.toString(),
                "--out",
                expectedFile.toString()));
        args.addAll(sampleFlags(cell.sampling()));
        PythonScript.run("oracle/sample.py", 900, args);
        JsonNode expected = JSON.readTree(expectedFile.toFile()).get("results");
        assertEquals(prompts.size(), expected.size(), cell + ": oracle results");

        SamplingParams params = params(cell.sampling(), true);
        int ended = 0;
        try (LanguageModel model = Models.load(modelDir(cell.model()))) {
            for (int i = 0; i < prompts.size(); i++) {
                JsonNode r = expected.get(i);
                String where = cell + " " + cell.grammars().get(i);
                List<String> digests = new ArrayList<>();
                MessageDigest sha = MessageDigest.getInstance("SHA-256");
                GenerationResult got = GenerateStep.run(
                        model,
                        prompts.get(i),
                        new GenerationOptions(cell.maxTokens(), PREFILL_STEP, new int[] {eos}, false),
                        params,
                        null,
                        compile(cell.grammars().get(i)),
                        (token, logprobs) -> {
                            digests.add(HexFormat.of().formatHex(sha.digest(logprobs.toBytes())));
                            return true;
                        });
                int[] want = JSON.convertValue(r.get("tokens"), int[].class);
                assertFalse(r.get("error").asBoolean(), where + ": the oracle's matcher failed");
                assertArrayEquals(want, got.tokens(), where + ": token ids differ from mlx-lm with llguidance");
                assertEquals(
                        JSON.convertValue(r.get("logprobs_sha256"), List.class),
                        digests,
                        where + ": the steps' logprobs differ from mlx-lm's");
                List<TokenLogprobs> lps = got.tokenLogprobs();
                for (int s = 0; s < lps.size(); s++) {
                    assertEquals(
                            r.get("chosen_logprob").get(s).asDouble(),
                            (double) lps.get(s).logprob(),
                            where + ": step " + s + " chosen logprob");
                }
                boolean stopped = r.get("stopped").asBoolean();
                assertEquals(stopped ? "stop" : "length", got.finishReason(), where + ": finish reason");
                ended += stopped ? 1 : 0;
            }
        }
        System.out.printf("[llguidance parity] %s: %d of %d rows ended on EOS%n", cell, ended, prompts.size());
        assertTrue(ended > 0, cell + ": no row reached the end of its grammar (the cell never checks the EOS step)");
    }

    @ParameterizedTest(name = "{0}", allowZeroInvocations = true)
    @MethodSource("batchCells")
    void batchMatchesBatchGeneratorWithLlguidance(BatchCell cell) throws Exception {
        ObjectNode script = JSON.createObjectNode();
        script.put("prefill_step_size", PREFILL_STEP);
        script.put("prefill_batch_size", cell.prefillBatch());
        script.put("completion_batch_size", cell.completionBatch());
        ArrayNode rows = script.putArray("rows");
        for (Row r : cell.rows()) {
            ObjectNode o = rows.addObject();
            o.put("at", r.at());
            o.set("prompt", JSON.valueToTree(prompt(r.prompt())));
            o.put("max_tokens", r.maxTokens());
            o.set("stop", JSON.valueToTree(new int[] {eos}));
            if (r.sampling() != null) {
                o.set("sampling", JSON.valueToTree(r.sampling()));
            }
            if (r.grammar() != null) {
                o.set("llguidance", JSON.valueToTree(spec(r.grammar())));
            }
        }
        Path dir = work.resolve("llguidance");
        String file = cell.name().replace('/', '-');
        Path scriptFile = dir.resolve("script-" + file + ".json");
        JSON.writeValue(scriptFile.toFile(), script);
        Path out = dir.resolve("expected-" + file + ".json");
        PythonScript.run(
                "oracle/batch.py",
                900,
                List.of(
                        "--model",
                        modelDir(cell.model()).toString(),
                        "--script",
                        scriptFile.toString(),
                        "--out",
                        out.toString()));
        List<List<String>> expected = new ArrayList<>();
        for (JsonNode step : JSON.readTree(out.toFile()).get("steps")) {
            List<String> s = new ArrayList<>();
            for (JsonNode t : step) {
                s.add(t.get("uid").asInt() + ":" + t.get("token").asInt() + ":"
                        + (t.get("finish").isNull() ? "-" : t.get("finish").asText()) + ":"
                        + t.get("logprobs_sha256").asText());
            }
            expected.add(s);
        }

        List<List<String>> got = new ArrayList<>();
        MessageDigest sha = MessageDigest.getInstance("SHA-256");
        try (LanguageModel model = Models.load(modelDir(cell.model()));
                BatchGenerator gen =
                        new BatchGenerator(model, PREFILL_STEP, cell.prefillBatch(), cell.completionBatch(), null)) {
            int finished = 0;
            for (int step = 0; finished < cell.rows().size(); step++) {
                assertFalse(step > 10_000, "the script does not finish");
                for (Row r : cell.rows()) {
                    if (r.at() == step) {
                        gen.insert(new BatchRequest(
                                prompt(r.prompt()),
                                null,
                                r.maxTokens(),
                                params(r.sampling(), false),
                                new int[] {eos},
                                r.grammar() == null ? null : compile(r.grammar())));
                    }
                }
                List<String> s = new ArrayList<>();
                for (BatchToken t : gen.next()) {
                    assertNull(t.error(), cell + ": row " + t.uid() + " failed");
                    s.add(t.uid() + ":" + t.token() + ":" + (t.finishReason() == null ? "-" : t.finishReason()) + ":"
                            + HexFormat.of().formatHex(sha.digest(t.logprobs().toBytes())));
                    finished += t.finishReason() == null ? 0 : 1;
                }
                got.add(s);
            }
            assertTrue(gen.idle(), "every row finished but the generator is not idle");
        }
        assertTrue(
                expected.stream().flatMap(List::stream).anyMatch(s -> s.contains(":stop:")),
                cell + ": no row reached the end of its grammar (the cell never checks the EOS step)");
        for (int i = 0; i < Math.min(expected.size(), got.size()); i++) {
            assertEquals(expected.get(i), got.get(i), cell + ": call " + i + " (uid:token:finish:logprobs sha256)");
        }
        assertEquals(expected.size(), got.size(), cell + ": number of next() calls until every row finished");
    }
}
