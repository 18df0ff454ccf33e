package dev.mlxring.perf;

import java.util.function.Function;

/**
 * The perf mains' command lines: {@code --flag value} pairs, every flag taking a value, read by a
 * per-program {@code switch}:
 *
 * <pre>
 * Flags f = new Flags(argv);
 * while (f.next()) {
 *     switch (f.flag()) {
 *         case "--runs" -> runs = f.positive();
 *         case "--out" -> out = Path.of(f.value());
 *         default -> throw f.unknown();
 *     }
 * }
 * </pre>
 *
 * Every mistake is an {@link IllegalArgumentException}; {@link #parseOrExit} turns it into an
 * error line, the usage line and exit status 64.
 */
final class Flags {
    private final String[] argv;
    private int i = -2;

    Flags(String[] argv) {
        this.argv = argv;
    }

    /**
     * Parses {@code argv} with {@code parse}; on an {@link IllegalArgumentException} prints
     * {@code error: ...} and {@code usage: <usage>} to stderr and exits with status 64.
     */
    static <T> T parseOrExit(String[] argv, Function<String[], T> parse, String usage) {
        try {
            return parse.apply(argv);
        } catch (IllegalArgumentException e) {
            System.err.println("error: " + e.getMessage());
            System.err.println("usage: " + usage);
            System.exit(64);
            throw new AssertionError("unreachable");
        }
    }

    /** Moves to the next flag; false at the end. A flag without a value after it is an error. */
    boolean next() {
        i += 2;
        if (i >= argv.length) {
            return false;
        }
        if (i + 1 >= argv.length) {
            throw new IllegalArgumentException(argv[i] + " needs a value");
        }
        return true;
    }

    String flag() {
        return argv[i];
    }

    String value() {
        return argv[i + 1];
    }

    int integer() {
        return integer(flag(), value());
    }

    int positive() {
        return positive(flag(), value());
    }

    int nonNegative() {
        return nonNegative(flag(), value());
    }

    /** For the {@code default} branch: {@code throw f.unknown()}. */
    IllegalArgumentException unknown() {
        return new IllegalArgumentException("unknown option " + flag());
    }

    static int integer(String flag, String v) {
        try {
            return Integer.parseInt(v);
        } catch (NumberFormatException e) {
            throw new IllegalArgumentException(flag + " must be an integer, got " + v);
        }
    }

    static int positive(String flag, String v) {
        int n = integer(flag, v);
        if (n < 1) {
            throw new IllegalArgumentException(flag + " must be >= 1, got " + v);
        }
        return n;
    }

    static int nonNegative(String flag, String v) {
        int n = integer(flag, v);
        if (n < 0) {
            throw new IllegalArgumentException(flag + " must be >= 0, got " + v);
        }
        return n;
    }
}
