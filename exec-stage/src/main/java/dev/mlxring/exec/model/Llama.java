package dev.mlxring.exec.model;

/** mlx-lm's {@code models/llama.py} {@code ModelArgs}; also {@code mistral}, which mlx-lm remaps to llama. */
final class Llama {
    private Llama() {}

    static DecoderArgs args(ModelConfig c) {
        if (c.has("layer_types")) {
            c.json().get("layer_types").forEach(t -> {
                if (!t.asText().equals("full_attention")) {
                    throw new ModelLoadException(c.file() + ": layer type '" + t.asText()
                            + "' is not supported (supported: full_attention)");
                }
            });
        }
        int hidden = c.intField("hidden_size");
        int heads = c.intField("num_attention_heads");
        return new DecoderArgs(
                hidden,
                c.intField("num_hidden_layers"),
                c.intField("intermediate_size"),
                heads,
                c.intField("num_key_value_heads", heads),
                c.intField("head_dim", hidden / heads),
                c.doubleField("rms_norm_eps"),
                c.intField("vocab_size"),
                c.doubleField("rope_theta", 10000),
                c.boolField("rope_traditional", false),
                c.ropeScaling().orElse(null),
                c.boolField("tie_word_embeddings", true),
                false,
                false,
                c.has("max_position_embeddings") ? c.intField("max_position_embeddings") : null);
    }
}
