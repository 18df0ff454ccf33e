package dev.mlxring.constraint;

import static org.junit.jupiter.api.Assertions.assertArrayEquals;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.io.IOException;
import java.nio.ByteBuffer;
import java.nio.charset.CharacterCodingException;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

/** Token ids to bytes, from tokenizer.json. */
class ConstraintVocabularyTest {

    @Test
    void everyTextTokenOfTheDefaultModelIsTheBytesItsTokenizerDecodesItTo() throws IOException {
        ConstraintVocabulary vocabulary = ConstraintVocabulary.fromTokenizerJson(DefaultModel.tokenizerJson(), 0);
        assertEquals(DefaultModel.vocabSize(), vocabulary.size());
        int compared = 0;
        for (int id = 0; id < vocabulary.size(); id++) {
            if (vocabulary.isSpecial(id)) {
                continue;
            }
            String text;
            try { // a token that is part of a multi-byte character decodes to U+FFFD; compare the others
                text = StandardCharsets.UTF_8
                        .newDecoder()
                        .decode(ByteBuffer.wrap(vocabulary.tokenBytes(id)))
                        .toString();
            } catch (CharacterCodingException e) {
                continue;
            }
            assertEquals(DefaultModel.decode(id), text, "token " + id);
            compared++;
        }
        assertTrue(compared > vocabulary.size() * 9 / 10, "only " + compared + " tokens were valid UTF-8");
    }

    @Test
    void addedTokensAreSpecialAndMarked() throws IOException {
        ConstraintVocabulary vocabulary = ConstraintVocabulary.fromTokenizerJson(DefaultModel.tokenizerJson(), 0);
        int eos = DefaultModel.eos();
        assertTrue(vocabulary.isSpecial(eos));
        byte[] expected = ("\u00ff" + "<|im_end|>").getBytes(StandardCharsets.ISO_8859_1);
        assertArrayEquals(expected, vocabulary.tokenBytes(eos));
        assertFalse(vocabulary.isSpecial(DefaultModel.encode("hello")[0]));
    }

    @Test
    void aLargerModelVocabularyAddsIdsWithoutBytes() throws IOException {
        int size = DefaultModel.vocabSize() + 40;
        ConstraintVocabulary vocabulary = ConstraintVocabulary.fromTokenizerJson(DefaultModel.tokenizerJson(), size);
        assertEquals(size, vocabulary.size());
        assertEquals(0, vocabulary.tokenBytes(size - 1).length);
        IllegalArgumentException tooSmall = assertThrows(
                IllegalArgumentException.class,
                () -> ConstraintVocabulary.fromTokenizerJson(DefaultModel.tokenizerJson(), 1000));
        assertTrue(tooSmall.getMessage().contains("vocabSize 1000"), tooSmall.getMessage());
    }

    @Test
    void byteFallbackEntriesAreTheirByteOrTheirTextWithSpaces(@TempDir Path dir) throws IOException {
        Path file = write(dir, """
                {"model":{"type":"BPE","vocab":{"<unk>":0,"<0x0A>":1,"<0xE2>":2,"\u2581hello":3,"wor\u2581ld":4}},
                 "added_tokens":[{"id":0,"content":"<unk>","special":true}],
                 "decoder":{"type":"Sequence","decoders":[
                   {"type":"Replace","pattern":{"String":"\u2581"},"content":" "},
                   {"type":"ByteFallback"},{"type":"Fuse"},{"type":"Strip","content":" ","start":1,"stop":0}]}}""");
        ConstraintVocabulary vocabulary = ConstraintVocabulary.fromTokenizerJson(file, 0);
        assertArrayEquals(new byte[] {0x0A}, vocabulary.tokenBytes(1));
        assertArrayEquals(new byte[] {(byte) 0xE2}, vocabulary.tokenBytes(2));
        assertArrayEquals(" hello".getBytes(StandardCharsets.UTF_8), vocabulary.tokenBytes(3));
        assertArrayEquals("wor ld".getBytes(StandardCharsets.UTF_8), vocabulary.tokenBytes(4));
        assertTrue(vocabulary.isSpecial(0));
    }

    @Test
    void aDecoderWithoutAByteMappingIsRefused(@TempDir Path dir) throws IOException {
        Path file = write(dir, """
                {"model":{"type":"WordPiece","vocab":{"a":0}},"added_tokens":[],"decoder":{"type":"WordPiece"}}""");
        IllegalArgumentException e =
                assertThrows(IllegalArgumentException.class, () -> ConstraintVocabulary.fromTokenizerJson(file, 0));
        assertTrue(e.getMessage().contains("\"WordPiece\""), e.getMessage());
    }

    @Test
    void aFileThatIsNotATokenizerIsRefusedNamingIt(@TempDir Path dir) throws IOException {
        Path notJson = write(dir, "not json");
        IOException e = assertThrows(IOException.class, () -> ConstraintVocabulary.fromTokenizerJson(notJson, 0));
        assertTrue(e.getMessage().contains(notJson.toString()), e.getMessage());
        Path noVocab = write(dir, "{\"model\":{}}");
        e = assertThrows(IOException.class, () -> ConstraintVocabulary.fromTokenizerJson(noVocab, 0));
        assertTrue(e.getMessage().contains("model.vocab"), e.getMessage());
    }

    private static Path write(Path dir, String json) throws IOException {
        Path file = Files.createTempFile(dir, "tokenizer", ".json");
        Files.writeString(file, json, StandardCharsets.UTF_8);
        return file;
    }
}
