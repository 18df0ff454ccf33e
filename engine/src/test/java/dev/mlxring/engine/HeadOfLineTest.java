package dev.mlxring.engine;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

import dev.mlxring.mlx.ProjectHome;
import dev.mlxring.pipeline.ChatMessage;
import dev.mlxring.pipeline.CommittedSpan;
import dev.mlxring.pipeline.EngineConfig;
import dev.mlxring.pipeline.ExecActivity;
import dev.mlxring.pipeline.GenerationListener;
import dev.mlxring.pipeline.GenerationRequest;
import dev.mlxring.pipeline.Lifecycle;
import dev.mlxring.pipeline.Outcome;
import dev.mlxring.pipeline.Prompt;
import dev.mlxring.pipeline.Session;
import dev.mlxring.plan.RequestPlanner;
import java.nio.file.Path;
import java.util.List;
import java.util.Map;
import java.util.concurrent.TimeUnit;
import java.util.function.BooleanSupplier;
import java.util.stream.IntStream;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.CsvSource;

/**
 * Head-of-line blocking on the default model with a small prompt step (128 tokens): a short chat
 * request arriving while a 1,280-token prompt is read finishes before that prompt's first token
 * (it is read ahead of the long prompt's chunks and its rows then get decode-only units between
 * them), where mlx-lm's schedule (every unit a chunk, a short prompt padded into the long one's)
 * gives it one token per chunk and finishes it after the long prompt. Both schedules run here, so
 * the test shows it tells them apart. A request cancelled while its prompt is read is released at
 * the next chunk, not when the prompt is done. Order and ratios only, no wall-clock bound.
 */
class HeadOfLineTest {
    private static final int STEP = 128;
    /** More than the long prompt's chunks, so that mlx-lm's schedule cannot finish it first. */
    private static final int SHORT_TOKENS = 40;

    private static final Path MODEL = ProjectHome.get().resolve("models/smollm2-135m-instruct");

    private static LocalEngine open(double share, boolean shortFirst) {
        int context = LocalEngine.contextLength(MODEL);
        EngineConfig config = EngineConfig.defaults().withConcurrency(8, 8).withPrefillInterleave(share, shortFirst);
        return LocalEngine.open(
                MODEL,
                LocalEngine.Options.builder(RequestPlanner.Defaults.mlxLm(context))
                        .prefillStepSize(STEP)
                        .engine(config)
                        .build());
    }

    /** Prompt ids that no chat template produces, distinct per {@code seed} (no prefix shared). */
    private static GenerationRequest longPrompt(int length, int seed, int maxTokens) {
        int[] ids = IntStream.range(0, length)
                .map(i -> 1000 + (int) ((i * 7919L + seed * 104729L) % 30000))
                .toArray();
        return GenerationRequest.builder()
                .model("default_model")
                .prompt(new Prompt.Tokens(ids))
                .maxTokens(maxTokens)
                .build();
    }

    private static GenerationRequest chat(String question, int maxTokens) {
        return GenerationRequest.builder()
                .model("default_model")
                .prompt(new Prompt.Chat(List.of(ChatMessage.of("user", question)), List.of(), Map.of()))
                .maxTokens(maxTokens)
                .build();
    }

    /**
     * Notes when the first span and the outcome arrived (System.nanoTime; 0 until then) and how many
     * tokens were committed. Every callback runs on the one sink thread, in the order exec published.
     */
    private static final class Times implements GenerationListener {
        volatile long firstSpanNs;
        volatile long doneNs;
        volatile int tokens;
        /** Another session's token count when this one's first span arrived (-1 until then). */
        volatile int otherTokensAtFirstSpan = -1;

        volatile Times other;

        @Override
        public void onCommitted(Session session, CommittedSpan span) {
            if (firstSpanNs == 0) {
                firstSpanNs = System.nanoTime();
                Times o = other;
                otherTokensAtFirstSpan = o == null ? 0 : o.tokens;
            }
            if (span.tokenId >= 0) {
                tokens++; // the final span of a session carries no token (-1)
            }
        }

        @Override
        public void onComplete(Session session, Outcome outcome) {
            doneNs = System.nanoTime();
        }
    }

    private static void waitFor(BooleanSupplier condition, String what) throws InterruptedException {
        long deadline = System.nanoTime() + TimeUnit.SECONDS.toNanos(120);
        while (!condition.getAsBoolean()) {
            assertTrue(System.nanoTime() < deadline, "timed out waiting for " + what);
            Thread.sleep(2);
        }
    }

    /** The long prompt is being read: its session runs, no token yet, exec inside a batch unit. */
    private static void waitUntilReading(LocalEngine engine, Session s, Times t) throws InterruptedException {
        waitFor(
                () -> s.state() == Lifecycle.RUNNING
                        && engine.engine().execActivity().unit() == ExecActivity.Unit.BATCH,
                "the long prompt being read");
        assertEquals(0, t.firstSpanNs, "the long prompt is still being read");
    }

    @ParameterizedTest(name = "share {0}, short prompts first {1}")
    @CsvSource({"0.5, true", "1.0, false"})
    void aShortRequestFinishesBeforeALongPromptIsRead(double share, boolean shortFirst) throws Exception {
        try (LocalEngine engine = open(share, shortFirst)) {
            Times longT = new Times();
            long start = System.nanoTime();
            Session longS = engine.submit(longPrompt(10 * STEP, 1, 2), longT);
            waitUntilReading(engine, longS, longT);
            Times shortT = new Times();
            longT.other = shortT;
            long shortStart = System.nanoTime();
            Session shortS = engine.submit(chat("Tell me a long story about a dragon.", SHORT_TOKENS), shortT);
            Outcome shortO = shortS.result().get(300, TimeUnit.SECONDS);
            Outcome longO = longS.result().get(300, TimeUnit.SECONDS);
            assertEquals(Lifecycle.COMPLETED, shortO.state(), shortO.toString());
            assertEquals(Lifecycle.COMPLETED, longO.state(), longO.toString());
            assertEquals(SHORT_TOKENS, shortO.usage().completionTokens(), "the short request generated all its tokens");
            String seen = String.format(
                    "share %.1f, short first %b: short arrived %.0f ms after the long, TTFT %.0f"
                            + " ms, done %.0f ms after its arrival with %d tokens committed before the long's first; long"
                            + " first token %.0f ms after its arrival (%s)",
                    share,
                    shortFirst,
                    (shortStart - start) / 1e6,
                    (shortT.firstSpanNs - shortStart) / 1e6,
                    (shortT.doneNs - shortStart) / 1e6,
                    longT.otherTokensAtFirstSpan,
                    (longT.firstSpanNs - start) / 1e6,
                    longO.usage());
            System.out.println(seen);
            // The sink delivers in exec's publication order, so token counts order the two exactly.
            if (shortFirst) {
                assertEquals(
                        SHORT_TOKENS,
                        longT.otherTokensAtFirstSpan,
                        "the short request finished before the long" + " prompt was read: " + seen);
            } else {
                assertTrue(
                        longT.otherTokensAtFirstSpan < SHORT_TOKENS,
                        "mlx-lm's schedule: one short token per"
                                + " chunk, so the long prompt is read first (if this fails, the test no longer tells the"
                                + " schedules apart): " + seen);
            }
        }
    }

    @Test
    void aRequestCancelledWhileItsPromptIsReadIsReleasedAtTheNextChunk() throws Exception {
        try (LocalEngine engine = open(EngineConfig.DEFAULT_PREFILL_SHARE, true)) {
            int length = 12 * STEP;
            Times whole = new Times();
            long start = System.nanoTime();
            Outcome full =
                    engine.submit(longPrompt(length, 2, 1), whole).result().get(300, TimeUnit.SECONDS);
            assertEquals(Lifecycle.COMPLETED, full.state());
            long readNs = whole.firstSpanNs - start;

            Times t = new Times();
            Session s = engine.submit(longPrompt(length, 3, 1), t);
            waitUntilReading(engine, s, t);
            long cancelNs = System.nanoTime();
            s.cancel("client went away");
            Outcome o = s.result().get(300, TimeUnit.SECONDS);
            long releasedNs = System.nanoTime() - cancelNs;
            assertEquals(Lifecycle.CANCELLED, o.state(), o.toString());
            waitFor(() -> engine.engine().liveSessions() == 0, "the session released");
            System.out.printf(
                    "whole prompt read in %.0f ms; cancelled mid-prompt, released after %.0f ms%n",
                    readNs / 1e6, releasedNs / 1e6);
            // 12 chunks: released at the next chunk is about 1/12 of the whole; 1/3 leaves a wide margin.
            assertTrue(
                    releasedNs < readNs / 3,
                    "released after " + releasedNs / 1_000_000 + " ms; the whole prompt" + " takes "
                            + readNs / 1_000_000 + " ms");
        }
    }
}
