package dev.mlxring.ingress;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertNotNull;
import static org.junit.jupiter.api.Assertions.assertTrue;

import dev.mlxring.mlx.ProjectHome;
import java.io.ByteArrayOutputStream;
import java.io.IOException;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.regex.Matcher;
import java.util.regex.Pattern;
import javax.tools.JavaCompiler;
import javax.tools.ToolProvider;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

/**
 * docs/examples/EmbedExample.java, the program docs/embedding.md points embedders at, compiles
 * against this module and its dependencies (the test's class path), and docs/embedding.md's
 * snippet builds its request and configuration with the same builders.
 */
class EmbedExampleTest {
    @Test
    void theEmbeddingExampleCompiles(@TempDir Path out) {
        Path example = ProjectHome.get().resolve("docs/examples/EmbedExample.java");
        assertTrue(Files.isRegularFile(example), example + " is missing");
        JavaCompiler javac = ToolProvider.getSystemJavaCompiler();
        assertNotNull(javac, "the tests run on a JDK");
        ByteArrayOutputStream diagnostics = new ByteArrayOutputStream();
        int status = javac.run(null, diagnostics, diagnostics, "-proc:none", "-cp", System.getProperty("java.class.path"),
                "-d", out.toString(), example.toString());
        assertEquals(0, status, diagnostics.toString(StandardCharsets.UTF_8));
        assertTrue(Files.isRegularFile(out.resolve("EmbedExample.class")));
    }

    /** The snippet in docs/embedding.md uses the calls the example makes, so the two cannot drift apart silently. */
    @Test
    void theDocSnippetUsesTheExamplesCalls() throws IOException {
        String doc = Files.readString(ProjectHome.get().resolve("docs/embedding.md"));
        Matcher m = Pattern.compile("```java\n(.*?)```", Pattern.DOTALL).matcher(doc);
        assertTrue(m.find(), "docs/embedding.md has no java snippet");
        String snippet = m.group(1);
        String example = Files.readString(ProjectHome.get().resolve("docs/examples/EmbedExample.java"));
        for (String call : new String[] {"EngineConfig.builder()", "GenerationRequest.builder()", ".withEngine(",
                "LocalEngine.open(", "engine.submit("}) {
            assertTrue(snippet.contains(call) && example.contains(call), call + " missing from the snippet or the example");
        }
    }
}
