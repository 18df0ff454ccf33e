package dev.mlxring.constraint;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertNull;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;
import static org.junit.jupiter.api.Assertions.fail;

import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.ObjectMapper;
import com.fasterxml.jackson.databind.node.ArrayNode;
import com.fasterxml.jackson.databind.node.ObjectNode;
import dev.mlxring.mlx.PythonScript;
import java.io.IOException;
import java.lang.foreign.Arena;
import java.lang.foreign.MemorySegment;
import java.lang.foreign.ValueLayout;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.HexFormat;
import java.util.List;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

/**
 * The Java binding's masks against llguidance's own Python package (scripts/oracle/
 * constraint_masks.py) over the same tokenizer.json: the full mask bytes at every step of every
 * case must be identical, and both must refuse the same token.
 */
class ConstraintOracleTest {
    private static final ObjectMapper JSON = new ObjectMapper();

    private record Run(ConstraintKind kind, String source, int[] tokens) {}

    @Test
    void masksAreByteForByteLlguidancePythons(@TempDir Path work) throws IOException {
        List<Run> runs = new ArrayList<>();
        for (ConstraintCases c : ConstraintCases.all()) {
            runs.add(new Run(c.kind(), c.source(), DefaultModel.encode(c.validText())));
        }
        // A text that leaves the schema after a few tokens: both sides must refuse the same one.
        runs.add(new Run(
                ConstraintKind.JSON_SCHEMA,
                ConstraintCases.NESTED_OBJECT.source(),
                DefaultModel.encode("{\"name\":\"Ann\",\"age\":3}")));
        // Free-form JSON: wide masks (most of the vocabulary allowed inside a string).
        runs.add(new Run(
                ConstraintKind.JSON_SCHEMA,
                "{\"type\":\"object\"}",
                DefaultModel.encode(
                        "{\"note\": \"caf\u00e9 \u2013 \u00fcber na\u00efve\", \"n\": [1, 2.5e3, null, true]}")));

        ObjectNode request = JSON.createObjectNode();
        request.put("tokenizer_json", DefaultModel.tokenizerJson().toString());
        request.put("vocab_size", DefaultModel.vocabSize());
        request.put("eos_token", DefaultModel.eos());
        ArrayNode cases = request.putArray("cases");
        for (Run r : runs) {
            ObjectNode c = cases.addObject();
            c.put("kind", r.kind().llguidanceTag());
            c.put("source", r.source());
            ArrayNode tokens = c.putArray("tokens");
            for (int t : r.tokens()) {
                tokens.add(t);
            }
        }
        Path requestFile = work.resolve("request.json");
        JSON.writeValue(requestFile.toFile(), request);
        JsonNode oracle =
                JSON.readTree(PythonScript.run("oracle/constraint_masks.py", 120, List.of(requestFile.toString())));

        int steps = 0;
        long maskNs = 0;
        for (int i = 0; i < runs.size(); i++) {
            Run r = runs.get(i);
            JsonNode expected = oracle.path("cases").get(i);
            String label =
                    "case " + i + " (" + r.kind() + " " + r.source().strip().replaceAll("\\s+", " ") + ")";
            assertTrue(
                    expected.path("compile_error").isNull(),
                    label + ": the oracle did not compile it: " + expected.path("compile_error"));
            try (CompiledConstraint constraint =
                            CompiledConstraint.compile(DefaultModel.tokenizer(), r.kind(), r.source());
                    ConstraintMatcher matcher = constraint.newMatcher();
                    Arena arena = Arena.ofConfined()) {
                MemorySegment mask = arena.allocate(matcher.maskByteSize(), Integer.BYTES);
                int consumed = 0;
                for (int step = 0; ; step++) {
                    long t0 = System.nanoTime();
                    matcher.computeMask(mask);
                    maskNs += System.nanoTime() - t0;
                    steps++;
                    String expectedHex = expected.path("masks").get(step).asText();
                    if (!expectedHex.equals(hex(mask))) {
                        fail(label + ": mask differs at step " + step + ": " + difference(expectedHex, mask));
                    }
                    assertEquals(
                            expected.path("accepting").get(step).asBoolean(),
                            matcher.isAccepting(),
                            label + ": is_accepting differs at step " + step);
                    if (step == r.tokens().length) {
                        break;
                    }
                    int token = r.tokens()[step];
                    if (expected.path("consumed").asInt() == step) {
                        assertThrows(
                                ConstraintException.class,
                                () -> matcher.consume(token),
                                label + ": the oracle refused token " + step + " (" + token + "), Java did not");
                        break;
                    }
                    matcher.consume(token);
                    consumed++;
                }
                assertEquals(expected.path("consumed").asInt(), consumed, label + ": consumed token count");
                if (consumed == r.tokens().length) {
                    assertNull(matcher.error().orElse(null), label);
                }
            }
        }
        assertTrue(
                runs.get(runs.size() - 2).tokens().length
                        > oracle.path("cases")
                                .get(runs.size() - 2)
                                .path("consumed")
                                .asInt(),
                "the leaving-the-schema case was refused by neither side");
        System.out.printf(
                "[constraint] oracle: %d masks identical to llguidance %s (Python) over %d cases;"
                        + " Java mask %.1f us/step%n",
                steps, oracle.path("llguidance_version").asText(), runs.size(), maskNs / 1e3 / steps);
    }

    /** The allowed counts and the first token id on which the two masks disagree. */
    private static String difference(String expectedHex, MemorySegment mask) {
        MemorySegment expected = MemorySegment.ofArray(HexFormat.of().parseHex(expectedHex));
        if (expected.byteSize() != mask.byteSize()) {
            return "Python's mask has " + expected.byteSize() + " bytes, Java's " + mask.byteSize();
        }
        int first = -1;
        for (int id = 0; id < mask.byteSize() * 8 && first < 0; id++) {
            if (TokenMask.isAllowed(expected, id) != TokenMask.isAllowed(mask, id)) {
                first = id;
            }
        }
        return "Python allows " + TokenMask.allowedCount(expected) + " tokens, Java " + TokenMask.allowedCount(mask)
                + "; first difference at token " + first + " (allowed by "
                + (TokenMask.isAllowed(mask, first) ? "Java" : "Python") + ")";
    }

    private static String hex(MemorySegment mask) {
        return HexFormat.of().formatHex(mask.toArray(ValueLayout.JAVA_BYTE));
    }
}
