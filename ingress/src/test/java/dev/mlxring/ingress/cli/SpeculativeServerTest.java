package dev.mlxring.ingress.cli;

import dev.mlxring.mlx.ProjectHome;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.List;
import org.junit.jupiter.api.Test;

/**
 * The server speculating, against {@code mlx_lm.server} side by side on the default model, greedy:
 * {@code serve --draft-model DIR --num-draft-tokens 2} (the model drafting for itself) against
 * mlx_lm.server with the same flags; and {@code serve --speculative ngram} (which mlx-lm lacks)
 * against plain mlx_lm.server, since greedy speculative output equals plain output wherever a
 * verification forward rounds each position as a one-position step does (it has on every parity
 * prompt so far; a difference here would be the first such case). The check sends its requests
 * one at a time, so each is a lone row of the server's continuous batch, whose forward is the serial
 * speculative round's. Both prompt caches are off, so both prefill every prompt from scratch.
 */
class SpeculativeServerTest {

    private static final String MODEL =
            ProjectHome.get().resolve(GenerateCommand.DEFAULT_MODEL).toString();

    @Test
    void aDraftModelServesWhatMlxLmServerServes() throws Exception {
        compare(
                List.of("--draft-model", MODEL, "--num-draft-tokens", "2"),
                List.of("--draft-model", MODEL, "--num-draft-tokens", "2"));
    }

    @Test
    void promptLookupServesWhatPlainMlxLmServerServes() throws Exception {
        compare(List.of("--speculative", "ngram", "--num-draft-tokens", "4"), List.of());
    }

    private static void compare(List<String> flags, List<String> mlxLmFlags) throws Exception {
        List<String> args = new ArrayList<>(List.of("--prompt-cache-size", "0"));
        args.addAll(flags);
        try (ServeCommand.Running server = InProcessServer.start(args)) {
            MlxLmServerComparison.assertSameGreedyAnswers(
                    InProcessServer.base(server),
                    Path.of(MODEL),
                    List.of(),
                    mlxLmFlags,
                    flags + ": greedy output differs from mlx_lm.server " + mlxLmFlags);
        }
    }
}
