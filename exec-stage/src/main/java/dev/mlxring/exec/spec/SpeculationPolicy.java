package dev.mlxring.exec.spec;

import dev.mlxring.pipeline.SpeculativeSpec;

/**
 * Which {@link Speculation} a request runs with: the server's default ({@code serve --speculative},
 * null for off) unless the request's {@link SpeculativeSpec} overrides it. A request may turn
 * speculation off, ask for prompt lookup, or ask for the draft model, each with its own
 * {@code num_tokens}; prompt lookup uses the server's n-gram sizes ({@code --prompt-lookup-min/max},
 * {@value #DEFAULT_LOOKUP_MIN}..{@value #DEFAULT_LOOKUP_MAX} on a draft-model server). Refused
 * (an {@link IllegalArgumentException} whose message starts with the field's name): {@code draft}
 * without a draft model, and any method but {@code off} on a server that runs without speculation
 * (it has loaded no draft model and chose no default). Immutable.
 */
public final class SpeculationPolicy {
    /** Prompt lookup's n-gram sizes when the server's flags did not set them (a draft-model server). */
    public static final int DEFAULT_LOOKUP_MIN = 1;

    public static final int DEFAULT_LOOKUP_MAX = 3;

    private final Speculation serverDefault;
    private final int lookupMin;
    private final int lookupMax;

    /**
     * @param serverDefault the server's speculation; null when it runs without
     * @throws IllegalArgumentException unless {@code 1 <= lookupMin <= lookupMax}
     */
    public SpeculationPolicy(Speculation serverDefault, int lookupMin, int lookupMax) {
        if (lookupMin < 1 || lookupMax < lookupMin) {
            throw new IllegalArgumentException(
                    "n-gram sizes must satisfy 1 <= min <= max, got min " + lookupMin + " and max " + lookupMax);
        }
        this.serverDefault = serverDefault;
        this.lookupMin = lookupMin;
        this.lookupMax = lookupMax;
    }

    /** The server's default speculation with prompt lookup's sizes taken from it (or the defaults). */
    public static SpeculationPolicy of(Speculation serverDefault) {
        if (serverDefault instanceof Speculation.PromptLookup p) {
            return new SpeculationPolicy(serverDefault, p.minN(), p.maxN());
        }
        return new SpeculationPolicy(serverDefault, DEFAULT_LOOKUP_MIN, DEFAULT_LOOKUP_MAX);
    }

    /** The server's default; null when it runs without speculation. */
    public Speculation serverDefault() {
        return serverDefault;
    }

    /**
     * The speculation for a request asking {@code spec} (null: the server's default); null when the
     * request runs without speculation.
     *
     * @throws IllegalArgumentException naming {@code speculative} when the server cannot honour it
     */
    public Speculation resolve(SpeculativeSpec spec) {
        if (spec == null) {
            return serverDefault;
        }
        if (spec.method() == SpeculativeSpec.Method.OFF) {
            return null;
        }
        if (serverDefault == null) {
            throw new IllegalArgumentException(refusalWithoutSpeculation(spec.method()));
        }
        int k = spec.numTokens() != null ? spec.numTokens() : serverDefault.numDraftTokens();
        return switch (spec.method()) {
            case NGRAM -> new Speculation.PromptLookup(lookupMin, lookupMax, k);
            case DRAFT -> {
                if (!(serverDefault instanceof Speculation.DraftModel d)) {
                    throw new IllegalArgumentException("speculative must not ask for method 'draft' on this server: "
                            + "it has no draft model (start it with --draft-model DIR)");
                }
                yield new Speculation.DraftModel(d.model(), k);
            }
            case OFF -> throw new AssertionError("handled above");
        };
    }

    /** Why a server without speculation refuses {@code method} (anything but off), field first. */
    public static String refusalWithoutSpeculation(SpeculativeSpec.Method method) {
        return "speculative must not ask for method '" + method.wireName() + "' on this server: it runs without "
                + "speculative decoding (start it with --speculative ngram, or --draft-model DIR)";
    }
}
