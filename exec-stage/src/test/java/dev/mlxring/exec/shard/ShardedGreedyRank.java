package dev.mlxring.exec.shard;

import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.ObjectMapper;
import com.fasterxml.jackson.databind.node.ArrayNode;
import com.fasterxml.jackson.databind.node.ObjectNode;
import dev.mlxring.exec.generate.GenerateStep;
import dev.mlxring.exec.generate.GenerationOptions;
import dev.mlxring.exec.generate.GenerationResult;
import dev.mlxring.exec.model.LanguageModel;
import dev.mlxring.exec.model.Models;
import dev.mlxring.exec.nn.TensorShard;
import dev.mlxring.mlx.CpuKernels;
import dev.mlxring.mlx.Group;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.Base64;
import java.util.List;

/**
 * One rank of the Java side of {@code ShardedParityTest}, run under {@code mlx.launch -n N}: joins
 * the group, loads each cell's model as this rank's part ({@link Models#load} with a
 * {@link TensorShard}, as {@code generate} and {@code serve} do under a launch) and runs every
 * prompt through {@link GenerateStep} greedy. Rank 0 writes what {@code sharded_greedy.py} writes
 * (per cell and prompt: tokens, logits0 and logprobs0 as base64 bytes).
 *
 * <pre>
 * ShardedGreedyRank --out FILE --prompts FILE --max-tokens N --prefill-step-size S --cell NAME=DIR...
 * </pre>
 */
public final class ShardedGreedyRank {
    private ShardedGreedyRank() {}

    public static void main(String[] argv) throws Exception {
        Path out = null;
        Path promptsFile = null;
        int maxTokens = 0;
        int prefillStep = 0;
        List<String[]> cells = new ArrayList<>();
        for (int i = 0; i < argv.length; i += 2) {
            String v = argv[i + 1];
            switch (argv[i]) {
                case "--out" -> out = Path.of(v);
                case "--prompts" -> promptsFile = Path.of(v);
                case "--max-tokens" -> maxTokens = Integer.parseInt(v);
                case "--prefill-step-size" -> prefillStep = Integer.parseInt(v);
                case "--cell" -> cells.add(v.split("=", 2));
                default -> throw new IllegalArgumentException("unknown flag " + argv[i]);
            }
        }
        ObjectMapper json = new ObjectMapper();
        JsonNode prompts = json.readTree(promptsFile.toFile()).get("prompts");
        Group group = Group.init("any", true);
        if (group.size() < 2) {
            throw new IllegalStateException("run under mlx.launch -n 2: the group has " + group.size() + " rank");
        }
        ObjectNode doc = json.createObjectNode();
        doc.put("ranks", group.size());
        ObjectNode cellsOut = doc.putObject("cells");
        for (String[] cell : cells) {
            ArrayNode results = cellsOut.putArray(cell[0]);
            try (LanguageModel model = Models.load(Path.of(cell[1]), CpuKernels.DEFAULT, new TensorShard(group))) {
                for (JsonNode p : prompts) {
                    int[] prompt = new int[p.size()];
                    for (int k = 0; k < prompt.length; k++) {
                        prompt[k] = p.get(k).asInt();
                    }
                    GenerationResult r = GenerateStep.run(
                            model,
                            prompt,
                            new GenerationOptions(maxTokens, prefillStep, new int[0], true, null, 0),
                            t -> true);
                    ObjectNode o = results.addObject();
                    o.set("tokens", json.valueToTree(r.tokens()));
                    o.putObject("logits0")
                            .put("dtype", r.logitsDtype())
                            .put("b64", Base64.getEncoder().encodeToString(r.firstLogits()));
                    o.putObject("logprobs0").put("b64", Base64.getEncoder().encodeToString(r.firstLogprobs()));
                }
            }
        }
        if (group.rank() == 0) {
            Files.writeString(out, json.writeValueAsString(doc));
        }
    }
}
