package dev.mlxring.ingress.cli;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import dev.mlxring.pipeline.EngineConfig;
import java.util.Set;
import org.junit.jupiter.api.Test;

/** serve's batching flags: defaults, the --batch alias, the prompt cap, the KV budget, and refusals naming the flag. */
class ConcurrencyFlagsTest {
    private static EngineConfig apply(String... args) {
        String[] argv = new String[args.length + 1];
        argv[0] = "serve";
        System.arraycopy(args, 0, argv, 1, args.length);
        CliArgs a = CliArgs.parse(argv, 1, Set.copyOf(ConcurrencyFlags.NAMES), Set.of());
        return ConcurrencyFlags.apply(a, EngineConfig.defaults());
    }

    @Test
    void defaultsBatchEightRowsWithoutABudget() {
        EngineConfig c = apply();
        assertEquals(8, c.decodeConcurrency());
        assertEquals(8, c.promptConcurrency());
        assertEquals(0, c.kvBudgetBytes());
    }

    @Test
    void batchIsAnAliasAndThePromptCapNeverExceedsTheRowCap() {
        assertEquals(3, apply("--batch", "3").decodeConcurrency());
        assertEquals(3, apply("--batch", "3").promptConcurrency());
        EngineConfig c = apply("--decode-concurrency", "16", "--prompt-concurrency", "4");
        assertEquals(16, c.decodeConcurrency());
        assertEquals(4, c.promptConcurrency());
        assertEquals(1, apply("--decode-concurrency", "1").decodeConcurrency());
        assertEquals(2_000_000_000L, apply("--kv-budget", "2GB").kvBudgetBytes());
    }

    @Test
    void badValuesAreRefusedNamingTheFlag() {
        UsageException both = assertThrows(UsageException.class, () -> apply("--batch", "2", "--decode-concurrency", "4"));
        assertTrue(both.getMessage().contains("--batch"), both.getMessage());
        RuntimeException zero = assertThrows(RuntimeException.class, () -> apply("--decode-concurrency", "0"));
        assertTrue(zero.getMessage().contains("--decode-concurrency"), zero.getMessage());
        UsageException budget = assertThrows(UsageException.class, () -> apply("--kv-budget", "lots"));
        assertTrue(budget.getMessage().contains("--kv-budget"), budget.getMessage());
        UsageException none = assertThrows(UsageException.class, () -> apply("--kv-budget", "0"));
        assertTrue(none.getMessage().contains("--kv-budget"), none.getMessage());
    }
}
