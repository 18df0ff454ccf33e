package dev.mlxring.bench;

import java.util.Objects;

/**
 * One measured B=1 run of {@code bench decode}: which engine ran it ({@code engine}, e.g.
 * {@code ours-exact}, {@code mlx-lm}, {@code llama.cpp}), in which round (from 1), over how many
 * prompt and generated tokens, the prefill time (to the first token) and the decode time (first
 * token to the last), in seconds, the CPU the rest of the machine used meanwhile (cores; NaN where
 * unknown), and the generated token ids ({@code tokens}; null where the engine does not give them,
 * as {@code llama-bench}).
 *
 * <p>The rates follow mlx-lm's {@code stream_generate}: prefill tok/s = prompt tokens / prefill
 * time; decode tok/s = generated tokens / decode time ({@code llama-bench}'s {@code pp}/{@code tg}
 * tests time each phase alone, with the same ratios).
 */
public record DecodeRun(
        String engine,
        int round,
        int promptTokens,
        int genTokens,
        double promptSeconds,
        double genSeconds,
        double foreignCores,
        int[] tokens) {
    public DecodeRun {
        Objects.requireNonNull(engine, "engine");
        if (!(promptSeconds > 0) || !(genSeconds > 0)) {
            throw new IllegalArgumentException(engine + ": a run takes a positive time, got prefill " + promptSeconds
                    + " s, decode " + genSeconds + " s");
        }
        tokens = tokens == null ? null : tokens.clone();
    }

    public double prefillTps() {
        return promptTokens / promptSeconds;
    }

    public double decodeTps() {
        return genTokens / genSeconds;
    }

    @Override
    public int[] tokens() {
        return tokens == null ? null : tokens.clone();
    }
}
