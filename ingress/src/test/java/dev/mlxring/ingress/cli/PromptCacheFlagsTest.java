package dev.mlxring.ingress.cli;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import dev.mlxring.engine.LocalEngine;
import dev.mlxring.kvstore.QuarantineCap;
import java.io.ByteArrayOutputStream;
import java.io.PrintStream;
import java.nio.charset.StandardCharsets;
import org.junit.jupiter.api.Test;

/**
 * serve's quarantine flags: the default cap, both limits set, refusals naming the flag (a bad
 * value, either flag without {@code --prompt-cache-dir}), and serve itself knowing the flags.
 */
class PromptCacheFlagsTest {
    private static LocalEngine.PromptCache parse(String... args) {
        return PromptCacheFlags.parse(ServeArgs.parse(PromptCacheFlags.NAMES, args));
    }

    @Test
    void theQuarantineCapDefaultsAndIsSetByItsFlags() {
        assertEquals(
                QuarantineCap.DEFAULT, parse("--prompt-cache-dir", "/tmp/x").quarantineCap());
        assertEquals(
                new QuarantineCap(3, 500_000_000L),
                parse(
                                "--prompt-cache-dir",
                                "/tmp/x",
                                "--prompt-cache-quarantine-files",
                                "3",
                                "--prompt-cache-quarantine-bytes",
                                "500MB")
                        .quarantineCap());
        assertEquals(
                new QuarantineCap(0, 0),
                parse(
                                "--prompt-cache-dir",
                                "/tmp/x",
                                "--prompt-cache-quarantine-files",
                                "0",
                                "--prompt-cache-quarantine-bytes",
                                "0")
                        .quarantineCap());
    }

    @Test
    void badQuarantineFlagsAreRefusedNamingTheFlag() {
        for (String flag : new String[] {"--prompt-cache-quarantine-files", "--prompt-cache-quarantine-bytes"}) {
            UsageException lone = assertThrows(UsageException.class, () -> parse(flag, "1"));
            assertTrue(
                    lone.getMessage().contains(flag) && lone.getMessage().contains("--prompt-cache-dir"),
                    lone.getMessage());
            UsageException bad =
                    assertThrows(UsageException.class, () -> parse("--prompt-cache-dir", "/tmp/x", flag, "-1"));
            assertTrue(bad.getMessage().contains(flag), bad.getMessage());
        }
    }

    @Test
    void theHybridCheckpointIntervalDefaultsAndIsSetByItsFlag() {
        assertEquals(dev.mlxring.exec.prefix.PrefixReuse.DEFAULT_CHECKPOINT_TOKENS, parse().checkpointTokens());
        assertEquals(512, parse("--prompt-cache-checkpoint", "512").checkpointTokens());
        assertEquals(0, parse("--prompt-cache-checkpoint", "0").checkpointTokens());
        UsageException bad = assertThrows(UsageException.class, () -> parse("--prompt-cache-checkpoint", "-1"));
        assertTrue(bad.getMessage().contains("--prompt-cache-checkpoint"), bad.getMessage());
    }

    @Test
    void serveKnowsTheQuarantineFlags() {
        ByteArrayOutputStream err = new ByteArrayOutputStream();
        int status = Main.run(
                new String[] {"serve", "--prompt-cache-quarantine-files", "2"},
                new PrintStream(new ByteArrayOutputStream(), true, StandardCharsets.UTF_8),
                new PrintStream(err, true, StandardCharsets.UTF_8));
        String said = err.toString(StandardCharsets.UTF_8);
        assertTrue(status != 0, said);
        assertTrue(
                said.contains("--prompt-cache-quarantine-files needs --prompt-cache-dir"),
                "parsed as a serve flag, not refused as unknown: " + said);
    }
}
