package dev.mlxring.ingress.http;

import java.nio.charset.StandardCharsets;
import java.util.ArrayList;
import java.util.List;
import java.util.SplittableRandom;

/**
 * A seeded generator of request bodies for the codec and HTTP fuzz tests: a valid request (the
 * route's minimal body, or sometimes its {@link Api#full} body with one key set to null) with up
 * to three fields replaced by random JSON of every type (huge and negative numbers, 1e308, lone
 * surrogates, deep nesting, empty and long strings, wrong shapes, null-valued keys, the
 * compatibility shapes: integer logprobs, tool choices, strict tools, output formats), then
 * sometimes damaged as raw text (truncated, a duplicated key, NaN/Infinity, bare garbage). Text
 * is written by hand, not by a JSON library, so that it can hold what a library would refuse to
 * write. Same seed, same bodies. {@link #nullVariants} lists, for a route's full body, every
 * object key set to null and left out.
 */
public final class FuzzBodies {
    static final String[] FIELDS = {
        "model",
        "messages",
        "prompt",
        "max_tokens",
        "max_completion_tokens",
        "temperature",
        "top_p",
        "top_k",
        "min_p",
        "stop",
        "logit_bias",
        "seed",
        "n",
        "stream",
        "stream_options",
        "logprobs",
        "top_logprobs",
        "tools",
        "tool_choice",
        "response_format",
        "user",
        "presence_penalty",
        "frequency_penalty",
        "repetition_penalty",
        "repetition_context_size",
        "xtc_probability",
        "xtc_threshold",
        "chat_template_kwargs",
        "unknown_field",
        // Anthropic Messages and OpenAI Responses fields
        "system",
        "stop_sequences",
        "metadata",
        "thinking",
        "input",
        "instructions",
        "max_output_tokens",
        "previous_response_id",
        "store",
        // constraints (structured outputs, tool choice), and the legacy integer logprobs
        "parallel_tool_calls",
        "output_format",
        "output_config",
        "text",
        "max_tool_calls",
        "structured_outputs",
        "guided_json",
        "guided_regex",
        "guided_choice",
        "guided_grammar"
    };

    /**
     * The four request shapes, each with a valid minimal body ({@code base}, its fields without
     * braces) and a valid full one ({@code full}): every optional field the route reads given,
     * nested ones too (messages and their keys, content parts, tools, tool calls and results,
     * stream_options), as accepted values.
     */
    public enum Api {
        CHAT("/v1/chat/completions", "\"messages\":[{\"role\":\"user\",\"content\":\"Say hi\"}]", """
                {"model":"default_model","messages":[
                  {"role":"system","content":"Be brief.","name":"rules"},
                  {"role":"user","content":[{"type":"text","text":"Weather in Paris?"}],"name":"ada"},
                  {"role":"assistant","content":"","refusal":null,"audio":null,"function_call":null,
                   "annotations":[],"tool_calls":[{"id":"call_1","type":"function",
                   "function":{"name":"get_weather","arguments":"{\\"city\\": \\"Paris\\"}"}}]},
                  {"role":"tool","content":"sunny","tool_call_id":"call_1","name":"get_weather"},
                  {"role":"assistant","content":"It is sunny.","refusal":null,"audio":null,"function_call":null,
                   "tool_calls":null},
                  {"role":"developer","content":"Answer in English."},
                  {"role":"user","content":"Thanks"}],
                 "max_tokens":4,"max_completion_tokens":4,"stream":true,"stream_options":{"include_usage":true},
                 "temperature":0.5,"top_p":0.9,"top_k":40,"min_p":0.05,"xtc_probability":0.0,"xtc_threshold":0.1,
                 "repetition_penalty":1.1,"repetition_context_size":20,"presence_penalty":0.1,"frequency_penalty":0.1,
                 "logit_bias":{"5":1},"seed":7,"logprobs":true,"top_logprobs":2,"stop":["\\n\\n"],
                 "chat_template_kwargs":{"enable_thinking":false},
                 "tools":[{"type":"function","function":{"name":"get_weather","description":"The weather",
                   "parameters":{"type":"object","properties":{"city":{"type":"string"}}},"strict":false}}],
                 "tool_choice":"auto","parallel_tool_calls":true,"response_format":{"type":"text"},"user":"u","n":1}
                """),
        COMPLETIONS("/v1/completions", "\"prompt\":\"Say hi\"", """
                {"model":"default_model","prompt":"Say hi","max_tokens":4,"stream":true,
                 "stream_options":{"include_usage":true},"temperature":0.5,"top_p":0.9,"top_k":40,"min_p":0.05,
                 "repetition_penalty":1.1,"presence_penalty":0.1,"frequency_penalty":0.1,"logit_bias":{"5":1},
                 "seed":7,"logprobs":3,"stop":"\\n\\n","echo":false,"suffix":"","best_of":1,"user":"u","n":1}
                """),
        MESSAGES(
                "/v1/messages",
                "\"model\":\"default_model\",\"messages\":[{\"role\":\"user\",\"content\":"
                        + "[{\"type\":\"text\",\"text\":\"Say hi\"}]}]",
                """
                {"model":"default_model","max_tokens":4,"stream":true,
                 "system":[{"type":"text","text":"Be brief.","cache_control":{"type":"ephemeral"}}],
                 "messages":[
                  {"role":"user","content":[{"type":"text","text":"Weather in Paris?","cache_control":null}]},
                  {"role":"assistant","content":[{"type":"thinking","thinking":"Look it up.","signature":""},
                   {"type":"text","text":"Checking."},
                   {"type":"tool_use","id":"toolu_1","name":"get_weather","input":{"city":"Paris"}}]},
                  {"role":"user","content":[{"type":"tool_result","tool_use_id":"toolu_1","is_error":false,
                   "content":[{"type":"text","text":"sunny"}]},{"type":"text","text":"Thanks"}]}],
                 "stop_sequences":["\\n\\n"],"temperature":0.5,"top_p":0.9,"top_k":40,"metadata":{"user_id":"u"},
                 "thinking":{"type":"disabled"},
                 "tools":[{"name":"get_weather","description":"The weather",
                   "input_schema":{"type":"object","properties":{"city":{"type":"string"}}}}],
                 "tool_choice":{"type":"auto","disable_parallel_tool_use":false},"output_config":{"effort":"low"}}
                """),
        RESPONSES("/v1/responses", "\"input\":\"Say hi\"", """
                {"model":"default_model","instructions":"Be brief.","input":[
                  {"type":"message","role":"user","content":[{"type":"input_text","text":"Weather in Paris?"}]},
                  {"type":"reasoning","id":"rs_1","summary":[],"content":[{"type":"reasoning_text","text":"Look."}]},
                  {"type":"function_call","id":"fc_1","call_id":"call_1","name":"get_weather",
                   "arguments":"{\\"city\\":\\"Paris\\"}","status":"completed"},
                  {"type":"function_call_output","call_id":"call_1","output":"sunny"},
                  {"type":"message","role":"assistant","content":[{"type":"output_text","text":"Sunny.",
                   "annotations":[]}]},
                  {"role":"user","content":"Thanks"}],
                 "max_output_tokens":4,"stream":true,"store":false,"temperature":0.5,"top_p":0.9,"top_k":40,
                 "metadata":{"k":"v"},"reasoning":{"effort":"none"},"text":{"format":{"type":"text"}},
                 "tools":[{"type":"function","name":"get_weather","description":"The weather",
                   "parameters":{"type":"object","properties":{"city":{"type":"string"}}},"strict":false}],
                 "tool_choice":"auto","parallel_tool_calls":true,"truncation":"disabled","background":false,
                 "include":[],"user":"u","n":1,"top_logprobs":0}
                """);

        final String path;
        final String base;
        /** Every optional field the route reads, given with an accepted value. */
        public final String full;

        Api(String path, String base, String full) {
            this.path = path;
            this.base = base;
            this.full = full;
        }
    }

    /** Keys whose values are data (JSON schemas, call arguments, metadata), not request fields. */
    private static final java.util.Set<String> OPAQUE =
            java.util.Set.of("parameters", "input_schema", "input", "metadata");

    private static final com.fasterxml.jackson.databind.ObjectMapper JSON =
            new com.fasterxml.jackson.databind.ObjectMapper();

    /**
     * One object key of a full body ({@code path}, e.g. {@code messages[2].tool_calls}) set to
     * null ({@code nulled}) and left out ({@code removed}).
     */
    public record NullVariant(String path, String nulled, String removed) {}

    /** For every object key of {@code api}'s full body (data values not entered), its null variant. */
    public static List<NullVariant> nullVariants(Api api) {
        com.fasterxml.jackson.databind.JsonNode full;
        try {
            full = JSON.readTree(api.full);
        } catch (java.io.IOException e) {
            throw new IllegalStateException(e);
        }
        List<NullVariant> out = new ArrayList<>();
        collect(full, full, "", out);
        return out;
    }

    private static void collect(
            com.fasterxml.jackson.databind.JsonNode root,
            com.fasterxml.jackson.databind.JsonNode node,
            String path,
            List<NullVariant> out) {
        if (node.isArray()) {
            for (int i = 0; i < node.size(); i++) {
                collect(root, node.get(i), path + "[" + i + "]", out);
            }
        } else if (node.isObject()) {
            List<String> keys = new ArrayList<>();
            node.fieldNames().forEachRemaining(keys::add);
            for (String key : keys) {
                com.fasterxml.jackson.databind.node.ObjectNode o =
                        (com.fasterxml.jackson.databind.node.ObjectNode) node;
                com.fasterxml.jackson.databind.JsonNode value = o.get(key);
                String at = path.isEmpty() ? key : path + "." + key;
                o.putNull(key);
                String nulled = root.toString();
                o.remove(key);
                String removed = root.toString();
                o.set(key, value); // back where it was (ObjectNode keeps insertion order: moved last, harmless)
                out.add(new NullVariant(at, nulled, removed));
                if (!OPAQUE.contains(key)) {
                    collect(root, value, at, out);
                }
            }
        }
    }

    private final SplittableRandom rnd;

    public FuzzBodies(long seed) {
        this.rnd = new SplittableRandom(seed);
    }

    /** One chat ({@code chat}) or text completion body. */
    public byte[] next(boolean chat) {
        return next(chat ? Api.CHAT : Api.COMPLETIONS);
    }

    /** One body for {@code api}. */
    byte[] next(Api api) {
        List<String[]> fields = new ArrayList<>();
        if (rnd.nextInt(6) == 0) {
            // the full body with one of its keys null (the others as given): null means absent
            List<NullVariant> variants = nullVariants(api);
            String nulled = variants.get(rnd.nextInt(variants.size())).nulled();
            fields.add(new String[] {"", nulled.substring(1, nulled.length() - 1)});
        } else {
            fields.add(new String[] {"", api.base}); // the base fields, written as they are
        }
        fields.add(new String[] {
            api == Api.RESPONSES ? "max_output_tokens" : "max_tokens", Integer.toString(1 + rnd.nextInt(8))
        });
        if (rnd.nextInt(3) == 0) {
            fields.add(new String[] {"stream", "true"});
        }
        int mutations = rnd.nextInt(4); // a quarter of the bodies stay valid
        for (int i = 0; i < mutations; i++) {
            String name = FIELDS[rnd.nextInt(FIELDS.length)];
            String value = rnd.nextInt(4) == 0 ? shaped(name) : value(0);
            fields.removeIf(f -> f[0].equals(name) && rnd.nextInt(5) > 0); // sometimes a duplicate key
            fields.add(new String[] {name, value});
        }
        StringBuilder sb = new StringBuilder("{");
        for (int i = 0; i < fields.size(); i++) {
            sb.append(i == 0 ? "" : ",");
            if (fields.get(i)[0].isEmpty()) {
                sb.append(fields.get(i)[1]);
            } else {
                sb.append(string(fields.get(i)[0])).append(':').append(fields.get(i)[1]);
            }
        }
        sb.append('}');
        String text = damage(sb.toString());
        return text.getBytes(StandardCharsets.UTF_8);
    }

    /** A value near the field's real shape, so validation deeper than the type check is reached. */
    private String shaped(String field) {
        return switch (field) {
            case "messages" ->
                "[{\"role\":" + pick("\"user\"", "\"tool\"", "\"wizard\"", "1", "null") + ",\"content\":"
                        + pick(
                                value(2),
                                "\"hi\"",
                                "null",
                                "[{\"type\":\"text\",\"text\":" + value(3) + "}]",
                                "[{\"type\":\"text\",\"text\":\"hi\",\"cache_control\":null}]",
                                "[{\"type\":\"image_url\"}]")
                        + pick(
                                "",
                                ",\"name\":null",
                                ",\"tool_call_id\":null",
                                ",\"tool_calls\":null",
                                ",\"refusal\":null,\"audio\":null,\"function_call\":null,\"tool_calls\":null",
                                ",\"x\":null",
                                ",\"name\":" + value(2))
                        + "}]";
            case "logprobs" -> pick("true", "false", "0", "1", "5", "6", "-1", "2.5", "null", value(1));
            case "max_tokens", "max_completion_tokens", "max_output_tokens" ->
                pick("1000000000000", "99999999999999999999", "8191", "8192", "null", number());
            case "parallel_tool_calls" -> pick("true", "false", "null", value(1));
            case "output_format", "output_config" ->
                pick(
                        "null",
                        "{}",
                        "{\"format\":null}",
                        "{\"effort\":\"low\"}",
                        "{\"type\":\"json_schema\",\"schema\":{}}",
                        "{\"format\":{\"type\":\"json_schema\"}}",
                        value(1));
            case "text" ->
                "{\"format\":"
                        + pick(
                                "null",
                                "{\"type\":\"text\"}",
                                "{\"type\":\"json_object\"}",
                                "{\"type\":\"json_schema\",\"name\":\"x\",\"schema\":{}}",
                                "{\"type\":null}",
                                value(1))
                        + "}";
            case "stop" ->
                "["
                        + join(
                                rnd.nextInt(20),
                                () -> pick(
                                        "\"\"",
                                        "\"\\ud800\"",
                                        "\"ok\"",
                                        value(2),
                                        string("x".repeat(rnd.nextInt(2000)))))
                        + "]";
            case "logit_bias" ->
                "{"
                        + join(
                                rnd.nextInt(5),
                                () -> string(pick("5", "-1", "99999999", "x", "1e3")) + ":"
                                        + pick("1", "-100", "101", "1e308", "\"a\""))
                        + "}";
            case "tools" ->
                "["
                        + join(
                                rnd.nextInt(4),
                                () -> pick(
                                        value(2),
                                        "{\"type\":\"function\",\"function\":"
                                                + "{\"name\":" + pick("\"f\"", "\"a b\"", "1", "\"\"", "null")
                                                + ",\"parameters\":"
                                                + pick("{}", "[]", "null", value(2), "{\"type\":\"object\"}")
                                                + ",\"description\":"
                                                + pick("null", "\"d\"", value(1)) + ",\"strict\":"
                                                + pick("null", "true", "false", value(1)) + "}}",
                                        "{\"type\":\"function\",\"name\":\"f\",\"strict\":"
                                                + pick("null", "true", "false") + "}",
                                        "{\"name\":\"f\",\"input_schema\":"
                                                + pick("null", "{}", "{\"type\":\"object\"}") + "}"))
                        + "]";
            case "tool_choice" ->
                pick(
                        "\"auto\"",
                        "\"none\"",
                        "\"required\"",
                        "\"x\"",
                        "null",
                        "{\"type\":\"function\",\"function\":{\"name\":\"f\"}}",
                        "{\"type\":\"function\",\"name\":\"f\"}",
                        "{\"type\":" + pick("\"auto\"", "\"any\"", "\"tool\"", "\"none\"", "null") + ",\"name\":"
                                + pick("\"f\"", "null") + ",\"disable_parallel_tool_use\":"
                                + pick("true", "false", "null")
                                + "}",
                        value(1));
            case "response_format" ->
                pick(
                        "{\"type\":" + pick("\"text\"", "\"json_object\"", "1", "null") + "}",
                        "{\"type\":\"json_schema\",\"json_schema\":"
                                + pick(
                                        "null",
                                        "{}",
                                        value(1),
                                        "{\"name\":\"x\",\"strict\":" + pick("true", "false", "null", "1")
                                                + ",\"schema\":" + schema() + "}")
                                + "}");
            case "structured_outputs" ->
                "{"
                        + pick(
                                "\"json\":" + schema(),
                                "\"json\":" + string(schema()),
                                "\"regex\":" + regex(),
                                "\"choice\":" + pick("[]", "[\"a\",\"b.c\"]", "[1]", value(2)),
                                "\"grammar\":" + grammar(),
                                "\"json_object\":" + pick("true", "false", "1"),
                                "\"whitespace_pattern\":\" \"",
                                "\"regex\":\"[0-9]+\",\"choice\":[\"a\"]",
                                "\"json\":null")
                        + "}";
            case "guided_json" -> pick(schema(), string(schema()));
            case "guided_regex" -> regex();
            case "guided_choice" -> pick("[\"yes\",\"no\"]", "[]", "[\"\"]", value(2));
            case "guided_grammar" -> grammar();
            case "stream_options" -> "{\"include_usage\":" + pick("true", "1", "null") + pick("", ",\"x\":null") + "}";
            default -> number();
        };
    }

    /** A JSON schema: valid, outside the enforced subset, unresolvable, malformed, or deep. */
    private String schema() {
        return pick(
                "{\"type\":\"object\",\"properties\":{\"a\":{\"type\":\"integer\",\"minimum\":0}},\"required\":[\"a\"]}",
                "{\"type\":\"array\",\"items\":{\"enum\":[\"x\",\"y\"]},\"maxItems\":3}",
                "{\"type\":\"strin\"}",
                "{\"type\":\"array\",\"uniqueItems\":true}",
                "{\"$ref\":\"#/$defs/none\"}",
                "{\"x-guidance\":{}}",
                "{\"not\":{}}",
                "[]",
                "true",
                "{\"properties\":{\"a\":" + "{\"items\":".repeat(70) + "{}" + "}".repeat(70) + "}}",
                "{\"type\":\"string\",\"pattern\":\"(\"}",
                value(2));
    }

    private String regex() {
        return pick("\"[0-9]{3}-[0-9]{4}\"", "\"(\"", "\"\"", "\"x*\"", "\"\\\\p{Nope}\"", value(1));
    }

    private String grammar() {
        return pick("\"start: \\\"a\\\" | \\\"b\\\"\"", "\"start: undefined\"", "\"start:\"", "\"\"", value(1));
    }

    private String value(int depth) {
        int kind = depth > 4 ? rnd.nextInt(5) : rnd.nextInt(8);
        return switch (kind) {
            case 0 -> "null";
            case 1 -> rnd.nextBoolean() ? "true" : "false";
            case 2, 3 -> number();
            case 4 -> randomString();
            case 5 -> "[" + join(rnd.nextInt(4), () -> value(depth + 1)) + "]";
            case 6 -> "{" + join(rnd.nextInt(4), () -> randomString() + ":" + value(depth + 1)) + "}";
            default -> rnd.nextInt(10) == 0 ? "[".repeat(200) + "]".repeat(200) : randomString();
        };
    }

    private String number() {
        return pick(
                "0",
                "1",
                "-1",
                "2",
                "7",
                "0.5",
                "-0.0",
                "1e308",
                "-1e308",
                "1e400",
                "4.9e-324",
                "9223372036854775807",
                "9223372036854775808",
                "-9223372036854775809",
                "2147483648",
                "100000",
                "1.5",
                "3.0e0",
                "12345678901234567890123456789");
    }

    private String randomString() {
        return switch (rnd.nextInt(8)) {
            case 0 -> "\"\"";
            case 1 -> "\"\\ud800\"";
            case 2 -> "\"a\\udc00b\"";
            case 3 -> string("x".repeat(rnd.nextInt(5000)));
            case 4 -> "\"\\u0000\\n\\t\\\"\"";
            case 5 -> "\"héllo 🙂\"";
            default -> string("s" + rnd.nextInt(100));
        };
    }

    /** Raw-text damage a client can send: cut short, NaN/Infinity, garbage. */
    private String damage(String json) {
        return switch (rnd.nextInt(12)) {
            case 0 -> json.substring(0, rnd.nextInt(json.length()));
            case 1 ->
                json.replaceFirst("\"max_tokens\":\\d+", "\"max_tokens\":" + pick("NaN", "Infinity", "-Infinity"));
            case 2 -> pick("", "null", "[]", "\"text\"", "42", "{", "}", "{\"a\":}", json + json);
            default -> json;
        };
    }

    private String join(int n, java.util.function.Supplier<String> item) {
        StringBuilder sb = new StringBuilder();
        for (int i = 0; i < n; i++) {
            sb.append(i == 0 ? "" : ",").append(item.get());
        }
        return sb.toString();
    }

    private String pick(String... options) {
        return options[rnd.nextInt(options.length)];
    }

    private static String string(String s) {
        return "\"" + s + "\"";
    }
}
