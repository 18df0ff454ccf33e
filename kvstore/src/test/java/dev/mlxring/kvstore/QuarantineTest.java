package dev.mlxring.kvstore;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertNotNull;
import static org.junit.jupiter.api.Assertions.assertNull;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.nio.file.Files;
import java.nio.file.Path;
import java.util.Set;
import java.util.TreeSet;
import java.util.stream.Collectors;
import java.util.stream.Stream;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

/**
 * The quarantine folder's cap: the oldest files (by the time in their name) go first, beyond the
 * file count or the byte total; a file over the byte cap on its own is not kept; files the tier
 * did not name are never counted or deleted; an existing folder is trimmed when the tier opens.
 */
class QuarantineTest {
    @TempDir
    Path dir;

    private Path folder() {
        return dir.resolve("quarantine");
    }

    /** A quarantined file as the tier names it, {@code sizeInBytes} long. */
    private Path held(String name, long millis, int sizeInBytes) throws Exception {
        Files.createDirectories(folder());
        return Files.write(folder().resolve(name + "." + millis), new byte[sizeInBytes]);
    }

    private Path damaged(String name, int sizeInBytes) throws Exception {
        return Files.write(dir.resolve(name), new byte[sizeInBytes]);
    }

    private Set<String> names() throws Exception {
        try (Stream<Path> s = Files.list(folder())) {
            return s.map(p -> p.getFileName().toString()).collect(Collectors.toCollection(TreeSet::new));
        }
    }

    @Test
    void beyondTheFileCountTheOldestAreDeleted() throws Exception {
        held("index.cm", 3000, 10);
        held("kv.cm", 1000, 10);
        held("index.cm", 2000, 10);
        Path moved =
                new Quarantine(folder(), new QuarantineCap(2, Long.MAX_VALUE)).admit(damaged("index.cm", 10), "test");
        assertNotNull(moved);
        assertEquals(Set.of("index.cm.3000", moved.getFileName().toString()), names());
        assertFalse(Files.exists(dir.resolve("index.cm")), "moved, not copied");
    }

    @Test
    void beyondTheByteTotalTheOldestAreDeleted() throws Exception {
        held("kv.cm", 1000, 300);
        held("index.cm", 2000, 100);
        held("index.cm", 3000, 100);
        Path moved = new Quarantine(folder(), new QuarantineCap(100, 350)).admit(damaged("index.cm", 100), "test");
        assertNotNull(moved);
        assertEquals(
                Set.of("index.cm.2000", "index.cm.3000", moved.getFileName().toString()),
                names(),
                "the 300-byte file went first, which brings the total to 300");
    }

    @Test
    void aFileOverTheByteCapAloneIsNotKept() throws Exception {
        held("index.cm", 1000, 100);
        assertNull(new Quarantine(folder(), new QuarantineCap(8, 1000)).admit(damaged("kv.cm", 5000), "test"));
        assertEquals(Set.of("index.cm.1000"), names(), "the older, smaller file stays");
        assertFalse(Files.exists(dir.resolve("kv.cm")));
    }

    @Test
    void filesTheTierDidNotNameAreLeftAlone() throws Exception {
        Files.createDirectories(folder());
        Files.write(folder().resolve("notes.txt"), new byte[1000]);
        Files.write(folder().resolve("kv.cm.backup"), new byte[1000]);
        held("index.cm", 1000, 10);
        new Quarantine(folder(), new QuarantineCap(0, 0)).enforceCap();
        assertEquals(Set.of("kv.cm.backup", "notes.txt"), names());
    }

    @Test
    void twoFilesSetAsideInOneMillisecondBothStay() throws Exception {
        Quarantine q = new Quarantine(folder(), QuarantineCap.DEFAULT);
        Path a = q.admit(damaged("index.cm", 10), "first");
        Path b = q.admit(damaged("index.cm", 10), "second");
        assertNotNull(a);
        assertNotNull(b);
        assertEquals(2, names().size(), names().toString());
    }

    @Test
    void theTierTrimsAQuarantineOverItsCapWhenItOpens() throws Exception {
        QuarantineCap cap = QuarantineCap.DEFAULT;
        for (int i = 0; i <= cap.maxFiles(); i++) {
            held("index.cm", 1000 + i, 10);
        }
        try (TieredPrefixCache c = new TieredPrefixCache(new RamPrefixCache(10, Long.MAX_VALUE), dir, 64L << 20)) {
            assertTrue(c.hasDisk());
        }
        Set<String> left = names();
        assertEquals(cap.maxFiles(), left.size(), left.toString());
        assertFalse(left.contains("index.cm.1000"), "the oldest went: " + left);
    }

    @Test
    void aNegativeCapIsRefused() {
        assertThrows(IllegalArgumentException.class, () -> new QuarantineCap(-1, 0));
        assertThrows(IllegalArgumentException.class, () -> new QuarantineCap(0, -1));
    }
}
