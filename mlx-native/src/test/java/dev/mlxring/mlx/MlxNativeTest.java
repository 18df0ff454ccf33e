package dev.mlxring.mlx;

import static org.junit.jupiter.api.Assertions.assertArrayEquals;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.nio.file.Files;
import java.nio.file.Path;
import java.util.Map;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

class MlxNativeTest {

    @Test
    void reportsTheLinkedMlxVersion() {
        assertTrue(Mlx.version().startsWith("0."), Mlx.version());
    }

    /**
     * The native CPU kernels apply only where MLX's default device is the CPU (mlx-cpu, this
     * suite's backend); with mlx-cuda on a GPU every choice resolves to MLX's own kernels.
     */
    @Test
    void nativeKernelsResolveByDefaultDevice() {
        boolean gpu = Mlx.defaultDeviceIsGpu();
        assertEquals(gpu ? CpuKernels.MLX : CpuKernels.NATIVE, CpuKernels.NATIVE.onDefaultDevice());
        assertEquals(CpuKernels.MLX, CpuKernels.MLX.onDefaultDevice());
    }

    @Test
    void arithmeticAndMatmul() {
        try (ArrayScope s = ArrayScope.open()) {
            MlxArray a = Mlx.fromFloats(new float[] {1, 2, 3, 4}, 2, 2);
            MlxArray b = Mlx.fromFloats(new float[] {5, 6, 7, 8}, 2, 2);
            assertArrayEquals(new float[] {19, 22, 43, 50}, Mlx.matmul(a, b).toFloatArray());
            assertArrayEquals(new float[] {6, 8, 10, 12}, Mlx.add(a, b).toFloatArray());
            assertArrayEquals(new int[] {2, 2}, Mlx.matmul(a, b).shape());
            MlxArray t = Mlx.transposeAll(a);
            assertArrayEquals(new float[] {1, 3, 2, 4}, t.toFloatArray());
            assertEquals(
                    1,
                    Mlx.argmax(Mlx.fromFloats(new float[] {0, 3, 1}, 3), -1, false)
                            .itemInt());
        }
    }

    /**
     * {@code fromBytes} copies once into MLX's own buffer and never aliases its source: the
     * source may be freed or rewritten at once (a kvstore snapshot, the mapped file), and MLX may
     * write the array's buffer in place (a donated KV cache) without touching the source.
     */
    @Test
    void fromBytesCopiesAndNeverAliasesItsSource() {
        try (java.lang.foreign.Arena arena = java.lang.foreign.Arena.ofConfined();
                ArrayScope s = ArrayScope.open()) {
            java.lang.foreign.MemorySegment src = arena.allocate(16, 64);
            for (int i = 0; i < 4; i++) {
                src.setAtIndex(java.lang.foreign.ValueLayout.JAVA_FLOAT, i, i + 1);
            }
            MlxArray a = Mlx.fromBytes(src, new int[] {4}, Dtype.FLOAT32);
            src.fill((byte) 0);
            assertArrayEquals(new float[] {1, 2, 3, 4}, a.toFloatArray(), "the array kept its own copy");
            MlxArray b = Mlx.add(a, a);
            assertArrayEquals(new float[] {2, 4, 6, 8}, b.toFloatArray());
            assertEquals(0f, src.getAtIndex(java.lang.foreign.ValueLayout.JAVA_FLOAT, 0));
            assertThrows(
                    RuntimeException.class,
                    () -> Mlx.fromBytes(src.asSlice(0, 12), new int[] {4}, Dtype.FLOAT32),
                    "a length that disagrees with the shape is refused");
        }
    }

    @Test
    void mlxErrorsSurfaceWithMlxMessage() {
        try (ArrayScope s = ArrayScope.open()) {
            MlxArray a = Mlx.fromFloats(new float[] {1, 2, 3}, 3);
            MlxException e = assertThrows(MlxException.class, () -> Mlx.reshape(a, 2, 2));
            assertTrue(e.getMessage().toLowerCase().contains("reshape"), e.getMessage());
        }
    }

    @Test
    void resultsNeedAnOwner() {
        assertThrows(IllegalStateException.class, () -> Mlx.scalar(1, Dtype.FLOAT32));
    }

    @Test
    void scopeFreesWhatItOwnsAndDetachedArraysSurvive() {
        MlxArray kept;
        try (ArrayScope s = ArrayScope.open()) {
            MlxArray a = Mlx.fromFloats(new float[] {1, 2}, 2);
            MlxArray b = Mlx.add(a, a);
            kept = Mlx.multiply(b, b).detach();
            assertEquals(2, s.ownedCount());
            s.close();
            assertTrue(a.isClosed());
            assertTrue(b.isClosed());
        }
        try (ArrayScope s = ArrayScope.open()) {
            assertArrayEquals(new float[] {4, 16}, kept.toFloatArray());
        }
        kept.close();
        assertTrue(kept.isClosed());
    }

    @Test
    void quantizeRoundTripsThroughQuantizedMatmul() {
        try (ArrayScope s = ArrayScope.open()) {
            float[] w = new float[64 * 64];
            for (int i = 0; i < w.length; i++) {
                w[i] = (float) Math.sin(i * 0.37);
            }
            MlxArray weight = Mlx.fromFloats(w, 64, 64);
            MlxArray[] q = Mlx.quantize(weight, 64, 8);
            MlxArray x = Mlx.fromFloats(new float[64], 1, 64);
            MlxArray y = Mlx.quantizedMatmul(x, q[0], q[1], q[2], true, 64, 8);
            assertArrayEquals(new int[] {1, 64}, y.shape());
            float[] dq = Mlx.dequantize(q[0], q[1], q[2], 64, 8).toFloatArray();
            for (int i = 0; i < w.length; i++) {
                assertEquals(w[i], dq[i], 0.02f);
            }
        }
    }

    @Test
    void safetensorsRoundTrip(@TempDir Path dir) throws Exception {
        Path file = dir.resolve("w.safetensors");
        try (ArrayScope s = ArrayScope.open()) {
            MlxArray a = Mlx.astype(Mlx.fromFloats(new float[] {1.5f, -2f, 3.25f}, 3), Dtype.BFLOAT16);
            Weights.saveSafetensors(file, Map.of("layer.weight", a), Map.of("format", "mlx"));
        }
        assertTrue(Files.size(file) > 0);
        try (Weights w = Weights.loadSafetensors(file);
                ArrayScope s = ArrayScope.open()) {
            assertEquals("mlx", w.metadata().get("format"));
            assertEquals(Dtype.BFLOAT16, w.get("layer.weight").dtype());
            assertArrayEquals(
                    new float[] {1.5f, -2f, 3.25f}, w.get("layer.weight").toFloatArray());
        }
        assertThrows(MlxException.class, () -> Weights.loadSafetensors(dir.resolve("missing.safetensors")));
    }
}
