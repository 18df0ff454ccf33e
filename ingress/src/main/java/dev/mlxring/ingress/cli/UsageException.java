package dev.mlxring.ingress.cli;

/** Bad command-line input: printed with the usage text, exit status 2. */
final class UsageException extends RuntimeException {
    UsageException(String message) {
        super(message);
    }
}
