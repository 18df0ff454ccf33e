package dev.mlxring.bench;

import java.nio.file.Path;

/** A dataset file that cannot be used: the message names the file and, where one is to blame, the line. */
public final class DatasetException extends IllegalArgumentException {
    DatasetException(Path file, int line, String problem) {
        super(file + (line > 0 ? ":" + line : "") + ": " + problem);
    }
}
