package dev.mlxring.exec.nn;

import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import dev.mlxring.exec.model.ModelLoadException;
import java.util.List;
import java.util.Map;
import org.junit.jupiter.api.Test;

/** Load-time refusals of {@link Rope#initialize}; the numerics are covered by GreedyParityTest. */
class RopeTest {
    @Test
    void unsupportedTypesAreRefusedNamingTheSupportedOnes() {
        for (String type : List.of("xpos", "mrope", "su")) {
            var e = assertThrows(
                    ModelLoadException.class,
                    () -> Rope.initialize(16, 10000, false, Map.of("rope_type", type, "factor", 2.0), 4096));
            assertTrue(
                    e.getMessage().contains("'" + type + "'") && e.getMessage().contains(Rope.SUPPORTED),
                    e.getMessage());
        }
    }

    @Test
    void typeFallsBackToRopeTypeWhenEmpty() {
        // scaling_config.get("type") or scaling_config.get("rope_type", "default")
        assertTrue(Rope.initialize(16, 10000, false, Map.of("type", "", "rope_type", "linear", "factor", 2.0), null)
                        instanceof Rope.Standard s
                && s.scale() == 0.5f);
    }

    @Test
    void dynamicAndLongropeNeedMaxPositionEmbeddings() {
        // llama's ModelArgs leaves max_position_embeddings None; mlx-lm then fails in the rope
        assertThrows(
                ModelLoadException.class,
                () -> Rope.initialize(16, 10000, false, Map.of("type", "dynamic", "factor", 2.0), null));
        assertThrows(
                ModelLoadException.class,
                () -> Rope.initialize(
                        16,
                        10000,
                        false,
                        Map.of(
                                "type",
                                "longrope",
                                "original_max_position_embeddings",
                                2048,
                                "short_factor",
                                1.0,
                                "long_factor",
                                1.0),
                        null));
    }

    @Test
    void longropeFactorListMustMatchHalfTheDims() {
        var e = assertThrows(
                ModelLoadException.class,
                () -> Rope.initialize(
                        16,
                        10000,
                        false,
                        Map.of(
                                "rope_type",
                                "longrope",
                                "original_max_position_embeddings",
                                2048,
                                "short_factor",
                                List.of(1.0, 1.0),
                                "long_factor",
                                List.of(1.0, 1.0, 1.0)),
                        8192));
        assertTrue(e.getMessage().contains("expected 8"), e.getMessage());
    }
}
