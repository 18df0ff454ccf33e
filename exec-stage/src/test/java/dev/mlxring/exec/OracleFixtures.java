package dev.mlxring.exec;

import dev.mlxring.mlx.ProjectHome;
import dev.mlxring.mlx.PythonScript;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.List;

/**
 * The live oracle's inputs under {@code build/oracle}: tiny random-weight models of every family
 * and dtype built by mlx-lm's own classes ({@code make_tiny_models.py}, idempotent) and the prompt
 * file over their 512-token vocabulary, with one 70-token prompt that prefills in chunks.
 *
 * @param work {@code build/oracle}; the models are in {@code work/models/<cell>}
 * @param prompts the prompts JSON
 */
record OracleFixtures(Path work, Path prompts) {

    static OracleFixtures build() throws Exception {
        Path work = withModels("build/oracle", "oracle/make_tiny_models.py", 600);
        Path prompts = work.resolve("prompts-512.json");
        PythonScript.run(
                "oracle/prompts.py",
                60,
                List.of("--vocab", "512", "--seed", "7", "--long", "70", "--out", prompts.toString()));
        return new OracleFixtures(work, prompts);
    }

    /**
     * The fast tiers' oracle models under {@code build/oracle/fastnum/models}, built by mlx-lm's
     * classes ({@code make_fast_numerics_models.py}, idempotent).
     *
     * @return {@code build/oracle/fastnum}
     */
    static Path fastNumerics() throws Exception {
        return withModels("build/oracle/fastnum", "oracle/make_fast_numerics_models.py", 300);
    }

    /** The project's {@code dir}, created, with {@code script} (idempotent) building models into {@code dir/models}. */
    private static Path withModels(String dir, String script, int timeoutSeconds) throws Exception {
        Path work = ProjectHome.get().resolve(dir);
        Files.createDirectories(work);
        PythonScript.run(
                script, timeoutSeconds, List.of("--out", work.resolve("models").toString()));
        return work;
    }
}
