package dev.mlxring.pycompat;

import static org.junit.jupiter.api.Assertions.assertArrayEquals;
import static org.junit.jupiter.api.Assertions.assertEquals;

import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.ObjectMapper;
import dev.mlxring.mlx.PythonScript;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.HexFormat;
import java.util.List;
import java.util.Map;
import java.util.Random;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

/**
 * {@link PyUtf8Decoder} against Python's {@code bytes.decode("utf-8", "replace")} on random byte
 * strings rich in lead, continuation and never-valid bytes, fed whole and in random chunks.
 */
class PyUtf8DecoderTest {
    private static final ObjectMapper JSON = new ObjectMapper();

    @TempDir
    Path work;

    private static final int[] INTERESTING = {
        0x00, 0x41, 0x7F, 0x80, 0x8F, 0x90, 0x9F, 0xA0, 0xBF, 0xC0, 0xC1, 0xC2, 0xC3, 0xDF, 0xE0, 0xE1, 0xE2, 0x96,
        0x81, 0xEC, 0xED, 0xEE, 0xEF, 0xF0, 0xF1, 0xF3, 0xF4, 0xF5, 0xF7, 0xF8, 0xFE, 0xFF
    };

    @Test
    void randomBytesDecodeLikePython() throws Exception {
        Random rnd = new Random(7);
        List<byte[]> inputs = new ArrayList<>();
        for (int k = 0; k < 3000; k++) {
            byte[] b = new byte[rnd.nextInt(12)];
            for (int i = 0; i < b.length; i++) {
                b[i] = (byte) (rnd.nextBoolean() ? INTERESTING[rnd.nextInt(INTERESTING.length)] : rnd.nextInt(256));
            }
            inputs.add(b);
        }
        for (String s : List.of("😀", "日本語", "é", "▁x", "\uD800".repeat(0))) {
            inputs.add(s.getBytes(java.nio.charset.StandardCharsets.UTF_8));
        }
        HexFormat hex = HexFormat.of();
        Path spec = work.resolve("spec.json");
        Files.writeString(
                spec,
                JSON.writeValueAsString(
                        Map.of("hex", inputs.stream().map(hex::formatHex).toList())));
        JsonNode out =
                JSON.readTree(PythonScript.run("oracle/detokenize_oracle.py", 600, List.of("--utf8", spec.toString())));
        Random chunks = new Random(11);
        for (int k = 0; k < inputs.size(); k++) {
            byte[] b = inputs.get(k);
            String expected = out.get("decoded").get(k).asText();
            PyUtf8Decoder d = new PyUtf8Decoder(false);
            StringBuilder sb = new StringBuilder();
            d.feed(b, sb);
            d.end(sb);
            // As code points, so a failure shows controls and U+FFFD plainly.
            assertArrayEquals(
                    expected.codePoints().toArray(),
                    sb.toString().codePoints().toArray(),
                    "decode of " + hex.formatHex(b));
            // Incremental: whatever was emitted before the end is a prefix of the whole decode.
            PyUtf8Decoder d2 = new PyUtf8Decoder(false);
            StringBuilder sb2 = new StringBuilder();
            for (byte x : b) {
                d2.feed(x, sb2);
                if (chunks.nextInt(3) == 0) {
                    assertEquals(expected.substring(0, sb2.length()), sb2.toString(), "prefix of " + hex.formatHex(b));
                }
            }
            d2.end(sb2);
            assertEquals(expected, sb2.toString());
        }
    }
}
