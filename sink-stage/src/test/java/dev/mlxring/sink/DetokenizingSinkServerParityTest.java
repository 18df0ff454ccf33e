package dev.mlxring.sink;

import static org.junit.jupiter.api.Assertions.assertArrayEquals;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertNotNull;
import static org.junit.jupiter.api.Assertions.assertNull;
import static org.junit.jupiter.api.Assertions.assertTrue;

import com.fasterxml.jackson.databind.JsonNode;
import dev.mlxring.pipeline.ToolCall;
import dev.mlxring.sink.tools.ToolCallParser;
import dev.mlxring.sink.tools.ToolCallParsers;
import dev.mlxring.tokenizer.HfTokenizer;
import java.io.IOException;
import java.math.BigInteger;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

/**
 * The whole sink against a replay of mlx_lm.server's text path (detokenizer, token-level stop
 * sequences, initial reasoning state, TextStateMachine split/flush/discard, tool-call collection
 * and parsing, the tool_calls finish reason), using mlx-lm's own classes: the default model, the
 * default model's tokenizer with {@code <think>}/{@code </think>} added (mlx-lm then infers
 * thinking), and with {@code <tool_call>}/{@code </tool_call>} and a chat template that names
 * them (mlx-lm then infers json_tools). Stop strings here occur with their canonical
 * tokenization, where mlx_lm.server and OpenAI semantics agree; per-token text, reasoning and
 * tool calls (name, arguments with Python's types, the model's id) and the finish reason must be
 * identical, including at EOS, where both discard the held-back text.
 */
class DetokenizingSinkServerParityTest {
    @TempDir
    static Path work;

    record Case(String name, int[] prompt, List<String> stop, int[] gen, String end) {}

    /** One response: its text, reasoning and the tool calls it completed. */
    record Response(String text, String reasoning, List<Object> toolCalls) {}

    @Test
    void toolCallingModel() throws IOException {
        Path dir = Path.of(
                Oracle.buildFixtures(work.resolve("fixtures")).get("tools").asText());
        try (HfTokenizer tok = Oracle.load(dir)) {
            // The fixture's template is tokenizer_config.json's chat_template (what mlx-lm's
            // tokenizer.chat_template reads there; the fixture has no chat_template.jinja).
            String template = Oracle.JSON
                    .readTree(dir.resolve("tokenizer_config.json").toFile())
                    .path("chat_template")
                    .asText();
            assertTrue(template.contains("<tool_call>"), "the fixture's template names the tool markers");
            assertEquals(java.util.Optional.of("json_tools"), ToolCallParsers.inferType(template, tok));
            ToolCallParser parser = ToolCallParsers.infer(template, tok).orElseThrow();
            DetokenizingSinks sinks = DetokenizingSinks.inferred(tok, s -> tok.encode(s, false))
                    .toolParser(parser)
                    .build();
            int[] prompt = tok.encode("<|im_start|>user\nWeather in Paris?<|im_end|>\n<|im_start|>assistant\n", false);
            String call = "<tool_call>\n{\"name\": \"get_weather\", \"arguments\": {\"city\": \"Paris\", \"days\": 3, "
                    + "\"metric\": true, \"ratio\": 0.5, \"tags\": null}}\n</tool_call>";
            List<int[]> gens = new ArrayList<>();
            // 0 calls.
            gens.add(tok.encode("Sure, the weather in Paris is fine. Done.", false));
            // 1 call, text before it.
            gens.add(tok.encode("Let me check." + call, false));
            // 2 calls, non-ASCII and nested arguments, text after.
            gens.add(tok.encode(
                    call + "\n<tool_call>\n{\"name\": \"b\", \"arguments\": {\"x\": [1, 2.5, null, \"日本 😀\"], "
                            + "\"big\": 123456789012345678901234567890, \"e\": 1e-7, \"n\": {\"k\": {}}}}\n</tool_call>Done.",
                    false));
            // Malformed JSON (dropped), then a good call.
            gens.add(tok.encode(
                    "<tool_call>\n{\"name\": \"a\", \"arguments\": {\"x\": }\n</tool_call>then " + call, false));
            // A list of calls with an id, and an empty call.
            gens.add(tok.encode(
                    "<tool_call>[{\"name\": \"a\", \"arguments\": {\"q\": \"x\"}, \"id\": \"call_1\"}, "
                            + "{\"name\": \"b\", \"arguments\": \"s\", \"id\": \"\"}]</tool_call><tool_call></tool_call>ok",
                    false));
            // Cut off mid-call (at the token limit or by EOS).
            gens.add(tok.encode(
                    "Checking.<tool_call>\n{\"name\": \"get_weather\", \"arguments\": {\"city\": \"Par", false));
            // A start-marker prefix held back at the end (discarded at EOS, flushed at the limit).
            gens.add(tok.encode("Almost done <tool_", false));
            // A complete call left open (no end marker).
            gens.add(tok.encode("<tool_call>{\"name\": \"f\", \"arguments\": {}}", false));
            // Markers split across tokens (not the added tokens' canonical encoding).
            gens.add(concat(
                    tok.encode("A<tool", false),
                    tok.encode("_call>{\"name\": \"f\", \"arguments\": [1]}</", false),
                    tok.encode("tool_call>B", false)));
            List<List<String>> stops = List.of(
                    List.of(),
                    List.of("Done"),
                    List.of("</tool_call>"),
                    List.of("<tool_call>"),
                    List.of("Paris"),
                    List.of("then"));
            List<Case> cases = new ArrayList<>();
            for (int[] g : gens) {
                for (List<String> st : stops) {
                    for (String end : List.of("length", "eos")) {
                        cases.add(new Case(tok.decode(g, false) + " | stop " + st + " | " + end, prompt, st, g, end));
                    }
                }
            }
            JsonNode out = check(tok, sinks, cases);
            JsonNode meta = out.get("meta");
            assertEquals("<tool_call>", meta.get("tool_call_start").asText());
            assertEquals("</tool_call>", meta.get("tool_call_end").asText());
            assertEquals("json_tools", meta.get("tool_parser_type").asText());
            int calls = 0;
            int twoCalls = 0;
            int errors = 0;
            int toolFinish = 0;
            for (JsonNode c : out.get("cases")) {
                JsonNode mlx = c.get("mlx");
                int n = mlx.get("final_tool_calls").size();
                for (JsonNode r : mlx.get("responses")) {
                    n += r.get("tool_calls").size();
                }
                calls += n > 0 ? 1 : 0;
                twoCalls += n >= 2 ? 1 : 0;
                errors += mlx.get("tool_errors").asInt() > 0 ? 1 : 0;
                toolFinish += mlx.get("finish_reason").asText().equals("tool_calls") ? 1 : 0;
            }
            assertTrue(
                    calls > 0 && twoCalls > 0 && errors > 0 && toolFinish > 0,
                    "coverage: " + calls + " with calls, " + twoCalls + " with two, " + errors
                            + " with a parse failure, " + toolFinish + " finished with tool_calls");
        }
    }

    @Test
    void thinkingModel() {
        Path dir = Path.of(
                Oracle.buildFixtures(work.resolve("fixtures")).get("think").asText());
        try (HfTokenizer tok = Oracle.load(dir)) {
            DetokenizingSinks sinks = DetokenizingSinks.forTokenizer(tok, s -> tok.encode(s, false));
            String chat = "<|im_start|>user\nWhat is 2+2?<|im_end|>\n<|im_start|>assistant\n";
            int[] closedPrompt = tok.encode(chat, false);
            int[] openPrompt = tok.encode(chat + "<think>\n", false);
            int[] pastPrompt =
                    tok.encode(chat.replace("What", "<think>x</think>What") + "<think>\nok</think>\n", false);
            List<String> gens = List.of(
                    "<think>\nLet me think about 2+2.\n</think>\n\nThe answer is 4. 😀 日本語",
                    "I think 2+2=4.</think>The answer is **4**.\n\nUser: thanks",
                    "Plain answer < and > with <thin and </thinking> and <think",
                    "<think>a</think>b<think>c</think>d",
                    "<think>unterminated reasoning with </thi");
            List<List<String>> stops = List.of(
                    List.of(),
                    List.of("User:"),
                    List.of("\n\n"),
                    List.of("4.", "STOP"),
                    List.of("</think>"),
                    List.of("<think>"),
                    List.of("thin"));
            List<Case> cases = new ArrayList<>();
            for (int[] prompt : List.of(closedPrompt, openPrompt, pastPrompt)) {
                for (String g : gens) {
                    for (List<String> st : stops) {
                        for (String end : List.of("length", "eos")) {
                            cases.add(new Case(
                                    g + " | stop " + st + " | " + end + " | prompt " + prompt.length,
                                    prompt,
                                    st,
                                    tok.encode(g, false),
                                    end));
                        }
                    }
                }
            }
            JsonNode out = check(tok, sinks, cases);
            JsonNode meta = out.get("meta");
            ThinkMarkers t = sinks.thinkMarkers();
            assertNotNull(t);
            assertEquals(meta.get("think_start").asText(), t.start());
            assertEquals(meta.get("think_end").asText(), t.end());
            assertArrayEquals(ints(meta.get("think_start_tokens")), t.startIds());
            assertArrayEquals(ints(meta.get("think_end_tokens")), t.endIds());
            assertEquals(
                    "reasoning",
                    out.get("cases")
                            .get(gens.size() * stops.size() * 2)
                            .get("mlx")
                            .get("initial_state")
                            .asText(),
                    "the open-think prompt starts in reasoning");
        }
    }

    @Test
    void defaultModel() {
        try (HfTokenizer tok = Oracle.load(Oracle.defaultModel())) {
            DetokenizingSinks sinks = DetokenizingSinks.forTokenizer(tok, s -> tok.encode(s, false));
            assertNull(sinks.thinkMarkers());
            assertEquals(DetokenizerKind.BPE, sinks.kind());
            int[] prompt = tok.encode("<|im_start|>user\nhi<|im_end|>\n<|im_start|>assistant\n", false);
            int sp = tok.tokenId("Ġ").getAsInt();
            List<Case> cases = new ArrayList<>();
            List<int[]> gens = new ArrayList<>();
            gens.add(tok.encode("Hello! How can I help you today?\n\nUser: nothing", false));
            gens.add(tok.encode("def f(x):\n    return x ** 2\n\n# done ###", false));
            gens.add(tok.encode("日本語のテキスト 😀 and 👩‍💻 end", false));
            // A lone space token right before the stop string and right before the end.
            int[] hello = tok.encode("Hello", false);
            int[] user = tok.encode("User:", false);
            gens.add(concat(hello, new int[] {sp}, user, tok.encode(" more", false)));
            gens.add(concat(hello, new int[] {sp}));
            gens.add(concat(hello, new int[] {sp, sp}));
            for (int[] g : gens) {
                for (List<String> st : List.of(
                        List.<String>of(),
                        List.of("User:"),
                        List.of("\n\n"),
                        List.of("###"),
                        List.of("😀"),
                        List.of(" 😀"),
                        List.of("ok", "?"),
                        List.of("Hello"))) {
                    for (String end : List.of("length", "eos")) {
                        cases.add(new Case(tok.decode(g, false) + " | stop " + st + " | " + end, prompt, st, g, end));
                    }
                }
            }
            check(tok, sinks, cases);
        }
    }

    private static JsonNode check(HfTokenizer tok, DetokenizingSinks sinks, List<Case> cases) {
        Map<String, Object> spec = new LinkedHashMap<>();
        spec.put("model", tok.tokenizerFile().getParent().toString());
        spec.put(
                "cases",
                cases.stream()
                        .map(c -> Map.of(
                                "prompt",
                                c.prompt(),
                                "stop",
                                c.stop(),
                                "gen",
                                c.gen(),
                                "end",
                                c.end(),
                                "tools",
                                List.of()))
                        .toList());
        JsonNode out = Oracle.run("--server", spec, work);
        List<String> problems = new ArrayList<>();
        int agreeWithServer = 0;
        int textStops = 0;
        int tokenStops = 0;
        int eosDiscards = 0;
        for (int k = 0; k < cases.size(); k++) {
            Case c = cases.get(k);
            JsonNode openai = out.get("cases").get(k).get("openai");
            JsonNode mlx = out.get("cases").get(k).get("mlx");
            SinkRun ours = SinkRun.run(
                    sinks.open(SinkRun.plan(c.prompt(), c.stop())), c.end().equals("eos") ? "stop" : "length", c.gen());
            List<Response> o = responses(ours, c);
            String where = "case " + k + " " + DetokenizerParityTest.quote(c.name());

            // 1. Exactly mlx-lm's machinery with OpenAI stop semantics, response for response.
            List<String> diff = compare(o, openai);
            if (!ours.finishReason.equals(openai.get("finish_reason").asText())) {
                diff.add("finish reason: expected "
                        + openai.get("finish_reason").asText() + ", sink " + ours.finishReason);
            }
            if (!diff.isEmpty()) {
                problems.add(where + " vs openai replay: " + diff);
                continue;
            }
            // 2. mlx_lm.server itself: identical unless a stop string matched in the text only
            //    (mlx-lm strips it and goes on).
            JsonNode eosDiscarded = c.end().equals("eos") ? mlx.get("eos_discarded") : null;
            List<String> vsServer = compare(o, mlx);
            if (!ours.finishReason.equals(mlx.get("finish_reason").asText())) {
                vsServer.add(
                        "finish reason: expected " + mlx.get("finish_reason").asText() + ", sink " + ours.finishReason);
            }
            boolean mlxTokenStop = List.of("stop", "tool_calls")
                            .contains(mlx.get("finish_reason").asText())
                    && mlx.get("responses").size() <= c.gen().length;
            if (vsServer.isEmpty()) {
                agreeWithServer++;
                if (eosDiscarded != null
                        && !ours.stopped()
                        && !(eosDiscarded.get("text").asText()
                                        + eosDiscarded.get("reasoning").asText())
                                .isEmpty()) {
                    eosDiscards++;
                }
                if (mlxTokenStop) {
                    tokenStops++;
                }
            } else if (openai.get("text_stop").asBoolean() && !mlxTokenStop) {
                textStops++;
            } else {
                problems.add(where + " vs mlx_lm.server: " + vsServer);
            }
        }
        assertTrue(
                problems.isEmpty(),
                problems.size() + " problems in " + cases.size() + " cases:\n  "
                        + String.join("\n  ", problems.subList(0, Math.min(20, problems.size()))));
        assertTrue(tokenStops > 0, "no case stopped on a canonical stop sequence");
        assertTrue(eosDiscards > 0, "no case had held-back text at EOS");
        System.out.printf(
                "%d cases: %d identical to mlx_lm.server (%d of them stopped by a stop string, %d discarded "
                        + "held-back text at EOS), %d stopped on a text-only stop-string match (mlx_lm.server "
                        + "strips it and continues)%n",
                cases.size(), agreeWithServer, tokenStops, eosDiscards, textStops);
        return out;
    }

    /**
     * The sink's output grouped like the server's responses: one per token; on "length" the last
     * token's span and the finish() span form one response, on "eos" finish() is the EOS response.
     * The finish() span's tool calls (an open call parsed at the end) go to the last response.
     */
    private static List<Response> responses(SinkRun ours, Case c) {
        List<Response> o = new ArrayList<>();
        for (int i = 0; i < ours.texts.size(); i++) {
            o.add(new Response(ours.texts.get(i), ours.reasonings.get(i), typed(ours.toolCalls.get(i))));
        }
        if (ours.finishText != null && !(c.end().equals("length") && !o.isEmpty())) {
            o.add(new Response("", "", new ArrayList<>()));
        }
        if (!o.isEmpty()) {
            Response last = o.removeLast();
            List<Object> calls = new ArrayList<>(last.toolCalls());
            calls.addAll(typed(ours.finishToolCalls));
            o.add(new Response(
                    last.text() + (ours.finishText == null ? "" : ours.finishText),
                    last.reasoning() + (ours.finishReasoning == null ? "" : ours.finishReasoning),
                    calls));
        }
        return o;
    }

    /** The replay's responses, with the calls parsed after its loop added to the last one. */
    private static List<String> compare(List<Response> ours, JsonNode replay) {
        JsonNode expected = replay.get("responses");
        List<String> diff = new ArrayList<>();
        if (ours.size() != expected.size()) {
            diff.add("sink produced " + ours.size() + " responses, expected " + expected.size());
        }
        for (int i = 0; i < Math.min(ours.size(), expected.size()); i++) {
            JsonNode e = expected.get(i);
            String t = e.get("text").asText();
            String r = e.get("reasoning").asText();
            List<Object> calls = new ArrayList<>();
            e.get("tool_calls").forEach(calls::add);
            if (i == expected.size() - 1) {
                replay.get("final_tool_calls").forEach(calls::add);
            }
            Response o = ours.get(i);
            if (!t.equals(o.text()) || !r.equals(o.reasoning())) {
                diff.add("response " + i + ": expected " + DetokenizerParityTest.quote(t) + " / "
                        + DetokenizerParityTest.quote(r) + ", sink " + DetokenizerParityTest.quote(o.text()) + " / "
                        + DetokenizerParityTest.quote(o.reasoning()));
            }
            JsonNode want = Oracle.JSON.valueToTree(calls);
            JsonNode got = Oracle.JSON.valueToTree(o.toolCalls());
            if (!want.equals(got)) {
                diff.add("response " + i + " tool calls: expected " + want + ", sink " + got);
            }
        }
        return diff;
    }

    /** Tool calls in the oracle's form: name, arguments keeping Python's types, the model's id. */
    private static List<Object> typed(List<ToolCall> calls) {
        List<Object> out = new ArrayList<>();
        for (ToolCall c : calls) {
            Map<String, Object> m = new LinkedHashMap<>();
            m.put("name", c.name());
            m.put("arguments", typed(c.arguments()));
            m.put("id", c.id());
            out.add(m);
        }
        return out;
    }

    /** The oracle's {@code _typed}: {"d": [[k, v]...]}, {"l"}, {"s"}, {"i"}, {"f": float.hex}, {"b"}, null. */
    private static Object typed(Object v) {
        return switch (v) {
            case null -> null;
            case Boolean b -> Map.of("b", b);
            case Integer i -> Map.of("i", i.toString());
            case Long l -> Map.of("i", l.toString());
            case BigInteger b -> Map.of("i", b.toString());
            case Number n -> Map.of("f", pyFloatHex(n.doubleValue()));
            case String s -> Map.of("s", s);
            case List<?> l ->
                Map.of(
                        "l",
                        l.stream().map(DetokenizingSinkServerParityTest::typed).toList());
            case Map<?, ?> m -> {
                List<Object> entries = new ArrayList<>();
                m.forEach((k, x) -> entries.add(java.util.Arrays.asList(k, typed(x))));
                yield Map.of("d", entries);
            }
            default -> throw new IllegalArgumentException("not JSON data: " + v.getClass());
        };
    }

    /** Python's {@code float.hex}. */
    static String pyFloatHex(double d) {
        if (Double.isNaN(d)) {
            return "nan";
        }
        if (Double.isInfinite(d)) {
            return d > 0 ? "inf" : "-inf";
        }
        long bits = Double.doubleToRawLongBits(d);
        String sign = bits < 0 ? "-" : "";
        long mantissa = bits & ((1L << 52) - 1);
        int exp = (int) ((bits >>> 52) & 0x7ff);
        if (exp == 0 && mantissa == 0) {
            return sign + "0x0.0p+0";
        }
        String m = String.format("%013x", mantissa);
        if (exp == 0) {
            return sign + "0x0." + m + "p-1022";
        }
        int e = exp - 1023;
        return sign + "0x1." + m + "p" + (e < 0 ? "-" : "+") + Math.abs(e);
    }

    static int[] ints(JsonNode n) {
        int[] a = new int[n.size()];
        for (int i = 0; i < a.length; i++) {
            a[i] = n.get(i).asInt();
        }
        return a;
    }

    static int[] concat(int[]... parts) {
        int len = 0;
        for (int[] p : parts) {
            len += p.length;
        }
        int[] out = new int[len];
        int at = 0;
        for (int[] p : parts) {
            System.arraycopy(p, 0, out, at, p.length);
            at += p.length;
        }
        return out;
    }
}
