package dev.mlxring.ingress.cli;

import java.io.IOException;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.concurrent.atomic.AtomicBoolean;
import java.util.concurrent.atomic.AtomicLong;

/**
 * Reads a process's {@code VmRSS} (resident set: anonymous, file-backed and shared pages) from
 * {@code /proc/PID/status} on a thread of its own every 2 ms until stopped, keeping the highest;
 * the read made by the constructor is the baseline. Linux only.
 */
final class RssSampler implements AutoCloseable {
    private final Path status;
    private final long baselineBytes;
    private final AtomicLong peakBytes = new AtomicLong();
    private final AtomicLong samples = new AtomicLong();
    private final AtomicBoolean running = new AtomicBoolean(true);
    private final Thread thread;

    RssSampler(long pid) throws IOException {
        status = Path.of("/proc", Long.toString(pid), "status");
        baselineBytes = read();
        peakBytes.set(baselineBytes);
        thread = Thread.ofPlatform().name("rss-sampler").daemon().start(this::sample);
    }

    long baselineBytes() {
        return baselineBytes;
    }

    long samples() {
        return samples.get();
    }

    /** Stops sampling; returns the highest RSS seen. */
    long stop() throws InterruptedException {
        running.set(false);
        thread.join();
        return peakBytes.get();
    }

    private void sample() {
        while (running.get()) {
            try {
                long bytes = read();
                peakBytes.accumulateAndGet(bytes, Math::max);
                samples.incrementAndGet();
                Thread.sleep(2);
            } catch (IOException | InterruptedException e) {
                return; // the process is gone: the test's liveness check says so
            }
        }
    }

    private long read() throws IOException {
        for (String line : Files.readAllLines(status)) {
            if (line.startsWith("VmRSS:")) {
                return Long.parseLong(line.replaceAll("[^0-9]", "")) * 1024;
            }
        }
        throw new IOException(status + " has no VmRSS line");
    }

    @Override
    public void close() throws InterruptedException {
        stop();
    }
}
