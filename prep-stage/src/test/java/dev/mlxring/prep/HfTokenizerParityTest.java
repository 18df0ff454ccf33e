package dev.mlxring.prep;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.fail;

import com.fasterxml.jackson.databind.JsonNode;
import dev.mlxring.tokenizer.HfTokenizer;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.Objects;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.io.TempDir;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.ValueSource;

/**
 * Live parity of {@link HfTokenizer} (DJL's Rust tokenizers over JNI) with Python {@code tokenizers}
 * (the library mlx-lm tokenizes with), over a varied corpus, every single-id decode, and every prefix
 * decode of short encodings (byte-level pieces that split a UTF-8 sequence). Runs against a tiny BPE
 * fixture trained by the oracle, and against the default model's tokenizer.
 */
class HfTokenizerParityTest {

    static final String FIXTURE = "fixture:tiny-bytelevel-bpe";
    static final String DEFAULT_MODEL = "smollm2-135m-instruct";

    @TempDir
    static Path work;

    static Path fixtureDir;

    @BeforeAll
    static void buildFixture() {
        fixtureDir = PythonOracle.buildFixture(work.resolve("tiny-bpe"));
    }

    static Path modelDir(String name) {
        if (name.equals(FIXTURE)) {
            return fixtureDir;
        }
        Path dir = PythonOracle.root().resolve("models").resolve(name);
        if (!Files.isRegularFile(dir.resolve("tokenizer.json"))) {
            fail("Default model tokenizer missing: " + dir.resolve("tokenizer.json")
                    + " does not exist. Run the setup first: ./mlx-ring setup");
        }
        return dir;
    }

    static List<String> corpus() {
        List<String> c = new ArrayList<>(List.of(
                "",
                "Hello world",
                "Hello, world! How are you?",
                " leading space",
                "trailing space ",
                "  both sides  ",
                " ",
                "   ",
                "multiple     spaces   here",
                "line1\nline2\n\nline3",
                "\n",
                "\n\n\n",
                "\ttab\tseparated\t",
                "windows\r\nline end",
                "mixed \t\n \r\n ws",
                "12345",
                "3.14159 and 1,000,000 and 007",
                "2024-01-01T12:34:56Z",
                "1234567890123456789",
                "日本語のテキスト",
                "中文：你好，世界！",
                "한국어 텍스트",
                "日本語 and English mixed 中文",
                "😀",
                "👍🏽",
                "👩‍💻",
                "👨‍👩‍👧‍👦 family",
                "🇫🇷🇯🇵",
                "❤️‍🔥",
                "🏳️‍🌈",
                "emoji😀inside👩‍💻words",
                "Café naïve résumé",
                "Cafe\u0301 (NFD)",
                "Ångström São Paulo Straße ÆØÅ",
                "Ελληνικά",
                "Русский текст",
                "العربية",
                "עברית",
                "हिन्दी",
                "Tiếng Việt có dấu",
                "def f(x):\n    return x ** 2\n",
                "if (a && b || !c) { x->y[0] += 1; }",
                "<html><body class=\"x\">&amp;</body></html>",
                "SELECT * FROM t WHERE id = 42;",
                "    indented(4)\n\tindented(tab)\n        indented(8)",
                "<|im_start|>user\nhi<|im_end|>",
                "<|im_start|>system\nYou are a helpful assistant.<|im_end|>\n<|im_start|>user\nWhat is 2+2?<|im_end|>\n<|im_start|>assistant\n",
                "<|im_start|><|im_end|>",
                "text<|endoftext|>more",
                "abc<|im_end|>def",
                "<|im_start",
                "<|im_start|> spaced <|im_end|>",
                "<think>reasoning</think>answer",
                "< think >",
                "I'm don't you're we've they'll it's",
                "Hello , world ! isn't it ? a . b",
                "...!!!???",
                "—–-",
                "“quotes” ‘single’ «guillemets»",
                "abc123def",
                "CamelCaseIdentifierName",
                "snake_case_name",
                "URL: https://example.com/path?q=1&r=2#frag",
                "a\u0000b",
                "\u0007\u001b[31mred\u001b[0m",
                "\u00a0nbsp\u00a0",
                "a\u200bb",
                "\ufeffBOM",
                "\ufffd",
                "\udbff\udfff",
                "ﬁ ligature ① ＦＵＬＬＷＩＤＴＨ ㎏"));
        c.add(("The quick brown fox jumps over the lazy dog; 1234 times, naïvely 😀. ").repeat(120));
        return c;
    }

    @ParameterizedTest(name = "{0}")
    @ValueSource(strings = {FIXTURE, DEFAULT_MODEL})
    void matchesPythonTokenizers(String name) throws Exception {
        Path dir = modelDir(name);
        try (HfTokenizer tok = HfTokenizer.load(dir)) {
            List<String> texts = corpus();
            Map<String, Object> spec = new LinkedHashMap<>();
            spec.put("texts", texts);
            spec.put("id_range", List.of(0, tok.vocabSize() + 3)); // a few unknown ids on top
            spec.put("prefix_decode_limit", 64);
            Path corpusFile = Files.createTempFile(work, "corpus", ".json");
            PythonOracle.JSON.writeValue(corpusFile.toFile(), spec);

            JsonNode py = PythonOracle.runJson(work, "--tokenizer", dir.toString(), "--corpus", corpusFile.toString());
            List<String> bad = new ArrayList<>();
            String where = name + " (Python tokenizers "
                    + py.path("tokenizers_version").asText() + ")";
            if (!py.path("truncation").isNull() || !py.path("padding").isNull()) {
                System.out.println("[parity] note: " + dir + "/tokenizer.json configures truncation/padding; "
                        + "both sides run with them off");
            }

            assertEquals(py.path("vocab_size").asInt(), tok.vocabSize(), "vocab size, " + where);

            JsonNode results = py.path("results");
            assertEquals(texts.size(), results.size(), "oracle result count");
            long tokens = 0;
            for (int i = 0; i < texts.size(); i++) {
                String text = texts.get(i);
                JsonNode r = results.get(i);
                assertEquals(text, r.path("text").asText(), "corpus round trip through JSON, entry " + i);
                int[] pySpecial = ints(r.path("ids_special"));
                int[] pyPlain = ints(r.path("ids_plain"));
                tokens += pyPlain.length;
                check(bad, text, "encode(add_special_tokens=True)", pySpecial, tok.encode(text, true));
                check(bad, text, "encode(add_special_tokens=False)", pyPlain, tok.encode(text, false));
                check(
                        bad,
                        text,
                        "decode(ids_special, skip=True)",
                        r.path("decode_special_skip").asText(),
                        tok.decode(pySpecial, true));
                check(
                        bad,
                        text,
                        "decode(ids_special, skip=False)",
                        r.path("decode_special_noskip").asText(),
                        tok.decode(pySpecial, false));
                check(
                        bad,
                        text,
                        "decode(ids_plain, skip=True)",
                        r.path("decode_plain_skip").asText(),
                        tok.decode(pyPlain, true));
                check(
                        bad,
                        text,
                        "decode(ids_plain, skip=False)",
                        r.path("decode_plain_noskip").asText(),
                        tok.decode(pyPlain, false));
                JsonNode prefixes = r.get("prefix_decodes_noskip");
                if (prefixes != null) {
                    for (int k = 1; k <= pySpecial.length; k++) {
                        check(
                                bad,
                                text,
                                "decode(ids_special[:" + k + "], skip=False)",
                                prefixes.get(k - 1).asText(),
                                tok.decode(Arrays.copyOf(pySpecial, k), false));
                    }
                }
            }
            if (texts.getLast().length() > 5000) {
                int n = tok.encode(texts.getLast(), false).length;
                if (n <= 512) {
                    bad.add("long text encoded to only " + n + " ids: expected well over 512 (truncation?)");
                }
            }

            JsonNode ids = py.path("ids");
            int start = ids.path("start").asInt();
            int end = ids.path("end").asInt();
            for (int id = start; id < end; id++) {
                int k = id - start;
                JsonNode pyTok = ids.path("tokens").get(k);
                String pyToken = pyTok.isNull() ? null : pyTok.asText();
                String label = "id " + id;
                check(bad, label, "id_to_token", pyToken, tok.token(id));
                if (pyToken != null && tok.tokenId(pyToken).orElse(-1) != id) {
                    bad.add(label + ": tokenId(" + esc(pyToken) + ") = " + tok.tokenId(pyToken) + ", expected " + id);
                }
                check(
                        bad,
                        label,
                        "decode([id], skip=False)",
                        ids.path("decode_noskip").get(k).asText(),
                        tok.decode(new int[] {id}, false));
                check(
                        bad,
                        label,
                        "decode([id], skip=True)",
                        ids.path("decode_skip").get(k).asText(),
                        tok.decode(new int[] {id}, true));
            }

            if (!bad.isEmpty()) {
                fail(bad.size() + " mismatch(es) between HfTokenizer and " + where + ":\n  "
                        + String.join("\n  ", bad.subList(0, Math.min(40, bad.size()))));
            }
            System.out.printf(
                    "[parity] %s: %d texts (%d tokens), %d single-id decodes: identical to %s%n",
                    name, texts.size(), tokens, end - start, where);
        }
    }

    static int[] ints(JsonNode array) {
        int[] out = new int[array.size()];
        for (int i = 0; i < out.length; i++) {
            out[i] = array.get(i).asInt();
        }
        return out;
    }

    static void check(List<String> bad, String text, String what, int[] expected, int[] actual) {
        if (!Arrays.equals(expected, actual)) {
            bad.add(what + " of " + esc(text) + ": python " + Arrays.toString(expected) + " java "
                    + Arrays.toString(actual));
        }
    }

    static void check(List<String> bad, String text, String what, String expected, String actual) {
        if (!Objects.equals(expected, actual)) {
            bad.add(what + " of " + esc(text) + ": python " + esc(expected) + " java " + esc(actual));
        }
    }

    /** Quoted, with non-printable / non-ASCII chars as \\uXXXX, so mismatches are readable. */
    static String esc(String s) {
        if (s == null) {
            return "null";
        }
        String cut = s.length() > 120 ? s.substring(0, 120) + "…" : s;
        StringBuilder b = new StringBuilder("\"");
        cut.chars().forEach(c -> {
            if (c >= 0x20 && c < 0x7f && c != '"' && c != '\\') {
                b.append((char) c);
            } else {
                b.append(String.format("\\u%04x", c));
            }
        });
        return b.append('"').toString();
    }
}
