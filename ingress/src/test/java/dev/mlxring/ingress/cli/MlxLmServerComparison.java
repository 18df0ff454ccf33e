package dev.mlxring.ingress.cli;

import static org.junit.jupiter.api.Assertions.assertTrue;

import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.ObjectMapper;
import dev.mlxring.mlx.PythonScript;
import java.io.IOException;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.List;

/**
 * A server's greedy answers side by side with {@code mlx_lm.server}'s: {@code
 * e2e/openai_client_check.py --compare-mlx-lm --compare-only} sends the openai SDK's greedy chat
 * and completions requests to the server under test and to an {@code mlx_lm.server} it starts on
 * the same model with its prompt cache off ({@code --prompt-cache-size 0}, so that it prefills
 * every prompt from scratch).
 */
final class MlxLmServerComparison {
    private static final ObjectMapper JSON = new ObjectMapper();

    private MlxLmServerComparison() {}

    /**
     * Asserts that at least four answers were compared and that each is identical to
     * {@code mlx_lm.server}'s.
     *
     * @param base the server under test, {@code "http://host:port"} without {@code /v1}
     * @param modelDir the model both serve
     * @param checkArgs further arguments of the check script (e.g. {@code --model-id})
     * @param mlxLmFlags flags {@code mlx_lm.server} starts with besides {@code --prompt-cache-size 0}
     * @param differs what a failure message says before the differing comparison
     */
    static void assertSameGreedyAnswers(
            String base, Path modelDir, List<String> checkArgs, List<String> mlxLmFlags, String differs)
            throws IOException {
        List<String> args = new ArrayList<>(List.of(
                "--base-url", base + "/v1", "--model-dir", modelDir.toString(), "--compare-mlx-lm", "--compare-only"));
        args.addAll(checkArgs);
        for (String flag : mlxLmFlags) {
            args.add("--mlx-lm-arg=" + flag);
        }
        args.addAll(List.of("--mlx-lm-arg=--prompt-cache-size", "--mlx-lm-arg=0"));
        String out = PythonScript.run("e2e/openai_client_check.py", 900, args);
        JsonNode comparison = JSON.readTree(out).get("comparison");
        assertTrue(comparison.size() >= 4, out);
        for (JsonNode c : comparison) {
            assertTrue(c.has("identical") && c.get("identical").asBoolean(), differs + ": " + c);
        }
    }
}
