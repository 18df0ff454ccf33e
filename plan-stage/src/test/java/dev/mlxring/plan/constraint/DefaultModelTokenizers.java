package dev.mlxring.plan.constraint;

import com.fasterxml.jackson.databind.ObjectMapper;
import dev.mlxring.constraint.ConstraintTokenizer;
import dev.mlxring.constraint.ConstraintVocabulary;
import dev.mlxring.mlx.ProjectHome;
import dev.mlxring.tokenizer.HfTokenizer;
import java.io.IOException;
import java.nio.file.Path;

/**
 * The default model's tokenizers for plan-stage's constraint tests: Hugging Face's (the tokenizer module),
 * llguidance's vocabulary and tokenizer over it. The test class opens one in its set-up and
 * closes it in its tear-down.
 *
 * @param vocab the model's vocab_size (the masks' width)
 */
public record DefaultModelTokenizers(
        HfTokenizer hf, int vocab, ConstraintVocabulary vocabulary, ConstraintTokenizer tokenizer)
        implements AutoCloseable {
    public static final Path DIR = ProjectHome.get().resolve("models/smollm2-135m-instruct");

    public static DefaultModelTokenizers open() throws IOException {
        int vocab = new ObjectMapper()
                .readTree(DIR.resolve("config.json").toFile())
                .path("vocab_size")
                .intValue();
        HfTokenizer hf = HfTokenizer.load(DIR);
        ConstraintVocabulary vocabulary = ConstraintVocabulary.fromTokenizerJson(DIR.resolve("tokenizer.json"), vocab);
        return new DefaultModelTokenizers(
                hf,
                vocab,
                vocabulary,
                ConstraintTokenizer.create(vocabulary, hf.eosTokenIds(), text -> hf.encode(text, false)));
    }

    @Override
    public void close() {
        tokenizer.close();
        hf.close();
    }
}
