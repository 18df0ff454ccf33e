package dev.mlxring.kvstore;

import java.lang.foreign.MemorySegment;
import java.nio.ByteBuffer;
import java.nio.ByteOrder;
import java.nio.charset.StandardCharsets;
import java.security.MessageDigest;
import java.security.NoSuchAlgorithmException;
import java.util.ArrayList;
import java.util.HexFormat;
import java.util.List;
import java.util.zip.CRC32C;

/**
 * The SSD tier's formats (little-endian), each ending in a CRC32C of everything before it.
 *
 * <ul>
 *   <li><b>Key</b>: hex SHA-256 of the format version, namespace (model fingerprint, KV scheme,
 *       adapter) and token ids — content-addressed, so a new format or another model never finds
 *       an old entry.</li>
 *   <li><b>Header</b> (index map): magic, format version, namespace, token ids, the positions
 *       the entry restores at (a count, 0 for a trimmable entry, then the positions), the value's
 *       length and CRC32C.</li>
 *   <li><b>Value</b> (data map): magic, format version, then per layer its kind (dense,
 *       quantized, recurrent), offset, group size, bits and per tensor the dtype, shape, byte
 *       length; then the checkpoints' count and per checkpoint its position and its recurrent
 *       layers in the same form; followed by every tensor's bytes in that order.</li>
 * </ul>
 * Any mismatch (magic, version, length, checksum, shape × dtype against the byte length)
 * throws {@link Corrupt}: the caller quarantines the entry and recomputes.
 */
final class DiskRecord {
    static final int MAGIC = 0x4D4C5243; // "MLRC"
    /** 2: recurrent layers, checkpoints, and the header's restorable boundaries. */
    static final int FORMAT_VERSION = 2;

    /** An entry whose bytes cannot be trusted. */
    static final class Corrupt extends Exception {
        Corrupt(String message) {
            super(message);
        }
    }

    /** An index header: what the entry is for and how to check its value. */
    record Header(CacheNamespace ns, int[] tokens, int[] boundaries, long valueLength, long valueCrc) {}

    private DiskRecord() {}

    static String key(CacheNamespace ns, int[] tokens) {
        try {
            MessageDigest d = MessageDigest.getInstance("SHA-256");
            ByteBuffer b = ByteBuffer.allocate(4 + tokens.length * 4).order(ByteOrder.LITTLE_ENDIAN);
            b.putInt(FORMAT_VERSION);
            for (int t : tokens) {
                b.putInt(t);
            }
            for (String s : new String[] {ns.modelFingerprint(), ns.kvScheme(), ns.adapter()}) {
                byte[] u = s.getBytes(StandardCharsets.UTF_8);
                d.update(ByteBuffer.allocate(4).putInt(u.length).array());
                d.update(u);
            }
            d.update(b.array());
            return HexFormat.of().formatHex(d.digest());
        } catch (NoSuchAlgorithmException e) {
            throw new IllegalStateException(e);
        }
    }

    static byte[] encodeValue(KvSnapshot s) {
        List<LayerState> all = new ArrayList<>(s.layers());
        long size = 8 + 4 + 4 + 8;
        for (KvSnapshot.Checkpoint c : s.checkpoints()) {
            size += 4 + 4;
            all.addAll(c.layers());
        }
        for (LayerState l : all) {
            size += 1 + 4 + 4 + 4 + 1;
            for (KvTensor t : l.tensors()) {
                size += 2
                        + t.dtype().length()
                        + 1
                        + 4L * t.shape().length
                        + 8
                        + t.data().byteSize();
            }
        }
        if (size > Integer.MAX_VALUE - 16) {
            throw new IllegalArgumentException("snapshot of " + size + " bytes is too large for one entry");
        }
        ByteBuffer b = ByteBuffer.allocate((int) size).order(ByteOrder.LITTLE_ENDIAN);
        b.putInt(MAGIC).putInt(FORMAT_VERSION).putInt(s.layers().size());
        for (LayerState l : s.layers()) {
            putLayerSpec(b, l);
        }
        b.putInt(s.checkpoints().size());
        for (KvSnapshot.Checkpoint c : s.checkpoints()) {
            b.putInt(c.position()).putInt(c.layers().size());
            for (LayerState l : c.layers()) {
                putLayerSpec(b, l);
            }
        }
        for (LayerState l : all) {
            for (KvTensor t : l.tensors()) {
                b.put(t.data().asByteBuffer());
            }
        }
        b.putLong(crc(b.array(), b.position()));
        return b.array();
    }

    private static void putLayerSpec(ByteBuffer b, LayerState l) {
        b.put((byte) l.kind().ordinal())
                .putInt(l.offset())
                .putInt(l.groupSize())
                .putInt(l.bits())
                .put((byte) l.tensors().size());
        for (KvTensor t : l.tensors()) {
            putString(b, t.dtype());
            b.put((byte) t.shape().length);
            for (int d : t.shape()) {
                b.putInt(d);
            }
            b.putLong(t.data().byteSize());
        }
    }

    /** Parses a value into a new snapshot (the caller owns it). */
    static KvSnapshot decodeValue(byte[] v) throws Corrupt {
        return decodeValue(MemorySegment.ofArray(v));
    }

    /**
     * Parses a value held anywhere — a heap array, or the map file's mapped bytes in place (read
     * under the map's read lock) — into a new snapshot (the caller owns it). Each tensor's bytes
     * are copied once, straight from {@code v} into the snapshot's native memory.
     */
    static KvSnapshot decodeValue(MemorySegment v) throws Corrupt {
        checkCrc(v, "value");
        ByteBuffer b = v.asSlice(0, v.byteSize() - 8).asByteBuffer().order(ByteOrder.LITTLE_ENDIAN);
        KvSnapshot.Builder builder = KvSnapshot.builder();
        try {
            checkMagic(b);
            int layers = b.getInt();
            if (layers < 0 || layers > 100_000) {
                throw new Corrupt("layer count " + layers);
            }
            List<LayerSpec> specs = new ArrayList<>();
            for (int i = 0; i < layers; i++) {
                specs.add(readLayerSpec(b));
            }
            int checkpoints = b.getInt();
            if (checkpoints < 0 || checkpoints > 1_000_000) {
                throw new Corrupt("checkpoint count " + checkpoints);
            }
            int[] positions = new int[checkpoints];
            List<List<LayerSpec>> checkpointSpecs = new ArrayList<>();
            for (int c = 0; c < checkpoints; c++) {
                positions[c] = b.getInt();
                int n = b.getInt();
                if (n < 0 || n > layers) {
                    throw new Corrupt("checkpoint of " + n + " layers");
                }
                List<LayerSpec> cs = new ArrayList<>();
                for (int i = 0; i < n; i++) {
                    cs.add(readLayerSpec(b));
                }
                checkpointSpecs.add(cs);
            }
            for (LayerSpec s : specs) {
                builder.add(readLayer(v, b, builder, s));
            }
            for (int c = 0; c < checkpoints; c++) {
                List<LayerState> cl = new ArrayList<>();
                for (LayerSpec s : checkpointSpecs.get(c)) {
                    cl.add(readLayer(v, b, builder, s));
                }
                builder.checkpoint(new KvSnapshot.Checkpoint(positions[c], cl));
            }
            if (b.hasRemaining()) {
                throw new Corrupt(b.remaining() + " trailing bytes");
            }
            return builder.build();
        } catch (Corrupt e) {
            builder.abandon();
            throw e;
        } catch (RuntimeException e) {
            builder.abandon();
            throw new Corrupt("unreadable value: " + e);
        }
    }

    private record LayerSpec(
            LayerState.Kind kind,
            int offset,
            int group,
            int bits,
            List<String> dtypes,
            List<int[]> shapes,
            List<Long> lengths) {}

    private static LayerSpec readLayerSpec(ByteBuffer b) throws Corrupt {
        int k = b.get();
        if (k < 0 || k >= LayerState.Kind.values().length) {
            throw new Corrupt("layer kind " + k);
        }
        LayerSpec s = new LayerSpec(
                LayerState.Kind.values()[k],
                b.getInt(),
                b.getInt(),
                b.getInt(),
                new ArrayList<>(),
                new ArrayList<>(),
                new ArrayList<>());
        int n = b.get();
        for (int j = 0; j < n; j++) {
            s.dtypes().add(getString(b));
            int ndim = b.get();
            int[] shape = new int[Math.max(ndim, 0)];
            long elems = 1;
            for (int d = 0; d < shape.length; d++) {
                shape[d] = b.getInt();
                elems *= shape[d];
            }
            long len = b.getLong();
            if (len != elems * itemSize(s.dtypes().getLast())) {
                throw new Corrupt("tensor of shape " + java.util.Arrays.toString(shape) + " "
                        + s.dtypes().getLast() + " holds " + len + " bytes");
            }
            s.shapes().add(shape);
            s.lengths().add(len);
        }
        return s;
    }

    private static LayerState readLayer(MemorySegment v, ByteBuffer b, KvSnapshot.Builder builder, LayerSpec s)
            throws Corrupt {
        List<KvTensor> tensors = new ArrayList<>();
        for (int j = 0; j < s.dtypes().size(); j++) {
            long len = s.lengths().get(j);
            if (len > b.remaining()) {
                throw new Corrupt("value truncated");
            }
            var seg = builder.allocate(len);
            MemorySegment.copy(v, b.position(), seg, 0, len);
            b.position(b.position() + (int) len);
            tensors.add(new KvTensor(s.dtypes().get(j), s.shapes().get(j), seg));
        }
        return new LayerState(s.kind(), s.offset(), s.group(), s.bits(), tensors);
    }

    static byte[] encodeHeader(CacheNamespace ns, int[] tokens, byte[] value) {
        return encodeHeader(ns, tokens, null, value);
    }

    /** A header for an entry restorable at {@code boundaries} (null: anywhere, trimmable). */
    static byte[] encodeHeader(CacheNamespace ns, int[] tokens, int[] boundaries, byte[] value) {
        int[] bounds = boundaries == null ? new int[0] : boundaries;
        byte[][] strings = {utf8(ns.modelFingerprint()), utf8(ns.kvScheme()), utf8(ns.adapter())};
        int size = 8
                + 3 * 4
                + strings[0].length
                + strings[1].length
                + strings[2].length
                + 4
                + 4 * tokens.length
                + 4
                + 4 * bounds.length
                + 16
                + 8;
        ByteBuffer b = ByteBuffer.allocate(size).order(ByteOrder.LITTLE_ENDIAN);
        b.putInt(MAGIC).putInt(FORMAT_VERSION);
        for (byte[] s : strings) {
            b.putInt(s.length).put(s);
        }
        b.putInt(tokens.length);
        for (int t : tokens) {
            b.putInt(t);
        }
        b.putInt(bounds.length);
        for (int p : bounds) {
            b.putInt(p);
        }
        b.putLong(value.length).putLong(crc(value, value.length - 8));
        b.putLong(crc(b.array(), b.position()));
        return b.array();
    }

    static Header decodeHeader(byte[] h) throws Corrupt {
        checkCrc(h, "header");
        try {
            ByteBuffer b = ByteBuffer.wrap(h, 0, h.length - 8).order(ByteOrder.LITTLE_ENDIAN);
            checkMagic(b);
            String[] s = new String[3];
            for (int i = 0; i < 3; i++) {
                int n = b.getInt();
                byte[] u = new byte[n];
                b.get(u);
                s[i] = new String(u, StandardCharsets.UTF_8);
            }
            int[] tokens = new int[b.getInt()];
            for (int i = 0; i < tokens.length; i++) {
                tokens[i] = b.getInt();
            }
            int[] bounds = new int[b.getInt()];
            for (int i = 0; i < bounds.length; i++) {
                bounds[i] = b.getInt();
            }
            if (bounds.length > 0 && bounds[bounds.length - 1] != tokens.length) {
                throw new Corrupt(
                        "an entry of " + tokens.length + " ids restores at " + java.util.Arrays.toString(bounds));
            }
            return new Header(
                    new CacheNamespace(s[0], s[1], s[2]),
                    tokens,
                    bounds.length == 0 ? null : bounds,
                    b.getLong(),
                    b.getLong());
        } catch (RuntimeException e) {
            throw new Corrupt("unreadable header: " + e);
        }
    }

    /** A header this process just encoded. */
    static Header decodeHeaderUnchecked(byte[] h) {
        try {
            return decodeHeader(h);
        } catch (Corrupt e) {
            throw new IllegalStateException(e);
        }
    }

    /** Checks a value against its header before decoding it. */
    static void checkAgainst(Header h, byte[] value) throws Corrupt {
        checkAgainst(h, MemorySegment.ofArray(value));
    }

    /**
     * As above for a value anywhere. Compares the value's stored checksum with the header's
     * without reading the bytes: {@link #decodeValue(MemorySegment)} then checks the bytes
     * against that stored checksum (one pass over the value, not two).
     */
    static void checkAgainst(Header h, MemorySegment value) throws Corrupt {
        long n = value.byteSize();
        if (n != h.valueLength()) {
            throw new Corrupt("value holds " + n + " bytes, its header says " + h.valueLength());
        }
        if (n < 16 || value.get(LONG_LE, n - 8) != h.valueCrc()) {
            throw new Corrupt("value checksum differs from its header's");
        }
    }

    private static final java.lang.foreign.ValueLayout.OfLong LONG_LE =
            java.lang.foreign.ValueLayout.JAVA_LONG_UNALIGNED.withOrder(ByteOrder.LITTLE_ENDIAN);

    private static void checkMagic(ByteBuffer b) throws Corrupt {
        int magic = b.getInt();
        int version = b.getInt();
        if (magic != MAGIC) {
            throw new Corrupt("bad magic " + Integer.toHexString(magic));
        }
        if (version != FORMAT_VERSION) {
            throw new Corrupt("format version " + version + ", this build reads " + FORMAT_VERSION);
        }
    }

    private static void checkCrc(byte[] x, String what) throws Corrupt {
        if (x.length < 16) {
            throw new Corrupt(what + " truncated (" + x.length + " bytes)");
        }
        long stored = ByteBuffer.wrap(x, x.length - 8, 8)
                .order(ByteOrder.LITTLE_ENDIAN)
                .getLong();
        if (stored != crc(x, x.length - 8)) {
            throw new Corrupt(what + " checksum mismatch");
        }
    }

    private static void checkCrc(MemorySegment x, String what) throws Corrupt {
        long n = x.byteSize();
        if (n < 16) {
            throw new Corrupt(what + " truncated (" + n + " bytes)");
        }
        if (n - 8 > Integer.MAX_VALUE) {
            throw new Corrupt(what + " of " + n + " bytes is larger than any entry this build writes");
        }
        CRC32C c = new CRC32C();
        c.update(x.asSlice(0, n - 8).asByteBuffer()); // direct over mapped bytes: no copy
        if (x.get(LONG_LE, n - 8) != c.getValue()) {
            throw new Corrupt(what + " checksum mismatch");
        }
    }

    private static long crc(byte[] x, int length) {
        CRC32C c = new CRC32C();
        c.update(x, 0, length);
        return c.getValue();
    }

    private static int itemSize(String dtype) throws Corrupt {
        return switch (dtype) {
            case "bool", "uint8", "int8" -> 1;
            case "uint16", "int16", "float16", "bfloat16" -> 2;
            case "uint32", "int32", "float32" -> 4;
            case "uint64", "int64", "float64", "complex64" -> 8;
            default -> throw new Corrupt("unknown dtype " + dtype);
        };
    }

    private static byte[] utf8(String s) {
        return s.getBytes(StandardCharsets.UTF_8);
    }

    private static void putString(ByteBuffer b, String s) {
        byte[] u = utf8(s);
        b.putShort((short) u.length).put(u);
    }

    private static String getString(ByteBuffer b) {
        byte[] u = new byte[b.getShort()];
        b.get(u);
        return new String(u, StandardCharsets.UTF_8);
    }
}
