package dev.mlxring.pipeline;

import java.util.OptionalInt;

/**
 * What sink-stage needs from a tokenizer to turn committed ids into text the way mlx-lm's
 * streaming detokenizers do. Implemented by the tokenizer module's {@code HfTokenizer}; the byte-level
 * (GPT-2) table, the SentencePiece {@code <0xNN>} byte tokens and the {@code ▁} handling live on
 * the sink side. Implementations must be safe to call from any thread after construction.
 */
public interface TokenDecoder {

    /**
     * Size of the id space with added tokens: Python's {@code len(tokenizer)}, i.e. {@code
     * get_vocab_size(with_added_tokens=True)}. mlx-lm builds its token maps over {@code
     * range(len(tokenizer))}.
     */
    int vocabSize();

    /**
     * The raw vocabulary string of {@code id} (e.g. {@code "Ġthe"}, {@code "▁the"}, {@code
     * "<0x0A>"}, {@code "<|im_end|>"}), as {@code tokenizer.convert_ids_to_tokens(id)}; {@code null}
     * for an id the vocabulary does not know.
     */
    String tokenString(int id);

    /**
     * The id of a raw vocabulary string, added tokens included (as {@code tokenizer.get_vocab()}).
     */
    OptionalInt tokenId(String token);

    /**
     * Decodes {@code ids[from, to)} like the Rust {@code tokenizers} library's {@code decode(ids,
     * skip_special_tokens=False)}: special tokens kept, incomplete UTF-8 as U+FFFD, unknown ids
     * dropped, no tokenization-space clean-up (see {@link #cleanUpTokenizationSpaces()}).
     */
    String decode(int[] ids, int from, int to);

    /**
     * Whether {@code transformers}' {@code tokenizer.decode} applies {@code clean_up_tokenization}
     * on top of {@link #decode} for this tokenizer (transformers 5: {@code
     * clean_up_tokenization_spaces} of tokenizer_config.json, ignored for BPE models).
     */
    boolean cleanUpTokenizationSpaces();

    /**
     * tokenizer.json's {@code "decoder"} section as plain Java values ({@code Map<String, Object>},
     * {@code List<Object>}, {@code String}, {@code Integer}/{@code Long}/{@code Double}, {@code
     * Boolean}), or {@code null} when the file has none. mlx-lm picks its streaming detokenizer from
     * this section alone.
     */
    Object decoderConfig();
}
