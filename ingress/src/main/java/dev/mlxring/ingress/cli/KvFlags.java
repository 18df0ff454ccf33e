package dev.mlxring.ingress.cli;

import dev.mlxring.exec.generate.GenerationRun;
import dev.mlxring.exec.model.LanguageModel;
import dev.mlxring.pipeline.KvQuantization;
import java.util.List;

/**
 * The KV-cache flags of {@code serve} and {@code generate}, named as mlx-lm's: {@code --kv-bits}
 * switches quantization on; {@code --kv-group-size} (default 64) and {@code --quantized-kv-start}
 * (default 5000) tune it and are refused without {@code --kv-bits} rather than ignored.
 * {@code --max-kv-size N} is mlx_lm.generate's: rotating caches of N positions (see
 * {@link #maxKvSize}).
 */
final class KvFlags {
    /** The flags that configure quantization; the two tuning ones are refused without {@code --kv-bits}. */
    static final List<Flag> QUANTIZATION_FLAGS = List.of(
            Flag.valued("--kv-bits", "B", "off", "quantize the KV cache to B bits (2, 3, 4, 5, 6, 8), as mlx-lm"),
            Flag.valued(
                    "--kv-group-size",
                    "G",
                    KvQuantization.DEFAULT_GROUP_SIZE,
                    "with --kv-bits: its group size (32, 64, 128)"),
            Flag.valued(
                    "--quantized-kv-start",
                    "N",
                    KvQuantization.DEFAULT_QUANTIZED_KV_START,
                    "with --kv-bits: quantize once a layer's cache holds more than N tokens"));

    static final List<String> NAMES = Flag.names(QUANTIZATION_FLAGS);
    static final Flag MAX_KV_SIZE = Flag.valued(
            "--max-kv-size",
            "N",
            "off",
            "rotating KV caches of N positions (N > 4), as mlx_lm.generate; qwen2, qwen3, qwen3_moe and phi3 use it"
                    + " (llama, gemma3_text and gpt_oss keep their own layout); not with --kv-bits");

    private KvFlags() {}

    /**
     * {@code --max-kv-size}, or 0 without it. At least 5: mlx-lm's rotating cache always keeps the
     * first 4 positions.
     */
    static int maxKvSize(CliArgs a) {
        return a.intValue(MAX_KV_SIZE.name(), 0, LanguageModel.MAX_KV_SIZE_KEEP + 1);
    }

    /**
     * Refuses {@code --kv-bits} where this model with {@code --max-kv-size} keeps rotating caches
     * (mlx-lm cannot quantize them), before any request runs.
     */
    static void checkQuantizable(KvQuantization kv, LanguageModel model, int maxKvSize) {
        if (kv == null) {
            return;
        }
        String refusal = GenerationRun.kvQuantizationRefusal(model, maxKvSize);
        if (refusal != null) {
            throw new UsageException(refusal);
        }
    }

    /** The quantization the flags ask for, or null for the full-precision cache. */
    static KvQuantization parse(CliArgs a) {
        if (!a.has("--kv-bits")) {
            for (String f : NAMES) {
                if (a.has(f)) {
                    throw new UsageException(f + " needs --kv-bits (without it the KV cache is not quantized)");
                }
            }
            return null;
        }
        try {
            return new KvQuantization(
                    a.intValue("--kv-bits", 0, 1),
                    a.intValue("--kv-group-size", KvQuantization.DEFAULT_GROUP_SIZE, 1),
                    a.intValue("--quantized-kv-start", KvQuantization.DEFAULT_QUANTIZED_KV_START, 0));
        } catch (IllegalArgumentException e) {
            throw new UsageException(e.getMessage());
        }
    }
}
