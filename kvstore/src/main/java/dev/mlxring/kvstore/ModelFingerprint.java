package dev.mlxring.kvstore;

import java.io.IOException;
import java.io.InputStream;
import java.io.UncheckedIOException;
import java.nio.ByteBuffer;
import java.nio.ByteOrder;
import java.nio.file.Files;
import java.nio.file.Path;
import java.security.MessageDigest;
import java.security.NoSuchAlgorithmException;
import java.util.HexFormat;
import java.util.List;
import java.util.stream.Stream;

/**
 * A model's identity for the prefix cache, stable across restarts and cheap for large models:
 * SHA-256 over {@code config.json} and, per {@code *.safetensors} file (sorted by name), its
 * name, size and safetensors header (every tensor's name, dtype, shape and byte range). Weights
 * that differ in layout or config never share KV; two byte-different files with identical
 * headers and sizes would (re-converting a model with other values keeps its layout), so a
 * converted-in-place model needs {@code --prompt-cache-dir} cleared.
 */
public final class ModelFingerprint {
    private ModelFingerprint() {}

    public static String of(Path modelDir) {
        try {
            MessageDigest d = MessageDigest.getInstance("SHA-256");
            d.update(Files.readAllBytes(modelDir.resolve("config.json")));
            List<Path> weights;
            try (Stream<Path> s = Files.list(modelDir)) {
                weights = s.filter(p -> p.getFileName().toString().endsWith(".safetensors"))
                        .sorted()
                        .toList();
            }
            for (Path w : weights) {
                d.update(w.getFileName().toString().getBytes(java.nio.charset.StandardCharsets.UTF_8));
                d.update(ByteBuffer.allocate(8).putLong(Files.size(w)).array());
                try (InputStream in = Files.newInputStream(w)) {
                    byte[] len = in.readNBytes(8);
                    if (len.length == 8) {
                        long n = ByteBuffer.wrap(len)
                                .order(ByteOrder.LITTLE_ENDIAN)
                                .getLong();
                        d.update(in.readNBytes((int) Math.min(Math.max(n, 0), 100_000_000L)));
                    }
                }
            }
            return HexFormat.of().formatHex(d.digest());
        } catch (IOException e) {
            throw new UncheckedIOException("cannot fingerprint the model in " + modelDir, e);
        } catch (NoSuchAlgorithmException e) {
            throw new IllegalStateException(e);
        }
    }
}
