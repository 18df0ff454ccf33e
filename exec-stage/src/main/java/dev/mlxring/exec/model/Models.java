package dev.mlxring.exec.model;

import dev.mlxring.exec.nn.LoraAdapter;
import dev.mlxring.exec.nn.Parameters;
import dev.mlxring.exec.nn.TensorShard;
import dev.mlxring.mlx.CpuKernels;
import dev.mlxring.mlx.Numerics;
import dev.mlxring.mlx.Weights;
import java.io.IOException;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.List;
import java.util.Map;
import java.util.Set;
import java.util.function.Function;
import java.util.stream.Stream;

/** Loads a model directory (config.json + model*.safetensors) into the family graph its model_type names. */
public final class Models {
    private Models() {}

    private static final Map<String, Function<ModelConfig, DecoderArgs>> FAMILIES = Map.of(
            "llama", Llama::args,
            "mistral", Llama::args,
            "qwen2", Qwen2::args,
            "qwen3", Qwen3::args);

    /** Builds a family's own graph from the parameters; with a shard (only where sharding is built), this rank's part. */
    private interface OwnGraph {
        LanguageModel build(ModelConfig config, Parameters params, TensorShard shard);
    }

    /** Families whose graph is not the shared llama-style decoder: each builds itself from the parameters. */
    private static final Map<String, OwnGraph> OWN_GRAPHS = Map.of(
            "gemma3_text",
            (c, p, s) -> Gemma3Text.build(c, p),
            "gemma4_text",
            (c, p, s) -> Gemma4Text.build(c, p),
            "phi3",
            (c, p, s) -> Phi3.build(c, p),
            "qwen3_moe",
            Qwen3Moe::build,
            "gpt_oss",
            GptOss::build,
            "qwen3_5",
            (c, p, s) -> Qwen35.build(c, p),
            "qwen3_5_moe",
            (c, p, s) -> Qwen35.build(c, p),
            "qwen3_next",
            (c, p, s) -> Qwen3Next.build(c, p));

    public static List<String> supportedModelTypes() {
        return Stream.concat(FAMILIES.keySet().stream(), OWN_GRAPHS.keySet().stream())
                .sorted()
                .toList();
    }

    /** {@link #load(Path, CpuKernels)} with the default kernels ({@link CpuKernels#DEFAULT}). */
    public static LanguageModel load(Path modelDir) {
        return load(modelDir, CpuKernels.DEFAULT);
    }

    /** Loads the model whose quantized matmuls run on {@code kernels}. */
    public static LanguageModel load(Path modelDir, CpuKernels kernels) {
        return load(modelDir, kernels, null);
    }

    /**
     * Families that can be loaded as one rank's part of a tensor-parallel model: those whose
     * mlx-lm 0.32.2 model file has {@code shard(group)} and whose sharding is built here.
     */
    public static final Set<String> SHARDED_FAMILIES =
            Set.of("llama", "mistral", "qwen2", "qwen3", "qwen3_moe", "gpt_oss");

    /**
     * Loads the model whose quantized matmuls run on {@code kernels}; with a {@code shard}, only
     * this rank's part of it (mlx-lm's {@code sharded_load}: {@code load_model} then
     * {@code model.shard(group)}). A family that cannot be sharded is refused by name.
     */
    public static LanguageModel load(Path modelDir, CpuKernels kernels, TensorShard shard) {
        return load(modelDir, kernels, Numerics.EXACT, shard);
    }

    /**
     * As {@link #load(Path, CpuKernels, TensorShard)} with the quantized matmuls in numeric tier
     * {@code numerics} ({@code --numerics}; {@link Numerics#FAST} changes bits and is opt-in).
     */
    public static LanguageModel load(Path modelDir, CpuKernels kernels, Numerics numerics, TensorShard shard) {
        return load(modelDir, kernels, numerics, false, shard);
    }

    /**
     * As {@link #load(Path, CpuKernels, Numerics, TensorShard)}; with {@code dequantizedWeights}
     * ({@code --dequantized-weights}) quantized layers whose activations are float16 or bfloat16
     * also keep their weights dequantized, made on the first forward pass: faster on the exact
     * tier, same bytes, 2 bytes a weight more memory. Not with a shard.
     */
    public static LanguageModel load(
            Path modelDir, CpuKernels kernels, Numerics numerics, boolean dequantizedWeights, TensorShard shard) {
        return load(modelDir, kernels, numerics, dequantizedWeights, shard, null);
    }

    /** Families an adapter ({@code --adapter-path}) can be applied to: the shared llama-style decoder. */
    public static final Set<String> ADAPTER_FAMILIES = Set.of("llama", "mistral", "qwen2", "qwen3");

    /**
     * As {@link #load(Path, CpuKernels, Numerics, boolean, TensorShard)} with the adapter folder
     * {@code adapterDir} (null: none) applied as mlx-lm's {@code load(path, adapter_path=...)}
     * applies it ({@link LoraAdapter}): a LoRA, DoRA or full fine-tune as mlx_lm.lora wrote it.
     * Refused with a shard, and for families outside {@link #ADAPTER_FAMILIES}.
     */
    public static LanguageModel load(
            Path modelDir,
            CpuKernels kernels,
            Numerics numerics,
            boolean dequantizedWeights,
            TensorShard shard,
            Path adapterDir) {
        return load(modelDir, kernels, numerics, dequantizedWeights, shard, adapterDir, false);
    }

    /**
     * As {@link #load(Path, CpuKernels, Numerics, boolean, TensorShard, Path)}; with
     * {@code adapterSlots} every linear layer is built as a slot for named adapters chosen per row
     * ({@link LanguageModel#adapterSlots}, {@code serve --adapter NAME=DIR}). Refused with an
     * adapter folder, a shard, and for families outside {@link #ADAPTER_FAMILIES}.
     */
    public static LanguageModel load(
            Path modelDir,
            CpuKernels kernels,
            Numerics numerics,
            boolean dequantizedWeights,
            TensorShard shard,
            Path adapterDir,
            boolean adapterSlots) {
        if (dequantizedWeights && shard != null) {
            throw new IllegalArgumentException("--dequantized-weights is not supported across tensor-parallel ranks");
        }
        ModelConfig config = ModelConfig.read(modelDir);
        String type = config.modelType();
        Function<ModelConfig, DecoderArgs> family = FAMILIES.get(type);
        OwnGraph ownGraph = OWN_GRAPHS.get(type);
        if (family == null && ownGraph == null) {
            throw new ModelLoadException("model_type '" + type + "' in " + config.file()
                    + " is not supported (supported: " + String.join(", ", supportedModelTypes()) + ")");
        }
        if (shard != null) {
            checkShardable(config);
        }
        if (adapterDir != null) {
            if (shard != null) {
                throw new ModelLoadException("an adapter cannot be applied across tensor-parallel ranks");
            }
            if (!ADAPTER_FAMILIES.contains(type)) {
                throw new ModelLoadException("adapter " + adapterDir + ": model_type '" + type
                        + "' cannot take adapters (supported: "
                        + String.join(", ", ADAPTER_FAMILIES.stream().sorted().toList()) + ")");
            }
        }
        if (adapterSlots) {
            if (adapterDir != null) {
                throw new ModelLoadException(
                        "named adapters (--adapter) cannot be served over --adapter-path " + adapterDir);
            }
            if (shard != null) {
                throw new ModelLoadException("named adapters cannot be served across tensor-parallel ranks");
            }
            if (!ADAPTER_FAMILIES.contains(type)) {
                throw new ModelLoadException("model_type '" + type + "' cannot take adapters (supported: "
                        + String.join(", ", ADAPTER_FAMILIES.stream().sorted().toList()) + ")");
            }
        }
        DecoderArgs args = family == null ? null : family.apply(config);
        Parameters params = new Parameters(loadWeights(modelDir), kernels, numerics, dequantizedWeights);
        LanguageModel model;
        try {
            if (adapterSlots) {
                params.openSlots(args.numHiddenLayers());
            }
            if (adapterDir != null) {
                LoraAdapter adapter = LoraAdapter.load(adapterDir);
                params.attach(adapter, args.numHiddenLayers());
                if (adapter.config().full()) {
                    adapter.overlay(params);
                }
            }
            model = family == null
                    ? ownGraph.build(config, params, shard)
                    : DecoderModel.build(config, params, args, shard);
        } catch (RuntimeException e) {
            params.close();
            throw e;
        }
        if (params.adapter() != null) {
            try {
                params.adapter().finish();
            } catch (RuntimeException e) {
                model.close();
                throw e;
            }
        }
        return model;
    }

    /** Refuses, by name, a family the tensor-parallel path cannot run. */
    private static void checkShardable(ModelConfig config) {
        String type = config.modelType();
        if (!SHARDED_FAMILIES.contains(type)) {
            throw new ModelLoadException("model_type '" + type + "' in " + config.file()
                    + " cannot run tensor-parallel across ranks: mlx-lm 0.32.2 has no shard() for this family"
                    + " (sharded families: "
                    + String.join(", ", SHARDED_FAMILIES.stream().sorted().toList()) + ")");
        }
    }

    private static Weights loadWeights(Path modelDir) {
        List<Path> files;
        try (Stream<Path> s = Files.list(modelDir)) {
            files = s.filter(p -> {
                        String n = p.getFileName().toString();
                        return n.startsWith("model") && n.endsWith(".safetensors");
                    })
                    .sorted()
                    .toList();
        } catch (IOException e) {
            throw new ModelLoadException("cannot list " + modelDir + ": " + e.getMessage());
        }
        if (files.isEmpty()) {
            throw new ModelLoadException("no model*.safetensors files in " + modelDir);
        }
        Weights all = Weights.loadSafetensors(files.get(0));
        for (Path f : files.subList(1, files.size())) {
            all.putAll(Weights.loadSafetensors(f));
        }
        return all;
    }
}
