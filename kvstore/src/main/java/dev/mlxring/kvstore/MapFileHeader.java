package dev.mlxring.kvstore;

import java.io.IOException;
import java.nio.ByteBuffer;
import java.nio.ByteOrder;
import java.nio.channels.FileChannel;
import java.nio.file.Path;
import java.nio.file.StandardOpenOption;
import net.openhft.chronicle.algo.hashing.LongHashFunction;

/**
 * The integrity check of a Chronicle Map file's self-bootstrapping header, done before the file
 * is handed to Chronicle Map. The header is written once, at creation, as a size-prefixed blob:
 * bytes 0..7 the XXH64 hash (little-endian) of the 4-byte size word followed by the header, bytes
 * 8..11 the size word (the header's length in bytes; its top bit set while the header is not yet
 * complete), then the header itself (the map's configuration, Chronicle's data file version
 * among it).
 *
 * <p>Chronicle Map's own recovery is no check: a header it finds incomplete (for instance zeroed)
 * it waits about a minute for, then rewrites in place from the builder's configuration; a header
 * whose hash or text is wrong it rewrites without a word. This check reads only the header (a
 * few kilobytes) and reports any of these states at once, so the tier can set the file aside.
 */
final class MapFileHeader {
    /** Bytes before the header: the hash and the size word. */
    static final int PREFIX_BYTES = 12;
    /** A header longer than this is taken for a garbled size word (ours are under 2 KB). */
    static final int MAX_HEADER_BYTES = 1 << 20;

    private static final int NOT_COMPLETE = 0x8000_0000;
    private static final int LENGTH_MASK = 0x3FFF_FFFF;

    private MapFileHeader() {}

    /**
     * Reads {@code file}'s header and checks its size word and hash.
     *
     * @return null when the header is intact, otherwise what is wrong with it (for the log)
     * @throws IOException when the file cannot be read
     */
    static String damage(Path file) throws IOException {
        try (FileChannel ch = FileChannel.open(file, StandardOpenOption.READ)) {
            long fileBytes = ch.size();
            if (fileBytes < PREFIX_BYTES) {
                return "its Chronicle Map header is cut short (" + fileBytes + " bytes in the file)";
            }
            ByteBuffer prefix = read(ch, 0, PREFIX_BYTES);
            long storedHash = prefix.getLong(0);
            int sizeWord = prefix.getInt(8);
            if (storedHash == 0 && sizeWord == 0) {
                return "its Chronicle Map header is zeroed";
            }
            if ((sizeWord & NOT_COMPLETE) != 0) {
                return "its Chronicle Map header is marked incomplete (size word 0x" + Integer.toHexString(sizeWord)
                        + ")";
            }
            int headerBytes = sizeWord & LENGTH_MASK;
            if (headerBytes == 0 || headerBytes > MAX_HEADER_BYTES || PREFIX_BYTES + (long) headerBytes > fileBytes) {
                return "its Chronicle Map header length " + headerBytes + " is impossible for a file of " + fileBytes
                        + " bytes";
            }
            ByteBuffer hashed = read(ch, 8, 4 + headerBytes);
            long computed = LongHashFunction.xx_r39().hashBytes(hashed.array(), 0, 4 + headerBytes);
            if (computed != storedHash) {
                return "its Chronicle Map header checksum does not match (stored " + Long.toHexString(storedHash)
                        + ", computed " + Long.toHexString(computed) + ")";
            }
            return null;
        }
    }

    private static ByteBuffer read(FileChannel ch, long position, int lengthInBytes) throws IOException {
        ByteBuffer b = ByteBuffer.allocate(lengthInBytes).order(ByteOrder.LITTLE_ENDIAN);
        while (b.hasRemaining()) {
            if (ch.read(b, position + b.position()) < 0) {
                throw new IOException("end of file at " + (position + b.position()));
            }
        }
        return b.flip();
    }
}
