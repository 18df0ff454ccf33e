package dev.mlxring.constraint;

/**
 * The model's own tokenization of a text, as llguidance needs it to force the canonical tokens of
 * text that a grammar fixes (a JSON key, a Lark literal): {@code tokenizer.encode(text,
 * add_special_tokens=False)}, special-token text (e.g. {@code <|im_end|>}) matched as the special
 * token, as Hugging Face {@code tokenizers} does.
 *
 * <p>Called from llguidance while it computes a mask or compiles, on whichever thread does that
 * (several at once when rows are computed in parallel), so an implementation must be thread-safe.
 * It must not add a BOS or any post-processor token. For a SentencePiece-style tokenizer whose
 * normalizer prepends a space ({@code Prepend}), llguidance's Hugging Face front end tokenizes
 * without that normalizer; an implementation for such a model must do the same to get its masks.
 */
@FunctionalInterface
public interface CanonicalTokenizer {
    /** The token ids of {@code text} (never null; empty for the empty text). */
    int[] encode(String text);
}
