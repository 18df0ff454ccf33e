package dev.mlxring.ingress.http;

import static org.junit.jupiter.api.Assertions.assertEquals;

import dev.mlxring.pipeline.Engine;
import dev.mlxring.pipeline.PreparedPrompt;
import dev.mlxring.pipeline.testing.ScriptedExecutor;
import java.net.URI;
import java.net.http.HttpClient;
import java.net.http.HttpRequest;
import java.net.http.HttpResponse;
import java.util.concurrent.atomic.AtomicInteger;
import org.junit.jupiter.api.Test;

/**
 * A request admitted by its prompt's tokens (a pool's memory admission) is prepared once: the
 * tokens admission counted are the ones prep hands on, not a second rendering and tokenization.
 */
class AdmissionPrepTest {
    private static final HttpClient HTTP = HttpClient.newHttpClient();

    @Test
    void aRequestAdmittedByItsPromptTokensIsPreparedOnce() throws Exception {
        AtomicInteger preparations = new AtomicInteger();
        AtomicInteger admittedTokens = new AtomicInteger(-1);
        Admission byTokens = new Admission() {
            @Override
            public boolean needsPromptTokens() {
                return true;
            }

            @Override
            public Reservation admit(int promptTokens, int maxTokens) {
                admittedTokens.set(promptTokens);
                return Reservation.NONE;
            }
        };
        HttpServer.Config config = new HttpServer.Config("127.0.0.1", 0, "tiny", null, ServerDefaults.mlxLm(), "fp");
        try (Engine engine = StageDoubles.engine(ScriptedExecutor.counting())
                        .preparer(r -> {
                            preparations.incrementAndGet();
                            return new PreparedPrompt(new int[] {7, 8, 9}, 3);
                        })
                        .start();
                HttpServer s = new HttpServer(
                                config,
                                ModelRouter.single(
                                        new ModelRoute("tiny", engine, config.defaults(), id -> "", byTokens)),
                                new ServerMetrics(engine, null, null, 0))
                        .start()) {
            HttpResponse<String> r = HTTP.send(
                    HttpRequest.newBuilder(URI.create("http://127.0.0.1:" + s.port() + "/v1/completions"))
                            .POST(HttpRequest.BodyPublishers.ofString("{\"prompt\":\"x\",\"max_tokens\":2}"))
                            .build(),
                    HttpResponse.BodyHandlers.ofString());
            assertEquals(200, r.statusCode(), r.body());
            assertEquals(3, admittedTokens.get());
            assertEquals(1, preparations.get(), "the prompt was rendered and tokenized more than once");
        }
    }
}
