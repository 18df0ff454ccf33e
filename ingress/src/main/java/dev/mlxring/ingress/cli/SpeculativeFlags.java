package dev.mlxring.ingress.cli;

import dev.mlxring.engine.SpeculativeDecoding;
import dev.mlxring.exec.spec.Speculation;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.List;

/**
 * The speculative-decoding flags of {@code generate}: {@code --draft-model DIR} and
 * {@code --num-draft-tokens N} (mlx_lm.generate's names; N defaults to 3), {@code --speculative
 * ngram|draft|off} ({@code draft} when {@code --draft-model} is given, else {@code off}), and the
 * prompt-lookup n-gram sizes {@code --prompt-lookup-min} (default 1) and
 * {@code --prompt-lookup-max} (default 3). A flag that the chosen mode would not use is refused,
 * not ignored. The same flags on {@code serve} set the server's speculative decoding.
 */
final class SpeculativeFlags {
    static final List<String> NAMES = List.of(
            "--speculative", "--draft-model", "--num-draft-tokens", "--prompt-lookup-min", "--prompt-lookup-max");
    static final int DEFAULT_LOOKUP_MIN = 1;
    static final int DEFAULT_LOOKUP_MAX = 3;

    /** The flags as {@code generate --help} and {@code serve --help} list them (parsed by {@link #parse}). */
    static final List<Flag> FLAGS = List.of(
            Flag.valued(
                    "--speculative",
                    "MODE",
                    "off, or draft with --draft-model",
                    "speculative decoding: draft (a draft model proposes, as mlx_lm.generate --draft-model),"
                            + " ngram (prompt lookup) or off; output as mlx-lm's speculative_generate_step; not with"
                            + " penalties, logit_bias, --max-kv-size, or past a sliding window"),
            Flag.valued("--draft-model", "DIR", "none", "the draft model (its tokenizer must match the model's)"),
            Flag.valued(
                    "--num-draft-tokens",
                    "N",
                    Speculation.DEFAULT_NUM_DRAFT_TOKENS,
                    "tokens proposed per verification step at most"),
            Flag.valued("--prompt-lookup-min", "N", DEFAULT_LOOKUP_MIN, "smallest n-gram prompt lookup matches"),
            Flag.valued("--prompt-lookup-max", "N", DEFAULT_LOOKUP_MAX, "largest n-gram, tried first"));

    private SpeculativeFlags() {}

    static SpeculativeDecoding parse(CliArgs a) {
        String mode = a.has("--speculative") ? a.get("--speculative") : a.has("--draft-model") ? "draft" : "off";
        switch (mode) {
            case "off" -> {
                for (String f : NAMES.subList(1, NAMES.size())) {
                    if (a.has(f)) {
                        throw new UsageException(
                                f + " needs speculative decoding (--speculative ngram|draft), " + "but it is off");
                    }
                }
                return SpeculativeDecoding.OFF;
            }
            case "draft" -> {
                if (!a.has("--draft-model")) {
                    throw new UsageException("--speculative draft needs --draft-model DIR");
                }
                for (String f : List.of("--prompt-lookup-min", "--prompt-lookup-max")) {
                    if (a.has(f)) {
                        throw new UsageException(f + " applies to --speculative ngram, not draft");
                    }
                }
                Path dir = Path.of(a.get("--draft-model"));
                if (!Files.isDirectory(dir)) {
                    throw new UsageException("draft model directory " + dir + " does not exist");
                }
                return new SpeculativeDecoding("draft", dir, numDraftTokens(a), 0, 0);
            }
            case "ngram" -> {
                if (a.has("--draft-model")) {
                    throw new UsageException("--draft-model applies to --speculative draft, not ngram");
                }
                int min = a.intValue("--prompt-lookup-min", DEFAULT_LOOKUP_MIN, 1);
                int max = a.intValue("--prompt-lookup-max", Math.max(DEFAULT_LOOKUP_MAX, min), 1);
                if (max < min) {
                    throw new UsageException("--prompt-lookup-max " + max + " is below --prompt-lookup-min " + min);
                }
                return new SpeculativeDecoding("ngram", null, numDraftTokens(a), min, max);
            }
            default -> throw new UsageException("--speculative must be ngram, draft or off, got '" + mode + "'");
        }
    }

    private static int numDraftTokens(CliArgs a) {
        return a.intValue("--num-draft-tokens", Speculation.DEFAULT_NUM_DRAFT_TOKENS, 1);
    }
}
