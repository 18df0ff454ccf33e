package dev.mlxring.ingress.http;

import java.nio.charset.StandardCharsets;
import java.util.ArrayList;
import java.util.List;
import java.util.SplittableRandom;

/**
 * A seeded generator of request bodies for the codec and HTTP fuzz tests: a valid chat or
 * completion request with up to three fields replaced by random JSON of every type (huge and
 * negative numbers, 1e308, lone surrogates, deep nesting, empty and long strings, wrong shapes),
 * then sometimes damaged as raw text (truncated, a duplicated key, NaN/Infinity, bare garbage).
 * Text is written by hand, not by a JSON library, so that it can hold what a library would refuse
 * to write. Same seed, same bodies.
 */
final class FuzzBodies {
    static final String[] FIELDS = {"model", "messages", "prompt", "max_tokens", "max_completion_tokens",
        "temperature", "top_p", "top_k", "min_p", "stop", "logit_bias", "seed", "n", "stream", "stream_options",
        "logprobs", "top_logprobs", "tools", "tool_choice", "response_format", "user", "presence_penalty",
        "frequency_penalty", "repetition_penalty", "repetition_context_size", "xtc_probability", "xtc_threshold",
        "chat_template_kwargs", "unknown_field"};

    private final SplittableRandom rnd;

    FuzzBodies(long seed) {
        this.rnd = new SplittableRandom(seed);
    }

    /** One body; {@code chat} picks the base request's shape. */
    byte[] next(boolean chat) {
        List<String[]> fields = new ArrayList<>();
        if (chat) {
            fields.add(new String[] {"messages", "[{\"role\":\"user\",\"content\":\"Say hi\"}]"});
        } else {
            fields.add(new String[] {"prompt", "\"Say hi\""});
        }
        fields.add(new String[] {"max_tokens", Integer.toString(1 + rnd.nextInt(8))});
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
            sb.append(i == 0 ? "" : ",").append(string(fields.get(i)[0])).append(':').append(fields.get(i)[1]);
        }
        sb.append('}');
        String text = damage(sb.toString());
        return text.getBytes(StandardCharsets.UTF_8);
    }

    /** A value near the field's real shape, so validation deeper than the type check is reached. */
    private String shaped(String field) {
        return switch (field) {
            case "messages" -> "[{\"role\":" + pick("\"user\"", "\"tool\"", "\"wizard\"", "1", "null") + ",\"content\":"
                    + pick(value(2), "\"hi\"", "[{\"type\":\"text\",\"text\":" + value(3) + "}]",
                            "[{\"type\":\"image_url\"}]") + "}]";
            case "stop" -> "[" + join(rnd.nextInt(20), () -> pick("\"\"", "\"\\ud800\"", "\"ok\"", value(2),
                    string("x".repeat(rnd.nextInt(2000))))) + "]";
            case "logit_bias" -> "{" + join(rnd.nextInt(5), () -> string(pick("5", "-1", "99999999", "x", "1e3"))
                    + ":" + pick("1", "-100", "101", "1e308", "\"a\"")) + "}";
            case "tools" -> "[" + join(rnd.nextInt(4), () -> pick(value(2), "{\"type\":\"function\",\"function\":"
                    + "{\"name\":" + pick("\"f\"", "\"a b\"", "1", "\"\"") + ",\"parameters\":"
                    + pick("{}", "[]", value(2), "{\"type\":\"object\"}") + "}}")) + "]";
            case "tool_choice" -> pick("\"auto\"", "\"none\"", "\"required\"", "\"x\"",
                    "{\"type\":\"function\",\"function\":{\"name\":\"f\"}}", value(1));
            case "response_format" -> "{\"type\":" + pick("\"text\"", "\"json_object\"", "1", "null") + "}";
            case "stream_options" -> "{\"include_usage\":" + pick("true", "1", "null") + "}";
            default -> number();
        };
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
        return pick("0", "1", "-1", "2", "7", "0.5", "-0.0", "1e308", "-1e308", "1e400", "4.9e-324",
                "9223372036854775807", "9223372036854775808", "-9223372036854775809", "2147483648", "100000",
                "1.5", "3.0e0", "12345678901234567890123456789");
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
            case 1 -> json.replaceFirst("\"max_tokens\":\\d+", "\"max_tokens\":" + pick("NaN", "Infinity", "-Infinity"));
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
