package dev.mlxring.sink;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertTrue;

import dev.mlxring.tokenizer.HfTokenizer;
import java.nio.charset.StandardCharsets;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.List;
import java.util.Random;
import org.junit.jupiter.api.Test;

/**
 * A committed sequence whose bytes form valid UTF-8 once complete never shows U+FFFD, however the
 * bytes are cut into tokens: incomplete characters are held back, never emitted broken.
 */
class DetokenizerNoReplacementTest {
    private static final int[][] RANGES = {
        {0x21, 0x7E},
        {0xA1, 0x7FF},
        {0x800, 0xD7FF},
        {0xE000, 0xFFFC},
        {0x10000, 0x10FFFF},
        {0x4E00, 0x9FFF},
        {0x1F300, 0x1F64F}
    };

    /** Scripts a real vocabulary can spell (its byte-level alphabet lacks some lead bytes of rare planes). */
    private static final int[][] COMMON = {
        {0x21, 0x7E},
        {0xA1, 0x24F},
        {0x370, 0x4FF},
        {0x4E00, 0x9FFF},
        {0x3040, 0x30FF},
        {0xAC00, 0xD7A3},
        {0x1F300, 0x1F64F},
        {0x2000, 0x206F}
    };

    static String randomText(Random rnd, int maxLen) {
        return randomText(rnd, maxLen, RANGES);
    }

    static String randomText(Random rnd, int maxLen, int[][] ranges) {
        StringBuilder sb = new StringBuilder();
        int n = 1 + rnd.nextInt(maxLen);
        while (sb.codePointCount(0, sb.length()) < n) {
            if (rnd.nextInt(6) == 0) {
                sb.append(rnd.nextBoolean() ? ' ' : '\n');
                continue;
            }
            int[] r = ranges[rnd.nextInt(ranges.length)];
            int c = r[0] + rnd.nextInt(r[1] - r[0] + 1);
            if (c == 0xFFFD || Character.isSurrogate((char) c) && c < 0x10000) {
                continue;
            }
            sb.appendCodePoint(c);
        }
        return sb.toString();
    }

    /** Cuts {@code bytes} into random chunks of 1..maxChunk bytes. */
    static List<byte[]> cut(Random rnd, byte[] bytes, int maxChunk) {
        List<byte[]> out = new ArrayList<>();
        for (int i = 0; i < bytes.length; ) {
            int len = Math.min(bytes.length - i, 1 + rnd.nextInt(maxChunk));
            out.add(Arrays.copyOfRange(bytes, i, i + len));
            i += len;
        }
        return out;
    }

    private static void assertClean(SinkRun r, String expected, String what) {
        for (int i = 0; i < r.texts.size(); i++) {
            assertFalse(r.texts.get(i).indexOf('\uFFFD') >= 0, what + ": U+FFFD in span " + i + " " + r.texts);
        }
        assertFalse(r.finishText != null && r.finishText.indexOf('\uFFFD') >= 0, what + ": U+FFFD at finish");
        assertEquals(expected, r.text(), what);
    }

    @Test
    void byteLevelTokensCutAnywhere() {
        Random rnd = new Random(3);
        for (int k = 0; k < 500; k++) {
            FakeVocab v = new FakeVocab();
            String text = "x" + randomText(rnd, 30);
            List<byte[]> chunks = cut(rnd, text.getBytes(StandardCharsets.UTF_8), 5);
            int[] ids = new int[chunks.size()];
            for (int i = 0; i < ids.length; i++) {
                int[] b = new int[chunks.get(i).length];
                for (int j = 0; j < b.length; j++) {
                    b[j] = chunks.get(i)[j] & 0xFF;
                }
                ids[i] = v.bytes(b);
            }
            SinkRun r = SinkRun.run(DetokenizingSinks.builder(v).build(), new int[0], List.of(), ids);
            assertClean(r, text, "byte-level " + k);
        }
    }

    @Test
    void sentencePieceByteFallbackAndPiecesCutAnywhere() {
        Random rnd = new Random(5);
        for (int k = 0; k < 500; k++) {
            FakeVocab v = new FakeVocab();
            String text = randomText(rnd, 30);
            List<byte[]> chunks = cut(rnd, text.getBytes(StandardCharsets.UTF_8), 4);
            List<Integer> ids = new ArrayList<>();
            for (byte[] chunk : chunks) {
                String s = new String(chunk, StandardCharsets.UTF_8);
                if (s.indexOf('\uFFFD') < 0 && rnd.nextBoolean()) {
                    ids.add(v.special(s.replace(' ', '\u2581')));
                } else {
                    for (byte b : chunk) {
                        ids.add(v.special(String.format("<0x%02X>", b & 0xFF)));
                    }
                }
            }
            DetokenizingSinks spm = DetokenizingSinks.builder(v)
                    .kind(DetokenizerKind.SPM_NO_TRIM)
                    .build();
            SinkRun r = SinkRun.run(
                    spm,
                    new int[0],
                    List.of(),
                    ids.stream().mapToInt(Integer::intValue).toArray());
            assertClean(r, text, "spm " + k);
        }
    }

    @Test
    void defaultModelTokenizations() {
        try (HfTokenizer tok = Oracle.load(Oracle.defaultModel())) {
            DetokenizingSinks sinks = DetokenizingSinks.forTokenizer(tok, s -> tok.encode(s, false));
            List<String> texts = new ArrayList<>();
            for (String s : DetokenizerParityTest.CORPUS) {
                // U+FFFD itself, and NUL (byte 0 streams as "Ā" in mlx-lm), are not this test's subject.
                if (s.indexOf('\uFFFD') < 0 && s.indexOf('\u0000') < 0) {
                    texts.add(s);
                }
            }
            Random rnd = new Random(9);
            for (int k = 0; k < 300; k++) {
                texts.add(randomText(rnd, 40, COMMON));
            }
            int checked = 0;
            for (String text : texts) {
                int[] ids = tok.encode(text, false);
                if (!tok.decode(ids, false).equals(text)) {
                    continue; // the vocabulary cannot spell it (a byte without a token): not valid UTF-8 ids
                }
                checked++;
                SinkRun r = SinkRun.run(sinks, new int[0], List.of(), ids);
                // The byte-level detokenizer drops the leading space of the first text it emits.
                String expected = text.startsWith(" ") ? text.substring(1) : text;
                assertClean(r, expected, "default model, " + DetokenizerParityTest.quote(text));
            }
            assertTrue(checked > 200, "too few round-tripping texts: " + checked);
        }
    }
}
