/**
 * A model's Hugging Face tokenizer as a library ({@link HfTokenizer}: DJL's native tokenizers,
 * mlx-lm's encode and decode rules), shared by prep-stage (chat tokenization), the constraint
 * vocabulary and the composition roots without making one stage depend on another. Thread-safe
 * after {@link HfTokenizer#load}; close it once, after its last user.
 */
package dev.mlxring.tokenizer;
