package dev.mlxring.ingress.http;

import com.fasterxml.jackson.databind.node.ArrayNode;
import dev.mlxring.ingress.pool.ModelNames;

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

    /**
     * One model that is always loaded; requests may name it, {@code default_model}, or one of its
     * named adapters as {@code <model>:<NAME>} ({@link ServerDefaults#adapters}), which are listed
     * after it.
     */
    static ModelRouter single(ModelRoute route) {
        ModelNames names = new ModelNames(
                route.name(),
                new java.util.LinkedHashSet<>(java.util.List.of(route.name())),
                new java.util.LinkedHashSet<>(
                        route.defaults().adapters().named().keySet()));
        return new ModelRouter() {
            @Override
            public ModelRoute route(String requested) {
                if (names.resolve(requested).isEmpty()) {
                    throw notFound(requested, names.ids());
                }
                return route;
            }

            @Override
            public ModelRoute defaultRoute() {
                return route;
            }

            @Override
            public void list(ArrayNode data, long createdSeconds) {
                for (String id : names.ids()) {
                    var m = data.addObject();
                    m.put("id", id);
                    m.put("object", "model");
                    m.put("created", createdSeconds);
                    m.put("owned_by", "mlx-ring");
                }
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
