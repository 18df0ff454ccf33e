package dev.mlxring.ingress.cli;

import dev.mlxring.bench.BenchPrompt;
import dev.mlxring.bench.ErrorClass;
import dev.mlxring.bench.RequestRecord;
import dev.mlxring.bench.RequestSender;
import dev.mlxring.bench.Target;
import dev.mlxring.engine.LocalEngine;
import dev.mlxring.pipeline.ChatMessage;
import dev.mlxring.pipeline.CommittedSpan;
import dev.mlxring.pipeline.GenerationListener;
import dev.mlxring.pipeline.GenerationRequest;
import dev.mlxring.pipeline.Lifecycle;
import dev.mlxring.pipeline.Outcome;
import dev.mlxring.pipeline.OverloadedException;
import dev.mlxring.pipeline.Prompt;
import dev.mlxring.pipeline.SamplingSpec;
import dev.mlxring.pipeline.Session;
import java.time.Duration;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.List;
import java.util.Map;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.ExecutionException;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.TimeoutException;
import java.util.function.IntConsumer;

/**
 * {@code bench engine}'s sender: each request goes to an embedded {@link LocalEngine} as a greedy
 * chat ({@link Prompt.Chat}: the prompt's system message, a multi-turn request's earlier turns as
 * user and assistant messages, then its user turn), timed as an
 * embedding host sees it: submit → each committed span with text or reasoning (on the sink
 * thread) → completion. Usage comes from the {@link Outcome}. A full queue is
 * {@link ErrorClass#OVERLOADED}; a failed or cancelled session {@link ErrorClass#STREAM_ERROR}; no
 * completion within the timeout cancels the session and counts as {@link ErrorClass#TIMEOUT}. The
 * record's answer is the committed spans' text (reasoning excluded).
 */
final class EngineSender implements RequestSender {
    private final LocalEngine engine;
    private final Duration timeout;

    EngineSender(LocalEngine engine, Duration timeout) {
        this.engine = engine;
        this.timeout = timeout;
    }

    @Override
    public RequestRecord send(Target target, BenchPrompt prompt, int index, IntConsumer onText) {
        List<ChatMessage> messages = new ArrayList<>();
        if (prompt.system() != null) {
            messages.add(ChatMessage.of("system", prompt.system()));
        }
        for (BenchPrompt.Exchange e : prompt.history()) {
            messages.add(ChatMessage.of("user", e.user()));
            messages.add(ChatMessage.of("assistant", e.assistant()));
        }
        messages.add(ChatMessage.of("user", prompt.user()));
        GenerationRequest request = GenerationRequest.builder()
                .prompt(new Prompt.Chat(messages, List.of(), Map.of()))
                .maxTokens(prompt.maxTokens())
                .sampling(SamplingSpec.builder().temperature(0.0).build())
                .build();
        Timeline timeline = new Timeline(onText);
        long sendNs = System.nanoTime();
        Session session;
        try {
            session = engine.submit(request, timeline);
        } catch (OverloadedException e) {
            return failed(index, sendNs, ErrorClass.OVERLOADED, String.valueOf(e.getMessage()));
        }
        Outcome outcome;
        try {
            outcome = timeline.done.get(timeout.toNanos(), TimeUnit.NANOSECONDS);
        } catch (TimeoutException e) {
            session.cancel("bench timeout");
            return failed(index, sendNs, ErrorClass.TIMEOUT, "no completion within " + timeout.toSeconds() + " s");
        } catch (ExecutionException e) {
            return failed(index, sendNs, ErrorClass.STREAM_ERROR, String.valueOf(e.getCause()));
        } catch (InterruptedException e) {
            Thread.currentThread().interrupt();
            session.cancel("bench interrupted");
            return failed(index, sendNs, ErrorClass.TIMEOUT, "interrupted");
        }
        long[] times = Arrays.copyOf(timeline.times, timeline.count);
        int promptTokens = outcome.usage() == null ? -1 : outcome.usage().promptTokens();
        int completionTokens = outcome.usage() == null ? -1 : outcome.usage().completionTokens();
        if (outcome.state() != Lifecycle.COMPLETED) {
            return new RequestRecord(
                    index,
                    200,
                    sendNs,
                    times,
                    timeline.endNs,
                    promptTokens,
                    completionTokens,
                    ErrorClass.STREAM_ERROR,
                    outcome.state() + ": " + outcome.message());
        }
        if (times.length == 0) {
            return new RequestRecord(
                    index,
                    200,
                    sendNs,
                    times,
                    timeline.endNs,
                    promptTokens,
                    completionTokens,
                    ErrorClass.NO_TOKENS,
                    "the session completed without text");
        }
        return new RequestRecord(
                index,
                200,
                sendNs,
                times,
                timeline.endNs,
                promptTokens,
                completionTokens,
                null,
                null,
                timeline.answer.toString());
    }

    private static RequestRecord failed(int index, long sendNs, String errorClass, String detail) {
        return new RequestRecord(index, 0, sendNs, new long[0], System.nanoTime(), -1, -1, errorClass, detail);
    }

    /**
     * One session's arrival times, written on the sink thread and read after {@link #done}
     * completes (which orders the writes before the reads).
     */
    private static final class Timeline implements GenerationListener {
        final CompletableFuture<Outcome> done = new CompletableFuture<>();
        final IntConsumer onText;
        long[] times = new long[64];
        int count;
        final StringBuilder answer = new StringBuilder();
        long endNs;

        Timeline(IntConsumer onText) {
            this.onText = onText;
        }

        @Override
        public void onCommitted(Session session, CommittedSpan span) {
            if (span.text.isEmpty() && span.reasoning.isEmpty()) {
                return;
            }
            answer.append(span.text);
            if (count == times.length) {
                times = Arrays.copyOf(times, count * 2);
            }
            times[count++] = System.nanoTime();
            onText.accept(count);
        }

        @Override
        public void onComplete(Session session, Outcome outcome) {
            endNs = System.nanoTime();
            done.complete(outcome);
        }
    }
}
