package dev.mlxring.ingress.pool;

import java.util.ArrayList;
import java.util.LinkedHashSet;
import java.util.List;
import java.util.Optional;
import java.util.SequencedSet;

/**
 * How a request's {@code model} names a pool entry: by its name exactly, {@code default_model}
 * (or no name) for the default model, or {@code <default>:<NAME>} for the default model served
 * with its named adapter NAME ({@code serve --adapter NAME=DIR}). The one place model names
 * resolve. Immutable.
 */
public final class ModelNames {
    /** The name OpenAI-compatible clients send for "whatever the server serves". */
    public static final String DEFAULT_ALIAS = "default_model";

    /** The separator of a named adapter's model id: {@code <default>:<NAME>}. */
    public static final String ADAPTER_SEPARATOR = ":";

    private final String defaultName;
    private final SequencedSet<String> names;
    private final SequencedSet<String> adapters;

    /** @param names every entry's name, in listing order; {@code defaultName} among them */
    public ModelNames(String defaultName, SequencedSet<String> names) {
        this(defaultName, names, new LinkedHashSet<>());
    }

    /**
     * @param names every entry's name, in listing order; {@code defaultName} among them
     * @param adapters the default model's named adapters, in listing order
     * @throws IllegalArgumentException when the default is not among {@code names}, or an entry is
     *     named as one of the adapters' ids
     */
    public ModelNames(String defaultName, SequencedSet<String> names, SequencedSet<String> adapters) {
        if (!names.contains(defaultName)) {
            throw new IllegalArgumentException("the default model '" + defaultName + "' is not among " + names);
        }
        this.defaultName = defaultName;
        this.names = new LinkedHashSet<>(names);
        this.adapters = new LinkedHashSet<>(adapters);
        for (String id : adapterIds()) {
            if (names.contains(id)) {
                throw new IllegalArgumentException(
                        "the model '" + id + "' has the id of the default model's named adapter '" + id + "'");
            }
        }
    }

    /** The entry {@code requested} names (the default model for one of its adapters' ids); empty when none does. */
    public Optional<String> resolve(String requested) {
        if (requested == null || requested.equals(DEFAULT_ALIAS)) {
            return Optional.of(defaultName);
        }
        if (names.contains(requested)) {
            return Optional.of(requested);
        }
        return adapter(requested).map(a -> defaultName);
    }

    /** The served named adapter {@code requested} names as {@code <default>:<NAME>}; empty otherwise. */
    public Optional<String> adapter(String requested) {
        String prefix = defaultName + ADAPTER_SEPARATOR;
        if (requested == null || !requested.startsWith(prefix) || names.contains(requested)) {
            return Optional.empty();
        }
        String name = requested.substring(prefix.length());
        return adapters.contains(name) ? Optional.of(name) : Optional.empty();
    }

    public String defaultName() {
        return defaultName;
    }

    /** Every entry's name, in listing order. */
    public SequencedSet<String> names() {
        return java.util.Collections.unmodifiableSequencedSet(names);
    }

    /** The default model's named adapters' ids, {@code <default>:<NAME>}, in listing order. */
    public List<String> adapterIds() {
        List<String> ids = new ArrayList<>();
        adapters.forEach(a -> ids.add(defaultName + ADAPTER_SEPARATOR + a));
        return ids;
    }

    /**
     * Every id a request may name but {@code default_model}, in listing order: the entries', the
     * default model's adapters' right after it.
     */
    public List<String> ids() {
        List<String> ids = new ArrayList<>();
        for (String n : names) {
            ids.add(n);
            if (n.equals(defaultName)) {
                ids.addAll(adapterIds());
            }
        }
        return ids;
    }
}
