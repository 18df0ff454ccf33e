package dev.mlxring.ingress.http;

/**
 * Counts HTTP exchanges between their arrival and their end, so a graceful shutdown can wait for
 * the running ones. Thread-safe: IO threads enter and exit, the shutdown thread waits.
 */
final class InFlight {
    private int count;

    synchronized void enter() {
        count++;
    }

    synchronized void exit() {
        if (--count == 0) {
            notifyAll();
        }
    }

    synchronized int count() {
        return count;
    }

    /** Waits until no exchange is in flight or {@code deadlineNs} (System.nanoTime) passes; returns the count left. */
    synchronized int awaitZero(long deadlineNs) throws InterruptedException {
        while (count > 0) {
            long leftMs = (deadlineNs - System.nanoTime()) / 1_000_000;
            if (leftMs <= 0) {
                break;
            }
            wait(leftMs);
        }
        return count;
    }
}
