package dev.mlxring.sink;

import dev.mlxring.pipeline.TokenDecoder;

/**
 * mlx-lm's {@code NaiveStreamingDetokenizer}, used for every other tokenizer.json decoder
 * (WordPiece, Metaspace, none...): the tokens of the current line are decoded together with the
 * tokenizer's own {@code decode} (plus transformers' space clean-up where it applies) after every
 * token; trailing U+FFFD are held back, and so is one trailing space when clean-up is on; a line is
 * committed once its decoded text ends with a newline. {@code last_segment} is the full text from
 * the previous read position, counted in code points as in Python, which is what this class
 * appends.
 *
 * <p>Cost: as in mlx-lm, quadratic in the length of the current line (the line is decoded again
 * for each token) and linear overall in the number of lines; committed text is not kept.
 */
final class NaiveDetokenizer implements StreamingDetokenizer {
    private final TokenDecoder decoder;
    private final boolean cleanUp;
    private final boolean cleanSpaces;

    private int[] current = new int[16];
    private int currentCount;
    /** mlx-lm's {@code _current_text} and its length in code points. */
    private String currentText = "";

    private long currentCp;
    /** {@code len(self._text)} in code points. */
    private long committedCp;
    /** {@code self._text[keepFromCp:]}: what was committed since the last read. */
    private final StringBuilder committedRecent = new StringBuilder();

    private long keepFromCp;
    /** mlx-lm's {@code self.offset}, in code points. */
    private long offsetCp;

    NaiveDetokenizer(TokenDecoder decoder, boolean cleanUp, boolean cleanSpaces) {
        this.decoder = decoder;
        this.cleanUp = cleanUp;
        this.cleanSpaces = cleanSpaces;
    }

    /**
     * @param cleanSpaces mlx-lm's {@code _clean_spaces}: {@code " ," not in tokenizer.decode(
     *     tokenizer.encode("a ,b"))}
     */
    static StreamingDetokenizer.Factory factory(TokenDecoder decoder, boolean cleanSpaces) {
        boolean cleanUp = decoder.cleanUpTokenizationSpaces();
        return () -> new NaiveDetokenizer(decoder, cleanUp, cleanSpaces);
    }

    /** transformers' {@code tokenizer.decode(ids)}: the backend decode, then the optional clean-up. */
    static String transformersDecode(TokenDecoder decoder, boolean cleanUp, int[] ids, int from, int to) {
        String text = decoder.decode(ids, from, to);
        return cleanUp ? cleanUpTokenization(text) : text;
    }

    /** transformers' {@code clean_up_tokenization}. */
    static String cleanUpTokenization(String text) {
        return text.replace(" .", ".")
                .replace(" ?", "?")
                .replace(" !", "!")
                .replace(" ,", ",")
                .replace(" ' ", "'")
                .replace(" n't", "n't")
                .replace(" 'm", "'m")
                .replace(" 's", "'s")
                .replace(" 've", "'ve")
                .replace(" 're", "'re");
    }

    @Override
    public void addToken(int tokenId, StringBuilder out) {
        if (currentCount == current.length) {
            current = java.util.Arrays.copyOf(current, currentCount * 2);
        }
        current[currentCount++] = tokenId;
        lastSegment(out);
    }

    @Override
    public void finalizeTo(StringBuilder out) {
        String tail = transformersDecode(decoder, cleanUp, current, 0, currentCount);
        committedRecent.append(tail);
        committedCp += tail.codePointCount(0, tail.length());
        currentCount = 0;
        setCurrent("");
        lastSegment(out);
    }

    /** mlx-lm's {@code text} property followed by {@code last_segment}'s slice. */
    private void lastSegment(StringBuilder out) {
        if (currentCount > 0) {
            String t = transformersDecode(decoder, cleanUp, current, 0, currentCount);
            if (t.endsWith("\uFFFD")) {
                int end = t.length();
                while (end > 0 && t.charAt(end - 1) == '\uFFFD') {
                    end--;
                }
                t = t.substring(0, end);
            } else if (cleanSpaces && !t.isEmpty() && t.charAt(t.length() - 1) == ' ') {
                t = t.substring(0, t.length() - 1);
            }
            setCurrent(t);
        }
        if (!currentText.isEmpty() && currentText.charAt(currentText.length() - 1) == '\n') {
            committedRecent.append(currentText);
            committedCp += currentCp;
            currentCount = 0;
            setCurrent("");
        }
        // segment = (_text + _current_text)[offset:]; offset >= keepFromCp always holds.
        long total = committedCp + currentCp;
        if (offsetCp < total) {
            if (offsetCp < committedCp) {
                int from = committedRecent.offsetByCodePoints(0, (int) (offsetCp - keepFromCp));
                out.append(committedRecent, from, committedRecent.length());
                out.append(currentText);
            } else {
                int from = currentText.offsetByCodePoints(0, (int) (offsetCp - committedCp));
                out.append(currentText, from, currentText.length());
            }
        }
        offsetCp = total;
        committedRecent.setLength(0);
        keepFromCp = committedCp;
    }

    private void setCurrent(String t) {
        currentText = t;
        currentCp = t.codePointCount(0, t.length());
    }
}
