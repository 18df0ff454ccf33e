package dev.mlxring.ingress.pool;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.nio.file.Files;
import java.nio.file.Path;
import java.util.List;
import java.util.Map;
import java.util.Optional;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

/** The pool's configuration: the models file, name resolution. */
class PoolConfigTest {
    @TempDir
    Path dir;

    @Test
    void aModelsFileGivesPathsPinsAndPerModelFlags() throws Exception {
        Path file = dir.resolve("models.json");
        Files.writeString(file, """
                {"big": {"path": "m/big", "pinned": true, "kv-bits": 8, "max-kv-size": "4096"},
                 "small": {"path": "/abs/small"}}
                """);
        List<ModelSpec> specs = ModelSources.read(file);
        assertEquals(
                List.of(
                        new ModelSpec(
                                "big", dir.resolve("m/big"), true, Map.of("--kv-bits", "8", "--max-kv-size", "4096")),
                        new ModelSpec("small", Path.of("/abs/small"), false, Map.of())),
                specs);
    }

    @Test
    void aModelsFileRefusesWhatItDoesNotHonour() throws Exception {
        Path file = dir.resolve("models.json");
        for (String body : List.of(
                "{\"m\": {\"path\": \"x\", \"temperature\": 0.5}}",
                "{\"m\": {\"pinned\": true}}",
                "{\"m\": {\"path\": \"x\", \"pinned\": \"yes\"}}",
                "[]")) {
            Files.writeString(file, body);
            IllegalArgumentException e = assertThrows(IllegalArgumentException.class, () -> ModelSources.read(file));
            assertTrue(e.getMessage().startsWith("--models " + file), e.getMessage());
        }
        Files.writeString(file, "{\"m\": {\"path\": \"x\", \"temperature\": 0.5}}");
        assertTrue(assertThrows(IllegalArgumentException.class, () -> ModelSources.read(file))
                .getMessage()
                .contains("unknown key \"temperature\""));
    }

    @Test
    void namesResolveExactlyOrToTheDefault() {
        ModelNames names = new ModelNames("a", new java.util.LinkedHashSet<>(List.of("a", "b")));
        assertEquals(Optional.of("b"), names.resolve("b"));
        assertEquals(Optional.of("a"), names.resolve("default_model"));
        assertEquals(Optional.of("a"), names.resolve(null));
        assertEquals(Optional.empty(), names.resolve("B"));
    }

    @Test
    void theDefaultModelsNamedAdaptersResolveToIt() {
        ModelNames names = new ModelNames(
                "a",
                new java.util.LinkedHashSet<>(List.of("a", "b")),
                new java.util.LinkedHashSet<>(List.of("x", "y")));
        assertEquals(Optional.of("a"), names.resolve("a:x"));
        assertEquals(Optional.of("x"), names.adapter("a:x"));
        assertEquals(Optional.of("a"), names.resolve("a:y"));
        assertEquals(Optional.of("b"), names.resolve("b"));
        assertEquals(Optional.empty(), names.adapter("a"));
        // Adapters belong to the default model only, and only served ones resolve.
        assertEquals(Optional.empty(), names.resolve("b:x"));
        assertEquals(Optional.empty(), names.resolve("a:z"));
        assertEquals(Optional.empty(), names.resolve("a:"));
        assertEquals(List.of("a", "a:x", "a:y", "b"), names.ids());
        IllegalArgumentException e = assertThrows(
                IllegalArgumentException.class,
                () -> new ModelNames(
                        "a",
                        new java.util.LinkedHashSet<>(List.of("a", "a:x")),
                        new java.util.LinkedHashSet<>(List.of("x"))));
        assertTrue(e.getMessage().contains("'a:x'"), e.getMessage());
    }
}
