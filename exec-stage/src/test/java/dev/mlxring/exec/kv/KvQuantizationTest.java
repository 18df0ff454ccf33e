package dev.mlxring.exec.kv;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertNull;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import dev.mlxring.exec.generate.GenerationOptions;
import dev.mlxring.pipeline.KvQuantization;
import org.junit.jupiter.api.Test;

/** Validation of {@link KvQuantization} and its defaults. No MLX. */
class KvQuantizationTest {

    private static void rejected(int bits, int groupSize, int start, String flag) {
        IllegalArgumentException e =
                assertThrows(IllegalArgumentException.class, () -> new KvQuantization(bits, groupSize, start));
        assertTrue(e.getMessage().startsWith(flag + " "), e.getMessage());
    }

    @Test
    void acceptsWhatMxQuantizeAccepts() {
        for (int bits : new int[] {2, 3, 4, 5, 6, 8}) {
            for (int g : new int[] {32, 64, 128}) {
                assertEquals(bits, new KvQuantization(bits, g, 0).bits());
            }
        }
    }

    @Test
    void refusalsNameTheFlag() {
        rejected(1, 64, 0, "--kv-bits");
        rejected(7, 64, 0, "--kv-bits");
        rejected(16, 64, 0, "--kv-bits");
        rejected(4, 16, 0, "--kv-group-size");
        rejected(4, 96, 0, "--kv-group-size");
        rejected(4, 64, -1, "--quantized-kv-start");
    }

    @Test
    void defaultsAreMlxLmServers() {
        KvQuantization q = KvQuantization.of(4);
        assertEquals(new KvQuantization(4, 64, 5000), q);
    }

    @Test
    void generationOptionsDefaultToFullPrecision() {
        assertNull(new GenerationOptions(1, 2048, new int[0], false).kvQuantization());
        assertEquals(
                KvQuantization.of(8),
                new GenerationOptions(1, 2048, new int[0], false, KvQuantization.of(8)).kvQuantization());
    }

    @Test
    void groupSizeMustDivideTheHeadDimension() {
        new KvQuantization(4, 32, 0).checkFits(64);
        IllegalArgumentException e =
                assertThrows(IllegalArgumentException.class, () -> new KvQuantization(4, 64, 0).checkFits(16));
        assertEquals(
                "--kv-group-size 64 does not divide this model's attention head dimension 16"
                        + " (the quantized KV cache groups that axis)",
                e.getMessage());
    }
}
