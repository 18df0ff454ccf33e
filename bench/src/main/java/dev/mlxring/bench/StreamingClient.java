package dev.mlxring.bench;

import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.ObjectMapper;
import java.io.BufferedReader;
import java.io.IOException;
import java.io.InputStream;
import java.io.InputStreamReader;
import java.net.ConnectException;
import java.net.http.HttpClient;
import java.net.http.HttpConnectTimeoutException;
import java.net.http.HttpRequest;
import java.net.http.HttpResponse;
import java.net.http.HttpTimeoutException;
import java.nio.charset.StandardCharsets;
import java.time.Duration;
import java.util.Arrays;
import java.util.function.IntConsumer;

/**
 * Sends one streaming request and reads its server-sent events, timing each event that carries
 * generated text as it arrives: the measuring half of {@code bench serve}. Thread-safe (the
 * {@link HttpClient} is shared; each call is independent). A failure of any kind becomes a
 * {@link RequestRecord} with its {@link ErrorClass}, never an exception.
 */
public final class StreamingClient implements RequestSender {
    private static final ObjectMapper JSON = new ObjectMapper();

    private final HttpClient http;
    private final ApiDialect dialect;
    private final Duration timeout;

    /** A client of {@code dialect} whose requests must get their response headers within {@code timeout}. */
    public StreamingClient(ApiDialect dialect, Duration timeout) {
        this.dialect = dialect;
        this.timeout = timeout;
        this.http = HttpClient.newBuilder()
                .version(HttpClient.Version.HTTP_1_1)
                .connectTimeout(Duration.ofSeconds(10))
                .build();
    }

    /** The HTTP client, for the other calls of a run (a target's {@code /v1/models}). */
    public HttpClient http() {
        return http;
    }

    /**
     * Sends {@code prompt} to {@code target} as request {@code index}; {@code onText} is told the
     * number of text events so far each time one arrives (for the progress line).
     */
    @Override
    public RequestRecord send(Target target, BenchPrompt prompt, int index, IntConsumer onText) {
        byte[] body;
        try {
            body = JSON.writeValueAsBytes(dialect.body(prompt, target.model()));
        } catch (IOException e) {
            throw new IllegalStateException("cannot encode a request body", e);
        }
        HttpRequest.Builder b = HttpRequest.newBuilder(target.uri(dialect.path()))
                .timeout(timeout)
                .header("Content-Type", "application/json")
                .header("Accept", "text/event-stream")
                .POST(HttpRequest.BodyPublishers.ofByteArray(body));
        target.headers().forEach(b::header);
        long sendNs = System.nanoTime();
        HttpResponse<InputStream> response;
        try {
            response = http.send(b.build(), HttpResponse.BodyHandlers.ofInputStream());
        } catch (HttpConnectTimeoutException | ConnectException e) {
            return failed(index, 0, sendNs, ErrorClass.CONNECT, String.valueOf(e.getMessage()));
        } catch (HttpTimeoutException e) {
            return failed(index, 0, sendNs, ErrorClass.TIMEOUT, "no response within " + timeout.toSeconds() + " s");
        } catch (IOException e) {
            return failed(index, 0, sendNs, ErrorClass.CONNECT, e.getClass().getSimpleName() + ": " + e.getMessage());
        } catch (InterruptedException e) {
            Thread.currentThread().interrupt();
            return failed(index, 0, sendNs, ErrorClass.TIMEOUT, "interrupted");
        }
        int status = response.statusCode();
        if (status != 200) {
            String detail;
            try (InputStream in = response.body()) {
                detail = new String(in.readNBytes(500), StandardCharsets.UTF_8);
                BodyEnd.drain(in, BodyEnd.WITHIN);
            } catch (IOException e) {
                detail = "";
            }
            return failed(index, status, sendNs, ErrorClass.ofStatus(status), "HTTP " + status + ": " + detail);
        }
        return read(response.body(), index, sendNs, onText);
    }

    private RequestRecord read(InputStream stream, int index, long sendNs, IntConsumer onText) {
        long[] times = new long[64];
        int n = 0;
        int promptTokens = -1;
        int completionTokens = -1;
        String eventType = null;
        StringBuilder answer = new StringBuilder();
        long doneNs = -1;
        try (BufferedReader in = new BufferedReader(new InputStreamReader(stream, StandardCharsets.UTF_8))) {
            String line;
            while ((line = in.readLine()) != null) {
                long now = System.nanoTime();
                if (line.isEmpty()) {
                    eventType = null;
                    continue;
                }
                if (line.startsWith("event:")) {
                    eventType = line.substring(6).trim();
                    continue;
                }
                if (!line.startsWith("data:")) {
                    continue;
                }
                String data = line.substring(5).trim();
                if (data.equals("[DONE]")) {
                    doneNs = now;
                    break;
                }
                JsonNode node;
                try {
                    node = JSON.readTree(data);
                } catch (IOException e) {
                    RequestRecord bad = failed(
                            index, 200, sendNs, ErrorClass.PROTOCOL, "an event is not JSON: " + abbreviate(data));
                    BodyEnd.drain(stream, BodyEnd.WITHIN);
                    return bad;
                }
                ApiDialect.Event ev = dialect.read(eventType, node);
                if (ev.error() != null) {
                    long errorNs = System.nanoTime();
                    BodyEnd.drain(stream, BodyEnd.WITHIN); // a failed request's connection serves the next as well
                    return new RequestRecord(
                            index,
                            200,
                            sendNs,
                            Arrays.copyOf(times, n),
                            errorNs,
                            promptTokens,
                            completionTokens,
                            ErrorClass.STREAM_ERROR,
                            ev.error());
                }
                answer.append(ev.answer());
                if (!ev.text().isEmpty()) {
                    if (n == times.length) {
                        times = Arrays.copyOf(times, n * 2);
                    }
                    times[n++] = now;
                    onText.accept(n);
                }
                if (ev.promptTokens() >= 0) {
                    promptTokens = ev.promptTokens();
                }
                if (ev.completionTokens() >= 0) {
                    completionTokens = ev.completionTokens();
                }
            }
            BodyEnd.drain(stream, BodyEnd.WITHIN); // the rest is the chunked body's end
        } catch (IOException e) {
            return failed(index, 200, sendNs, ErrorClass.PROTOCOL, "the stream broke: " + e.getMessage());
        }
        long endNs = doneNs > 0 ? doneNs : System.nanoTime();
        if (n == 0) {
            return new RequestRecord(
                    index,
                    200,
                    sendNs,
                    new long[0],
                    endNs,
                    promptTokens,
                    completionTokens,
                    ErrorClass.NO_TOKENS,
                    "the stream ended without generated text");
        }
        return new RequestRecord(
                index,
                200,
                sendNs,
                Arrays.copyOf(times, n),
                endNs,
                promptTokens,
                completionTokens,
                null,
                null,
                answer.toString());
    }

    private static RequestRecord failed(int index, int status, long sendNs, String errorClass, String detail) {
        return new RequestRecord(index, status, sendNs, new long[0], System.nanoTime(), -1, -1, errorClass, detail);
    }

    private static String abbreviate(String s) {
        return s.length() <= 200 ? s : s.substring(0, 200) + "…";
    }
}
