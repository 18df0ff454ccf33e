package dev.mlxring.sink;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;
import static org.junit.jupiter.api.Assertions.fail;

import com.fasterxml.jackson.databind.JsonNode;
import dev.mlxring.pycompat.PyUtf8Decoder;
import dev.mlxring.tokenizer.HfTokenizer;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.OptionalInt;
import java.util.Random;
import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.ValueSource;

/**
 * Live parity with mlx-lm's own streaming detokenizers ({@code mlx_lm.tokenizer_utils}, run by
 * {@code scripts/oracle/detokenize_oracle.py}): for every id sequence, each step's {@code
 * last_segment}, the segment after {@code finalize()}, and the whole text must be identical. The
 * default model (byte-level BPE) is checked with all of mlx-lm's classes forced onto its vocabulary,
 * and SentencePiece / WordPiece fixtures with the class mlx-lm picks for them.
 */
class DetokenizerParityTest {

    @TempDir
    static Path work;

    static HfTokenizer smol;
    static JsonNode fixtures;

    @BeforeAll
    static void setUp() {
        smol = Oracle.load(Oracle.defaultModel());
        fixtures = Oracle.buildFixtures(work.resolve("fixtures"));
    }

    @AfterAll
    static void tearDown() {
        if (smol != null) {
            smol.close();
        }
    }

    static final List<String> CORPUS = List.of(
            "Hello world",
            "Hello, world! How are you?",
            " leading space",
            "trailing space ",
            "  two  spaces  ",
            " ",
            "   ",
            "line1\nline2\n\nline3\n",
            "\n",
            "\n\n\n",
            "\ttab\tseparated",
            "windows\r\nline end",
            "3.14159 and 1,000,000",
            "日本語のテキスト",
            "中文：你好，世界！",
            "한국어 텍스트",
            "日本語 and English 中文",
            "😀",
            " 😀",
            "👍🏽",
            "👩‍💻 coder",
            "👨‍👩‍👧‍👦 family",
            "🇫🇷🇯🇵",
            "❤️‍🔥",
            "emoji😀inside👩‍💻words",
            "Café naïve résumé",
            "Cafe\u0301",
            "Ελληνικά",
            "Русский текст",
            "العربية",
            "עברית",
            "हिन्दी",
            "Tiếng Việt có dấu",
            "def f(x):\n    return x ** 2\n",
            "if (a && b || !c) { x->y[0] += 1; }",
            "<html><body class=\"x\">&amp;</body></html>",
            "    indented(4)\n\tindented(tab)\n        indented(8)",
            "<|im_start|>user\nhi<|im_end|>",
            "text<|endoftext|>more",
            "<think>reasoning</think>answer",
            "I'm don't you're we've",
            "Hello , world ! isn't it ? a . b",
            "...!!!???",
            "“quotes” ‘single’ «g»",
            "a\u0000b",
            "\u0007\u001b[31mred\u001b[0m",
            "\u00a0nbsp\u00a0",
            "a\u200bb",
            "\ufeffBOM",
            "\ufffd",
            "ﬁ ligature ① ＦＵＬＬＷＩＤＴＨ ㎏",
            "𝔘𝔫𝔦𝔠𝔬𝔡𝔢 𝟙𝟚𝟛",
            "mixed 😀\n日本\n code();\n");

    @Test
    void defaultModelEveryMlxLmClass() {
        int size = smol.vocabSize();
        Map<String, int[]> seqs = new LinkedHashMap<>();
        for (String text : CORPUS) {
            seqs.put("encode " + text, smol.encode(text, false));
            seqs.put("encode+special " + text, smol.encode(text, true));
        }
        Random rnd = new Random(20240611L);
        for (int k = 0; k < 150; k++) {
            int[] ids = new int[1 + rnd.nextInt(48)];
            for (int i = 0; i < ids.length; i++) {
                ids[i] = rnd.nextInt(size);
            }
            seqs.put("random " + k, ids);
        }
        // Tokens that are not complete UTF-8 on their own: pieces of multi-byte characters.
        List<Integer> partial = new ArrayList<>();
        List<Integer> loneBytes = new ArrayList<>();
        for (int id = 0; id < size; id++) {
            String t = smol.token(id);
            StringBuilder sb = new StringBuilder();
            PyUtf8Decoder d = new PyUtf8Decoder(false);
            boolean allTable = true;
            for (int i = 0; i < t.length(); i++) {
                int b = ByteLevel.byteOf(t.charAt(i));
                if (b < 0) {
                    allTable = false;
                    break;
                }
                d.feed(b, sb);
            }
            if (!allTable) {
                continue;
            }
            d.end(sb);
            if (sb.indexOf("\uFFFD") >= 0) {
                partial.add(id);
                if (t.length() == 1) {
                    loneBytes.add(id);
                }
            }
        }
        assertTrue(partial.size() > 100, "expected many partial-UTF-8 tokens, found " + partial.size());
        for (int k = 0; k < 120; k++) {
            int[] ids = new int[1 + rnd.nextInt(24)];
            for (int i = 0; i < ids.length; i++) {
                double p = rnd.nextDouble();
                ids[i] = p < 0.45
                        ? partial.get(rnd.nextInt(partial.size()))
                        : p < 0.8 ? loneBytes.get(rnd.nextInt(loneBytes.size())) : rnd.nextInt(size);
            }
            seqs.put("partial-utf8 " + k, ids);
        }
        // Multi-byte characters spelled byte by byte (every split point of their UTF-8).
        for (String s : List.of("😀", "日本語", "é", "👩‍💻", "𝟙", "€")) {
            byte[] utf8 = s.getBytes(java.nio.charset.StandardCharsets.UTF_8);
            int[] ids = new int[utf8.length + 1];
            for (int i = 0; i < utf8.length; i++) {
                ids[i] = id(String.valueOf(ByteLevel.charOf(utf8[i] & 0xFF)));
            }
            ids[utf8.length] = id("a");
            seqs.put("bytewise " + s, ids);
            seqs.put("bytewise-cut " + s, java.util.Arrays.copyOf(ids, utf8.length - 1));
        }
        // Lone space tokens wait for the next token; byte 0's character is read as UTF-8 while streaming.
        int sp = id("Ġ");
        int nl = id("Ċ");
        int hello = id("Hello");
        int world = id("Ġworld");
        int zero = id("Ā");
        seqs.put("lone space", new int[] {sp});
        seqs.put("lone spaces", new int[] {sp, sp, sp});
        seqs.put("space first", new int[] {sp, hello, sp, world, sp});
        seqs.put("space newline", new int[] {hello, sp, nl, sp, sp, world});
        seqs.put("byte zero", new int[] {zero});
        seqs.put("byte zero mid", new int[] {hello, zero, world, zero});
        seqs.put("byte zero held", new int[] {hello, sp, zero});
        seqs.put("byte zero partial", new int[] {partial.get(0), zero});
        seqs.put("special tokens", new int[] {0, 1, 2, hello, 2, sp, 1});
        seqs.put("empty", new int[0]);
        compare(smol, List.of("auto", "spm", "spm_notrim", "naive"), seqs, true);
        // mlx-lm reads ids at or beyond len(tokenizer) as "!" (BPE only).
        compare(smol, List.of("bpe"), Map.of("out of range", new int[] {hello, size + 3, world, size}), false);
    }

    @ParameterizedTest
    @ValueSource(strings = {"spm", "spm_notrim", "wordpiece"})
    void fixtureTokenizers(String name) {
        try (HfTokenizer tok = Oracle.load(Path.of(fixtures.get(name).asText()))) {
            Map<String, int[]> seqs = new LinkedHashMap<>();
            for (String text : CORPUS) {
                seqs.put("encode " + text, tok.encode(text, false));
            }
            for (String text : List.of(
                    "hello world",
                    " hello  world ",
                    "hello , world ! it's",
                    "café 日本語",
                    "a b c",
                    "x\ny",
                    "hello world ? don't",
                    "😀 ▁ x",
                    "▁▁x")) {
                seqs.put("encode " + text, tok.encode(text, false));
            }
            Random rnd = new Random(name.hashCode());
            int size = tok.vocabSize();
            for (int k = 0; k < 200; k++) {
                int[] ids = new int[1 + rnd.nextInt(30)];
                for (int i = 0; i < ids.length; i++) {
                    ids[i] = rnd.nextInt(size);
                }
                seqs.put("random " + k, ids);
            }
            if (name.startsWith("spm")) {
                // <0xNN> byte tokens spelling multi-byte characters, cut anywhere.
                for (String s : List.of("😀", "日本語", "é", "▁", "€x")) {
                    byte[] utf8 = s.getBytes(java.nio.charset.StandardCharsets.UTF_8);
                    int[] ids = new int[utf8.length];
                    for (int i = 0; i < utf8.length; i++) {
                        ids[i] = tok.tokenId(String.format("<0x%02X>", utf8[i] & 0xFF))
                                .getAsInt();
                    }
                    seqs.put("bytes " + s, ids);
                    seqs.put("bytes-cut " + s, java.util.Arrays.copyOf(ids, ids.length - 1));
                }
            }
            compare(tok, List.of("auto"), seqs, true);
        }
    }

    private static int id(String token) {
        OptionalInt id = smol.tokenId(token);
        assertTrue(id.isPresent(), "token " + token + " not in the default model's vocabulary");
        return id.getAsInt();
    }

    /** Runs the oracle over {@code seqs} for each class and compares every segment. */
    static void compare(HfTokenizer tok, List<String> classes, Map<String, int[]> seqs, boolean checkVocab) {
        List<String> names = new ArrayList<>(seqs.keySet());
        Map<String, Object> spec = new LinkedHashMap<>();
        spec.put("model", tok.tokenizerFile().getParent().toString());
        spec.put("classes", classes);
        spec.put("sequences", names.stream().map(seqs::get).toList());
        spec.put("token_strings", checkVocab);
        JsonNode out = Oracle.run("--detok", spec, work);
        JsonNode meta = out.get("meta");

        assertEquals(meta.get("len").asInt(), tok.vocabSize(), "len(tokenizer)");
        String expectedClass = switch (DetokenizerKind.infer(tok.decoderConfig())) {
            case BPE -> "BPEStreamingDetokenizer";
            case SPM, SPM_NO_TRIM -> "SPMStreamingDetokenizer";
            case NAIVE -> "NaiveStreamingDetokenizer";
        };
        assertEquals(meta.get("detokenizer").asText(), expectedClass, "detokenizer class mlx-lm picked");
        if (expectedClass.startsWith("SPM")) {
            assertEquals(
                    meta.get("trim_space").asBoolean(),
                    DetokenizerKind.infer(tok.decoderConfig()) == DetokenizerKind.SPM,
                    "trim_space");
        }
        if (checkVocab) {
            JsonNode strings = out.get("token_strings");
            for (int i = 0; i < strings.size(); i++) {
                String expected =
                        strings.get(i).isNull() ? null : strings.get(i).asText();
                if (!java.util.Objects.equals(expected, tok.tokenString(i))) {
                    fail("convert_ids_to_tokens(" + i + ") = " + expected + " but tokenString = " + tok.tokenString(i));
                }
            }
        }

        List<String> mismatches = new ArrayList<>();
        int checked = 0;
        for (String cls : classes) {
            DetokenizerKind kind = switch (cls) {
                case "auto" -> DetokenizerKind.infer(tok.decoderConfig());
                case "bpe" -> DetokenizerKind.BPE;
                case "spm" -> DetokenizerKind.SPM;
                case "spm_notrim" -> DetokenizerKind.SPM_NO_TRIM;
                case "naive" -> DetokenizerKind.NAIVE;
                default -> throw new IllegalArgumentException(cls);
            };
            StreamingDetokenizer.Factory factory = kind.factory(tok, s -> tok.encode(s, false));
            JsonNode results = out.get("results").get(cls);
            for (int s = 0; s < names.size(); s++) {
                int[] ids = seqs.get(names.get(s));
                JsonNode r = results.get(s);
                StreamingDetokenizer d = factory.open();
                StringBuilder all = new StringBuilder();
                for (int i = 0; i < ids.length; i++) {
                    StringBuilder seg = new StringBuilder();
                    d.addToken(ids[i], seg);
                    all.append(seg);
                    String expected = r.get("steps").get(i).asText();
                    if (!expected.equals(seg.toString())) {
                        mismatches.add(
                                cls + " / " + names.get(s) + " step " + i + " ids " + java.util.Arrays.toString(ids)
                                        + ": mlx-lm " + quote(expected) + " java " + quote(seg.toString()));
                    }
                    checked++;
                }
                StringBuilder fin = new StringBuilder();
                d.finalizeTo(fin);
                all.append(fin);
                if (!r.get("final").asText().equals(fin.toString())) {
                    mismatches.add(cls + " / " + names.get(s) + " final: mlx-lm "
                            + quote(r.get("final").asText()) + " java " + quote(fin.toString()));
                }
                // The Naive detokenizer's final text can differ from its segments (a later decode may
                // rewrite earlier text, e.g. clean-up); mlx_lm.server returns the segments.
                String expectedText = r.get("text").asText();
                if (kind == DetokenizerKind.NAIVE) {
                    StringBuilder segs = new StringBuilder();
                    r.get("steps").forEach(x -> segs.append(x.asText()));
                    expectedText = segs.append(r.get("final").asText()).toString();
                }
                if (!expectedText.equals(all.toString())) {
                    mismatches.add(cls + " / " + names.get(s) + " text: mlx-lm " + quote(expectedText) + " java "
                            + quote(all.toString()));
                }
            }
        }
        if (!mismatches.isEmpty()) {
            fail(mismatches.size() + " mismatches out of " + checked + " steps, first:\n  "
                    + String.join("\n  ", mismatches.subList(0, Math.min(15, mismatches.size()))));
        }
    }

    static String quote(String s) {
        StringBuilder sb = new StringBuilder("\"");
        s.codePoints().forEach(c -> {
            if (c < 0x20 || c == 0x7F || c == 0xFFFD || (c >= 0x80 && c < 0xA0)) {
                sb.append(String.format("\\u%04x", c));
            } else {
                sb.appendCodePoint(c);
            }
        });
        return sb.append('"').toString();
    }
}
