package dev.mlxring.kvstore;

/**
 * How much the SSD tier's {@code quarantine/} folder may hold: at most {@code maxFiles} map files
 * and {@code maxBytes} bytes (their sizes as the file system reports them; a value map is
 * preallocated to about the tier's byte cap). Beyond either, the oldest quarantined files are
 * deleted, the one just set aside included when it alone is over the byte cap. 0 keeps nothing.
 */
public record QuarantineCap(int maxFiles, long maxBytes) {
    /** The default: 8 files and 1 GiB (the index map of a 2 GB tier is a few megabytes; its value map is not kept). */
    public static final QuarantineCap DEFAULT = new QuarantineCap(8, 1L << 30);

    public QuarantineCap {
        if (maxFiles < 0 || maxBytes < 0) {
            throw new IllegalArgumentException(
                    "a quarantine cap is not negative: " + maxFiles + " files, " + maxBytes + " bytes");
        }
    }
}
