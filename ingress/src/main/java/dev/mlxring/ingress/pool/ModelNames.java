package dev.mlxring.ingress.pool;

import java.util.LinkedHashSet;
import java.util.Optional;
import java.util.SequencedSet;

/**
 * How a request's {@code model} names a pool entry: by its name exactly, or {@code default_model}
 * (or no name) for the default model. The one place names resolve, so that other naming schemes
 * (an adapter's {@code base:NAME}) extend it. Immutable.
 */
public final class ModelNames {
    /** The name OpenAI-compatible clients send for "whatever the server serves". */
    public static final String DEFAULT_ALIAS = "default_model";

    private final String defaultName;
    private final SequencedSet<String> names;

    /** @param names every entry's name, in listing order; {@code defaultName} among them */
    public ModelNames(String defaultName, SequencedSet<String> names) {
        if (!names.contains(defaultName)) {
            throw new IllegalArgumentException("the default model '" + defaultName + "' is not among " + names);
        }
        this.defaultName = defaultName;
        this.names = new LinkedHashSet<>(names);
    }

    /** The entry {@code requested} names; empty when none does. */
    public Optional<String> resolve(String requested) {
        if (requested == null || requested.equals(DEFAULT_ALIAS)) {
            return Optional.of(defaultName);
        }
        return names.contains(requested) ? Optional.of(requested) : Optional.empty();
    }

    public String defaultName() {
        return defaultName;
    }

    /** Every entry's name, in listing order. */
    public SequencedSet<String> names() {
        return java.util.Collections.unmodifiableSequencedSet(names);
    }
}
