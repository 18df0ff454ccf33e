package dev.mlxring.ingress.http;

import com.fasterxml.jackson.databind.node.ArrayNode;

/**
 * The models a server serves, by the name a request gives: one model ({@link #single}) or a pool
 * whose models load on first use. Thread-safe.
 */
public interface ModelRouter {
    /**
     * The route of the model {@code requested} names ({@code null}: the default model).
     *
     * @throws ApiError 404 {@code model_not_found} for a name nobody serves; 503 naming the model
     *     and the cause when its load failed
     * @throws ModelLoading while the model loads (its load has begun)
     */
    ModelRoute route(String requested);

    /** The default model's route: loaded for as long as the server runs. */
    ModelRoute defaultRoute();

    /** Appends one OpenAI model object per model served (id, object, created, owned_by, and the pool's fields). */
    void list(ArrayNode data, long createdSeconds);

    /** One model that is always loaded; requests may name it or {@code default_model}. */
    static ModelRouter single(ModelRoute route) {
        return new ModelRouter() {
            @Override
            public ModelRoute route(String requested) {
                if (requested != null && !requested.equals(route.name()) && !requested.equals("default_model")) {
                    throw notFound(requested, java.util.List.of(route.name()));
                }
                return route;
            }

            @Override
            public ModelRoute defaultRoute() {
                return route;
            }

            @Override
            public void list(ArrayNode data, long createdSeconds) {
                var m = data.addObject();
                m.put("id", route.name());
                m.put("object", "model");
                m.put("created", createdSeconds);
                m.put("owned_by", "mlx-ring");
            }
        };
    }

    /** OpenAI's 404 {@code model_not_found} for {@code requested}, naming the models served. */
    static ApiError notFound(String requested, java.util.Collection<String> served) {
        return new ApiError(
                404,
                "invalid_request_error",
                "model '" + requested + "' is not served here (serving " + String.join(", ", served) + ")",
                "model",
                "model_not_found");
    }
}
