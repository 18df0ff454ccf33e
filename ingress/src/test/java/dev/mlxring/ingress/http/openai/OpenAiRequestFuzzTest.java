package dev.mlxring.ingress.http.openai;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;
import static org.junit.jupiter.api.Assertions.fail;

import dev.mlxring.ingress.http.ApiError;
import dev.mlxring.ingress.http.FuzzBodies;
import dev.mlxring.ingress.http.ServerDefaults;
import java.nio.charset.StandardCharsets;
import org.junit.jupiter.api.Test;

/**
 * Property of the request codec, over 30,000 seeded random bodies: parsing either yields a
 * request or throws an {@link ApiError} with a 4xx status and a message; nothing else escapes.
 */
class OpenAiRequestFuzzTest {
    @Test
    void everyBodyParsesOrIsA4xxApiError() {
        FuzzBodies bodies = new FuzzBodies(20261130L);
        int accepted = 0;
        int refused = 0;
        for (int i = 0; i < 30_000; i++) {
            boolean chat = i % 2 == 0;
            byte[] body = bodies.next(chat);
            try {
                OpenAiRequest.parse(body, chat, ServerDefaults.mlxLm(), "fuzz-" + i);
                accepted++;
            } catch (ApiError e) {
                assertTrue(e.status() >= 400 && e.status() < 500, e.status() + " for " + text(body));
                assertTrue(e.getMessage() != null && !e.getMessage().isBlank(), text(body));
                refused++;
            } catch (RuntimeException | StackOverflowError e) {
                fail("body #" + i + " threw " + e + ": " + text(body), e);
            }
        }
        // Both outcomes must be exercised, or the generator tests nothing.
        assertTrue(accepted > 1000 && refused > 1000, "accepted " + accepted + ", refused " + refused);
    }

    /** Null means absent: a key set to null parses exactly as the key left out (equal request or same error). */
    @Test
    void aNullValuedKeyParsesAsIfItWereAbsent() {
        int variants = 0;
        for (FuzzBodies.Api api : new FuzzBodies.Api[] {FuzzBodies.Api.CHAT, FuzzBodies.Api.COMPLETIONS}) {
            boolean chat = api == FuzzBodies.Api.CHAT;
            assertTrue(
                    outcome(api.full, chat) instanceof OpenAiRequest, api + "'s full body: " + outcome(api.full, chat));
            for (FuzzBodies.NullVariant v : FuzzBodies.nullVariants(api)) {
                variants++;
                assertEquals(outcome(v.removed(), chat), outcome(v.nulled(), chat), api + " " + v.path() + " null");
            }
        }
        assertTrue(variants > 80, "every key is tried: " + variants);
    }

    /** The parsed request, or the refusal's status and message, or what else was thrown. */
    private static Object outcome(String body, boolean chat) {
        try {
            return OpenAiRequest.parse(body.getBytes(StandardCharsets.UTF_8), chat, ServerDefaults.mlxLm(), "id");
        } catch (ApiError e) {
            return e.status() + " " + e.getMessage();
        } catch (RuntimeException e) {
            return "threw " + e;
        }
    }

    private static String text(byte[] body) {
        String s = new String(body, StandardCharsets.UTF_8);
        return s.length() > 300 ? s.substring(0, 300) + "…" : s;
    }
}
