package dev.mlxring.ingress.http;

import dev.mlxring.pipeline.Engine;
import java.io.IOException;
import java.net.URI;
import java.net.http.HttpClient;
import java.net.http.HttpRequest;
import java.net.http.HttpResponse;
import java.util.function.IntFunction;
import java.util.function.Supplier;
import org.junit.jupiter.api.extension.AfterEachCallback;
import org.junit.jupiter.api.extension.BeforeEachCallback;
import org.junit.jupiter.api.extension.ExtensionContext;

/**
 * An {@link HttpServer} on an ephemeral port of 127.0.0.1, model id "tiny", over an engine the
 * test builds (stage doubles, no model), for the HTTP tests. Either started at once by {@link
 * #start}, or registered as an instance {@code @RegisterExtension} field made by {@link #eachTest}
 * to start before each test and close after it. Starting starts the engine then the server;
 * {@link #close} closes the server then the engine.
 */
final class ServedEngine implements AutoCloseable, BeforeEachCallback, AfterEachCallback {
    private static final HttpClient HTTP = HttpClient.newHttpClient();
    private final Supplier<Engine.Builder> engineBuilder;
    private final HttpServer.Config config;
    private final IntFunction<String> tokenText;
    private Engine engine;
    private HttpServer server;

    private ServedEngine(
            Supplier<Engine.Builder> engineBuilder, HttpServer.Config config, IntFunction<String> tokenText) {
        this.engineBuilder = engineBuilder;
        this.config = config;
        this.tokenText = tokenText;
    }

    /** mlx_lm.server's defaults: max_tokens 512, an 8192-token context, the default body cap. */
    static HttpServer.Config mlxLm() {
        return new HttpServer.Config("127.0.0.1", 0, "tiny", null, ServerDefaults.mlxLm(), "fp");
    }

    /** mlx_lm.server's token defaults with a vocabulary of 1000 ids and bodies capped at 64 KiB. */
    static HttpServer.Config smallBodies() {
        return new HttpServer.Config(
                "127.0.0.1", 0, "tiny", null, new ServerDefaults(512, 8192, 1000), "fp", 64 * 1024);
    }

    /** Starts {@code engine} and a server on it with {@code config}, rendering token id n as "tn". */
    static ServedEngine start(Engine.Builder engine, HttpServer.Config config) {
        ServedEngine served = new ServedEngine(() -> engine, config, id -> "t" + id);
        served.open();
        return served;
    }

    /** A server with {@code config} on a fresh engine from {@code engine} for each test, rendering id n as "tn". */
    static ServedEngine eachTest(Supplier<Engine.Builder> engine, HttpServer.Config config) {
        return eachTest(engine, config, id -> "t" + id);
    }

    /** A server with {@code config} and {@code tokenText} on a fresh engine from {@code engine} for each test. */
    static ServedEngine eachTest(
            Supplier<Engine.Builder> engine, HttpServer.Config config, IntFunction<String> tokenText) {
        return new ServedEngine(engine, config, tokenText);
    }

    @Override
    public void beforeEach(ExtensionContext context) {
        open();
    }

    @Override
    public void afterEach(ExtensionContext context) {
        close();
    }

    private void open() {
        Engine started = engineBuilder.get().start();
        try {
            server = new HttpServer(config, started, tokenText).start();
        } catch (RuntimeException e) {
            started.close();
            throw e;
        }
        engine = started;
    }

    Engine engine() {
        return engine;
    }

    HttpServer server() {
        return server;
    }

    int port() {
        return server.port();
    }

    /** "http://127.0.0.1:port", without a trailing slash. */
    String base() {
        return "http://127.0.0.1:" + server.port();
    }

    /** POSTs {@code body} as application/json to {@code path} and waits for the whole response. */
    HttpResponse<String> post(String path, String body) throws IOException, InterruptedException {
        return HTTP.send(
                HttpRequest.newBuilder(URI.create(base() + path))
                        .header("Content-Type", "application/json")
                        .POST(HttpRequest.BodyPublishers.ofString(body))
                        .build(),
                HttpResponse.BodyHandlers.ofString());
    }

    /** Closes the server then the engine; nothing when not started (open sets both or neither) or closed. */
    @Override
    public void close() {
        if (server == null) {
            return;
        }
        server.close();
        engine.close();
        server = null;
        engine = null;
    }
}
