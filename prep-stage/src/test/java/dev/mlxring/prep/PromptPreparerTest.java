package dev.mlxring.prep;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import dev.mlxring.pipeline.GenerationRequest;
import dev.mlxring.pipeline.Outcome.ErrorType;
import dev.mlxring.pipeline.Prompt;
import dev.mlxring.pipeline.RequestException;
import dev.mlxring.tokenizer.HfTokenizer;
import java.nio.file.Path;
import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Test;

/** Prep's refusals on the default model's real tokenizer: too long before tokenizing, lone surrogates. */
class PromptPreparerTest {
    private static HfTokenizer tokenizer;

    @BeforeAll
    static void load() throws Exception {
        tokenizer = HfTokenizer.load(PythonOracle.root().resolve(Path.of("models", "smollm2-135m-instruct")));
    }

    @AfterAll
    static void close() {
        tokenizer.close();
    }

    private static GenerationRequest text(String s) {
        return GenerationRequest.builder()
                .id("r")
                .model("m")
                .prompt(new Prompt.Text(s))
                .maxTokens(4)
                .build();
    }

    @Test
    void aTextThatCannotFitIsRefusedBeforeTokenization() throws Exception {
        assertFalse(tokenizer.hasNormalizer(), "SmolLM2's byte-level BPE has no normalizer");
        PromptPreparer prep = new PromptPreparer(tokenizer, null, tokenizer.vocabSize(), 100);
        int longest = 1;
        for (int id = 0; id < tokenizer.vocabSize(); id++) {
            longest = Math.max(longest, tokenizer.token(id).length());
        }
        // Exactly at the bound the text is tokenized (and fits: one char per token at most here).
        String atBound = "a".repeat(longest * 100);
        assertTrue(prep.prepare(text(atBound)).length() > 0);
        RequestException e = assertThrows(RequestException.class, () -> prep.prepare(text(atBound + "a")));
        assertEquals(ErrorType.CONTEXT_LENGTH_EXCEEDED, e.type());
        assertTrue(e.getMessage().contains("more than 100 tokens can hold"), e.getMessage());
    }

    @Test
    void aLoneSurrogateIsTheClientsError() {
        PromptPreparer prep = new PromptPreparer(tokenizer, null, tokenizer.vocabSize());
        RequestException e = assertThrows(RequestException.class, () -> prep.prepare(text("a\ud800b")));
        assertEquals(ErrorType.INVALID_REQUEST, e.type());
        assertTrue(e.getMessage().contains("unpaired surrogate"), e.getMessage());
    }
}
