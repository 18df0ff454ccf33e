package dev.mlxring.perf;

import com.fasterxml.jackson.databind.ObjectMapper;
import dev.mlxring.constraint.ConstraintTokenizer;
import dev.mlxring.constraint.ConstraintVocabulary;
import dev.mlxring.mlx.ProjectHome;
import dev.mlxring.pipeline.OutputConstraint;
import dev.mlxring.pipeline.TokenConstraint;
import dev.mlxring.plan.constraint.ConstraintCompiler;
import dev.mlxring.tokenizer.HfTokenizer;
import java.nio.file.Path;
import java.util.Arrays;
import java.util.LinkedHashMap;
import java.util.Locale;
import java.util.Map;

/**
 * Structured outputs' host-side costs on a model's tokenizer: compiling a request's schema
 * (ConstraintCompiler.compile: llguidance's grammar and matcher, on the plan thread) and one step's
 * mask (TokenConstraint.allowedTokens, on the exec thread while the forward runs, then consume),
 * for eight schemas, a regex and a Lark grammar, each walked along the tokens of a valid output.
 *
 * <pre>
 * ConstraintCostBenchmark [--model DIR] [--compiles 200] [--walks 20]
 * </pre>
 *
 * Prints a markdown table: compile p50/p99 (ms) and mask + consume per token p50/p99 (µs).
 */
public final class ConstraintCostBenchmark {
    private ConstraintCostBenchmark() {}

    /** name -> {kind, source, a valid output}. */
    static Map<String, String[]> cases() {
        Map<String, String[]> c = new LinkedHashMap<>();
        c.put("nested", new String[] {
            "JSON_SCHEMA",
            "{\"type\":\"object\",\"properties\":{\"person\":{\"type\":\"object\","
                    + "\"properties\":{\"name\":{\"type\":\"string\"},\"age\":{\"type\":\"integer\"}},\"required\":[\"name\",\"age\"]}},"
                    + "\"required\":[\"person\"]}",
            "{\"person\": {\"name\": \"Ada Lovelace\", \"age\": 36}}"
        });
        c.put("array", new String[] {
            "JSON_SCHEMA",
            "{\"type\":\"object\",\"properties\":{\"tags\":{\"type\":\"array\","
                    + "\"items\":{\"type\":\"string\"},\"minItems\":2,\"maxItems\":4}},\"required\":[\"tags\"]}",
            "{\"tags\": [\"red\", \"green\", \"blue\"]}"
        });
        c.put("enum", new String[] {
            "JSON_SCHEMA",
            "{\"type\":\"object\",\"properties\":{\"color\":{\"enum\":[\"red\","
                    + "\"green\",\"blue\"]},\"size\":{\"enum\":[\"S\",\"M\",\"L\"]}},\"required\":[\"color\",\"size\"]}",
            "{\"color\": \"green\", \"size\": \"M\"}"
        });
        c.put("ref", new String[] {
            "JSON_SCHEMA",
            "{\"$defs\":{\"p\":{\"type\":\"object\",\"properties\":{\"x\":{\"type\":"
                    + "\"integer\"},\"y\":{\"type\":\"integer\"}},\"required\":[\"x\",\"y\"]}},\"type\":\"object\",\"properties\":"
                    + "{\"from\":{\"$ref\":\"#/$defs/p\"},\"to\":{\"$ref\":\"#/$defs/p\"}},\"required\":[\"from\",\"to\"]}",
            "{\"from\": {\"x\": 1, \"y\": 2}, \"to\": {\"x\": -3, \"y\": 40}}"
        });
        c.put("pattern", new String[] {
            "JSON_SCHEMA",
            "{\"type\":\"object\",\"properties\":{\"phone\":{\"type\":\"string\","
                    + "\"pattern\":\"^[0-9]{3}-[0-9]{4}$\"}},\"required\":[\"phone\"]}",
            "{\"phone\": \"555-1234\"}"
        });
        c.put("nullable", new String[] {
            "JSON_SCHEMA",
            "{\"type\":\"object\",\"properties\":{\"title\":{\"type\":\"string\"},"
                    + "\"sub\":{\"anyOf\":[{\"type\":\"string\"},{\"type\":\"null\"}]}},\"required\":[\"title\",\"sub\"]}",
            "{\"title\": \"Dune\", \"sub\": null}"
        });
        c.put("numbers", new String[] {
            "JSON_SCHEMA",
            "{\"type\":\"object\",\"properties\":{\"count\":{\"type\":\"integer\","
                    + "\"minimum\":1,\"maximum\":9},\"ratio\":{\"type\":\"number\"},\"ok\":{\"type\":\"boolean\"}},"
                    + "\"required\":[\"count\",\"ratio\",\"ok\"]}",
            "{\"count\": 7, \"ratio\": 0.25, \"ok\": true}"
        });
        c.put("pydantic", new String[] {
            "JSON_SCHEMA",
            "{\"$defs\":{\"City\":{\"properties\":{\"name\":{\"maxLength\":24,"
                    + "\"title\":\"Name\",\"type\":\"string\"},\"country\":{\"maxLength\":24,\"title\":\"Country\",\"type\":\"string\"},"
                    + "\"population\":{\"maximum\":100000000,\"minimum\":0,\"title\":\"Population\",\"type\":\"integer\"}},"
                    + "\"required\":[\"name\",\"country\",\"population\"],\"title\":\"City\",\"type\":\"object\",\"additionalProperties\":false}},"
                    + "\"properties\":{\"cities\":{\"items\":{\"$ref\":\"#/$defs/City\"},\"maxItems\":2,\"minItems\":1,\"title\":\"Cities\","
                    + "\"type\":\"array\"}},\"required\":[\"cities\"],\"title\":\"Cities\",\"type\":\"object\",\"additionalProperties\":false}",
            "{\"cities\": [{\"name\": \"Paris\", \"country\": \"France\", \"population\": 2100000}]}"
        });
        c.put("regex", new String[] {"REGEX", "[0-9]{3}-[0-9]{4}", "555-1234"});
        c.put("lark", new String[] {"LARK", "start: \"yes\" | \"no\" | \"maybe\"", "maybe"});
        return c;
    }

    public static void main(String[] args) throws Exception {
        Path model = ProjectHome.get().resolve(flag(args, "--model", "models/smollm2-135m-instruct"));
        int compiles = Flags.positive("--compiles", flag(args, "--compiles", "200"));
        int walks = Flags.positive("--walks", flag(args, "--walks", "20"));
        int vocab = new ObjectMapper()
                .readTree(model.resolve("config.json").toFile())
                .path("vocab_size")
                .intValue();
        try (HfTokenizer hf = HfTokenizer.load(model);
                ConstraintTokenizer tokenizer = ConstraintTokenizer.create(
                        ConstraintVocabulary.fromTokenizerJson(model.resolve("tokenizer.json"), vocab),
                        hf.eosTokenIds(),
                        t -> hf.encode(t, false))) {
            ConstraintCompiler compiler = new ConstraintCompiler(tokenizer);
            int[] words = new int[(vocab + 31) / 32];
            System.out.println(
                    "| constraint | compile p50 ms | compile p99 ms | tokens | mask+consume p50 µs | p99 µs |");
            System.out.println("|---|---:|---:|---:|---:|---:|");
            for (var e : cases().entrySet()) {
                OutputConstraint spec = new OutputConstraint(
                        OutputConstraint.Kind.valueOf(e.getValue()[0]), e.getValue()[1], e.getKey());
                int[] tokens = hf.encode(e.getValue()[2], false);
                long[] compileNs = new long[compiles];
                for (int i = 0; i < compiles; i++) {
                    long t0 = System.nanoTime();
                    TokenConstraint c = compiler.compile(spec);
                    compileNs[i] = System.nanoTime() - t0;
                    c.close();
                }
                long[] stepNs = new long[walks * (tokens.length + 1)];
                int n = 0;
                for (int w = 0; w < walks; w++) {
                    try (TokenConstraint c = compiler.compile(spec)) {
                        for (int t : tokens) {
                            long t0 = System.nanoTime();
                            if (!c.allowedTokens(words)) {
                                throw new IllegalStateException(e.getKey() + ": the valid output was refused");
                            }
                            c.consume(t);
                            stepNs[n++] = System.nanoTime() - t0;
                        }
                    }
                }
                System.out.printf(
                        Locale.ROOT,
                        "| %s | %.2f | %.2f | %d | %.1f | %.1f |%n",
                        e.getKey(),
                        pct(compileNs, compiles, 0.5) / 1e6,
                        pct(compileNs, compiles, 0.99) / 1e6,
                        tokens.length,
                        pct(stepNs, n, 0.5) / 1e3,
                        pct(stepNs, n, 0.99) / 1e3);
            }
        }
    }

    private static String flag(String[] args, String name, String dflt) {
        for (int i = 0; i + 1 < args.length; i++) {
            if (args[i].equals(name)) {
                return args[i + 1];
            }
        }
        return dflt;
    }

    private static double pct(long[] v, int n, double q) {
        long[] s = Arrays.copyOf(v, n);
        Arrays.sort(s);
        return s[Math.min(n - 1, (int) Math.floor(q * n))];
    }
}
