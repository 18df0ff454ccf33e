package dev.mlxring.exec.model;

/**
 * mlx-lm's {@code models/qwen2.py} {@code ModelArgs}: llama's graph with required q/k/v biases,
 * {@code head_dim} always {@code hidden_size / num_attention_heads}, rope_theta default 1e6.
 */
final class Qwen2 {
    private Qwen2() {}

    static DecoderArgs args(ModelConfig c) {
        int hidden = c.intField("hidden_size");
        int heads = c.intField("num_attention_heads");
        return new DecoderArgs(
                hidden,
                c.intField("num_hidden_layers"),
                c.intField("intermediate_size"),
                heads,
                c.intField("num_key_value_heads"),
                hidden / heads,
                c.doubleField("rms_norm_eps"),
                c.intField("vocab_size"),
                c.doubleField("rope_theta", 1000000),
                c.boolField("rope_traditional", false),
                c.ropeScaling().orElse(null),
                c.boolField("tie_word_embeddings", true),
                false,
                true,
                c.intField("max_position_embeddings", 32768));
    }
}
