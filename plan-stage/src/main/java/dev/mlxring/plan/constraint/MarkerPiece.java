package dev.mlxring.plan.constraint;

/**
 * One piece of a marker as the model's tokenizer writes it: a special (added) token, which a
 * grammar can only name by its id, or a run of plain text.
 *
 * @param tokenId the special token's id, or -1 for text
 * @param text the piece's text (for a special token, its content)
 */
public record MarkerPiece(int tokenId, String text) {
    public MarkerPiece {
        if (text == null || text.isEmpty()) {
            throw new IllegalArgumentException("a marker piece has text");
        }
    }

    /** The special token {@code tokenId}, whose content is {@code text}. */
    public static MarkerPiece special(int tokenId, String text) {
        if (tokenId < 0) {
            throw new IllegalArgumentException("token id " + tokenId);
        }
        return new MarkerPiece(tokenId, text);
    }

    /** Plain text. */
    public static MarkerPiece text(String text) {
        return new MarkerPiece(-1, text);
    }

    public boolean isSpecial() {
        return tokenId >= 0;
    }
}
