package dev.mlxring.ingress.http;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.ObjectMapper;
import dev.mlxring.pipeline.testing.ScriptedExecutor;
import java.net.http.HttpResponse;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.ValueSource;

/**
 * mlx_lm.server's {@code adapters} request field on a server loaded with {@code --adapter-path
 * /srv/adapters/support}: naming that folder (as given, or the same path written otherwise) is
 * served; any other path, or a value that is not a string, is a 400 naming {@code adapters} on
 * all three routes, and the server keeps serving. On a server without an adapter every path is
 * refused.
 */
class AdaptersFieldHttpTest {
    private static final ObjectMapper JSON = new ObjectMapper();
    private static final String SERVED = "/srv/adapters/support";

    private static HttpServer.Config config(String adapter) {
        return new HttpServer.Config(
                "127.0.0.1", 0, "tiny", null, new ServerDefaults(512, 8192, 1000, adapter), "fp", 64 * 1024);
    }

    private static String chat(String adapters) {
        return "{\"messages\":[{\"role\":\"user\",\"content\":\"hi\"}],\"max_tokens\":2"
                + (adapters == null ? "" : ",\"adapters\":" + adapters) + "}";
    }

    private static void assertRefused(HttpResponse<String> r, String named) throws Exception {
        assertEquals(400, r.statusCode(), r.body());
        JsonNode e = JSON.readTree(r.body()).get("error");
        if (e.has("param")) { // the OpenAI shapes name the field; Anthropic's carries the message only
            assertEquals("adapters", e.get("param").asText(), r.body());
        }
        String message = e.get("message").asText();
        assertTrue(message.startsWith("adapters") && message.contains(named), r.body());
    }

    private static void assertServed(HttpResponse<String> r) throws Exception {
        assertEquals(200, r.statusCode(), r.body());
        assertEquals(
                "t1 t2 ",
                JSON.readTree(r.body()).at("/choices/0/message/content").asText());
    }

    @ParameterizedTest
    @ValueSource(strings = {"\"/srv/adapters/support\"", "\"/srv/adapters/./support/\"", "null"})
    void theLoadedAdapterIsServed(String adapters) throws Exception {
        try (ServedEngine s = ServedEngine.start(StageDoubles.engine(ScriptedExecutor.counting()), config(SERVED))) {
            assertServed(s.post("/v1/chat/completions", chat(adapters)));
        }
    }

    @Test
    void anotherAdapterIsRefusedNamingItOnEveryRouteAndTheServerKeepsServing() throws Exception {
        try (ServedEngine s = ServedEngine.start(StageDoubles.engine(ScriptedExecutor.counting()), config(SERVED))) {
            assertRefused(s.post("/v1/chat/completions", chat("\"/srv/adapters/sales\"")), "/srv/adapters/sales");
            assertRefused(
                    s.post(
                            "/v1/completions",
                            "{\"prompt\":\"hi\",\"max_tokens\":2,\"adapters\":\"/srv/adapters/sales\"}"),
                    "/srv/adapters/sales");
            assertRefused(
                    s.post(
                            "/v1/messages",
                            "{\"model\":\"tiny\",\"max_tokens\":2,\"messages\":[{\"role\":\"user\","
                                    + "\"content\":\"hi\"}],\"adapters\":\"/srv/adapters/sales\"}"),
                    "/srv/adapters/sales");
            assertRefused(
                    s.post(
                            "/v1/responses",
                            "{\"model\":\"tiny\",\"input\":\"hi\",\"max_output_tokens\":2,"
                                    + "\"adapters\":\"/srv/adapters/sales\"}"),
                    "/srv/adapters/sales");
            assertRefused(s.post("/v1/chat/completions", chat("[\"/srv/adapters/support\"]")), "string");
            assertServed(s.post("/v1/chat/completions", chat(null)));
        }
    }

    @Test
    void withoutAnAdapterEveryAdapterIsRefused() throws Exception {
        try (ServedEngine s = ServedEngine.start(StageDoubles.engine(ScriptedExecutor.counting()), config(null))) {
            assertRefused(s.post("/v1/chat/completions", chat("\"" + SERVED + "\"")), "without an adapter");
            assertServed(s.post("/v1/chat/completions", chat(null)));
        }
    }
}
