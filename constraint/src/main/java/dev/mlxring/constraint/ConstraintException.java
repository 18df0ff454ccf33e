package dev.mlxring.constraint;

/**
 * A constraint that llguidance refuses: a schema, grammar or regex that does not compile (the
 * message is llguidance's own, which names the offending keyword, rule or position), or a matcher
 * that reached an error state (a token the constraint does not allow, a parser limit hit).
 */
public final class ConstraintException extends RuntimeException {
    private static final long serialVersionUID = 1L;

    public ConstraintException(String message) {
        super(message);
    }
}
