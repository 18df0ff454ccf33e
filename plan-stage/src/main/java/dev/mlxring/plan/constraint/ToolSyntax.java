package dev.mlxring.plan.constraint;

import dev.mlxring.constraint.ConstraintVocabulary;
import java.io.ByteArrayOutputStream;
import java.nio.charset.StandardCharsets;
import java.util.ArrayList;
import java.util.List;
import java.util.Objects;
import java.util.function.Function;

/**
 * A model's tool-call syntax as the sink reads it, for {@link ToolCallGrammar}: which of mlx-lm's
 * tool parsers the model uses, its reasoning markers, and how its tokenizer writes a marker
 * (special tokens and text). Made once per model; immutable, and thread-safe when {@code pieces}
 * is.
 *
 * @param format mlx-lm's tool-parser module name, as sink-stage's {@code ToolCallParser.type()} /
 *     {@code ToolCallParsers.resolveType} give it ({@code json_tools}, {@code mistral}, ...), or null
 *     when the model has no tool-call format
 * @param thinkStart the reasoning block's opening marker (sink-stage's {@code ThinkMarkers.start()}),
 *     or null for a model without one
 * @param thinkEnd its closing marker ({@code ThinkMarkers.end()}), null exactly when {@code thinkStart} is
 * @param pieces a marker's text as the tokenizer writes it: special tokens and text runs, in order
 */
public record ToolSyntax(
        String format, String thinkStart, String thinkEnd, Function<String, List<MarkerPiece>> pieces) {

    public ToolSyntax {
        Objects.requireNonNull(pieces, "pieces");
        if ((thinkStart == null) != (thinkEnd == null)) {
            throw new IllegalArgumentException(
                    "think markers come in pairs: start " + thinkStart + ", end " + thinkEnd);
        }
        if (thinkStart != null && (thinkStart.isEmpty() || thinkEnd.isEmpty())) {
            throw new IllegalArgumentException("think markers must not be empty");
        }
    }

    /**
     * The syntax of a model whose tokenizer encodes with {@code encoder} ({@code
     * tokenizer.encode(text, add_special_tokens=False)}, e.g. the tokenizer module's {@code HfTokenizer}) and
     * whose llguidance vocabulary is {@code vocabulary}: a marker's tokens that are added tokens
     * ({@link ConstraintVocabulary#isSpecial}) are special pieces, the runs between them text.
     * A marker whose tokens do not spell it exactly is refused when a grammar asks for it.
     */
    public static ToolSyntax of(
            String format,
            String thinkStart,
            String thinkEnd,
            Function<String, int[]> encoder,
            ConstraintVocabulary vocabulary) {
        Objects.requireNonNull(encoder, "encoder");
        Objects.requireNonNull(vocabulary, "vocabulary");
        return new ToolSyntax(format, thinkStart, thinkEnd, marker -> split(marker, encoder.apply(marker), vocabulary));
    }

    /**
     * As {@link #of(String, String, String, Function, ConstraintVocabulary)}, with the vocabulary
     * from {@code vocabulary} on the first marker asked for (reading it takes up to a second, which
     * a server that never constrains tool calls never pays; the supplier memoizes it).
     */
    public static ToolSyntax of(
            String format,
            String thinkStart,
            String thinkEnd,
            Function<String, int[]> encoder,
            java.util.function.Supplier<ConstraintVocabulary> vocabulary) {
        Objects.requireNonNull(encoder, "encoder");
        Objects.requireNonNull(vocabulary, "vocabulary");
        return new ToolSyntax(
                format, thinkStart, thinkEnd, marker -> split(marker, encoder.apply(marker), vocabulary.get()));
    }

    private static List<MarkerPiece> split(String marker, int[] ids, ConstraintVocabulary vocabulary) {
        List<MarkerPiece> out = new ArrayList<>();
        ByteArrayOutputStream run = new ByteArrayOutputStream();
        StringBuilder spelled = new StringBuilder();
        for (int id : ids) {
            if (id < 0 || id >= vocabulary.size()) {
                throw new IllegalArgumentException(
                        "marker " + marker + " encodes to token " + id + ", outside the vocabulary");
            }
            byte[] b = vocabulary.tokenBytes(id);
            if (vocabulary.isSpecial(id)) {
                flush(run, out, spelled);
                String content = new String(b, 1, b.length - 1, StandardCharsets.UTF_8);
                out.add(MarkerPiece.special(id, content));
                spelled.append(content);
            } else {
                run.writeBytes(b);
            }
        }
        flush(run, out, spelled);
        if (!spelled.toString().equals(marker)) {
            throw new IllegalArgumentException("marker " + marker + " is spelled " + spelled + " by its tokens");
        }
        return List.copyOf(out);
    }

    private static void flush(ByteArrayOutputStream run, List<MarkerPiece> out, StringBuilder spelled) {
        if (run.size() > 0) {
            String text = run.toString(StandardCharsets.UTF_8);
            out.add(MarkerPiece.text(text));
            spelled.append(text);
            run.reset();
        }
    }

    /** Whether the model has a reasoning block. */
    public boolean thinks() {
        return thinkStart != null;
    }
}
