package dev.mlxring.ingress.http;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertNull;

import dev.mlxring.pipeline.Outcome;
import dev.mlxring.pipeline.Usage;
import org.junit.jupiter.api.Test;

/** A failed session's error: its status, and the field an engine-side refusal names. */
class ApiErrorTest {
    private static ApiError of(Outcome.ErrorType type, String message) {
        return ApiError.of(Outcome.failed(type, message, Usage.NONE), "req-1");
    }

    @Test
    void engineRefusalsNameTheirFieldAsParam() {
        ApiError topK = of(
                Outcome.ErrorType.INVALID_REQUEST,
                "top_k must be in [0, 49152) for a vocabulary of 49152 tokens, got 60000");
        assertEquals(400, topK.status());
        assertEquals("top_k", topK.param());
        assertEquals(
                "top_logprobs",
                of(Outcome.ErrorType.UNSUPPORTED, "top_logprobs must be at most 11 (mlx_lm.server's limit)")
                        .param());
        assertEquals(
                "stop[1]",
                of(Outcome.ErrorType.INVALID_REQUEST, "stop[1] must not be empty")
                        .param());
        assertNull(of(Outcome.ErrorType.INVALID_REQUEST, "the prompt is empty after tokenization")
                .param());
        assertNull(of(Outcome.ErrorType.INVALID_REQUEST, "chat template: x must be y")
                .param());
    }

    @Test
    void internalErrorsNameTheRequestAndNoField() {
        ApiError e = of(Outcome.ErrorType.INTERNAL, "top_k must be whatever");
        assertEquals(500, e.status());
        assertNull(e.param());
        assertEquals(true, e.getMessage().contains("req-1"));
    }
}
