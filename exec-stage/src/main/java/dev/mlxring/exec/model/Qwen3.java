package dev.mlxring.exec.model;

import com.fasterxml.jackson.databind.JsonNode;
import java.util.Map;

/**
 * mlx-lm's {@code models/qwen3.py} {@code ModelArgs}: explicit head_dim and tie_word_embeddings,
 * no biases, q_norm/k_norm, non-traditional rope; rope settings may sit under rope_parameters.
 */
final class Qwen3 {
    private Qwen3() {}

    static DecoderArgs args(ModelConfig c) {
        if (!c.has("tie_word_embeddings")) {
            throw new ModelLoadException(c.file() + ": required field 'tie_word_embeddings' is missing");
        }
        // transformers >= 5 nests rope_theta and rope_scaling under rope_parameters.
        JsonNode ropeParameters = c.object("rope_parameters").orElse(null);
        double ropeTheta;
        if (c.has("rope_theta")) {
            ropeTheta = c.doubleField("rope_theta");
        } else if (ropeParameters != null && ropeParameters.has("rope_theta")) {
            ropeTheta = ropeParameters.get("rope_theta").doubleValue();
        } else {
            throw new ModelLoadException(c.file() + ": rope_theta is missing from the model config");
        }
        Map<String, Object> scaling = c.ropeScaling().orElse(null);
        if (scaling == null && ropeParameters != null) {
            scaling = c.objectAsMap("rope_parameters");
        }
        return new DecoderArgs(
                c.intField("hidden_size"),
                c.intField("num_hidden_layers"),
                c.intField("intermediate_size"),
                c.intField("num_attention_heads"),
                c.intField("num_key_value_heads"),
                c.intField("head_dim"),
                c.doubleField("rms_norm_eps"),
                c.intField("vocab_size"),
                ropeTheta,
                false,
                scaling,
                c.boolField("tie_word_embeddings", false),
                true,
                false,
                c.intField("max_position_embeddings"));
    }
}
