package dev.mlxring.engine;

import dev.mlxring.constraint.ConstraintVocabulary;
import java.io.IOException;
import java.nio.file.Path;
import java.util.function.Supplier;

/**
 * A model's llguidance vocabulary ({@link ConstraintVocabulary#fromTokenizerJson}), read on the
 * first {@link #get()} and kept: reading it takes up to a second, which a server that never
 * constrains output never pays. Thread-safe.
 */
final class LazyVocabulary implements Supplier<ConstraintVocabulary> {
    private final Path tokenizerJson;
    private final int vocabSize;
    private ConstraintVocabulary vocabulary; // guarded by this

    /** @param vocabSize the model's vocabulary size (rows of its output layer) */
    LazyVocabulary(Path tokenizerJson, int vocabSize) {
        this.tokenizerJson = tokenizerJson;
        this.vocabSize = vocabSize;
    }

    /**
     * @throws IllegalStateException naming the file when it cannot be read (every call retries)
     */
    @Override
    public synchronized ConstraintVocabulary get() {
        if (vocabulary == null) {
            try {
                vocabulary = ConstraintVocabulary.fromTokenizerJson(tokenizerJson, vocabSize);
            } catch (IOException | RuntimeException e) {
                throw new IllegalStateException(
                        "cannot read the vocabulary from " + tokenizerJson + ": " + e.getMessage(), e);
            }
        }
        return vocabulary;
    }
}
