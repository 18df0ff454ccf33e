package dev.mlxring.constraint;

import static org.junit.jupiter.api.Assertions.assertDoesNotThrow;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import dev.mlxring.mlx.ProjectHome;
import java.io.IOException;
import java.lang.foreign.Arena;
import java.lang.foreign.MemorySegment;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.concurrent.atomic.AtomicInteger;
import java.util.regex.Matcher;
import java.util.regex.Pattern;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

/** The native tokenizer's life cycle, its canonical-tokenizer callback and the library pin. */
class ConstraintTokenizerTest {
    private static final int A = 0;
    private static final int B = 1;
    private static final int AB = 2;
    private static final int EOS = 4;

    /** A byte-level vocabulary {a, b, ab, c, <eos>}: small, so each test builds its own tokenizer. */
    private static ConstraintVocabulary tinyVocabulary(Path dir) throws IOException {
        Path file = dir.resolve("tokenizer.json");
        Files.writeString(file, """
                {"model":{"type":"BPE","vocab":{"a":0,"b":1,"ab":2,"c":3}},
                 "added_tokens":[{"id":4,"content":"<eos>","special":true}],
                 "decoder":{"type":"ByteLevel"}}""", StandardCharsets.UTF_8);
        return ConstraintVocabulary.fromTokenizerJson(file, 0);
    }

    /** The canonical tokenization of the tiny vocabulary: "ab" merged, other letters alone. */
    private static int[] tinyEncode(String text) {
        return text.replace("ab", "X").chars().map(c -> c == 'X' ? AB : c - 'a').toArray();
    }

    @Test
    void closeIsRefusedWhileAConstraintOrMatcherIsOpen(@TempDir Path dir) throws IOException {
        ConstraintTokenizer tokenizer =
                ConstraintTokenizer.create(tinyVocabulary(dir), new int[] {EOS}, ConstraintTokenizerTest::tinyEncode);
        CompiledConstraint constraint = CompiledConstraint.compile(tokenizer, ConstraintKind.REGEX, "(ab)+c?");
        ConstraintMatcher matcher = constraint.newMatcher();
        constraint.close();
        IllegalStateException open = assertThrows(IllegalStateException.class, tokenizer::close);
        assertTrue(open.getMessage().contains("1 compiled constraint(s) or matcher(s)"), open.getMessage());

        try (Arena arena = Arena.ofConfined()) { // the matcher outlives its compiled constraint
            MemorySegment mask = arena.allocate(matcher.maskByteSize(), Integer.BYTES);
            matcher.computeMask(mask);
            assertTrue(TokenMask.isAllowed(mask, AB) || TokenMask.isAllowed(mask, A));
            assertFalse(TokenMask.isAllowed(mask, B));
        }
        matcher.close();
        matcher.close();
        assertDoesNotThrow(tokenizer::close);
        assertDoesNotThrow(tokenizer::close);
        assertThrows(
                IllegalStateException.class, () -> CompiledConstraint.compile(tokenizer, ConstraintKind.REGEX, "a"));
        assertThrows(IllegalStateException.class, () -> matcher.consume(A));
    }

    @Test
    void aFailingCanonicalTokenizerFailsTheMaskThatNeededIt(@TempDir Path dir) throws IOException {
        AtomicInteger calls = new AtomicInteger();
        try (ConstraintTokenizer tokenizer = ConstraintTokenizer.create(tinyVocabulary(dir), new int[] {EOS}, text -> {
                    calls.incrementAndGet();
                    throw new IllegalStateException("tokenizer exploded on " + text);
                });
                CompiledConstraint constraint = CompiledConstraint.compile(tokenizer, ConstraintKind.REGEX, "abc");
                ConstraintMatcher matcher = constraint.newMatcher();
                Arena arena = Arena.ofConfined()) {
            MemorySegment mask = arena.allocate(matcher.maskByteSize(), Integer.BYTES);
            mask.fill((byte) 0xFF);
            ConstraintException e = assertThrows(ConstraintException.class, () -> matcher.computeMask(mask));
            assertTrue(calls.get() > 0, "llguidance never asked for the forced text's tokens");
            assertTrue(e.getMessage().contains("tokenizer exploded on"), e.getMessage());
            assertEquals(0, TokenMask.allowedCount(mask), "a failed mask must allow nothing");
            assertThrows(ConstraintException.class, () -> matcher.consume(AB), "the failure is kept");
        }
    }

    @Test
    void forcedTextIsMaskedToItsCanonicalTokens(@TempDir Path dir) throws IOException {
        try (ConstraintTokenizer tokenizer = ConstraintTokenizer.create(
                        tinyVocabulary(dir), new int[] {EOS}, ConstraintTokenizerTest::tinyEncode);
                CompiledConstraint constraint = CompiledConstraint.compile(tokenizer, ConstraintKind.REGEX, "abc");
                ConstraintMatcher matcher = constraint.newMatcher();
                Arena arena = Arena.ofConfined()) {
            MemorySegment mask = arena.allocate(matcher.maskByteSize(), Integer.BYTES);
            matcher.computeMask(mask);
            assertTrue(TokenMask.isAllowed(mask, AB), "the canonical first token of \"abc\" is \"ab\"");
            assertFalse(TokenMask.isAllowed(mask, A), "\"a\" alone is not how the model writes \"abc\"");
        }
    }

    @Test
    void eosIdsMustBeGivenAndInTheVocabulary(@TempDir Path dir) throws IOException {
        ConstraintVocabulary vocabulary = tinyVocabulary(dir);
        assertThrows(
                IllegalArgumentException.class,
                () -> ConstraintTokenizer.create(vocabulary, new int[0], ConstraintTokenizerTest::tinyEncode));
        IllegalArgumentException e = assertThrows(
                IllegalArgumentException.class,
                () -> ConstraintTokenizer.create(vocabulary, new int[] {EOS, 5}, ConstraintTokenizerTest::tinyEncode));
        assertTrue(e.getMessage().contains("EOS token id 5"), e.getMessage());
    }

    @Test
    void everyEosIdEndsAnAcceptingMatch(@TempDir Path dir) throws IOException {
        try (ConstraintTokenizer tokenizer = ConstraintTokenizer.create(
                        tinyVocabulary(dir), new int[] {EOS, 3}, ConstraintTokenizerTest::tinyEncode);
                CompiledConstraint constraint = CompiledConstraint.compile(tokenizer, ConstraintKind.REGEX, "(ab)+");
                ConstraintMatcher matcher = constraint.newMatcher();
                Arena arena = Arena.ofConfined()) {
            matcher.consume(AB);
            MemorySegment mask = arena.allocate(matcher.maskByteSize(), Integer.BYTES);
            matcher.computeMask(mask);
            assertTrue(TokenMask.isAllowed(mask, EOS) && TokenMask.isAllowed(mask, 3), "both EOS ids allowed");
            matcher.consume(3);
            assertTrue(matcher.isStopped());
            assertFalse(matcher.isError());
        }
    }

    @Test
    void theLoadedLibraryIsThePinnedVersionTheOracleUsesToo() throws IOException {
        Path home = ProjectHome.get();
        String crate = find(home.resolve("constraint/src/main/rust/Cargo.toml"), "(?m)^llguidance = \"=([0-9.]+)\"");
        String python = find(home.resolve("requirements.txt"), "(?m)^llguidance==([0-9.]+)$");
        assertEquals(crate, python, "Cargo.toml and requirements.txt pin different llguidance versions");
        assertTrue(Llguidance.version().contains("llguidance@" + crate), Llguidance.version());
    }

    private static String find(Path file, String regex) throws IOException {
        Matcher m = Pattern.compile(regex).matcher(Files.readString(file));
        assertTrue(m.find(), file + " has no " + regex);
        return m.group(1);
    }
}
