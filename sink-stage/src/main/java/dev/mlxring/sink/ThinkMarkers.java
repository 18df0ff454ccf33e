package dev.mlxring.sink;

import dev.mlxring.pipeline.TokenDecoder;
import java.util.Arrays;
import java.util.List;
import java.util.Objects;
import java.util.Optional;
import java.util.OptionalInt;
import java.util.function.Function;

/**
 * The reasoning block's markers: text between {@code start} and {@code end} is reasoning. The
 * strings are matched in the decoded text (and stripped); the id sequences are used only to find
 * out whether the prompt leaves a block open (see {@link #opensInPrompt}).
 *
 * @param startIds the tokens of {@code start}, or null if unknown (then no prompt check)
 * @param endIds the tokens of {@code end}, or null if unknown
 */
public record ThinkMarkers(String start, String end, int[] startIds, int[] endIds) {

    private static final List<String[]> SINGLE_TOKEN = List.of(
            new String[] {"<think>", "</think>"},
            new String[] {"<longcat_think>", "</longcat_think>"},
            new String[] {"<|think:start|>", "<|think:end|>"});

    public ThinkMarkers {
        Objects.requireNonNull(start, "start");
        Objects.requireNonNull(end, "end");
        if (start.isEmpty() || end.isEmpty()) {
            throw new IllegalArgumentException("think markers must not be empty");
        }
        startIds = startIds == null ? null : startIds.clone();
        endIds = endIds == null ? null : endIds.clone();
    }

    /**
     * mlx-lm's {@code _infer_thinking}: the first of {@code <think>}/{@code </think>}, {@code
     * <longcat_think>}/{@code </longcat_think>}, {@code <|think:start|>}/{@code <|think:end|>} whose
     * two strings are both vocabulary entries; else {@code <|channel>thought}/{@code <channel|>} when
     * {@code <|channel>} and {@code <channel|>} are; else the XTML pair {@code
     * <|open|>think<|sep|>}/{@code <|close|>think<|sep|>} for a vocabulary with {@code <|open|>},
     * {@code <|close|>}, {@code <|sep|>} and {@code <|end_of_msg|>}.
     *
     * @param encoder {@code tokenizer.encode(text, add_special_tokens=False)} for the multi-token
     *     pairs; if null their ids stay unknown
     */
    public static Optional<ThinkMarkers> infer(TokenDecoder vocab, Function<String, int[]> encoder) {
        for (String[] pair : SINGLE_TOKEN) {
            OptionalInt s = vocab.tokenId(pair[0]);
            OptionalInt e = vocab.tokenId(pair[1]);
            if (s.isPresent() && e.isPresent()) {
                return Optional.of(
                        new ThinkMarkers(pair[0], pair[1], new int[] {s.getAsInt()}, new int[] {e.getAsInt()}));
            }
        }
        if (has(vocab, "<|channel>") && has(vocab, "<channel|>")) {
            return Optional.of(multiToken("<|channel>thought", "<channel|>", encoder));
        }
        if (isXtmlVocab(vocab)) {
            return Optional.of(multiToken("<|open|>think<|sep|>", "<|close|>think<|sep|>", encoder));
        }
        return Optional.empty();
    }

    /** mlx-lm's {@code _infer_structural_markers}: XTML message markers stripped from content. */
    public static List<String> inferStructuralMarkers(TokenDecoder vocab) {
        return isXtmlVocab(vocab)
                ? List.of("<|open|>response<|sep|>", "<|close|>response<|sep|>", "<|close|>message<|sep|>")
                : List.of();
    }

    private static ThinkMarkers multiToken(String start, String end, Function<String, int[]> encoder) {
        return new ThinkMarkers(
                start, end, encoder == null ? null : encoder.apply(start), encoder == null ? null : encoder.apply(end));
    }

    private static boolean isXtmlVocab(TokenDecoder vocab) {
        return has(vocab, "<|open|>")
                && has(vocab, "<|close|>")
                && has(vocab, "<|sep|>")
                && has(vocab, "<|end_of_msg|>");
    }

    private static boolean has(TokenDecoder vocab, String token) {
        return vocab.tokenId(token).isPresent();
    }

    /**
     * Whether generation starts inside a reasoning block, as mlx_lm.server decides for a chat
     * prompt: the last occurrence of the start ids comes after the last occurrence of the end ids
     * (templates that open {@code <think>} in the generation prompt).
     */
    public boolean opensInPrompt(int[] prompt) {
        if (startIds == null || endIds == null || startIds.length == 0 || endIds.length == 0) {
            return false;
        }
        return rfind(prompt, startIds) > rfind(prompt, endIds);
    }

    static int rfind(int[] tokens, int[] seq) {
        outer:
        for (int i = tokens.length - seq.length; i >= 0; i--) {
            for (int j = 0; j < seq.length; j++) {
                if (tokens[i + j] != seq[j]) {
                    continue outer;
                }
            }
            return i;
        }
        return -1;
    }

    @Override
    public boolean equals(Object o) {
        return o instanceof ThinkMarkers t
                && start.equals(t.start)
                && end.equals(t.end)
                && Arrays.equals(startIds, t.startIds)
                && Arrays.equals(endIds, t.endIds);
    }

    @Override
    public int hashCode() {
        return Objects.hash(start, end, Arrays.hashCode(startIds), Arrays.hashCode(endIds));
    }

    @Override
    public String toString() {
        return "ThinkMarkers[" + start + " " + Arrays.toString(startIds) + ", " + end + " " + Arrays.toString(endIds)
                + "]";
    }
}
