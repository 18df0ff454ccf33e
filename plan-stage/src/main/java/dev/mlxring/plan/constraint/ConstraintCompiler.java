package dev.mlxring.plan.constraint;

import com.fasterxml.jackson.core.JsonProcessingException;
import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.ObjectMapper;
import dev.mlxring.constraint.CompiledConstraint;
import dev.mlxring.constraint.ConstraintException;
import dev.mlxring.constraint.ConstraintKind;
import dev.mlxring.constraint.ConstraintTokenizer;
import dev.mlxring.pipeline.Outcome.ErrorType;
import dev.mlxring.pipeline.OutputConstraint;
import dev.mlxring.pipeline.RequestException;
import dev.mlxring.pipeline.TokenConstraint;
import java.util.function.Supplier;

/**
 * Compiles a request's {@link OutputConstraint} once, on the plan thread (never exec's), into the
 * {@link TokenConstraint} its row will be masked with; refuses what it cannot honour with a 400
 * that names the request field: a schema that is not JSON, a keyword outside
 * {@link JsonSchemaSubset}, or whatever llguidance refuses (its message, trimmed to its first
 * line). Thread-safe (llguidance compiles on several threads over one tokenizer).
 */
public final class ConstraintCompiler implements AutoCloseable {
    private static final ObjectMapper JSON = new ObjectMapper();
    /** The most characters of llguidance's message a 400 quotes. */
    private static final int MAX_MESSAGE_CHARS = 400;

    private final Supplier<ConstraintTokenizer> factory;
    private final boolean owns;
    private ConstraintTokenizer tokenizer; // guarded by this until set, then read-only
    private String unavailable; // guarded by this

    private ConstraintCompiler(Supplier<ConstraintTokenizer> factory, ConstraintTokenizer tokenizer, boolean owns) {
        this.factory = factory;
        this.tokenizer = tokenizer;
        this.owns = owns;
    }

    /** @param tokenizer the model's llguidance tokenizer; stays the caller's (open while this is used) */
    public ConstraintCompiler(ConstraintTokenizer tokenizer) {
        this(null, tokenizer, false);
    }

    /**
     * A compiler whose tokenizer is built by {@code factory} on the first constrained request (it
     * reads the whole vocabulary: up to a second, which a server that never constrains output never
     * pays) and closed by {@link #close()}. If the factory fails, every constrained request is
     * refused with its reason.
     */
    public static ConstraintCompiler lazy(Supplier<ConstraintTokenizer> factory) {
        return new ConstraintCompiler(factory, null, true);
    }

    private synchronized ConstraintTokenizer tokenizer() throws RequestException {
        if (tokenizer == null && unavailable == null) {
            try {
                tokenizer = factory.get();
            } catch (RuntimeException | LinkageError e) {
                unavailable = "structured outputs are unavailable on this server: " + e.getMessage();
            }
        }
        if (tokenizer == null) {
            throw new RequestException(ErrorType.UNSUPPORTED, unavailable);
        }
        return tokenizer;
    }

    /** Closes the tokenizer when this compiler built it. Call after the engine has stopped. */
    @Override
    public synchronized void close() {
        if (owns && tokenizer != null) {
            tokenizer.close();
            tokenizer = null;
            unavailable = "the engine is closed";
        }
    }

    /**
     * The constraint for one row.
     *
     * @return a constraint the caller owns (exec closes it when the row ends)
     * @throws RequestException {@code INVALID_REQUEST} naming {@code c.field()} when it cannot be honoured
     */
    public TokenConstraint compile(OutputConstraint c) throws RequestException {
        ConstraintKind kind = switch (c.kind()) {
            case JSON_SCHEMA -> {
                checkSchema(c);
                yield ConstraintKind.JSON_SCHEMA;
            }
            case LARK -> ConstraintKind.LARK;
            case REGEX -> ConstraintKind.REGEX;
            case GRAMMAR -> ConstraintKind.GRAMMAR;
        };
        try (CompiledConstraint compiled = CompiledConstraint.compile(tokenizer(), kind, c.source())) {
            return new MatcherConstraint(compiled.newMatcher(), "the " + c.field() + " constraint");
        } catch (ConstraintException e) {
            throw new RequestException(ErrorType.INVALID_REQUEST, c.field() + ": " + trim(e.getMessage()));
        }
    }

    /**
     * {@code inner} behind a free reasoning block, for a model with think markers: the output may
     * open with the block (must, when the prompt left it open, close it first) and {@code inner}
     * holds only what follows, never the reasoning. The schema subset is checked here, as the
     * composed grammar is no longer a schema.
     *
     * @param open whether the prompt left the reasoning block open
     * @throws RequestException {@code INVALID_REQUEST} naming {@code inner.field()} for a schema outside the subset
     */
    public static OutputConstraint afterReasoning(OutputConstraint inner, ToolSyntax syntax, boolean open)
            throws RequestException {
        if (!syntax.thinks()) {
            return inner;
        }
        var top = JSON.createObjectNode();
        var grammars = top.putArray("grammars");
        StringBuilder rules = new StringBuilder();
        String think;
        try {
            think = ToolCallGrammar.reasoningRules(rules, syntax, open);
        } catch (IllegalArgumentException e) {
            throw new RequestException(
                    ErrorType.UNSUPPORTED,
                    inner.field() + " is not supported on this model: its "
                            + "reasoning block cannot be left free ahead of the constraint (" + e.getMessage() + ")");
        }
        grammars.addObject().put("lark_grammar", "start: " + think + "@inner\n" + rules);
        var sub = grammars.addObject().put("name", "inner");
        switch (inner.kind()) {
            case JSON_SCHEMA -> sub.set("json_schema", checkSchema(inner));
            case LARK -> sub.put("lark_grammar", inner.source());
            case REGEX -> sub.put("lark_grammar", "start: /" + inner.source().replace("/", "\\/") + "/");
            case GRAMMAR -> throw new IllegalArgumentException("a composed grammar cannot be composed again");
        }
        return new OutputConstraint(OutputConstraint.Kind.GRAMMAR, top.toString(), inner.field());
    }

    private static JsonNode checkSchema(OutputConstraint c) throws RequestException {
        JsonNode schema;
        try {
            schema = JSON.readTree(c.source());
        } catch (JsonProcessingException e) {
            throw new RequestException(
                    ErrorType.INVALID_REQUEST, c.field() + " is not valid JSON: " + e.getOriginalMessage());
        }
        if (schema == null || !schema.isObject() && !schema.isBoolean()) {
            throw new RequestException(ErrorType.INVALID_REQUEST, c.field() + " must be a JSON Schema object");
        }
        String why = JsonSchemaSubset.check(schema);
        if (why != null) {
            throw new RequestException(ErrorType.INVALID_REQUEST, c.field() + ": " + why);
        }
        return schema;
    }

    /** llguidance's message without its parser dump: the first line, bounded. */
    static String trim(String message) {
        String m = message == null ? "the constraint does not compile" : message.strip();
        int nl = m.indexOf('\n');
        if (nl > 0) {
            m = m.substring(0, nl).strip();
        }
        return m.length() > MAX_MESSAGE_CHARS ? m.substring(0, MAX_MESSAGE_CHARS) + "…" : m;
    }
}
