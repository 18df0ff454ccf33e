package dev.mlxring.ingress.http;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

import com.fasterxml.jackson.databind.ObjectMapper;
import dev.mlxring.pipeline.ExecutionPlan;
import dev.mlxring.pipeline.testing.ScriptedExecutor;
import java.net.URI;
import java.net.http.HttpClient;
import java.net.http.HttpRequest;
import java.net.http.HttpResponse;
import java.util.ArrayList;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import org.junit.jupiter.api.Test;

/**
 * Named adapters ({@code serve --adapter NAME=DIR}) as requests name them: {@code /v1/models}
 * lists {@code tiny:support} and {@code tiny:sales} after the base; a request picks one by
 * {@code model} or by its {@code adapters} field (the name or the folder), and the plan exec
 * receives carries that name (the scripted executor answers each adapter with its own tokens); a
 * name or folder not served is a 4xx naming it, the two fields naming different adapters a 400,
 * and the server keeps serving.
 */
class NamedAdaptersHttpTest {
    private static final ObjectMapper JSON = new ObjectMapper();

    private static HttpServer.Config config() {
        Map<String, String> named = new LinkedHashMap<>();
        named.put("support", "/srv/adapters/support");
        named.put("sales", "/srv/adapters/sales");
        return new HttpServer.Config(
                "127.0.0.1",
                0,
                "tiny",
                null,
                new ServerDefaults(512, 8192, 1000, new AdapterNames(null, named)),
                "fp",
                64 * 1024);
    }

    /** Each adapter's own tokens: what exec was asked to run with shows in the answer. */
    private static int[] script(ExecutionPlan plan) {
        if (plan.adapter() == null) {
            return new int[] {1, 2};
        }
        return switch (plan.adapter()) {
            case "support" -> new int[] {3, 4};
            case "sales" -> new int[] {5, 6};
            default -> throw new AssertionError("exec was given adapter " + plan.adapter());
        };
    }

    private static String chat(String model, String adapters) {
        return "{" + (model == null ? "" : "\"model\":\"" + model + "\",")
                + "\"messages\":[{\"role\":\"user\",\"content\":\"hi\"}],\"max_tokens\":2"
                + (adapters == null ? "" : ",\"adapters\":\"" + adapters + "\"") + "}";
    }

    private static String content(HttpResponse<String> r) throws Exception {
        assertEquals(200, r.statusCode(), r.body());
        return JSON.readTree(r.body()).at("/choices/0/message/content").asText();
    }

    private static void assertRefused(HttpResponse<String> r, int status, String named) throws Exception {
        assertEquals(status, r.statusCode(), r.body());
        String message = JSON.readTree(r.body()).at("/error/message").asText();
        assertTrue(message.contains(named), r.body());
    }

    @Test
    void requestsPickTheirAdapterByModelOrField() throws Exception {
        try (ServedEngine s = ServedEngine.start(
                StageDoubles.engine(new ScriptedExecutor(NamedAdaptersHttpTest::script)), config())) {
            HttpResponse<String> models = HttpClient.newHttpClient()
                    .send(
                            HttpRequest.newBuilder(URI.create(s.base() + "/v1/models"))
                                    .build(),
                            HttpResponse.BodyHandlers.ofString());
            List<String> ids = new ArrayList<>();
            JSON.readTree(models.body())
                    .get("data")
                    .forEach(m -> ids.add(m.get("id").asText()));
            assertEquals(List.of("tiny", "tiny:support", "tiny:sales"), ids);

            assertEquals("t1 t2 ", content(s.post("/v1/chat/completions", chat("tiny", null))));
            assertEquals("t3 t4 ", content(s.post("/v1/chat/completions", chat("tiny:support", null))));
            assertEquals("t5 t6 ", content(s.post("/v1/chat/completions", chat(null, "sales"))));
            assertEquals("t5 t6 ", content(s.post("/v1/chat/completions", chat(null, "/srv/adapters/./sales"))));
            assertEquals("t3 t4 ", content(s.post("/v1/chat/completions", chat("tiny:support", "support"))));
            HttpResponse<String> messages = s.post(
                    "/v1/messages",
                    "{\"model\":\"tiny:sales\",\"max_tokens\":2,\"messages\":[{\"role\":\"user\",\"content\":\"hi\"}]}");
            assertEquals(200, messages.statusCode(), messages.body());
            assertEquals(
                    "t5 t6 ",
                    JSON.readTree(messages.body()).at("/content/0/text").asText());
        }
    }

    @Test
    void unknownAdaptersAreRefusedNamingThemAndTheServerKeepsServing() throws Exception {
        try (ServedEngine s = ServedEngine.start(
                StageDoubles.engine(new ScriptedExecutor(NamedAdaptersHttpTest::script)), config())) {
            assertRefused(s.post("/v1/chat/completions", chat("tiny:nope", null)), 404, "tiny:nope");
            assertRefused(s.post("/v1/chat/completions", chat(null, "nope")), 400, "nope");
            assertRefused(
                    s.post("/v1/chat/completions", chat(null, "/srv/adapters/other")), 400, "/srv/adapters/other");
            assertRefused(s.post("/v1/chat/completions", chat("tiny:support", "sales")), 400, "sales");
            assertRefused(
                    s.post("/v1/responses", "{\"model\":\"tiny:nope\",\"input\":\"hi\",\"max_output_tokens\":2}"),
                    404,
                    "tiny:nope");
            assertEquals("t3 t4 ", content(s.post("/v1/chat/completions", chat("tiny:support", null))));
        }
    }
}
