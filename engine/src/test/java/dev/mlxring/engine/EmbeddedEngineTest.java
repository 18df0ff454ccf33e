package dev.mlxring.engine;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

import dev.mlxring.mlx.ProjectHome;
import dev.mlxring.pipeline.ChatMessage;
import dev.mlxring.pipeline.CommittedSpan;
import dev.mlxring.pipeline.GenerationListener;
import dev.mlxring.pipeline.GenerationRequest;
import dev.mlxring.pipeline.Lifecycle;
import dev.mlxring.pipeline.Outcome;
import dev.mlxring.pipeline.Prompt;
import dev.mlxring.pipeline.Session;
import java.nio.file.Path;
import java.util.List;
import java.util.Map;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicInteger;
import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Test;

/** A host embedding the pipeline in-process: only {@link LocalEngine} and the pipeline API, no HTTP. */
class EmbeddedEngineTest {
    private static LocalEngine engine;

    @BeforeAll
    static void open() {
        Path model = ProjectHome.get().resolve("models/smollm2-135m-instruct");
        engine = LocalEngine.open(model, LocalEngine.Options.defaults(LocalEngine.contextLength(model)));
    }

    @AfterAll
    static void close() {
        engine.close();
    }

    private static GenerationRequest chat(String question, int maxTokens) {
        return GenerationRequest.builder()
                .model("default_model")
                .prompt(new Prompt.Chat(List.of(ChatMessage.of("user", question)), List.of(), Map.of()))
                .maxTokens(maxTokens)
                .build();
    }

    /** Collects text; the span is a flyweight, so it copies what it keeps. */
    private static final class Collector implements GenerationListener {
        final StringBuilder text = new StringBuilder();
        final AtomicInteger spans = new AtomicInteger();

        @Override
        public void onCommitted(Session session, CommittedSpan span) {
            spans.incrementAndGet();
            synchronized (text) {
                text.append(span.text);
            }
        }

        @Override
        public void onComplete(Session session, Outcome outcome) {}
    }

    @Test
    void answersThroughTheListener() throws Exception {
        Collector c = new Collector();
        Session s = engine.submit(chat("What is the capital of France?", 20), c);
        Outcome o = s.result().get(120, TimeUnit.SECONDS);
        assertEquals(Lifecycle.COMPLETED, o.state());
        assertTrue(c.text.toString().contains("Paris"), c.text.toString());
        assertTrue(o.usage().completionTokens() > 0 && o.usage().promptTokens() > 0);
    }

    @Test
    void cancelMidDecodeEndsCancelledAndTheEngineStaysUsable() throws Exception {
        Collector c = new Collector();
        Session s = engine.submit(chat("Tell me a long story about a dragon.", 500), c);
        while (c.spans.get() < 3) {
            if (s.result().isDone()) {
                throw new AssertionError("ended before 3 spans: " + s.result().get());
            }
            Thread.sleep(5);
        }
        s.cancel("host decided");
        Outcome o = s.result().get(60, TimeUnit.SECONDS);
        assertEquals(Lifecycle.CANCELLED, o.state());
        assertEquals("host decided", o.message());
        assertTrue(o.usage().completionTokens() < 500);
        assertEquals(0, engine.engine().admittedCount());
        Collector again = new Collector();
        assertEquals(
                Lifecycle.COMPLETED,
                engine.submit(chat("What is 2+2?", 8), again)
                        .result()
                        .get(60, TimeUnit.SECONDS)
                        .state());
    }
}
