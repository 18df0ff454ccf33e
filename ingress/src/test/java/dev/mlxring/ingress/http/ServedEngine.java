package dev.mlxring.ingress.http;

import dev.mlxring.pipeline.Engine;
import java.io.IOException;
import java.net.URI;
import java.net.http.HttpClient;
import java.net.http.HttpRequest;
import java.net.http.HttpResponse;
import java.util.function.IntFunction;

/**
 * An {@link HttpServer} on an ephemeral port of 127.0.0.1, model id "tiny", over an engine the
 * test builds (stage doubles, no model), for the HTTP tests. {@link #start} starts the engine then
 * the server; {@link #close} closes the server then the engine.
 */
final class ServedEngine implements AutoCloseable {
    private static final HttpClient HTTP = HttpClient.newHttpClient();
    private final Engine engine;
    private final HttpServer server;

    private ServedEngine(Engine engine, HttpServer server) {
        this.engine = engine;
        this.server = server;
    }

    /** mlx_lm.server's defaults: max_tokens 512, an 8192-token context, the default body cap. */
    static HttpServer.Config mlxLm() {
        return new HttpServer.Config("127.0.0.1", 0, "tiny", null, ServerDefaults.mlxLm(), "fp");
    }

    /** mlx_lm.server's token defaults with a vocabulary of 1000 ids and bodies capped at 64 KiB. */
    static HttpServer.Config smallBodies() {
        return new HttpServer.Config("127.0.0.1", 0, "tiny", null, new ServerDefaults(512, 8192, 1000), "fp",
                64 * 1024);
    }

    /** Starts {@code engine} and a server on it with {@code config}, rendering token id n as "tn". */
    static ServedEngine start(Engine.Builder engine, HttpServer.Config config) {
        return start(engine, config, id -> "t" + id);
    }

    /** Starts {@code engine} and a server on it with {@code config} and {@code tokenText}. */
    static ServedEngine start(Engine.Builder engine, HttpServer.Config config, IntFunction<String> tokenText) {
        Engine started = engine.start();
        try {
            return new ServedEngine(started, new HttpServer(config, started, tokenText).start());
        } catch (RuntimeException e) {
            started.close();
            throw e;
        }
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
        return HTTP.send(HttpRequest.newBuilder(URI.create(base() + path))
                .header("Content-Type", "application/json").POST(HttpRequest.BodyPublishers.ofString(body)).build(),
                HttpResponse.BodyHandlers.ofString());
    }

    @Override
    public void close() {
        server.close();
        engine.close();
    }
}
