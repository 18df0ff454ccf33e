package dev.mlxring.ingress.cli;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import dev.mlxring.ingress.http.ConnectionLimits;
import org.junit.jupiter.api.Test;

/** serve's connection flags: documented defaults, seconds to milliseconds, and refusals naming the flag. */
class ConnectionFlagsTest {
    private static ConnectionLimits parse(String... args) {
        return ConnectionFlags.parse(ServeArgs.parse(ConnectionFlags.NAMES, args));
    }

    @Test
    void defaultsAreThirtySecondsToReadSixtyIdleAnd1024Connections() {
        assertEquals(new ConnectionLimits(30_000, 60_000, 1024), parse());
        assertEquals(ConnectionLimits.DEFAULTS, parse());
    }

    @Test
    void flagsAreSecondsAndACount() {
        assertEquals(
                new ConnectionLimits(5_000, 120_000, 10),
                parse("--read-timeout-seconds", "5", "--idle-timeout-seconds", "120", "--max-connections", "10"));
    }

    @Test
    void badValuesAreRefusedNamingTheFlag() {
        for (String flag : ConnectionFlags.NAMES) {
            UsageException zero = assertThrows(UsageException.class, () -> parse(flag, "0"));
            assertTrue(zero.getMessage().contains(flag + " must be >= 1"), zero.getMessage());
            UsageException word = assertThrows(UsageException.class, () -> parse(flag, "soon"));
            assertTrue(word.getMessage().contains(flag + " must be an integer"), word.getMessage());
        }
    }
}
