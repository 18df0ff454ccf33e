package dev.mlxring.sink;

import static org.junit.jupiter.api.Assertions.assertArrayEquals;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertNotNull;
import static org.junit.jupiter.api.Assertions.assertNull;
import static org.junit.jupiter.api.Assertions.assertTrue;

import com.fasterxml.jackson.databind.JsonNode;
import dev.mlxring.prep.HfTokenizer;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

/**
 * The whole sink against a replay of mlx_lm.server's text path (detokenizer, token-level stop
 * sequences, initial reasoning state, TextStateMachine split/flush/discard), using mlx-lm's own
 * classes: the default model, and the default model's tokenizer with {@code <think>}/{@code
 * </think>} added (mlx-lm then infers thinking). Stop strings here occur with their canonical
 * tokenization, where mlx_lm.server and OpenAI semantics agree; per-token text and reasoning must
 * be identical, including at EOS, where both discard the held-back text.
 */
class DetokenizingSinkServerParityTest {
    @TempDir
    static Path work;

    record Case(String name, int[] prompt, List<String> stop, int[] gen, String end) {}

    @Test
    void thinkingModel() {
        Path dir = Path.of(Oracle.buildFixtures(work.resolve("fixtures")).get("think").asText());
        try (HfTokenizer tok = Oracle.load(dir)) {
            DetokenizingSinks sinks = DetokenizingSinks.forTokenizer(tok, s -> tok.encode(s, false));
            String chat = "<|im_start|>user\nWhat is 2+2?<|im_end|>\n<|im_start|>assistant\n";
            int[] closedPrompt = tok.encode(chat, false);
            int[] openPrompt = tok.encode(chat + "<think>\n", false);
            int[] pastPrompt = tok.encode(chat.replace("What", "<think>x</think>What") + "<think>\nok</think>\n", false);
            List<String> gens = List.of(
                    "<think>\nLet me think about 2+2.\n</think>\n\nThe answer is 4. 😀 日本語",
                    "I think 2+2=4.</think>The answer is **4**.\n\nUser: thanks",
                    "Plain answer < and > with <thin and </thinking> and <think",
                    "<think>a</think>b<think>c</think>d",
                    "<think>unterminated reasoning with </thi");
            List<List<String>> stops = List.of(List.of(), List.of("User:"), List.of("\n\n"), List.of("4.", "STOP"),
                    List.of("</think>"), List.of("<think>"), List.of("thin"));
            List<Case> cases = new ArrayList<>();
            for (int[] prompt : List.of(closedPrompt, openPrompt, pastPrompt)) {
                for (String g : gens) {
                    for (List<String> st : stops) {
                        for (String end : List.of("length", "eos")) {
                            cases.add(new Case(g + " | stop " + st + " | " + end + " | prompt " + prompt.length,
                                    prompt, st, tok.encode(g, false), end));
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
            assertEquals("reasoning", out.get("cases").get(gens.size() * stops.size() * 2).get("mlx").get("initial_state").asText(),
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
                for (List<String> st : List.of(List.<String>of(), List.of("User:"), List.of("\n\n"), List.of("###"),
                        List.of("😀"), List.of(" 😀"), List.of("ok", "?"), List.of("Hello"))) {
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
        spec.put("cases", cases.stream().map(c -> Map.of("prompt", c.prompt(), "stop", c.stop(), "gen", c.gen(),
                "end", c.end())).toList());
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
            SinkRun ours = SinkRun.run(sinks.open(SinkRun.plan(c.prompt(), c.stop())),
                    c.end().equals("eos") ? "stop" : "length", c.gen());
            List<String[]> o = responses(ours, c);
            String where = "case " + k + " " + DetokenizerParityTest.quote(c.name());

            // 1. Exactly mlx-lm's machinery with OpenAI stop semantics, response for response.
            List<String> diff = compare(o, openai.get("responses"));
            if (!diff.isEmpty()) {
                problems.add(where + " vs openai replay: " + diff);
                continue;
            }
            // 2. mlx_lm.server itself: identical unless a stop string matched in the text only
            //    (mlx-lm strips it and goes on).
            JsonNode eosDiscarded = c.end().equals("eos") ? mlx.get("eos_discarded") : null;
            List<String> vsServer = compare(o, mlx.get("responses"));
            boolean mlxTokenStop = mlx.get("finish_reason").asText().equals("stop")
                    && mlx.get("responses").size() <= c.gen().length;
            if (vsServer.isEmpty()) {
                agreeWithServer++;
                if (eosDiscarded != null && !ours.stopped()
                        && !(eosDiscarded.get("text").asText() + eosDiscarded.get("reasoning").asText()).isEmpty()) {
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
        assertTrue(problems.isEmpty(), problems.size() + " problems in " + cases.size() + " cases:\n  "
                + String.join("\n  ", problems.subList(0, Math.min(20, problems.size()))));
        assertTrue(tokenStops > 0, "no case stopped on a canonical stop sequence");
        assertTrue(eosDiscards > 0, "no case had held-back text at EOS");
        System.out.printf("%d cases: %d identical to mlx_lm.server (%d of them stopped by a stop string, %d discarded "
                + "held-back text at EOS), %d stopped on a text-only stop-string match (mlx_lm.server "
                + "strips it and continues)%n", cases.size(), agreeWithServer, tokenStops, eosDiscards, textStops);
        return out;
    }

    /**
     * The sink's output grouped like the server's responses: one per token; on "length" the last
     * token's span and the finish() span form one response, on "eos" finish() is the EOS response.
     */
    private static List<String[]> responses(SinkRun ours, Case c) {
        List<String[]> o = new ArrayList<>();
        for (int i = 0; i < ours.texts.size(); i++) {
            o.add(new String[] {ours.texts.get(i), ours.reasonings.get(i)});
        }
        if (ours.finishText != null) {
            if (c.end().equals("length") && !o.isEmpty()) {
                String[] last = o.get(o.size() - 1);
                last[0] += ours.finishText;
                last[1] += ours.finishReasoning;
            } else {
                o.add(new String[] {ours.finishText, ours.finishReasoning});
            }
        }
        return o;
    }

    private static List<String> compare(List<String[]> ours, JsonNode expected) {
        List<String> diff = new ArrayList<>();
        if (ours.size() != expected.size()) {
            diff.add("sink produced " + ours.size() + " responses, expected " + expected.size());
        }
        for (int i = 0; i < Math.min(ours.size(), expected.size()); i++) {
            JsonNode e = expected.get(i);
            String t = e.get("text").asText();
            String r = e.get("reasoning").asText();
            if (!t.equals(ours.get(i)[0]) || !r.equals(ours.get(i)[1])) {
                diff.add("response " + i + ": expected " + DetokenizerParityTest.quote(t) + " / "
                        + DetokenizerParityTest.quote(r) + ", sink " + DetokenizerParityTest.quote(ours.get(i)[0]) + " / "
                        + DetokenizerParityTest.quote(ours.get(i)[1]));
            }
        }
        return diff;
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
