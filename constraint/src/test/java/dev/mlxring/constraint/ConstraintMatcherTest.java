package dev.mlxring.constraint;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.lang.foreign.Arena;
import java.lang.foreign.MemorySegment;
import java.util.stream.Stream;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.Arguments;
import org.junit.jupiter.params.provider.MethodSource;

/** Compiling constraints for the default model and driving matchers over real token sequences. */
class ConstraintMatcherTest {

    static Stream<ConstraintCases> cases() {
        return ConstraintCases.all().stream();
    }

    @ParameterizedTest(name = "{0}")
    @MethodSource("cases")
    void everyTokenOfAValidOutputIsAllowedAndItsEndAccepts(ConstraintCases c) {
        ConstraintTokenizer tokenizer = DefaultModel.tokenizer();
        int[] tokens = DefaultModel.encode(c.validText());
        long compileStartNs = System.nanoTime();
        try (CompiledConstraint constraint = CompiledConstraint.compile(tokenizer, c.kind(), c.source());
                ConstraintMatcher matcher = constraint.newMatcher();
                Arena arena = Arena.ofConfined()) {
            long compileNs = System.nanoTime() - compileStartNs;
            MemorySegment mask = arena.allocate(matcher.maskByteSize(), Integer.BYTES);
            long maskNs = 0;
            for (int i = 0; i < tokens.length; i++) {
                long t0 = System.nanoTime();
                matcher.computeMask(mask);
                maskNs += System.nanoTime() - t0;
                assertTrue(
                        TokenMask.isAllowed(mask, tokens[i]),
                        c + ": token " + i + " (" + tokens[i] + ") of " + c.validText() + " is not allowed; "
                                + TokenMask.allowedCount(mask) + " are");
                assertFalse(TokenMask.isAllowed(mask, DefaultModel.eos()) && i == 0, c + ": EOS allowed at the start");
                matcher.consume(tokens[i]);
            }
            matcher.computeMask(mask);
            assertTrue(matcher.isAccepting(), c + ": not accepting after " + c.validText());
            assertTrue(TokenMask.isAllowed(mask, DefaultModel.eos()), c + ": EOS not allowed at the end");
            matcher.consume(DefaultModel.eos());
            assertTrue(matcher.isStopped(), c + ": not stopped after EOS");
            assertFalse(matcher.isError(), c + ": " + matcher.error());
            matcher.computeMask(mask);
            assertEquals(1, TokenMask.allowedCount(mask), c + ": after EOS only EOS is allowed");
            long warmNs = Long.MAX_VALUE; // a matcher from the same compiled constraint, its lexer states built
            for (int round = 0; round < 3; round++) {
                try (ConstraintMatcher again = constraint.newMatcher()) {
                    long t0 = System.nanoTime();
                    for (int token : tokens) {
                        again.computeMask(mask);
                        again.consume(token);
                    }
                    warmNs = Math.min(warmNs, System.nanoTime() - t0);
                }
            }
            System.out.printf(
                    "[constraint] %-32s compile %5.2f ms; mask %6.1f us/token first matcher, %5.1f us/token"
                            + " (incl. consume) next ones, over %d tokens%n",
                    c.name(),
                    compileNs / 1e6,
                    maskNs / 1e3 / tokens.length,
                    warmNs / 1e3 / tokens.length,
                    tokens.length);
        }
    }

    @Test
    void aTokenTheConstraintDoesNotAllowIsMaskedAndRefused() {
        int bracket = single(DefaultModel.encode("["));
        try (CompiledConstraint constraint = CompiledConstraint.compile(
                        DefaultModel.tokenizer(), ConstraintKind.JSON_SCHEMA, ConstraintCases.NESTED_OBJECT.source());
                ConstraintMatcher matcher = constraint.newMatcher();
                Arena arena = Arena.ofConfined()) {
            MemorySegment mask = arena.allocate(matcher.maskByteSize(), Integer.BYTES);
            matcher.computeMask(mask);
            assertFalse(TokenMask.isAllowed(mask, bracket), "'[' allowed where an object must start");
            assertTrue(TokenMask.isAllowed(mask, single(DefaultModel.encode("{"))), "'{' not allowed");
            assertEquals(0, matcher.acceptedPrefixLength(bracket));
            assertFalse(matcher.error().isPresent(), "checking a token must not move the matcher");

            ConstraintException refused = assertThrows(ConstraintException.class, () -> matcher.consume(bracket));
            assertTrue(refused.getMessage().contains("refused token " + bracket), refused.getMessage());
            assertTrue(matcher.error().isPresent());
            assertTrue(matcher.isStopped());

            mask.fill((byte) 0xFF);
            assertThrows(ConstraintException.class, () -> matcher.computeMask(mask));
            assertEquals(0, TokenMask.allowedCount(mask), "a failed mask must allow nothing");
        }
    }

    @Test
    void rollbackReturnsToTheEarlierMask() {
        int[] tokens = DefaultModel.encode("{\"color\":\"");
        try (CompiledConstraint constraint = CompiledConstraint.compile(
                        DefaultModel.tokenizer(), ConstraintKind.JSON_SCHEMA, ConstraintCases.ENUM.source());
                ConstraintMatcher matcher = constraint.newMatcher();
                Arena arena = Arena.ofConfined()) {
            MemorySegment before = arena.allocate(matcher.maskByteSize(), Integer.BYTES);
            MemorySegment after = arena.allocate(matcher.maskByteSize(), Integer.BYTES);
            matcher.computeMask(before);
            for (int t : tokens) {
                matcher.consume(t);
            }
            matcher.rollback(tokens.length);
            matcher.computeMask(after);
            assertEquals(-1, before.mismatch(after), "the mask after a full rollback differs from the first");
            assertThrows(ConstraintException.class, () -> matcher.rollback(1));
        }
    }

    static Stream<Arguments> badConstraints() {
        return Stream.of(
                Arguments.of(ConstraintKind.JSON_SCHEMA, "{\"type\":\"strin\"}", "strin"),
                Arguments.of(
                        ConstraintKind.JSON_SCHEMA,
                        "{\"type\":\"object\",\"properties\":{\"a\":{\"$ref\":\"#/$defs/missing\"}}}",
                        "/$defs/missing"),
                Arguments.of(ConstraintKind.JSON_SCHEMA, "{\"type\":\"array\",\"uniqueItems\":true}", "uniqueItems"),
                Arguments.of(ConstraintKind.JSON_SCHEMA, "{\"type\":", "EOF while parsing a value at line 1 column 8"),
                Arguments.of(ConstraintKind.LARK, "start: foo", "unknown name: \"foo\""),
                Arguments.of(ConstraintKind.REGEX, "(ab", "unclosed group"),
                Arguments.of(ConstraintKind.REGEX, "ab\0c", "U+0000"));
    }

    @ParameterizedTest(name = "{0} {1}")
    @MethodSource("badConstraints")
    void aConstraintThatDoesNotCompileIsRefusedWithLlguidancesMessage(
            ConstraintKind kind, String source, String named) {
        ConstraintException e = assertThrows(
                ConstraintException.class,
                () -> CompiledConstraint.compile(DefaultModel.tokenizer(), kind, source)
                        .close());
        assertTrue(e.getMessage().startsWith(kind.llguidanceTag() + " constraint "), e.getMessage());
        assertTrue(e.getMessage().contains(named), e.getMessage());
    }

    @Test
    void masksNeedAlignedNativeMemoryOfTheirSize() {
        try (CompiledConstraint constraint =
                        CompiledConstraint.compile(DefaultModel.tokenizer(), ConstraintKind.REGEX, "[0-9]+");
                ConstraintMatcher matcher = constraint.newMatcher();
                Arena arena = Arena.ofConfined()) {
            assertEquals(TokenMask.byteSize(DefaultModel.vocabSize()), matcher.maskByteSize());
            assertThrows(
                    IllegalArgumentException.class,
                    () -> matcher.computeMask(MemorySegment.ofArray(new int[(int) matcher.maskByteSize() / 4])));
            assertThrows(
                    IllegalArgumentException.class,
                    () -> matcher.computeMask(arena.allocate(matcher.maskByteSize() - 4, Integer.BYTES)));
            assertThrows(
                    IllegalArgumentException.class,
                    () -> matcher.computeMask(arena.allocate(matcher.maskByteSize() + 8, Integer.BYTES)
                            .asSlice(2)));
        }
    }

    private static int single(int[] ids) {
        assertEquals(1, ids.length, "expected one token");
        return ids[0];
    }
}
