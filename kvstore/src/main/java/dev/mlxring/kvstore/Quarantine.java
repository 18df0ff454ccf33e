package dev.mlxring.kvstore;

import java.io.IOException;
import java.io.UncheckedIOException;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.Comparator;
import java.util.List;
import java.util.stream.Stream;

/**
 * The SSD tier's {@code quarantine/} folder: damaged map files are moved there, named
 * {@code NAME.MILLIS} (the time they were set aside), and kept within a {@link QuarantineCap}.
 * Only files named so are counted and deleted; anything else in the folder is left alone.
 *
 * <p>Not thread-safe: the tier uses it while opening, before its spill thread starts.
 */
final class Quarantine {
    private static final System.Logger LOG = System.getLogger("dev.mlxring.kvstore");

    private record Held(Path path, long millis, long sizeInBytes) {}

    private final Path folder;
    private final QuarantineCap cap;

    Quarantine(Path folder, QuarantineCap cap) {
        this.folder = folder;
        this.cap = cap;
    }

    /**
     * Moves {@code file} into the folder, logs the move with {@code why}, then deletes the oldest
     * quarantined files until the cap holds (each deletion logged).
     *
     * @return where the file now lies, or null when the cap deleted it at once
     * @throws UncheckedIOException when the file cannot be moved (it then stays where it was)
     */
    Path admit(Path file, String why) {
        Path to;
        try {
            Files.createDirectories(folder);
            long millis = System.currentTimeMillis();
            to = folder.resolve(file.getFileName() + "." + millis);
            while (Files.exists(to)) {
                to = folder.resolve(file.getFileName() + "." + ++millis);
            }
            Files.move(file, to);
        } catch (IOException e) {
            throw new UncheckedIOException("cannot quarantine " + file, e);
        }
        LOG.log(System.Logger.Level.WARNING, "prompt cache: {0} moved to {1}: {2}; starting empty", file, to, why);
        return enforceCap().contains(to) ? null : to;
    }

    /**
     * Deletes every quarantined file larger than the byte cap on its own (it could never be kept),
     * then the oldest until the file count and the byte total are within the cap.
     *
     * @return the files deleted
     */
    List<Path> enforceCap() {
        List<Held> held = held();
        List<Path> deleted = new ArrayList<>();
        held.removeIf(h -> h.sizeInBytes() > cap.maxBytes() && delete(h, deleted));
        held.sort(Comparator.comparingLong(Held::millis).thenComparing(Held::path));
        long bytes = held.stream().mapToLong(Held::sizeInBytes).sum();
        int files = held.size();
        for (Held h : held) {
            if (files <= cap.maxFiles() && bytes <= cap.maxBytes()) {
                break;
            }
            if (delete(h, deleted)) {
                files--;
                bytes -= h.sizeInBytes();
            }
        }
        return deleted;
    }

    /** Deletes {@code h}, logged; false (also logged) when it cannot be. */
    private boolean delete(Held h, List<Path> deleted) {
        try {
            Files.deleteIfExists(h.path());
        } catch (IOException e) {
            LOG.log(
                    System.Logger.Level.WARNING,
                    "prompt cache: cannot delete {0} from the quarantine: {1}",
                    h.path(),
                    e);
            return false;
        }
        deleted.add(h.path());
        LOG.log(
                System.Logger.Level.WARNING,
                "prompt cache: deleted {0} ({1} bytes) from the quarantine, capped at " + "{2} files and {3} bytes",
                h.path(),
                String.valueOf(h.sizeInBytes()),
                String.valueOf(cap.maxFiles()),
                String.valueOf(cap.maxBytes()));
        return true;
    }

    /** The files this folder holds that are named {@code NAME.MILLIS}. */
    private List<Held> held() {
        List<Held> held = new ArrayList<>();
        if (!Files.isDirectory(folder)) {
            return held;
        }
        try (Stream<Path> s = Files.list(folder)) {
            for (Path p : (Iterable<Path>) s::iterator) {
                String name = p.getFileName().toString();
                int dot = name.lastIndexOf('.');
                if (dot <= 0 || !Files.isRegularFile(p)) {
                    continue;
                }
                try {
                    held.add(new Held(p, Long.parseLong(name.substring(dot + 1)), Files.size(p)));
                } catch (NumberFormatException e) {
                    // not a file this tier quarantined
                } catch (IOException e) {
                    // gone since the listing
                }
            }
        } catch (IOException e) {
            LOG.log(System.Logger.Level.WARNING, "prompt cache: cannot list the quarantine {0}: {1}", folder, e);
        }
        return held;
    }
}
