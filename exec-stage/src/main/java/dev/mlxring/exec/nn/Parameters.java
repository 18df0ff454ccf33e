package dev.mlxring.exec.nn;

import dev.mlxring.exec.model.ModelLoadException;
import dev.mlxring.mlx.CpuKernels;
import dev.mlxring.mlx.Mlx;
import dev.mlxring.mlx.MlxArray;
import dev.mlxring.mlx.Numerics;
import dev.mlxring.mlx.Weights;
import java.util.ArrayList;
import java.util.HashSet;
import java.util.List;
import java.util.Set;
import java.util.TreeSet;

/**
 * A model's parameters: the loaded {@link Weights} (which own the arrays for the model's life)
 * plus a record of which names the model's modules took, so leftovers fail the load the way
 * mlx-lm's {@code load_weights(strict=True)} does. It also carries the load's choice of CPU
 * kernels and numeric tier, fixed for the model's life, so quantized modules bind them once, and
 * owns the arrays the modules derive from the weights ({@link #own}).
 */
public final class Parameters implements AutoCloseable {
    private final Weights weights;
    private final CpuKernels kernels;
    private final Numerics numerics;
    private final boolean dequantizedWeights;
    private final Set<String> used = new HashSet<>();
    private final List<MlxArray> derived = new ArrayList<>();
    private int initRandomDraws;
    private LoraAdapter adapter;
    private AdapterSlots slots;
    private int layerCount;

    public Parameters(Weights weights, CpuKernels kernels, Numerics numerics) {
        this(weights, kernels, numerics, false);
    }

    /** With {@code dequantizedWeights}: {@code --dequantized-weights} (see {@link QuantSpec#dequantizedLayout}). */
    public Parameters(Weights weights, CpuKernels kernels, Numerics numerics, boolean dequantizedWeights) {
        this.weights = weights;
        this.kernels = kernels;
        this.numerics = numerics;
        this.dequantizedWeights = dequantizedWeights;
    }

    /** Whether quantized modules keep their weights dequantized too ({@code --dequantized-weights}). */
    public boolean dequantizedWeights() {
        return dequantizedWeights;
    }

    /** Takes ownership of an array a module derives from the weights: closed with them. */
    public MlxArray own(MlxArray array) {
        derived.add(array);
        return array;
    }

    /** Which kernels the model's quantized matmuls use ({@code --cpu-kernels}). */
    public CpuKernels kernels() {
        return kernels;
    }

    /** The numeric tier of the model's quantized matmuls ({@code --numerics}). */
    public Numerics numerics() {
        return numerics;
    }

    /**
     * Applies {@code adapter} to the linear layers built from here on ({@link #adapt}); it is
     * closed with these parameters. {@code layerCount} is the model's number of blocks
     * (num_layers counts from the last).
     */
    public void attach(LoraAdapter adapter, int layerCount) {
        this.adapter = adapter;
        this.layerCount = layerCount;
    }

    /**
     * Builds every linear layer from here on as an {@link AdaptableLinear} slot, so that named
     * adapters can be loaded into the built model and chosen per row ({@link AdapterSlots});
     * {@code layerCount} is the model's number of blocks. Not with an attached adapter.
     */
    public void openSlots(int layerCount) {
        if (adapter != null) {
            throw new IllegalStateException("named adapters cannot be served over an --adapter-path adapter");
        }
        this.slots = new AdapterSlots(layerCount);
    }

    /** The model's adapter slots, or null when it was not built to serve named adapters. */
    public AdapterSlots slots() {
        return slots;
    }

    /** The attached adapter, or null. */
    public LoraAdapter adapter() {
        return adapter;
    }

    /** The model's number of blocks, as {@link #attach} was told. */
    int layerCount() {
        return layerCount;
    }

    /** {@code base} as the attached adapter leaves the layer at {@code path} ({@code base} without one). */
    Linear adapt(String path, Linear base, int inDims) {
        Linear layer = adapter == null ? base : adapter.adapt(this, path, base, inDims);
        return slots == null ? layer : slots.add(path, layer, inDims);
    }

    /** The parameter without recording it as taken (null if absent). */
    MlxArray peek(String name) {
        return weights.contains(name) ? weights.get(name) : null;
    }

    public boolean has(String name) {
        return weights.contains(name);
    }

    public MlxArray get(String name) {
        if (!weights.contains(name)) {
            throw new ModelLoadException("weights are missing parameter '" + name + "'");
        }
        used.add(name);
        return weights.get(name);
    }

    /**
     * A weight whose last axis is {@code lastDim} (a layer's input size, or the packed words of
     * it): mlx-lm's strict {@code load_weights} refuses a shape that disagrees with config.json,
     * and a model built on the wrong size computes garbage, so this refuses it too, naming both.
     */
    public MlxArray get(String name, int lastDim, String what) {
        MlxArray a = get(name);
        if (a.ndim() == 0 || a.dim(-1) != lastDim) {
            throw new ModelLoadException("parameter '" + name + "' has shape " + java.util.Arrays.toString(a.shape())
                    + " but config.json implies a last axis of " + lastDim + " (" + what + ")");
        }
        return a;
    }

    /** The parameter if present, else null (optional biases). */
    public MlxArray optional(String name) {
        return weights.contains(name) ? get(name) : null;
    }

    /** Drops a parameter the model does not use (mlx-lm's {@code sanitize}). */
    public void discard(String name) {
        MlxArray a = weights.remove(name);
        if (a != null) {
            a.close();
        }
    }

    /** Adds a parameter the model's {@code sanitize} derives (e.g. stacked experts); it takes ownership. */
    public void put(String name, MlxArray array) {
        weights.put(name, array);
    }

    /** Removes a parameter for {@code sanitize} to rebuild; the caller owns it. Null if absent. */
    public MlxArray remove(String name) {
        return weights.remove(name);
    }

    public Set<String> names() {
        return weights.arrays().keySet();
    }

    /**
     * Records that building a module took {@code n} draws from {@code mx.random}: mlx-lm builds
     * every nn.Linear / nn.Embedding with random initial weights (one {@code uniform} per Linear
     * weight and bias, one {@code normal} per Embedding) and nn.quantize rebuilds each quantized
     * module through its constructor (one more draw) before the checkpoint overwrites them.
     */
    public void countInitRandomDraws(int n) {
        initRandomDraws += n;
    }

    /** Draws mlx-lm's model construction takes from the global random state ({@link #countInitRandomDraws}). */
    public int initRandomDraws() {
        return initRandomDraws;
    }

    /** Evaluates every parameter (load_model with lazy=False). */
    public void evalAll() {
        Mlx.eval(weights.arrays().values().toArray(new MlxArray[0]));
    }

    /** Fails if the weights hold parameters no module took. */
    public void requireAllUsed() {
        Set<String> unused = new TreeSet<>(weights.arrays().keySet());
        unused.removeAll(used);
        if (!unused.isEmpty()) {
            throw new ModelLoadException("weights hold " + unused.size() + " parameters the model does not use, e.g. "
                    + unused.stream().limit(5).toList());
        }
    }

    @Override
    public void close() {
        try {
            derived.forEach(MlxArray::close);
            derived.clear();
            if (adapter != null) {
                adapter.close();
            }
        } finally {
            weights.close();
        }
    }
}
