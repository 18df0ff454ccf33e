package dev.mlxring.ingress.http;

import com.fasterxml.jackson.databind.JsonNode;
import dev.mlxring.ingress.pool.ModelNames;
import java.nio.file.InvalidPathException;
import java.nio.file.Path;
import java.util.LinkedHashMap;
import java.util.LinkedHashSet;
import java.util.List;
import java.util.Map;

/**
 * Which adapter a request is served with: maps a request's {@code model} ({@code <base>:<NAME>},
 * as {@link ModelNames} resolves it) and {@code adapters} field (mlx_lm.server's: a folder; here also a
 * name) to a named adapter ({@code serve --adapter NAME=DIR}), or to the model as loaded (with
 * its {@code --adapter-path} adapter, if any). A name or folder not served is refused naming it:
 * 404 {@code model_not_found} for a {@code model}, 400 for the {@code adapters} field or for the
 * two fields naming different adapters.
 *
 * @param adapterPath the folder the model was loaded with ({@code --adapter-path}, as given), or null
 * @param named adapter folders (as given) by name
 */
public record AdapterNames(String adapterPath, Map<String, String> named) {
    public static final AdapterNames NONE = new AdapterNames(null, Map.of());

    public AdapterNames {
        named = java.util.Collections.unmodifiableMap(new LinkedHashMap<>(named));
    }

    /**
     * The adapter name in {@code model} ({@code <base>:<NAME>} with NAME served, as {@link
     * ModelNames} resolves it), else null.
     */
    public String fromModel(String model, String base) {
        return new ModelNames(base, new LinkedHashSet<>(List.of(base)), new LinkedHashSet<>(named.keySet()))
                .adapter(model)
                .orElse(null);
    }

    /**
     * The adapter {@code root}'s {@code adapters} field names: null when absent, null or the
     * {@code --adapter-path} folder (the model as loaded); a served name, or a served folder (as
     * given or the same path made absolute), as that name. Anything else is a 400 naming it.
     */
    public String fromField(JsonNode root) {
        JsonNode v = root.get("adapters");
        if (v == null || v.isNull()) {
            return null;
        }
        if (!v.isTextual()) {
            throw ApiError.invalid("adapters", "adapters must be a string (an adapter's name or folder)");
        }
        String asked = v.asText();
        if (adapterPath != null && (asked.equals(adapterPath) || samePath(asked, adapterPath))) {
            return null;
        }
        if (named.containsKey(asked)) {
            return asked;
        }
        for (Map.Entry<String, String> e : named.entrySet()) {
            if (asked.equals(e.getValue()) || samePath(asked, e.getValue())) {
                return e.getKey();
            }
        }
        throw ApiError.invalid("adapters", "adapters '" + asked + "' is not loaded: " + served());
    }

    /**
     * The adapter a request is served with, given its {@code model} and the name its
     * {@code adapters} field resolved to ({@link #fromField}): refuses the two naming different
     * adapters.
     */
    public String resolve(String model, String base, String fromField) {
        String fromModel = fromModel(model, base);
        if (fromModel != null && fromField != null && !fromModel.equals(fromField)) {
            throw ApiError.invalid(
                    "adapters",
                    "model '" + model + "' names adapter '" + fromModel + "' but adapters names '" + fromField + "'");
        }
        return fromModel != null ? fromModel : fromField;
    }

    private String served() {
        String base = adapterPath == null
                ? "this server serves the base model without an adapter"
                : "this server's model is loaded with the adapter '" + adapterPath + "'";
        return named.isEmpty()
                ? base + " and loads no adapter per request (start it with --adapter NAME=DIR to serve one)"
                : base + " and the named adapters " + named.keySet();
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
