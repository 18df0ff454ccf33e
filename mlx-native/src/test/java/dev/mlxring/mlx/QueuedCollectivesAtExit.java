package dev.mlxring.mlx;

/**
 * One rank of {@link ExitDrainTest}, run under {@code mlx.launch -n 2}: queues about a second of
 * matmuls, each summed over the group, and returns from {@code main} at once, as a rank does whose
 * last generation step was evaluated ahead and never read. Left running into {@code exit()}, the
 * pending collectives of the first rank to exit lose their peer, and the ring's socket threads
 * fail them while the static destructors run ("[ring] ... Failing pending tasks", and at times a
 * corrupted heap: exit code -6).
 */
public final class QueuedCollectivesAtExit {
    private QueuedCollectivesAtExit() {}

    public static void main(String[] args) throws InterruptedException {
        Group group = Group.init("any", true);
        try (ArrayScope scope = ArrayScope.open()) {
            MlxArray w = Mlx.add(Mlx.zeros(new int[] {512, 512}, Dtype.FLOAT32), Mlx.scalar(1.0 / 1024, Dtype.FLOAT32));
            MlxArray y = w;
            for (int i = 0; i < 8; i++) {
                y = group.allSum(Mlx.matmul(y, w));
            }
            Mlx.asyncEval(y);
        }
        System.out.println("rank " + group.rank() + " queued");
        if (group.rank() == 0) {
            // Rank 0 outlives rank 1, as a rank that writes the results does: its queued
            // collectives then need a peer that may already have exited.
            Thread.sleep(1000);
        }
    }
}
