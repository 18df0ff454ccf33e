package dev.mlxring.mlx;

import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.util.List;
import org.junit.jupiter.api.Test;

/**
 * A process never exits with MLX work queued ({@link ExitDrain}). Two ranks under
 * {@code mlx.launch -n 2} each queue a second of all_sum'd matmuls and return from {@code main} at
 * once, rank 0 a second after rank 1 ({@link QueuedCollectivesAtExit}). Without the drain, rank 1
 * exits mid-queue and rank 0's ring fails the collectives it still had pending ("[ring] Socket ...
 * was closed by the peer ... Failing pending tasks", every run of six; the same race corrupted a
 * rank's heap in CI); with it, rank 1's exit waits until its queue, and with it rank 0's
 * collectives, is done.
 */
class ExitDrainTest {
    @Test
    void ranksThatReturnWithCollectivesQueuedFinishThemBeforeExiting() {
        String out = MlxLaunch.run(2, MlxLaunch.javaCommand(QueuedCollectivesAtExit.class.getName(), List.of()), 120);
        assertTrue(out.contains("rank 0 queued") && out.contains("rank 1 queued"), out);
        assertFalse(out.contains("[ring]"), "a rank's collectives lost their peer at exit:\n" + out);
    }
}
