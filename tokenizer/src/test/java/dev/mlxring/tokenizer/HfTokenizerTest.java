package dev.mlxring.tokenizer;

import static org.junit.jupiter.api.Assertions.assertArrayEquals;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertNull;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.io.IOException;
import java.nio.file.Files;
import java.nio.file.NoSuchFileException;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.List;
import java.util.Optional;
import java.util.OptionalInt;
import java.util.concurrent.ExecutorService;
import java.util.concurrent.Executors;
import java.util.concurrent.Future;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

/** Loading, configuration and lifecycle of {@link HfTokenizer}, on hand-written files (no Python). */
class HfTokenizerTest {

    /**
     * A WordLevel tokenizer whose tokenizer.json asks for truncation to 4 and padding to 8: both must
     * be off in HfTokenizer. The post-processor prepends {@code <s>}.
     */
    static final String WORD_LEVEL = """
            {"version": "1.0",
             "truncation": {"direction": "Right", "max_length": 4, "strategy": "LongestFirst", "stride": 0},
             "padding": {"strategy": {"Fixed": 8}, "direction": "Right", "pad_to_multiple_of": null,
                         "pad_id": 0, "pad_type_id": 0, "pad_token": "<pad>"},
             "added_tokens": [
               {"id": 0, "content": "<pad>", "single_word": false, "lstrip": false, "rstrip": false, "normalized": false, "special": true},
               {"id": 1, "content": "<s>", "single_word": false, "lstrip": false, "rstrip": false, "normalized": false, "special": true},
               {"id": 2, "content": "</s>", "single_word": false, "lstrip": false, "rstrip": false, "normalized": false, "special": true},
               {"id": 7, "content": "<extra>", "single_word": false, "lstrip": false, "rstrip": false, "normalized": false, "special": false}],
             "normalizer": null,
             "pre_tokenizer": {"type": "Whitespace"},
             "post_processor": {"type": "TemplateProcessing",
                 "single": [{"SpecialToken": {"id": "<s>", "type_id": 0}}, {"Sequence": {"id": "A", "type_id": 0}}],
                 "pair": [{"Sequence": {"id": "A", "type_id": 0}}, {"Sequence": {"id": "B", "type_id": 1}}],
                 "special_tokens": {"<s>": {"id": "<s>", "ids": [1], "tokens": ["<s>"]}}},
             "decoder": null,
             "model": {"type": "WordLevel", "vocab": {"<pad>": 0, "<s>": 1, "</s>": 2, "<unk>": 3, "a": 4, "b": 5, "c": 6},
                       "unk_token": "<unk>"}}
            """;

    @TempDir
    Path dir;

    Path write(String name, String content) throws IOException {
        return Files.writeString(dir.resolve(name), content);
    }

    @Test
    void noTruncationNoPaddingAndSpecialTokensPassThrough() throws IOException {
        write("tokenizer.json", WORD_LEVEL);
        try (HfTokenizer tok = HfTokenizer.load(dir)) {
            assertArrayEquals(new int[] {4, 5, 6, 4, 5, 6, 3}, tok.encode("a b c a b c zzz", false));
            assertArrayEquals(new int[] {1, 4, 5, 6, 4, 5, 6}, tok.encode("a b c a b c", true));
            assertArrayEquals(new int[] {}, tok.encode("", false));
            assertArrayEquals(new int[] {1}, tok.encode("", true));
            assertEquals("<s> a b <extra>", tok.decode(new int[] {1, 4, 5, 7}, false));
            assertEquals("a b <extra>", tok.decode(new int[] {1, 4, 5, 7}, true));
            assertEquals("a", tok.decode(new int[] {4, 999}, false), "unknown ids are dropped, as in Python");
        }
    }

    @Test
    void vocabularyLookups() throws IOException {
        write("tokenizer.json", WORD_LEVEL);
        try (HfTokenizer tok = HfTokenizer.load(dir.resolve("tokenizer.json"))) { // file path accepted too
            assertEquals(8, tok.vocabSize());
            assertEquals(OptionalInt.of(5), tok.tokenId("b"));
            assertEquals(OptionalInt.of(7), tok.tokenId("<extra>"));
            assertEquals(OptionalInt.empty(), tok.tokenId("zzz"));
            assertEquals("</s>", tok.token(2));
            assertEquals("<extra>", tok.token(7));
            assertNull(tok.token(8));
            assertNull(tok.token(-1));
            assertArrayEquals(new int[] {}, tok.eosTokenIds());
            assertEquals(Optional.empty(), tok.bosToken());
            assertEquals(Optional.empty(), tok.addBosToken());
        }
    }

    @Test
    void configsGiveSpecialTokensAndEosUnion() throws IOException {
        write("tokenizer.json", WORD_LEVEL);
        write("tokenizer_config.json", """
                {"bos_token": "<s>", "add_bos_token": false,
                 "eos_token": {"__type": "AddedToken", "content": "</s>", "special": true}}""");
        write("config.json", "{\"eos_token_id\": 2, \"text_config\": {\"eos_token_id\": [2, 6]}}");
        write("generation_config.json", "{\"eos_token_id\": [2, 5]}");
        try (HfTokenizer tok = HfTokenizer.load(dir)) {
            assertEquals(Optional.of("<s>"), tok.bosToken());
            assertEquals(Optional.of("</s>"), tok.eosToken());
            assertEquals(Optional.of(false), tok.addBosToken());
            assertArrayEquals(new int[] {2, 6, 5}, tok.eosTokenIds());
        }
    }

    @Test
    void eosFallsBackToTokenizerConfig() throws IOException {
        write("tokenizer.json", WORD_LEVEL);
        write("tokenizer_config.json", "{\"eos_token\": \"</s>\"}");
        try (HfTokenizer tok = HfTokenizer.load(dir)) {
            assertArrayEquals(new int[] {2}, tok.eosTokenIds());
        }
    }

    @Test
    void missingTokenizerJsonNamesThePath() {
        var e = assertThrows(NoSuchFileException.class, () -> HfTokenizer.load(dir));
        assertTrue(e.getMessage().contains(dir.resolve("tokenizer.json").toString()), e.getMessage());
    }

    @Test
    void malformedJsonNamesTheFile() throws IOException {
        Path f = write("tokenizer.json", "{\"model\": {\"vocab\": ");
        var e = assertThrows(IOException.class, () -> HfTokenizer.load(dir));
        assertTrue(
                e.getMessage().contains("Malformed tokenizer.json")
                        && e.getMessage().contains(f.toString()),
                e.getMessage());
    }

    @Test
    void jsonThatIsNoTokenizerNamesTheFile() throws IOException {
        write("tokenizer.json", "{\"hello\": 1}");
        var e = assertThrows(IOException.class, () -> HfTokenizer.load(dir));
        assertTrue(e.getMessage().contains("tokenizer.json"), e.getMessage());
        write("tokenizer.json", WORD_LEVEL.replace("\"WordLevel\"", "\"NoSuchModel\""));
        e = assertThrows(IOException.class, () -> HfTokenizer.load(dir));
        assertTrue(e.getMessage().contains("Malformed tokenizer.json"), e.getMessage());
    }

    @Test
    void malformedSideConfigNamesTheFile() throws IOException {
        write("tokenizer.json", WORD_LEVEL);
        write("generation_config.json", "{not json");
        var e = assertThrows(IOException.class, () -> HfTokenizer.load(dir));
        assertTrue(e.getMessage().contains("generation_config.json"), e.getMessage());
    }

    @Test
    void rejectsWhatPythonRejects() throws IOException {
        write("tokenizer.json", WORD_LEVEL);
        try (HfTokenizer tok = HfTokenizer.load(dir)) {
            assertThrows(IllegalArgumentException.class, () -> tok.encode("a \ud800 b", false));
            assertThrows(IllegalArgumentException.class, () -> tok.encode("a \udc00", false));
            assertThrows(IllegalArgumentException.class, () -> tok.decode(new int[] {4, -1}, false));
            assertThrows(NullPointerException.class, () -> tok.encode(null, false));
        }
    }

    @Test
    void closeFreesAndIsIdempotent() throws IOException {
        write("tokenizer.json", WORD_LEVEL);
        HfTokenizer tok = HfTokenizer.load(dir);
        tok.close();
        tok.close();
        assertThrows(IllegalStateException.class, () -> tok.encode("a", false));
        assertThrows(IllegalStateException.class, () -> tok.decode(new int[] {4}, false));
        assertEquals(OptionalInt.of(4), tok.tokenId("a"));
    }

    @Test
    void concurrentEncodeDecode() throws Exception {
        write("tokenizer.json", WORD_LEVEL);
        String text = "a b c ".repeat(200);
        try (HfTokenizer tok = HfTokenizer.load(dir);
                ExecutorService pool = Executors.newFixedThreadPool(8)) {
            int[] expected = tok.encode(text, true);
            String decoded = tok.decode(expected, true);
            List<Future<Boolean>> futures = new ArrayList<>();
            for (int t = 0; t < 8; t++) {
                futures.add(pool.submit(() -> {
                    for (int i = 0; i < 200; i++) {
                        int[] ids = tok.encode(text, true);
                        if (!java.util.Arrays.equals(expected, ids) || !decoded.equals(tok.decode(ids, true))) {
                            return false;
                        }
                    }
                    return true;
                }));
            }
            for (Future<Boolean> f : futures) {
                assertTrue(f.get());
            }
        }
    }

    @Test
    void nativeLibraryCacheIsConfigured() {
        Path cache = HfTokenizer.nativeCacheDir();
        assertTrue(cache.isAbsolute(), cache.toString());
        assertEquals("true", System.getProperty("ai.djl.offline", System.getenv("DJL_OFFLINE")));
    }
}
