package dev.mlxring.constraint;

import static org.junit.jupiter.api.Assertions.fail;

import com.fasterxml.jackson.databind.ObjectMapper;
import dev.mlxring.mlx.ProjectHome;
import dev.mlxring.tokenizer.HfTokenizer;
import java.io.IOException;
import java.nio.file.Files;
import java.nio.file.Path;

/**
 * The default model's tokenizer (models/smollm2-135m-instruct) as the tests' one {@link
 * ConstraintTokenizer}, built on first use and kept for the test JVM: its vocabulary from
 * tokenizer.json, {@code vocab_size} and EOS from config.json, and the tokenizer module's {@link HfTokenizer}
 * as the canonical tokenizer. A missing model is a test failure naming the set-up step.
 */
final class DefaultModel {
    private static final Path DIR = ProjectHome.get().resolve("models/smollm2-135m-instruct");
    private static final HfTokenizer HF;
    private static final int VOCAB_SIZE;
    private static final int[] EOS;
    private static final ConstraintTokenizer TOKENIZER;

    static {
        if (!Files.isRegularFile(DIR.resolve("tokenizer.json"))) {
            fail("the default model is missing at " + DIR + " (run ./mlx-ring setup)");
        }
        try {
            VOCAB_SIZE = new ObjectMapper()
                    .readTree(DIR.resolve("config.json").toFile())
                    .path("vocab_size")
                    .intValue();
            HF = HfTokenizer.load(DIR);
            EOS = HF.eosTokenIds();
            long t0 = System.nanoTime();
            ConstraintVocabulary vocabulary =
                    ConstraintVocabulary.fromTokenizerJson(DIR.resolve("tokenizer.json"), VOCAB_SIZE);
            long t1 = System.nanoTime();
            TOKENIZER = ConstraintTokenizer.create(vocabulary, EOS, text -> HF.encode(text, false));
            System.out.printf(
                    "[constraint] default model: vocabulary %.1f ms, llguidance tokenizer %.1f ms" + " (%d ids)%n",
                    (t1 - t0) / 1e6, (System.nanoTime() - t1) / 1e6, VOCAB_SIZE);
        } catch (IOException e) {
            throw new IllegalStateException("cannot load the default model's tokenizer from " + DIR, e);
        }
    }

    private DefaultModel() {}

    static Path tokenizerJson() {
        return DIR.resolve("tokenizer.json");
    }

    static int vocabSize() {
        return VOCAB_SIZE;
    }

    static int eos() {
        return EOS[0];
    }

    static int[] encode(String text) {
        return HF.encode(text, false);
    }

    static String decode(int id) {
        return HF.decode(new int[] {id}, false);
    }

    static ConstraintTokenizer tokenizer() {
        return TOKENIZER;
    }
}
