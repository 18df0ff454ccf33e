package dev.mlxring.exec;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import com.fasterxml.jackson.databind.ObjectMapper;
import com.fasterxml.jackson.databind.node.ObjectNode;
import dev.mlxring.exec.model.LanguageModel;
import dev.mlxring.exec.model.ModelLoadException;
import dev.mlxring.exec.model.Models;
import dev.mlxring.mlx.ArrayScope;
import dev.mlxring.mlx.CpuKernels;
import dev.mlxring.mlx.Dtype;
import dev.mlxring.mlx.Mlx;
import dev.mlxring.mlx.MlxArray;
import dev.mlxring.mlx.Numerics;
import dev.mlxring.mlx.Weights;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.LinkedHashMap;
import java.util.Map;
import java.util.function.Consumer;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

/**
 * An adapter folder that mlx-lm's {@code load_adapters} would refuse (or that we refuse where it
 * would run on random initial values) fails the load with a {@link ModelLoadException} naming the
 * file and the tensor or field; a good one loads. The folders are a real adapter written by
 * {@code make_adapter.py}, then damaged.
 */
class AdapterLoadTest {
    private static final ObjectMapper JSON = new ObjectMapper();
    private static Path model;
    private static Path good;

    @TempDir
    Path tmp;

    @BeforeAll
    static void writeAdapter() throws Exception {
        Path work = OracleFixtures.build().work();
        model = work.resolve("models/llama-f32");
        good = OracleAdapters.write(
                model, work.resolve("adapters/load-test-lora"), "lora", 1, "--rank", "4", "--scale", "10");
    }

    private static LanguageModel load(Path adapter) {
        return Models.load(model, CpuKernels.DEFAULT, Numerics.EXACT, false, null, adapter);
    }

    /** A copy of the good adapter with its config edited by {@code edit}. */
    private Path withConfig(Consumer<ObjectNode> edit) throws Exception {
        Path dir = Files.createDirectories(tmp.resolve("adapter"));
        Files.copy(good.resolve("adapters.safetensors"), dir.resolve("adapters.safetensors"));
        ObjectNode config =
                (ObjectNode) JSON.readTree(good.resolve("adapter_config.json").toFile());
        edit.accept(config);
        JSON.writeValue(dir.resolve("adapter_config.json").toFile(), config);
        return dir;
    }

    /** A copy of the good adapter with its tensors edited by {@code edit} (which may add or drop some). */
    private Path withTensors(Consumer<Map<String, MlxArray>> edit) throws Exception {
        Path dir = Files.createDirectories(tmp.resolve("adapter"));
        Files.copy(good.resolve("adapter_config.json"), dir.resolve("adapter_config.json"));
        try (Weights w = Weights.loadSafetensors(good.resolve("adapters.safetensors"));
                ArrayScope scope = ArrayScope.open()) {
            Map<String, MlxArray> tensors = new LinkedHashMap<>(w.arrays());
            edit.accept(tensors);
            Weights.saveSafetensors(dir.resolve("adapters.safetensors"), tensors, Map.of());
        }
        return dir;
    }

    private static String refusal(Path adapter) {
        return assertThrows(ModelLoadException.class, () -> load(adapter).close())
                .getMessage();
    }

    @Test
    void aGoodAdapterConvertsTheLastBlocksLinearLayers() {
        try (LanguageModel m = load(good);
                LanguageModel base = Models.load(model)) {
            // seven linear layers of one block, two construction draws each (nn.Linear, lora_a)
            assertEquals(base.initRandomDraws() + 14, m.initRandomDraws());
        }
    }

    @Test
    void aMissingFolderOrFileIsNamed() throws Exception {
        assertTrue(refusal(tmp.resolve("nowhere")).contains("does not exist"));
        Path dir = Files.createDirectories(tmp.resolve("no-weights"));
        Files.copy(good.resolve("adapter_config.json"), dir.resolve("adapter_config.json"));
        String e = refusal(dir);
        assertTrue(e.contains("adapters.safetensors") && e.contains(dir.toString()), e);
        Path noConfig = Files.createDirectories(tmp.resolve("no-config"));
        assertTrue(refusal(noConfig).contains("adapter_config.json"));
    }

    @Test
    void anUnreadableTensorFileIsNamed() throws Exception {
        Path dir = Files.createDirectories(tmp.resolve("corrupt"));
        Files.copy(good.resolve("adapter_config.json"), dir.resolve("adapter_config.json"));
        Files.writeString(dir.resolve("adapters.safetensors"), "not a safetensors file");
        String e = refusal(dir);
        assertTrue(e.contains(dir.resolve("adapters.safetensors").toString()) && e.contains("cannot be read"), e);
    }

    @Test
    void anUnknownFineTuneTypeIsRefused() throws Exception {
        String e = refusal(withConfig(c -> c.put("fine_tune_type", "qlora")));
        assertTrue(e.contains("fine_tune_type 'qlora'") && e.contains("adapter_config.json"), e);
    }

    @Test
    void alphaInsteadOfScaleIsRefusedWithTheHint() throws Exception {
        String e = refusal(withConfig(c -> {
            ObjectNode lp = (ObjectNode) c.get("lora_parameters");
            lp.set("alpha", lp.remove("scale"));
        }));
        assertTrue(e.contains("'scale'") && e.contains("alpha"), e);
    }

    @Test
    void aShapeThatDoesNotMatchIsNamed() throws Exception {
        String name = "model.layers.1.self_attn.q_proj.lora_a";
        String e = refusal(withTensors(t -> t.put(name, Mlx.zeros(new int[] {64, 5}, Dtype.FLOAT32))));
        assertTrue(e.contains(name + ": adapter shape (64, 5) does not match model parameter shape (64, 4)"), e);
        assertTrue(e.contains("adapters.safetensors"), e);
    }

    @Test
    void aTensorThatIsNotAnAdapterParameterIsNamed() throws Exception {
        // block 0 is not converted with num_layers 1; a base weight is no adapter parameter either
        String e = refusal(withTensors(t -> {
            t.put("model.layers.0.self_attn.q_proj.lora_a", Mlx.zeros(new int[] {64, 4}, Dtype.FLOAT32));
            t.put("model.norm.weight", Mlx.zeros(new int[] {64}, Dtype.FLOAT32));
        }));
        assertTrue(e.contains("model.layers.0.self_attn.q_proj.lora_a: not an adapter parameter in the model"), e);
        assertTrue(e.contains("model.norm.weight: not an adapter parameter in the model"), e);
    }

    @Test
    void aMissingTensorOfAConvertedLayerIsNamed() throws Exception {
        String name = "model.layers.1.mlp.down_proj.lora_b";
        String e = refusal(withTensors(t -> t.remove(name)));
        assertTrue(e.contains(name + ": missing"), e);
    }

    @Test
    void aKeyThatNamesNoLinearLayerIsRefused() throws Exception {
        String e = refusal(withConfig(c -> ((ObjectNode) c.get("lora_parameters"))
                .putArray("keys")
                .add("self_attn.q_proj")
                .add("mlp.gate")));
        assertTrue(e.contains("'mlp.gate'"), e);
    }

    @Test
    void aFamilyWithoutAdapterSupportIsRefusedByName() throws Exception {
        Path gemma = model.resolveSibling("gemma3-bf16");
        String e = assertThrows(
                        ModelLoadException.class,
                        () -> Models.load(gemma, CpuKernels.DEFAULT, Numerics.EXACT, false, null, good)
                                .close())
                .getMessage();
        assertTrue(e.contains("gemma3_text") && e.contains("cannot take adapters"), e);
    }
}
