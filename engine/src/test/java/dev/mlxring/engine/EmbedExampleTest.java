package dev.mlxring.engine;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertNotNull;
import static org.junit.jupiter.api.Assertions.assertTrue;

import dev.mlxring.mlx.ProjectHome;
import java.io.ByteArrayOutputStream;
import java.io.File;
import java.io.IOException;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.List;
import java.util.concurrent.TimeUnit;
import java.util.regex.Matcher;
import java.util.regex.Pattern;
import javax.tools.JavaCompiler;
import javax.tools.ToolProvider;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

/**
 * docs/examples/EmbedExample.java, the program docs/embedding.md points embedders at, compiles and
 * runs on this module's runtime class path alone (its classes and what {@code mvn
 * dependency:build-classpath} lists for it, written to {@code engine/target/runtime-classpath.txt}
 * by the build), which holds no HTTP server or metrics library; and docs/embedding.md's snippet
 * makes the same calls as the example.
 */
class EmbedExampleTest {
    private static final long RUN_TIMEOUT_S = 240;
    /** Jars an embedding host must not be made to carry: the HTTP server (Undertow, xnio) and Prometheus. */
    private static final Pattern SERVER_JAR = Pattern.compile("undertow|xnio|prometheus|jboss");

    /** The engine module's runtime class path: its classes, then its runtime dependencies. */
    private static List<String> engineRuntimeClasspath() throws IOException {
        Path home = ProjectHome.get();
        Path listed = home.resolve("engine/target/runtime-classpath.txt");
        assertTrue(Files.isRegularFile(listed), listed + " is missing (the build writes it before the tests)");
        String dependencies = Files.readString(listed).strip();
        List<String> path = new ArrayList<>();
        path.add(home.resolve("engine/target/classes").toString());
        path.addAll(Arrays.asList(dependencies.split(Pattern.quote(File.pathSeparator))));
        return path;
    }

    @Test
    void theRuntimeClasspathHoldsNoServerOrMetricsJar() throws IOException {
        List<String> path = engineRuntimeClasspath();
        assertTrue(path.stream().anyMatch(p -> p.contains("jackson-databind")), "the dependencies are listed: " + path);
        List<String> server = path.stream()
                .filter(p ->
                        SERVER_JAR.matcher(Path.of(p).getFileName().toString()).find())
                .toList();
        assertEquals(List.of(), server, "the engine module pulls in the HTTP server or metrics");
        String ingress = File.separator + "ingress" + File.separator + "target";
        assertTrue(
                path.stream()
                        .noneMatch(p -> p.contains(ingress)
                                || Path.of(p).getFileName().toString().startsWith("ingress")),
                "the engine module depends on ingress: " + path);
    }

    @Test
    void theEmbeddingExampleBuildsAndRunsOnTheEngineModuleAlone(@TempDir Path out) throws Exception {
        Path home = ProjectHome.get();
        Path example = home.resolve("docs/examples/EmbedExample.java");
        assertTrue(Files.isRegularFile(example), example + " is missing");
        String classpath = String.join(File.pathSeparator, engineRuntimeClasspath());
        JavaCompiler javac = ToolProvider.getSystemJavaCompiler();
        assertNotNull(javac, "the tests run on a JDK");
        ByteArrayOutputStream diagnostics = new ByteArrayOutputStream();
        int status = javac.run(
                null,
                diagnostics,
                diagnostics,
                "-proc:none",
                "-cp",
                classpath,
                "-d",
                out.toString(),
                example.toString());
        assertEquals(0, status, diagnostics.toString(StandardCharsets.UTF_8));
        assertTrue(Files.isRegularFile(out.resolve("EmbedExample.class")));

        Path log = out.resolve("run.log");
        Path java = Path.of(System.getProperty("java.home"), "bin", "java");
        Process run = new ProcessBuilder(
                        java.toString(),
                        "@" + home.resolve("jvm.args"),
                        "-Dmlxring.home=" + home,
                        "-cp",
                        out + File.pathSeparator + classpath,
                        "EmbedExample",
                        home.resolve("models/smollm2-135m-instruct").toString())
                .redirectErrorStream(true)
                .redirectOutput(log.toFile())
                .start();
        boolean exited = run.waitFor(RUN_TIMEOUT_S, TimeUnit.SECONDS);
        if (!exited) {
            run.destroyForcibly().waitFor();
        }
        String printed = Files.readString(log);
        assertTrue(exited, "the example did not finish in " + RUN_TIMEOUT_S + " s:\n" + printed);
        assertEquals(0, run.exitValue(), printed);
        assertTrue(printed.contains("[COMPLETED, "), "the example's session completed:\n" + printed);
    }

    /** The snippet in docs/embedding.md uses the calls the example makes, so the two cannot drift apart silently. */
    @Test
    void theDocSnippetUsesTheExamplesCalls() throws IOException {
        String doc = Files.readString(ProjectHome.get().resolve("docs/embedding.md"));
        Matcher m = Pattern.compile("```java\n(.*?)```", Pattern.DOTALL).matcher(doc);
        assertTrue(m.find(), "docs/embedding.md has no java snippet");
        String snippet = m.group(1);
        String example = Files.readString(ProjectHome.get().resolve("docs/examples/EmbedExample.java"));
        for (String call : new String[] {
            "EngineConfig.builder()",
            "GenerationRequest.builder()",
            ".withEngine(",
            "LocalEngine.open(",
            "engine.submit("
        }) {
            assertTrue(
                    snippet.contains(call) && example.contains(call),
                    call + " missing from the snippet or the example");
        }
    }
}
