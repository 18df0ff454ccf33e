package dev.mlxring.ingress.cli;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import dev.mlxring.pipeline.EngineConfig;
import org.junit.jupiter.api.Test;

/** serve's batching flags: defaults, the --batch alias, the prompt cap, the KV budget, and refusals naming the flag. */
class ConcurrencyFlagsTest {
    private static EngineConfig apply(String... args) {
        return ConcurrencyFlags.apply(ServeArgs.parse(ConcurrencyFlags.NAMES, args), EngineConfig.defaults());
    }

    @Test
    void defaultsBatchSixteenRowsSixteenReadingPromptsWithoutABudget() {
        EngineConfig c = apply();
        assertEquals(16, c.decodeConcurrency());
        assertEquals(16, c.promptConcurrency());
        assertEquals(0, c.kvBudgetBytes());
        assertEquals(EngineConfig.DEFAULT_PREFILL_SHARE, c.prefillShare());
        assertTrue(c.shortPromptsFirst());
    }

    @Test
    void prefillInterleavingFlags() {
        EngineConfig mlxLm = apply("--prefill-share", "1", "--short-prompts-first", "off");
        assertEquals(1.0, mlxLm.prefillShare());
        assertEquals(false, mlxLm.shortPromptsFirst());
        assertEquals(0.25, apply("--prefill-share", "0.25").prefillShare());
        for (String bad : new String[] {"0", "1.5", "-0.1", "NaN", "half"}) {
            UsageException e = assertThrows(UsageException.class, () -> apply("--prefill-share", bad));
            assertTrue(e.getMessage().contains("--prefill-share"), e.getMessage());
        }
        UsageException e = assertThrows(UsageException.class, () -> apply("--short-prompts-first", "yes"));
        assertTrue(e.getMessage().contains("--short-prompts-first"), e.getMessage());
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
        UsageException both =
                assertThrows(UsageException.class, () -> apply("--batch", "2", "--decode-concurrency", "4"));
        assertTrue(both.getMessage().contains("--batch"), both.getMessage());
        RuntimeException zero = assertThrows(RuntimeException.class, () -> apply("--decode-concurrency", "0"));
        assertTrue(zero.getMessage().contains("--decode-concurrency"), zero.getMessage());
        UsageException budget = assertThrows(UsageException.class, () -> apply("--kv-budget", "lots"));
        assertTrue(budget.getMessage().contains("--kv-budget"), budget.getMessage());
        UsageException none = assertThrows(UsageException.class, () -> apply("--kv-budget", "0"));
        assertTrue(none.getMessage().contains("--kv-budget"), none.getMessage());
    }
}
