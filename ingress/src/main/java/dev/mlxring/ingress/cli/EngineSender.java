package dev.mlxring.ingress.cli;

import dev.mlxring.bench.BenchPrompt;
import dev.mlxring.bench.ErrorClass;
import dev.mlxring.bench.RequestRecord;
import dev.mlxring.bench.RequestSender;
import dev.mlxring.bench.StageLatencies;
import dev.mlxring.bench.StageTimed;
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
 *
 * <p>Within a phase ({@link StageTimed}) it records the pipeline's hand-offs: for each completed
 * session, its first token's way from {@link LocalEngine#submit} through the stages
 * ({@link Session#stageNs}): {@value #SUBMIT_TO_PREP}, {@value #PREP_TO_PLAN}, {@value #PLAN_TO_EXEC},
 * {@value #EXEC_TO_FIRST_TOKEN}, {@value #FIRST_TOKEN_TO_SINK}, {@value #SINK_TO_LISTENER}; and for
 * every token, {@value #TOKEN_EXEC_TO_SINK} (the token ring) and {@value #TOKEN_SINK_TO_LISTENER}
 * (the text sink's decoding), from the span's {@link CommittedSpan#committedNs} and
 * {@link CommittedSpan#sinkNs}.
 */
final class EngineSender implements RequestSender, StageTimed {
    static final String SUBMIT_TO_PREP = "submit_to_prep";
    static final String PREP_TO_PLAN = "prep_to_plan";
    static final String PLAN_TO_EXEC = "plan_to_exec";
    static final String EXEC_TO_FIRST_TOKEN = "exec_to_first_token";
    static final String FIRST_TOKEN_TO_SINK = "first_token_to_sink";
    static final String SINK_TO_LISTENER = "sink_to_listener";
    static final String TOKEN_EXEC_TO_SINK = "token_exec_to_sink";
    static final String TOKEN_SINK_TO_LISTENER = "token_sink_to_listener";

    private final LocalEngine engine;
    private final Duration timeout;
    /** The phase's hand-offs, null outside a phase. */
    private volatile StageLatencies phase;

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
        Timeline timeline = new Timeline(onText, phase);
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

    @Override
    public void startPhase() {
        phase = new StageLatencies(
                SUBMIT_TO_PREP,
                PREP_TO_PLAN,
                PLAN_TO_EXEC,
                EXEC_TO_FIRST_TOKEN,
                FIRST_TOKEN_TO_SINK,
                SINK_TO_LISTENER,
                TOKEN_EXEC_TO_SINK,
                TOKEN_SINK_TO_LISTENER);
    }

    @Override
    public StageLatencies endPhase() {
        StageLatencies out = phase;
        phase = null;
        return out == null ? new StageLatencies() : out;
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
        /** Where this request's hand-offs go; null when not recorded (the warm-up). */
        final StageLatencies stages;
        /** When the listener got the first span with a token, 0 before. */
        long firstSpanNs;

        Timeline(IntConsumer onText, StageLatencies stages) {
            this.onText = onText;
            this.stages = stages;
        }

        @Override
        public void onCommitted(Session session, CommittedSpan span) {
            if (stages != null && span.committedNs != 0) {
                long now = System.nanoTime();
                if (firstSpanNs == 0) {
                    firstSpanNs = now;
                }
                stages.record(TOKEN_EXEC_TO_SINK, span.sinkNs - span.committedNs);
                stages.record(TOKEN_SINK_TO_LISTENER, now - span.sinkNs);
            }
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
            if (stages != null && outcome.state() == Lifecycle.COMPLETED && firstSpanNs != 0) {
                long prep = session.stageNs(Session.Stage.PREP);
                long plan = session.stageNs(Session.Stage.PLAN);
                long exec = session.stageNs(Session.Stage.EXEC);
                long token = session.stageNs(Session.Stage.FIRST_TOKEN);
                long sink = session.stageNs(Session.Stage.SINK);
                if (prep != 0 && plan != 0 && exec != 0 && token != 0 && sink != 0) {
                    stages.record(SUBMIT_TO_PREP, prep - session.createdNs());
                    stages.record(PREP_TO_PLAN, plan - prep);
                    stages.record(PLAN_TO_EXEC, exec - plan);
                    stages.record(EXEC_TO_FIRST_TOKEN, token - exec);
                    stages.record(FIRST_TOKEN_TO_SINK, sink - token);
                    stages.record(SINK_TO_LISTENER, firstSpanNs - sink);
                }
            }
            done.complete(outcome);
        }
    }
}
