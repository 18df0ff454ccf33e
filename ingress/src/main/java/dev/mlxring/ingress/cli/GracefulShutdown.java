package dev.mlxring.ingress.cli;

import dev.mlxring.ingress.http.HttpServer;
import dev.mlxring.pipeline.Engine;
import java.time.Duration;
import java.util.concurrent.CountDownLatch;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;
import sun.misc.Signal;

/**
 * The server's graceful shutdown. On SIGTERM or SIGINT: admission stops (new completions get
 * 503 with OpenAI's error body), running requests finish for up to the grace period, then the
 * engine cancels the rest (each still gets its one terminal outcome: a stream ends with its
 * finish chunk and {@code [DONE]}), their last writes are given a bounded time to flush, and
 * only then does the listener close. The process then exits with status 0.
 *
 * <p>Threads: the signal handler only counts down a latch; the draining runs on the thread that
 * called {@link #awaitAndDrain} (serve's main thread).
 */
final class GracefulShutdown {
    private static final Logger LOG = LoggerFactory.getLogger(GracefulShutdown.class);
    /** After cancelling, how long the cancelled requests' last writes may take. */
    private static final Duration FLUSH = Duration.ofSeconds(10);

    private final CountDownLatch requested = new CountDownLatch(1);
    private final Duration grace;

    GracefulShutdown(Duration grace) {
        this.grace = grace;
    }

    /** Routes SIGTERM and SIGINT here instead of the JVM's immediate exit. */
    GracefulShutdown onSignals() {
        for (String name : new String[] {"TERM", "INT"}) {
            Signal.handle(new Signal(name), sig -> request("SIG" + sig.getName()));
        }
        return this;
    }

    void request(String why) {
        if (requested.getCount() > 0) {
            LOG.info("{}: shutting down gracefully", why);
            requested.countDown();
        }
    }

    /** Blocks until a shutdown is requested, then drains {@code server} and {@code engine}. */
    void awaitAndDrain(HttpServer server, Engine engine) throws InterruptedException {
        requested.await();
        drain(server, engine, grace);
    }

    /**
     * Stops admission, waits up to {@code grace} for in-flight requests, then cancels what is left
     * and waits (bounded) for their final writes. Does not close the listener or the engine's
     * model: the caller does, after this returns.
     */
    static void drain(HttpServer server, Engine engine, Duration grace) throws InterruptedException {
        server.beginDrain();
        LOG.info(
                "draining: new requests get 503; waiting up to {} s for {} in-flight request(s)",
                grace.toSeconds(),
                server.inFlight());
        int left = server.awaitIdle(System.nanoTime() + grace.toNanos());
        if (left > 0) {
            LOG.warn("grace period of {} s is over: cancelling {} request(s)", grace.toSeconds(), left);
            engine.close();
            left = server.awaitIdle(System.nanoTime() + FLUSH.toNanos());
        }
        if (left > 0) {
            LOG.warn("{} response(s) still unfinished after cancellation; closing their connections", left);
        } else {
            LOG.info("drained: every request has ended");
        }
    }
}
