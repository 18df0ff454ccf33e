package dev.mlxring.ingress.http;

import dev.mlxring.pipeline.Engine;
import java.util.Objects;
import java.util.function.IntFunction;

/**
 * One servable model as a request reaches it: the engine pipeline that runs it, the defaults its
 * requests are parsed with, its token texts (logprobs' alternatives) and the admission its
 * requests pass before they are submitted.
 *
 * @param name the model's id ({@code /v1/models}), echoed back in responses
 */
public record ModelRoute(
        String name, Engine engine, ServerDefaults defaults, IntFunction<String> tokenText, Admission admission) {
    public ModelRoute {
        Objects.requireNonNull(name, "name");
        Objects.requireNonNull(engine, "engine");
        Objects.requireNonNull(defaults, "defaults");
        Objects.requireNonNull(tokenText, "tokenText");
        Objects.requireNonNull(admission, "admission");
    }
}
