package dev.mlxring.ingress.cli;

import dev.mlxring.pipeline.Engine;
import java.io.IOException;
import java.net.URI;
import java.net.http.HttpClient;
import java.net.http.HttpRequest;
import java.net.http.HttpResponse;
import java.nio.charset.StandardCharsets;
import java.time.Duration;
import org.junit.jupiter.api.extension.AfterAllCallback;
import org.junit.jupiter.api.extension.BeforeAllCallback;
import org.junit.jupiter.api.extension.ExtensionContext;

/**
 * The real server on the default model for a test class's end-to-end tests, registered as a
 * static {@code @RegisterExtension} field: {@link InProcessServer} starts {@code serve --port 0}
 * and the class's own flags before its first test and closes it after its last. JSON POSTs wait
 * up to five minutes for their answer.
 */
final class ServedModel implements BeforeAllCallback, AfterAllCallback {
    /** The client the end-to-end tests share: connects within 10 s. */
    static final HttpClient HTTP =
            HttpClient.newBuilder().connectTimeout(Duration.ofSeconds(10)).build();

    private final String[] flags;
    private ServeCommand.Running running;

    private ServedModel(String[] flags) {
        this.flags = flags;
    }

    /** A server started with {@code --port 0} and {@code flagValuePairs} (each flag followed by its value). */
    static ServedModel serve(String... flagValuePairs) {
        if (flagValuePairs.length % 2 != 0) {
            throw new IllegalArgumentException("each flag needs its value: " + String.join(" ", flagValuePairs));
        }
        return new ServedModel(flagValuePairs.clone());
    }

    @Override
    public void beforeAll(ExtensionContext context) {
        running = InProcessServer.start(flags);
    }

    @Override
    public void afterAll(ExtensionContext context) {
        if (running != null) {
            running.close();
        }
    }

    /** "http://127.0.0.1:port", without a trailing slash. */
    String base() {
        return InProcessServer.base(started());
    }

    /** The server's URI for {@code path} (which starts with "/"). */
    URI uri(String path) {
        return URI.create(base() + path);
    }

    Engine engine() {
        return started().engine();
    }

    /** POSTs {@code body} as application/json to {@code path}; waits up to five minutes for the whole response. */
    HttpResponse<String> post(String path, byte[] body) throws IOException, InterruptedException {
        return HTTP.send(
                HttpRequest.newBuilder(uri(path))
                        .timeout(Duration.ofMinutes(5))
                        .header("Content-Type", "application/json")
                        .POST(HttpRequest.BodyPublishers.ofByteArray(body))
                        .build(),
                HttpResponse.BodyHandlers.ofString());
    }

    /** {@link #post(String, byte[])} with {@code body} in UTF-8. */
    HttpResponse<String> post(String path, String body) throws IOException, InterruptedException {
        return post(path, body.getBytes(StandardCharsets.UTF_8));
    }

    private ServeCommand.Running started() {
        if (running == null) {
            throw new IllegalStateException("the server starts before the test class's first test");
        }
        return running;
    }
}
