package dev.mlxring.sink;

import dev.mlxring.pipeline.TokenDecoder;
import java.util.List;
import java.util.Map;
import java.util.function.Function;

/**
 * Which of mlx-lm's streaming detokenizers a tokenizer gets, decided as {@code
 * mlx_lm.tokenizer_utils.load} does from tokenizer.json's {@code decoder} section alone.
 */
public enum DetokenizerKind {
    /** {@code BPEStreamingDetokenizer}: the decoder is {@code {"type": "ByteLevel", ...}}. */
    BPE,
    /**
     * {@code SPMStreamingDetokenizer}: the decoder is exactly {@code Sequence[Replace("▁", " "),
     * ByteFallback, Fuse, Strip(" ", 1, 0)]}.
     */
    SPM,
    /**
     * {@code SPMStreamingDetokenizer(trim_space=False)}: exactly {@code Sequence[Replace("▁", " "),
     * ByteFallback, Fuse]}.
     */
    SPM_NO_TRIM,
    /** {@code NaiveStreamingDetokenizer}: anything else, or no decoder. */
    NAIVE;

    private static final Map<String, Object> SPM_DECODER = Map.of(
            "type",
            "Sequence",
            "decoders",
            List.of(
                    Map.of("type", "Replace", "pattern", Map.of("String", "\u2581"), "content", " "),
                    Map.of("type", "ByteFallback"),
                    Map.of("type", "Fuse"),
                    Map.of("type", "Strip", "content", " ", "start", 1, "stop", 0)));
    private static final Map<String, Object> SPM_NO_SPACE_DECODER = Map.of(
            "type",
            "Sequence",
            "decoders",
            List.of(
                    Map.of("type", "Replace", "pattern", Map.of("String", "\u2581"), "content", " "),
                    Map.of("type", "ByteFallback"),
                    Map.of("type", "Fuse")));

    /**
     * mlx-lm's choice for a tokenizer.json {@code decoder} section (plain Java values, see {@link
     * TokenDecoder#decoderConfig()}): {@code _is_spm_decoder}, {@code _is_spm_decoder_no_space},
     * {@code _is_bpe_decoder}, else naive. The SPM shapes must match exactly: same keys, same list
     * lengths, and an int must be an int (not a bool or a float), as in mlx-lm's {@code _match}.
     */
    public static DetokenizerKind infer(Object decoderConfig) {
        if (matches(SPM_DECODER, decoderConfig)) {
            return SPM;
        }
        if (matches(SPM_NO_SPACE_DECODER, decoderConfig)) {
            return SPM_NO_TRIM;
        }
        if (decoderConfig instanceof Map<?, ?> m && "ByteLevel".equals(m.get("type"))) {
            return BPE;
        }
        return NAIVE;
    }

    /**
     * The detokenizer factory for this kind.
     *
     * @param encoder {@code tokenizer.encode(text, add_special_tokens=False)}, used only by {@link
     *     #NAIVE} for mlx-lm's {@code " ,"} probe; null to take the probe's answer from {@link
     *     TokenDecoder#cleanUpTokenizationSpaces()} instead
     */
    public StreamingDetokenizer.Factory factory(TokenDecoder decoder, Function<String, int[]> encoder) {
        return switch (this) {
            case BPE -> BpeDetokenizer.factory(decoder);
            case SPM -> SpmDetokenizer.factory(decoder, true);
            case SPM_NO_TRIM -> SpmDetokenizer.factory(decoder, false);
            case NAIVE -> {
                boolean cleanSpaces;
                if (encoder != null) {
                    int[] probe = encoder.apply("a ,b");
                    String decoded = NaiveDetokenizer.transformersDecode(
                            decoder, decoder.cleanUpTokenizationSpaces(), probe, 0, probe.length);
                    cleanSpaces = !decoded.contains(" ,");
                } else {
                    cleanSpaces = decoder.cleanUpTokenizationSpaces();
                }
                yield NaiveDetokenizer.factory(decoder, cleanSpaces);
            }
        };
    }

    /** mlx-lm's {@code _match}: structural equality with Python's type strictness. */
    static boolean matches(Object expected, Object actual) {
        if (expected instanceof Map<?, ?> e) {
            if (!(actual instanceof Map<?, ?> a) || a.size() != e.size()) {
                return false;
            }
            for (var entry : e.entrySet()) {
                if (!a.containsKey(entry.getKey()) || !matches(entry.getValue(), a.get(entry.getKey()))) {
                    return false;
                }
            }
            return true;
        }
        if (expected instanceof List<?> e) {
            if (!(actual instanceof List<?> a) || a.size() != e.size()) {
                return false;
            }
            for (int i = 0; i < e.size(); i++) {
                if (!matches(e.get(i), a.get(i))) {
                    return false;
                }
            }
            return true;
        }
        if (expected instanceof Integer i) {
            return (actual instanceof Integer || actual instanceof Long) && ((Number) actual).longValue() == i;
        }
        return expected.equals(actual);
    }
}
