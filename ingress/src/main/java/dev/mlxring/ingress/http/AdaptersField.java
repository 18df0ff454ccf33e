package dev.mlxring.ingress.http;

import com.fasterxml.jackson.databind.JsonNode;
import java.nio.file.InvalidPathException;
import java.nio.file.Path;

/**
 * mlx_lm.server's {@code adapters} request field: the path of an adapter folder to serve the
 * request with. The model here is loaded once, with the adapter of {@code --adapter-path} or none,
 * and nothing is loaded per request; so the field is accepted only when it names that folder
 * (as given to the flag, or the same path once made absolute and normalized) and otherwise
 * refused with a 400 naming it, rather than answered by a model the request did not ask for.
 * Absent or null: the loaded model as it is.
 */
public final class AdaptersField {
    private AdaptersField() {}

    /** Refuses {@code root}'s {@code adapters} unless it names {@code defaults.adapterPath()}. */
    public static void check(JsonNode root, ServerDefaults defaults) {
        JsonNode v = root.get("adapters");
        if (v == null || v.isNull()) {
            return;
        }
        if (!v.isTextual()) {
            throw ApiError.invalid("adapters", "adapters must be a string (an adapter folder's path)");
        }
        String asked = v.asText();
        String served = defaults.adapterPath();
        if (served != null && (asked.equals(served) || samePath(asked, served))) {
            return;
        }
        throw ApiError.invalid(
                "adapters",
                "adapters '" + asked + "' is not loaded: this server serves "
                        + (served == null ? "the base model without an adapter" : "the adapter '" + served + "'")
                        + " and loads no adapter per request (start it with --adapter-path to serve one)");
    }

    private static boolean samePath(String a, String b) {
        try {
            return Path.of(a)
                    .toAbsolutePath()
                    .normalize()
                    .equals(Path.of(b).toAbsolutePath().normalize());
        } catch (InvalidPathException e) {
            return false;
        }
    }
}
