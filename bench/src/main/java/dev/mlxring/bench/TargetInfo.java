package dev.mlxring.bench;

import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.ObjectMapper;
import java.io.IOException;
import java.net.http.HttpRequest;
import java.net.http.HttpResponse;
import java.time.Duration;
import java.util.OptionalLong;

/**
 * What a run learns about a target before loading it: its {@code GET /v1/models} answer (the
 * version record the results keep; null with {@code modelsError} saying why), its {@code Server}
 * header, the model id requests will name, and, for a loopback target, the pid listening on its
 * port (whose CPU is the target's own, not foreign); -1 when unknown.
 */
public record TargetInfo(
        Target target, JsonNode models, String modelsError, String serverHeader, String modelId, long pid) {
    private static final ObjectMapper JSON = new ObjectMapper();

    private static JsonNode parse(String body) {
        try {
            return JSON.readTree(body);
        } catch (IOException e) {
            return null;
        }
    }

    /** Asks {@code target} for its models through {@code client}; never throws. */
    public static TargetInfo probe(Target target, StreamingClient client) {
        JsonNode models = null;
        String error = null;
        String server = null;
        try {
            HttpRequest.Builder b = HttpRequest.newBuilder(target.uri("/v1/models"))
                    .timeout(Duration.ofSeconds(30))
                    .GET();
            target.headers().forEach(b::header);
            HttpResponse<String> r = client.http().send(b.build(), HttpResponse.BodyHandlers.ofString());
            server = r.headers().firstValue("server").orElse(null);
            if (r.statusCode() == 200) {
                JsonNode body = parse(r.body());
                if (body != null && body.isObject()) {
                    models = body;
                } else {
                    // mlx_lm.server answers 200, then fails to list a missing Hugging Face cache
                    error = "HTTP 200 with a body that is not a JSON object: "
                            + (r.body().length() > 200 ? r.body().substring(0, 200) + "…" : "'" + r.body() + "'");
                }
            } else {
                error = "HTTP " + r.statusCode();
            }
        } catch (Exception e) {
            if (e instanceof InterruptedException) {
                Thread.currentThread().interrupt();
            }
            error = e.getClass().getSimpleName() + (e.getMessage() == null ? "" : ": " + e.getMessage());
        }
        String model = target.model();
        if (model == null && models != null) {
            JsonNode first = models.path("data").path(0).path("id");
            model = first.isTextual() ? first.asText() : null;
        }
        if (model == null) {
            model = "default_model";
        }
        long pid = -1;
        if (target.loopback()) {
            int port = target.base().getPort() > 0
                    ? target.base().getPort()
                    : target.base().getScheme().equals("https") ? 443 : 80;
            OptionalLong p = ListenerPid.of(port);
            pid = p.orElse(-1);
        }
        return new TargetInfo(target.withModel(model), models, error, server, model, pid);
    }
}
