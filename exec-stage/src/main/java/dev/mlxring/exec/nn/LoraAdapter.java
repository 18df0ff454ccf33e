package dev.mlxring.exec.nn;

import dev.mlxring.exec.model.ModelLoadException;
import dev.mlxring.mlx.ArrayScope;
import dev.mlxring.mlx.Mlx;
import dev.mlxring.mlx.MlxArray;
import dev.mlxring.mlx.MlxException;
import dev.mlxring.mlx.Weights;
import java.io.IOException;
import java.io.InputStream;
import java.io.UncheckedIOException;
import java.nio.file.Files;
import java.nio.file.Path;
import java.security.MessageDigest;
import java.security.NoSuchAlgorithmException;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.HashSet;
import java.util.LinkedHashSet;
import java.util.List;
import java.util.Set;
import java.util.TreeSet;
import java.util.regex.Matcher;
import java.util.regex.Pattern;

/**
 * One adapter folder as mlx-lm's {@code load_adapters} applies it to a model being built: for
 * {@code lora} and {@code dora}, each linear layer that {@code linear_to_lora_layers} converts
 * (every linear layer of the last {@code num_layers} blocks, or those {@code keys} names) becomes
 * a {@link LoraLinear} or {@link DoraLinear} over the base layer with the file's
 * {@code lora_a}, {@code lora_b} (and {@code m}); for {@code full}, the file's tensors replace
 * the model's ({@link #overlay}). The model's loader calls {@link #adapt} for every linear layer
 * it builds and {@link #finish} once built; the file's tensors are owned here until
 * {@link #close}.
 *
 * <p>Refused, with the file and tensor named, as load_adapters refuses them: a tensor that is not
 * an adapter parameter of the model and a shape that does not match. Stricter than mlx-lm (which
 * would keep the random initial values): a converted layer whose {@code lora_a}, {@code lora_b}
 * or ({@code dora}) {@code m} is missing, and a {@code keys} entry that names no linear layer.
 */
public final class LoraAdapter implements AutoCloseable {
    private static final Pattern LAYER = Pattern.compile("model\\.layers\\.(\\d+)\\.(.+)");

    private final AdapterConfig config;
    private final Weights tensors;
    private final Path file;
    private final Set<String> used = new HashSet<>();
    private final Set<String> matchedKeys = new HashSet<>();
    private final List<String> errors = new ArrayList<>();
    private final List<MlxArray> derived = new ArrayList<>();
    private final String fingerprint;
    private int converted;

    private LoraAdapter(AdapterConfig config, Weights tensors, String fingerprint) {
        this.config = config;
        this.tensors = tensors;
        this.file = config.dir().resolve(AdapterConfig.WEIGHTS_FILE);
        this.fingerprint = fingerprint;
    }

    /** Reads the adapter folder {@code dir} ({@link AdapterConfig#read} and its safetensors file). */
    public static LoraAdapter load(Path dir) {
        AdapterConfig config = AdapterConfig.read(dir);
        Path file = dir.resolve(AdapterConfig.WEIGHTS_FILE);
        String fingerprint = fingerprint(dir); // before the tensors, which a failure here would leak
        Weights tensors;
        try {
            tensors = Weights.loadSafetensors(file);
        } catch (MlxException e) {
            throw new ModelLoadException("adapter " + file + " cannot be read: " + e.getMessage());
        }
        return new LoraAdapter(config, tensors, fingerprint);
    }

    public AdapterConfig config() {
        return config;
    }

    /**
     * SHA-256 over the folder's {@code adapter_config.json} and {@code adapters.safetensors}
     * bytes: the adapter's identity in the prefix cache's namespace (two adapters with the same
     * layout and other values never share KV).
     */
    public String fingerprint() {
        return fingerprint;
    }

    /** Linear layers converted so far. */
    public int convertedLayers() {
        return converted;
    }

    /**
     * For a {@code full} adapter, replaces the model's parameters by the file's before the model
     * is built ({@code model.load_weights(strict=False)}); each must name a parameter of the
     * model and have its shape.
     */
    public void overlay(Parameters params) {
        for (String name : List.copyOf(tensors.arrays().keySet())) {
            MlxArray w = tensors.get(name);
            if (!params.has(name)) {
                errors.add(name + ": not an adapter parameter in the model");
            } else if (!Arrays.equals(w.shape(), params.peek(name).shape())) {
                errors.add(name + ": adapter shape " + tuple(w.shape()) + " does not match model parameter shape "
                        + tuple(params.peek(name).shape()));
            } else {
                params.discard(name);
                params.put(name, tensors.remove(name));
                used.add(name);
            }
        }
        throwErrors();
    }

    /**
     * {@code base}, the layer at module path {@code path} taking {@code inDims} inputs, as the
     * adapter leaves it: a {@link LoraLinear} or {@link DoraLinear} where linear_to_lora_layers
     * converts it (counting the two random draws its construction takes in mlx-lm), else
     * {@code base}.
     */
    public Linear adapt(Parameters params, String path, Linear base, int inDims) {
        if (config.full() || !converts(path, params.layerCount())) {
            return base;
        }
        params.countInitRandomDraws(2); // nn.Linear's weight and lora_a's uniform draw
        return convert(path, base, inDims);
    }

    /**
     * As {@link #adapt(Parameters, String, Linear, int)} for a model already built with
     * {@code layerCount} blocks (a named adapter, {@link AdapterSlots}): no random draws are
     * counted, as the model's own were taken at its load.
     */
    Linear adapt(int layerCount, String path, Linear base, int inDims) {
        if (config.full() || !converts(path, layerCount)) {
            return base;
        }
        return convert(path, base, inDims);
    }

    private Linear convert(String path, Linear base, int inDims) {
        converted++;
        MlxArray weight = switch (base) {
            case Linear.Dense d -> d.weight();
            case Linear.Quantized q -> q.weight();
            default ->
                throw new ModelLoadException(
                        path + ": a " + base.getClass().getSimpleName() + " layer cannot take a LoRA adapter");
        };
        int outDims = weight.dim(0);
        MlxArray a = take(path + ".lora_a", inDims, config.rank());
        MlxArray b = take(path + ".lora_b", config.rank(), outDims);
        if (!config.dora()) {
            return a == null || b == null ? base : new LoraLinear(base, a, b, config.scale());
        }
        MlxArray m = take(path + ".m", outDims);
        if (a == null || b == null || m == null) {
            return base;
        }
        try (ArrayScope scope = ArrayScope.open()) {
            MlxArray w;
            MlxArray bias;
            if (base instanceof Linear.Quantized q) {
                w = Mlx.dequantize(
                        q.weight(),
                        q.scales(),
                        q.biases(),
                        q.spec().groupSize(),
                        q.spec().bits());
                bias = q.bias();
            } else {
                w = weight;
                bias = ((Linear.Dense) base).bias();
            }
            MlxArray ratio = DoraLinear.magnitudeRatio(w, a, b, config.scale(), m);
            Mlx.eval(w, ratio);
            if (w != weight) {
                derived.add(w.detach());
            }
            derived.add(ratio.detach());
            return new DoraLinear(w, bias, a, b, config.scale(), ratio);
        }
    }

    /** Whether linear_to_lora_layers converts the module at {@code path}. */
    private boolean converts(String path, int layers) {
        Matcher m = LAYER.matcher(path);
        if (m.matches()) {
            int layer = Integer.parseInt(m.group(1));
            String key = m.group(2);
            int n = Math.max(config.numLayers(), 0);
            boolean inRange = n == 0 || layer >= layers - n;
            boolean keyed = config.keys() == null || config.keys().contains(key);
            if (inRange && keyed && config.keys() != null) {
                matchedKeys.add(key);
            }
            return inRange && keyed;
        }
        if (config.keys() != null && config.keys().contains(path)) {
            matchedKeys.add(path);
            return true;
        }
        return false;
    }

    private MlxArray take(String name, int... shape) {
        MlxArray w = tensors.contains(name) ? tensors.get(name) : null;
        if (w == null) {
            errors.add(name + ": missing (the layer is converted, so the adapter must hold it)");
            return null;
        }
        used.add(name);
        if (!Arrays.equals(w.shape(), shape)) {
            errors.add(name + ": adapter shape " + tuple(w.shape()) + " does not match model parameter shape "
                    + tuple(shape));
            return null;
        }
        return w;
    }

    /**
     * Once the model is built: refuses tensors no converted layer took, {@code keys} that named
     * no linear layer, and everything {@link #adapt} found; evaluates the adapter's arrays on the
     * loading thread.
     */
    public void finish() {
        Set<String> unused = new TreeSet<>(tensors.arrays().keySet());
        unused.removeAll(used);
        for (String name : unused) {
            errors.add(name + ": not an adapter parameter in the model");
        }
        if (config.keys() != null) {
            Set<String> unmatched = new LinkedHashSet<>(config.keys());
            unmatched.removeAll(matchedKeys);
            for (String key : unmatched) {
                errors.add("lora_parameters.keys '" + key + "' names no linear layer of the adapted blocks");
            }
        }
        throwErrors();
        Mlx.eval(tensors.arrays().values().toArray(new MlxArray[0]));
    }

    /** Bytes of the adapter's arrays: the file's tensors and what the layers derive from them (DoRA's). */
    public long lengthInBytes() {
        long n = 0;
        for (MlxArray a : tensors.arrays().values()) {
            n += a.nbytes();
        }
        for (MlxArray a : derived) {
            n += a.nbytes();
        }
        return n;
    }

    private void throwErrors() {
        if (!errors.isEmpty()) {
            throw new ModelLoadException(
                    "adapter at " + file + " holds incompatible tensors:\n  " + String.join("\n  ", errors));
        }
    }

    private static String tuple(int[] shape) {
        StringBuilder s = new StringBuilder("(");
        for (int i = 0; i < shape.length; i++) {
            s.append(i == 0 ? "" : ", ").append(shape[i]);
        }
        return s.append(shape.length == 1 ? ",)" : ")").toString();
    }

    private static String fingerprint(Path dir) {
        try {
            MessageDigest d = MessageDigest.getInstance("SHA-256");
            for (String f : List.of(AdapterConfig.CONFIG_FILE, AdapterConfig.WEIGHTS_FILE)) {
                try (InputStream in = Files.newInputStream(dir.resolve(f))) {
                    byte[] buf = new byte[1 << 16];
                    for (int n; (n = in.read(buf)) > 0; ) {
                        d.update(buf, 0, n);
                    }
                }
            }
            return java.util.HexFormat.of().formatHex(d.digest());
        } catch (IOException e) {
            throw new UncheckedIOException("cannot read the adapter in " + dir, e);
        } catch (NoSuchAlgorithmException e) {
            throw new IllegalStateException(e);
        }
    }

    @Override
    public void close() {
        try {
            derived.forEach(MlxArray::close);
            derived.clear();
        } finally {
            tensors.close();
        }
    }
}
